//! [`Stepper`]: one explicit Runge–Kutta step over a flat state, with its stage
//! buffers allocated once.
//!
//! The state is a flat slice (a block's trajectories in structure-of-arrays
//! layout, possibly followed by a shared sub-field). Every stage combination is
//! a loop over that slice with a fixed number of terms, which the compiler
//! vectorises. Nothing is allocated per step.
//!
//! **The exact arithmetic** (for other executors that must round the same way,
//! such as generated WGSL): with `w_j = fl(dt · a_ij)` (stage inputs) or
//! `w_j = fl(dt · b_j)` (the update), each rounded once, every combination is
//! `y + (w_0·k_0 + w_1·k_1 + …)` over the non-zero coefficients in index order,
//! summed left to right, no fused operations. Stage `i` is evaluated at
//! `t + fl(c_i · dt)`, and step `n` starts at `t_n = fl(n) · dt + t0`.

use crate::real::Real;
use crate::tableau::Tableau;

/// Stage buffers and coefficients of one tableau for states of one length.
#[derive(Debug, Clone)]
pub struct Stepper<T> {
    stages: usize,
    /// Non-zero `a_ij` of each stage, as `(j, a_ij)`.
    a: Vec<Vec<(usize, T)>>,
    /// Non-zero weights `(i, b_i)`.
    b: Vec<(usize, T)>,
    c: Vec<T>,
    euler: bool,
    len: usize,
    /// `stages × len` stage derivatives.
    k: Vec<T>,
    /// The stage state `y + dt·Σ a_ij k_j`.
    tmp: Vec<T>,
}

impl<T: Real> Stepper<T> {
    /// A stepper for `tableau` and states of `len` values.
    pub fn new(tableau: &Tableau, len: usize) -> Self {
        let stages = tableau.stages();
        let nonzero = |row: &[f64]| {
            row.iter()
                .enumerate()
                .filter(|(_, v)| **v != 0.0)
                .map(|(j, v)| (j, T::from_f64(*v)))
                .collect::<Vec<_>>()
        };
        Stepper {
            stages,
            a: (0..stages).map(|i| nonzero(tableau.a(i))).collect(),
            b: nonzero(tableau.b()),
            c: tableau.c().iter().map(|v| T::from_f64(*v)).collect(),
            euler: tableau.is_euler(),
            len,
            k: vec![T::ZERO; stages * len],
            tmp: vec![T::ZERO; len],
        }
    }

    /// The state length this stepper was sized for.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the state length is zero.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether the tableau is explicit Euler.
    pub fn is_euler(&self) -> bool {
        self.euler
    }

    /// Field evaluations per step.
    pub fn stages(&self) -> usize {
        self.stages
    }

    /// One step from `t` to `t + dt`: `f(t, y, dy)` writes the field at `(t, y)`
    /// into `dy`. `y.len()` must equal [`Stepper::len`].
    #[inline]
    pub fn step<F: FnMut(T, &[T], &mut [T])>(&mut self, t: T, dt: T, y: &mut [T], mut f: F) {
        let n = self.len;
        assert_eq!(y.len(), n, "Stepper::step: state length");
        for i in 0..self.stages {
            let (done, rest) = self.k.split_at_mut(i * n);
            let ki = &mut rest[..n];
            let ti = t + self.c[i] * dt;
            if self.a[i].is_empty() {
                f(ti, y, ki);
            } else {
                combine(&mut self.tmp, y, dt, &self.a[i], done, n);
                f(ti, &self.tmp, ki);
            }
        }
        combine_in_place(y, dt, &self.b, &self.k, n);
    }

    /// Stage `i` of a step taken one stage at a time, for a state split over
    /// several vectors (several precisions) that one tableau advances together:
    /// returns the stage input `y + Σ_j (dt·a_ij)·k_j` (`y` itself for a stage
    /// with no terms) and the buffer for `k_i`, to be filled before stage `i+1`.
    /// Take stages `0..stages()` in order, then [`Stepper::finish`]; the
    /// arithmetic is that of [`Stepper::step`].
    #[inline]
    pub fn stage<'s>(&'s mut self, i: usize, dt: T, y: &'s [T]) -> (&'s [T], &'s mut [T]) {
        let n = self.len;
        assert_eq!(y.len(), n, "Stepper::stage: state length");
        let (done, rest) = self.k.split_at_mut(i * n);
        if self.a[i].is_empty() {
            (y, &mut rest[..n])
        } else {
            combine(&mut self.tmp, y, dt, &self.a[i], done, n);
            (&self.tmp, &mut rest[..n])
        }
    }

    /// The time of stage `i` of the step from `t`: `t + c_i·dt`.
    #[inline]
    pub fn stage_time(&self, i: usize, t: T, dt: T) -> T {
        t + self.c[i] * dt
    }

    /// Ends a step taken with [`Stepper::stage`]: `y ← y + Σ_i (dt·b_i)·k_i`.
    #[inline]
    pub fn finish(&mut self, dt: T, y: &mut [T]) {
        assert_eq!(y.len(), self.len, "Stepper::finish: state length");
        combine_in_place(y, dt, &self.b, &self.k, self.len);
    }

    /// One explicit Euler step for a field given as a product `u ⊙ v`:
    /// `y ← fma(dt·u, v, y)`, one rounding per component. With `dt = 1` (or any
    /// power of two) `dt·u` is exact, so the step adds the unrounded product, as
    /// CUDA's contracted `acc += a*b` does. Only valid when [`Stepper::is_euler`].
    #[inline]
    pub fn step_factored<F: FnMut(T, &[T], &mut [T], &mut [T])>(
        &mut self,
        t: T,
        dt: T,
        y: &mut [T],
        mut f: F,
    ) {
        let n = self.len;
        assert!(self.euler, "Stepper::step_factored needs the Euler tableau");
        assert_eq!(y.len(), n, "Stepper::step_factored: state length");
        let u = &mut self.k[..n];
        let v = &mut self.tmp[..n];
        f(t, y, u, v);
        for ((yl, ul), vl) in y.iter_mut().zip(u.iter()).zip(v.iter()) {
            *yl = (dt * *ul).mul_add(*vl, *yl);
        }
    }
}

macro_rules! combine_body {
    ($o:ident <- $out:ident, $y:ident, $dt:ident, $terms:ident, $k:ident, $n:ident) => {{
        let $o = &mut $out[..$n];
        let kk = |j: usize| &$k[j * $n..][..$n];
        match $terms.len() {
            0 => {
                for l in 0..$n {
                    $o[l] = $y[l];
                }
            }
            1 => {
                let (c0, k0) = ($dt * $terms[0].1, kk($terms[0].0));
                for l in 0..$n {
                    $o[l] = $y[l] + c0 * k0[l];
                }
            }
            2 => {
                let (c0, k0) = ($dt * $terms[0].1, kk($terms[0].0));
                let (c1, k1) = ($dt * $terms[1].1, kk($terms[1].0));
                for l in 0..$n {
                    $o[l] = $y[l] + (c0 * k0[l] + c1 * k1[l]);
                }
            }
            3 => {
                let (c0, k0) = ($dt * $terms[0].1, kk($terms[0].0));
                let (c1, k1) = ($dt * $terms[1].1, kk($terms[1].0));
                let (c2, k2) = ($dt * $terms[2].1, kk($terms[2].0));
                for l in 0..$n {
                    $o[l] = $y[l] + (c0 * k0[l] + c1 * k1[l] + c2 * k2[l]);
                }
            }
            4 => {
                let (c0, k0) = ($dt * $terms[0].1, kk($terms[0].0));
                let (c1, k1) = ($dt * $terms[1].1, kk($terms[1].0));
                let (c2, k2) = ($dt * $terms[2].1, kk($terms[2].0));
                let (c3, k3) = ($dt * $terms[3].1, kk($terms[3].0));
                for l in 0..$n {
                    $o[l] = $y[l] + (c0 * k0[l] + c1 * k1[l] + c2 * k2[l] + c3 * k3[l]);
                }
            }
            _ => {
                // More than four terms (methods with many stages): one pass per term,
                // summing in the same left-to-right order as the unrolled cases.
                for l in 0..$n {
                    let mut s = T::ZERO;
                    for &(j, c) in $terms {
                        s += ($dt * c) * $k[j * $n + l];
                    }
                    $o[l] = $y[l] + s;
                }
            }
        }
    }};
}

/// `out = y + Σ (dt·c_j)·k_j` over `n` values (`dt·c_j` rounded once, outside the loop).
#[inline]
fn combine<T: Real>(out: &mut [T], y: &[T], dt: T, terms: &[(usize, T)], k: &[T], n: usize) {
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx") {
        // SAFETY: the CPU has AVX (checked just above).
        return unsafe { combine_avx(out, y, dt, terms, k, n) };
    }
    combine_plain(out, y, dt, terms, k, n)
}

/// `y = y + Σ (dt·c_j)·k_j` over `n` values, in place.
#[inline]
fn combine_in_place<T: Real>(y: &mut [T], dt: T, terms: &[(usize, T)], k: &[T], n: usize) {
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx") {
        // SAFETY: the CPU has AVX (checked just above).
        return unsafe { combine_in_place_avx(y, dt, terms, k, n) };
    }
    combine_in_place_plain(y, dt, terms, k, n)
}

/// [`combine`] for any x86-64 CPU.
#[inline(always)]
fn combine_plain<T: Real>(out: &mut [T], y: &[T], dt: T, terms: &[(usize, T)], k: &[T], n: usize) {
    let y = &y[..n];
    combine_body!(o <- out, y, dt, terms, k, n)
}

/// [`combine_in_place`] for any x86-64 CPU (the shared body writes
/// `y[l] = y[l] + …`, and with no terms `y[l] = y[l]`).
#[inline(always)]
#[allow(clippy::self_assignment, clippy::assign_op_pattern)]
fn combine_in_place_plain<T: Real>(y: &mut [T], dt: T, terms: &[(usize, T)], k: &[T], n: usize) {
    combine_body!(y <- y, y, dt, terms, k, n)
}

/// [`combine`] compiled for AVX: twice the lanes per instruction. Only
/// separate multiplies and adds (never contracted), so the same bits.
///
/// # Safety
/// The CPU must have AVX.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx")]
unsafe fn combine_avx<T: Real>(
    out: &mut [T],
    y: &[T],
    dt: T,
    terms: &[(usize, T)],
    k: &[T],
    n: usize,
) {
    combine_plain(out, y, dt, terms, k, n)
}

/// [`combine_in_place`] compiled for AVX (see [`combine_avx`]).
///
/// # Safety
/// The CPU must have AVX.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx")]
unsafe fn combine_in_place_avx<T: Real>(
    y: &mut [T],
    dt: T,
    terms: &[(usize, T)],
    k: &[T],
    n: usize,
) {
    combine_in_place_plain(y, dt, terms, k, n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tableau::Method;

    /// The dispatched (AVX where the CPU has it) and the plain combinations of
    /// `y` and `k` by `terms` give the same bits.
    fn assert_paths_agree<T: Real>(y: &[T], k: &[T], terms: &[(usize, T)]) {
        let (n, dt) = (y.len(), T::from_f64(0.01));
        let (mut a, mut b) = (vec![T::ZERO; n], vec![T::ZERO; n]);
        combine(&mut a, y, dt, terms, k, n);
        combine_plain(&mut b, y, dt, terms, k, n);
        let (mut c, mut d) = (y.to_vec(), y.to_vec());
        combine_in_place(&mut c, dt, terms, k, n);
        combine_in_place_plain(&mut d, dt, terms, k, n);
        let bits = |v: &[T]| v.iter().map(|x| x.to_bits_u64()).collect::<Vec<_>>();
        let m = terms.len();
        assert_eq!(bits(&a), bits(&b), "{} combine, {m} terms", T::NAME);
        assert_eq!(bits(&a), bits(&c), "{} in place, {m} terms", T::NAME);
        assert_eq!(bits(&c), bits(&d), "{} in place, {m} terms", T::NAME);
    }

    /// Every number of terms (the unrolled cases and the general one), a length
    /// with a tail past the vector width.
    #[test]
    fn combine_is_bit_identical_on_every_path() {
        let n = 37;
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
        };
        let y: Vec<f64> = (0..n).map(|_| next()).collect();
        let k: Vec<f64> = (0..6 * n).map(|_| next() * 1e3).collect();
        for m in 0..=6 {
            let terms: Vec<(usize, f64)> = (0..m).map(|j| (j, next())).collect();
            assert_paths_agree(&y, &k, &terms);
            let f = |v: &[f64]| v.iter().map(|x| *x as f32).collect::<Vec<_>>();
            let t32: Vec<(usize, f32)> = terms.iter().map(|&(j, c)| (j, c as f32)).collect();
            assert_paths_agree(&f(&y), &f(&k), &t32);
        }
    }

    #[test]
    fn rk4_matches_hand_written_step() {
        // y' = -y + t, one step from y = 1 at t = 0.3 with dt = 0.1.
        let f = |t: f64, y: f64| -y + t;
        let (t, dt, y) = (0.3, 0.1, 1.0);
        let k1 = f(t, y);
        let k2 = f(t + 0.5 * dt, y + dt * (0.5 * k1));
        let k3 = f(t + 0.5 * dt, y + dt * (0.5 * k2));
        let k4 = f(t + dt, y + dt * (1.0 * k3));
        let want = y + dt * (k1 / 6.0 + k2 / 3.0 + k3 / 3.0 + k4 / 6.0);
        let mut s = Stepper::<f64>::new(&Method::Rk4.tableau(), 1);
        let mut st = [y];
        s.step(t, dt, &mut st, |t, y, dy| dy[0] = f(t, y[0]));
        assert!((st[0] - want).abs() <= 1e-15, "{} vs {want}", st[0]);
    }

    #[test]
    fn staged_step_equals_step() {
        let f = |t: f32, y: &[f32], dy: &mut [f32]| {
            dy[0] = (t * y[1]).sin() - y[0];
            dy[1] = y[0] * 0.3 - y[1];
        };
        let mut a = Stepper::<f32>::new(&Method::Rk4.tableau(), 2);
        let mut b = a.clone();
        let (mut ya, mut yb) = ([0.7f32, -1.3], [0.7f32, -1.3]);
        for n in 0..5 {
            let t = n as f32 * 0.1;
            a.step(t, 0.1, &mut ya, f);
            for i in 0..b.stages() {
                let ti = b.stage_time(i, t, 0.1);
                let (y, k) = b.stage(i, 0.1, &yb);
                f(ti, y, k);
            }
            b.finish(0.1, &mut yb);
        }
        assert_eq!(ya.map(f32::to_bits), yb.map(f32::to_bits));
    }

    #[test]
    fn factored_euler_is_one_rounding() {
        let a = 1.0f32 + 2f32.powi(-12);
        let mut s = Stepper::<f32>::new(&Method::Euler.tableau(), 1);
        let mut y = [-1.0 - 2f32.powi(-11)];
        s.step_factored(0.0, 1.0, &mut y, |_, _, u, v| {
            u[0] = a;
            v[0] = a;
        });
        assert_eq!(y[0], 2f32.powi(-24));
    }
}
