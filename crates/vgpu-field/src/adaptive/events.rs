//! Events: the jump part of a hybrid flow. An event is a scalar function
//! `g(t, y, p)` of a trajectory; where `g` crosses zero in its
//! [`Crossing`] direction during an accepted step, the driver locates the
//! crossing on the step's dense output ([`locate`], the Illinois variant of
//! regula falsi), ends the step there, and either applies the event's jumps
//! (then continues from the jumped state) or stops the trajectory with
//! [`crate::adaptive::Status::Terminated`]. Only the trajectory whose `g`
//! crossed is affected.
//!
//! The right-hand side declares its events ([`EventSpec`]) and evaluates them
//! through [`crate::adaptive::OdeRhs::events`],
//! [`crate::adaptive::OdeRhs::event_values`] and
//! [`crate::adaptive::OdeRhs::apply_event`].

use crate::real::Real;
use std::fmt;

/// Which zero crossings of `g` trigger an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Crossing {
    /// `g` goes from negative to zero or positive.
    Rising,
    /// `g` goes from positive to zero or negative.
    Falling,
    /// Either.
    #[default]
    Both,
}

impl Crossing {
    /// Whether `g` going from `before` to `after` over a step is a crossing in
    /// this direction. A start exactly on zero is not a crossing (an event
    /// does not fire again where it has just fired), nor is a NaN.
    #[inline]
    pub fn fires<T: Real>(self, before: T, after: T) -> bool {
        let rising = before < T::ZERO && after >= T::ZERO;
        let falling = before > T::ZERO && after <= T::ZERO;
        match self {
            Crossing::Rising => rising,
            Crossing::Falling => falling,
            Crossing::Both => rising || falling,
        }
    }
    /// The direction's name in the `.field` language.
    pub fn name(self) -> &'static str {
        match self {
            Crossing::Rising => "rising",
            Crossing::Falling => "falling",
            Crossing::Both => "both",
        }
    }
}

impl fmt::Display for Crossing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One event of a right-hand side: its direction and whether it ends the
/// trajectory (otherwise it applies its jumps and the trajectory continues).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct EventSpec {
    /// Which crossings of `g` trigger it.
    pub direction: Crossing,
    /// Whether it stops the trajectory (after its jumps, which are then not
    /// applied: the final state is the state at the crossing).
    pub terminate: bool,
}

/// Most root-finder iterations per crossing; with the Illinois modification
/// convergence is superlinear, and bisection would need at most 64 halvings
/// of an `f64` step, so the bound is never reached for a continuous `g`.
pub const MAX_ROOT_ITERS: usize = 200;

/// Points per step at which `g` is sampled on the dense output (the step's
/// ends included: `θ = j / EVENT_POINTS`), so that a pair of crossings inside
/// one step (a ball's whole flight between two bounces, say, when the
/// integrator's steps are long) is seen by the sign change at a sample.
pub const EVENT_POINTS: usize = 10;

/// Locates a zero crossing of `g` on `θ ∈ [a, b]` of a step of length `h`,
/// given `g(a) = ga` on the side before the crossing and `g(b) = gb` on the
/// side after it, by the Illinois variant of regula falsi (a secant step
/// inside the bracket; when the same end is kept twice, the other end's value
/// is halved). Stops when the bracket is no wider than `tol_t` in time
/// (`(b − a)·|h| ≤ tol_t`) and returns the bracket's end *after* the
/// crossing, so that `g` there has already crossed (zero included): the event
/// does not fire again at the same place.
pub fn locate<T: Real>(
    mut g: impl FnMut(T) -> T,
    (mut a, ga): (T, T),
    (mut b, gb): (T, T),
    h: T,
    tol_t: T,
) -> T {
    let before = |v: T| {
        if ga > T::ZERO {
            v > T::ZERO
        } else {
            v < T::ZERO
        }
    };
    let (mut fa, mut fb) = (ga, gb);
    let half = T::from_f64(0.5);
    let mut kept = 0i8;
    for _ in 0..MAX_ROOT_ITERS {
        if (b - a) * h.abs() <= tol_t {
            break;
        }
        let mut c = (a * fb - b * fa) / (fb - fa);
        if !(c > a && c < b) {
            c = (a + b) * half;
            if !(c > a && c < b) {
                break;
            }
        }
        let fc = g(c);
        if before(fc) {
            a = c;
            fa = fc;
            if kept == 1 {
                fb *= half;
            }
            kept = 1;
        } else {
            b = c;
            fb = fc;
            if fc == T::ZERO {
                break;
            }
            if kept == -1 {
                fa *= half;
            }
            kept = -1;
        }
    }
    b
}

/// One trajectory's event state: `g` at the current step's start, end,
/// sample points and root-finder points, and whether the step starts at an
/// event. Every stepper (the explicit pairs, Rosenbrock23) scans its steps
/// with it.
pub(crate) struct EventScan<T> {
    n: usize,
    /// `g` at the step's start.
    pub(crate) prev: Vec<T>,
    /// `g` at the step's end.
    pub(crate) new: Vec<T>,
    mid: Vec<T>,
    pts: Vec<T>,
    /// The step starts where an event fired.
    pub(crate) just: bool,
}

impl<T: Real> EventScan<T> {
    pub(crate) fn new(n: usize) -> Self {
        EventScan {
            n,
            prev: vec![T::ZERO; n],
            new: vec![T::ZERO; n],
            mid: vec![T::ZERO; n],
            pts: vec![T::ZERO; n * (EVENT_POINTS + 1)],
            just: false,
        }
    }

    /// The earliest crossing `(event, θ)` of the step `(t, h)` whose
    /// `g` values at its ends are in `prev` and `new`: `g` sampled at
    /// [`EVENT_POINTS`] + 1 points of the dense output `interp(θ, y)`, then
    /// located by [`locate`]. `g(t, y, out)` evaluates every event.
    pub(crate) fn scan<const D: usize>(
        &mut self,
        specs: &[EventSpec],
        t: T,
        h: T,
        mut interp: impl FnMut(T, &mut [T; D]),
        mut g: impl FnMut(T, &[T; D], &mut [T]),
    ) -> Option<(usize, T)> {
        let n = self.n;
        let mut y = [T::ZERO; D];
        self.pts[..n].copy_from_slice(&self.prev);
        self.pts[EVENT_POINTS * n..].copy_from_slice(&self.new);
        let at = |j: usize| T::from_usize(j) / T::from_usize(EVENT_POINTS);
        for j in 1..EVENT_POINTS {
            interp(at(j), &mut y);
            g(t + at(j) * h, &y, &mut self.pts[j * n..][..n]);
        }
        let tol_t = T::from_f64(4.0) * T::EPSILON * (t.abs() + h.abs());
        let mut fired: Option<(usize, T)> = None;
        for (e, spec) in specs.iter().enumerate() {
            let pts = &self.pts;
            let Some(j) = (0..EVENT_POINTS)
                .find(|&j| spec.direction.fires(pts[j * n + e], pts[(j + 1) * n + e]))
            else {
                continue;
            };
            let (ga, gb) = (pts[j * n + e], pts[(j + 1) * n + e]);
            let mid = &mut self.mid;
            let th = locate(
                |th| {
                    interp(th, &mut y);
                    g(t + th * h, &y, mid);
                    mid[e]
                },
                (at(j), ga),
                (at(j + 1), gb),
                h,
                tol_t,
            );
            // Right after an event, a crossing within the root tolerance of
            // the step's start is that event's own surface, not a new one.
            if self.just && th * h.abs() <= tol_t {
                continue;
            }
            if fired.is_none_or(|(_, best)| th < best) {
                fired = Some((e, th));
            }
        }
        fired
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directions_fire_on_their_crossings_only() {
        assert!(Crossing::Rising.fires(-1.0, 0.0));
        assert!(Crossing::Rising.fires(-1.0, 2.0));
        assert!(!Crossing::Rising.fires(1.0, -2.0));
        assert!(!Crossing::Rising.fires(0.0, 2.0));
        assert!(Crossing::Falling.fires(1.0, -2.0));
        assert!(!Crossing::Falling.fires(-1.0, 2.0));
        assert!(Crossing::Both.fires(1.0, -2.0) && Crossing::Both.fires(-1.0, 2.0));
        assert!(!Crossing::Both.fires(f64::NAN, 2.0));
    }

    #[test]
    fn illinois_finds_roots_to_the_time_tolerance_on_the_far_side() {
        // cos(θ·h) on a step of h = 3 crosses at θ = π/6.
        let h = 3.0f64;
        let mut calls = 0;
        let th = locate(
            |th: f64| {
                calls += 1;
                (th * h).cos()
            },
            (0.0, 1.0),
            (1.0, h.cos()),
            h,
            1e-14,
        );
        let exact = std::f64::consts::FRAC_PI_2 / h;
        assert!((th - exact).abs() * h <= 1e-14, "{th} vs {exact}");
        assert!((th * h).cos() <= 0.0, "the far side of the crossing");
        assert!(calls < 20, "{calls} evaluations");
        // A rising cubic in f32.
        let th = locate(
            |x: f32| x * x * x - 0.125,
            (0.0, -0.125),
            (1.0, 0.875),
            1.0,
            1e-6,
        );
        assert!((th - 0.5).abs() <= 1e-6 && th * th * th >= 0.125);
    }
}
