//! Half precision: `add sub mul fma neg abs min max` on `.f16` and on both
//! halves of `.f16x2` (PTX ISA, "Half Precision Floating-Point Instructions"),
//! and the exact round-to-nearest-even conversion to f16 that they and `cvt`
//! use. The exact value is computed first (f16 sums and products are exact in
//! f64; an f16 fma is exact as an integer count of 2⁻⁴⁸), then rounded once,
//! so there is no double rounding. A NaN result is the canonical `0x7fff`.

use crate::float::{fmax32, fmin32};
use crate::modifiers::Mods;
use crate::program::AluFn;
use crate::types::Ty;

/// The canonical f16 NaN of NVIDIA GPUs.
const NAN16: u16 = 0x7fff;

/// The f16 bits of `(−1)^neg · m · 2^e`, rounded to nearest even (`m > 0`).
fn round_scaled(neg: bool, m: u128, e: i32) -> u16 {
    let sign = if neg { 0x8000 } else { 0 };
    // 2^top <= value < 2^(top+1); the f16 ulp there is 2^k (subnormal: 2^-24).
    let top = 127 - m.leading_zeros() as i32 + e;
    let mut k = (top - 10).max(-24);
    let shift = k - e;
    let mut q = if shift <= 0 {
        m << (-shift).min(127)
    } else if shift >= 128 {
        0
    } else {
        let (q, rem, half) = (m >> shift, m & ((1 << shift) - 1), 1u128 << (shift - 1));
        if rem > half || (rem == half && q & 1 == 1) {
            q + 1
        } else {
            q
        }
    };
    if q == 1 << 11 {
        q >>= 1;
        k += 1;
    }
    if q < 1 << 10 {
        // Zero or subnormal (only at k = -24).
        return sign | q as u16;
    }
    let field = k + 25;
    if field >= 31 {
        return sign | 0x7c00;
    }
    sign | ((field as u16) << 10) | (q as u16 - 1024)
}

/// `x` rounded to f16, to nearest even, exactly.
pub(crate) fn f16_rn(x: f64) -> u16 {
    if x.is_nan() {
        return NAN16;
    }
    if x.is_infinite() {
        return if x > 0.0 { 0x7c00 } else { 0xfc00 };
    }
    if x == 0.0 {
        return if x.is_sign_negative() { 0x8000 } else { 0 };
    }
    let b = x.to_bits();
    let (exp, frac) = (((b >> 52) & 0x7ff) as i32, b & ((1 << 52) - 1));
    let (m, e) = if exp == 0 {
        (frac, -1074)
    } else {
        (frac | (1 << 52), exp - 1075)
    };
    round_scaled(x < 0.0, m as u128, e)
}

/// The value of f16 bits.
fn val(x: u16) -> f64 {
    half::f16::from_bits(x).to_f64()
}

/// `a·b + c` of f16 values, rounded once.
fn fma16(a: u16, b: u16, c: u16) -> u16 {
    let (x, y, z) = (val(a), val(b), val(c));
    let rough = x.mul_add(y, z);
    if !rough.is_finite() || rough == 0.0 {
        // Inf/NaN operands, or an exact zero (its sign as IEEE says): f64 is exact.
        return f16_rn(rough);
    }
    // Every f16 is a multiple of 2^-24, so the exact result counts 2^-48s.
    let units = |v: f64| (v * 2f64.powi(48)) as i128;
    let n = units(x * y) + units(z);
    round_scaled(n < 0, n.unsigned_abs(), -48)
}

/// Flushes an f16 subnormal to a zero of its sign (`.ftz`).
fn ftz16(x: u16) -> u16 {
    if x & 0x7c00 == 0 {
        x & 0x8000
    } else {
        x
    }
}

/// Clamps to [0, 1], NaN to +0 (`.sat`).
fn sat16(x: u16) -> u16 {
    let v = val(x);
    if v.is_nan() || v <= 0.0 {
        0
    } else if v >= 1.0 {
        0x3c00
    } else {
        x
    }
}

type Op16 = fn(u16, u16, u16) -> u16;

/// The closure and source types of an f16 (`x2`: f16x2) arithmetic instruction.
pub(crate) fn alu(op: &str, m: &Mods, x2: bool) -> Result<(AluFn, Vec<Ty>), String> {
    if ["rz", "rm", "rp"].iter().any(|r| m.has(r)) {
        return Err(format!(
            "{op} on half precision with a rounding other than .rn"
        ));
    }
    let g: Op16 = match op {
        "add" => |a, b, _| f16_rn(val(a) + val(b)),
        "sub" => |a, b, _| f16_rn(val(a) - val(b)),
        "mul" => |a, b, _| f16_rn(val(a) * val(b)),
        "fma" => fma16,
        "neg" => |a, _, _| a ^ 0x8000,
        "abs" => |a, _, _| a & 0x7fff,
        "min" => |a, b, _| f16_rn(fmin32(val(a) as f32, val(b) as f32) as f64),
        "max" => |a, b, _| f16_rn(fmax32(val(a) as f32, val(b) as f32) as f64),
        _ => return Err(format!("{op} on half precision")),
    };
    let (ftz, sat) = (m.has("ftz"), m.has("sat"));
    let one = move |a: u16, b: u16, c: u16| {
        let (a, b, c) = if ftz {
            (ftz16(a), ftz16(b), ftz16(c))
        } else {
            (a, b, c)
        };
        let mut v = g(a, b, c);
        if ftz {
            v = ftz16(v);
        }
        if sat {
            v = sat16(v);
        }
        v
    };
    let f: AluFn = if x2 {
        Box::new(move |a, b, c| {
            let lo = one(a as u16, b as u16, c as u16) as u64;
            let hi = one((a >> 16) as u16, (b >> 16) as u16, (c >> 16) as u16) as u64;
            lo | (hi << 16)
        })
    } else {
        Box::new(move |a, b, c| one(a as u16, b as u16, c as u16) as u64)
    };
    let ty = if x2 { Ty::B32 } else { Ty::F16 };
    let n = match op {
        "neg" | "abs" => 1,
        "fma" => 3,
        _ => 2,
    };
    Ok((f, vec![ty; n]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conversion_rounds_once_to_nearest_even() {
        let u = 2f64.powi(-11); // half an ulp of f16 at 1
        assert_eq!(f16_rn(1.0), 0x3c00);
        assert_eq!(f16_rn(1.0 + u), 0x3c00, "tie to even (down)");
        assert_eq!(f16_rn(1.0 + 3.0 * u), 0x3c02, "tie to even (up)");
        assert_eq!(f16_rn(1.0 + u + 2f64.powi(-40)), 0x3c01, "just above a tie");
        assert_eq!(f16_rn(1.0 + u - 2f64.powi(-40)), 0x3c00, "just below a tie");
        assert_eq!(f16_rn(65504.0), 0x7bff);
        assert_eq!(f16_rn(65519.99), 0x7bff);
        assert_eq!(
            f16_rn(65520.0),
            0x7c00,
            "the tie above the largest overflows"
        );
        assert_eq!(f16_rn(-1e6), 0xfc00);
        assert_eq!(f16_rn(2f64.powi(-24)), 0x0001);
        assert_eq!(f16_rn(2f64.powi(-25)), 0x0000, "tie to even zero");
        assert_eq!(f16_rn(2f64.powi(-25) + 2f64.powi(-60)), 0x0001);
        assert_eq!(f16_rn(3.0 * 2f64.powi(-25)), 0x0002);
        assert_eq!(f16_rn(-2f64.powi(-30)), 0x8000);
        assert_eq!(
            f16_rn(2f64.powi(-14) - 2f64.powi(-26)),
            0x0400,
            "up to the least normal"
        );
        assert_eq!(f16_rn(-0.0), 0x8000);
        assert_eq!(f16_rn(f64::NAN), NAN16);
        // Every f16 converts to itself.
        for b in 0..=u16::MAX {
            let v = val(b);
            if !v.is_nan() {
                assert_eq!(f16_rn(v), b, "{b:#x}");
            }
        }
    }

    fn run(text: &str, a: u64, b: u64, c: u64) -> u64 {
        let parts: Vec<String> = text.split('.').map(str::to_string).collect();
        let x2 = parts.iter().any(|p| p == "f16x2");
        let (f, _) = alu(&parts[0], &Mods(&parts[1..]), x2).unwrap();
        f(a, b, c)
    }

    #[test]
    fn arithmetic_is_exactly_rounded() {
        // 1 + 2^-11 is a tie: to even, 1.0. 2049 = 2^11 + 1 is a tie at 2048.
        assert_eq!(run("add.f16", 0x3c00, 0x1000, 0), 0x3c00);
        assert_eq!(run("add.rn.f16", 0x6800, 0x3c00, 0), 0x6800);
        assert_eq!(run("sub.f16", 0x3c00, 0x3c00, 0), 0x0000);
        assert_eq!(
            run("mul.f16", 0x3e00, 0x3e00, 0),
            0x4080,
            "1.5 * 1.5 = 2.25"
        );
        assert_eq!(run("mul.f16", 0x7bff, 0x4000, 0), 0x7c00, "overflow");
        // fma: (1 + 2^-10)^2 - 1 = 2^-9 + 2^-20 exactly, a tie: to even, 2^-9.
        assert_eq!(run("fma.rn.f16", 0x3c01, 0x3c01, 0xbc00), 0x1800);
        // (1 + 2^-10)^2 - (1 - 2^-11) = 1.25 * 2^-9 + 2^-20: a tie, to even.
        assert_eq!(run("fma.rn.f16", 0x3c01, 0x3c01, 0xbbff), 0x1900);
        // 2048 + 1 is the tie between 2048 and 2050: to even.
        assert_eq!(run("fma.rn.f16", 0x6800, 0x3c00, 0x3c00), 0x6800);
        assert_eq!(run("fma.rn.f16", 0x6801, 0x3c00, 0x8001), 0x6801);
        assert_eq!(
            run("fma.rn.f16", 0x3c00, 0x6800, 0x3c01),
            0x6801,
            "2048 + 1.0009 > tie"
        );
        assert_eq!(run("neg.f16", 0x3c00, 0, 0), 0xbc00);
        assert_eq!(run("abs.f16", 0xbc00, 0, 0), 0x3c00);
        assert_eq!(run("min.f16", 0x7e00, 0x3c00, 0), 0x3c00, "NaN loses");
        assert_eq!(run("max.f16", 0x8000, 0x0000, 0), 0x0000, "+0 above -0");
        assert_eq!(run("add.f16", 0x7c00, 0xfc00, 0), NAN16 as u64);
        assert_eq!(run("add.sat.f16", 0x3c00, 0x3c00, 0), 0x3c00);
        assert_eq!(run("add.sat.f16", 0xbc00, 0x3800, 0), 0x0000);
        assert_eq!(
            run("mul.ftz.f16", 0x0200, 0x3c00, 0),
            0x0000,
            "subnormal flushed"
        );
        assert_eq!(run("mul.f16", 0x0200, 0x3c00, 0), 0x0200);
        // f16x2: each half on its own.
        assert_eq!(
            run("add.f16x2", 0x3c00_4000, 0x3c00_3c00, 0),
            0x4000_4200,
            "(1 + 1, 2 + 1)"
        );
        assert_eq!(
            run("fma.rn.f16x2", 0x4000_3c00, 0x4000_4000, 0x3c00_bc00),
            0x4500_3c00,
            "(2*2 + 1, 1*2 - 1)"
        );
    }

    #[test]
    fn unsupported_forms_are_refused() {
        assert!(alu("add", &Mods(&["rz".into(), "f16".into()]), false).is_err());
        assert!(alu("div", &Mods(&["f16".into()]), false).is_err());
    }
}
