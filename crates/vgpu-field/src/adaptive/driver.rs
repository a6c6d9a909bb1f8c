//! The adaptive ensemble driver: [`AdaptiveEnsemble`] (options, validation,
//! output sizing, trajectories in parallel) over [`EnsembleProblem`]; every
//! method runs through the one trajectory loop of `adaptive/trajectory.rs`
//! (the explicit pairs as tableau data, `adaptive/erk.rs`; Rosenbrock23 as a
//! W-method stepper, [`crate::adaptive::rosenbrock`]).
//!
//! Every trajectory has its own time, step size, PI controller state and
//! status; it depends only on its own inputs, so the result is the same bits
//! for any [`Par`], and a failing trajectory never stops the others.

use crate::adaptive::controller::PiController;
use crate::adaptive::erk::{run_lanes, ErkCore, ErkStep};
use crate::adaptive::error::AdaptiveError;
use crate::adaptive::method::AdaptiveMethod;
use crate::adaptive::rhs::OdeRhs;
use crate::adaptive::rosenbrock::{RosenbrockStep, MAX_STIFF_STATES};
use crate::adaptive::status::{EnsembleSolution, TrajectoryStats};
use crate::adaptive::tableaus::{bs3, dp5, tsit5, ErkTableau};
use crate::adaptive::trajectory::{run_one, Plan};
use crate::adaptive::vern7::vern7;
use crate::blocks::run_blocks;
use crate::executor::Progress;
use crate::par::Par;
use crate::real::Real;

/// The inputs of an ensemble of `n` trajectories: initial states `(N, D)`,
/// time spans (one per trajectory, or one shared by all) and parameters
/// `(N, P)`, all trajectory-major.
#[derive(Debug, Clone, Copy)]
pub struct EnsembleProblem<'a, T> {
    /// Trajectories (N).
    pub n: usize,
    /// Initial states, `y0[i·D + d]`.
    pub y0: &'a [T],
    /// `(t0, t1)` of each trajectory, or a single span shared by all.
    pub spans: &'a [(f64, f64)],
    /// Parameters, `params[i·P + j]` (empty when `P = 0`).
    pub params: &'a [T],
    /// Parameters per trajectory (P).
    pub n_params: usize,
}

impl<'a, T> EnsembleProblem<'a, T> {
    /// `n` trajectories from `y0` (`N × D` values) over `spans` (`N` spans, or
    /// one shared), without parameters.
    pub fn new(n: usize, y0: &'a [T], spans: &'a [(f64, f64)]) -> Self {
        EnsembleProblem {
            n,
            y0,
            spans,
            params: &[],
            n_params: 0,
        }
    }
    /// With parameters: `params` holds `N × n_params` values.
    pub fn params(mut self, params: &'a [T], n_params: usize) -> Self {
        self.params = params;
        self.n_params = n_params;
        self
    }

    /// Trajectory `i`'s initial state and parameters.
    #[inline]
    pub(super) fn row<const D: usize>(&self, i: usize) -> (&'a [T; D], &'a [T]) {
        let y0: &[T; D] = self.y0[i * D..][..D].try_into().expect("D values");
        (y0, &self.params[i * self.n_params..][..self.n_params])
    }
}

/// Trajectories per group of the lanes path ([`crate::adaptive::erk`]'s
/// `run_lanes`): groups run in parallel, the lanes of a group take its
/// trajectories in turn.
const LANE_GROUP: usize = 32;

/// An adaptive ensemble integration: method, tolerances, step-size limits,
/// save times, parallelism. Build it, then [`AdaptiveEnsemble::solve`]:
///
/// ```
/// use vgpu_field::adaptive::{rhs_fn, AdaptiveEnsemble, AdaptiveMethod, EnsembleProblem, Status};
/// // y' = p·y for p = -1, -2: y(1) = exp(p).
/// let f = rhs_fn(|_t: f64, y: &[f64; 1], p: &[f64], dy: &mut [f64; 1]| dy[0] = p[0] * y[0]);
/// let y0 = [1.0, 1.0];
/// let p = [-1.0, -2.0];
/// let prob = EnsembleProblem::new(2, &y0, &[(0.0, 1.0)]).params(&p, 1);
/// let sol = AdaptiveEnsemble::new(AdaptiveMethod::Tsit5)
///     .rtol(1e-8)
///     .atol(1e-10)
///     .saveat(vec![0.5])
///     .solve(&f, &prob)?;
/// assert_eq!(sol.stats[1].status, Status::Success);
/// assert!((sol.end_of(1)[0] - (-2.0f64).exp()).abs() < 1e-7);
/// assert!((sol.saved_at(0, 0)[0] - (-0.5f64).exp()).abs() < 1e-7);
/// # Ok::<(), vgpu_field::adaptive::AdaptiveError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct AdaptiveEnsemble {
    method: AdaptiveMethod,
    rtol: Vec<f64>,
    atol: Vec<f64>,
    dt0: Option<f64>,
    dtmin: f64,
    dtmax: f64,
    maxiters: u64,
    saveat: Vec<f64>,
    controller: Option<PiController>,
    fixed_step: Option<f64>,
    par: Par,
    progress: Option<Progress>,
}

impl AdaptiveEnsemble {
    /// `method` with OrdinaryDiffEq.jl's defaults: `rtol = 1e-3`,
    /// `atol = 1e-6`, Hairer's starting step, `dtmin = 0` (only the resolution
    /// of `t` limits the step), `dtmax = ∞`, `maxiters = 100 000`, no save
    /// times, the default PI controller for the method's order, [`Par::Auto`].
    pub fn new(method: AdaptiveMethod) -> Self {
        AdaptiveEnsemble {
            method,
            rtol: vec![1e-3],
            atol: vec![1e-6],
            dt0: None,
            dtmin: 0.0,
            dtmax: f64::INFINITY,
            maxiters: 100_000,
            saveat: Vec::new(),
            controller: None,
            fixed_step: None,
            par: Par::Auto,
            progress: None,
        }
    }
    /// Counts finished trajectories into `p` (the run announces its `N` with
    /// [`Progress::add_total`] when it starts), for progress bars; read it from
    /// any thread while the run goes on.
    pub fn progress(mut self, p: Progress) -> Self {
        self.progress = Some(p);
        self
    }
    /// The method.
    pub fn method(&self) -> AdaptiveMethod {
        self.method
    }
    /// Relative tolerance, the same for every component.
    pub fn rtol(mut self, rtol: f64) -> Self {
        self.rtol = vec![rtol];
        self
    }
    /// Absolute tolerance, the same for every component.
    pub fn atol(mut self, atol: f64) -> Self {
        self.atol = vec![atol];
        self
    }
    /// Relative tolerance per component (`D` values, or one for all).
    pub fn rtol_per_component(mut self, rtol: Vec<f64>) -> Self {
        self.rtol = rtol;
        self
    }
    /// Absolute tolerance per component (`D` values, or one for all).
    pub fn atol_per_component(mut self, atol: Vec<f64>) -> Self {
        self.atol = atol;
        self
    }
    /// The first step of every trajectory (instead of Hairer's estimate).
    pub fn dt0(mut self, dt0: f64) -> Self {
        self.dt0 = Some(dt0);
        self
    }
    /// Smallest step the controller may propose; below it a trajectory stops
    /// with [`Status::DtMin`].
    pub fn dtmin(mut self, dtmin: f64) -> Self {
        self.dtmin = dtmin;
        self
    }
    /// Largest step.
    pub fn dtmax(mut self, dtmax: f64) -> Self {
        self.dtmax = dtmax;
        self
    }
    /// Most step attempts (accepted plus rejected) per trajectory; beyond it a
    /// trajectory stops with [`Status::MaxIters`].
    pub fn maxiters(mut self, maxiters: u64) -> Self {
        self.maxiters = maxiters;
        self
    }
    /// Save times (non-decreasing, inside every trajectory's span), filled from
    /// the dense output without forcing steps onto them.
    pub fn saveat(mut self, times: Vec<f64>) -> Self {
        self.saveat = times;
        self
    }
    /// A step-size controller other than the method's default.
    pub fn controller(mut self, c: PiController) -> Self {
        self.controller = Some(c);
        self
    }
    /// No adaptivity: steps of exactly `dt` (the last one shortened to end on
    /// `t1`), every step accepted, no error estimate. For order studies and
    /// comparisons with fixed-step integrators.
    pub fn fixed_step(mut self, dt: f64) -> Self {
        self.fixed_step = Some(dt);
        self
    }
    /// Parallelism over trajectories.
    pub fn par(mut self, par: Par) -> Self {
        self.par = par;
        self
    }
    /// The parallelism over trajectories.
    pub fn parallelism(&self) -> Par {
        self.par
    }
    /// The save times.
    pub fn save_times(&self) -> &[f64] {
        &self.saveat
    }

    /// Integrates every trajectory of `prob` with the built-in method.
    ///
    /// # Errors
    /// Bad options or shapes (see [`AdaptiveError`]), found before anything
    /// runs. Failures of single trajectories are their [`Status`].
    pub fn solve<T: Real, const D: usize, R: OdeRhs<T, D>>(
        &self,
        rhs: &R,
        prob: &EnsembleProblem<'_, T>,
    ) -> Result<EnsembleSolution<T>, AdaptiveError> {
        match self.method {
            AdaptiveMethod::Tsit5 => self.solve_tableau(&tsit5(), rhs, prob),
            AdaptiveMethod::Dp5 => self.solve_tableau(&dp5(), rhs, prob),
            AdaptiveMethod::Bs3 => self.solve_tableau(&bs3(), rhs, prob),
            AdaptiveMethod::Vern7 => self.solve_tableau(&vern7(), rhs, prob),
            AdaptiveMethod::Rosenbrock23 => solve_rosenbrock(self, rhs, prob),
        }
    }

    /// Integrates every trajectory of `prob` with any embedded pair given as
    /// data (the controller's default follows `tab.order`; the method set by
    /// [`AdaptiveEnsemble::new`] is ignored).
    ///
    /// # Errors
    /// As [`AdaptiveEnsemble::solve`], and [`AdaptiveError::Field`] with
    /// [`crate::FieldError::BadTableau`] if the tableau's dense output is malformed.
    pub fn solve_tableau<T: Real, const D: usize, const S: usize, R: OdeRhs<T, D>>(
        &self,
        tab: &ErkTableau<S>,
        rhs: &R,
        prob: &EnsembleProblem<'_, T>,
    ) -> Result<EnsembleSolution<T>, AdaptiveError> {
        let plan = self.plan::<T, D>(tab.order, prob)?;
        let core = ErkCore::<T, S>::new(tab)?;
        rhs.check(prob.n, prob.n_params)?;
        if plan.fixed.is_none() && rhs.erk_lanes(core.id) {
            let traj = |i: usize| {
                let (y0, p) = prob.row::<D>(i);
                (y0, p, plan.span(i))
            };
            return self.run_groups::<T, D>(prob, plan.saveat.len(), LANE_GROUP, |i0, e, s, st| {
                run_lanes(&plan, &core, rhs, traj, i0, e, s, st)
            });
        }
        self.run_all(prob, plan.saveat.len(), |i, y0, p, e, s| {
            let (t0, t1) = plan.span(i);
            let stepper = ErkStep::<T, D, S>::new(&core);
            run_one(&plan, stepper, rhs, i, y0, p, t0, t1, e, s)
        })
    }

    /// Allocates the outputs of `prob` with `k` save times and integrates
    /// every trajectory `i` by `one(i, y0, p, end, saved)`, in parallel as
    /// [`AdaptiveEnsemble::par`] says.
    pub(super) fn run_all<T: Real, const D: usize>(
        &self,
        prob: &EnsembleProblem<'_, T>,
        k: usize,
        one: impl Fn(usize, &[T; D], &[T], &mut [T], &mut [T]) -> TrajectoryStats + Sync,
    ) -> Result<EnsembleSolution<T>, AdaptiveError> {
        self.run_groups::<T, D>(prob, k, 1, |i, e, s, st| {
            let (y0, p) = prob.row::<D>(i);
            st[0] = one(i, y0, p, e, s);
        })
    }

    /// Allocates the outputs of `prob` with `k` save times and integrates
    /// the trajectories in groups of `group` (the last may be shorter) by
    /// `many(i0, end, saved, stats)`, the group's rows of each output, in
    /// parallel as [`AdaptiveEnsemble::par`] says.
    pub(super) fn run_groups<T: Real, const D: usize>(
        &self,
        prob: &EnsembleProblem<'_, T>,
        k: usize,
        group: usize,
        many: impl Fn(usize, &mut [T], &mut [T], &mut [TrajectoryStats]) + Sync,
    ) -> Result<EnsembleSolution<T>, AdaptiveError> {
        let n = prob.n;
        let mut end = alloc::<T>(n.checked_mul(D), "endpoints", || {
            format!("(N, D) = ({n}, {D})")
        })?;
        let mut saved = alloc::<T>(
            n.checked_mul(k).and_then(|x| x.checked_mul(D)),
            "saved",
            || format!("(N, K, D) = ({n}, {k}, {D})"),
        )?;
        let mut stats = Vec::new();
        stats
            .try_reserve_exact(n)
            .map_err(|_| AdaptiveError::TooLarge {
                what: "stats",
                shape: format!("(N,) = ({n},)"),
            })?;
        stats.resize(n, TrajectoryStats::default());
        let progress = self.progress.as_ref();
        if let Some(p) = progress {
            p.add_total(n as u64);
        }
        // Each group's rows of the three outputs, scheduled as the blocks of
        // the one block scheduler (a group per block).
        let (ge, gs) = (group * D, group * k * D);
        let mut saved_rows = saved.chunks_mut(gs.max(1));
        let mut groups: Vec<_> = end
            .chunks_mut(ge)
            .zip(stats.chunks_mut(group))
            .map(|(e, st)| (e, saved_rows.next().unwrap_or_default(), st))
            .collect();
        run_blocks(
            self.par,
            &mut groups,
            1,
            || (),
            |_, g, piece| {
                let (e, s, st) = &mut piece[0];
                many(g * group, e, s, st);
                if let Some(p) = progress {
                    p.advance(st.len() as u64);
                }
            },
        )?;
        Ok(EnsembleSolution {
            n,
            dim: D,
            saveat: self.saveat.clone(),
            end,
            saved,
            stats,
        })
    }

    /// Validates the options and shapes for a method of order `order` (the
    /// default controller's) and converts them to the state type.
    pub(super) fn plan<T: Real, const D: usize>(
        &self,
        order: u32,
        prob: &EnsembleProblem<'_, T>,
    ) -> Result<Plan<T, D>, AdaptiveError> {
        let n = prob.n;
        let shape = |what, got: usize, want: Option<usize>, spelled: String| match want {
            Some(w) if w == got => Ok(()),
            _ => Err(AdaptiveError::ShapeMismatch {
                what,
                got,
                expected: spelled,
            }),
        };
        shape(
            "y0",
            prob.y0.len(),
            n.checked_mul(D),
            format!("(N, D) = ({n}, {D}) → {} values", n.saturating_mul(D)),
        )?;
        let p = prob.n_params;
        shape(
            "params",
            prob.params.len(),
            n.checked_mul(p),
            format!("(N, P) = ({n}, {p}) → {} values", n.saturating_mul(p)),
        )?;
        self.plan_spans::<T, D>(order, n, prob.spans)
    }

    /// Validates the options for `n` trajectories over `spans` (what
    /// [`AdaptiveEnsemble::plan`] checks beyond the shapes of `y0` and `params`)
    /// and converts them to the state type.
    fn plan_spans<T: Real, const D: usize>(
        &self,
        order: u32,
        n: usize,
        prob_spans: &[(f64, f64)],
    ) -> Result<Plan<T, D>, AdaptiveError> {
        if n == 0 {
            return Err(AdaptiveError::EmptyEnsemble);
        }
        if D == 0 {
            return Err(AdaptiveError::ShapeMismatch {
                what: "state",
                got: 0,
                expected: "at least one component (D ≥ 1)".into(),
            });
        }
        if prob_spans.len() != 1 && prob_spans.len() != n {
            return Err(AdaptiveError::ShapeMismatch {
                what: "spans",
                got: prob_spans.len(),
                expected: format!("N = {n} spans, or 1 shared by all"),
            });
        }
        let tol = |what: &'static str, v: &[f64]| -> Result<[T; D], AdaptiveError> {
            if v.len() != 1 && v.len() != D {
                return Err(AdaptiveError::ShapeMismatch {
                    what,
                    got: v.len(),
                    expected: format!("1 or D = {D} values"),
                });
            }
            for (component, &value) in v.iter().enumerate() {
                let t = T::from_f64(value);
                if !(value.is_finite() && value > 0.0 && t > T::ZERO && t.is_finite()) {
                    return Err(AdaptiveError::BadTolerance {
                        option: what,
                        component,
                        value,
                    });
                }
            }
            Ok(std::array::from_fn(|d| {
                T::from_f64(v[if v.len() == 1 { 0 } else { d }])
            }))
        };
        let rtol = tol("rtol", &self.rtol)?;
        let atol = tol("atol", &self.atol)?;
        let step = |option, value: f64, why: &str| AdaptiveError::BadStepOption {
            option,
            value,
            why: why.to_string(),
        };
        if let Some(dt0) = self.dt0 {
            if !(dt0.is_finite() && dt0 > 0.0 && T::from_f64(dt0) > T::ZERO) {
                return Err(step(
                    "dt0",
                    dt0,
                    "must be positive and finite in the state type",
                ));
            }
        }
        if let Some(h) = self.fixed_step {
            if !(h.is_finite() && h > 0.0 && T::from_f64(h) > T::ZERO) {
                return Err(step(
                    "fixed_step",
                    h,
                    "must be positive and finite in the state type",
                ));
            }
        }
        if !(self.dtmin.is_finite() && self.dtmin >= 0.0) {
            return Err(step("dtmin", self.dtmin, "must be non-negative and finite"));
        }
        if self.dtmax.is_nan() || self.dtmax <= 0.0 {
            return Err(step("dtmax", self.dtmax, "must be positive"));
        }
        if self.dtmin > self.dtmax {
            return Err(step(
                "dtmin",
                self.dtmin,
                &format!("exceeds dtmax = {}", self.dtmax),
            ));
        }
        if self.maxiters == 0 {
            return Err(AdaptiveError::ZeroMaxIters);
        }
        let ctrl = self.controller.unwrap_or(PiController::for_order(order));
        ctrl.validate()?;
        let mut spans = Vec::with_capacity(prob_spans.len());
        for (i, &(t0, t1)) in prob_spans.iter().enumerate() {
            let bad = |why| AdaptiveError::BadSpan {
                trajectory: i,
                t0,
                t1,
                why,
            };
            let (a, b) = (T::from_f64(t0), T::from_f64(t1));
            if !(t0.is_finite() && t1.is_finite() && a.is_finite() && b.is_finite()) {
                return Err(bad("is not finite in the state type"));
            }
            if t1 < t0 || b < a {
                return Err(bad(
                    "runs backwards (t1 < t0); only forward integration is supported",
                ));
            }
            spans.push((a, b));
        }
        let mut saveat = Vec::with_capacity(self.saveat.len());
        for (index, &t) in self.saveat.iter().enumerate() {
            let bad = |why: String| AdaptiveError::BadSaveat { index, t, why };
            if !t.is_finite() {
                return Err(bad("not finite".into()));
            }
            if index > 0 && t < self.saveat[index - 1] {
                return Err(bad(format!(
                    "save times must be non-decreasing (saveat[{}] = {})",
                    index - 1,
                    self.saveat[index - 1]
                )));
            }
            if let Some((i, &(t0, t1))) = prob_spans
                .iter()
                .enumerate()
                .find(|(_, &(t0, t1))| t < t0 || t > t1)
            {
                return Err(bad(format!(
                    "outside the span ({t0}, {t1}) of trajectory {i}"
                )));
            }
            saveat.push(T::from_f64(t));
        }
        Ok(Plan {
            atol,
            rtol,
            ctrl,
            fixed: self.fixed_step,
            dt0: self.dt0,
            dtmin: self.dtmin,
            dtmax: self.dtmax,
            maxiters: self.maxiters,
            saveat,
            spans,
        })
    }
}

/// The options of an [`AdaptiveEnsemble`] validated for `n` trajectories of
/// `D` components in the state type `T`, as plain values: what another
/// implementation of this driver (the GPU's WGSL kernel) runs with, so that
/// both refuse the same options with the same errors.
#[derive(Debug, Clone, PartialEq)]
pub struct DriverSettings {
    /// Relative tolerance per component (`D` values, rounded to `T`).
    pub rtol: Vec<f64>,
    /// Absolute tolerance per component (`D` values, rounded to `T`).
    pub atol: Vec<f64>,
    /// The first step, or `None` for Hairer's estimate.
    pub dt0: Option<f64>,
    /// Smallest step.
    pub dtmin: f64,
    /// Largest step.
    pub dtmax: f64,
    /// Most step attempts per trajectory.
    pub maxiters: u64,
    /// The step-size controller (the method's default unless one was set).
    pub controller: PiController,
    /// Steps of exactly this size, no error control.
    pub fixed_step: Option<f64>,
    /// Save times.
    pub saveat: Vec<f64>,
}

impl AdaptiveEnsemble {
    /// Validates the options for `n` trajectories over `spans` (`n` spans, or
    /// one shared) with states of `D` components in `T`, as
    /// [`AdaptiveEnsemble::solve`] does before it runs, and returns them.
    ///
    /// # Errors
    /// As [`AdaptiveEnsemble::solve`]'s option and span errors.
    pub fn settings<T: Real, const D: usize>(
        &self,
        n: usize,
        spans: &[(f64, f64)],
    ) -> Result<DriverSettings, AdaptiveError> {
        fn of<T: Real, const D: usize>(p: Plan<T, D>) -> DriverSettings {
            DriverSettings {
                rtol: p.rtol.iter().map(|v| v.to_f64()).collect(),
                atol: p.atol.iter().map(|v| v.to_f64()).collect(),
                dt0: p.dt0,
                dtmin: p.dtmin,
                dtmax: p.dtmax,
                maxiters: p.maxiters,
                controller: p.ctrl,
                fixed_step: p.fixed,
                saveat: p.saveat.iter().map(|v| v.to_f64()).collect(),
            }
        }
        Ok(of(self.plan_spans::<T, D>(
            self.method.order(),
            n,
            spans,
        )?))
    }
}

/// A zeroed buffer of `len` values, or [`AdaptiveError::TooLarge`] if `len`
/// overflowed or cannot be allocated.
fn alloc<T: Real>(
    len: Option<usize>,
    what: &'static str,
    shape: impl Fn() -> String,
) -> Result<Vec<T>, AdaptiveError> {
    let too_large = || AdaptiveError::TooLarge {
        what,
        shape: shape(),
    };
    let len = len.ok_or_else(too_large)?;
    let mut v = Vec::new();
    v.try_reserve_exact(len).map_err(|_| too_large())?;
    v.resize(len, T::ZERO);
    Ok(v)
}

/// Integrates every trajectory of `prob` with Rosenbrock23.
fn solve_rosenbrock<T: Real, const D: usize, R: OdeRhs<T, D>>(
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
    let plan = opts.plan::<T, D>(2, prob)?;
    rhs.check(prob.n, prob.n_params)?;
    opts.run_all(prob, plan.saveat.len(), |i, y0, p, e, s| {
        let (t0, t1) = plan.span(i);
        let stepper = RosenbrockStep::new();
        run_one(&plan, stepper, rhs, i, y0, p, t0, t1, e, s)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_counts_every_trajectory_once() {
        use crate::adaptive::{rhs_fn, EnsembleProblem};
        let f = rhs_fn(|_t: f64, y: &[f64; 1], p: &[f64], dy: &mut [f64; 1]| dy[0] = p[0] * y[0]);
        let n = 1000;
        let y0 = vec![1.0; n];
        let p: Vec<f64> = (0..n).map(|i| -(i as f64) / 100.0).collect();
        let prob = EnsembleProblem::new(n, &y0, &[(0.0, 1.0)]).params(&p, 1);
        for par in [Par::Seq, Par::Auto] {
            let progress = Progress::new();
            let sol = AdaptiveEnsemble::new(AdaptiveMethod::Tsit5)
                .par(par)
                .progress(progress.clone())
                .solve(&f, &prob)
                .unwrap();
            assert_eq!(sol.n, n);
            assert_eq!((progress.done(), progress.total()), (n as u64, n as u64));
        }
    }

    #[test]
    fn oversized_outputs_are_typed_errors() {
        let shape = || "(N, K, D) = (huge)".to_string();
        // The element count overflowed usize.
        let e = alloc::<f64>(None, "saved", shape).unwrap_err();
        assert!(
            matches!(e, AdaptiveError::TooLarge { what: "saved", .. }),
            "{e}"
        );
        // The element count fits, its size in bytes does not.
        let e = alloc::<f64>(Some(usize::MAX / 4), "saved", shape).unwrap_err();
        assert!(e.to_string().contains("too large"), "{e}");
        assert_eq!(alloc::<f32>(Some(3), "end", shape).unwrap(), vec![0.0; 3]);
    }
}
