//! Lower bounds on the magnitudes of f32 values, which let a speculative
//! region (speculate.rs) leave out the tests of values that cannot be
//! subnormal (fma_plan.rs).
//!
//! A *bound* `L` of a value `v` says: `v` is zero, infinite or NaN, or
//! `|v| ≥ 2^L`. The device's fma (`FFMA.FTZ` on NVIDIA) flushes only
//! subnormal operands and results, so an fma whose operands and exact result
//! have bounds of at least −126 ([`NORMAL`]) is the one rounding. Bounds come
//! from immediates (exact), from the region's tests (`tiny` with the
//! kernel's threshold `T`: a value that passes has bound `T`) and from these
//! rules, each for correctly rounded operations (rounding to nearest is
//! monotone and a power of two at least 2⁻¹⁴⁹ is a float, so an exact
//! result of at least 2^K rounds to at least 2^K; below 2⁻¹⁴⁹ it rounds to
//! zero or to at least 2⁻¹⁴⁹):
//!
//! * **product** `a·b`: zero, or `|a·b| ≥ 2^(La+Lb)`;
//! * **sum** `a ± b` ([`sum`]): with one operand zero, the other; otherwise
//!   let `e` be the exponent of the larger magnitude (`e ≥ max(La, Lb)`).
//!   If the smaller is below `2^(e−1)`, `|a ± b| ≥ 2^e − 2^(e−1)`; else both
//!   are multiples of `2^(e−1−23)` (their units in the last place), so a
//!   nonzero result is at least `2^(e−24)`. Hence
//!   `min(La, Lb, max(La, Lb) − 24)`;
//! * **fma** `a·b + c` ([`fma`]), the product exact: with a zero factor,
//!   `c`; with `c` zero, the rounded product (`La + Lb`); otherwise, with
//!   `ea`, `eb`, `ec` the exponents and `M = max(ea + eb, ec)`, either one
//!   term is at most half the other and the result at least half the larger
//!   (`2^(M−1)`), or they are within a factor 2 (so `ea + eb ≥ M − 2`) and a
//!   nonzero result is a multiple of `2^min(ea+eb−46, ec−23)`, at least
//!   `2^(M−48)`. Hence `min(Lc, La + Lb, max(La + Lb, Lc) − 48)`;
//! * **min, max**: one of the operands; **negation, absolute value, move**:
//!   the same magnitude.
//!
//! NVIDIA's `min` and a device that flushes its adds or products give zero
//! where the rule's value is subnormal, which a bound allows.

use crate::cfg::{BinOp, Inst, Stmt, UnOp, Val};

/// A bound standing for "any magnitude": zero, infinities and NaNs (kept
/// far from `i32`'s ends, so that sums of two stay exact).
pub(super) const HUGE: i32 = 1 << 20;

/// The smallest normal f32's exponent: an fma whose operands and result
/// have bounds at least this is exact on a device that flushes subnormals.
pub(super) const NORMAL: i32 = -126;

/// The bound of an immediate (its f32 bits): its exponent, `⌊log₂|x|⌋`;
/// [`HUGE`] for zero, infinities and NaNs.
pub(super) fn immediate(bits: u32) -> i32 {
    let m = bits & 0x7fff_ffff;
    if m == 0 || m >= 0x7f80_0000 {
        return HUGE;
    }
    match (m >> 23) as i32 {
        // Subnormal: m · 2⁻¹⁴⁹.
        0 => (31 - m.leading_zeros() as i32) - 149,
        e => e - 127,
    }
}

/// The bound of a product of values bounded by `a` and `b`.
pub(super) fn product(a: i32, b: i32) -> i32 {
    (a + b).clamp(-HUGE, HUGE)
}

/// The bound of a sum or difference of values bounded by `a` and `b`.
pub(super) fn sum(a: i32, b: i32) -> i32 {
    a.min(b).min(a.max(b) - 24)
}

/// The bound of `a·b + c` (one rounding) for values so bounded.
pub(super) fn fma(a: i32, b: i32, c: i32) -> i32 {
    let p = product(a, b);
    c.min(p).min(p.max(c) - 48)
}

/// The bound of what `s` (not an fma) writes, from its operands' bounds
/// (`of`: a register's or immediate's, `None` where unknown); `None` where
/// no rule applies.
pub(super) fn of_stmt(s: &Stmt, of: impl Fn(Val) -> Option<i32>) -> Option<i32> {
    match s.inst {
        Inst::Bin { op, a, b, .. } => {
            let (a, b) = (of(a)?, of(b)?);
            match op {
                BinOp::AddF32 | BinOp::SubF32 => Some(sum(a, b)),
                BinOp::MulF32 => Some(product(a, b)),
                BinOp::MinF32 | BinOp::MaxF32 => Some(a.min(b)),
                _ => None,
            }
        }
        Inst::Un {
            op: UnOp::NegF32 | UnOp::AbsF32 | UnOp::Mov(32),
            a,
            ..
        } => of(a),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// floor(log2 |x|) of a finite nonzero f64, exactly.
    fn exp_of(x: f64) -> i32 {
        let bits = x.abs().to_bits();
        let e = (bits >> 52) as i32;
        if e == 0 {
            // f64 subnormals do not arise from f32 operations.
            unreachable!("f64 subnormal");
        }
        e - 1023
    }

    /// Whether the f32 `v` satisfies bound `l`.
    fn within(v: f32, l: i32) -> bool {
        v == 0.0 || !v.is_finite() || exp_of(v as f64) >= l
    }

    /// The bound a value has by itself.
    fn own(v: f32) -> i32 {
        immediate(v.to_bits())
    }

    #[test]
    fn immediates_have_their_exponent() {
        assert_eq!(immediate(1.0f32.to_bits()), 0);
        assert_eq!(immediate(10.0f32.to_bits()), 3);
        assert_eq!(immediate((-0.75f32).to_bits()), -1);
        assert_eq!(immediate(f32::MIN_POSITIVE.to_bits()), -126);
        assert_eq!(immediate(1), -149);
        assert_eq!(immediate(0x0040_0000), -127);
        assert_eq!(immediate(0), HUGE);
        assert_eq!(immediate(0x8000_0000), HUGE);
        assert_eq!(immediate(f32::INFINITY.to_bits()), HUGE);
        assert_eq!(immediate(f32::NAN.to_bits()), HUGE);
    }

    /// Values whose sums and fmas cancel: near-equal pairs, powers of two
    /// and their neighbours, subnormals, zeros and infinities.
    fn values() -> Vec<f32> {
        let mut out = vec![0.0, -0.0, f32::INFINITY, 1e-45, 3e-39, f32::MIN_POSITIVE];
        let mut s = 0x1234_5678u32;
        for e in [-126, -120, -100, -60, -40, -20, -3, -1, 0, 1, 5, 30] {
            let p = 2f32.powi(e);
            for k in [1.0f32, 1.5, 1.9999999, 1.0000001] {
                out.push(p * k);
                out.push(-p * k);
            }
            for _ in 0..3 {
                s ^= s << 13;
                s ^= s >> 17;
                s ^= s << 5;
                let m = 1.0 + (s >> 9) as f32 / 8388608.0;
                out.push(p * m);
            }
        }
        out
    }

    #[test]
    fn each_rule_holds_for_every_pair_and_triple_tried() {
        let vs = values();
        for &a in &vs {
            for &b in &vs {
                let (la, lb) = (own(a), own(b));
                for (r, l, what) in [
                    (a + b, sum(la, lb), "+"),
                    (a - b, sum(la, lb), "-"),
                    (a * b, product(la, lb), "*"),
                ] {
                    assert!(within(r, l), "{a:e} {what} {b:e} = {r:e}, bound {l}");
                }
                // A bound below the own one holds too: check sums and fmas
                // through the bounds of near values.
                for &c in vs.iter().step_by(3) {
                    let r = a.mul_add(b, c);
                    let l = fma(la, lb, own(c));
                    assert!(within(r, l), "fma({a:e}, {b:e}, {c:e}) = {r:e}, bound {l}");
                }
            }
        }
    }

    #[test]
    fn fma_cancellation_reaches_near_its_bound() {
        // a·b and −c agree in their leading bits: the result is the product's
        // low bits, far below both (the rule's 48 are about what is lost).
        let a = 1.0000001f32;
        let b = 1.0000001f32;
        let c = -1.0000002f32;
        let r = a.mul_add(b, c);
        assert!(r != 0.0 && exp_of(r as f64) <= -45, "{r:e}");
        assert!(within(r, fma(own(a), own(b), own(c))));
        assert_eq!(fma(0, 0, 0), -48);
        assert_eq!(fma(HUGE, 0, -7), -7);
        assert_eq!(fma(-3, -4, HUGE), -7);
        assert_eq!(sum(0, HUGE), 0);
        assert_eq!(sum(-10, -12), -34);
    }
}
