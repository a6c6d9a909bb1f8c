//! # vgpu-demos: programs' code, kept out of the libraries
//!
//! `publish = false`. What the `vgpu` binary, the benches, the examples and
//! the Python package's `vgpu.demo()` run, but no library needs:
//!
//! * the **equivalence demos** (this module's root): CUDA kernels written as
//!   fields, each run through the executor and compared with the result the
//!   CUDA kernel computes (computed here directly, the way the kernel does it,
//!   with `fma` where nvcc contracts);
//! * the **Lorenz baselines**: [`lorenz`] (the fixed-step RK4 ensemble through
//!   the field API and as hand-written loops, for `vgpu bench lorenz`) and
//!   [`lorenz_tsit5`] (the adaptive driver's hand-written Tsit5 reference);
//! * the **PTX throughput workloads** ([`ptx_workload`], feature `ptx`, on by
//!   default): nvcc's `matmul_naive` and `lorenz_rk4` as launches, for
//!   `vgpu bench ptx` and the criterion bench.
//!
//! | demo | kernel | comparison |
//! |---|---|---|
//! | [`scale`] | `x[i] *= s` | bit-exact |
//! | [`matmul`] | `C = A @ B`, one accumulator per `C[i,j]` | bit-exact against the fma loop |
//! | [`relax`] | `dh/dt = sin(h0) − h` (RK4) | within `e^(−T)·|h0 − sin h0|` + the integrator's bound |
//! | [`reverse`] | block reverse through `__shared__` + `__syncthreads` | exact; without the barrier it differs |
//! | [`tree_sum`] | block tree-sum + `atomicAdd` | exact, deterministic |
//! | [`histogram`] | 256-bin `atomicAdd` histogram | exact, deterministic |
#![deny(missing_docs)]

pub mod lorenz;
pub mod lorenz_tsit5;
#[cfg(feature = "ptx")]
pub mod ptx_workload;

mod data;
mod histogram;
mod matmul;
mod relax;
mod reverse;
mod scale;
mod tree_sum;

pub use histogram::{histogram, histogram_field, HistogramKernel};
pub use matmul::{matmul, matmul_field, matmul_fma_reference, MatmulField};
pub use relax::{relax, relax_tolerance, RelaxField};
pub use reverse::{reverse, ReverseKernel};
pub use scale::scale;
pub use tree_sum::{tree_sum, tree_sum_field, tree_sum_reference, TreeSumKernel};

use std::time::Duration;
use vgpu_field::{FieldError, Method, Par};

/// The outcome of one demo.
#[derive(Debug, Clone, PartialEq)]
pub struct DemoReport {
    /// The demo's name.
    pub name: &'static str,
    /// Trajectories integrated (`grid · block`, guard lanes included).
    pub trajectories: usize,
    /// Integration steps per trajectory (for phased kernels: the sum over
    /// phases of the slowest block's collapse).
    pub steps: usize,
    /// Largest absolute difference from the CUDA-style result.
    pub max_error: f64,
    /// The tolerance it was held to (0 for bit-exact demos).
    pub tolerance: f64,
    /// Whether the demo met its comparison.
    pub passed: bool,
    /// Wall time of the VGPU launch(es).
    pub elapsed: Duration,
    /// What was compared, in a few words.
    pub note: String,
}

/// Sizes and settings of the demos.
#[derive(Debug, Clone, PartialEq)]
pub struct DemoOptions {
    /// Elements for scale, relax, tree-sum and histogram.
    pub n: usize,
    /// Matmul shape: `A` is `m × k`, `B` is `k × n`.
    pub mat: (usize, usize, usize),
    /// Trajectories per block (1-D demos), at most 1024; a power of two for tree-sum.
    pub block: u32,
    /// Integrator of the relax demo.
    pub method: Method,
    /// Step of the relax demo (≤ 1).
    pub dt: f64,
    /// End time of the relax demo.
    pub t_end: f64,
    /// The scale factor.
    pub s: f32,
    /// Parallelism.
    pub par: Par,
    /// Seed of the inputs.
    pub seed: u64,
}

impl Default for DemoOptions {
    fn default() -> Self {
        DemoOptions {
            n: 32_768,
            mat: (37, 53, 29),
            block: 256,
            method: Method::Rk4,
            dt: 0.01,
            t_end: 20.0,
            s: 1.7,
            par: Par::Auto,
            seed: 0x5eed,
        }
    }
}

impl DemoOptions {
    fn check_n(&self, demo: &str) -> Result<(), FieldError> {
        if self.n == 0 {
            return Err(FieldError::Invalid {
                context: format!("demo {demo}"),
                why: "n must be at least 1".into(),
            });
        }
        Ok(())
    }
}

/// Every demo, in table order. A demo whose input is invalid is an `Err`.
pub fn run_all(opts: &DemoOptions) -> Vec<Result<DemoReport, FieldError>> {
    vec![
        scale(opts),
        matmul(opts),
        relax(opts),
        reverse(opts),
        tree_sum(opts),
        histogram(opts),
    ]
}
