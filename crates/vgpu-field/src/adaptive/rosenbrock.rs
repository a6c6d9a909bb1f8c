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
//! `F2` is the next step's `F0` (FSAL). [`RosenbrockStep`] is the method's
//! [`Stepper`]: step control, save times, events and statuses are the one
//! trajectory loop's, shared with the explicit pairs (the PI controller for
//! order 2).

use crate::adaptive::controller::error_norm;
use crate::adaptive::rhs::{OdeRhs, Traj};
use crate::adaptive::trajectory::{StepAt, Stepper};
use crate::real::Real;

/// The most states Rosenbrock23 takes (its `W` is a dense `D × D` matrix
/// factored every step).
pub const MAX_STIFF_STATES: usize = 16;

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

/// One trajectory's Rosenbrock23 stepper: `F0`, the Jacobian and `f_t` at
/// the step's start (kept across rejections), and the accepted step's `k1`,
/// `k2` (dense output) and `F2` (the next `F0`).
pub(super) struct RosenbrockStep<T, const D: usize> {
    f0: [T; D],
    jac: [[T; D]; D],
    ft: [T; D],
    /// The bits of the `t` the Jacobian was evaluated at.
    jac_at: Option<u64>,
    k1: [T; D],
    k2: [T; D],
    f2: [T; D],
    d: T,
    e32: T,
    dense: T,
}

impl<T: Real, const D: usize> RosenbrockStep<T, D> {
    /// A fresh stepper.
    pub(super) fn new() -> Self {
        let sqrt2 = T::from_f64(2.0).sqrt();
        let d = T::ONE / (T::from_f64(2.0) + sqrt2);
        RosenbrockStep {
            f0: [T::ZERO; D],
            jac: [[T::ZERO; D]; D],
            ft: [T::ZERO; D],
            jac_at: None,
            k1: [T::ZERO; D],
            k2: [T::ZERO; D],
            f2: [T::ZERO; D],
            d,
            e32: T::from_f64(6.0) + sqrt2,
            dense: T::ONE / (T::ONE - T::from_f64(2.0) * d),
        }
    }
}

impl<T: Real, const D: usize> Stepper<T, D> for RosenbrockStep<T, D> {
    fn start_order(&self) -> u32 {
        2
    }

    fn f0(&mut self) -> &mut [T; D] {
        &mut self.f0
    }

    fn attempt<R: OdeRhs<T, D>>(
        &mut self,
        rhs: &R,
        cx: &Traj<'_, T, D>,
        sc: &mut R::Scratch,
        at: &StepAt<'_, T, D>,
        evaluations: &mut u64,
    ) -> Option<([T; D], f64)> {
        let (t, y, h) = (at.t, at.y, at.h);
        let (two, half) = (T::from_f64(2.0), T::from_f64(0.5));
        // The Jacobian at the step's start (kept across rejections).
        if self.jac_at != Some(t.to_bits_u64()) {
            rhs.jacobian(t, y, cx, sc, &mut self.jac, &mut self.ft);
            self.jac_at = Some(t.to_bits_u64());
        }
        let hd = h * self.d;
        let w: [[T; D]; D] = std::array::from_fn(|i| {
            std::array::from_fn(|j| {
                let id = if i == j { T::ONE } else { T::ZERO };
                id - hd * self.jac[i][j]
            })
        });
        // A singular W: a smaller step moves it towards I.
        let lu = Lu::factor(w)?;
        let (f0, ft) = (&self.f0, &self.ft);
        let k1 = lu.solve(&std::array::from_fn(|i| f0[i] + hd * ft[i]));
        let u1: [T; D] = std::array::from_fn(|i| y[i] + half * h * k1[i]);
        let mut f1 = [T::ZERO; D];
        rhs.rhs(t + half * h, &u1, cx, sc, &mut f1);
        let k2 = {
            let s = lu.solve(&std::array::from_fn(|i| f1[i] - k1[i]));
            std::array::from_fn::<T, D, _>(|i| s[i] + k1[i])
        };
        let y_new: [T; D] = std::array::from_fn(|i| y[i] + h * k2[i]);
        rhs.rhs(at.t_new, &y_new, cx, sc, &mut self.f2);
        *evaluations += 2;
        let err = match at.tol {
            Some((atol, rtol)) => {
                let (e32, f2) = (self.e32, &self.f2);
                let k3 = lu.solve(&std::array::from_fn(|i| {
                    f2[i] - e32 * (k2[i] - f1[i]) - two * (k1[i] - f0[i]) + hd * ft[i]
                }));
                let e: [T; D] =
                    std::array::from_fn(|i| h / T::from_f64(6.0) * (k1[i] - two * k2[i] + k3[i]));
                error_norm(&e, y, &y_new, atol, rtol).to_f64()
            }
            None => 0.0,
        };
        self.k1 = k1;
        self.k2 = k2;
        Some((y_new, err))
    }

    fn accepted<R: OdeRhs<T, D>>(
        &mut self,
        _rhs: &R,
        _cx: &Traj<'_, T, D>,
        _sc: &mut R::Scratch,
        _t_new: T,
        _y_new: &[T; D],
        _needed: bool,
    ) -> u64 {
        // F2 = f(t_new, y_new) is part of every attempt.
        0
    }

    fn dense<R: OdeRhs<T, D>>(
        &mut self,
        _rhs: &R,
        _cx: &Traj<'_, T, D>,
        _sc: &mut R::Scratch,
        _t: T,
        _y: &[T; D],
        _h: T,
    ) -> u64 {
        // The interpolant needs only k1 and k2.
        0
    }

    #[allow(clippy::needless_range_loop)]
    fn interpolate(&self, y: &[T; D], h: T, th: T, out: &mut [T]) {
        let two = T::from_f64(2.0);
        let c1 = th * (T::ONE - th) * self.dense;
        let c2 = th * (th - two * self.d) * self.dense;
        for i in 0..D {
            out[i] = y[i] + h * (c1 * self.k1[i] + c2 * self.k2[i]);
        }
    }

    fn advance(&mut self) -> bool {
        self.f0 = self.f2;
        true
    }
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
    use crate::adaptive::status::Status;
    use crate::adaptive::{AdaptiveEnsemble, AdaptiveMethod, EnsembleProblem};

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
