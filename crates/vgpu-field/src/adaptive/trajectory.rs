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

impl<T: Real, const D: usize> Plan<T, D> {
    /// `(t0, t1)` of trajectory `i` (one span shared by all, or one each).
    #[inline]
    pub(super) fn span(&self, i: usize) -> (T, T) {
        self.spans[if self.spans.len() == 1 { 0 } else { i }]
    }
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

/// The next step attempt of a trajectory in flight: its size and where it
/// ends.
#[derive(Clone, Copy)]
pub(super) struct Pending<T> {
    /// The step.
    pub(super) h: T,
    /// Where the step ends.
    pub(super) t_new: T,
    /// Whether it ends on `t1`.
    last: bool,
}

/// One trajectory in flight: everything the trajectory loop keeps between
/// two step attempts. [`Flight::next`] says the next attempt, the caller
/// makes it ([`Flight::attempt`], or several trajectories' attempts at once),
/// [`Flight::finish`] takes its result; [`Flight::end`] writes the
/// trajectory's results. [`run_one`] is that loop for one trajectory; the
/// lanes of [`crate::adaptive::erk`] run several trajectories' flights side
/// by side, with the same arithmetic.
pub(super) struct Flight<'a, 'o, T: Real, const D: usize, St, R: OdeRhs<T, D>> {
    plan: &'a Plan<T, D>,
    rhs: &'a R,
    /// The trajectory's stepper (its stages).
    pub(super) stepper: St,
    /// The trajectory.
    pub(super) cx: Traj<'a, T, D>,
    /// The right-hand side's working memory.
    pub(super) sc: R::Scratch,
    /// Its statistics so far.
    pub(super) st: TrajectoryStats,
    /// The state at `t`.
    pub(super) y: [T; D],
    /// The time reached.
    pub(super) t: T,
    t0: T,
    t1: T,
    saved: &'o mut [T],
    ns: usize,
    order: u32,
    fixed_h: Option<T>,
    dt: f64,
    err_old: f64,
    ev: EventScan<T>,
    evented: bool,
    iters: u64,
    done: Option<Status>,
}

impl<'a, 'o, T: Real, const D: usize, St: Stepper<T, D>, R: OdeRhs<T, D>>
    Flight<'a, 'o, T, D, St, R>
{
    /// Starts trajectory `index` from `(t0, y0)` towards `t1` with `stepper`:
    /// the save points at or before `t0` into `saved` (`K × D` values),
    /// `f(t0, y0)`, the starting step and the events' values at `t0`.
    #[allow(clippy::too_many_arguments)]
    #[inline]
    pub(super) fn new(
        plan: &'a Plan<T, D>,
        mut stepper: St,
        rhs: &'a R,
        index: usize,
        y0: &'a [T; D],
        p: &'a [T],
        (t0, t1): (T, T),
        saved: &'o mut [T],
    ) -> Self {
        let cx = Traj { index, y0, p };
        let mut sc = rhs.scratch();
        let ksave = plan.saveat.len();
        let mut st = TrajectoryStats::default();
        let (y, t, mut ns) = (*y0, t0, 0);
        while ns < ksave && plan.saveat[ns] <= t0 {
            saved[ns * D..][..D].copy_from_slice(&y);
            ns += 1;
        }
        let order = stepper.start_order();
        let mut ev = EventScan::new(rhs.events().len());
        let mut dt = 0.0;
        let done = 'start: {
            if !T::all_finite(&y) {
                break 'start Some(Status::NonFinite);
            }
            if t0 >= t1 {
                break 'start Some(Status::Success);
            }
            rhs.rhs(t, &y, &cx, &mut sc, stepper.f0());
            st.evaluations += 1;
            if !T::all_finite(stepper.f0()) {
                break 'start Some(Status::NonFinite);
            }
            let f0 = *stepper.f0();
            dt = start(plan, order, rhs, &cx, &mut sc, t, &y, &f0, &mut st);
            if !rhs.events().is_empty() {
                rhs.event_values(t, &y, &cx, &mut sc, &mut ev.prev);
            }
            None
        };
        Flight {
            plan,
            rhs,
            stepper,
            cx,
            sc,
            st,
            y,
            t,
            t0,
            t1,
            saved,
            ns,
            order,
            fixed_h: plan.fixed.map(|h| T::from_f64(h.min(plan.dtmax))),
            dt,
            err_old: plan.ctrl.qoldinit,
            ev,
            evented: false,
            iters: 0,
            done,
        }
    }

    /// The next step attempt, or `None` when the trajectory has ended.
    #[inline]
    pub(super) fn next(&mut self) -> Option<Pending<T>> {
        if self.done.is_some() {
            return None;
        }
        if self.t >= self.t1 {
            self.done = Some(Status::Success);
            return None;
        }
        if self.iters >= self.plan.maxiters {
            self.done = Some(Status::MaxIters);
            return None;
        }
        self.iters += 1;
        let (t, t1) = (self.t, self.t1);
        let mut h = T::from_f64(self.dt);
        // The last step ends on t1 exactly; a step that would leave less
        // than 64 ulps of t1 to go is stretched to t1 rather than followed
        // by a sliver (fixed steps of (t1 − t0)/n take exactly n steps).
        let snap = T::from_f64(64.0) * T::EPSILON * (t1.abs() + h.abs());
        let last = t + h >= t1 - snap;
        if last {
            h = t1 - t;
        }
        let t_new = match (last, self.fixed_h) {
            (true, _) => t1,
            // Fixed steps: t_n = fl(n)·h + t0, as the fixed-step executor
            // (after an event the grid restarts at the event: t + h).
            (false, Some(hf)) if !self.evented => {
                T::from_usize(self.st.accepted as usize + 1) * hf + self.t0
            }
            (false, _) => t + h,
        };
        Some(Pending { h, t_new, last })
    }

    /// `(atol, rtol)` of the error estimate; `None` for fixed steps.
    #[inline]
    pub(super) fn tol(&self) -> Option<(&'a [T; D], &'a [T; D])> {
        let plan = self.plan;
        plan.fixed.is_none().then_some((&plan.atol, &plan.rtol))
    }

    /// Makes the attempt `p` with the trajectory's own stepper.
    #[inline]
    pub(super) fn attempt(&mut self, p: &Pending<T>) -> Option<([T; D], f64)> {
        let at = StepAt {
            t: self.t,
            y: &self.y,
            h: p.h,
            t_new: p.t_new,
            tol: self.tol(),
        };
        self.stepper.attempt(
            self.rhs,
            &self.cx,
            &mut self.sc,
            &at,
            &mut self.st.evaluations,
        )
    }

    /// Takes the result of the attempt `p` (the new state and the error
    /// norm, `None` if the step could not be taken): rejection and a
    /// smaller step, or acceptance with its events, saves and next step.
    #[inline]
    pub(super) fn finish(&mut self, p: Pending<T>, tried: Option<([T; D], f64)>) {
        if let Some(status) = self.finish_or_end(p, tried) {
            self.done = Some(status);
        }
    }

    #[inline]
    fn finish_or_end(&mut self, p: Pending<T>, tried: Option<([T; D], f64)>) -> Option<Status> {
        let Pending { h, t_new, last } = p;
        let (plan, rhs) = (self.plan, self.rhs);
        let (t, y) = (self.t, self.y);
        let adaptive = plan.fixed.is_none();
        let ksave = plan.saveat.len();
        let specs = rhs.events();
        let n_ev = specs.len();
        let (cx, sc, st) = (&self.cx, &mut self.sc, &mut self.st);
        // NaN or infinite errors are rejections too; so is a step the
        // method cannot take (err = ∞).
        let (y_new, err) = match tried {
            Some((y_new, err)) if err <= 1.0 => (y_new, err),
            _ => {
                let err = tried.map_or(f64::INFINITY, |(_, e)| e);
                st.rejected += 1;
                self.dt = plan.ctrl.reject(h.to_f64(), err);
                if !adaptive || self.dt < plan.dtmin || t + T::from_f64(self.dt) == t {
                    return Some(Status::DtMin);
                }
                return None;
            }
        };
        let saves_here = self.ns < ksave && plan.saveat[self.ns] <= t_new;
        let stepper = &mut self.stepper;
        st.evaluations +=
            stepper.accepted(rhs, cx, sc, t_new, &y_new, !last || saves_here || n_ev > 0);
        // The earliest crossing of the step: (event, θ).
        let mut fired: Option<(usize, T)> = None;
        if n_ev > 0 {
            let ev = &mut self.ev;
            rhs.event_values(t_new, &y_new, cx, sc, &mut ev.new);
            st.evaluations += stepper.dense(rhs, cx, sc, t, &y, h);
            let stepper = &*stepper;
            fired = ev.scan(
                specs,
                t,
                h,
                |th, out: &mut [T; D]| stepper.interpolate(&y, h, th, out),
                |tg, yg, out| rhs.event_values(tg, yg, cx, sc, out),
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
        while self.ns < ksave
            && (plan.saveat[self.ns] < t_end
                || (plan.saveat[self.ns] == t_end && (fired.is_none() || terminates)))
        {
            let ts = plan.saveat[self.ns];
            let out = &mut self.saved[self.ns * D..][..D];
            if ts == t_end {
                out.copy_from_slice(&y_end);
            } else {
                st.evaluations += stepper.dense(rhs, cx, sc, t, &y, h);
                stepper.interpolate(&y, h, (ts - t) / h, out);
            }
            self.ns += 1;
        }
        self.y = y_end;
        self.t = t_end;
        st.accepted += 1;
        if let Some((e, _)) = fired {
            if terminates {
                return Some(Status::Terminated);
            }
            let (t, y) = (self.t, &mut self.y);
            rhs.apply_event(e, t, y, cx, sc);
            if !T::all_finite(y) {
                return Some(Status::NonFinite);
            }
            rhs.rhs(t, y, cx, sc, stepper.f0());
            st.evaluations += 1;
            if !T::all_finite(stepper.f0()) {
                return Some(Status::NonFinite);
            }
            rhs.event_values(t, y, cx, sc, &mut self.ev.prev);
            self.ev.just = true;
            self.evented = true;
            if adaptive {
                // A jump is a discontinuity: the integration restarts from
                // the jumped state with a fresh starting step and
                // controller history, as at t0 (a step sized for the
                // smooth flow before the jump could hide a whole excursion
                // of g after it).
                self.err_old = plan.ctrl.qoldinit;
                let f0 = *stepper.f0();
                self.dt = start(plan, self.order, rhs, cx, sc, t, y, &f0, st);
            }
            return None;
        }
        let fresh = stepper.advance();
        if !finite(&self.y) || (fresh && !finite(stepper.f0())) {
            return Some(Status::NonFinite);
        }
        std::mem::swap(&mut self.ev.prev, &mut self.ev.new);
        self.ev.just = false;
        if adaptive {
            self.dt = plan
                .ctrl
                .accept(h.to_f64(), err, &mut self.err_old)
                .min(plan.dtmax);
            if !last && self.dt < plan.dtmin {
                return Some(Status::DtMin);
            }
        }
        None
    }

    /// Writes the final state into `end` (`D` values) and NaN into the save
    /// rows not reached; returns the statistics.
    #[inline]
    pub(super) fn end(self, end: &mut [T]) -> TrajectoryStats {
        for s in self.saved[self.ns * D..].iter_mut() {
            *s = T::from_f64(f64::NAN);
        }
        end.copy_from_slice(&self.y);
        let mut st = self.st;
        st.status = self.done.unwrap_or(Status::MaxIters);
        st.t = self.t.to_f64();
        st
    }
}

/// Integrates one trajectory from `(t0, y0)` to `t1` with `stepper`; writes
/// its final state into `end` (`D` values) and its save points into `saved`
/// (`K × D` values, NaN from the first one not reached).
#[allow(clippy::too_many_arguments)]
#[inline]
pub(super) fn run_one<T: Real, const D: usize, St: Stepper<T, D>, R: OdeRhs<T, D>>(
    plan: &Plan<T, D>,
    stepper: St,
    rhs: &R,
    index: usize,
    y0: &[T; D],
    p: &[T],
    t0: T,
    t1: T,
    end: &mut [T],
    saved: &mut [T],
) -> TrajectoryStats {
    let mut f = Flight::new(plan, stepper, rhs, index, y0, p, (t0, t1), saved);
    while let Some(at) = f.next() {
        let tried = f.attempt(&at);
        f.finish(at, tried);
    }
    f.end(end)
}
