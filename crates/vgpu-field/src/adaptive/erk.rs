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
use crate::adaptive::rhs::{ErkAttempt, OdeRhs, TableauId, Traj};
use crate::adaptive::tableaus::ErkTableau;
use crate::adaptive::trajectory::{StepAt, Stepper};
use crate::real::Real;

/// An embedded explicit pair validated and converted to the state type.
pub(super) struct ErkCore<T, const S: usize> {
    id: TableauId,
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
