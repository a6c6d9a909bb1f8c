//! The one trajectory loop of the adaptive driver, generic over a [`Stepper`]:
//! the explicit pairs ([`crate::adaptive::erk::ErkStep`], tableau data) and
//! Rosenbrock23 ([`crate::adaptive::rosenbrock`], a W-method) differ only in
//! how one step is attempted and interpolated. Everything else is here, once:
//! the starting step, the last step snapped onto `t1`, fixed-step times,
//! acceptance and rejection by the PI controller (`dtmin`, `dtmax`,
//! `maxiters`), event location on the dense output with jumps or termination,
//! save times, the per-trajectory [`Status`] and step counts, and the NaN fill
//! of save rows a failed trajectory did not reach.

use crate::adaptive::controller::{initial_step, PiController};
use crate::adaptive::events::EventScan;
use crate::adaptive::rhs::{OdeRhs, Traj};
use crate::adaptive::status::{Status, TrajectoryStats};
use crate::real::Real;

/// One step attempt: from `(t, y)` by `h`, ending at `t_new` (`t + h`, `t1`
/// for the last step, or the fixed-step grid's next point).
pub(super) struct StepAt<'s, T, const D: usize> {
    /// The step's start.
    pub(super) t: T,
    /// The state at the start.
    pub(super) y: &'s [T; D],
    /// The step.
    pub(super) h: T,
    /// Where the step ends.
    pub(super) t_new: T,
    /// `(atol, rtol)` of the error estimate; `None` for fixed steps (no error
    /// estimate, every step accepted).
    pub(super) tol: Option<(&'s [T; D], &'s [T; D])>,
}

/// The options every trajectory runs with, validated and in the state type
/// (the method's own data is its stepper's).
pub(super) struct Plan<T, const D: usize> {
    pub(super) atol: [T; D],
    pub(super) rtol: [T; D],
    pub(super) ctrl: PiController,
    pub(super) fixed: Option<f64>,
    pub(super) dt0: Option<f64>,
    pub(super) dtmin: f64,
    pub(super) dtmax: f64,
    pub(super) maxiters: u64,
    pub(super) saveat: Vec<T>,
    pub(super) spans: Vec<(T, T)>,
}

/// How one method takes a step of one trajectory; its value holds the
/// trajectory's stages between the calls of [`run_one`].
pub(super) trait Stepper<T: Real, const D: usize> {
    /// The order Hairer's starting-step estimate assumes.
    fn start_order(&self) -> u32;

    /// `f(t, y)` at the start of the next step (written by the loop at the
    /// start and after a jump; kept up to date by [`Stepper::advance`]).
    fn f0(&mut self) -> &mut [T; D];

    /// Attempts the step `at`, adding the right-hand side evaluations it cost
    /// to `evaluations`: the new state and the error norm (`0` without a
    /// tolerance; NaN or infinite is a rejection), or `None` if the step
    /// cannot be taken with this `h` (a singular matrix: a rejection that a
    /// smaller step may cure).
    fn attempt<R: OdeRhs<T, D>>(
        &mut self,
        rhs: &R,
        cx: &Traj<'_, T, D>,
        sc: &mut R::Scratch,
        at: &StepAt<'_, T, D>,
        evaluations: &mut u64,
    ) -> Option<([T; D], f64)>;

    /// The attempt was accepted; `needed`: `f(t_new, y_new)` will be read
    /// (the next step, a save or an event). Returns the evaluations it cost.
    #[allow(clippy::too_many_arguments)]
    fn accepted<R: OdeRhs<T, D>>(
        &mut self,
        rhs: &R,
        cx: &Traj<'_, T, D>,
        sc: &mut R::Scratch,
        t_new: T,
        y_new: &[T; D],
        needed: bool,
    ) -> u64;

    /// Makes the dense output of the accepted step `(t, y, h)` ready (extra
    /// stages, once per step); returns the evaluations it cost.
    fn dense<R: OdeRhs<T, D>>(
        &mut self,
        rhs: &R,
        cx: &Traj<'_, T, D>,
        sc: &mut R::Scratch,
        t: T,
        y: &[T; D],
        h: T,
    ) -> u64;

    /// `y(t + θh)` of the accepted step into `out` (after [`Stepper::dense`]).
    fn interpolate(&self, y: &[T; D], h: T, theta: T, out: &mut [T]);

    /// Moves on to the next step without a jump: `f(t_new, y_new)` becomes
    /// [`Stepper::f0`]; returns whether it was evaluated (FSAL or needed).
    fn advance(&mut self) -> bool;
}

/// Whether every component of `v` is finite, inline: the per-step check of
/// a state of a few components (an out-of-line call to [`Real::all_finite`]
/// costs more than the comparisons).
#[inline(always)]
fn finite<T: Real, const D: usize>(v: &[T; D]) -> bool {
    v.iter().all(|x| x.is_finite())
}

/// The step from `(t, y)` with derivative `f0` the controller starts with
/// (at `t0` and after a jump): `dt0`, the fixed step, or Hairer's estimate
/// (one more evaluation).
#[allow(clippy::too_many_arguments)]
fn start<T: Real, const D: usize, R: OdeRhs<T, D>>(
    plan: &Plan<T, D>,
    order: u32,
    rhs: &R,
    cx: &Traj<'_, T, D>,
    sc: &mut R::Scratch,
    t: T,
    y: &[T; D],
    f0: &[T; D],
    st: &mut TrajectoryStats,
) -> f64 {
    match (plan.fixed, plan.dt0) {
        (Some(h), _) | (None, Some(h)) => h.min(plan.dtmax),
        (None, None) => {
            st.evaluations += 1;
            initial_step(
                t,
                y,
                f0,
                &plan.atol,
                &plan.rtol,
                order,
                plan.dtmax,
                |t, y, dy| rhs.rhs(t, y, cx, sc, dy),
            )
        }
    }
}

/// Integrates one trajectory from `(t0, y0)` to `t1` with `stepper`; writes
/// its final state into `end` (`D` values) and its save points into `saved`
/// (`K × D` values, NaN from the first one not reached).
#[allow(clippy::too_many_arguments)]
#[inline]
pub(super) fn run_one<T: Real, const D: usize, St: Stepper<T, D>, R: OdeRhs<T, D>>(
    plan: &Plan<T, D>,
    stepper: &mut St,
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
    let order = stepper.start_order();
    let status = 'run: {
        if !T::all_finite(&y) {
            break 'run Status::NonFinite;
        }
        if t0 >= t1 {
            break 'run Status::Success;
        }
        rhs.rhs(t, &y, &cx, &mut sc, stepper.f0());
        st.evaluations += 1;
        if !T::all_finite(stepper.f0()) {
            break 'run Status::NonFinite;
        }
        let adaptive = plan.fixed.is_none();
        let fixed_h = plan.fixed.map(|h| T::from_f64(h.min(plan.dtmax)));
        let f0 = *stepper.f0();
        let mut dt = start(plan, order, rhs, &cx, &mut sc, t, &y, &f0, &mut st);
        let mut err_old = plan.ctrl.qoldinit;
        let tol = adaptive.then_some((&plan.atol, &plan.rtol));
        // Events: g at the step's start and end, and at root-finder points.
        let specs = rhs.events();
        let n_ev = specs.len();
        let mut ev = EventScan::new(n_ev);
        let mut evented = false;
        if n_ev > 0 {
            rhs.event_values(t, &y, &cx, &mut sc, &mut ev.prev);
        }
        let mut iters = 0u64;
        loop {
            if t >= t1 {
                break 'run Status::Success;
            }
            if iters >= plan.maxiters {
                break 'run Status::MaxIters;
            }
            iters += 1;
            let mut h = T::from_f64(dt);
            // The last step ends on t1 exactly; a step that would leave less
            // than 64 ulps of t1 to go is stretched to t1 rather than followed
            // by a sliver (fixed steps of (t1 − t0)/n take exactly n steps).
            let snap = T::from_f64(64.0) * T::EPSILON * (t1.abs() + h.abs());
            let last = t + h >= t1 - snap;
            if last {
                h = t1 - t;
            }
            let t_new = match (last, fixed_h) {
                (true, _) => t1,
                // Fixed steps: t_n = fl(n)·h + t0, as the fixed-step executor
                // (after an event the grid restarts at the event: t + h).
                (false, Some(hf)) if !evented => T::from_usize(st.accepted as usize + 1) * hf + t0,
                (false, _) => t + h,
            };
            let at = StepAt {
                t,
                y: &y,
                h,
                t_new,
                tol,
            };
            let tried = stepper.attempt(rhs, &cx, &mut sc, &at, &mut st.evaluations);
            // NaN or infinite errors are rejections too; so is a step the
            // method cannot take (err = ∞).
            let (y_new, err) = match tried {
                Some((y_new, err)) if err <= 1.0 => (y_new, err),
                _ => {
                    let err = tried.map_or(f64::INFINITY, |(_, e)| e);
                    st.rejected += 1;
                    dt = plan.ctrl.reject(h.to_f64(), err);
                    if !adaptive || dt < plan.dtmin || t + T::from_f64(dt) == t {
                        break 'run Status::DtMin;
                    }
                    continue;
                }
            };
            let saves_here = ns < ksave && plan.saveat[ns] <= t_new;
            st.evaluations += stepper.accepted(
                rhs,
                &cx,
                &mut sc,
                t_new,
                &y_new,
                !last || saves_here || n_ev > 0,
            );
            // The earliest crossing of the step: (event, θ).
            let mut fired: Option<(usize, T)> = None;
            if n_ev > 0 {
                rhs.event_values(t_new, &y_new, &cx, &mut sc, &mut ev.new);
                st.evaluations += stepper.dense(rhs, &cx, &mut sc, t, &y, h);
                let stepper = &*stepper;
                fired = ev.scan(
                    specs,
                    t,
                    h,
                    |th, out: &mut [T; D]| stepper.interpolate(&y, h, th, out),
                    |tg, yg, out| rhs.event_values(tg, yg, &cx, &mut sc, out),
                );
            }
            // Where this step ends: t_new, or the event.
            let (t_end, y_end) = match fired {
                Some((_, th)) => {
                    let mut ye = [T::ZERO; D];
                    stepper.interpolate(&y, h, th, &mut ye);
                    (t + th * h, ye)
                }
                None => (t_new, y_new),
            };
            let terminates = fired.is_some_and(|(e, _)| specs[e].terminate);
            // Saves up to the step's end; at an event that continues, a save
            // at the event's time takes the state after its jumps (the next
            // step's start).
            while ns < ksave
                && (plan.saveat[ns] < t_end
                    || (plan.saveat[ns] == t_end && (fired.is_none() || terminates)))
            {
                let ts = plan.saveat[ns];
                let out = &mut saved[ns * D..][..D];
                if ts == t_end {
                    out.copy_from_slice(&y_end);
                } else {
                    st.evaluations += stepper.dense(rhs, &cx, &mut sc, t, &y, h);
                    stepper.interpolate(&y, h, (ts - t) / h, out);
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
                if !T::all_finite(&y) {
                    break 'run Status::NonFinite;
                }
                rhs.rhs(t, &y, &cx, &mut sc, stepper.f0());
                st.evaluations += 1;
                if !T::all_finite(stepper.f0()) {
                    break 'run Status::NonFinite;
                }
                rhs.event_values(t, &y, &cx, &mut sc, &mut ev.prev);
                ev.just = true;
                evented = true;
                if adaptive {
                    // A jump is a discontinuity: the integration restarts from
                    // the jumped state with a fresh starting step and
                    // controller history, as at t0 (a step sized for the
                    // smooth flow before the jump could hide a whole excursion
                    // of g after it).
                    err_old = plan.ctrl.qoldinit;
                    let f0 = *stepper.f0();
                    dt = start(plan, order, rhs, &cx, &mut sc, t, &y, &f0, &mut st);
                }
                continue;
            }
            let fresh = stepper.advance();
            if !finite(&y) || (fresh && !finite(stepper.f0())) {
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
