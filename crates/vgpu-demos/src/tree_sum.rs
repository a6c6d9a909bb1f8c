//! Block tree-sum in the coupled sub-field, finished with flux:
//!
//! ```cuda
//! __shared__ float s[B];
//! s[t] = i < n ? x[i] : 0;            __syncthreads();
//! for (int k = B/2; k > 0; k >>= 1) { if (t < k) s[t] += s[t+k]; __syncthreads(); }
//! if (t == 0) atomicAdd(total, s[0]);
//! ```

use crate::data::Rng;
use crate::{DemoOptions, DemoReport};
use std::time::Instant;
use vgpu_field::field::Ctx;
use vgpu_field::phase::{PhaseKernel, PhaseOut, PhasedLaunch};
use vgpu_field::FieldError;
use vgpu_field::LaunchConfig;
use vgpu_field::Par;

/// The tree-sum kernel (block size a power of two).
pub struct TreeSumKernel<'a> {
    /// The values to sum.
    pub x: &'a [f32],
    /// Trajectories per block.
    pub block: usize,
}

impl TreeSumKernel<'_> {
    fn levels(&self) -> usize {
        self.block.trailing_zeros() as usize
    }
}

impl PhaseKernel<f32> for TreeSumKernel<'_> {
    type Params = ();
    type Flux = f32;
    fn dim(&self) -> usize {
        0
    }
    fn shared_len(&self) -> usize {
        self.block
    }
    fn phases(&self) -> usize {
        self.levels() + 2
    }
    fn phase(
        &self,
        phase: usize,
        c: &Ctx<'_, '_, ()>,
        _h: &[f32],
        _h0: &[f32],
        s: &[f32],
        out: &mut PhaseOut<'_, f32, f32>,
    ) -> Result<(), FieldError> {
        let (t, i) = (c.lane(), c.global());
        if phase == 0 {
            out.store_shared(t, self.x.get(i).copied().unwrap_or(0.0))?;
        } else if phase <= self.levels() {
            let k = self.block >> phase;
            if t < k {
                out.store_shared(t, s[t] + s[t + k])?;
            }
        } else if t == 0 {
            out.emit(0, s[0])?;
        }
        Ok(())
    }
}

/// Sums `x` with the tree-sum kernel (blocks of `block`, a power of two).
///
/// # Errors
/// `block` not a power of two, bad dimensions.
pub fn tree_sum_field(
    x: &[f32],
    block: u32,
    par: Par,
) -> Result<(f32, vgpu_field::PhaseReport), FieldError> {
    if !block.is_power_of_two() {
        return Err(FieldError::Invalid {
            context: "tree-sum".into(),
            why: format!("block size {block} is not a power of two"),
        });
    }
    let cfg = LaunchConfig::linear(x.len(), block)?;
    let kernel = TreeSumKernel {
        x,
        block: block as usize,
    };
    let mut total = [0.0f32];
    let r = PhasedLaunch::new(cfg)
        .par(par)
        .run(&kernel, &(), &mut [], &mut total)?;
    Ok((total[0], r))
}

/// The CUDA kernel's arithmetic: each block's tree in the kernel's order, the
/// block sums added to `total` in block order (one of the orders CUDA's atomics
/// may take; VGPU always takes this one).
pub fn tree_sum_reference(x: &[f32], block: usize) -> f32 {
    let mut total = 0.0f32;
    for chunk in x.chunks(block) {
        let mut s = vec![0.0f32; block];
        s[..chunk.len()].copy_from_slice(chunk);
        let mut k = block / 2;
        while k > 0 {
            for t in 0..k {
                s[t] += s[t + k];
            }
            k /= 2;
        }
        total += s[0];
    }
    total
}

/// Tree-sum demo: exact against [`tree_sum_reference`], the same bits with one
/// thread and with several.
///
/// # Errors
/// Invalid options.
pub fn tree_sum(opts: &DemoOptions) -> Result<DemoReport, FieldError> {
    opts.check_n("tree-sum")?;
    let x = Rng::new(opts.seed ^ 0x5c).vec_f32(opts.n, -1.0, 1.0);
    let start = Instant::now();
    let (got, report) = tree_sum_field(&x, opts.block, opts.par)?;
    let elapsed = start.elapsed();
    let (seq, _) = tree_sum_field(&x, opts.block, Par::Seq)?;
    let want = tree_sum_reference(&x, opts.block as usize);
    let exact = got.to_bits() == want.to_bits();
    Ok(DemoReport {
        name: "tree-sum",
        trajectories: report.trajectories,
        steps: (0..report.phases)
            .map(|p| report.max_steps_of_phase(p))
            .sum(),
        max_error: (got as f64 - want as f64).abs(),
        tolerance: 0.0,
        passed: exact && seq.to_bits() == got.to_bits(),
        elapsed,
        note: format!(
            "sum {got}, exact vs tree+block-order reference: {exact}; same bits as 1 thread: {}",
            seq.to_bits() == got.to_bits()
        ),
    })
}
