//! Typed operations applied to every lane of a warp at once: the common ALU,
//! FMA, `mov`, `selp`, `setp`, `cvt` and `cvta` forms that nvcc emits, decoded
//! into a compact enum with register indices instead of a closure.
//!
//! The executor applies one over the 32 lanes of a warp in one tight loop on
//! the structure-of-arrays register file (`regs[r * 32 + lane]`): the dispatch
//! on the operation is paid once per warp instead of once per lane, and the
//! loop vectorises (with AVX2 and FMA when the CPU has them, chosen at run
//! time). Every lane is computed and the results are blended in under the
//! active mask; these operations are pure, so computing an inactive lane
//! changes nothing.
//!
//! Each kind means exactly what the general closure the decoder would build
//! otherwise means (semantics.rs): the tests at the end check that bit for bit.

use crate::float::{fmax32, fmin32};
use crate::modifiers::Mods;
use crate::operand::Src;
use crate::types::*;

// setp's comparisons are the IR's (one vocabulary: the lowering passes them
// through). `lo ls hi hs` are `lt le gt ge` unsigned.
pub(crate) use vgpu_ir::cfg::{FCmp, ICmp};

/// What a [`WarpOp`] computes in each lane from the bits of its sources
/// `a, b, c`. A `u64` parameter is the mask of the result type's bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// f32 `a + b`, to nearest.
    AddF32,
    /// f32 `a − b`, to nearest.
    SubF32,
    /// f32 `a · b`, to nearest.
    MulF32,
    /// f32 `a · b + c`, one rounding to nearest (`fma.rn`, `mad.rn`).
    FmaF32,
    /// f32 `a · b − c`, one rounding (a `mul` contracted into the `sub` after it).
    FmsF32,
    /// f32 `−a · b + c`, one rounding (a `sub` of a contracted product).
    FnmaF32,
    /// f32 `|a|` (the sign bit cleared).
    AbsF32,
    /// f32 `−a` (the sign bit flipped).
    NegF32,
    /// f32 `min` (a NaN operand loses; −0 below +0).
    MinF32,
    /// f32 `max` (a NaN operand loses; +0 above −0).
    MaxF32,
    /// Integer `a + b`, wrapping.
    Add(u64),
    /// Integer `a − b`, wrapping.
    Sub(u64),
    /// Integer `a · b`, low half.
    MulLo(u64),
    /// Integer `a · b + c`, low half.
    MadLo(u64),
    /// Bitwise `a & b`.
    And(u64),
    /// Bitwise `a | b`.
    Or(u64),
    /// Bitwise `a ^ b`.
    Xor(u64),
    /// Bitwise `!a`.
    Not(u64),
    /// `a` (the type's bits).
    Mov(u64),
    /// `a << b` on `bits` bits (0 from `b ≥ bits`).
    Shl(u32),
    /// Logical `a >> b` on `bits` bits.
    ShrU(u32),
    /// Arithmetic `a >> b` on `bits` bits.
    ShrS(u32),
    /// 32 × 32 → 64-bit product (`mul.wide.s32/u32`).
    MulWide { signed: bool },
    /// 32 × 32 + 64 → 64 bits (`mad.wide.s32/u32`).
    MadWide { signed: bool },
    /// `c ? a : b` on the predicate `c`.
    Selp,
    /// Integer conversion: `a` as a `sbits`-bit (signed or not) integer, wrapped
    /// to the destination's bits.
    CvtInt {
        sbits: u32,
        signed: bool,
        dmask: u64,
    },
    /// `setp` of integers of `bits` bits into a predicate.
    SetpInt { cmp: ICmp, signed: bool, bits: u32 },
    /// `setp` of f32 into a predicate.
    SetpF32(FCmp),
}

/// One warp operation: `d = kind(a, b, c)` in every active lane.
#[derive(Debug, Clone, Copy)]
pub(crate) struct WarpOp {
    /// What is computed.
    pub kind: Kind,
    /// The destination register.
    pub d: u32,
    /// Sources (an unused one is `Imm(0)`).
    pub a: Src,
    /// Second source.
    pub b: Src,
    /// Third source.
    pub c: Src,
}

/// The kind of a one-result instruction that `semantics::alu` accepts, when it
/// has a warp form: `op` is the opcode, `m` its modifiers.
pub(crate) fn alu(op: &str, m: &Mods) -> Option<Kind> {
    let ty = m.ty()?;
    let bits = ty.bits();
    let plain_float = ty == Ty::F32
        && !m.has("ftz")
        && !m.has("sat")
        && ["rz", "rm", "rp"].iter().all(|r| !m.has(r));
    let int = ty.is_int();
    let sat = m.has("sat");
    let logic_mask = if ty == Ty::Pred { 1 } else { mask(bits) };
    Some(match op {
        "add" if plain_float => Kind::AddF32,
        "sub" if plain_float => Kind::SubF32,
        "mul" if plain_float => Kind::MulF32,
        "fma" | "mad" if plain_float => Kind::FmaF32,
        "abs" if plain_float => Kind::AbsF32,
        "neg" if plain_float => Kind::NegF32,
        "min" if plain_float && !m.has("NaN") => Kind::MinF32,
        "max" if plain_float && !m.has("NaN") => Kind::MaxF32,
        "add" if int && !sat => Kind::Add(mask(bits)),
        "sub" if int && !sat => Kind::Sub(mask(bits)),
        "mul" | "mad" if int && m.has("wide") && bits == 32 => {
            let signed = ty.is_signed();
            if op == "mul" {
                Kind::MulWide { signed }
            } else {
                Kind::MadWide { signed }
            }
        }
        "mul" if int && !m.has("wide") && !m.has("hi") => Kind::MulLo(mask(bits)),
        "mad" if int && !m.has("wide") && !m.has("hi") => Kind::MadLo(mask(bits)),
        "and" => Kind::And(logic_mask),
        "or" => Kind::Or(logic_mask),
        "xor" => Kind::Xor(logic_mask),
        "not" => Kind::Not(logic_mask),
        "mov" => Kind::Mov(logic_mask),
        "shl" => Kind::Shl(bits),
        "shr" if ty.is_signed() => Kind::ShrS(bits),
        "shr" => Kind::ShrU(bits),
        "selp" => Kind::Selp,
        _ => return None,
    })
}

/// `setp`'s float comparison named `name` (`eq` … `geu`, `num`, `nan`).
pub(crate) fn float_cmp(name: &str) -> Option<FCmp> {
    Some(match name {
        "eq" => FCmp::Eq,
        "ne" => FCmp::Ne,
        "lt" => FCmp::Lt,
        "le" => FCmp::Le,
        "gt" => FCmp::Gt,
        "ge" => FCmp::Ge,
        "equ" => FCmp::Equ,
        "neu" => FCmp::Neu,
        "ltu" => FCmp::Ltu,
        "leu" => FCmp::Leu,
        "gtu" => FCmp::Gtu,
        "geu" => FCmp::Geu,
        "num" => FCmp::Num,
        "nan" => FCmp::Nan,
        _ => return None,
    })
}

/// The kind of `setp.CMP.TY` with one predicate destination and no boolean
/// combination, when it has a warp form.
pub(crate) fn setp(cmp: &str, ty: Ty, ftz: bool) -> Option<Kind> {
    if ty == Ty::F32 && !ftz {
        let c = float_cmp(cmp)?;
        return Some(Kind::SetpF32(c));
    }
    if !ty.is_int() {
        return None;
    }
    let (c, unsigned) = match cmp {
        "eq" => (ICmp::Eq, false),
        "ne" => (ICmp::Ne, false),
        "lt" => (ICmp::Lt, false),
        "le" => (ICmp::Le, false),
        "gt" => (ICmp::Gt, false),
        "ge" => (ICmp::Ge, false),
        "lo" => (ICmp::Lt, true),
        "ls" => (ICmp::Le, true),
        "hi" => (ICmp::Gt, true),
        "hs" => (ICmp::Ge, true),
        _ => return None,
    };
    Some(Kind::SetpInt {
        cmp: c,
        signed: ty.is_signed() && !unsigned,
        bits: ty.bits(),
    })
}

/// The kind of `cvt.DT.AT` between integer types without `.sat`.
pub(crate) fn cvt(m: &Mods) -> Option<Kind> {
    let ts = m.types();
    match ts.as_slice() {
        [dt, at] if dt.is_int() && at.is_int() && !m.has("sat") => Some(Kind::CvtInt {
            sbits: at.bits(),
            signed: at.is_signed(),
            dmask: mask(dt.bits()),
        }),
        _ => None,
    }
}

/// The kind of a contracted f32 `mul` + `add/sub` (`nx`: the product negated,
/// `nc`: the addend negated), without `.ftz`.
pub(crate) fn contracted(ty: Ty, ftz: bool, nx: bool, nc: bool) -> Option<Kind> {
    if ty != Ty::F32 || ftz {
        return None;
    }
    Some(match (nx, nc) {
        (false, false) => Kind::FmaF32,
        (false, true) => Kind::FmsF32,
        (true, false) => Kind::FnmaF32,
        (true, true) => return None,
    })
}

/// One register of every lane, or an immediate in every lane.
#[inline(always)]
pub(crate) fn row(regs: &[u64], s: Src) -> [u64; 32] {
    match s {
        Src::Reg(r) => {
            let mut v = [0u64; 32];
            v.copy_from_slice(&regs[r as usize * 32..r as usize * 32 + 32]);
            v
        }
        Src::Imm(v) => [v; 32],
    }
}

/// Source `s` as a row of 32 lanes: the register's own lanes, or `tmp` filled
/// with the immediate (no copy of a register row).
#[inline(always)]
fn src_row<'a>(regs: &'a [u64], s: Src, tmp: &'a mut Option<[u64; 32]>) -> &'a [u64; 32] {
    match s {
        Src::Reg(r) => {
            let r = r as usize * 32;
            (&regs[r..r + 32]).try_into().expect("32 lanes")
        }
        Src::Imm(v) => tmp.insert([v; 32]),
    }
}

#[inline(always)]
fn map(a: &[u64; 32], b: &[u64; 32], c: &[u64; 32], f: impl Fn(u64, u64, u64) -> u64) -> [u64; 32] {
    std::array::from_fn(|l| f(a[l], b[l], c[l]))
}

#[inline(always)]
fn icmp(c: ICmp, x: u64, y: u64) -> bool {
    match c {
        ICmp::Eq => x == y,
        ICmp::Ne => x != y,
        ICmp::Lt => x < y,
        ICmp::Le => x <= y,
        ICmp::Gt => x > y,
        ICmp::Ge => x >= y,
    }
}

#[inline(always)]
fn fcmp(c: FCmp, x: f32, y: f32) -> bool {
    let un = x.is_nan() || y.is_nan();
    match c {
        FCmp::Eq => x == y,
        FCmp::Ne => x != y && !un,
        FCmp::Lt => x < y,
        FCmp::Le => x <= y,
        FCmp::Gt => x > y,
        FCmp::Ge => x >= y,
        FCmp::Equ => x == y || un,
        FCmp::Neu => x != y,
        FCmp::Ltu => x < y || un,
        FCmp::Leu => x <= y || un,
        FCmp::Gtu => x > y || un,
        FCmp::Geu => x >= y || un,
        FCmp::Num => !un,
        FCmp::Nan => un,
    }
}

/// `op` in every lane, as the bits each lane's destination receives.
#[inline(always)]
fn compute(regs: &[u64], op: &WarpOp) -> [u64; 32] {
    let (mut ta, mut tb, mut tc) = (None, None, None);
    let a = src_row(regs, op.a, &mut ta);
    let b = src_row(regs, op.b, &mut tb);
    // Most kinds ignore `c`: an immediate there (the decoder's `Imm(0)`) is
    // then not spread over 32 lanes.
    let uses_c = matches!(
        op.kind,
        Kind::FmaF32
            | Kind::FmsF32
            | Kind::FnmaF32
            | Kind::MadLo(_)
            | Kind::MadWide { .. }
            | Kind::Selp
    );
    let c = if uses_c || matches!(op.c, Src::Reg(_)) {
        src_row(regs, op.c, &mut tc)
    } else {
        a
    };
    match op.kind {
        Kind::AddF32 => map(a, b, c, |x, y, _| bf32(f32b(x) + f32b(y))),
        Kind::SubF32 => map(a, b, c, |x, y, _| bf32(f32b(x) - f32b(y))),
        Kind::MulF32 => map(a, b, c, |x, y, _| bf32(f32b(x) * f32b(y))),
        Kind::FmaF32 => map(a, b, c, |x, y, z| bf32(f32b(x).mul_add(f32b(y), f32b(z)))),
        Kind::FmsF32 => map(a, b, c, |x, y, z| bf32(f32b(x).mul_add(f32b(y), -f32b(z)))),
        Kind::FnmaF32 => map(a, b, c, |x, y, z| {
            bf32((-f32b(x)).mul_add(f32b(y), f32b(z)))
        }),
        Kind::AbsF32 => map(a, b, c, |x, _, _| x & 0x7fff_ffff),
        Kind::NegF32 => map(a, b, c, |x, _, _| (x ^ 0x8000_0000) & 0xffff_ffff),
        Kind::MinF32 => map(a, b, c, |x, y, _| bf32(fmin32(f32b(x), f32b(y)))),
        Kind::MaxF32 => map(a, b, c, |x, y, _| bf32(fmax32(f32b(x), f32b(y)))),
        Kind::Add(m) => map(a, b, c, |x, y, _| x.wrapping_add(y) & m),
        Kind::Sub(m) => map(a, b, c, |x, y, _| x.wrapping_sub(y) & m),
        Kind::MulLo(m) => map(a, b, c, |x, y, _| x.wrapping_mul(y) & m),
        Kind::MadLo(m) => map(a, b, c, |x, y, z| x.wrapping_mul(y).wrapping_add(z) & m),
        Kind::And(m) => map(a, b, c, |x, y, _| x & y & m),
        Kind::Or(m) => map(a, b, c, |x, y, _| (x | y) & m),
        Kind::Xor(m) => map(a, b, c, |x, y, _| (x ^ y) & m),
        Kind::Not(m) => map(a, b, c, |x, _, _| !x & m),
        Kind::Mov(m) => map(a, b, c, |x, _, _| x & m),
        Kind::Shl(bits) => map(a, b, c, |x, y, _| {
            let s = y as u32;
            if s >= bits {
                0
            } else {
                (x << s) & mask(bits)
            }
        }),
        Kind::ShrU(bits) => map(a, b, c, |x, y, _| {
            let s = (y as u32).min(bits);
            if s >= bits {
                0
            } else {
                (x & mask(bits)) >> s
            }
        }),
        Kind::ShrS(bits) => map(a, b, c, |x, y, _| {
            let s = (y as u32).min(bits).min(63);
            ((sx(x, bits) >> s) as u64) & mask(bits)
        }),
        Kind::MulWide { signed: true } => map(a, b, c, |x, y, _| {
            (sx(x, 32).wrapping_mul(sx(y, 32))) as u64
        }),
        Kind::MulWide { signed: false } => map(a, b, c, |x, y, _| {
            (x & 0xffff_ffff).wrapping_mul(y & 0xffff_ffff)
        }),
        Kind::MadWide { signed: true } => map(a, b, c, |x, y, z| {
            (sx(x, 32).wrapping_mul(sx(y, 32)) as u64).wrapping_add(z)
        }),
        Kind::MadWide { signed: false } => map(a, b, c, |x, y, z| {
            (x & 0xffff_ffff)
                .wrapping_mul(y & 0xffff_ffff)
                .wrapping_add(z)
        }),
        Kind::Selp => map(a, b, c, |x, y, z| if z & 1 != 0 { x } else { y }),
        Kind::CvtInt {
            sbits,
            signed,
            dmask,
        } => map(a, b, c, |x, _, _| {
            let v = if signed {
                sx(x, sbits) as u64
            } else {
                x & mask(sbits)
            };
            v & dmask
        }),
        Kind::SetpInt { cmp, signed, bits } => {
            // Signed values compare as unsigned once their sign bit is flipped.
            let key = |x: u64| {
                if signed {
                    (sx(x, bits) as u64) ^ (1 << 63)
                } else {
                    x & mask(bits)
                }
            };
            map(a, b, c, |x, y, _| icmp(cmp, key(x), key(y)) as u64)
        }
        Kind::SetpF32(cmp) => map(a, b, c, |x, y, _| fcmp(cmp, f32b(x), f32b(y)) as u64),
    }
}

/// Writes `v` into register `d` of the lanes of `em`.
#[inline(always)]
pub(crate) fn put(regs: &mut [u64], d: u32, v: &[u64; 32], em: u32) {
    let dst = &mut regs[d as usize * 32..d as usize * 32 + 32];
    if em == u32::MAX {
        dst.copy_from_slice(v);
    } else {
        for (l, x) in dst.iter_mut().enumerate() {
            if em & (1 << l) != 0 {
                *x = v[l];
            }
        }
    }
}

#[inline(always)]
fn apply(regs: &mut [u64], op: &WarpOp, em: u32) {
    let v = compute(regs, op);
    put(regs, op.d, &v, em);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn apply_avx2_fma(regs: &mut [u64], op: &WarpOp, em: u32) {
    apply(regs, op, em)
}

/// What the CPU offers the warp loops, detected once ([`Simd::detect`]) so that
/// the per-instruction path does not ask again. Only this module can make one,
/// so a `Simd` that says AVX2 and FMA is always true.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Simd {
    avx2_fma: bool,
}

impl Simd {
    /// The features of this CPU.
    pub(crate) fn detect() -> Simd {
        #[cfg(target_arch = "x86_64")]
        let avx2_fma = std::arch::is_x86_feature_detected!("avx2")
            && std::arch::is_x86_feature_detected!("fma");
        #[cfg(not(target_arch = "x86_64"))]
        let avx2_fma = false;
        Simd { avx2_fma }
    }
}

/// Applies `op` to the lanes of `em` of a warp's register file
/// (`regs[r * 32 + lane]`), with AVX2 and FMA when `simd` has them.
#[inline]
pub(crate) fn exec(regs: &mut [u64], op: &WarpOp, em: u32, simd: Simd) {
    #[cfg(target_arch = "x86_64")]
    if simd.avx2_fma {
        // SAFETY: the CPU has both features (Simd::detect, the only constructor).
        unsafe { apply_avx2_fma(regs, op, em) };
        return;
    }
    let _ = simd;
    apply(regs, op, em)
}

#[cfg(test)]
mod tests {
    //! Every warp kind against the closure the decoder would build for the same
    //! instruction, over special and pseudo-random bits, all 32 lanes at once
    //! and under a partial mask.

    use super::*;
    use crate::program::AluFn;
    use crate::semantics;

    fn values() -> Vec<u64> {
        let mut v: Vec<u64> = vec![
            0,
            1,
            2,
            31,
            32,
            33,
            63,
            64,
            65,
            0x7fff_ffff,
            0x8000_0000,
            0xffff_ffff,
            0x1_0000_0000,
            u64::MAX,
            1 << 63,
            (1 << 63) - 1,
            0xffff_fffe,
        ];
        for f in [
            0.0f32,
            -0.0,
            1.0,
            -1.0,
            1.5,
            -2.75,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
            f32::MIN_POSITIVE,
            f32::from_bits(1),
            -f32::from_bits(3),
            f32::MAX,
            3.0e38,
            1.0e-38,
            0.1,
        ] {
            v.push(f.to_bits() as u64);
        }
        v.push(0xffc0_0001);
        let mut s = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..40 {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            v.push(s);
            v.push(s & 0xffff_ffff);
        }
        v
    }

    /// Runs `k` over many operand triples and compares each lane with `f`.
    fn check(name: &str, k: Kind, f: &dyn Fn(u64, u64, u64) -> u64) {
        let vals = values();
        let n = vals.len();
        let mut t = 0usize;
        for round in 0..(n * n * 2 / 32 + 1) {
            let mut regs = vec![0u64; 4 * 32];
            for l in 0..32 {
                t += 1;
                regs[l] = vals[t % n];
                regs[32 + l] = vals[(t / n + round) % n];
                regs[64 + l] = vals[(t * 7 + round * 3) % n];
                regs[96 + l] = 0xdead_beef;
            }
            let em = if round % 3 == 0 {
                0x5a5a_f00f
            } else {
                u32::MAX
            };
            let op = WarpOp {
                kind: k,
                d: 3,
                a: Src::Reg(0),
                b: Src::Reg(1),
                c: Src::Reg(2),
            };
            let before = regs.clone();
            exec(&mut regs, &op, em, Simd::detect());
            for l in 0..32 {
                let (x, y, z) = (before[l], before[32 + l], before[64 + l]);
                let want = if em & (1 << l) != 0 {
                    f(x, y, z)
                } else {
                    0xdead_beef
                };
                assert_eq!(
                    regs[96 + l],
                    want,
                    "{name} ({k:?}) lane {l}: a={x:#x} b={y:#x} c={z:#x}"
                );
            }
        }
    }

    fn mods(text: &str) -> (String, Vec<String>) {
        let mut parts = text.split('.').map(str::to_string);
        let op = parts.next().unwrap();
        (op, parts.collect())
    }

    #[test]
    fn alu_kinds_match_the_general_closures() {
        let insts = [
            "add.f32",
            "add.rn.f32",
            "sub.f32",
            "mul.rn.f32",
            "fma.rn.f32",
            "mad.rn.f32",
            "abs.f32",
            "neg.f32",
            "min.f32",
            "max.f32",
            "add.s32",
            "add.u64",
            "add.s16",
            "sub.s32",
            "sub.s64",
            "mul.lo.s32",
            "mul.lo.u64",
            "mad.lo.s32",
            "mad.lo.u64",
            "mul.wide.s32",
            "mul.wide.u32",
            "mad.wide.s32",
            "mad.wide.u32",
            "and.b32",
            "and.pred",
            "or.b64",
            "or.pred",
            "xor.b32",
            "xor.pred",
            "not.b32",
            "not.pred",
            "mov.u32",
            "mov.f32",
            "mov.b64",
            "mov.pred",
            "shl.b32",
            "shl.b64",
            "shr.u32",
            "shr.s32",
            "shr.s64",
            "shr.u64",
            "shr.s16",
            "selp.f32",
            "selp.b64",
        ];
        for text in insts {
            let (op, m) = mods(text);
            let mm = Mods(&m);
            let (f, _): (AluFn, _) = semantics::alu(&op, &mm).unwrap();
            let k = alu(&op, &mm).unwrap_or_else(|| panic!("{text} has no warp kind"));
            check(text, k, &|a, b, c| f(a, b, c));
        }
        // Forms that must stay on the general path.
        for text in [
            "add.rz.f32",
            "add.sat.s32",
            "mul.hi.s32",
            "fma.rn.ftz.f32",
            "add.f64",
        ] {
            let (op, m) = mods(text);
            assert_eq!(alu(&op, &Mods(&m)), None, "{text}");
        }
    }

    #[test]
    fn setp_kinds_match_the_general_comparisons() {
        for ty in ["s32", "u32", "s64", "u64", "b32", "s16", "f32"] {
            let t = Ty::parse(ty).unwrap();
            for cmp in [
                "eq", "ne", "lt", "le", "gt", "ge", "lo", "ls", "hi", "hs", "equ", "neu", "ltu",
                "leu", "gtu", "geu", "num", "nan",
            ] {
                let Ok(g) = semantics::compare(cmp, t, false) else {
                    continue;
                };
                let k = setp(cmp, t, false)
                    .unwrap_or_else(|| panic!("setp.{cmp}.{ty} has no warp kind"));
                check(&format!("setp.{cmp}.{ty}"), k, &|a, b, _| g(a, b) as u64);
            }
        }
        assert_eq!(setp("lt", Ty::F32, true), None);
        assert_eq!(setp("lt", Ty::F64, false), None);
    }

    #[test]
    fn cvt_and_contracted_kinds_match_the_general_closures() {
        for text in [
            "cvt.s64.s32",
            "cvt.u64.u32",
            "cvt.u32.u64",
            "cvt.s32.s64",
            "cvt.u16.u32",
            "cvt.s32.s16",
            "cvt.u32.s8",
        ] {
            let (_, m) = mods(text);
            let (f, _) = semantics::cvt(&Mods(&m)).unwrap();
            let k = cvt(&Mods(&m)).unwrap_or_else(|| panic!("{text} has no warp kind"));
            check(text, k, &|a, b, c| f(a, b, c));
        }
        assert_eq!(cvt(&Mods(&["sat".into(), "s8".into(), "s32".into()])), None);
        assert_eq!(cvt(&Mods(&["rn".into(), "f32".into(), "s32".into()])), None);
        for (nx, nc) in [(false, false), (false, true), (true, false)] {
            let f = semantics::contracted(Ty::F32, false, nx, nc);
            let k = contracted(Ty::F32, false, nx, nc).unwrap();
            check(&format!("contracted {nx} {nc}"), k, &|a, b, c| f(a, b, c));
        }
        assert_eq!(contracted(Ty::F32, true, false, false), None);
        assert_eq!(contracted(Ty::F64, false, false, false), None);
    }
}
