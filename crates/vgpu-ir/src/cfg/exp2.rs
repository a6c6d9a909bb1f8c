//! `ex2.approx.f32` defined as the correctly rounded f32 of `2^x`, computed
//! with integer arithmetic only, so that every backend reproduces it bit for
//! bit: the PTX interpreter calls [`ex2_f32`], the WGSL emitter writes the
//! same steps on `u32` pairs (`wgsl/cfg/exp2.rs`, no f64 needed), and neither
//! depends on a platform's `exp2`. PTX allows 2 ulp for `.approx`; correct
//! rounding is within that.
//!
//! The steps, for `2⁻²⁵ ≤ |x|` and `−150 < x < 128` (the rest is exact, see
//! [`ex2_f32`]):
//!
//! 1. `x` is a multiple of 2⁻⁴⁸ below 2⁸ in magnitude, so `x·2⁴⁸` is an exact
//!    two's-complement 64-bit integer: its top 16 bits are `n = ⌊x⌋` and its
//!    low 48 bits the fraction `f = x − n ∈ [0, 1)`, as `F = f·2⁶⁴`.
//! 2. `2^f − 1 = f·(c₁ + f·(c₂ + … + f·c₁₉))` with `cₖ = (ln 2)ᵏ/k!` in 0.64
//!    fixed point ([`EX2_COEFFS`], rounded to nearest from 128-bit values
//!    computed here), evaluated by Horner with the exact high 64 bits of each
//!    64 × 64-bit product. Every partial sum stays below 1, so nothing
//!    overflows; the error is below 19 · 1.5 · 2⁻⁶⁴ (truncations and
//!    coefficient roundings, each multiplied by `f < 1` afterwards) plus the
//!    series' tail `Σₖ₌₂₀ cₖ < 2⁻⁷¹`: under 2⁻⁵⁹ absolute on `2^f ∈ [1, 2)`.
//! 3. `2ⁿ·(1 + p)` is rounded once to nearest even as an f32, normal or
//!    subnormal, from the 64-bit significand and a sticky bit.
//!
//! Why that is the correctly rounded `2^x` for every f32 `x`: `2^x` is never
//! an f32 rounding boundary (a midpoint between neighbouring f32s) unless `x`
//! is an integer (`2^x` is irrational for non-integer rational `x`), and the
//! ignored unit test `every_f32_rounds_as_the_128_bit_reference` compares
//! these steps with a 128-bit evaluation (error below 2⁻¹¹⁰) for all 2³²
//! inputs and checks that the reference itself lies farther than its error
//! from every boundary; [`EX2_NEAR_TIES`] lists the inputs that come nearest.

/// Horner degree of the 64-bit evaluation.
const DEG: usize = 19;

/// Degree of the 128-bit evaluation of the series (its tail is below 2⁻¹³³).
const DEG128: usize = 32;

/// The high 128 bits of the 256-bit product `a · b`, exactly.
const fn mulhi128(a: u128, b: u128) -> u128 {
    const M: u128 = u64::MAX as u128;
    let (a1, a0, b1, b0) = (a >> 64, a & M, b >> 64, b & M);
    let (hh, hl, lh, ll) = (a1 * b1, a1 * b0, a0 * b1, a0 * b0);
    let mid = (ll >> 64) + (hl & M) + (lh & M);
    hh + (hl >> 64) + (lh >> 64) + (mid >> 64)
}

/// `cₖ = (ln 2)ᵏ / k!` for k = 1 … [`DEG128`] in 0.128 fixed point, each
/// below its true value by less than 2⁻¹¹⁵: `ln 2 = Σⱼ 1/(j·2ʲ)` summed to
/// 128 terms (each truncated by under one unit, tail under 2⁻¹²⁸), then each
/// `cₖ` from `cₖ₋₁` by one truncated product and one truncated division.
const fn coeffs128() -> [u128; DEG128] {
    let mut ln2: u128 = 0;
    let mut j = 1;
    while j <= 128 {
        ln2 += (1u128 << (128 - j)) / j as u128;
        j += 1;
    }
    let mut c = [0u128; DEG128];
    c[0] = ln2;
    let mut k = 1;
    while k < DEG128 {
        c[k] = mulhi128(c[k - 1], ln2) / (k as u128 + 1);
        k += 1;
    }
    c
}

const C128: [u128; DEG128] = coeffs128();

/// `cₖ = (ln 2)ᵏ / k!` for k = 1 … 19 in 0.64 fixed point (`cₖ·2⁶⁴` rounded
/// to nearest): the coefficients of `(2^f − 1)/f` that [`ex2_f32`] and the
/// WGSL emitter's `ex2_f32` both evaluate.
pub const EX2_COEFFS: [u64; DEG] = {
    let mut c = [0u64; DEG];
    let mut k = 0;
    while k < DEG {
        c[k] = ((C128[k] >> 63).div_ceil(2)) as u64;
        k += 1;
    }
    c
};

/// The f32 inputs (bits) whose `2^x` lies nearest an f32 rounding boundary:
/// within 2⁻⁵² of one relative to the result's binade, about an f64 ulp, so
/// that an evaluation in f64 can round them the wrong way (`0x3b429d37` lies
/// 2⁻⁵³·² from one; the closest, `0xb52d1f9a`, 2⁻⁵⁷·⁹). Found by the
/// exhaustive unit test; other backends' tests run them.
pub const EX2_NEAR_TIES: [u32; 5] = [
    0x3b42_9d37,
    0xb52d_1f9a,
    0xb8d3_d026,
    0xbaec_2b40,
    0xbcf3_a937,
];

/// How an input is split before the series: `Exact(bits)` for the inputs whose
/// result needs no series, else `n = ⌊x⌋` and the fraction `F = (x − n)·2⁶⁴`.
enum Split {
    Exact(u32),
    Series(i32, u64),
}

/// The specials and the split of step 1 (see the module documentation).
fn split(a: u32, ftz: bool) -> Split {
    let a = if ftz && a & 0x7f80_0000 == 0 {
        a & 0x8000_0000
    } else {
        a
    };
    let mag = a & 0x7fff_ffff;
    let neg = a >> 31 != 0;
    if mag > 0x7f80_0000 {
        // NaN: the canonical NaN, as every f32 result of the interpreter.
        return Split::Exact(0x7fff_ffff);
    }
    if mag < 0x3300_0000 {
        // |x| < 2⁻²⁵ (zeros and subnormals too): 2^x lies within 2⁻²⁵·ln 2 of
        // 1, strictly inside (1 − 2⁻²⁵, 1 + 2⁻²⁴), so it rounds to 1.
        return Split::Exact(0x3f80_0000);
    }
    if !neg && mag >= 0x4300_0000 {
        // x ≥ 128 (and +∞): beyond the largest f32.
        return Split::Exact(0x7f80_0000);
    }
    if neg && mag >= 0x4316_0000 {
        // x ≤ −150 (and −∞): at most 2⁻¹⁵⁰, half the smallest subnormal,
        // which rounds to even, +0.
        return Split::Exact(0);
    }
    let e = (mag >> 23) as i32 - 127;
    let m = u64::from(mag & 0x7f_ffff | 0x80_0000);
    let xq = m << (e + 25);
    let xq = if neg { xq.wrapping_neg() } else { xq };
    Split::Series(((xq as i64) >> 48) as i32, xq << 16)
}

/// The f32 bits of `2ⁿ·(1 + p/2⁶⁴)` rounded to nearest even (step 3): the
/// significand `2⁶³ + ⌊p/2⌋` with `p`'s last bit as a sticky bit, shifted
/// right by 40 (normal results) or more (subnormal ones).
fn round_f32(n: i32, p: u64) -> u32 {
    let b = (1u64 << 63) | (p >> 1);
    let (base, s) = if n >= -126 {
        (((n + 126) as u32) << 23, 40)
    } else {
        (0, (-86 - n) as u32)
    };
    let mant = if s >= 64 { 0 } else { b >> s };
    let rem = if s >= 64 { b } else { b & ((1u64 << s) - 1) };
    let half = 1u64 << (s - 1);
    let up = rem > half || (rem == half && (p & 1 != 0 || mant & 1 != 0));
    base + mant as u32 + u32::from(up)
}

/// `ex2.approx{.ftz}.f32`: the correctly rounded f32 of `2^a` (`a` and the
/// result as bits). NaN gives the canonical NaN `0x7fffffff`; `+∞` and
/// `a ≥ 128` give `+∞`, `−∞` and `a ≤ −150` `+0`; `.ftz` (`ftz`) reads a
/// subnormal `a` as zero (giving 1) and flushes a subnormal result to `+0`.
pub fn ex2_f32(a: u32, ftz: bool) -> u32 {
    let r = match split(a, ftz) {
        Split::Exact(r) => r,
        Split::Series(n, fq) => {
            let mulhi = |x: u64, y: u64| ((u128::from(x) * u128::from(y)) >> 64) as u64;
            let mut acc = EX2_COEFFS[DEG - 1];
            for &c in EX2_COEFFS[..DEG - 1].iter().rev() {
                acc = c + mulhi(acc, fq);
            }
            round_f32(n, mulhi(acc, fq))
        }
    };
    if ftz && r & 0x7f80_0000 == 0 {
        0
    } else {
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `2^x` for the x whose result IEEE square roots give exactly: `2^(k/2)`
    /// is `√(2ᵏ)`, correctly rounded by `sqrt` (in f64 for odd k below −149
    /// or above 127, then once more to f32, exact enough since the f64 square
    /// root lies within 2⁻⁵³ and these results are far from ties), and the
    /// integers' powers are exact.
    #[test]
    fn known_correctly_rounded_values() {
        for k in -300i32..256 {
            let x = k as f32 / 2.0;
            let want = if k % 2 == 0 {
                let p = k / 2;
                if p >= 128 {
                    f32::INFINITY
                } else if p <= -150 {
                    0.0
                } else if p >= -126 {
                    f32::from_bits(((p + 127) as u32) << 23)
                } else {
                    f32::from_bits(1 << (p + 149))
                }
            } else {
                (2f64.powi(k)).sqrt() as f32
            };
            let got = f32::from_bits(ex2_f32(x.to_bits(), false));
            assert_eq!(got.to_bits(), want.to_bits(), "2^{x}");
        }
        // √2 and 1/√2 through f32's own square root (correctly rounded).
        assert_eq!(ex2_f32(0.5f32.to_bits(), false), 2f32.sqrt().to_bits());
        assert_eq!(ex2_f32((-0.5f32).to_bits(), false), 0.5f32.sqrt().to_bits());
        // 2^x for x just above −150 rounds up to the smallest subnormal,
        // −150 itself (a tie) to +0; .ftz flushes both.
        assert_eq!(ex2_f32(0xc315_ffff, false), 1);
        assert_eq!(ex2_f32(0xc316_0000, false), 0);
        assert_eq!(ex2_f32(0xc315_ffff, true), 0);
        // Specials.
        assert_eq!(ex2_f32(0x7fc0_0000, false), 0x7fff_ffff);
        assert_eq!(ex2_f32(0xff80_0001, false), 0x7fff_ffff);
        assert_eq!(ex2_f32(0x7f80_0000, false), 0x7f80_0000);
        assert_eq!(ex2_f32(0xff80_0000, false), 0);
        assert_eq!(ex2_f32(0x8000_0000, false), 0x3f80_0000);
        assert_eq!(ex2_f32(0x0000_0001, false), 0x3f80_0000);
        assert_eq!(ex2_f32(0x4300_0000, false), 0x7f80_0000);
        // The largest f32 below 128 does not overflow.
        assert!(ex2_f32(0x42ff_ffff, false) < 0x7f80_0000);
    }

    /// The coefficients against values known independently: `c₁ = ln 2` and
    /// `c₂ = (ln 2)²/2` to 64 bits.
    #[test]
    fn coefficients_match_ln2() {
        // ln 2 = 0.b17217f7d1cf79abc9e3b398… (hex)
        assert_eq!(EX2_COEFFS[0], 0xb172_17f7_d1cf_79ac);
        assert_eq!(C128[0] >> 16, 0xb172_17f7_d1cf_79ab_c9e3_b398_03f2);
        let c2 = mulhi128(C128[0], C128[0]) / 2;
        assert_eq!(C128[1], c2);
    }

    /// 2^f in 1.127 fixed point (`2¹²⁷ + (2^f − 1)·2¹²⁷`, within 2⁻¹¹⁰ of
    /// the truth) for `F = f·2⁶⁴`: Horner over [`C128`] with 128-bit
    /// truncated products (32 terms; each of the ≤ 64 truncations and
    /// coefficient errors below 2⁻¹¹⁵, each later multiplied by f < 1).
    fn reference(fq: u64) -> u128 {
        let f = u128::from(fq) << 64;
        let mut acc = C128[DEG128 - 1];
        for &c in C128[..DEG128 - 1].iter().rev() {
            acc = c + mulhi128(acc, f);
        }
        (1u128 << 127) + (mulhi128(acc, f) >> 1)
    }

    /// How far `2^x` (1.127 fixed point, scaled by 2ⁿ) lies from the nearest
    /// f32 rounding boundary, in units of 2⁻¹²⁷ of the significand, and the
    /// f32 it rounds to.
    fn reference_rounding(n: i32, r: u128) -> (u128, u32) {
        let (base, s) = if n >= -126 {
            (((n + 126) as u32) << 23, 104)
        } else {
            (0, (-22 - n) as u32)
        };
        let mant = if s >= 128 { 0 } else { r >> s };
        let rem = if s >= 128 { r } else { r & ((1u128 << s) - 1) };
        let half = 1u128 << (s - 1);
        let up = rem > half || (rem == half && mant & 1 != 0);
        (rem.abs_diff(half), base + mant as u32 + u32::from(up))
    }

    /// Every f32 input: [`ex2_f32`] equals the rounding of the 128-bit
    /// reference, which lies more than its error (2⁻¹¹⁰, i.e. 2¹⁷ units)
    /// from every boundary, so both are the correctly rounded `2^x`; and
    /// [`EX2_NEAR_TIES`] is exactly the set within 2⁻⁵² of one (2⁷⁵ units).
    /// `cargo test --release -p vgpu-ir ex2 -- --ignored` (a few minutes).
    #[test]
    #[ignore = "scans every f32 (minutes)"]
    fn every_f32_rounds_as_the_128_bit_reference() {
        let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
        let chunk = (1u64 << 32).div_ceil(threads as u64);
        let parts: Vec<(Vec<(u128, u32)>, u128)> = std::thread::scope(|sc| {
            let hs: Vec<_> = (0..threads as u64)
                .map(|t| {
                    sc.spawn(move || {
                        let mut near = Vec::new();
                        let mut closest = u128::MAX;
                        let lo = t * chunk;
                        let hi = ((t + 1) * chunk).min(1 << 32);
                        for b in lo..hi {
                            let b = b as u32;
                            let Split::Series(n, fq) = split(b, false) else {
                                continue;
                            };
                            let (d, want) = reference_rounding(n, reference(fq));
                            assert!(d > 1 << 17, "{b:#010x}: the reference is too near a tie");
                            assert_eq!(ex2_f32(b, false), want, "{b:#010x}");
                            closest = closest.min(d);
                            if d < 1 << 75 {
                                near.push((d, b));
                            }
                        }
                        (near, closest)
                    })
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let closest = parts.iter().map(|p| p.1).min().unwrap();
        let mut near: Vec<(u128, u32)> = parts.into_iter().flat_map(|p| p.0).collect();
        near.sort_by_key(|p| p.1);
        let listed: Vec<u32> = near.iter().map(|p| p.1).collect();
        eprintln!(
            "closest: 2^-{:.1}; near: {:x?}",
            127.0 - (closest as f64).log2(),
            near.iter()
                .map(|(d, b)| (format!("{b:#010x}"), 127.0 - (*d as f64).log2()))
                .collect::<Vec<_>>()
        );
        assert_eq!(listed, EX2_NEAR_TIES);
    }
}
