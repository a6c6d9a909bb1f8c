//! `C = A @ B` as one accumulator trajectory per `C[i,j]` under the
//! piecewise-constant field `A[i,⌊t⌋]·B[⌊t⌋,j]`, `K` Euler steps of `dt = 1`.

use crate::data::{compare_f32, Rng};
use crate::{DemoOptions, DemoReport};
use std::time::Instant;
use vgpu_field::field::{Ctx, Field, PerTrajectory};
use vgpu_field::Launch;
use vgpu_field::LaunchConfig;
use vgpu_field::Method;
use vgpu_field::{check_len, FieldError};

/// The matmul kernel's field. Trajectory `(row, col)` runs on a 2-D launch
/// (`col = blockIdx.x·blockDim.x + threadIdx.x`, `row` likewise on y); lanes
/// outside `m × n` have the zero field (CUDA's bounds guard).
pub struct MatmulField<'a> {
    /// `A`, row-major `m × k`.
    pub a: &'a [f32],
    /// `B`, row-major `k × n`.
    pub b: &'a [f32],
    /// `(m, k, n)`.
    pub shape: (usize, usize, usize),
}

impl MatmulField<'_> {
    #[inline]
    fn factors(&self, t: f32, c: &Ctx<'_, '_, ()>) -> (f32, f32) {
        let (m, k, n) = self.shape;
        let (ti, bi, bd) = (c.thread_idx(), c.block_idx(), c.block_dim());
        let col = (bi.x * bd.x + ti.x) as usize;
        let row = (bi.y * bd.y + ti.y) as usize;
        let kk = t.floor() as usize;
        if row < m && col < n && kk < k {
            (self.a[row * k + kk], self.b[kk * n + col])
        } else {
            (0.0, 0.0)
        }
    }
}

impl Field<f32, 1> for MatmulField<'_> {
    type Params = ();
    const FACTORED: bool = true;
    fn eval(&self, t: f32, _h: &[f32; 1], _h0: &[f32; 1], c: &Ctx<'_, '_, ()>, dh: &mut [f32; 1]) {
        let (u, v) = self.factors(t, c);
        dh[0] = u * v;
    }
    fn eval_factored(
        &self,
        t: f32,
        _h: &[f32; 1],
        _h0: &[f32; 1],
        c: &Ctx<'_, '_, ()>,
        u: &mut [f32; 1],
        v: &mut [f32; 1],
    ) {
        (u[0], v[0]) = self.factors(t, c);
    }
    fn check(&self, cfg: &LaunchConfig, _p: &()) -> Result<(), FieldError> {
        let (m, k, n) = self.shape;
        check_len("A", self.a.len(), m * k, &format!("A is {m}×{k}"))?;
        check_len("B", self.b.len(), k * n, &format!("B is {k}×{n}"))?;
        let (cols, rows) = (
            cfg.grid.x as usize * cfg.block.x as usize,
            cfg.grid.y as usize * cfg.block.y as usize,
        );
        if cols < n || rows < m {
            return Err(FieldError::Invalid {
                context: "matmul".into(),
                why: format!("launch covers {rows}×{cols} outputs, C is {m}×{n}"),
            });
        }
        Ok(())
    }
}

/// Integrates `C = A @ B` (`A` `m×k`, `B` `k×n`, row-major) with 16×16 blocks;
/// returns `C` row-major and the launch's trajectory count.
///
/// # Errors
/// Short buffers, zero sizes.
pub fn matmul_field(
    a: &[f32],
    b: &[f32],
    (m, k, n): (usize, usize, usize),
    par: vgpu_field::Par,
) -> Result<(Vec<f32>, usize), FieldError> {
    if m == 0 || k == 0 || n == 0 {
        return Err(FieldError::Invalid {
            context: "matmul".into(),
            why: format!("empty shape {m}×{k} by {k}×{n}"),
        });
    }
    let grid = (n.div_ceil(16) as u32, m.div_ceil(16) as u32);
    let cfg = LaunchConfig::new(grid, (16, 16))?;
    let mut acc = vec![0.0f32; cfg.total_threads()];
    Launch::new(cfg)
        .method(Method::Euler)
        .dt(1.0)
        .steps(k)
        .par(par)
        .run(
            &PerTrajectory(MatmulField {
                a,
                b,
                shape: (m, k, n),
            }),
            &(),
            &mut acc,
        )?;
    // Trajectory (row, col) sits at block (col/16, row/16), thread (col%16, row%16).
    let gx = grid.0 as usize;
    let mut c = vec![0.0f32; m * n];
    for row in 0..m {
        for col in 0..n {
            let block = (row / 16) * gx + col / 16;
            let lane = (row % 16) * 16 + col % 16;
            c[row * n + col] = acc[block * 256 + lane];
        }
    }
    Ok((c, cfg.total_threads()))
}

/// The CUDA kernel's loop, `acc = fma(A[i,k], B[k,j], acc)` from `acc = 0`
/// (what nvcc emits for `acc += A[i*K+k] * B[k*N+j]`).
pub fn matmul_fma_reference(a: &[f32], b: &[f32], (m, k, n): (usize, usize, usize)) -> Vec<f32> {
    let mut c = vec![0.0f32; m * n];
    for i in 0..m {
        for j in 0..n {
            let mut acc = 0.0f32;
            for kk in 0..k {
                acc = a[i * k + kk].mul_add(b[kk * n + j], acc);
            }
            c[i * n + j] = acc;
        }
    }
    c
}

/// Matmul demo: bit-exact against the fma loop, for shapes that do not divide the block.
///
/// # Errors
/// Zero sizes.
pub fn matmul(opts: &DemoOptions) -> Result<DemoReport, FieldError> {
    let (m, k, n) = opts.mat;
    let mut rng = Rng::new(opts.seed ^ 0x3a7);
    let a = rng.vec_f32(m * k, -1.0, 1.0);
    let b = rng.vec_f32(k * n, -1.0, 1.0);
    let start = Instant::now();
    let (c, trajectories) = matmul_field(&a, &b, (m, k, n), opts.par)?;
    let elapsed = start.elapsed();
    let want = matmul_fma_reference(&a, &b, (m, k, n));
    let (max_error, differ) = compare_f32(&c, &want);
    Ok(DemoReport {
        name: "matmul",
        trajectories,
        steps: k,
        max_error,
        tolerance: 0.0,
        passed: differ == 0,
        elapsed,
        note: format!("{m}x{k} @ {k}x{n}, bit-exact vs the fma loop ({differ} values differ)"),
    })
}
