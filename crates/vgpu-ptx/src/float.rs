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

/// f64 `a + b` in mode `r`, correctly rounded (IEEE 754): [`fma_f64`] of
/// `a · 1 + b`, so an infinite operand gives `±∞` in every mode and an exact
/// zero sum of opposite signs is `+0`, `−0` under `.rm`.
pub(crate) fn add_f64(a: f64, b: f64, r: Rnd) -> f64 {
    if r == Rnd::N {
        return a + b;
    }
    fma_f64(a, 1.0, b, r)
}

/// `|x|` of a finite nonzero f64 as `m · 2^e` with `m` of exactly 53 bits
/// (a subnormal's significand shifted up, its exponent down).
fn parts(x: f64) -> (u128, i32) {
    let b = x.to_bits();
    let f = ((b >> 52) & 0x7ff) as i32;
    let (m, e) = if f == 0 {
        (b & ((1 << 52) - 1), -1074)
    } else {
        ((b & ((1 << 52) - 1)) | 1 << 52, f - 1075)
    };
    let z = m.leading_zeros() as i32 - 11;
    ((m as u128) << z, e - z)
}

/// `(−1)^neg · m · 2^e` rounded once to f64 in mode `r`: subnormal results,
/// overflow (∞, or the largest finite number where `r` rounds toward zero)
/// and a result rounding to zero (signed by `neg`) included. `m` is nonzero;
/// its lowest bit may stand for nonzero bits below it ("sticky") when `m` has
/// at least 56 significant bits, so that bit lies below the rounding bit.
fn round_exact(neg: bool, m: u128, e: i32, r: Rnd) -> f64 {
    let z = m.leading_zeros();
    let m = m << z;
    let e = e - z as i32;
    // m in [2^127, 2^128): 75 bits dropped for a normal result, more below.
    let s = (-1074 - e).max(75) as u32;
    let (q, rest, half) = if s < 128 {
        (m >> s, m & ((1u128 << s) - 1), 1u128 << (s - 1))
    } else if s == 128 {
        (0, m, 1u128 << 127)
    } else {
        // Below a quarter of the smallest subnormal: under half a unit.
        (0, 1, 2)
    };
    let up = match r {
        Rnd::N => rest > half || (rest == half && q & 1 == 1),
        Rnd::Z => false,
        Rnd::P => !neg && rest != 0,
        Rnd::M => neg && rest != 0,
    };
    let mut q = q + up as u128;
    let mut unit = e + s as i32;
    if q == 1 << 53 {
        q >>= 1;
        unit += 1;
    }
    let mag = if q >= 1 << 52 {
        let biased = unit + 1075;
        if biased >= 2047 {
            let away = r == Rnd::N || (r == Rnd::P && !neg) || (r == Rnd::M && neg);
            if away {
                f64::INFINITY.to_bits()
            } else {
                f64::MAX.to_bits()
            }
        } else {
            ((biased as u64) << 52) | (q as u64 & ((1 << 52) - 1))
        }
    } else {
        // A subnormal (or zero): its unit is 2^-1074.
        q as u64
    };
    f64::from_bits(mag | (neg as u64) << 63)
}

/// f64 `a · b` in mode `r`, correctly rounded (IEEE 754). A zero or
/// non-finite operand gives an exact result (or NaN), the same in every mode.
pub(crate) fn mul_f64(a: f64, b: f64, r: Rnd) -> f64 {
    if r == Rnd::N || !a.is_finite() || !b.is_finite() || a == 0.0 || b == 0.0 {
        return a * b;
    }
    let ((ma, ea), (mb, eb)) = (parts(a), parts(b));
    let neg = a.is_sign_negative() != b.is_sign_negative();
    round_exact(neg, ma * mb, ea + eb, r)
}

/// f64 `a · b + c` rounded once in mode `r` (IEEE 754): the exact product and
/// sum in 128-bit integers. An exact zero sum of nonzero terms, or of zeros of
/// opposite signs, is `+0`, or `−0` under `.rm`.
pub(crate) fn fma_f64(a: f64, b: f64, c: f64, r: Rnd) -> f64 {
    if r == Rnd::N || !a.is_finite() || !b.is_finite() || !c.is_finite() {
        return a.mul_add(b, c);
    }
    let neg_p = a.is_sign_negative() != b.is_sign_negative();
    let neg_c = c.is_sign_negative();
    if a == 0.0 || b == 0.0 {
        if c != 0.0 {
            return c;
        }
        let neg = if neg_p == neg_c { neg_p } else { r == Rnd::M };
        return if neg { -0.0 } else { 0.0 };
    }
    let ((ma, ea), (mb, eb)) = (parts(a), parts(b));
    if c == 0.0 {
        return round_exact(neg_p, ma * mb, ea + eb, r);
    }
    // Both terms with their leading bit at bit 125 (room for a carry): the
    // product has at least 20 zero bits below, the addend 72.
    let top = |m: u128, e: i32| {
        let z = m.leading_zeros() - 2;
        (m << z, e - z as i32)
    };
    let (p, ep) = top(ma * mb, ea + eb);
    let (mc, ec) = parts(c);
    let (q, eq) = top(mc, ec);
    let ((big, e, neg), (small, es, neg_s)) = if (ep, p) >= (eq, q) {
        ((p, ep, neg_p), (q, eq, neg_c))
    } else {
        ((q, eq, neg_c), (p, ep, neg_p))
    };
    // The smaller term aligned, the bits shifted out ORed into its lowest bit:
    // a shift past 20 bits leaves a sum of at least 124 bits, whose rounding
    // the sticky bit cannot change (see vgpu-ir's float64_exact.rs).
    let d = (e - es) as u32;
    let small = if d >= 128 {
        1
    } else {
        (small >> d) | ((small & ((1u128 << d) - 1)) != 0) as u128
    };
    let sum = if neg == neg_s {
        big + small
    } else {
        big - small
    };
    if sum == 0 {
        return if r == Rnd::M { -0.0 } else { 0.0 };
    }
    round_exact(neg, sum, e, r)
}

/// f64 `a / b` in mode `r`, correctly rounded (IEEE 754): 73 or more quotient
/// bits of the significands, the remainder's being nonzero the sticky bit.
pub(crate) fn div_f64(a: f64, b: f64, r: Rnd) -> f64 {
    if r == Rnd::N || !a.is_finite() || !b.is_finite() || a == 0.0 || b == 0.0 {
        return a / b;
    }
    let ((ma, ea), (mb, eb)) = (parts(a), parts(b));
    let num = ma << 74;
    let (q, rem) = (num / mb, num % mb);
    let neg = a.is_sign_negative() != b.is_sign_negative();
    round_exact(neg, q << 1 | (rem != 0) as u128, ea - eb - 75, r)
}

/// f64 `√a` in mode `r`, correctly rounded (IEEE 754): the integer square
/// root of the significand shifted up by an exponent-evening 72 or 73 bits
/// (63 root bits), the remainder's being nonzero the sticky bit.
pub(crate) fn sqrt_f64(a: f64, r: Rnd) -> f64 {
    if r == Rnd::N || !a.is_finite() || a <= 0.0 {
        return a.sqrt();
    }
    let (m, e) = parts(a);
    let k = if (e - 72) % 2 == 0 { 72 } else { 73 };
    let rad = m << k;
    let root = rad.isqrt();
    let sticky = (rad != root * root) as u128;
    round_exact(false, root << 1 | sticky, (e - k) / 2 - 1, r)
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

    /// Adversarial f64 words: specials, extremes, subnormals, numbers whose
    /// products, quotients and roots land near the subnormal range, overflow,
    /// exact results and ties, and random bits in every binade.
    fn words(n: usize) -> Vec<f64> {
        let mut v: Vec<f64> = vec![
            0.0,
            -0.0,
            1.0,
            -1.0,
            2.0,
            3.0,
            0.5,
            1.5,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
            f64::MAX,
            f64::MIN,
            f64::MIN_POSITIVE,
            -f64::MIN_POSITIVE,
            f64::from_bits(1),
            -f64::from_bits(1),
            f64::from_bits(0x000f_ffff_ffff_ffff),
            1.0 + f64::EPSILON,
            1.0 - f64::EPSILON / 2.0,
            2f64.powi(-537),
            2f64.powi(-538),
            2f64.powi(-1022) * 1.5,
            2f64.powi(511) * 3.0,
            2f64.powi(1023),
            1e-160,
            1e160,
        ];
        let mut s = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s
        };
        while v.len() < n {
            let r = next();
            let sign = r & (1 << 63);
            let mant = match r % 4 {
                0 => next() & ((1 << 52) - 1),
                1 => next() & 0xff,
                2 => ((1 << 52) - 1) ^ (next() & 0xff),
                _ => (next() & 0xf) << 48,
            };
            // Exponent fields cluster at the ends and around the middles
            // whose products and quotients cross the subnormal boundary.
            let f = match (r >> 8) % 6 {
                0 => 0,
                1 => next() % 0x7ff,
                2 => 1 + next() % 60,
                3 => 0x7fe - next() % 60,
                4 => 0x1ff + next() % 40 - 20,
                _ => 0x3ff + next() % 80 - 40,
            };
            v.push(f64::from_bits(sign | f << 52 | mant));
        }
        v
    }

    fn ap(x: f64) -> rustc_apfloat::ieee::Double {
        use rustc_apfloat::Float;
        rustc_apfloat::ieee::Double::from_bits(x.to_bits() as u128)
    }

    fn unap(x: rustc_apfloat::ieee::Double) -> f64 {
        use rustc_apfloat::Float;
        f64::from_bits(x.to_bits() as u64)
    }

    fn same(a: f64, b: f64) -> bool {
        (a.is_nan() && b.is_nan()) || a.to_bits() == b.to_bits()
    }

    const MODES: [(Rnd, rustc_apfloat::Round); 4] = [
        (Rnd::N, rustc_apfloat::Round::NearestTiesToEven),
        (Rnd::Z, rustc_apfloat::Round::TowardZero),
        (Rnd::M, rustc_apfloat::Round::TowardNegative),
        (Rnd::P, rustc_apfloat::Round::TowardPositive),
    ];

    /// Directed `add`/`mul`/`fma`/`div.f64` equal LLVM's APFloat (an independent
    /// software IEEE 754 implementation) bit for bit in every mode.
    #[test]
    fn f64_mul_fma_div_are_correctly_rounded() {
        use rustc_apfloat::Float;
        let w = words(700);
        let mut bad = Vec::new();
        for (i, &a) in w.iter().enumerate() {
            for (j, &b) in w.iter().enumerate() {
                let c = w[(i * 7 + j * 13) % w.len()];
                for (r, ar) in MODES {
                    let want = unap(ap(a).mul_r(ap(b), ar).value);
                    let got = mul_f64(a, b, r);
                    if !same(got, want) {
                        bad.push(format!("mul {r:?} {a:e} {b:e}: {got:e}, want {want:e}"));
                    }
                    let want = unap(ap(a).add_r(ap(b), ar).value);
                    let got = add_f64(a, b, r);
                    if !same(got, want) {
                        bad.push(format!("add {r:?} {a:e} {b:e}: {got:e}, want {want:e}"));
                    }
                    let want = unap(ap(a).div_r(ap(b), ar).value);
                    let got = div_f64(a, b, r);
                    if !same(got, want) {
                        bad.push(format!("div {r:?} {a:e} {b:e}: {got:e}, want {want:e}"));
                    }
                    let want = unap(ap(a).mul_add_r(ap(b), ap(c), ar).value);
                    let got = fma_f64(a, b, c, r);
                    if !same(got, want) {
                        bad.push(format!(
                            "fma {r:?} {a:e} {b:e} {c:e}: {got:e}, want {want:e}"
                        ));
                    }
                }
            }
        }
        // Cancelling fmas: c = -RN(a·b) and its neighbours, and a·b = -c
        // exactly (the sign of an exact zero sum).
        for (i, &a) in w.iter().enumerate() {
            let b = w[(i * 31 + 5) % w.len()];
            let p = a * b;
            for c in [-p, -next_up_f64(p), -next_down_f64(p), -(a * 1.0)] {
                for (r, ar) in MODES {
                    let want = unap(ap(a).mul_add_r(ap(b), ap(c), ar).value);
                    let got = fma_f64(a, b, c, r);
                    if !same(got, want) {
                        bad.push(format!(
                            "fma {r:?} {a:e} {b:e} {c:e}: {got:e}, want {want:e}"
                        ));
                    }
                }
            }
        }
        assert!(
            bad.is_empty(),
            "{} wrong, first: {:#?}",
            bad.len(),
            &bad[..bad.len().min(8)]
        );
    }

    /// `m1 · 2^e1` against `m2 · 2^e2`, exactly.
    fn cmp_exact(m1: u128, e1: i32, m2: u128, e2: i32) -> std::cmp::Ordering {
        let top = |m: u128, e: i32| e + 128 - m.leading_zeros() as i32;
        match (m1 == 0, m2 == 0) {
            (true, true) => return std::cmp::Ordering::Equal,
            (true, false) => return std::cmp::Ordering::Less,
            (false, true) => return std::cmp::Ordering::Greater,
            _ => {}
        }
        let (t1, t2) = (top(m1, e1), top(m2, e2));
        if t1 != t2 {
            return t1.cmp(&t2);
        }
        if e1 >= e2 {
            (m1 << (e1 - e2)).cmp(&m2)
        } else {
            m1.cmp(&(m2 << (e2 - e1)))
        }
    }

    /// `x²` of a finite nonnegative f64, exactly, as `m · 2^e`.
    fn square(x: f64) -> (u128, i32) {
        if x == 0.0 {
            return (0, 0);
        }
        let (m, e) = parts(x);
        (m * m, 2 * e)
    }

    /// Directed `sqrt.f64` brackets the exact root: `s² ≤ a < next(s)²`
    /// toward zero and down, `prev(s)² < a ≤ s²` up (exact integer squares).
    #[test]
    fn f64_sqrt_is_correctly_rounded() {
        use std::cmp::Ordering::*;
        let mut w = words(20000);
        // Perfect squares and their neighbours, subnormal ones too.
        for k in [1.0, 3.0, 12345.0, 2f64.powi(-540), 2f64.powi(-1000), 9e150] {
            let sq = k * k;
            w.extend([sq, next_up_f64(sq), next_down_f64(sq)]);
        }
        let mut bad = Vec::new();
        for &a in &w {
            for r in [Rnd::Z, Rnd::M, Rnd::P] {
                let s = sqrt_f64(a, r);
                if !(a > 0.0 && a.is_finite()) {
                    if !same(s, a.sqrt()) {
                        bad.push(format!("sqrt {r:?} {a:e}: {s:e}"));
                    }
                    continue;
                }
                let (ma, ea) = parts(a);
                let (m, e) = square(s);
                let ok = if r == Rnd::P {
                    let (mp, ep) = square(next_down_f64(s));
                    cmp_exact(mp, ep, ma, ea) == Less && cmp_exact(ma, ea, m, e) != Greater
                } else {
                    let (mn, en) = square(next_up_f64(s));
                    cmp_exact(m, e, ma, ea) != Greater && cmp_exact(ma, ea, mn, en) == Less
                };
                if !ok {
                    bad.push(format!("sqrt {r:?} {a:e}: {s:e}"));
                }
            }
        }
        assert!(
            bad.is_empty(),
            "{} wrong, first: {:#?}",
            bad.len(),
            &bad[..bad.len().min(8)]
        );
    }
}
