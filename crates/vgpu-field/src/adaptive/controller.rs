//! Step-size control: the error norm, the PI controller ([`PiController`])
//! and Hairer's starting step ([`initial_step`]).

use crate::adaptive::error::AdaptiveError;
use crate::real::Real;

/// A proportional–integral step-size controller, in OrdinaryDiffEq.jl's form
/// (Söderlind; Hairer–Wanner II §IV.2). With `E` the error norm of the step
/// (accepted when `E ≤ 1`) and `E_old` that of the previous accepted step:
///
/// * accepted: `q = clamp(E^β₁ / E_old^β₂ / safety, 1/qmax, 1/qmin)`,
///   `h_new = h / q`, then `E_old = max(E, qoldinit)`;
/// * rejected: `h_new = h / min(1/qmin, E^β₁ / safety)` (a NaN or infinite
///   `E` shrinks by `qmin`).
///
/// [`PiController::for_order`] gives OrdinaryDiffEq.jl's defaults for a method
/// of order `p`: `β₁ = 7/(10p)`, `β₂ = 2/(5p)`, `safety = 0.9`, `qmin = 0.2`
/// (shrink at most 5×), `qmax = 10` (grow at most 10×), `qoldinit = 1e-4`.
/// `β₂ = 0` gives the classic integral (I) controller `h·(safety/E)^β₁`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PiController {
    /// Exponent of the current error (proportional part).
    pub beta1: f64,
    /// Exponent of the previous error (integral part).
    pub beta2: f64,
    /// Safety factor (0.9).
    pub safety: f64,
    /// Smallest step factor (0.2).
    pub qmin: f64,
    /// Largest step factor (10).
    pub qmax: f64,
    /// `E_old` before the first accepted step, and its floor (1e-4).
    pub qoldinit: f64,
}

impl PiController {
    /// OrdinaryDiffEq.jl's default PI controller for a method of order `order`.
    pub fn for_order(order: u32) -> Self {
        let p = f64::from(order.max(1));
        PiController {
            beta1: 0.7 / p,
            beta2: 0.4 / p,
            safety: 0.9,
            qmin: 0.2,
            qmax: 10.0,
            qoldinit: 1e-4,
        }
    }

    /// Checks every setting.
    ///
    /// # Errors
    /// [`AdaptiveError::BadController`] naming the setting.
    pub fn validate(&self) -> Result<(), AdaptiveError> {
        let bad = |what, value: f64, why| AdaptiveError::BadController { what, value, why };
        if !(self.beta1.is_finite() && self.beta1 > 0.0) {
            return Err(bad("beta1", self.beta1, "positive and finite"));
        }
        if !(self.beta2.is_finite() && self.beta2 >= 0.0) {
            return Err(bad("beta2", self.beta2, "non-negative and finite"));
        }
        if !(self.safety > 0.0 && self.safety <= 1.0) {
            return Err(bad("safety", self.safety, "in (0, 1]"));
        }
        if !(self.qmin > 0.0 && self.qmin < 1.0) {
            return Err(bad("qmin", self.qmin, "in (0, 1)"));
        }
        if !(self.qmax > 1.0 && self.qmax.is_finite()) {
            return Err(bad("qmax", self.qmax, "greater than 1 and finite"));
        }
        if !(self.qoldinit > 0.0 && self.qoldinit.is_finite()) {
            return Err(bad("qoldinit", self.qoldinit, "positive and finite"));
        }
        Ok(())
    }

    /// The next step after an accepted step of size `h` with error norm `err`;
    /// updates `err_old`.
    #[inline]
    pub fn accept(&self, h: f64, err: f64, err_old: &mut f64) -> f64 {
        let q11 = err.powf(self.beta1);
        let q =
            (q11 / err_old.powf(self.beta2) / self.safety).clamp(1.0 / self.qmax, 1.0 / self.qmin);
        *err_old = err.max(self.qoldinit);
        h / q
    }

    /// The retry step after a rejected step of size `h` with error norm `err`
    /// (`err > 1`, or not finite).
    #[inline]
    pub fn reject(&self, h: f64, err: f64) -> f64 {
        if err.is_finite() {
            h / (err.powf(self.beta1) / self.safety).min(1.0 / self.qmin)
        } else {
            h * self.qmin
        }
    }
}

/// The scaled RMS norm of the error estimate: `sqrt(mean_d (err_d / sc_d)²)`
/// with `sc_d = atol_d + rtol_d·max(|y_d|, |y_new_d|)`. Zero for `D = 0`.
#[inline(always)]
pub fn error_norm<T: Real, const D: usize>(
    err: &[T; D],
    y: &[T; D],
    y_new: &[T; D],
    atol: &[T; D],
    rtol: &[T; D],
) -> T {
    if D == 0 {
        return T::ZERO;
    }
    let mut acc = T::ZERO;
    for d in 0..D {
        let (u, v) = (y[d].abs(), y_new[d].abs());
        let sc = atol[d] + rtol[d] * if u > v { u } else { v };
        let r = err[d] / sc;
        acc += r * r;
    }
    (acc / T::from_usize(D)).sqrt()
}

/// Hairer's starting step (Hairer–Nørsett–Wanner I, §II.4, "Starting step
/// size"; `hinit` of `dopri5.f`), with `sc_d = atol_d + |y0_d|·rtol_d` and RMS
/// norms: `d₀ = ‖y₀‖`, `d₁ = ‖f₀‖`, `h₀ = 0.01·d₀/d₁` (1e-6 if either is below
/// 1e-5), one explicit Euler step to `y₁ = y₀ + h₀f₀`, `d₂ = ‖f(t₀+h₀, y₁) −
/// f₀‖/h₀`, `h₁ = (0.01/max(d₁, d₂))^(1/(q+1))` (`max(1e-6, h₀·1e-3)` if
/// `max(d₁, d₂) ≤ 1e-15`), and `h = min(100·h₀, h₁)`, `q` the embedded order;
/// finally clamped to `hmax`. Costs one evaluation of `f`.
#[allow(clippy::too_many_arguments)]
pub fn initial_step<T: Real, const D: usize>(
    t0: T,
    y0: &[T; D],
    f0: &[T; D],
    atol: &[T; D],
    rtol: &[T; D],
    embedded_order: u32,
    hmax: f64,
    mut f: impl FnMut(T, &[T; D], &mut [T; D]),
) -> f64 {
    let rms = |v: &dyn Fn(usize) -> f64| -> f64 {
        if D == 0 {
            return 0.0;
        }
        let s: f64 = (0..D).map(|d| v(d) * v(d)).sum();
        (s / D as f64).sqrt()
    };
    let sc: [f64; D] =
        std::array::from_fn(|d| atol[d].to_f64() + y0[d].to_f64().abs() * rtol[d].to_f64());
    let d0 = rms(&|d| y0[d].to_f64() / sc[d]);
    let d1 = rms(&|d| f0[d].to_f64() / sc[d]);
    let mut h0 = if d0 < 1e-5 || d1 < 1e-5 {
        1e-6
    } else {
        0.01 * d0 / d1
    };
    h0 = h0.min(hmax);
    let h0t = T::from_f64(h0);
    let y1: [T; D] = std::array::from_fn(|d| y0[d] + h0t * f0[d]);
    let mut f1 = [T::ZERO; D];
    f(t0 + h0t, &y1, &mut f1);
    let d2 = rms(&|d| (f1[d].to_f64() - f0[d].to_f64()) / sc[d]) / h0;
    let dm = d1.max(d2);
    let h1 = if !dm.is_finite() {
        h0
    } else if dm <= 1e-15 {
        (h0 * 1e-3).max(1e-6)
    } else {
        (0.01 / dm).powf(1.0 / f64::from(embedded_order + 1))
    };
    (100.0 * h0).min(h1).min(hmax)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pi_controller_clamps_and_remembers() {
        let c = PiController::for_order(5);
        assert!((c.beta1 - 0.14).abs() < 1e-15);
        assert!((c.beta2 - 0.08).abs() < 1e-15);
        let mut old = c.qoldinit;
        // A zero error grows by qmax exactly.
        assert_eq!(c.accept(1.0, 0.0, &mut old), 10.0);
        assert_eq!(old, 1e-4);
        // A huge error on rejection shrinks by 1/qmin at most.
        assert_eq!(c.reject(1.0, 1e30), 0.2);
        assert_eq!(c.reject(1.0, f64::NAN), 0.2);
        // E = 1 with E_old = 1: h·safety.
        let mut old = 1.0;
        assert!((c.accept(1.0, 1.0, &mut old) - 0.9).abs() < 1e-15);
        let bad = PiController { qmin: 2.0, ..c };
        assert!(matches!(
            bad.validate(),
            Err(AdaptiveError::BadController { what: "qmin", .. })
        ));
    }

    #[test]
    fn error_norm_is_scaled_rms() {
        let n = error_norm(
            &[3e-6, 4e-6],
            &[0.0, 0.0],
            &[0.0, 0.0],
            &[1e-6; 2],
            &[1e-3; 2],
        );
        assert!((n - (12.5f64).sqrt()).abs() < 1e-12);
        // rtol scales by the larger of |y| and |y_new|.
        let m = error_norm(&[1.0f64], &[-2.0], &[1.0], &[0.0], &[0.5]);
        assert_eq!(m, 1.0);
    }

    #[test]
    fn initial_step_for_exponential_decay() {
        // y' = -y, y0 = 1, rtol = atol = 1e-6, order 4 estimate:
        // d0 = 1/(2e-6), d1 the same, h0 = 0.01, d2 ≈ 0.01/2e-6/0.01, h1 = (0.01/d1)^(1/5).
        let h = initial_step(
            0.0f64,
            &[1.0],
            &[-1.0],
            &[1e-6],
            &[1e-6],
            4,
            f64::INFINITY,
            |_t, y, dy| dy[0] = -y[0],
        );
        let d1 = 1.0 / 2e-6;
        let want = (0.01f64 / d1).powf(0.2).min(1.0);
        assert!((h - want).abs() < 1e-12 * want, "{h} vs {want}");
    }
}
