//! The integer bit-manipulation and packed-integer instructions, each written
//! from the pseudocode of its PTX ISA section: `shf` (funnel shift), `bfe`,
//! `bfi`, `bmsk`, `szext`, `prmt` (every mode), `lop3`, `fns`, `dp4a`, `dp2a`.
//!
//! Each is a pure function of the source bits; [`alu`] picks the closure for an
//! instruction's modifiers once, at decode time.

use crate::modifiers::Mods;
use crate::program::AluFn;
use crate::types::{mask, Ty};
pub(crate) use vgpu_ir::cfg::PrmtMode;

/// The closure and source types of a bit instruction, or `None` when `op` is
/// not one of this module's (`lop3` and `bfi` take more operands than the
/// closure form and are decoded by the caller with [`lop3`] and [`bfi`]).
pub(crate) fn alu(op: &str, m: &Mods) -> Option<Result<(AluFn, Vec<Ty>), String>> {
    Some(match op {
        "shf" => shf_closure(m),
        "bmsk" => mode(m, "bmsk").map(|clamp| {
            let f: AluFn = Box::new(move |a, b, _| bmsk(a as u32, b as u32, clamp) as u64);
            (f, vec![Ty::B32, Ty::U32])
        }),
        "szext" => mode(m, "szext").and_then(|clamp| {
            let signed = match m.ty() {
                Some(Ty::S32) => true,
                Some(Ty::U32) => false,
                _ => return Err("szext needs .s32 or .u32".into()),
            };
            let f: AluFn = Box::new(move |a, b, _| szext(a as u32, b as u32, clamp, signed) as u64);
            Ok((f, vec![Ty::B32, Ty::U32]))
        }),
        "fns" => {
            let f: AluFn =
                Box::new(|m, base, off| fns(m as u32, base as u32, off as u32 as i32) as u64);
            Ok((f, vec![Ty::B32, Ty::U32, Ty::S32]))
        }
        "dp4a" | "dp2a" => dp_closure(op, m),
        "bfe" => match m.ty() {
            Some(ty @ (Ty::U32 | Ty::S32 | Ty::U64 | Ty::S64)) => {
                let (bits, signed) = (ty.bits(), ty.is_signed());
                let f: AluFn = Box::new(move |a, b, c| bfe(a, b, c, bits, signed));
                Ok((f, vec![ty, Ty::U32, Ty::U32]))
            }
            _ => Err("bfe needs .u32, .s32, .u64 or .s64".into()),
        },
        _ => return None,
    })
}

/// `.clamp` (true) or `.wrap` (false); one of them is required.
fn mode(m: &Mods, op: &str) -> Result<bool, String> {
    match (m.has("clamp"), m.has("wrap")) {
        (true, false) => Ok(true),
        (false, true) => Ok(false),
        _ => Err(format!("{op} needs exactly one of .clamp and .wrap")),
    }
}

fn shf_closure(m: &Mods) -> Result<(AluFn, Vec<Ty>), String> {
    let clamp = mode(m, "shf")?;
    let left = match (m.has("l"), m.has("r")) {
        (true, false) => true,
        (false, true) => false,
        _ => return Err("shf needs exactly one of .l and .r".into()),
    };
    if m.ty().map(|t| t.bits()) != Some(32) {
        return Err("shf needs .b32".into());
    }
    let f: AluFn = Box::new(move |a, b, c| shf(a as u32, b as u32, c as u32, left, clamp) as u64);
    Ok((f, vec![Ty::B32, Ty::B32, Ty::U32]))
}

fn dp_closure(op: &str, m: &Mods) -> Result<(AluFn, Vec<Ty>), String> {
    let tys = m.types();
    let [at, bt] = tys[..] else {
        return Err(format!("{op} needs two types (.atype.btype)"));
    };
    let signed = |t: Ty| match t {
        Ty::S32 => Ok(true),
        Ty::U32 => Ok(false),
        _ => Err(format!("{op}: types are .u32 or .s32")),
    };
    let (sa, sb) = (signed(at)?, signed(bt)?);
    let ct = if sa || sb { Ty::S32 } else { Ty::U32 };
    let f: AluFn = if op == "dp4a" {
        Box::new(move |a, b, c| dp4a(a as u32, b as u32, c as u32, sa, sb) as u64)
    } else {
        let hi = match (m.has("lo"), m.has("hi")) {
            (true, false) => false,
            (false, true) => true,
            _ => return Err("dp2a needs exactly one of .lo and .hi".into()),
        };
        Box::new(move |a, b, c| dp2a(a as u32, b as u32, c as u32, sa, sb, hi) as u64)
    };
    Ok((f, vec![Ty::B32, Ty::B32, ct]))
}

/// `shf.{l,r}.{clamp,wrap}.b32`: shift the 64-bit `{b, a}` by `n` (`min(c, 32)`
/// clamped, `c & 31` wrapped); `.l` keeps the high 32 bits, `.r` the low.
pub(crate) fn shf(a: u32, b: u32, c: u32, left: bool, clamp: bool) -> u32 {
    let n = if clamp { c.min(32) } else { c & 0x1f };
    let x = ((b as u64) << 32) | a as u64;
    if left {
        ((x << n) >> 32) as u32
    } else {
        (x >> n) as u32
    }
}

/// `bfe`: the field of `len` bits (`c & 0xff`) at `pos` (`b & 0xff`) of `a`,
/// zero- or sign-extended (the sign bit is the field's last bit inside `a`).
pub(crate) fn bfe(a: u64, b: u64, c: u64, bits: u32, signed: bool) -> u64 {
    let msb = bits - 1;
    let pos = (b & 0xff) as u32;
    let len = (c & 0xff) as u32;
    let x = a & mask(bits);
    let sbit = if !signed || len == 0 {
        0
    } else {
        (x >> (pos + len - 1).min(msb)) & 1
    };
    let mut d = 0u64;
    for i in 0..=msb {
        let bit = if i < len && pos + i <= msb {
            (x >> (pos + i)) & 1
        } else {
            sbit
        };
        d |= bit << i;
    }
    d
}

/// `bfi`: `b` with the low `len` bits of `a` inserted at `pos` (both `& 0xff`);
/// the part of the field past the msb is dropped.
pub(crate) fn bfi(a: u64, b: u64, pos: u64, len: u64, bits: u32) -> u64 {
    let pos = (pos & 0xff) as u32;
    let len = (len & 0xff) as u32;
    let mut d = b & mask(bits);
    let mut i = 0;
    while i < len && pos + i < bits {
        let p = pos + i;
        d = (d & !(1u64 << p)) | (((a >> i) & 1) << p);
        i += 1;
    }
    d
}

/// `bmsk.{clamp,wrap}.b32`: a mask of `b` bits starting at bit `a`.
pub(crate) fn bmsk(a: u32, b: u32, clamp: bool) -> u32 {
    let a1 = a & 0x1f;
    let b1 = b & 0x1f;
    let mut mask0 = !0u32 << a1;
    let sum = a1 + b1;
    let mut overflow = sum >= 32;
    if clamp {
        if a >= 32 {
            overflow = true;
            mask0 = 0;
        }
        if b >= 32 {
            overflow = true;
        }
    }
    let mask1 = if overflow {
        0
    } else if b1 == 0 {
        !0
    } else {
        !0u32 << sum
    };
    mask0 & !mask1
}

/// `szext.{clamp,wrap}.{s32,u32}`: the low `b` bits of `a`, sign- or
/// zero-extended to 32 bits.
pub(crate) fn szext(a: u32, b: u32, clamp: bool, signed: bool) -> u32 {
    let b1 = b & 0x1f;
    let too_large = b >= 32 && clamp;
    let m = if too_large { 0 } else { !0u32 << b1 };
    let sign_pos = b1.wrapping_sub(1) & 0x1f;
    let sign = !(b1 == 0 || too_large || !signed) && (a >> sign_pos) & 1 == 1;
    (a & !m) | if sign { m } else { 0 }
}

/// `fns.b32`: the position of the `|offset|`-th set bit of `mask` counting from
/// bit `base` upwards (offset > 0) or downwards (< 0), `base` itself included;
/// offset 0 asks whether bit `base` is set. 0xffffffff when there is none. The
/// ISA leaves `base > 31` undefined; here no bit is found then.
pub(crate) fn fns(mask: u32, base: u32, offset: i32) -> u32 {
    if base > 31 {
        return u32::MAX;
    }
    if offset == 0 {
        return if (mask >> base) & 1 == 1 {
            base
        } else {
            u32::MAX
        };
    }
    let mut count = offset.unsigned_abs() - 1;
    let mut pos = base as i32;
    let inc = if offset > 0 { 1 } else { -1 };
    while (0..32).contains(&pos) {
        if (mask >> pos) & 1 == 1 {
            if count == 0 {
                return pos as u32;
            }
            count -= 1;
        }
        pos += inc;
    }
    u32::MAX
}

/// Byte `i` of `x`, sign- or zero-extended.
fn byte(x: u32, i: u32, signed: bool) -> i64 {
    let v = (x >> (8 * i)) as u8;
    if signed {
        v as i8 as i64
    } else {
        v as i64
    }
}

/// Half `i` of `x`, sign- or zero-extended.
fn half(x: u32, i: u32, signed: bool) -> i64 {
    let v = (x >> (16 * i)) as u16;
    if signed {
        v as i16 as i64
    } else {
        v as i64
    }
}

/// `dp4a.atype.btype`: `c` plus the dot product of the four bytes of `a` and `b`,
/// modulo 2^32.
pub(crate) fn dp4a(a: u32, b: u32, c: u32, sa: bool, sb: bool) -> u32 {
    (0..4).fold(c, |d, i| {
        d.wrapping_add((byte(a, i, sa) * byte(b, i, sb)) as u32)
    })
}

/// `dp2a.{lo,hi}.atype.btype`: `c` plus the dot product of the two halves of
/// `a` and bytes 0,1 (`.lo`) or 2,3 (`.hi`) of `b`, modulo 2^32.
pub(crate) fn dp2a(a: u32, b: u32, c: u32, sa: bool, sb: bool, hi: bool) -> u32 {
    let sel = if hi { 2 } else { 0 };
    (0..2).fold(c, |d, i| {
        d.wrapping_add((half(a, i, sa) * byte(b, sel + i, sb)) as u32)
    })
}

/// `lop3.b32`: bit `i` of the result is bit `(a_i << 2) | (b_i << 1) | c_i` of
/// the look-up table `lut` (so `lut = F(0xF0, 0xCC, 0xAA)` computes `F`).
pub(crate) fn lop3(a: u32, b: u32, c: u32, lut: u8) -> u32 {
    (0..8).filter(|j| (lut >> j) & 1 == 1).fold(0, |d, j| {
        let pick = |x: u32, bit: u32| if (j >> bit) & 1 == 1 { x } else { !x };
        d | (pick(a, 2) & pick(b, 1) & pick(c, 0))
    })
}

/// The mode of a `prmt` among an instruction's modifiers (none: generic):
/// the IR's [`PrmtMode`], so the interpreter and the GPU lowering read it alike.
pub(crate) fn prmt_mode(m: &Mods) -> PrmtMode {
    for (name, mode) in [
        ("f4e", PrmtMode::F4e),
        ("b4e", PrmtMode::B4e),
        ("rc8", PrmtMode::Rc8),
        ("ecl", PrmtMode::Ecl),
        ("ecr", PrmtMode::Ecr),
        ("rc16", PrmtMode::Rc16),
    ] {
        if m.has(name) {
            return mode;
        }
    }
    PrmtMode::Generic
}

/// `prmt.b32{.mode}`: four bytes picked from `{b, a}` (bytes 0..3 of `a`, 4..7
/// of `b`). With a mode, `c[1:0]` selects one row of the ISA's table, which
/// gives the source byte of destination bytes 0..3.
pub(crate) fn prmt(a: u32, b: u32, c: u32, mode: PrmtMode) -> u32 {
    let x = ((b as u64) << 32) | a as u64;
    let byte = |i: u32| ((x >> (8 * (i & 7))) & 0xff) as u32;
    if mode == PrmtMode::Generic {
        return (0..4).fold(0, |d, k| {
            let s = (c >> (4 * k)) & 0xf;
            let v = byte(s & 7);
            let v = if s & 8 != 0 && v & 0x80 != 0 {
                0xff
            } else if s & 8 != 0 {
                0
            } else {
                v
            };
            d | (v << (8 * k))
        });
    }
    let s = c & 3;
    let idx: [u32; 4] = match mode {
        PrmtMode::F4e => [s, s + 1, s + 2, s + 3],
        PrmtMode::B4e => [s, (s + 7) & 7, (s + 6) & 7, (s + 5) & 7],
        PrmtMode::Rc8 => [s; 4],
        PrmtMode::Ecl => [s, s.max(1), s.max(2), 3],
        PrmtMode::Ecr => [0, s.min(1), s.min(2), s],
        PrmtMode::Rc16 | PrmtMode::Generic => {
            let h = 2 * (s & 1);
            [h, h + 1, h, h + 1]
        }
    };
    idx.iter()
        .enumerate()
        .fold(0, |d, (k, &i)| d | (byte(i) << (8 * k)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shf_wrap_and_clamp() {
        let (a, b) = (0x89ab_cdef, 0x0123_4567);
        assert_eq!(shf(a, b, 0, true, false), b);
        assert_eq!(shf(a, b, 0, false, false), a);
        assert_eq!(shf(a, b, 8, true, false), 0x2345_6789);
        assert_eq!(shf(a, b, 8, false, false), 0x6789_abcd);
        // Clamp: 32 and beyond shift the whole word across.
        assert_eq!(shf(a, b, 32, true, true), a);
        assert_eq!(shf(a, b, 32, false, true), b);
        assert_eq!(shf(a, b, 1000, true, true), a);
        assert_eq!(shf(a, b, u32::MAX, false, true), b);
        // Wrap: the amount is taken modulo 32.
        assert_eq!(shf(a, b, 32, true, false), b);
        assert_eq!(shf(a, b, 40, true, false), 0x2345_6789);
        assert_eq!(shf(a, b, 33, false, false), shf(a, b, 1, false, false));
        // A rotate is a funnel shift of a word with itself.
        assert_eq!(shf(0x8000_0001, 0x8000_0001, 4, true, false), 0x0000_0018);
    }

    #[test]
    fn bfe_from_the_isa() {
        assert_eq!(bfe(0xabcd_1234, 8, 8, 32, false), 0x12);
        assert_eq!(bfe(0x0000_f000, 12, 4, 32, true), 0xffff_ffff);
        assert_eq!(bfe(0x0000_7000, 12, 4, 32, true), 7);
        // Length 0: zero, even signed.
        assert_eq!(bfe(u64::MAX, 4, 0, 32, true), 0);
        // The field runs past the msb: the sign is the input's msb.
        assert_eq!(bfe(0x8000_0000, 28, 8, 32, true), 0xffff_fff8);
        assert_eq!(bfe(0x8000_0000, 28, 8, 32, false), 0x8);
        // Start beyond the msb: all sign bits (the msb of the input).
        assert_eq!(bfe(0x8000_0000, 40, 3, 32, true), 0xffff_ffff);
        assert_eq!(bfe(0x8000_0000, 40, 3, 32, false), 0);
        // Position and length use only their low 8 bits.
        assert_eq!(bfe(0xabcd_1234, 0x108, 0x208, 32, false), 0x12);
        assert_eq!(bfe(0x8000_0000_0000_0000, 60, 4, 64, true), u64::MAX - 7);
        assert_eq!(bfe(0xf0, 4, 64, 64, false), 0xf);
    }

    #[test]
    fn bfi_from_the_isa() {
        assert_eq!(bfi(0xff, 0x1234_5678, 4, 8, 32), 0x1234_5ff8);
        assert_eq!(bfi(0xff, 0x1234_5678, 4, 0, 32), 0x1234_5678);
        assert_eq!(bfi(0xff, 0x1234_5678, 32, 8, 32), 0x1234_5678);
        assert_eq!(bfi(0xff, 0x1234_5678, 28, 8, 32), 0xf234_5678);
        assert_eq!(bfi(0xff, 0x1234_5678, 0x104, 8, 32), 0x1234_5ff8);
        assert_eq!(bfi(1, 0, 63, 1, 64), 1 << 63);
    }

    #[test]
    fn bmsk_from_the_isa() {
        assert_eq!(bmsk(1, 2, false), 0x6);
        assert_eq!(bmsk(0, 32, true), 0xffff_ffff);
        assert_eq!(bmsk(0, 32, false), 0);
        assert_eq!(bmsk(4, 0, false), 0);
        assert_eq!(bmsk(28, 8, false), 0xf000_0000);
        assert_eq!(bmsk(32, 4, true), 0);
        assert_eq!(bmsk(32, 4, false), 0xf);
        assert_eq!(bmsk(8, 40, true), 0xffff_ff00);
        assert_eq!(bmsk(8, 40, false), 0xff00);
    }

    #[test]
    fn szext_from_the_isa() {
        assert_eq!(szext(0xffff_ffff, 0, false, false), 0);
        assert_eq!(szext(0xffff_ffff, 0, true, true), 0);
        assert_eq!(szext(0x0000_00f0, 8, false, true), 0xffff_fff0);
        assert_eq!(szext(0x0000_00f0, 8, false, false), 0xf0);
        assert_eq!(szext(0x0000_0070, 8, true, true), 0x70);
        assert_eq!(szext(0x1234_5678, 32, true, true), 0x1234_5678);
        assert_eq!(szext(0x1234_5678, 40, true, false), 0x1234_5678);
        // Wrapped: 32 is 0, 40 is 8.
        assert_eq!(szext(0x1234_5678, 32, false, true), 0);
        assert_eq!(szext(0x1234_56f8, 40, false, true), 0xffff_fff8);
    }

    #[test]
    fn fns_from_the_isa() {
        assert_eq!(fns(0xaaaa_aaaa, 3, 1), 3);
        assert_eq!(fns(0xaaaa_aaaa, 3, -1), 3);
        assert_eq!(fns(0xaaaa_aaaa, 2, 1), 3);
        assert_eq!(fns(0xaaaa_aaaa, 2, -1), 1);
        assert_eq!(fns(0xaaaa_aaaa, 0, 3), 5);
        assert_eq!(fns(0xaaaa_aaaa, 31, -2), 29);
        assert_eq!(fns(0xaaaa_aaaa, 2, 0), u32::MAX);
        assert_eq!(fns(0xaaaa_aaaa, 3, 0), 3);
        assert_eq!(fns(0xaaaa_aaaa, 0, 17), u32::MAX);
        assert_eq!(fns(0, 0, 1), u32::MAX);
        assert_eq!(fns(u32::MAX, 32, 1), u32::MAX);
        assert_eq!(fns(1, 0, i32::MIN), u32::MAX);
    }

    #[test]
    fn dp4a_every_signedness() {
        let (a, b) = (0x80ff_0102, 0x7f02_ff03);
        // Bytes of a: 02 01 ff 80; of b: 03 ff 02 7f (byte 0 first).
        let u = 2 * 3 + 255 + 255 * 2 + 128 * 127;
        assert_eq!(dp4a(a, b, 10, false, false), 10 + u);
        let ss = 2 * 3 - 1 - 2 - 128 * 127;
        assert_eq!(dp4a(a, b, 10, true, true), (10 + ss) as u32);
        let su = 2 * 3 + 255 - 2 - 128 * 127;
        assert_eq!(dp4a(a, b, 10, true, false), (10 + su) as u32);
        let us = 2 * 3 - 1 + 255 * 2 + 128 * 127;
        assert_eq!(dp4a(a, b, 10, false, true), (10 + us) as u32);
        // The accumulation wraps modulo 2^32.
        assert_eq!(
            dp4a(0xffff_ffff, 0xffff_ffff, u32::MAX, false, false),
            4 * 255 * 255 - 1
        );
    }

    #[test]
    fn dp2a_lo_hi_every_signedness() {
        let (a, b) = (0xffff_0003, 0x80_7f_ff_02);
        // Halves of a: 3, 0xffff; bytes of b: 02 ff 7f 80.
        assert_eq!(dp2a(a, b, 1, false, false, false), 1 + 3 * 2 + 65535 * 255);
        assert_eq!(dp2a(a, b, 1, true, true, false), (1 + 6 - (-1i32)) as u32);
        assert_eq!(dp2a(a, b, 1, false, false, true), 1 + 3 * 127 + 65535 * 128);
        assert_eq!(dp2a(a, b, 1, true, true, true), (1 + 3 * 127 + 128) as u32);
        assert_eq!(dp2a(a, b, 0, true, false, true), (3 * 127 - 128) as u32);
        assert_eq!(
            dp2a(a, b, 0, false, true, true),
            (3 * 127 + 65535 * -128) as u32
        );
    }

    #[test]
    fn lop3_tables_from_the_isa() {
        let (a, b, c) = (0x1234_5678u32, 0x9abc_def0u32, 0x0f0f_3c3cu32);
        assert_eq!(lop3(a, b, c, 0x80), a & b & c);
        assert_eq!(lop3(a, b, c, 0xfe), a | b | c);
        assert_eq!(lop3(a, b, c, 0x40), a & b & !c);
        assert_eq!(lop3(a, b, c, 0x1a), ((a & b) | c) ^ a);
        assert_eq!(lop3(a, b, c, 0x96), a ^ b ^ c);
        assert_eq!(lop3(a, b, c, 0xf0), a);
        assert_eq!(lop3(a, b, c, 0xcc), b);
        assert_eq!(lop3(a, b, c, 0xaa), c);
        assert_eq!(lop3(a, b, c, 0), 0);
        assert_eq!(lop3(a, b, c, 0xff), u32::MAX);
        // Every table, on the three constants, gives itself.
        for lut in 0..=255u8 {
            assert_eq!(lop3(0xf0, 0xcc, 0xaa, lut) & 0xff, lut as u32);
        }
    }

    #[test]
    fn prmt_generic_and_every_mode() {
        let (a, b) = (0x3322_1100, 0x7766_5544);
        assert_eq!(prmt(a, b, 0x4210, PrmtMode::Generic), 0x4422_1100);
        assert_eq!(prmt(a, b, 0x7531, PrmtMode::Generic), 0x7755_3311);
        assert_eq!(prmt(0x80, 0, 0x8888, PrmtMode::Generic), 0xffff_ffff);
        assert_eq!(prmt(0x7f, 0, 0x8888, PrmtMode::Generic), 0);
        // Only c[15:0] selects.
        assert_eq!(prmt(a, b, 0xffff_3210, PrmtMode::Generic), a);
        // The ISA's table, row by row: destination bytes 3 2 1 0 as source bytes.
        let row = |m, s: u32| {
            let d = prmt(a, b, s, m);
            [d >> 28, (d >> 20) & 0xf, (d >> 12) & 0xf, (d >> 4) & 0xf]
        };
        use PrmtMode::*;
        let table: [(PrmtMode, [[u32; 4]; 4]); 6] = [
            (
                F4e,
                [[3, 2, 1, 0], [4, 3, 2, 1], [5, 4, 3, 2], [6, 5, 4, 3]],
            ),
            (
                B4e,
                [[5, 6, 7, 0], [6, 7, 0, 1], [7, 0, 1, 2], [0, 1, 2, 3]],
            ),
            (
                Rc8,
                [[0, 0, 0, 0], [1, 1, 1, 1], [2, 2, 2, 2], [3, 3, 3, 3]],
            ),
            (
                Ecl,
                [[3, 2, 1, 0], [3, 2, 1, 1], [3, 2, 2, 2], [3, 3, 3, 3]],
            ),
            (
                Ecr,
                [[0, 0, 0, 0], [1, 1, 1, 0], [2, 2, 1, 0], [3, 2, 1, 0]],
            ),
            (
                Rc16,
                [[1, 0, 1, 0], [3, 2, 3, 2], [1, 0, 1, 0], [3, 2, 3, 2]],
            ),
        ];
        for (m, rows) in table {
            for (s, want) in rows.iter().enumerate() {
                assert_eq!(row(m, s as u32), *want, "{m:?} c={s}");
                // Only c[1:0] selects, and no sign replication in the modes.
                assert_eq!(row(m, s as u32 | 0xfff8), *want, "{m:?} c={s}|0xfff8");
            }
        }
    }
}
