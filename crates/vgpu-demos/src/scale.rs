//! `x[i] *= s` as a field: an accumulator from zero under the constant field
//! `s·x[i]`, one Euler step of `dt = 1`.

use crate::data::{compare_f32, Rng};
use crate::{DemoOptions, DemoReport};
use std::time::Instant;
use vgpu_field::field::{Ctx, Field, PerTrajectory};
use vgpu_field::FieldError;
use vgpu_field::Launch;
use vgpu_field::LaunchConfig;
use vgpu_field::Method;

/// The scale kernel's field: `dy/dt = s·x[i]` for `i < n`, `0` past the end
/// (CUDA's `if (i < n)` guard).
pub(crate) struct ScaleField<'a> {
    pub(crate) x: &'a [f32],
    pub(crate) s: f32,
}

impl Field<f32, 1> for ScaleField<'_> {
    type Params = ();
    #[inline]
    fn eval(&self, _t: f32, _h: &[f32; 1], _h0: &[f32; 1], c: &Ctx<'_, '_, ()>, dh: &mut [f32; 1]) {
        let i = c.global();
        dh[0] = if i < self.x.len() {
            self.s * self.x[i]
        } else {
            0.0
        };
    }
}

/// Scale demo: bit-exact against `x[i] * s`.
///
/// # Errors
/// Invalid options (`n = 0`, bad block size).
pub fn scale(opts: &DemoOptions) -> Result<DemoReport, FieldError> {
    opts.check_n("scale")?;
    let x = Rng::new(opts.seed).vec_f32(opts.n, -10.0, 10.0);
    let cfg = LaunchConfig::linear(opts.n, opts.block)?;
    let mut y = vec![0.0f32; cfg.total_threads()];
    let start = Instant::now();
    let r = Launch::new(cfg)
        .method(Method::Euler)
        .dt(1.0)
        .steps(1)
        .par(opts.par)
        .run(&PerTrajectory(ScaleField { x: &x, s: opts.s }), &(), &mut y)?;
    let elapsed = start.elapsed();
    // The CUDA kernel: x[i] *= s.
    let want: Vec<f32> = x.iter().map(|v| v * opts.s).collect();
    let (max_error, differ) = compare_f32(&y[..opts.n], &want);
    Ok(DemoReport {
        name: "scale",
        trajectories: r.trajectories,
        steps: r.steps,
        max_error,
        tolerance: 0.0,
        passed: differ == 0,
        elapsed,
        note: format!("bit-exact vs x[i]*s ({differ} values differ)"),
    })
}
