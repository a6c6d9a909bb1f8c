//! WGSL for the f64 operations whose WGSL counterparts need not be exact:
//! `fma` (WGSL's need not be fused: lavapipe's rounds twice), `÷` and `√` (need
//! not be correctly rounded), `setp`, and the conversions with a rounding mode
//! (`cvt.rni.s32.f64`, `cvt.rz.f32.f64`, `cvt.rm.f64.s64` …). Every one is
//! computed on the integer bits only, in `u64` (the f64 path already needs
//! SHADER_INT64), so no result depends on the device's float unit, its
//! subnormal mode or its `fma`:
//!
//! * `xround` rounds an exact value `m · 2^(e−63)` (`m`'s bit 63 set, `st`
//!   saying that nonzero bits lie below `m`) once, to f64 or f32 in any of the
//!   four modes, subnormal results and overflow included: the bits kept, the
//!   bits below them compared with half a unit, then one increment of the
//!   packed result (a carry into the exponent is the next binade, or ∞).
//! * `fma64`: the 106-bit product `ma·mb` exact in 128 bits, the addend
//!   aligned to it, one `xround`. Both significands sit at bits 126…, with
//!   at least 21 zero bits below (a product of two 53-bit significands, an
//!   addend of 53 bits), so an alignment shift of up to 21 bits is exact; a
//!   longer one ORs the bits shifted out into the lowest bit ("sticky"). That
//!   is exact for the rounding: the sum then has at least 125 significant
//!   bits, the lowest bit is odd exactly when bits were lost, and the true sum
//!   and the computed one lie strictly inside the same interval between two
//!   consecutive even numbers of that unit, which holds no rounding boundary
//!   of a 53-bit (or shorter) result.
//! * `div64`: 64 quotient bits of restoring long division of the 53-bit
//!   significands (the remainder below `2^54`), the remainder's being nonzero
//!   the sticky bit: the quotient truncated, exact to one unit of bit 0.
//! * `sqrt64`: 56 root bits of the digit-by-digit integer square root of
//!   `m · 2^58` (`m` of 53 or 54 bits, the exponent made even; remainder
//!   `≤ 2q < 2^57`): `⌊√⌋` exactly, the remainder's being nonzero the sticky bit.
//! * The directed `add/sub/mul/fma/div/rcp/sqrt.{rz,rm,rp}.f64`: the same
//!   sequences with `xround`'s mode (`fma64m`, `div64m`, `sqrt64m`); `add64m`
//!   is `a · 1 + b`, `mul64m` is `a · b + 0` with a zero result signed by
//!   the operands (IEEE 754's `−0 · 1 = −0`, where the sum would give `+0`).
//! * `fcmp64` compares sign-magnitude bits as integers (±0 equal, NaN by the
//!   bits); `f64_to_int` and `f64_rint` round the magnitude with the integer
//!   mode from the bits below the binary point.

use super::writer::KernelWriter;
use crate::cfg::{
    BinOp, CvtOp, F64Bin, F64Cvt, F64Un, FloatRound, Inst, IntRound, Stmt, TernOp, UnOp, Val,
};

/// Whether `s` needs [`FLOAT64_EXACT_PRELUDE`].
pub(super) fn uses(s: &Stmt) -> bool {
    match s.inst {
        Inst::Un {
            op: UnOp::F64(op), ..
        } => matches!(
            op,
            F64Un::Sqrt | F64Un::Rcp | F64Un::Rsqrt | F64Un::SqrtRound(_) | F64Un::RcpRound(_)
        ),
        Inst::Bin {
            op: BinOp::F64(op), ..
        } => matches!(
            op,
            F64Bin::Div
                | F64Bin::Setp(_)
                | F64Bin::AddRound(_)
                | F64Bin::SubRound(_)
                | F64Bin::MulRound(_)
                | F64Bin::DivRound(_)
        ),
        Inst::Tern {
            op: TernOp::FmaF64 { .. },
            ..
        } => true,
        Inst::Cvt {
            op: CvtOp::F64(op), ..
        } => !matches!(
            op,
            F64Cvt::FromI32 { .. } | F64Cvt::FromI64Rn { .. } | F64Cvt::FromF32 | F64Cvt::ToF32Rn
        ),
        _ => false,
    }
}

/// The integer helpers (module comment), emitted after the f64 prelude when
/// a statement [`uses`] them. Rounding modes are [`IntRound`]'s codes
/// (0 toward zero, 1 nearest even, 2 down, 3 up).
pub(super) const FLOAT64_EXACT_PRELUDE: &str = r#"
struct U128 { hi: u64, lo: u64 }
struct XN { m: u64, e: i32 }
fn xu(x: vec2<u32>) -> u64 { return u64(x.x) | (u64(x.y) << 32u); }
fn xv(u: u64) -> vec2<u32> { return vec2<u32>(u32(u & 0xfffffffflu), u32(u >> 32u)); }
fn xnan(u: u64) -> bool { return (u & 0x7ffffffffffffffflu) > 0x7ff0000000000000lu; }
fn xclz(x: u64) -> u32 {
  let h = u32(x >> 32u);
  return select(countLeadingZeros(h), 32u + countLeadingZeros(u32(x & 0xfffffffflu)), h == 0u);
}
// |u| (f64 bits, finite, nonzero) as m * 2^(e - 63) with bit 63 of m set.
fn xnorm(u: u64) -> XN {
  let f = i32((u >> 52u) & 0x7fflu);
  var m = u & 0xffffffffffffflu;
  var e = -1022;
  if (f != 0) { m = m | 0x10000000000000lu; e = f - 1023; }
  let z = xclz(m);
  return XN(m << z, e + 11 - i32(z));
}
// (-1)^neg * m * 2^(e - 63), m's bit 63 set, st: nonzero bits lie below m (the
// value strictly between m and m + 1 units), rounded once in mode md to the
// format of p significand bits (53: f64, 24: f32) and exponents up to emax:
// the bits of the result in the low 64 (f64) or 32 (f32) bits.
fn xround(neg: bool, e: i32, m: u64, st: bool, md: u32, p: u32, emax: i32) -> u64 {
  let sg = select(0lu, 1lu << (p + select(7u, 10u, p == 53u)), neg);
  let away = (md == 3u && !neg) || (md == 2u && neg);
  let inf = u64(2 * emax + 1) << (p - 1u);
  if (e > emax) { return sg | select(inf - 1lu, inf, md == 1u || away); }
  var base = 0lu;
  var sh = 64u - p;
  if (e >= 1 - emax) { base = u64(e + emax - 1) << (p - 1u); } else { sh = sh + u32(1 - emax - e); }
  // keep: the bits of the result; rest: those below, half: half a unit of keep.
  var keep = 0lu;
  var rest = select(0lu, 1lu, m != 0lu);
  var half = 0x8000000000000000lu;
  if (sh < 64u) {
    keep = m >> sh;
    rest = m & ((1lu << sh) - 1lu);
    half = 1lu << (sh - 1u);
  } else if (sh == 64u) {
    rest = m;
  }
  var up = false;
  if (md == 1u) {
    up = rest > half || (rest == half && (st || (keep & 1lu) != 0lu));
  } else {
    up = away && (rest != 0lu || st);
  }
  return sg | (base + keep + select(0lu, 1lu, up));
}
fn xround64(neg: bool, e: i32, m: u64, st: bool, md: u32) -> u64 {
  return xround(neg, e, m, st, md, 53u, 1023);
}
fn xmul(a: u64, b: u64) -> U128 {
  let a0 = a & 0xfffffffflu; let a1 = a >> 32u;
  let b0 = b & 0xfffffffflu; let b1 = b >> 32u;
  let p00 = a0 * b0; let p01 = a0 * b1; let p10 = a1 * b0; let p11 = a1 * b1;
  let mid = (p00 >> 32u) + (p01 & 0xfffffffflu) + (p10 & 0xfffffffflu);
  return U128(p11 + (p01 >> 32u) + (p10 >> 32u) + (mid >> 32u), (mid << 32u) | (p00 & 0xfffffffflu));
}
fn xclz128(x: U128) -> u32 { return select(xclz(x.hi), 64u + xclz(x.lo), x.hi == 0lu); }
fn xshl(x: U128, s: u32) -> U128 {
  if (s == 0u) { return x; }
  if (s >= 64u) { return U128(x.lo << (s - 64u), 0lu); }
  return U128((x.hi << s) | (x.lo >> (64u - s)), x.lo << s);
}
// x >> s with the bits shifted out ORed into the lowest bit.
fn xshr_jam(x: U128, s: u32) -> U128 {
  if (s == 0u) { return x; }
  if (s >= 128u) { return U128(0lu, select(0lu, 1lu, (x.hi | x.lo) != 0lu)); }
  if (s >= 64u) {
    let t = s - 64u;
    var lo = x.hi;
    var lost = x.lo;
    if (t > 0u) { lo = x.hi >> t; lost = lost | (x.hi << (64u - t)); }
    return U128(0lu, lo | select(0lu, 1lu, lost != 0lu));
  }
  let lost = x.lo << (64u - s);
  return U128(x.hi >> s, (x.lo >> s) | (x.hi << (64u - s)) | select(0lu, 1lu, lost != 0lu));
}
fn xlt128(a: U128, b: U128) -> bool { return a.hi < b.hi || (a.hi == b.hi && a.lo < b.lo); }
// (-1)^neg * r * 2^(e - 126) (r nonzero; its lowest bit sticky), rounded in mode md.
fn xpack(neg: bool, e: i32, r: U128, md: u32) -> u64 {
  let z = xclz128(r);
  let n = xshl(r, z);
  return xround64(neg, e + 1 - i32(z), n.hi, n.lo != 0lu, md);
}
// a * b + c rounded once to nearest even; NaN canonical.
fn fma64(a: vec2<u32>, b: vec2<u32>, c: vec2<u32>) -> vec2<u32> { return fma64m(a, b, c, 1u); }
// a * b + c rounded once in mode md (IEEE 754); NaN canonical. An exact zero
// sum of opposite signs is +0, -0 when rounding down.
fn fma64m(a: vec2<u32>, b: vec2<u32>, c: vec2<u32>, md: u32) -> vec2<u32> {
  let x = xu(a); let y = xu(b); let z = xu(c);
  let nan = vec2<u32>(0xffffffffu, 0x7fffffffu);
  if (xnan(x) || xnan(y) || xnan(z)) { return nan; }
  let sp = ((x ^ y) >> 63u) != 0lu;
  let sc = (z >> 63u) != 0lu;
  let ax = x & 0x7ffffffffffffffflu; let ay = y & 0x7ffffffffffffffflu; let az = z & 0x7ffffffffffffffflu;
  let inf = 0x7ff0000000000000lu;
  if (ax == inf || ay == inf) {
    if (ax == 0lu || ay == 0lu || (az == inf && sc != sp)) { return nan; }
    return xv(select(0lu, 0x8000000000000000lu, sp) | inf);
  }
  if (az == inf) { return c; }
  if (ax == 0lu || ay == 0lu) {
    let zneg = select(sp && sc, sp || sc, md == 2u);
    if (az == 0lu) { return xv(select(0lu, 0x8000000000000000lu, zneg)); }
    return c;
  }
  let na = xnorm(ax); let nb = xnorm(ay);
  // The product p * 2^(ep - 126), p in [2^126, 2^127) with 21 zero bits below.
  var p = xmul(na.m, nb.m);
  var ep = na.e + nb.e;
  if ((p.hi >> 63u) != 0lu) { p = xshr_jam(p, 1u); ep = ep + 1; }
  if (az == 0lu) { return xv(xpack(sp, ep, p, md)); }
  let nc = xnorm(az);
  // The addend alike: q * 2^(eq - 126), 74 zero bits below.
  var big = p; var eb = ep; var sb = sp;
  var sm = U128(nc.m >> 1u, nc.m << 63u); var es = nc.e; var ss = sc;
  if (es > eb || (es == eb && xlt128(big, sm))) {
    let t = big; big = sm; sm = t;
    let te = eb; eb = es; es = te;
    let ts = sb; sb = ss; ss = ts;
  }
  sm = xshr_jam(sm, u32(min(eb - es, 128)));
  var r = U128(0lu, 0lu);
  if (sb == ss) {
    let lo = big.lo + sm.lo;
    r = U128(big.hi + sm.hi + select(0lu, 1lu, lo < big.lo), lo);
  } else {
    r = U128(big.hi - sm.hi - select(0lu, 1lu, big.lo < sm.lo), big.lo - sm.lo);
  }
  // An exact zero sum is +0, -0 when rounding down.
  if ((r.hi | r.lo) == 0lu) { return vec2<u32>(0u, select(0u, 0x80000000u, md == 2u)); }
  return xv(xpack(sb, eb, r, md));
}
// a * b rounded once in mode md: a zero result has the sign of the operands'
// product in every mode (fma64m's a * b + 0 would give +0 for -0 * 1).
fn mul64m(a: vec2<u32>, b: vec2<u32>, md: u32) -> vec2<u32> {
  let r = fma64m(a, b, vec2<u32>(0u, 0u), md);
  if (((r.y & 0x7fffffffu) | r.x) == 0u) { return vec2<u32>(0u, (a.y ^ b.y) & 0x80000000u); }
  return r;
}
// a + b rounded once in mode md (IEEE 754): a * 1 + b.
fn add64m(a: vec2<u32>, b: vec2<u32>, md: u32) -> vec2<u32> {
  return fma64m(a, vec2<u32>(0u, 0x3ff00000u), b, md);
}
// a / b correctly rounded to nearest even; NaN canonical.
fn div64(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> { return div64m(a, b, 1u); }
// a / b correctly rounded in mode md; NaN canonical.
fn div64m(a: vec2<u32>, b: vec2<u32>, md: u32) -> vec2<u32> {
  let x = xu(a); let y = xu(b);
  let nan = vec2<u32>(0xffffffffu, 0x7fffffffu);
  if (xnan(x) || xnan(y)) { return nan; }
  let s = (x ^ y) & 0x8000000000000000lu;
  let ax = x & 0x7ffffffffffffffflu; let ay = y & 0x7ffffffffffffffflu;
  let inf = 0x7ff0000000000000lu;
  if (ax == inf) { if (ay == inf) { return nan; } return xv(s | inf); }
  if (ay == inf) { return xv(s); }
  if (ay == 0lu) { if (ax == 0lu) { return nan; } return xv(s | inf); }
  if (ax == 0lu) { return xv(s); }
  let na = xnorm(ax); let nb = xnorm(ay);
  let mb = nb.m >> 11u;
  var r = na.m >> 11u;
  var e = na.e - nb.e;
  if (r < mb) { r = r << 1u; e = e - 1; }
  // q = floor(r * 2^63 / mb) in [2^63, 2^64); r < 2 mb < 2^54 throughout.
  var q = 0lu;
  for (var i = 0u; i < 64u; i = i + 1u) {
    q = q << 1u;
    if (r >= mb) { r = r - mb; q = q | 1lu; }
    r = r << 1u;
  }
  return xv(xround64(s != 0lu, e, q, r != 0lu, md));
}
// sqrt(a) correctly rounded to nearest even; sqrt(-0) = -0, NaN canonical.
fn sqrt64(a: vec2<u32>) -> vec2<u32> { return sqrt64m(a, 1u); }
// sqrt(a) correctly rounded in mode md; sqrt(-0) = -0, NaN canonical.
fn sqrt64m(a: vec2<u32>, md: u32) -> vec2<u32> {
  let x = xu(a);
  let nan = vec2<u32>(0xffffffffu, 0x7fffffffu);
  if (xnan(x)) { return nan; }
  if ((x & 0x7ffffffffffffffflu) == 0lu || x == 0x7ff0000000000000lu) { return a; }
  if ((x >> 63u) != 0lu) { return nan; }
  let n = xnorm(x);
  // a = m * 2^k with k even, m in [2^52, 2^54).
  var m = n.m >> 11u;
  var k = n.e - 52;
  if ((k & 1) != 0) { m = m << 1u; k = k - 1; }
  // q = floor(sqrt(m * 2^58)) in [2^55, 2^56), two radicand bits a step;
  // r = radicand so far - q^2 <= 2q < 2^57.
  var q = 0lu;
  var r = 0lu;
  for (var i = 0u; i < 56u; i = i + 1u) {
    var two = 0lu;
    if (i <= 26u) { two = (m >> (52u - 2u * i)) & 3lu; }
    r = (r << 2u) | two;
    let t = (q << 2u) | 1lu;
    if (r >= t) { r = r - t; q = (q << 1u) | 1lu; } else { q = q << 1u; }
  }
  return xv(xround64(false, ((k - 58) >> 1u) + 55, q << 8u, r != 0lu, md));
}
// setp.f64 (FCmp's codes, as fcmp32).
fn fcmp64(a: vec2<u32>, b: vec2<u32>, op: u32) -> u32 {
  let x = xu(a); let y = xu(b);
  let un = xnan(x) || xnan(y);
  let kx = select(x | 0x8000000000000000lu, ~x, (x >> 63u) != 0lu);
  let ky = select(y | 0x8000000000000000lu, ~y, (y >> 63u) != 0lu);
  let eq = x == y || ((x | y) << 1u) == 0lu;
  let lt = !eq && kx < ky;
  let gt = !eq && kx > ky;
  var r = false;
  switch op {
    case 0u: { r = !un && eq; }
    case 1u: { r = !un && !eq; }
    case 2u: { r = !un && lt; }
    case 3u: { r = !un && (lt || eq); }
    case 4u: { r = !un && gt; }
    case 5u: { r = !un && (gt || eq); }
    case 6u: { r = un || eq; }
    case 7u: { r = un || !eq; }
    case 8u: { r = un || lt; }
    case 9u: { r = un || lt || eq; }
    case 10u: { r = un || gt; }
    case 11u: { r = un || gt || eq; }
    case 12u: { r = !un; }
    default: { r = un; }
  }
  return select(0u, 1u, r);
}
// |u| (f64 bits, exponent field below 1075: |u| < 2^53) rounded to an integer
// in mode md, the sign of u deciding the directed modes.
fn xrint_mag(u: u64, md: u32) -> u64 {
  let f = u32((u >> 52u) & 0x7fflu);
  let neg = (u >> 63u) != 0lu;
  var m = u & 0xffffffffffffflu;
  if (f != 0u) { m = m | 0x10000000000000lu; }
  // |u| = m * 2^-s, s >= 1.
  let s = 1075u - max(f, 1u);
  var ip = 0lu;
  var rest = select(0lu, 1lu, m != 0lu);
  var half = 0x8000000000000000lu;
  if (s < 64u) {
    ip = m >> s;
    rest = m & ((1lu << s) - 1lu);
    half = 1lu << (s - 1u);
  }
  var up = false;
  switch md {
    case 1u: { up = rest > half || (rest == half && (ip & 1lu) != 0lu); }
    case 2u: { up = neg && rest != 0lu; }
    case 3u: { up = !neg && rest != 0lu; }
    default: {}
  }
  return ip + select(0lu, 1lu, up);
}
// cvt.{rni,rzi,rmi,rpi}.{s,u}BITS.f64: rounded, saturated to the type, NaN 0.
fn f64_to_int(a: vec2<u32>, bits: u32, signed: bool, md: u32) -> vec2<u32> {
  let u = xu(a);
  if (xnan(u)) { return vec2<u32>(0u, 0u); }
  let neg = (u >> 63u) != 0lu;
  let f = u32((u >> 52u) & 0x7fflu);
  // |u| >= 2^64 (or infinite): beyond every type.
  let big = f >= 1087u;
  var mag = 0lu;
  if (f >= 1075u && !big) {
    mag = ((u & 0xffffffffffffflu) | 0x10000000000000lu) << (f - 1075u);
  } else if (!big) {
    mag = xrint_mag(u, md);
  }
  let all = 0xfffffffffffffffflu >> (64u - bits);
  var r = 0lu;
  if (signed) {
    let lim = 1lu << (bits - 1u);
    if (neg) {
      r = 0lu - select(mag, lim, big || mag > lim);
    } else {
      r = select(mag, lim - 1lu, big || mag > lim - 1lu);
    }
  } else if (!neg) {
    r = select(mag, all, big || mag > all);
  }
  return xv(r & all);
}
// An integer magnitude mag (exact, below 2^64) with its sign, as f64 or f32
// bits rounded in mode md.
fn xfrom_int(neg: bool, mag: u64, md: u32, p: u32, emax: i32) -> u64 {
  if (mag == 0lu) { return 0lu; }
  let z = xclz(mag);
  return xround(neg, 63 - i32(z), mag << z, false, md, p, emax);
}
// cvt.{rni,rzi,rmi,rpi}.f64.f64: the integral value in mode md; NaN canonical.
fn f64_rint(a: vec2<u32>, md: u32) -> vec2<u32> {
  let u = xu(a);
  if (xnan(u)) { return vec2<u32>(0xffffffffu, 0x7fffffffu); }
  if (((u >> 52u) & 0x7fflu) >= 1075lu) { return a; }
  let neg = (u >> 63u) != 0lu;
  return xv(select(0lu, 0x8000000000000000lu, neg) | xfrom_int(neg, xrint_mag(u, md), 1u, 53u, 1023));
}
// An f32 (bits) as f64 bits, exactly, on integers (subnormals kept); NaN canonical.
fn xf32(a: u32) -> vec2<u32> {
  let s = u64(a >> 31u) << 63u;
  let f = (a >> 23u) & 0xffu;
  let m = a & 0x7fffffu;
  if (f == 255u) {
    if (m != 0u) { return vec2<u32>(0xffffffffu, 0x7fffffffu); }
    return xv(s | 0x7ff0000000000000lu);
  }
  if (f == 0u) {
    if (m == 0u) { return xv(s); }
    // m * 2^-149 with its top bit t: exponent t - 149.
    let t = 31u - countLeadingZeros(m);
    return xv(s | (u64(t + 874u) << 52u) | ((u64(m) << (52u - t)) & 0xffffffffffffflu));
  }
  return xv(s | (u64(f + 896u) << 52u) | (u64(m) << 29u));
}
// f64 bits to f32 bits in mode md, .ftz (a subnormal result flushed to a zero
// of its sign) and .sat (clamped to [0, 1], NaN to +0) after; NaN canonical.
fn xto_f32(a: vec2<u32>, md: u32, ftz: bool, sat: bool) -> u32 {
  let u = xu(a);
  if (xnan(u)) { return select(0x7fffffffu, 0u, sat); }
  let neg = (u >> 63u) != 0lu;
  let au = u & 0x7ffffffffffffffflu;
  var r = 0u;
  if (au == 0x7ff0000000000000lu) {
    r = 0x7f800000u;
  } else if (au != 0lu) {
    let n = xnorm(au);
    r = u32(xround(false, n.e, n.m, false, select(md, md ^ 1u, neg && md >= 2u), 24u, 127));
  }
  if (ftz && (r & 0x7f800000u) == 0u) { r = 0u; }
  r = r | select(0u, 0x80000000u, neg);
  if (sat) {
    // Clamped as Rust's clamp does it: -0 stays -0.
    if (neg) { return select(0u, r, r == 0x80000000u); }
    return min(r, 0x3f800000u);
  }
  return r;
}
// cvt.{rn,rz,rm,rp}.f64.{s64,u64}: x (bits) to f64 in mode md.
fn xi64_to_f64(x: vec2<u32>, signed: bool, md: u32) -> vec2<u32> {
  let u = xu(x);
  let neg = signed && (u >> 63u) != 0lu;
  let mag = select(u, 0lu - u, neg);
  return xv(select(0lu, 0x8000000000000000lu, neg) | xfrom_int(neg, mag, md, 53u, 1023));
}
"#;

/// [`IntRound`]'s code in the prelude.
pub(super) fn int_mode(r: IntRound) -> u32 {
    match r {
        IntRound::Zero => 0,
        IntRound::Nearest => 1,
        IntRound::Down => 2,
        IntRound::Up => 3,
    }
}

/// [`FloatRound`]'s code in the prelude (the same as [`IntRound`]'s).
pub(super) fn float_mode(r: FloatRound) -> u32 {
    match r {
        FloatRound::Zero => 0,
        FloatRound::Nearest => 1,
        FloatRound::Down => 2,
        FloatRound::Up => 3,
    }
}

impl KernelWriter<'_> {
    /// `fma.f64` in mode `round` with the product and the addend negated as
    /// asked.
    pub(super) fn f64_fma(
        &self,
        neg_ab: bool,
        neg_c: bool,
        round: FloatRound,
        [a, b, c]: [Val; 3],
    ) -> String {
        let flip = |v: Val, neg: bool| {
            let x = self.v64(v);
            if neg {
                format!("(({x}) ^ vec2<u32>(0u, 0x80000000u))")
            } else {
                x
            }
        };
        let (x, y, z) = (flip(a, neg_ab), self.v64(b), flip(c, neg_c));
        match round {
            FloatRound::Nearest => format!("fma64({x}, {y}, {z})"),
            r => format!("fma64m({x}, {y}, {z}, {}u)", float_mode(r)),
        }
    }
}
