//! Parallel trajectories: `dh/dt = sin(h0) − h` from `h(0) = h0`; every
//! trajectory relaxes to `sin(h0)`.

use crate::{DemoOptions, DemoReport};
use std::time::Instant;
use vgpu_field::field::{Ctx, Field, PerTrajectory};
use vgpu_field::FieldError;
use vgpu_field::Launch;
use vgpu_field::LaunchConfig;
use vgpu_field::Real;

/// The relaxation field `dh/dt = sin(h0) − h`, generic over the scalar type.
#[derive(Debug, Clone, Copy, Default)]
pub struct RelaxField;

impl<T: Real> Field<T, 1> for RelaxField {
    type Params = ();
    #[inline]
    fn eval(&self, _t: T, h: &[T; 1], h0: &[T; 1], _c: &Ctx<'_, '_, ()>, dh: &mut [T; 1]) {
        dh[0] = h0[0].sin() - h[0];
    }
}

/// The error bound the relax demo holds a trajectory to, for start `h0`, end
/// time `t_end`, `steps` steps of `dt ≤ 1` of a method of order `p ≤ 4` and a
/// scalar with machine epsilon `eps`:
///
/// ```text
/// |h_N − sin h0| ≤ e^(−T)·d  +  T·dt^p/(p+1)!·d  +  16·N·eps·(1 + |h0|),   d = |h0 − sin h0|
/// ```
///
/// Why: the exact solution is `sin h0 + (h0 − sin h0)·e^(−t)`, so at `T` it
/// misses `sin h0` by `e^(−T)·d`. For the linear field an explicit RK method of
/// order `p ≤ 4` with `p` stages multiplies `h − sin h0` per step by the degree-`p`
/// Taylor polynomial `R` of `e^(−dt)`; for `dt ≤ 1`, `0 ≤ R ≤ 1` and
/// `|R − e^(−dt)| ≤ dt^(p+1)/(p+1)!` (Lagrange remainder), so after `N` steps
/// `|R^N − e^(−T)| ≤ N·dt^(p+1)/(p+1)! = T·dt^p/(p+1)!`. Each step rounds a
/// handful of operations on values of size at most `1 + |h0|`: at most
/// `16·eps·(1 + |h0|)` per step, `N` steps (a contraction never amplifies it).
pub fn relax_tolerance(h0: f64, t_end: f64, dt: f64, steps: usize, order: u32, eps: f64) -> f64 {
    let d = (h0 - h0.sin()).abs();
    let fact: f64 = (1..=order as u64 + 1).map(|i| i as f64).product();
    (-t_end).exp() * d
        + t_end * dt.powi(order as i32) / fact * d
        + 16.0 * steps as f64 * eps * (1.0 + h0.abs())
}

/// Relax demo (in `f64`): every trajectory within [`relax_tolerance`] of `sin(h0)`.
///
/// # Errors
/// `n = 0`, `dt` outside `(0, 1]`, `t_end ≤ 0`.
pub fn relax(opts: &DemoOptions) -> Result<DemoReport, FieldError> {
    opts.check_n("relax")?;
    let bad = |why: String| FieldError::Invalid {
        context: "demo relax".into(),
        why,
    };
    if !(opts.dt > 0.0 && opts.dt <= 1.0) {
        return Err(bad(format!(
            "dt = {} must lie in (0, 1] for the stated bound",
            opts.dt
        )));
    }
    if !(opts.t_end.is_finite() && opts.t_end > 0.0) {
        return Err(bad(format!("t_end = {} must be positive", opts.t_end)));
    }
    let tableau = opts.method.tableau();
    if tableau.order() != tableau.stages() as u32 || tableau.order() > 4 {
        return Err(bad(format!(
            "the bound needs p = s ≤ 4 (got {})",
            tableau.name()
        )));
    }
    let steps = (opts.t_end / opts.dt).round().max(1.0) as usize;
    let t_end = steps as f64 * opts.dt;
    let n = opts.n;
    let cfg = LaunchConfig::linear(n, opts.block)?;
    // h0 spread over [-3, 3].
    let h0 = |i: usize| -3.0 + 6.0 * i as f64 / (n.max(2) - 1) as f64;
    let mut h: Vec<f64> = (0..cfg.total_threads()).map(h0).collect();
    let start = Instant::now();
    let r = Launch::new(cfg)
        .tableau(tableau.clone())
        .dt(opts.dt)
        .steps(steps)
        .par(opts.par)
        .run(&PerTrajectory(RelaxField), &(), &mut h)?;
    let elapsed = start.elapsed();
    let (mut max_error, mut worst_ratio, mut tolerance) = (0.0f64, 0.0f64, 0.0f64);
    for (i, &hi) in h.iter().enumerate().take(n) {
        let x = h0(i);
        let err = (hi - x.sin()).abs();
        let tol = relax_tolerance(x, t_end, opts.dt, steps, tableau.order(), f64::EPSILON);
        max_error = max_error.max(err);
        tolerance = tolerance.max(tol);
        worst_ratio = worst_ratio.max(if err.is_nan() {
            f64::INFINITY
        } else {
            err / tol
        });
    }
    Ok(DemoReport {
        name: "relax",
        trajectories: r.trajectories,
        steps,
        max_error,
        tolerance,
        passed: worst_ratio <= 1.0,
        elapsed,
        note: format!(
            "{}, T = {t_end}, dt = {}: |h - sin h0| <= e^-T d + T dt^p/(p+1)! d + 16 N eps (1+|h0|)",
            tableau.name(),
            opts.dt
        ),
    })
}
