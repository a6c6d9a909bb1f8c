//! Dense output at run time: a [`crate::adaptive::DenseTableau`] converted to
//! the state type, its lazily evaluated extra stages, and the interpolation
//! `y(t₀ + θh) = y₀ + h·Σ_i w_i(θ) k_i` over the extended stages.

use crate::adaptive::rhs::{OdeRhs, Traj};
use crate::adaptive::tableaus::ErkTableau;
use crate::real::Real;

/// Most extra interpolation stages a tableau may have (Vern7 has 5).
pub(crate) const MAX_EXTRA: usize = 8;

/// A dense output ready to run: non-zero coefficients only, in `T`.
#[derive(Debug, Clone)]
pub(crate) struct DensePlan<T> {
    /// Number of the method's own stages.
    stages: usize,
    /// Index of `f(t₁, y₁)` among the extended stages.
    f1: usize,
    /// Nodes of the extra stages.
    extra_c: Vec<T>,
    /// Non-zero `(j, a_ej)` of each extra stage.
    extra_a: Vec<Vec<(usize, T)>>,
    /// Non-zero stages and their polynomial coefficients (of θ¹, θ², …).
    weights: Vec<(usize, Vec<T>)>,
}

impl<T: Real> DensePlan<T> {
    pub(crate) fn new<const S: usize>(tab: &ErkTableau<S>) -> Self {
        let nz = |row: &[f64]| {
            row.iter()
                .enumerate()
                .filter(|(_, v)| **v != 0.0)
                .map(|(j, v)| (j, T::from_f64(*v)))
                .collect::<Vec<_>>()
        };
        DensePlan {
            stages: S,
            f1: tab.f1_index(),
            extra_c: tab.dense.extra_c.iter().map(|c| T::from_f64(*c)).collect(),
            extra_a: tab.dense.extra_a.iter().map(|r| nz(r)).collect(),
            weights: tab
                .dense
                .weights
                .iter()
                .enumerate()
                .filter(|(_, w)| w.iter().any(|v| *v != 0.0))
                .map(|(i, w)| (i, w.iter().map(|v| T::from_f64(*v)).collect()))
                .collect(),
        }
    }

    /// Number of extra stages.
    pub(crate) fn extras(&self) -> usize {
        self.extra_c.len()
    }
}

/// The stages of one step that dense output reads, owned by the explicit
/// stepper of one trajectory (see [`crate::adaptive::erk`]).
pub(crate) struct StepStages<T, const D: usize, const S: usize> {
    /// The method's stages.
    pub(crate) k: [[T; D]; S],
    /// `f(t₁, y₁)` for a method that is not FSAL (unused otherwise).
    pub(crate) f1: [T; D],
    /// The extra stages (filled by [`StepStages::fill_extras`]).
    pub(crate) extra: [[T; D]; MAX_EXTRA],
    /// Whether the extra stages of this step have been evaluated.
    pub(crate) extras_done: bool,
}

impl<T: Real, const D: usize, const S: usize> StepStages<T, D, S> {
    /// Zeroed stages.
    pub(crate) fn new() -> Self {
        StepStages {
            k: [[T::ZERO; D]; S],
            f1: [T::ZERO; D],
            extra: [[T::ZERO; D]; MAX_EXTRA],
            extras_done: false,
        }
    }

    #[inline]
    fn ext<'s>(
        k: &'s [[T; D]; S],
        f1: &'s [T; D],
        extra: &'s [[T; D]],
        plan: &DensePlan<T>,
        i: usize,
    ) -> &'s [T; D] {
        if i < plan.stages {
            &k[i]
        } else if i == plan.f1 {
            f1
        } else {
            &extra[i - plan.f1 - 1]
        }
    }

    /// Evaluates the extra stages of the step `(t, y, h)` once; returns how
    /// many evaluations that cost.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn fill_extras<R: OdeRhs<T, D>>(
        &mut self,
        plan: &DensePlan<T>,
        rhs: &R,
        cx: &Traj<'_, T, D>,
        sc: &mut R::Scratch,
        t: T,
        y: &[T; D],
        h: T,
    ) -> u64 {
        if self.extras_done || plan.extras() == 0 {
            self.extras_done = true;
            return 0;
        }
        for e in 0..plan.extras() {
            let mut tmp = [T::ZERO; D];
            {
                let (done, _) = self.extra.split_at(e);
                for (d, td) in tmp.iter_mut().enumerate() {
                    let mut s = T::ZERO;
                    for &(j, a) in &plan.extra_a[e] {
                        s += a * Self::ext(&self.k, &self.f1, done, plan, j)[d];
                    }
                    *td = y[d] + h * s;
                }
            }
            rhs.rhs(t + plan.extra_c[e] * h, &tmp, cx, sc, &mut self.extra[e]);
        }
        self.extras_done = true;
        plan.extras() as u64
    }

    /// `y(t + θh)` into `out` (the extra stages must have been filled).
    pub(crate) fn interpolate(
        &self,
        plan: &DensePlan<T>,
        y: &[T; D],
        h: T,
        theta: T,
        out: &mut [T],
    ) {
        let mut acc = [T::ZERO; D];
        for (i, w) in &plan.weights {
            let wi = w.iter().rev().fold(T::ZERO, |s, &r| (s + r) * theta);
            let ki = Self::ext(&self.k, &self.f1, &self.extra[..], plan, *i);
            for d in 0..D {
                acc[d] += wi * ki[d];
            }
        }
        for d in 0..D {
            out[d] = y[d] + h * acc[d];
        }
    }
}
