//! WGSL of `ex2.approx.f32` ([`UnOp::Ex2F32`]): the steps of
//! [`crate::cfg::ex2_f32`] on `u32` pairs, so the GPU gives the interpreter's
//! correctly rounded `2^x` bit for bit on any adapter (integers only, no f64).
//! The Horner steps are written out with the coefficients of
//! [`EX2_COEFFS`], from the same constants the interpreter uses.

use std::fmt::Write as _;

use crate::cfg::{Inst, Stmt, UnOp, EX2_COEFFS};

/// The helpers before the Horner steps: the exact high half of a 64 × 64-bit
/// product, and the rounding of `2ⁿ·(1 + p/2⁶⁴)` to an f32.
const EX2_HELPERS: &str = r#"
// The high 64 bits of the 128-bit product a * b, exactly.
fn mulhi64(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
  let ll = mulw_u32(a.x, b.x); let lh = mulw_u32(a.x, b.y);
  let hl = mulw_u32(a.y, b.x); let hh = mulw_u32(a.y, b.y);
  let w1 = add64(add64(w64(ll.y), w64(lh.x)), w64(hl.x));
  let w2 = add64(add64(add64(w64(hh.x), w64(lh.y)), w64(hl.y)), w64(w1.y));
  return vec2<u32>(w2.x, hh.y + w2.y);
}
// 2^n (1 + p / 2^64) rounded to the nearest even f32: the significand
// 2^63 + p / 2 (p's last bit sticky) shifted right by 40, or more for a
// subnormal result.
fn ex2_round(n: i32, p: vec2<u32>) -> u32 {
  let b = vec2<u32>((p.x >> 1u) | (p.y << 31u), (p.y >> 1u) | 0x80000000u);
  var base = 0u;
  var s = 40u;
  if (n >= -126) { base = u32(n + 126) << 23u; } else { s = u32(-86 - n); }
  let mant = shru64(b, s);
  let rem = sub64(b, shl64(mant, s));
  let half = shl64(vec2<u32>(1u, 0u), s - 1u);
  let up = ltu64(half, rem) || (all(rem == half) && ((p.x & 1u) != 0u || (mant.x & 1u) != 0u));
  return base + mant.x + select(0u, 1u, up);
}
// ex2.approx{.ftz}.f32: the correctly rounded f32 of 2^a (vgpu-ir cfg/exp2.rs).
fn ex2_f32(a0: u32, ftz: bool) -> u32 {
  var a = a0;
  if (ftz && (a & 0x7f800000u) == 0u) { a = a & 0x80000000u; }
  let mag = a & 0x7fffffffu;
  let neg = (a >> 31u) != 0u;
  if (mag > 0x7f800000u) { return 0x7fffffffu; }
  if (mag < 0x33000000u) { return 0x3f800000u; }
  if (!neg && mag >= 0x43000000u) { return 0x7f800000u; }
  if (neg && mag >= 0x43160000u) { return 0u; }
  var xq = shl64(vec2<u32>((mag & 0x7fffffu) | 0x800000u, 0u), (mag >> 23u) - 102u);
  if (neg) { xq = neg64(xq); }
  let n = bitcast<i32>(xq.y) >> 16u;
  let fq = shl64(xq, 16u);
"#;

/// The WGSL functions `mulhi64`, `ex2_round` and `ex2_f32(a: u32, ftz: bool)
/// -> u32` (they use the integer prelude's 64-bit helpers).
pub(super) fn ex2_prelude() -> String {
    let lit = |c: u64| format!("vec2<u32>({:#010x}u, {:#010x}u)", c as u32, c >> 32);
    let mut out = String::from(EX2_HELPERS);
    let (last, rest) = EX2_COEFFS.split_last().expect("coefficients");
    let _ = writeln!(out, "  var acc = {};", lit(*last));
    for &c in rest.iter().rev() {
        let _ = writeln!(out, "  acc = add64({}, mulhi64(acc, fq));", lit(c));
    }
    out.push_str(
        "  let r = ex2_round(n, mulhi64(acc, fq));\n  \
         return select(r, 0u, ftz && (r & 0x7f800000u) == 0u);\n}\n",
    );
    out
}

/// Whether a statement needs [`ex2_prelude`].
pub(super) fn uses(s: &Stmt) -> bool {
    matches!(
        s.inst,
        Inst::Un {
            op: UnOp::Ex2F32 { .. },
            ..
        }
    )
}
