//! WGSL for half-precision arithmetic ([`crate::cfg::Half`]: `add sub mul fma
//! min max neg abs` on `.f16` and `.f16x2`) on `u32` bit patterns, with no
//! `SHADER_F16`: each half is widened to f32 exactly, computed there and
//! rounded once to f16, to nearest even, as the interpreter's `half_ops.rs`
//! rounds the exact value.
//!
//! * `mul`: the product of two f16 (11-bit significands, magnitudes 2⁻²⁴ to
//!   2¹⁶) is exact in f32, so one f32 → f16 rounding is the only one.
//! * `add`, `sub`, `fma`: the f32 sum `s` of the exact product and the addend
//!   is kept with its exact error `e` (TwoSum; every value is a multiple of
//!   2⁻⁴⁸, so nothing underflows, and nothing overflows f32). No f32 lies
//!   strictly between the exact value `s + e` and `s`, and every f16 midpoint
//!   is an f32, so rounding `s` to f16 gives the exact value's rounding unless
//!   `s` is itself a midpoint; then `e` decides, and `s` is stepped one f32 ulp
//!   toward it first. The error goes through copies selected on `opq`, as
//!   prelude.rs' f64 `two_sum_err` does, so a reassociating compiler cannot
//!   fold it.
//! * `min`, `max`: the f32 `fminmax32` of the widened values, rounded back
//!   (exact); `neg`, `abs` flip or clear the sign bit.
//! * `.ftz` flushes subnormal operands and results to a zero of their sign,
//!   `.sat` clamps the result to [0, 1] (NaN to +0), in the interpreter's
//!   order; a NaN result is `0x7fff`.

use crate::cfg::{Half, HalfOp, Inst, Stmt, TernOp};

/// The helpers, emitted when a kernel uses half-precision arithmetic (they
/// call the int prelude's `f16_to_f32`, `f32_to_f16` and `fminmax32`).
pub(super) const HALF_PRELUDE: &str = r#"
// The f16 in the low 16 bits of x as an f32 (exact; a NaN stays a NaN).
fn h2f(x: u32) -> f32 { return f(f16_to_f32(x & 0xffffu)); }
fn ftz16(x: u32) -> u32 { return select(x, x & 0x8000u, (x & 0x7c00u) == 0u); }
// .sat: NaN, -0 and negatives to +0, 1 and above to 1.
fn sat16(x: u32) -> u32 {
  if ((x & 0x7fffu) > 0x7c00u || (x & 0x8000u) != 0u) { return 0u; }
  return min(x, 0x3c00u);
}
// Whether the finite, nonzero f32 bits a are a midpoint between two f16
// values (or between the largest and 2^16), as f32_to_f16 sees a tie.
fn mid16(a: u32) -> bool {
  let e = (a >> 23u) & 0xffu;
  if (e >= 143u || e < 102u) { return false; }
  var mm = a & 0x7fffffu;
  var sh = 13u;
  if (e < 113u) { mm = mm | 0x800000u; sh = 126u - e; }
  return (mm & ((1u << sh) - 1u)) == (1u << (sh - 1u));
}
// p + z (p an exact f16 product or an f16, z an f16) rounded once to f16.
fn sum16(p: f32, z: f32) -> u32 {
  let s = p + z;
  var sb = bitcast<u32>(s);
  if ((sb & 0x7f800000u) == 0x7f800000u || (sb & 0x7fffffffu) == 0u) { return f32_to_f16(sb); }
  let po = select(p, 1.0, opq);
  let zo = select(z, 2.0, opq);
  let s1 = select(s, 3.0, opq);
  let s2 = select(s, 4.0, opq);
  let bb = s1 - po;
  let e = (po - (s2 - bb)) + (zo - bb);
  if (e != 0.0 && mid16(sb)) {
    // Toward e: away from zero when e has the sign of s.
    sb = select(sb - 1u, sb + 1u, (e > 0.0) == ((sb >> 31u) == 0u));
  }
  return f32_to_f16(sb);
}
// One f16 operation (codes as half.rs' op_code) on the low 16 bits.
fn half16(op: u32, a0: u32, b0: u32, c0: u32, ftz: bool, sat: bool) -> u32 {
  var a = a0 & 0xffffu; var b = b0 & 0xffffu; var c = c0 & 0xffffu;
  if (ftz) { a = ftz16(a); b = ftz16(b); c = ftz16(c); }
  var r = 0u;
  switch op {
    case 0u: { r = sum16(h2f(a), h2f(b)); }
    case 1u: { r = sum16(h2f(a), -h2f(b)); }
    case 2u: { r = f32_to_f16(bitcast<u32>(h2f(a) * h2f(b))); }
    case 3u: { r = sum16(h2f(a) * h2f(b), h2f(c)); }
    case 4u: { r = f32_to_f16(fminmax32(f16_to_f32(a), f16_to_f32(b), false)); }
    case 5u: { r = f32_to_f16(fminmax32(f16_to_f32(a), f16_to_f32(b), true)); }
    case 6u: { r = a ^ 0x8000u; }
    default: { r = a & 0x7fffu; }
  }
  if (ftz) { r = ftz16(r); }
  if (sat) { r = sat16(r); }
  return r;
}
// .f16 (the low half; the high bits 0) or .f16x2 (each half).
fn half_op(op: u32, a: u32, b: u32, c: u32, ftz: bool, sat: bool, x2: bool) -> u32 {
  let lo = half16(op, a, b, c, ftz, sat);
  if (!x2) { return lo; }
  return lo | (half16(op, a >> 16u, b >> 16u, c >> 16u, ftz, sat) << 16u);
}
"#;

/// Whether a statement needs [`HALF_PRELUDE`].
pub(super) fn uses(s: &Stmt) -> bool {
    matches!(
        s.inst,
        Inst::Tern {
            op: TernOp::Half(_),
            ..
        }
    )
}

/// The operation's code in `half16`.
fn op_code(op: HalfOp) -> u32 {
    match op {
        HalfOp::Add => 0,
        HalfOp::Sub => 1,
        HalfOp::Mul => 2,
        HalfOp::Fma { .. } => 3,
        HalfOp::Min => 4,
        HalfOp::Max => 5,
        HalfOp::Neg => 6,
        HalfOp::Abs => 7,
    }
}

/// The WGSL expression of `h` on the 32-bit sources `a`, `b`, `c` (a `u32`
/// result). An fma's negations flip the sign of each half first, as the
/// interpreter's contraction does.
pub(super) fn expr(h: Half, a: &str, b: &str, c: &str) -> String {
    let sign = if h.x2 { "0x80008000u" } else { "0x8000u" };
    let (na, nc) = match h.op {
        HalfOp::Fma { neg_ab, neg_c } => (neg_ab, neg_c),
        _ => (false, false),
    };
    let flip = |v: &str, neg: bool| {
        if neg {
            format!("({v} ^ {sign})")
        } else {
            v.to_string()
        }
    };
    format!(
        "half_op({}u, {}, {b}, {}, {}, {}, {})",
        op_code(h.op),
        flip(a, na),
        flip(c, nc),
        h.ftz,
        h.sat,
        h.x2
    )
}
