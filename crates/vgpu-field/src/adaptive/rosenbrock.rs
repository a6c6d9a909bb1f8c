//! Rosenbrock23 for stiff problems: the Shampine–Reichelt `ode23s` method
//! (OrdinaryDiffEq.jl's `Rosenbrock23`), a linearly implicit W-method of
//! order 2, L-stable, with an embedded order-3 error estimate and a free
//! dense output, per trajectory.
//!
//! With `d = 1/(2 + √2)`, `e32 = 6 + √2`, `J = ∂f/∂y` and `f_t = ∂f/∂t` at
//! the step's start and `W = I − h·d·J` (the *W-transformation*: one LU
//! factorisation with partial pivoting of a dense `D × D` matrix per step,
//! `D ≤` [`MAX_STIFF_STATES`]):
//!
//! ```text
//! F0 = f(t, y)                     k1 = W⁻¹ (F0 + h·d·f_t)
//! F1 = f(t + h/2, y + h/2·k1)      k2 = W⁻¹ (F1 − k1) + k1
//! y1 = y + h·k2                    F2 = f(t + h, y1)
//! k3 = W⁻¹ (F2 − e32·(k2 − F1) − 2·(k1 − F0) + h·d·f_t)
//! error = h/6 · (k1 − 2·k2 + k3)
//! y(t + θh) = y + h·(θ(1−θ)·k1 + θ(θ−2d)·k2) / (1 − 2d)
//! ```
//!
//! `F2` is the next step's `F0` (FSAL). Step control, save times, events and
//! statuses are the explicit pairs' (the PI controller for order 2).

use crate::adaptive::controller::{error_norm, initial_step};
use crate::adaptive::driver::{AdaptiveEnsemble, EnsembleProblem, Plan};
use crate::adaptive::error::AdaptiveError;
use crate::adaptive::events::EventScan;
use crate::adaptive::rhs::{OdeRhs, Traj};
use crate::adaptive::status::{EnsembleSolution, Status, TrajectoryStats};
use crate::adaptive::tableaus::bs3;
use crate::real::Real;

/// The most states Rosenbrock23 takes (its `W` is a dense `D × D` matrix
/// factored every step).
pub const MAX_STIFF_STATES: usize = 16;

/// Integrates every trajectory of `prob` with Rosenbrock23.
pub(super) fn solve<T: Real, const D: usize, R: OdeRhs<T, D>>(
    opts: &AdaptiveEnsemble,
    rhs: &R,
    prob: &EnsembleProblem<'_, T>,
) -> Result<EnsembleSolution<T>, AdaptiveError> {
    let unavailable = |why: String| AdaptiveError::MethodUnavailable {
        method: "rosenbrock23",
        why,
    };
    if D > MAX_STIFF_STATES {
        return Err(unavailable(format!(
            "the system has {D} states; the stiff solver takes at most {MAX_STIFF_STATES} \
             (use an explicit method such as tsit5)"
        )));
    }
    if !rhs.has_jacobian() {
        return Err(unavailable(
            "the right-hand side gives no Jacobian (a .field kernel derives it; a Rust \
             closure cannot)"
                .into(),
        ));
    }
    // The options are checked as for the explicit pair of the same order.
    let mut plan = opts.plan::<T, D, 4>(&bs3(), prob)?;
    plan.ctrl = opts.controller_or(2);
    rhs.check(prob.n, prob.n_params)?;
    opts.run_all(prob, plan.saveat.len(), |i, y0, p, e, s| {
        let (t0, t1) = plan.spans[if plan.spans.len() == 1 { 0 } else { i }];
        run_one(&plan, rhs, i, y0, p, t0, t1, e, s)
    })
}

/// A dense `D × D` LU factorisation with partial pivoting (`PA = LU`, `L`
/// unit lower, both in `lu`), or `None` for a singular or non-finite matrix.
struct Lu<T, const D: usize> {
    lu: [[T; D]; D],
    perm: [usize; D],
}

impl<T: Real, const D: usize> Lu<T, D> {
    #[allow(clippy::needless_range_loop)]
    fn factor(mut a: [[T; D]; D]) -> Option<Self> {
        let mut perm: [usize; D] = std::array::from_fn(|i| i);
        for c in 0..D {
            let p = (c..D).max_by(|&i, &j| {
                a[i][c]
                    .abs()
                    .partial_cmp(&a[j][c].abs())
                    .unwrap_or(std::cmp::Ordering::Equal)
            })?;
            let piv = a[p][c];
            if piv == T::ZERO || !piv.is_finite() {
                return None;
            }
            a.swap(c, p);
            perm.swap(c, p);
            for r in c + 1..D {
                let l = a[r][c] / piv;
                a[r][c] = l;
                for k in c + 1..D {
                    let v = a[c][k];
                    a[r][k] -= l * v;
                }
            }
        }
        Some(Lu { lu: a, perm })
    }

    /// `A⁻¹ b`.
    #[allow(clippy::needless_range_loop)]
    fn solve(&self, b: &[T; D]) -> [T; D] {
        let mut x: [T; D] = std::array::from_fn(|i| b[self.perm[i]]);
        for r in 0..D {
            for k in 0..r {
                let v = self.lu[r][k] * x[k];
                x[r] -= v;
            }
        }
        for r in (0..D).rev() {
            for k in r + 1..D {
                let v = self.lu[r][k] * x[k];
                x[r] -= v;
            }
            x[r] = x[r] / self.lu[r][r];
        }
        x
    }
}

/// One trajectory (see the module docs; step control, saves, events and
/// statuses as the explicit pairs' `run_one`).
#[allow(clippy::too_many_arguments, clippy::needless_range_loop)]
fn run_one<T: Real, const D: usize, R: OdeRhs<T, D>>(
    plan: &Plan<T, D, 4>,
    rhs: &R,
    index: usize,
    y0: &[T; D],
    p: &[T],
    t0: T,
    t1: T,
    end: &mut [T],
    saved: &mut [T],
) -> TrajectoryStats {
    let cx = Traj { index, y0, p };
    let mut sc = rhs.scratch();
    let ksave = plan.saveat.len();
    let mut st = TrajectoryStats::default();
    let (mut y, mut t, mut ns) = (*y0, t0, 0);
    while ns < ksave && plan.saveat[ns] <= t0 {
        saved[ns * D..][..D].copy_from_slice(&y);
        ns += 1;
    }
    let sqrt2 = T::from_f64(2.0).sqrt();
    let d = T::ONE / (T::from_f64(2.0) + sqrt2);
    let e32 = T::from_f64(6.0) + sqrt2;
    let (two, half) = (T::from_f64(2.0), T::from_f64(0.5));
    let dense = T::ONE / (T::ONE - two * d);
    let status = 'run: {
        if !T::all_finite(&y) {
            break 'run Status::NonFinite;
        }
        if t0 >= t1 {
            break 'run Status::Success;
        }
        let mut f0 = [T::ZERO; D];
        rhs.rhs(t, &y, &cx, &mut sc, &mut f0);
        st.evaluations += 1;
        if !T::all_finite(&f0) {
            break 'run Status::NonFinite;
        }
        let adaptive = plan.fixed.is_none();
        let fixed_h = plan.fixed.map(|h| T::from_f64(h.min(plan.dtmax)));
        let start =
            |t: T, y: &[T; D], f0: &[T; D], sc: &mut R::Scratch, st: &mut TrajectoryStats| match (
                plan.fixed, plan.dt0,
            ) {
                (Some(h), _) | (None, Some(h)) => h.min(plan.dtmax),
                (None, None) => {
                    st.evaluations += 1;
                    initial_step(
                        t,
                        y,
                        f0,
                        &plan.atol,
                        &plan.rtol,
                        2,
                        plan.dtmax,
                        |t, y, dy| rhs.rhs(t, y, &cx, sc, dy),
                    )
                }
            };
        let mut dt = start(t, &y, &f0, &mut sc, &mut st);
        let mut err_old = plan.ctrl.qoldinit;
        let specs = rhs.events();
        let n_ev = specs.len();
        let mut ev = EventScan::new(n_ev);
        if n_ev > 0 {
            rhs.event_values(t, &y, &cx, &mut sc, &mut ev.prev);
        }
        let (mut jac, mut ft) = ([[T::ZERO; D]; D], [T::ZERO; D]);
        let mut jac_at = None;
        let (mut iters, mut evented) = (0u64, false);
        loop {
            if t >= t1 {
                break 'run Status::Success;
            }
            if iters >= plan.maxiters {
                break 'run Status::MaxIters;
            }
            iters += 1;
            let mut h = T::from_f64(dt);
            let snap = T::from_f64(64.0) * T::EPSILON * (t1.abs() + h.abs());
            let last = t + h >= t1 - snap;
            if last {
                h = t1 - t;
            }
            // The Jacobian at the step's start (kept across rejections).
            if jac_at != Some(t.to_bits_u64()) {
                rhs.jacobian(t, &y, &cx, &mut sc, &mut jac, &mut ft);
                jac_at = Some(t.to_bits_u64());
            }
            let hd = h * d;
            let w: [[T; D]; D] = std::array::from_fn(|i| {
                std::array::from_fn(|j| {
                    let id = if i == j { T::ONE } else { T::ZERO };
                    id - hd * jac[i][j]
                })
            });
            let Some(lu) = Lu::factor(w) else {
                // A singular W: a smaller step moves it towards I.
                st.rejected += 1;
                dt = plan.ctrl.reject(h.to_f64(), f64::INFINITY);
                if !adaptive || dt < plan.dtmin || t + T::from_f64(dt) == t {
                    break 'run Status::DtMin;
                }
                continue;
            };
            let k1 = lu.solve(&std::array::from_fn(|i| f0[i] + hd * ft[i]));
            let u1: [T; D] = std::array::from_fn(|i| y[i] + half * h * k1[i]);
            let mut f1 = [T::ZERO; D];
            rhs.rhs(t + half * h, &u1, &cx, &mut sc, &mut f1);
            let k2 = {
                let s = lu.solve(&std::array::from_fn(|i| f1[i] - k1[i]));
                std::array::from_fn::<T, D, _>(|i| s[i] + k1[i])
            };
            let y_new: [T; D] = std::array::from_fn(|i| y[i] + h * k2[i]);
            let t_new = match (last, fixed_h) {
                (true, _) => t1,
                (false, Some(hf)) if !evented => T::from_usize(st.accepted as usize + 1) * hf + t0,
                (false, _) => t + h,
            };
            let mut f2 = [T::ZERO; D];
            rhs.rhs(t_new, &y_new, &cx, &mut sc, &mut f2);
            st.evaluations += 2;
            let err = if adaptive {
                let k3 = lu.solve(&std::array::from_fn(|i| {
                    f2[i] - e32 * (k2[i] - f1[i]) - two * (k1[i] - f0[i]) + hd * ft[i]
                }));
                let e: [T; D] =
                    std::array::from_fn(|i| h / T::from_f64(6.0) * (k1[i] - two * k2[i] + k3[i]));
                error_norm(&e, &y, &y_new, &plan.atol, &plan.rtol).to_f64()
            } else {
                0.0
            };
            // NaN or infinite errors are rejections too.
            let accepted = err <= 1.0;
            if !accepted {
                st.rejected += 1;
                dt = plan.ctrl.reject(h.to_f64(), err);
                if dt < plan.dtmin || t + T::from_f64(dt) == t {
                    break 'run Status::DtMin;
                }
                continue;
            }
            let interp = |th: T, out: &mut [T; D]| {
                let c1 = th * (T::ONE - th) * dense;
                let c2 = th * (th - two * d) * dense;
                for i in 0..D {
                    out[i] = y[i] + h * (c1 * k1[i] + c2 * k2[i]);
                }
            };
            let mut fired = None;
            if n_ev > 0 {
                rhs.event_values(t_new, &y_new, &cx, &mut sc, &mut ev.new);
                fired = ev.scan(specs, t, h, interp, |tg, yg, out| {
                    rhs.event_values(tg, yg, &cx, &mut sc, out)
                });
            }
            let (t_end, y_end) = match fired {
                Some((_, th)) => {
                    let mut ye = [T::ZERO; D];
                    interp(th, &mut ye);
                    (t + th * h, ye)
                }
                None => (t_new, y_new),
            };
            let terminates = fired.is_some_and(|(e, _): (usize, T)| specs[e].terminate);
            while ns < ksave
                && (plan.saveat[ns] < t_end
                    || (plan.saveat[ns] == t_end && (fired.is_none() || terminates)))
            {
                let ts = plan.saveat[ns];
                let out: &mut [T; D] = (&mut saved[ns * D..][..D]).try_into().expect("D");
                if ts == t_end {
                    *out = y_end;
                } else {
                    interp((ts - t) / h, out);
                }
                ns += 1;
            }
            y = y_end;
            t = t_end;
            st.accepted += 1;
            if let Some((e, _)) = fired {
                if terminates {
                    break 'run Status::Terminated;
                }
                rhs.apply_event(e, t, &mut y, &cx, &mut sc);
                rhs.rhs(t, &y, &cx, &mut sc, &mut f0);
                st.evaluations += 1;
                if !T::all_finite(&y) || !T::all_finite(&f0) {
                    break 'run Status::NonFinite;
                }
                rhs.event_values(t, &y, &cx, &mut sc, &mut ev.prev);
                ev.just = true;
                evented = true;
                if adaptive {
                    // A jump restarts the integration (see the explicit pairs).
                    err_old = plan.ctrl.qoldinit;
                    dt = start(t, &y, &f0, &mut sc, &mut st);
                }
                continue;
            }
            f0 = f2;
            if !T::all_finite(&y) || !T::all_finite(&f0) {
                break 'run Status::NonFinite;
            }
            std::mem::swap(&mut ev.prev, &mut ev.new);
            ev.just = false;
            if adaptive {
                dt = plan
                    .ctrl
                    .accept(h.to_f64(), err, &mut err_old)
                    .min(plan.dtmax);
                if !last && dt < plan.dtmin {
                    break 'run Status::DtMin;
                }
            }
        }
    };
    for s in saved[ns * D..].iter_mut() {
        *s = T::from_f64(f64::NAN);
    }
    end.copy_from_slice(&y);
    st.status = status;
    st.t = t.to_f64();
    st
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lu_solves_with_pivoting_and_refuses_singular_matrices() {
        // A zero leading entry needs a row exchange.
        let a = [[0.0, 2.0, 1.0], [1.0, 1.0, 0.0], [3.0, 0.0, 1.0f64]];
        let x = [1.0, -2.0, 0.5];
        let b: [f64; 3] = std::array::from_fn(|i| (0..3).map(|j| a[i][j] * x[j]).sum());
        let got = Lu::factor(a).unwrap().solve(&b);
        for i in 0..3 {
            assert!((got[i] - x[i]).abs() < 1e-14, "{got:?}");
        }
        assert!(Lu::factor([[1.0, 2.0], [2.0, 4.0f64]]).is_none());
    }
}

#[cfg(test)]
mod vdp_tests {
    use super::*;
    use crate::adaptive::AdaptiveMethod;

    /// Van der Pol, `x'' = μ(1 − x²)x' − x`, with its analytic Jacobian.
    struct Vdp(f64);
    impl OdeRhs<f64, 2> for Vdp {
        type Scratch = ();
        fn scratch(&self) {}
        fn rhs(&self, _t: f64, y: &[f64; 2], _: &Traj<'_, f64, 2>, _: &mut (), dy: &mut [f64; 2]) {
            dy[0] = y[1];
            dy[1] = self.0 * (1.0 - y[0] * y[0]) * y[1] - y[0];
        }
        fn has_jacobian(&self) -> bool {
            true
        }
        fn jacobian(
            &self,
            _t: f64,
            y: &[f64; 2],
            _: &Traj<'_, f64, 2>,
            _: &mut (),
            jac: &mut [[f64; 2]; 2],
            ft: &mut [f64; 2],
        ) {
            *jac = [
                [0.0, 1.0],
                [
                    -2.0 * self.0 * y[0] * y[1] - 1.0,
                    self.0 * (1.0 - y[0] * y[0]),
                ],
            ];
            *ft = [0.0; 2];
        }
    }

    #[test]
    fn stiff_van_der_pol_takes_long_steps() {
        let prob = EnsembleProblem::new(1, &[2.0, 0.0], &[(0.0, 3000.0)]);
        let sol = AdaptiveEnsemble::new(AdaptiveMethod::Rosenbrock23)
            .rtol(1e-6)
            .atol(1e-6)
            .solve(&Vdp(1000.0), &prob)
            .unwrap();
        let st = sol.stats[0];
        assert_eq!(st.status, Status::Success, "{st:?}");
        assert!(st.accepted < 5000, "{st:?}");
    }
}
