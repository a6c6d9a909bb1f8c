//! VGPU: a virtual GPU where every kernel is a vector field and every launch an
//! ensemble integration (one trajectory per thread, Euler or RK4).
//!
//! This crate is the facade: it re-exports the public API of the VGPU crates and
//! holds the `vgpu` command-line tool.
#![deny(missing_docs)]

pub mod dispatch;
mod error;
pub mod limits;
#[cfg(feature = "mpi")]
pub mod mpi_io;
#[cfg(feature = "mpi")]
pub mod mpi_world;
pub mod npy;
pub mod output;
pub mod ptx_gpu;
pub mod shard;
pub use dispatch::{resolve_backend, Dispatcher, EnsembleJob, EnsembleRun};
pub use error::Error;
pub use limits::Limits;

/// The GPU runtime: wgpu device, generic kernel cache, `VgpuCache` matmul.
pub use vgpu_gpu as gpu;
pub use vgpu_gpu::{
    ActiveBackend, AdapterSummary, BackendChoice, Binding, CacheStats, GpuError, KernelCache,
    KernelSpec, VgpuCache,
};

/// The field engine: launch geometry, fields, integrators, barrier and flux, the CPU executor.
pub use vgpu_field as field;
pub use vgpu_field::{
    field_fn, Barrier, BlockCtx, BlockField, Ctx, Dim3, Dtype, Field, FieldError, Launch,
    LaunchConfig, LaunchReport, Method, Par, PerTrajectory, PhaseKernel, PhaseOut, PhaseReport,
    PhasedLaunch, Real, Tableau,
};

pub use vgpu_gpu::{run_ensemble_gpu, EnsembleError, GpuEnsemble};
/// The kernel IR and the `.field` language: compile, run on the CPU, emit WGSL.
pub use vgpu_ir as ir;
pub use vgpu_ir::{compile, compile_file, run_cpu, Args, Integration, IrError, Kernel};

/// Programs' code (crate `vgpu-demos`, `publish = false`): the equivalence
/// demos (`vgpu demo`, Python's `vgpu.demo()`), the Lorenz baselines (`vgpu
/// bench lorenz`) and the PTX throughput workloads (`vgpu bench ptx`).
pub use vgpu_demos as demos;

/// The PTX front end: nvcc's PTX parsed, decoded and run as fields (SIMT), with a checker and the case runner.
pub use vgpu_ptx as ptx;
