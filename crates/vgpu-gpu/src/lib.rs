//! `vgpu-gpu`: VGPU's GPU runtime on wgpu.
//!
//! * [`GpuContext`]: instance, adapter, device and queue, created once per process,
//!   lazily; `WGPU_BACKEND` (and wgpu's other variables) honoured; a device-lost
//!   callback and an uncaptured-error handler that never panic.
//! * [`KernelCache`]: the generic kernel cache. A [`KernelSpec`] (WGSL source and
//!   what specialises it) is compiled once per key; its buffers, bind group and
//!   readback buffer are kept and reused; [`CacheStats`] counts everything.
//! * [`VgpuCache`]: matrix multiplication through the kernel cache (tiled and
//!   register-blocked WGSL kernels), with a CPU GEMM fallback, chosen by
//!   `VGPU_BACKEND=auto|gpu|cpu` ([`BackendChoice`]); and the [`fused`] kernels
//!   generated from the IR: `relu`, `bias_add`, row-wise `softmax` and
//!   `matmul_bias_relu` (the IR's epilogue spliced into the matmul's store).
//! * [`cfg_kernel`]: compiled PTX's control-flow kernels, their f32 fma on the
//!   device's own `fma` where [`fma_probe`] found it fused, their global f32
//!   atomic adds on the device's f32 atomics where [`atomic_probe`] found them
//!   PTX's.
#![deny(missing_docs)]

pub mod adaptive;
pub mod atomic_probe;
mod backend;
pub mod cfg_kernel;
mod cfg_wgsl_memo;
pub mod ensemble;
mod error;
pub mod fma_probe;
pub mod fused;
mod hash;
pub mod kernel_cache;
pub mod matmul;
pub mod pipeline_cache;
mod runtime;
mod stats;
pub mod subnormal_probe;
mod vgpu_cache;
mod xorshift;

pub use adaptive::{run_adaptive_gpu, AdaptiveGpuError, GpuAdaptive, GpuAdaptiveOptions};
pub use atomic_probe::{f32_atomic_add_exact, probe_atomic_add_f32, AtomicF32Path, AtomicProbe};
pub use backend::{ActiveBackend, BackendChoice};
pub use cfg_kernel::{run_cfg_kernel, CfgFault, CfgLaunch, CfgRun, GlobalLayout};
pub use ensemble::{
    run_ensemble_gpu, run_ensemble_gpu_with, EnsembleError, GpuEnsemble, GpuPhases,
};
pub use error::GpuError;
pub use fma_probe::{fma_f32_fused, probe_fma_f32, FmaF32Path, FmaProbe};
pub use kernel_cache::{
    naga_spirv, unproven_wgsl_index, Binding, KernelCache, KernelKey, KernelSpec, RunTiming,
};
pub use matmul::tile::Tile;
pub use matmul::{check_shapes, matmul_cpu};
pub use pipeline_cache::PipelineCacheInfo;
pub use runtime::{AdapterSummary, GpuContext};
pub use stats::CacheStats;
pub use subnormal_probe::{
    f32_subnormal_pairs, f32_subnormals_kept, probe_f32_subnormals, SubnormalProbe,
};
pub use vgpu_cache::VgpuCache;
