//! Floating-point rounding, exactly: the PTX rounding modifiers `.rn .rz .rm .rp`
//! applied to a value known as an unevaluated sum `hi + lo` (an error-free
//! transform), so directed rounding is correct, not approximated; and PTX's
//! float `min`/`max` (NaN and signed-zero rules).

/// A rounding mode of PTX.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Rnd {
    /// `.rn`: to nearest, ties to even.
    N,
    /// `.rz`: toward zero.
    Z,
    /// `.rm`: toward −∞.
    M,
    /// `.rp`: toward +∞.
    P,
}

pub(crate) fn next_up_f32(x: f32) -> f32 {
    if x.is_nan() || x == f32::INFINITY {
        return x;
    }
    if x == 0.0 {
        return f32::from_bits(1);
    }
    let b = x.to_bits();
    f32::from_bits(if x > 0.0 { b + 1 } else { b - 1 })
}

pub(crate) fn next_down_f32(x: f32) -> f32 {
    -next_up_f32(-x)
}

pub(crate) fn next_up_f64(x: f64) -> f64 {
    if x.is_nan() || x == f64::INFINITY {
        return x;
    }
    if x == 0.0 {
        return f64::from_bits(1);
    }
    let b = x.to_bits();
    f64::from_bits(if x > 0.0 { b + 1 } else { b - 1 })
}

pub(crate) fn next_down_f64(x: f64) -> f64 {
    -next_up_f64(-x)
}

/// Knuth's TwoSum: `a + b = s + e` exactly.
pub(crate) fn two_sum(a: f64, b: f64) -> (f64, f64) {
    let s = a + b;
    let bb = s - a;
    let e = (a - (s - bb)) + (b - bb);
    (s, e)
}

/// Directed choice between a rounded-to-nearest candidate `c` and its neighbour,
/// given the sign of `true − c` (`dir`: −1, 0, +1).
fn pick<T: Copy + PartialOrd + Default>(
    c: T,
    dir: i32,
    r: Rnd,
    up: fn(T) -> T,
    down: fn(T) -> T,
    neg: bool,
) -> T {
    let zero = T::default();
    match (dir, r) {
        (0, _) | (_, Rnd::N) => c,
        (1, Rnd::P) => up(c),
        (1, Rnd::M) => c,
        (1, Rnd::Z) => {
            if c < zero || (c == zero && neg) {
                up(c)
            } else {
                c
            }
        }
        (_, Rnd::M) => down(c),
        (_, Rnd::P) => c,
        (_, Rnd::Z) => {
            if c > zero {
                down(c)
            } else {
                c
            }
        }
    }
}

fn sign(x: f64) -> i32 {
    if x > 0.0 {
        1
    } else if x < 0.0 {
        -1
    } else {
        0
    }
}

/// Rounds the exact value `hi + lo` (with `|lo|` below half an ulp of `hi`) to
/// f32 in mode `r`. Only the sign of `lo` matters.
pub(crate) fn round_to_f32(hi: f64, lo: f64, r: Rnd) -> f32 {
    if hi.is_nan() {
        return f32::NAN;
    }
    let c = hi as f32;
    if r == Rnd::N && lo == 0.0 {
        return c;
    }
    if hi.is_infinite() {
        return c;
    }
    let d = hi - c as f64;
    let dir = if d != 0.0 && c.is_finite() {
        sign(d)
    } else if c.is_infinite() {
        -sign(c as f64)
    } else {
        sign(lo)
    };
    if c == 0.0 && dir != 0 {
        // Below the smallest subnormal: the neighbours are ±0 and ±min.
        let t_pos = dir > 0;
        return match r {
            Rnd::N => c,
            Rnd::Z => {
                if t_pos {
                    0.0
                } else {
                    -0.0
                }
            }
            Rnd::P => {
                if t_pos {
                    f32::from_bits(1)
                } else {
                    -0.0
                }
            }
            Rnd::M => {
                if t_pos {
                    0.0
                } else {
                    -f32::from_bits(1)
                }
            }
        };
    }
    pick(c, dir, r, next_up_f32, next_down_f32, c.is_sign_negative())
}

/// Rounds `hi + lo`, where `hi` is already `hi + lo` rounded to nearest in f64,
/// to f64 in mode `r`.
pub(crate) fn round_f64(hi: f64, lo: f64, r: Rnd) -> f64 {
    if hi.is_nan() || r == Rnd::N {
        return hi;
    }
    if hi.is_infinite() {
        // Overflowed to infinity under round-to-nearest.
        return match (r, hi > 0.0) {
            (Rnd::Z, true) | (Rnd::M, true) => f64::MAX,
            (Rnd::Z, false) | (Rnd::P, false) => f64::MIN,
            _ => hi,
        };
    }
    pick(
        hi,
        sign(lo),
        r,
        next_up_f64,
        next_down_f64,
        hi.is_sign_negative(),
    )
}

/// f32 `a + b` in mode `r`.
pub(crate) fn add_f32(a: f32, b: f32, r: Rnd) -> f32 {
    if r == Rnd::N {
        return a + b;
    }
    let (hi, lo) = two_sum(a as f64, b as f64);
    round_to_f32(hi, lo, r)
}

/// f32 `a · b` in mode `r` (the f64 product of two f32 is exact).
pub(crate) fn mul_f32(a: f32, b: f32, r: Rnd) -> f32 {
    if r == Rnd::N {
        return a * b;
    }
    round_to_f32(a as f64 * b as f64, 0.0, r)
}

/// f32 `a · b + c` with one rounding in mode `r`.
pub(crate) fn fma_f32(a: f32, b: f32, c: f32, r: Rnd) -> f32 {
    if r == Rnd::N {
        return a.mul_add(b, c);
    }
    let p = a as f64 * b as f64;
    if !p.is_finite() || !c.is_finite() {
        return a.mul_add(b, c);
    }
    let (hi, lo) = two_sum(p, c as f64);
    round_to_f32(hi, lo, r)
}

/// f32 `a / b` in mode `r`.
pub(crate) fn div_f32(a: f32, b: f32, r: Rnd) -> f32 {
    if r == Rnd::N {
        return a / b;
    }
    let (a, b) = (a as f64, b as f64);
    let q = a / b;
    if !q.is_finite() || q == 0.0 {
        return round_to_f32(q, 0.0, r);
    }
    let rem = (-q).mul_add(b, a);
    round_to_f32(q, rem * b.signum(), r)
}

/// f32 `√a` in mode `r`.
pub(crate) fn sqrt_f32(a: f32, r: Rnd) -> f32 {
    if r == Rnd::N {
        return a.sqrt();
    }
    let a = a as f64;
    let s = a.sqrt();
    if !s.is_finite() || s == 0.0 {
        return s as f32;
    }
    round_to_f32(s, (-s).mul_add(s, a), r)
}

/// f64 `a + b` in mode `r`.
pub(crate) fn add_f64(a: f64, b: f64, r: Rnd) -> f64 {
    let (s, e) = two_sum(a, b);
    round_f64(s, e, r)
}

/// f64 `a · b` in mode `r`.
pub(crate) fn mul_f64(a: f64, b: f64, r: Rnd) -> f64 {
    let p = a * b;
    if !p.is_finite() {
        return round_f64(p, 0.0, r);
    }
    round_f64(p, a.mul_add(b, -p), r)
}

/// f64 `a · b + c` in mode `r` (the sign of the residual from TwoProd + TwoSum).
pub(crate) fn fma_f64(a: f64, b: f64, c: f64, r: Rnd) -> f64 {
    let f = a.mul_add(b, c);
    if r == Rnd::N || !f.is_finite() {
        return f;
    }
    let p = a * b;
    let pe = a.mul_add(b, -p);
    let (s, e) = two_sum(p, c);
    let resid = ((s - f) + e) + pe;
    round_f64(f, resid, r)
}

/// f64 `a / b` in mode `r`.
pub(crate) fn div_f64(a: f64, b: f64, r: Rnd) -> f64 {
    let q = a / b;
    if r == Rnd::N || !q.is_finite() || q == 0.0 {
        return q;
    }
    let rem = (-q).mul_add(b, a);
    round_f64(q, rem * b.signum(), r)
}

/// f64 `√a` in mode `r`.
pub(crate) fn sqrt_f64(a: f64, r: Rnd) -> f64 {
    let s = a.sqrt();
    if r == Rnd::N || !s.is_finite() || s == 0.0 {
        return s;
    }
    round_f64(s, (-s).mul_add(s, a), r)
}

/// A 64-bit integer to f64 in mode `r`, exactly.
pub(crate) fn int_to_f64(x: i128, r: Rnd) -> f64 {
    let hi = x as f64;
    let lo = (x - hi as i128) as f64;
    round_f64(hi, lo, r)
}

/// A 64-bit integer to f32 in mode `r`, exactly.
pub(crate) fn int_to_f32(x: i128, r: Rnd) -> f32 {
    if r == Rnd::N {
        return x as f32;
    }
    let hi = x as f64;
    let lo = (x - hi as i128) as f64;
    round_to_f32(hi, lo, r)
}

/// PTX `min`/`max` of floats (`max` picks which): a NaN operand loses to a
/// number, and −0 is below +0.
pub(crate) fn fminmax(a: f64, b: f64, max: bool) -> f64 {
    if a.is_nan() {
        return b;
    }
    if b.is_nan() {
        return a;
    }
    if a == b {
        return if a.is_sign_negative() != max { a } else { b };
    }
    if max {
        a.max(b)
    } else {
        a.min(b)
    }
}

/// f32 `min` (exact through f64).
pub(crate) fn fmin32(a: f32, b: f32) -> f32 {
    fminmax(a as f64, b as f64, false) as f32
}

/// f32 `max` (exact through f64).
pub(crate) fn fmax32(a: f32, b: f32) -> f32 {
    fminmax(a as f64, b as f64, true) as f32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directed_add_brackets_the_exact_sum() {
        let (a, b) = (1.0f32, f32::EPSILON / 4.0);
        assert_eq!(add_f32(a, b, Rnd::N), 1.0);
        assert_eq!(add_f32(a, b, Rnd::Z), 1.0);
        assert_eq!(add_f32(a, b, Rnd::M), 1.0);
        assert_eq!(add_f32(a, b, Rnd::P), next_up_f32(1.0));
        assert_eq!(add_f32(-a, -b, Rnd::M), -next_up_f32(1.0));
        assert_eq!(add_f32(-a, -b, Rnd::Z), -1.0);
    }

    #[test]
    fn directed_mul_and_div() {
        let third_lo = div_f32(1.0, 3.0, Rnd::M);
        let third_hi = div_f32(1.0, 3.0, Rnd::P);
        assert_eq!(next_up_f32(third_lo), third_hi);
        assert!((third_lo as f64) < 1.0 / 3.0 && (third_hi as f64) > 1.0 / 3.0);
        assert_eq!(div_f32(1.0, 3.0, Rnd::Z), third_lo);
        assert_eq!(div_f32(-1.0, 3.0, Rnd::Z), -third_lo);
        let x = 1.0f32 + f32::EPSILON;
        assert_eq!(mul_f32(x, x, Rnd::Z), 1.0 + 2.0 * f32::EPSILON);
        assert_eq!(mul_f32(x, x, Rnd::P), 1.0 + 3.0 * f32::EPSILON);
    }

    #[test]
    fn overflow_under_directed_modes() {
        assert_eq!(mul_f32(f32::MAX, 2.0, Rnd::Z), f32::MAX);
        assert_eq!(mul_f32(f32::MAX, 2.0, Rnd::P), f32::INFINITY);
        assert_eq!(mul_f32(f32::MAX, -2.0, Rnd::P), f32::MIN);
        assert_eq!(mul_f64(f64::MAX, 2.0, Rnd::M), f64::MAX);
    }

    #[test]
    fn f64_directed_and_sqrt() {
        let lo = div_f64(1.0, 3.0, Rnd::M);
        assert_eq!(next_up_f64(lo), div_f64(1.0, 3.0, Rnd::P));
        assert_eq!(sqrt_f32(2.0, Rnd::P), next_up_f32(sqrt_f32(2.0, Rnd::M)));
        assert_eq!(sqrt_f64(4.0, Rnd::M), 2.0);
        assert_eq!(
            fma_f32(1.0, 1.0, f32::EPSILON / 4.0, Rnd::P),
            next_up_f32(1.0)
        );
        assert_eq!(int_to_f32((1 << 24) + 1, Rnd::P), 16777218.0);
        assert_eq!(int_to_f32((1 << 24) + 1, Rnd::M), 16777216.0);
    }
}
