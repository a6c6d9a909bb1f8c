//! Block reverse through the coupled sub-field, across a basin-collapse barrier:
//!
//! ```cuda
//! __shared__ float s[B];
//! s[t] = x[i];
//! __syncthreads();
//! out[i] = s[B - 1 - t];
//! ```

use crate::data::{compare_f32, Rng};
use crate::{DemoOptions, DemoReport};
use std::time::Instant;
use vgpu_field::field::Ctx;
use vgpu_field::phase::{PhaseKernel, PhaseOut, PhasedLaunch};
use vgpu_field::FieldError;
use vgpu_field::LaunchConfig;

/// The reverse kernel. With `barrier`, two phases (store, then read); without,
/// one phase where the read races ahead of the write.
pub struct ReverseKernel<'a> {
    /// The input, one value per trajectory (guarded past its end).
    pub x: &'a [f32],
    /// Whether `__syncthreads()` separates the store from the read.
    pub barrier: bool,
    /// Trajectories per block (the shared sub-field's length).
    pub block: usize,
}

impl PhaseKernel<f32> for ReverseKernel<'_> {
    type Params = ();
    type Flux = f32;
    fn dim(&self) -> usize {
        1
    }
    fn shared_len(&self) -> usize {
        self.block
    }
    fn phases(&self) -> usize {
        if self.barrier {
            2
        } else {
            1
        }
    }
    fn phase(
        &self,
        phase: usize,
        c: &Ctx<'_, '_, ()>,
        _h: &[f32],
        _h0: &[f32],
        _shared: &[f32],
        out: &mut PhaseOut<'_, f32, f32>,
    ) -> Result<(), FieldError> {
        let (t, i) = (c.lane(), c.global());
        let store = phase == 0;
        let read = !self.barrier || phase == 1;
        if store {
            out.store_shared(t, self.x.get(i).copied().unwrap_or(0.0))?;
        }
        if read {
            let v = out.shared(self.block - 1 - t)?;
            out.set(0, v)?;
        }
        Ok(())
    }
}

/// Runs the reverse kernel over `x` (blocks of `block`); returns the outputs and the report.
fn run(
    x: &[f32],
    block: u32,
    barrier: bool,
    opts: &DemoOptions,
) -> Result<(Vec<f32>, vgpu_field::PhaseReport), FieldError> {
    let cfg = LaunchConfig::linear(x.len(), block)?;
    let mut out = vec![0.0f32; cfg.total_threads()];
    let kernel = ReverseKernel {
        x,
        barrier,
        block: block as usize,
    };
    let r = PhasedLaunch::new(cfg)
        .par(opts.par)
        .run(&kernel, &(), &mut out, &mut [])?;
    Ok((out, r))
}

/// Reverse demo: exact with the barrier; the same kernel without the barrier
/// must give a different result (it does: the reads see the shared sub-field
/// before the writes land).
///
/// # Errors
/// Invalid options.
pub fn reverse(opts: &DemoOptions) -> Result<DemoReport, FieldError> {
    opts.check_n("reverse")?;
    let b = opts.block as usize;
    let n = opts.n.div_ceil(b.max(1)) * b; // whole blocks: every lane reads a stored value
    let x = Rng::new(opts.seed ^ 0x7e7).vec_f32(n, -100.0, 100.0);
    let start = Instant::now();
    let (got, report) = run(&x, opts.block, true, opts)?;
    let elapsed = start.elapsed();
    let want: Vec<f32> = (0..n).map(|i| x[(i / b) * b + (b - 1 - i % b)]).collect();
    let (max_error, differ) = compare_f32(&got[..n], &want);
    let (raced, _) = run(&x, opts.block, false, opts)?;
    let (_, race_differ) = compare_f32(&raced[..n], &want);
    Ok(DemoReport {
        name: "reverse",
        trajectories: report.trajectories,
        steps: (0..report.phases)
            .map(|p| report.max_steps_of_phase(p))
            .sum(),
        max_error,
        tolerance: 0.0,
        passed: differ == 0 && race_differ > 0,
        elapsed,
        note: format!(
            "exact with the barrier ({differ} differ); without it {race_differ} of {n} differ"
        ),
    })
}
