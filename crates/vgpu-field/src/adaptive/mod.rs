//! Adaptive ensembles: many trajectories of one ODE, each with its own step
//! size, integrated by embedded explicit Runge–Kutta pairs (issue 13,
//! "Ensembles as scientists use them").
//!
//! * **Tableaus as data** ([`ErkTableau`], [`DenseTableau`]): [`tsit5`],
//!   [`dp5`], [`bs3`], [`vern7`], each with its embedded error estimate and
//!   dense output, run by one Runge–Kutta core (diffsol's shape). Their order
//!   conditions are checked from rooted trees ([`order_residuals`]).
//! * **One trajectory loop**: every method, explicit or stiff, is a stepper
//!   (how one step is attempted and interpolated) run by the same loop (step
//!   control, saves, events, statuses), so they cannot drift apart.
//! * **The driver** ([`AdaptiveEnsemble`] over an [`EnsembleProblem`]): per
//!   trajectory its own span, initial state, parameter row, step size and PI
//!   controller ([`PiController`], Hairer's [`initial_step`]); FSAL where the
//!   pair has it; save times filled from the dense output; a [`Status`] and
//!   step counts per trajectory ([`EnsembleSolution`]); trajectories in
//!   parallel as [`crate::Par`] says, the same bits for any thread count.
//! * **The right-hand side** ([`OdeRhs`]): closures through [`rhs_fn`], and any
//!   per-trajectory [`crate::Field`] through [`FieldRhs`].
//! * **Stiff problems** ([`rosenbrock`]): Rosenbrock23 with the right-hand
//!   side's Jacobian, `W = I − γhJ` factored per step.
//! * **Events** ([`events`]): zero crossings of `g(t, y, p)` located on the
//!   dense output, then jumps or termination of that trajectory alone.
//!
//! The driver's benchmark reference, a hand-written Tsit5 Lorenz loop, lives
//! in `vgpu_demos::lorenz_tsit5`.

pub mod controller;
mod dense;
pub mod driver;
mod erk;
pub mod error;
pub mod events;
pub mod method;
pub mod rhs;
pub mod rosenbrock;
pub mod status;
pub mod tableaus;
mod trajectory;
pub mod trees;
pub mod vern7;

pub use controller::{error_norm, initial_step, PiController};
pub use driver::{AdaptiveEnsemble, DriverSettings, EnsembleProblem};
pub use error::AdaptiveError;
pub use events::{locate, Crossing, EventSpec};
pub use method::AdaptiveMethod;
pub use rhs::{rhs_fn, FieldRhs, OdeRhs, RhsFn, Traj};
pub use status::{EnsembleSolution, Status, TrajectoryStats};
pub use tableaus::{bs3, dp5, tsit5, DenseKind, DenseTableau, ErkTableau};
pub use trees::{order_residuals, tree_counts};
pub use vern7::vern7;
