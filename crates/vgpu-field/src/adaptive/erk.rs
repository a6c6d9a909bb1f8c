//! The explicit Runge–Kutta core: any [`ErkTableau`] (stages, embedded error,
//! dense output) as data ([`ErkCore`]), stepped by [`ErkStep`] through the one
//! trajectory loop of [`crate::adaptive::trajectory`].
//!
//! The arithmetic (for other implementations that must round the same way):
//! stage `i` reads `y_d + h·(a_i0·k_0d + a_i1·k_1d + …)` summed left to right
//! over `j < i` (zero coefficients included), at `t + c_i·h`; `y₁` is the
//! last stage's input for a FSAL pair, else `y_d + h·(Σ_i b_i k_id)`; the
//! error is `h·(Σ_i (b_i − b̂_i) k_id)`; the controller runs in `f64` on the
//! step as `f64`, and the next step is its value rounded to `T`.
//!
//! A right-hand side that can attempt the whole step at once
//! ([`OdeRhs::erk_attempt`]: a compiled `.field` kernel) does so with this
//! same arithmetic; the stage-by-stage loop below runs otherwise.

use crate::adaptive::controller::error_norm;
use crate::adaptive::dense::{DensePlan, StepStages, MAX_EXTRA};
use crate::adaptive::error::AdaptiveError;
use crate::adaptive::rhs::{ErkAttempt, ErkLane, OdeRhs, TableauId, Traj, ERK_LANES};
use crate::adaptive::status::TrajectoryStats;
use crate::adaptive::tableaus::ErkTableau;
use crate::adaptive::trajectory::{Flight, Pending, Plan, StepAt, Stepper};
use crate::real::Real;

/// An embedded explicit pair validated and converted to the state type.
pub(super) struct ErkCore<T, const S: usize> {
    pub(super) id: TableauId,
    a: [[T; S]; S],
    b: [T; S],
    bt: [T; S],
    c: [T; S],
    fsal: bool,
    embedded_order: u32,
    dense: DensePlan<T>,
}

impl<T: Real, const S: usize> ErkCore<T, S> {
    /// `tab` in `T`, after checking the shape of its dense output.
    ///
    /// # Errors
    /// [`AdaptiveError::Field`] with [`crate::FieldError::BadTableau`] if the
    /// dense output is malformed.
    pub(super) fn new(tab: &ErkTableau<S>) -> Result<Self, AdaptiveError> {
        let ext = tab.extended_stages();
        let bad_dense = |why: String| {
            AdaptiveError::Field(crate::FieldError::BadTableau {
                name: tab.name.to_string(),
                why,
            })
        };
        if tab.dense.extra_c.len() > MAX_EXTRA || tab.dense.extra_c.len() != tab.dense.extra_a.len()
        {
            return Err(bad_dense(format!(
                "dense output has {} extra nodes and {} extra rows (at most {MAX_EXTRA})",
                tab.dense.extra_c.len(),
                tab.dense.extra_a.len()
            )));
        }
        if tab.dense.weights.len() != ext {
            return Err(bad_dense(format!(
                "dense output has weights for {} stages, the extended tableau has {ext}",
                tab.dense.weights.len()
            )));
        }
        let first_extra = tab.f1_index() + 1;
        if let Some((e, row)) = tab
            .dense
            .extra_a
            .iter()
            .enumerate()
            .find(|(e, r)| r.len() > first_extra + e)
        {
            return Err(bad_dense(format!(
                "extra stage {e} reads {} earlier stages, only {} exist",
                row.len(),
                first_extra + e
            )));
        }
        let cv = |v: &[f64; S]| -> [T; S] { std::array::from_fn(|i| T::from_f64(v[i])) };
        Ok(ErkCore {
            id: TableauId::of(tab),
            a: std::array::from_fn(|i| cv(&tab.a[i])),
            b: cv(&tab.b),
            bt: cv(&tab.b_tilde()),
            c: cv(&tab.c),
            fsal: tab.fsal,
            embedded_order: tab.embedded_order,
            dense: DensePlan::new(tab),
        })
    }
}

/// One trajectory's explicit stepper: its stages and dense-output stages.
pub(super) struct ErkStep<'c, T, const D: usize, const S: usize> {
    core: &'c ErkCore<T, S>,
    st: StepStages<T, D, S>,
    /// `f(t₁, y₁)` was evaluated into `st.f1` for the accepted step.
    has_f1: bool,
}

impl<'c, T: Real, const D: usize, const S: usize> ErkStep<'c, T, D, S> {
    /// A fresh stepper of `core`.
    pub(super) fn new(core: &'c ErkCore<T, S>) -> Self {
        ErkStep {
            core,
            st: StepStages::new(),
            has_f1: false,
        }
    }
}

impl<T: Real, const D: usize, const S: usize> Stepper<T, D> for ErkStep<'_, T, D, S> {
    #[inline]
    fn start_order(&self) -> u32 {
        self.core.embedded_order
    }

    #[inline]
    fn f0(&mut self) -> &mut [T; D] {
        &mut self.st.k[0]
    }

    // Explicit stage indices: several arrays walked in lockstep, in the
    // documented summation order.
    #[allow(clippy::needless_range_loop)]
    #[inline]
    fn attempt<R: OdeRhs<T, D>>(
        &mut self,
        rhs: &R,
        cx: &Traj<'_, T, D>,
        sc: &mut R::Scratch,
        at: &StepAt<'_, T, D>,
        evaluations: &mut u64,
    ) -> Option<([T; D], f64)> {
        let (core, k) = (self.core, &mut self.st.k);
        let (t, y, h) = (at.t, at.y, at.h);
        if let Some((atol, rtol)) = at.tol {
            let mut y_new = [T::ZERO; D];
            let mut whole = ErkAttempt {
                tableau: core.id,
                t,
                h,
                y,
                k: &mut k[..],
                atol,
                rtol,
                y_new: &mut y_new,
            };
            if let Some(err) = rhs.erk_attempt(&mut whole, cx, sc) {
                *evaluations += S as u64 - 1;
                return Some((y_new, err.to_f64()));
            }
        }
        let mut tmp = [T::ZERO; D];
        for i in 1..S {
            for d in 0..D {
                let mut s = core.a[i][0] * k[0][d];
                for j in 1..i {
                    s += core.a[i][j] * k[j][d];
                }
                tmp[d] = y[d] + h * s;
            }
            let ti = t + core.c[i] * h;
            rhs.rhs(ti, &tmp, cx, sc, &mut k[i]);
        }
        *evaluations += S as u64 - 1;
        let y_new = if core.fsal {
            tmp
        } else {
            std::array::from_fn(|d| {
                let mut s = core.b[0] * k[0][d];
                for i in 1..S {
                    s += core.b[i] * k[i][d];
                }
                y[d] + h * s
            })
        };
        let err = match at.tol {
            Some((atol, rtol)) => {
                let e: [T; D] = std::array::from_fn(|d| {
                    let mut s = core.bt[0] * k[0][d];
                    for i in 1..S {
                        s += core.bt[i] * k[i][d];
                    }
                    h * s
                });
                error_norm(&e, y, &y_new, atol, rtol).to_f64()
            }
            None => 0.0,
        };
        Some((y_new, err))
    }

    #[inline]
    fn accepted<R: OdeRhs<T, D>>(
        &mut self,
        rhs: &R,
        cx: &Traj<'_, T, D>,
        sc: &mut R::Scratch,
        t_new: T,
        y_new: &[T; D],
        needed: bool,
    ) -> u64 {
        self.st.extras_done = false;
        self.has_f1 = !self.core.fsal && needed;
        if self.has_f1 {
            rhs.rhs(t_new, y_new, cx, sc, &mut self.st.f1);
            1
        } else {
            0
        }
    }

    #[inline]
    fn dense<R: OdeRhs<T, D>>(
        &mut self,
        rhs: &R,
        cx: &Traj<'_, T, D>,
        sc: &mut R::Scratch,
        t: T,
        y: &[T; D],
        h: T,
    ) -> u64 {
        self.st.fill_extras(&self.core.dense, rhs, cx, sc, t, y, h)
    }

    #[inline]
    fn interpolate(&self, y: &[T; D], h: T, theta: T, out: &mut [T]) {
        self.st.interpolate(&self.core.dense, y, h, theta, out);
    }

    #[inline]
    fn advance(&mut self) -> bool {
        if self.core.fsal {
            self.st.k[0] = self.st.k[S - 1];
        } else if self.has_f1 {
            self.st.k[0] = self.st.f1;
        }
        self.core.fsal || self.has_f1
    }
}

// The lanes path names each of its lanes (`run_lanes`).
const _: () = assert!(ERK_LANES == 4);

/// A lane's trajectory in flight, if any.
type Slot<'a, 'o, T, const D: usize, const S: usize, R> =
    Option<Flight<'a, 'o, T, D, ErkStep<'a, T, D, S>, R>>;

/// The lane of the trajectory in flight in `slot`, attempting `at`.
#[inline(always)]
fn lane<'s, 'a, T: Real, const D: usize, const S: usize, R: OdeRhs<T, D>>(
    slot: &'s mut Slot<'a, '_, T, D, S, R>,
    at: Pending<T>,
    (atol, rtol): (&'s [T; D], &'s [T; D]),
    y_new: &'s mut [T; D],
) -> ErkLane<'s, 'a, T, D> {
    let f = slot.as_mut().expect("every lane live");
    ErkLane {
        step: ErkAttempt {
            tableau: f.stepper.core.id,
            t: f.t,
            h: at.h,
            y: &f.y,
            k: &mut f.stepper.st.k[..],
            atol,
            rtol,
            y_new,
        },
        traj: &f.cx,
        err: T::ZERO,
    }
}

/// One trajectory of a group: its initial state, parameters and span.
pub(super) type Start<'a, T, const D: usize> = (&'a [T; D], &'a [T], (T, T));

/// Integrates the trajectories `i0 .. i0 + stats.len()` ([`Start`] of each
/// from `traj`) with the pair `core`, [`ERK_LANES`] at a time: each lane
/// holds one trajectory in flight, and a lane whose trajectory ends takes the
/// group's next one. While every lane has an attempt to make,
/// [`OdeRhs::erk_attempt_lanes`] makes them at once; otherwise (the group's
/// tail, or a right-hand side that declines) each lane's own stepper does.
/// Every trajectory takes the steps, with the arithmetic, of the one
/// trajectory loop, so the results are its bits. Writes rows of `end`
/// (`D` values each) and `saved` (`K × D`), and `stats`.
#[allow(clippy::too_many_arguments)]
pub(super) fn run_lanes<'a, T: Real, const D: usize, const S: usize, R: OdeRhs<T, D>>(
    plan: &'a Plan<T, D>,
    core: &'a ErkCore<T, S>,
    rhs: &'a R,
    traj: impl Fn(usize) -> Start<'a, T, D>,
    i0: usize,
    end: &mut [T],
    saved: &mut [T],
    stats: &mut [TrajectoryStats],
) {
    let (g, kd) = (stats.len(), plan.saveat.len() * D);
    let mut rest = saved;
    let mut next = 0;
    let mut slots: [Slot<'a, '_, T, D, S, R>; ERK_LANES] = std::array::from_fn(|_| None);
    let mut pend: [Option<Pending<T>>; ERK_LANES] = [None; ERK_LANES];
    loop {
        for (slot, pd) in slots.iter_mut().zip(pend.iter_mut()) {
            *pd = None;
            loop {
                if slot.is_none() {
                    if next == g {
                        break;
                    }
                    let (y0, p, span) = traj(i0 + next);
                    let (row, tail) = std::mem::take(&mut rest).split_at_mut(kd);
                    rest = tail;
                    let step = ErkStep::new(core);
                    *slot = Some(Flight::new(plan, step, rhs, i0 + next, y0, p, span, row));
                    next += 1;
                }
                let f = slot.as_mut().expect("a trajectory in flight");
                if let Some(at) = f.next() {
                    *pd = Some(at);
                    break;
                }
                let f = slot.take().expect("a trajectory in flight");
                let j = f.cx.index - i0;
                stats[j] = f.end(&mut end[j * D..][..D]);
            }
        }
        let live = pend.iter().flatten().count();
        if live == 0 {
            break;
        }
        let tol = slots[0].as_ref().and_then(|f| f.tol());
        if let (ERK_LANES, Some((atol, rtol))) = (live, tol) {
            let mut y_new = [[T::ZERO; D]; ERK_LANES];
            let [a0, a1, a2, a3] = pend.map(|p| p.expect("every lane live"));
            let [y0, y1, y2, y3] = y_new.each_mut();
            let [s0, s1, s2, s3] = slots.each_mut();
            let mut lanes = [
                lane(s0, a0, (atol, rtol), y0),
                lane(s1, a1, (atol, rtol), y1),
                lane(s2, a2, (atol, rtol), y2),
                lane(s3, a3, (atol, rtol), y3),
            ];
            if rhs.erk_attempt_lanes(&mut lanes) {
                let errs = lanes.map(|l| l.err);
                for (l, slot) in slots.iter_mut().enumerate() {
                    let f = slot.as_mut().expect("every lane live");
                    f.st.evaluations += S as u64 - 1;
                    let at = pend[l].expect("every lane live");
                    f.finish(at, Some((y_new[l], errs[l].to_f64())));
                }
                continue;
            }
        }
        for (slot, pd) in slots.iter_mut().zip(&pend) {
            if let (Some(f), Some(at)) = (slot.as_mut(), pd) {
                let tried = f.attempt(at);
                f.finish(*at, tried);
            }
        }
    }
}
