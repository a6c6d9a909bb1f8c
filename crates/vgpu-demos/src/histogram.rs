//! A 256-bin histogram by flux:
//!
//! ```cuda
//! if (i < n) atomicAdd(&bins[data[i]], 1u);
//! ```

use crate::data::Rng;
use crate::{DemoOptions, DemoReport};
use std::time::Instant;
use vgpu_field::field::Ctx;
use vgpu_field::phase::{PhaseKernel, PhaseOut, PhasedLaunch};
use vgpu_field::FieldError;
use vgpu_field::LaunchConfig;
use vgpu_field::Par;

/// The histogram kernel: one phase, one unit of `u32` flux into `bins[data[i]]`.
pub struct HistogramKernel<'a> {
    /// The values (each selects a bin; the bin buffer's length bounds them).
    pub data: &'a [u32],
}

impl PhaseKernel<f32> for HistogramKernel<'_> {
    type Params = ();
    type Flux = u32;
    fn dim(&self) -> usize {
        0
    }
    fn shared_len(&self) -> usize {
        0
    }
    fn phases(&self) -> usize {
        1
    }
    fn phase(
        &self,
        _phase: usize,
        c: &Ctx<'_, '_, ()>,
        _h: &[f32],
        _h0: &[f32],
        _s: &[f32],
        out: &mut PhaseOut<'_, f32, u32>,
    ) -> Result<(), FieldError> {
        if let Some(&v) = self.data.get(c.global()) {
            out.emit(v as usize, 1)?;
        }
        Ok(())
    }
}

/// Counts `data` into `bins` (added to what `bins` holds) with blocks of `block`.
///
/// # Errors
/// A value ≥ `bins.len()` ([`FieldError::OutOfBounds`] naming its block and
/// thread), bad dimensions.
pub fn histogram_field(
    data: &[u32],
    bins: &mut [u32],
    block: u32,
    par: Par,
) -> Result<vgpu_field::PhaseReport, FieldError> {
    let cfg = LaunchConfig::linear(data.len(), block)?;
    PhasedLaunch::new(cfg)
        .par(par)
        .run(&HistogramKernel { data }, &(), &mut [], bins)
}

/// Histogram demo: 256 bins, exact against a sequential count, the same with
/// one thread.
///
/// # Errors
/// Invalid options.
pub fn histogram(opts: &DemoOptions) -> Result<DemoReport, FieldError> {
    opts.check_n("histogram")?;
    let mut rng = Rng::new(opts.seed ^ 0x4157);
    // Skewed data: the sum of two uniform bytes halved, so bins differ in count.
    let data: Vec<u32> = (0..opts.n)
        .map(|_| {
            let r = rng.next_u64();
            ((r & 0xff) + ((r >> 8) & 0xff)) as u32 / 2
        })
        .collect();
    let mut bins = vec![0u32; 256];
    let start = Instant::now();
    let report = histogram_field(&data, &mut bins, opts.block, opts.par)?;
    let elapsed = start.elapsed();
    let mut want = vec![0u32; 256];
    for &v in &data {
        want[v as usize] += 1;
    }
    let mut seq = vec![0u32; 256];
    histogram_field(&data, &mut seq, opts.block, Par::Seq)?;
    let max_error = bins
        .iter()
        .zip(&want)
        .map(|(&g, &w)| (g as f64 - w as f64).abs())
        .fold(0.0, f64::max);
    let total: u64 = bins.iter().map(|&b| b as u64).sum();
    Ok(DemoReport {
        name: "histogram",
        trajectories: report.trajectories,
        steps: (0..report.phases)
            .map(|p| report.max_steps_of_phase(p))
            .sum(),
        max_error,
        tolerance: 0.0,
        passed: bins == want && seq == bins && total == opts.n as u64,
        elapsed,
        note: format!("256 bins, {total} counts conserved, exact vs sequential count"),
    })
}
