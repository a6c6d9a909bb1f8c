//! # vgpu-field: kernels as vector fields
//!
//! VGPU's thesis: a GPU is an ODE solver running in parallel, and CUDA is a
//! language for specifying many ODE trajectories at once. This crate makes that
//! executable on the CPU.
//!
//! * A **field** is `F(t, h, h0, ctx) → dh/dt` for one trajectory ([`Field`],
//!   closures through [`field_fn`]), or for a whole block at once in
//!   structure-of-arrays layout ([`BlockField`], the executor's entry point).
//! * A **launch** ([`Launch`] over a [`LaunchConfig`], CUDA's
//!   `<<<grid, block>>>`) integrates one trajectory per thread with an explicit
//!   Runge–Kutta method given by its Butcher [`Tableau`] ([`Method::Euler`],
//!   [`Method::Rk4`]), blocks in parallel as [`Par`] says, bit-identically for
//!   any thread count.
//! * CUDA's block primitives are field constructs: the **shared sub-field**
//!   (`__shared__`), the **basin-collapse barrier** (`__syncthreads`) and the
//!   **flux accumulator** (`atomicAdd`): [`PhaseKernel`], [`PhasedLaunch`],
//!   [`flux`].
//! * **Adaptive ensembles** ([`adaptive`]): embedded Runge–Kutta pairs
//!   (Tsit5, DP5, BS3, Vern7) as data, each trajectory with its own step size,
//!   PI controller, dense output at save times and status.
//!
//! The equivalence demos, the Lorenz baselines and the PTX throughput
//! workloads live in the `vgpu-demos` crate (`publish = false`), beside the
//! binary and benches that use them.
//!
//! See `docs/SPEC.md` for the theory and the tests that check each claim.
#![deny(missing_docs)]

pub mod adaptive;
pub mod blocks;
mod dim3;
pub mod dtype;
pub mod error;
pub mod executor;
pub mod field;
pub mod flux;
pub mod launch;
pub mod par;
pub mod phase;
pub mod real;
pub mod resources;
pub mod scalar;
pub mod stepper;
pub mod tableau;

pub use adaptive::{AdaptiveEnsemble, AdaptiveError, AdaptiveMethod, EnsembleProblem};
pub use blocks::run_blocks;
pub use dtype::Dtype;
pub use error::{check_len, FieldError};
pub use executor::{Launch, LaunchReport};
pub use field::{field_fn, BlockCtx, BlockField, Ctx, Field, FnField, PerTrajectory};
pub use flux::{order_block, FluxLog, FluxPlace, FluxValue};
pub use launch::{Dim3, LaunchConfig, MAX_THREADS_PER_BLOCK};
pub use par::Par;
pub use phase::{Barrier, PhaseKernel, PhaseOut, PhaseReport, PhasedLaunch};
pub use real::Real;
pub use scalar::{Buffer, ScalarType, Value};
pub use stepper::Stepper;
pub use tableau::{Method, Tableau};
