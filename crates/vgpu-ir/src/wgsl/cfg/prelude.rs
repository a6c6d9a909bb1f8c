//! WGSL helper functions of the control-flow emitter: 64-bit integers on
//! `vec2<u32>` (low, high), exact f32 operations written on bits (NaN tests,
//! min/max, integer conversions), and the f64-based correctly rounded
//! division, square root, reciprocal and fused multiply-add, and `lg2.approx`.

/// Helpers every control-flow kernel gets (no f64 in them).
pub(super) const INT_PRELUDE: &str = r#"
fn msk(bits: u32) -> u32 { return select((1u << bits) - 1u, 0xffffffffu, bits >= 32u); }
fn sx32(x: u32, bits: u32) -> u32 {
  if (bits >= 32u) { return x; }
  let s = 32u - bits;
  return bitcast<u32>(bitcast<i32>(x << s) >> s);
}
fn w64(x: u32) -> vec2<u32> { return vec2<u32>(x, 0u); }
fn sw64(x: u32) -> vec2<u32> { return vec2<u32>(x, select(0u, 0xffffffffu, (x >> 31u) != 0u)); }
fn add64(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
  let lo = a.x + b.x;
  return vec2<u32>(lo, a.y + b.y + select(0u, 1u, lo < a.x));
}
fn neg64(a: vec2<u32>) -> vec2<u32> { return add64(~a, vec2<u32>(1u, 0u)); }
fn sub64(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> { return add64(a, neg64(b)); }
fn mulw_u32(a: u32, b: u32) -> vec2<u32> {
  let al = a & 0xffffu; let ah = a >> 16u; let bl = b & 0xffffu; let bh = b >> 16u;
  let ll = al * bl; let lh = al * bh; let hl = ah * bl; let hh = ah * bh;
  let mid = (ll >> 16u) + (lh & 0xffffu) + (hl & 0xffffu);
  // The low word is the wrapping product (one instruction where only it is used).
  let lo = a * b;
  let hi = hh + (lh >> 16u) + (hl >> 16u) + (mid >> 16u);
  return vec2<u32>(lo, hi);
}
fn mulw_s32(a: u32, b: u32) -> vec2<u32> {
  var r = mulw_u32(a, b);
  if ((a >> 31u) != 0u) { r.y = r.y - b; }
  if ((b >> 31u) != 0u) { r.y = r.y - a; }
  return r;
}
fn mul64(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
  let l = mulw_u32(a.x, b.x);
  return vec2<u32>(l.x, l.y + a.x * b.y + a.y * b.x);
}
fn shl64(a: vec2<u32>, n: u32) -> vec2<u32> {
  if (n >= 64u) { return vec2<u32>(0u, 0u); }
  if (n >= 32u) { return vec2<u32>(0u, a.x << (n - 32u)); }
  if (n == 0u) { return a; }
  return vec2<u32>(a.x << n, (a.y << n) | (a.x >> (32u - n)));
}
fn shru64(a: vec2<u32>, n: u32) -> vec2<u32> {
  if (n >= 64u) { return vec2<u32>(0u, 0u); }
  if (n >= 32u) { return vec2<u32>(a.y >> (n - 32u), 0u); }
  if (n == 0u) { return a; }
  return vec2<u32>((a.x >> n) | (a.y << (32u - n)), a.y >> n);
}
fn shrs64(a: vec2<u32>, n: u32) -> vec2<u32> {
  let s = select(0u, 0xffffffffu, (a.y >> 31u) != 0u);
  if (n >= 64u) { return vec2<u32>(s, s); }
  if (n >= 32u) { return vec2<u32>(bitcast<u32>(bitcast<i32>(a.y) >> (n - 32u)), s); }
  if (n == 0u) { return a; }
  return vec2<u32>((a.x >> n) | (a.y << (32u - n)), bitcast<u32>(bitcast<i32>(a.y) >> n));
}
fn shl32(a: u32, n: u32, bits: u32) -> u32 { return select((a << min(n, 31u)) & msk(bits), 0u, n >= bits); }
fn shru32(a: u32, n: u32, bits: u32) -> u32 { return select((a & msk(bits)) >> min(n, 31u), 0u, n >= bits); }
fn shrs32(a: u32, n: u32, bits: u32) -> u32 {
  let v = bitcast<i32>(sx32(a, bits));
  return bitcast<u32>(v >> min(n, 31u)) & msk(bits);
}
fn ltu64(a: vec2<u32>, b: vec2<u32>) -> bool { return a.y < b.y || (a.y == b.y && a.x < b.x); }
fn lts64(a: vec2<u32>, b: vec2<u32>) -> bool {
  let ay = bitcast<i32>(a.y); let by = bitcast<i32>(b.y);
  return ay < by || (ay == by && a.x < b.x);
}
// An integer comparison's predicate from equality and less-than (op as
// cfg::ICmp: 0 eq, 1 ne, 2 lt, 3 le, 4 gt, 5 ge).
fn cmp_result(eq: bool, lt: bool, op: u32) -> u32 {
  var r = false;
  switch op {
    case 0u: { r = eq; }
    case 1u: { r = !eq; }
    case 2u: { r = lt; }
    case 3u: { r = lt || eq; }
    case 4u: { r = !(lt || eq); }
    default: { r = !lt; }
  }
  return select(0u, 1u, r);
}
fn cmp64(a: vec2<u32>, b: vec2<u32>, op: u32, signed: bool) -> u32 {
  return cmp_result(all(a == b), select(ltu64(a, b), lts64(a, b), signed), op);
}
fn cmp32(a: u32, b: u32, op: u32, signed: bool, bits: u32) -> u32 {
  let eq = (a & msk(bits)) == (b & msk(bits));
  let lt = select((a & msk(bits)) < (b & msk(bits)), bitcast<i32>(sx32(a, bits)) < bitcast<i32>(sx32(b, bits)), signed);
  return cmp_result(eq, lt, op);
}
// Integer division and remainder on bits <= 32 (PTX: x / 0 is all ones,
// x % 0 is x; MIN / -1 wraps to MIN, MIN % -1 is 0).
fn divi32(a: u32, b: u32, signed: bool, bits: u32) -> u32 {
  if (!signed) {
    let x = a & msk(bits); let y = b & msk(bits);
    if (y == 0u) { return msk(bits); }
    return x / y;
  }
  let x = bitcast<i32>(sx32(a, bits)); let y = bitcast<i32>(sx32(b, bits));
  if (y == 0) { return msk(bits); }
  if (y == -1) { return (0u - bitcast<u32>(x)) & msk(bits); }
  return bitcast<u32>(x / y) & msk(bits);
}
fn remi32(a: u32, b: u32, signed: bool, bits: u32) -> u32 {
  if (!signed) {
    let x = a & msk(bits); let y = b & msk(bits);
    if (y == 0u) { return x; }
    return x % y;
  }
  let x = bitcast<i32>(sx32(a, bits)); let y = bitcast<i32>(sx32(b, bits));
  if (y == 0) { return bitcast<u32>(x) & msk(bits); }
  if (y == -1) { return 0u; }
  return bitcast<u32>(x % y) & msk(bits);
}
// bmsk.{clamp,wrap}.b32 (as vgpu-ptx bit_ops::bmsk).
fn bmsk32(a: u32, b: u32, clamp: bool) -> u32 {
  let a1 = a & 31u; let b1 = b & 31u;
  var m0 = 0xffffffffu << a1;
  let sum = a1 + b1;
  var over = sum >= 32u;
  if (clamp) {
    if (a >= 32u) { over = true; m0 = 0u; }
    if (b >= 32u) { over = true; }
  }
  var m1 = 0u;
  if (!over) { m1 = select(0xffffffffu << sum, 0xffffffffu, b1 == 0u); }
  return m0 & ~m1;
}
fn f(x: u32) -> f32 { return bitcast<f32>(x); }
fn isnan32(x: u32) -> bool { return (x & 0x7fffffffu) > 0x7f800000u; }
fn fminmax32(a: u32, b: u32, mx: bool) -> u32 {
  if (isnan32(a)) { return b; }
  if (isnan32(b)) { return a; }
  let x = f(a); let y = f(b);
  if (x == y) { return select(b, a, ((a >> 31u) != 0u) != mx); }
  if (mx) { return select(b, a, x > y); }
  return select(b, a, x < y);
}
fn fcmp32(a: u32, b: u32, op: u32) -> u32 {
  let un = isnan32(a) || isnan32(b);
  let x = f(a); let y = f(b);
  var r = false;
  switch op {
    case 0u: { r = !un && x == y; }
    case 1u: { r = !un && x != y; }
    case 2u: { r = !un && x < y; }
    case 3u: { r = !un && x <= y; }
    case 4u: { r = !un && x > y; }
    case 5u: { r = !un && x >= y; }
    case 6u: { r = un || x == y; }
    case 7u: { r = un || x != y; }
    case 8u: { r = un || x < y; }
    case 9u: { r = un || x <= y; }
    case 10u: { r = un || x > y; }
    case 11u: { r = un || x >= y; }
    case 12u: { r = !un; }
    default: { r = un; }
  }
  return select(0u, 1u, r);
}
fn ftz32(x: u32) -> u32 { return select(x, x & 0x80000000u, (x & 0x7f800000u) == 0u); }
// .sat: the f32 clamped to [0, 1] on its bits (NaN -> +0, -0 kept).
fn sat32(x: u32) -> u32 {
  let m = x & 0x7fffffffu;
  if (m > 0x7f800000u) { return 0u; }
  if (x != m) { return select(0u, x, m == 0u); }
  return min(x, 0x3f800000u);
}
// A NaN result as PTX writes it (the interpreter's canonical 0x7fffffff).
fn cnan32(x: u32) -> u32 { return select(x, 0x7fffffffu, isnan32(x)); }
// The new word of an atomic read-modify-write (codes as emit.rs' atom_code).
fn atom_new(op: u32, o: u32, b: u32, c: u32) -> u32 {
  switch op {
    case 0u: { return o + b; }
    case 1u: { return ftz32(bitcast<u32>(f(ftz32(o)) + f(ftz32(b)))); }
    case 2u: { return bitcast<u32>(min(bitcast<i32>(o), bitcast<i32>(b))); }
    case 3u: { return bitcast<u32>(max(bitcast<i32>(o), bitcast<i32>(b))); }
    case 4u: { return min(o, b); }
    case 5u: { return max(o, b); }
    case 6u: { return o & b; }
    case 7u: { return o | b; }
    case 8u: { return o ^ b; }
    case 9u: { return b; }
    case 10u: { return select(o, c, o == b); }
    case 11u: { return select(o + 1u, 0u, o >= b); }
    case 12u: { return select(o - 1u, b, o == 0u || o > b); }
    case 13u: { return fminmax32(o, b, false); }
    default: { return fminmax32(o, b, true); }
  }
}
// u32 -> f32 bits, to nearest even, in integer arithmetic.
fn u32_to_f32(x: u32) -> u32 {
  if (x == 0u) { return 0u; }
  let lz = countLeadingZeros(x);
  let e = 31u - lz;
  if (e <= 23u) { return ((e + 127u) << 23u) + ((x << (23u - e)) & 0x7fffffu); }
  let sh = e - 23u;
  let m = x >> sh;
  let rem = x & ((1u << sh) - 1u);
  let half = 1u << (sh - 1u);
  var r = ((e + 127u) << 23u) + (m & 0x7fffffu);
  if (rem > half || (rem == half && (m & 1u) != 0u)) { r = r + 1u; }
  return r;
}
fn s32_to_f32(x: u32) -> u32 {
  if ((x >> 31u) == 0u) { return u32_to_f32(x); }
  return u32_to_f32(0u - x) | 0x80000000u;
}
// To the nearest whole number, ties to even, by floor: WGSL's round (SPIR-V
// RoundEven) is not, on some drivers (lavapipe of Mesa 22.3 on an AVX2 CPU
// without AVX-512 rounded 1.5 to 1). x - floor(x) is exact, and past 2^23
// every f32 is whole (rne64, beside r32: past 2^52 every f64).
fn rne32(x: f32) -> f32 {
  let fl = floor(x);
  let fr = x - fl;
  if (fr > 0.5 || (fr == 0.5 && floor(fl * 0.5) != fl * 0.5)) { return fl + 1.0; }
  return fl;
}
// f32 bits -> 32-bit integer, rounded by mode (0 zero, 1 nearest even, 2 down, 3 up), saturating; NaN -> 0.
fn f32_to_i32(a: u32, signed: bool, mode: u32) -> u32 {
  if (isnan32(a)) { return 0u; }
  var x = f(a);
  switch mode {
    case 1u: { x = rne32(x); }
    case 2u: { x = floor(x); }
    case 3u: { x = ceil(x); }
    default: { x = trunc(x); }
  }
  if (signed) {
    if (x >= 2147483648.0) { return 0x7fffffffu; }
    if (x <= -2147483648.0) { return 0x80000000u; }
    return bitcast<u32>(i32(x));
  }
  if (x >= 4294967296.0) { return 0xffffffffu; }
  if (x <= 0.0) { return 0u; }
  return u32(x);
}
fn f32_round(a: u32, mode: u32) -> u32 {
  if (isnan32(a)) { return a | 0x00400000u; }
  let x = f(a);
  var r = x;
  switch mode {
    case 1u: { r = rne32(x); }
    case 2u: { r = floor(x); }
    case 3u: { r = ceil(x); }
    default: { r = trunc(x); }
  }
  // Keep the sign of a zero result as PTX does (round(-0.3) = -0).
  return bitcast<u32>(r) | (a & 0x80000000u);
}
// cvt.rn.f16.f32 on bits: nearest, ties to even, overflow to infinity, NaN
// to 0x7fff (as vgpu-ptx half_ops::f16_rn).
fn f32_to_f16(a: u32) -> u32 {
  let s = (a >> 16u) & 0x8000u;
  let e = (a >> 23u) & 0xffu;
  let m = a & 0x7fffffu;
  if (e == 255u) { return select(s | 0x7c00u, 0x7fffu, m != 0u); }
  if (e >= 143u) { return s | 0x7c00u; }
  if (e < 102u) { return s; }
  var base = 0u;
  var sh = 13u;
  var mm = m;
  if (e >= 113u) {
    base = ((e - 112u) << 10u) | (m >> 13u);
  } else {
    mm = m | 0x800000u;
    sh = 126u - e;
    base = mm >> sh;
  }
  let rem = mm & ((1u << sh) - 1u);
  let half = 1u << (sh - 1u);
  if (rem > half || (rem == half && (base & 1u) == 1u)) { base = base + 1u; }
  return s | base;
}
// cvt.f32.f16 on bits (exact); an f16 NaN gives 0x7fffffff (PTX's canonical NaN,
// the interpreter's).
fn f16_to_f32(a: u32) -> u32 {
  let s = (a & 0x8000u) << 16u;
  let e = (a >> 10u) & 0x1fu;
  let m = a & 0x3ffu;
  if (e == 31u) { return select(s | 0x7f800000u, 0x7fffffffu, m != 0u); }
  if (e == 0u) {
    if (m == 0u) { return s; }
    let p = firstLeadingBit(m);
    return s | ((p + 103u) << 23u) | ((m << (23u - p)) & 0x7fffffu);
  }
  return s | ((e + 112u) << 23u) | (m << 13u);
}
// bfind.shiftamt from bfind's bit: 31 - m, all ones kept.
fn bfind_shift(m: u32) -> u32 { return select(31u - m, m, m == 0xffffffffu); }
"#;

/// Helpers that compute in f64 (only emitted when the adapter has `SHADER_F64`).
pub(super) const F64_PRELUDE: &str = r#"
// The exact error of s = RN(a + b) (TwoSum), through copies the shader
// compiler cannot see are equal to a, b and s (`opq` is never true): without
// them an optimiser that reassociates (Mesa's NIR does, for ops not marked
// exact) folds it to 0.
fn two_sum_err(a: f64, b: f64, s: f64) -> f64 {
  let ao = select(a, 1.0lf, opq);
  let bo = select(b, 2.0lf, opq);
  let s1 = select(s, 3.0lf, opq);
  let s2 = select(s, 4.0lf, opq);
  let bb = s1 - ao;
  return (ao - (s2 - bb)) + (bo - bb);
}
// An f32's value in f64, exact also for subnormals on a device that flushes
// them in its conversions (NVIDIA's Vulkan driver does): m 2^-149 from the
// bits.
fn d32(a: u32) -> f64 {
  if ((a & 0x7f800000u) != 0u) { return f64(f(a)); }
  let m = f64(a & 0x7fffffu) * 1.40129846432481707092372958328991613e-45lf;
  return select(m, -m, (a >> 31u) != 0u);
}
// To the nearest whole f64, ties to even (as rne32).
fn rne64(x: f64) -> f64 {
  let fl = floor(x);
  let fr = x - fl;
  if (fr > 0.5lf || (fr == 0.5lf && floor(fl * 0.5lf) != fl * 0.5lf)) { return fl + 1.0lf; }
  return fl;
}
// The f32 nearest (ties to even) an f64, as bits, also where it is subnormal
// on a device that flushes subnormal results of its conversions: below
// 2^-126 the value is a whole number of 2^-149 (that number can be 2^23,
// the least normal's bits).
fn r32(s: f64) -> u32 {
  let t = abs(s);
  if (!(t < 1.17549435082228750796873653722224568e-38lf) || t == 0.0lf) {
    return bitcast<u32>(f32(s));
  }
  let m = u32(rne64(t * 713623846352979940529142984724747568191373312.0lf));
  return select(m, m | 0x80000000u, s < 0.0lf);
}
// One f32 rounding of an exact f64 value s + e (e the error of s = RN(s + e)),
// to nearest even, as bits: RN(s) unless s is a midpoint between two f32s and
// e decides.
fn round_sum_f32(s: f64, e: f64) -> u32 {
  let t1b = r32(s);
  if ((t1b & 0x7fffffffu) >= 0x7f800000u) {
    // Overflow: the midpoint that rounds to infinity is 2^128 - 2^103.
    let m = 340282356779733661637539395458142568448.0lf;
    if (abs(s) == m && e != 0.0lf && (e < 0.0lf) != (s < 0.0lf)) {
      return (t1b & 0x80000000u) | 0x7f7fffffu;
    }
    return t1b;
  }
  let d = s - d32(t1b);
  if (d == 0.0lf || e == 0.0lf) { return t1b; }
  // The other f32 neighbour of s, on the side of d.
  let away = (d > 0.0lf) == (t1b >> 31u == 0u) || (t1b & 0x7fffffffu) == 0u;
  var t2b = select(t1b - 1u, t1b + 1u, away);
  if ((t1b & 0x7fffffffu) == 0u) { t2b = select(0x80000001u, 1u, d > 0.0lf); }
  if ((d32(t1b) + d32(t2b)) * 0.5lf != s) { return t1b; }
  // A tie broken by RN(s); the exact value lies on the side of e.
  if ((e > 0.0lf) == (d32(t2b) > s)) { return t2b; }
  return t1b;
}
fn fma_f32(a: u32, b: u32, c: u32) -> u32 {
  let p = d32(a) * d32(b);
  let cc = d32(c);
  if (((a & 0x7f800000u) == 0x7f800000u) || ((b & 0x7f800000u) == 0x7f800000u) || ((c & 0x7f800000u) == 0x7f800000u)) {
    return bitcast<u32>(f32(p + cc));
  }
  let s = p + cc;
  return round_sum_f32(s, two_sum_err(p, cc, s));
}
// fma.rn.f32 on the device's own fma, suspect cases on the emulation in
// place (the kernels' form on a device whose fma may flush subnormals, and
// the probe's).
fn fma_native_f32(a: u32, b: u32, c: u32) -> u32 {
  let r = dev_fma(a, b, c);
  if (fma_suspect(a, b, c, r)) { return fma_f32(a, b, c); }
  return r;
}
// ÷, √ and 1/x rounded in f64 then to f32: correctly rounded (53 >= 2 24 + 2
// bits, so the double rounding is innocuous), subnormals exact both ways.
fn div_f32(a: u32, b: u32) -> u32 { return r32(d32(a) / d32(b)); }
fn sqrt_f32(a: u32) -> u32 {
  if ((a >> 31u) != 0u && (a & 0x7fffffffu) != 0u) { return 0x7fffffffu; }
  return r32(sqrt(d32(a)));
}
fn rcp_f32(a: u32) -> u32 { return r32(1.0lf / d32(a)); }
fn rsqrt_f32(a: u32) -> u32 {
  if ((a >> 31u) != 0u && (a & 0x7fffffffu) != 0u) { return 0x7fffffffu; }
  return r32(1.0lf / sqrt(d32(a)));
}
// lg2.approx.f32 as the interpreter defines it (log2 in f64, rounded to f32),
// within about 0.6 f64 ulp: a = 2^k m, m in [1/sqrt2, sqrt2), u = (m-1)/(m+1)
// = qh + ul (qh u to 24 bits, ul from the exact residual: m - 1, m + 1 and
// qh (m + 1) are exact), log2 m = (2/ln 2) (u + u^3/3 + ... + u^25/25); the
// leading k + (2/ln 2) qh is summed exactly (2/ln 2 = CHH + CHL + CL, CHH of
// 29 bits and CHL of 24 so both products with qh are exact; two_sum_err),
// the rest added once.
fn lg2_f32(a: u32) -> u32 {
  if (isnan32(a) || ((a >> 31u) != 0u && (a & 0x7fffffffu) != 0u)) { return 0x7fffffffu; }
  if ((a & 0x7fffffffu) == 0u) { return 0xff800000u; }
  if (a == 0x7f800000u) { return a; }
  let ex = (a >> 23u) & 0xffu;
  var mi = a & 0x7fffffu;
  var k = i32(ex) - 127;
  if (ex == 0u) {
    let p = firstLeadingBit(mi);
    mi = mi << (23u - p);
    k = i32(p) - 149;
  } else {
    mi = mi | 0x800000u;
  }
  var m = f64(mi) * (1.0lf / 8388608.0lf);
  if (mi > 0xb504f3u) { m = m * 0.5lf; k = k + 1; }
  let num = m - 1.0lf;
  let den = m + 1.0lf;
  let qh = f64(f32(num / den));
  let ul = (num - qh * den) / den;
  let u = qh + ul;
  let v = u * u;
  var p = 1.0lf / 25.0lf;
  for (var j = 23.0lf; j > 2.0lf; j = j - 2.0lf) { p = p * v + 1.0lf / j; }
  let t = u * v * p;
  let chh = 2.88539008051157lf;
  let chl = 1.2663567972026613e-09lf;
  let cl = 4.0710547481862066e-17lf;
  let a1 = chh * qh;
  let a2 = chl * qh;
  let small = cl * qh + (chh + chl) * (ul + t);
  let kf = f64(k);
  let s = kf + a1;
  return bitcast<u32>(f32(s + ((two_sum_err(kf, a1, s) + a2) + small)));
}
"#;

/// `dev_fma(a, b, c)`, the device's f32 fma on bits, part of the f64
/// helpers (`fma_native_f32` and speculative regions call it): WGSL's `fma`, or with
/// `flush_model` ([`super::CfgWgslOptions::fma_flush_model`]) a model of a
/// device fma that flushes subnormal operands and results to zero of their
/// sign, as NVIDIA's `FFMA.FTZ` does, so that the guarded forms are tested
/// on a device that keeps subnormals.
pub(super) fn dev_fma_wgsl(flush_model: bool) -> &'static str {
    if flush_model {
        // The correctly rounded fma of the flushed operands (WGSL's `fma` is
        // not fused on every device: lavapipe's rounds twice), flushed.
        "fn dev_fma(a: u32, b: u32, c: u32) -> u32 { return ftz32(fma_f32(ftz32(a), ftz32(b), ftz32(c))); }\n"
    } else {
        "fn dev_fma(a: u32, b: u32, c: u32) -> u32 { return bitcast<u32>(fma(f(a), f(b), f(c))); }\n"
    }
}

/// The fast copy's test of a speculative region (speculate.rs): whether a
/// value is zero or below 2^`threshold` in magnitude (−126 ≤ threshold:
/// a value that passes is no subnormal, and has the threshold as its bound,
/// magnitude.rs). One comparison; a device that reads subnormals as zero in
/// comparisons still finds them. The threshold is written as the shortest
/// decimal that reads back as the power of two.
pub(super) fn tiny_wgsl(threshold: i32) -> String {
    let t = 2f32.powi(threshold);
    format!("fn tiny(x: u32) -> bool {{ return abs(f(x)) < {t:e}f; }}\n")
}

/// `fma_suspect(a, b, c, r)`, part of the f64 helpers: whether the device's
/// fma `r` of `a`, `b`, `c` may differ from one rounding where the device
/// flushes subnormals in its fma (NVIDIA's Vulkan driver does, even under
/// `DenormPreserve`: its `FFMA.FTZ` flushes subnormal operands and results):
/// an operand is subnormal, or the factors are nonzero and the result is
/// zero or subnormal. Otherwise flushing changes nothing and `r`, found fused
/// by vgpu-gpu's probe, is the one rounding. A subnormal factor matters only
/// beside a nonzero one. Without branches (`&`, `|` on bools do not
/// short-circuit). With `compares` (the device keeps subnormals in
/// comparisons: [`super::CfgWgslOptions::f32_subnormal_compares`]) by f32
/// comparisons of the magnitudes, cheaper than the integer form's masks (an
/// H100 has twice the f32 throughput of its integer units) — comparisons
/// only: NVIDIA's `min` flushes subnormals even under `DenormPreserve` (the
/// H100, session 17: a test taking the smaller factor by `min` missed
/// subnormal factors, and the fma probe refused it); otherwise on the bits,
/// the smaller factor by an integer `min` of the magnitudes: a subnormal's
/// magnitude bits lie in [1, 0x7fffff].
pub(super) fn fma_suspect_wgsl(compares: bool) -> &'static str {
    if compares {
        r#"fn fma_suspect(a: u32, b: u32, c: u32, r: u32) -> bool {
  let aa = abs(f(a));
  let ab = abs(f(b));
  let ac = abs(f(c));
  let t = 1.17549435e-38f;
  return ((aa > 0.0f) & (ab > 0.0f) & ((aa < t) | (ab < t) | (abs(f(r)) < t)))
    | ((ac > 0.0f) & (ac < t));
}
"#
    } else {
        r#"fn fma_suspect(a: u32, b: u32, c: u32, r: u32) -> bool {
  let m = min(a & 0x7fffffffu, b & 0x7fffffffu);
  return ((m - 1u) < 0x7fffffu) | ((m != 0u) & ((r & 0x7f800000u) == 0u))
    | (((c & 0x7fffffffu) - 1u) < 0x7fffffu);
}
"#
    }
}

/// Helpers that compute in f64 and read its bits as a `u64` (emitted when the
/// adapter has `SHADER_F64` and `SHADER_INT64`).
pub(super) const F64_INT64_PRELUDE: &str = r#"
// fma.rn.f32 in one f64 rounding of a*b + c (the product is exact in f64)
// and one f32 rounding of that. The two roundings are the one exact rounding
// unless the f64 sum is an f32 midpoint (its 29 bits below f32's precision
// are 1 then zeros: a midpoint between the exact value and the f64 sum would
// be an f64 nearer the exact value than the sum) or outside f32's normal
// range (zero, subnormal, infinite, NaN): those take fma_f32.
fn fma_f32_fast(a: u32, b: u32, c: u32) -> u32 {
  let s = d32(a) * d32(b) + d32(c);
  let u = bitcast<u64>(s);
  let e = u32(u >> 52u) & 0x7ffu;
  if (e >= 897u && e <= 1150u && (u32(u & 0xfffffffflu) & 0x1fffffffu) != 0x10000000u) {
    return bitcast<u32>(f32(s));
  }
  return fma_f32(a, b, c);
}
"#;
