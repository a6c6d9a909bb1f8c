//! WGSL for f64 held in 64-bit registers (`add`, `sub`, `mul`, `neg`, `abs`,
//! `min`, `max` on `.f64` and the `cvt`s to and from f64): a register is
//! a `vec2<u32>` (low, high), its value moved through `u64` with `bitcast`
//! (naga's WGSL cannot bitcast `f64` to `vec2<u32>` directly, so the adapter
//! needs `SHADER_INT64` beside `SHADER_F64`). `+ − ×` and the integer → f64
//! and f64 → f32 conversions are correctly rounded to nearest even in Vulkan,
//! so the results are the interpreter's bit for bit; a NaN result becomes
//! PTX's canonical NaN, as in the interpreter (`types.rs`'s `bf64`).
//! `fma`, `÷`, `√`, `setp` and the conversions with other rounding modes are
//! float64_exact.rs' integer sequences: WGSL's `fma` need not be fused
//! (lavapipe's f64 `fma` rounds twice: one ulp off, and `−∞` becomes NaN when
//! `a·b` overflows), its `÷` and `√` need not be correctly rounded.

use super::float64_exact::{float_mode, int_mode};
use super::writer::{ExprWidth, KernelWriter};
use crate::cfg::{F64Bin, F64Cvt, F64Un, Val};

/// The helpers, emitted when a kernel keeps an f64 in a register.
pub(super) const FLOAT64_PRELUDE: &str = r#"
fn d64(x: vec2<u32>) -> f64 { return bitcast<f64>(u64(x.x) | (u64(x.y) << 32u)); }
fn isnan64(x: vec2<u32>) -> bool {
  return (x.y & 0x7ff00000u) == 0x7ff00000u && ((x.y & 0xfffffu) | x.x) != 0u;
}
// The bits of v, a NaN as the canonical 0x7fffffffffffffff.
fn b64(v: f64) -> vec2<u32> {
  let u = bitcast<u64>(v);
  let r = vec2<u32>(u32(u & 0xfffffffflu), u32(u >> 32u));
  return select(r, vec2<u32>(0xffffffffu, 0x7fffffffu), isnan64(r));
}
// PTX min/max: a NaN operand loses to a number; -0 below +0.
fn fminmax64(a: vec2<u32>, b: vec2<u32>, is_max: bool) -> vec2<u32> {
  if (isnan64(a)) { return b64(d64(b)); }
  if (isnan64(b)) { return a; }
  let x = d64(a);
  let y = d64(b);
  if (x == y) {
    // Equal values (or +0 and -0): min takes the negative one, max the other.
    let a_neg = (a.y >> 31u) != 0u;
    return select(b, a, a_neg != is_max);
  }
  return select(b, a, (x < y) != is_max);
}
// A 64-bit integer to f64, to nearest even.
fn i64_to_f64(x: vec2<u32>, signed: bool) -> f64 {
  let u = u64(x.x) | (u64(x.y) << 32u);
  if (signed) { return f64(bitcast<i64>(u)); }
  return f64(u);
}
// An f32 (bits) to f64, exact (subnormals too: d32); a NaN canonical.
fn f32_to_f64(a: u32) -> vec2<u32> { return b64(d32(a)); }
// An f64 to f32 bits, to nearest even (subnormal results too: r32); a NaN as
// the canonical 0x7fffffff.
fn f64_to_f32(a: vec2<u32>) -> u32 {
  if (isnan64(a)) { return 0x7fffffffu; }
  return r32(d64(a));
}
"#;

impl KernelWriter<'_> {
    /// A one-source f64 operation (exact on the bits: no NaN change, as PTX).
    pub(super) fn f64_un(&self, op: F64Un, a: Val) -> (String, ExprWidth) {
        let x = self.v64(a);
        let e = match op {
            F64Un::Neg => format!("(({x}) ^ vec2<u32>(0u, 0x80000000u))"),
            F64Un::Abs => format!("(({x}) & vec2<u32>(0xffffffffu, 0x7fffffffu))"),
            // float64_exact.rs' integer sequences.
            F64Un::Sqrt => format!("sqrt64({x})"),
            F64Un::Rcp => format!("div64(vec2<u32>(0u, 0x3ff00000u), {x})"),
            F64Un::Rsqrt => format!("div64(vec2<u32>(0u, 0x3ff00000u), sqrt64({x}))"),
            F64Un::SqrtRound(r) => format!("sqrt64m({x}, {}u)", float_mode(r)),
            F64Un::RcpRound(r) => format!(
                "div64m(vec2<u32>(0u, 0x3ff00000u), {x}, {}u)",
                float_mode(r)
            ),
        };
        (e, ExprWidth::B64)
    }

    /// A two-source f64 operation.
    pub(super) fn f64_bin(&self, op: F64Bin, a: Val, b: Val) -> (String, ExprWidth) {
        let (x, y) = (self.v64(a), self.v64(b));
        let arith = |o: &str| format!("b64(d64({x}) {o} d64({y}))");
        let e = match op {
            F64Bin::Add => arith("+"),
            F64Bin::Sub => arith("-"),
            F64Bin::Mul => arith("*"),
            F64Bin::Min => format!("fminmax64({x}, {y}, false)"),
            F64Bin::Max => format!("fminmax64({x}, {y}, true)"),
            // float64_exact.rs' integer sequences.
            F64Bin::Div => format!("div64({x}, {y})"),
            F64Bin::AddRound(r) => format!("add64m({x}, {y}, {}u)", float_mode(r)),
            F64Bin::SubRound(r) => format!(
                "add64m({x}, ({y}) ^ vec2<u32>(0u, 0x80000000u), {}u)",
                float_mode(r)
            ),
            F64Bin::MulRound(r) => format!("mul64m({x}, {y}, {}u)", float_mode(r)),
            F64Bin::DivRound(r) => format!("div64m({x}, {y}, {}u)", float_mode(r)),
            F64Bin::Setp(c) => {
                return (format!("fcmp64({x}, {y}, {}u)", c as u32), ExprWidth::B32);
            }
        };
        (e, ExprWidth::B64)
    }

    /// A conversion to or from f64.
    pub(super) fn f64_cvt(&self, op: F64Cvt, a: Val) -> (String, ExprWidth) {
        match op {
            F64Cvt::FromI32 { signed: true } => (
                format!("b64(f64(bitcast<i32>({})))", self.v32(a)),
                ExprWidth::B64,
            ),
            F64Cvt::FromI32 { signed: false } => {
                (format!("b64(f64({}))", self.v32(a)), ExprWidth::B64)
            }
            F64Cvt::FromI64Rn { signed } => (
                format!("b64(i64_to_f64({}, {signed}))", self.v64(a)),
                ExprWidth::B64,
            ),
            F64Cvt::FromF32 => (format!("f32_to_f64({})", self.v32(a)), ExprWidth::B64),
            F64Cvt::ToF32Rn => (format!("f64_to_f32({})", self.v64(a)), ExprWidth::B32),
            // float64_exact.rs' integer sequences.
            F64Cvt::ToInt { bits, signed, rnd } => {
                let e = format!(
                    "f64_to_int({}, {bits}u, {signed}, {}u)",
                    self.v64(a),
                    int_mode(rnd)
                );
                if bits > 32 {
                    (e, ExprWidth::B64)
                } else {
                    (format!("({e}).x"), ExprWidth::B32)
                }
            }
            F64Cvt::Round(r) => (
                format!("f64_rint({}, {}u)", self.v64(a), int_mode(r)),
                ExprWidth::B64,
            ),
            F64Cvt::RoundToF32(r) => (
                format!(
                    "xto_f32(f64_rint({}, {}u), 1u, false, false)",
                    self.v64(a),
                    int_mode(r)
                ),
                ExprWidth::B32,
            ),
            F64Cvt::RoundFromF32(r) => (
                format!("f64_rint(xf32({}), {}u)", self.v32(a), int_mode(r)),
                ExprWidth::B64,
            ),
            F64Cvt::ToF32 { rnd, ftz, sat } => (
                format!(
                    "xto_f32({}, {}u, {ftz}, {sat})",
                    self.v64(a),
                    float_mode(rnd)
                ),
                ExprWidth::B32,
            ),
            F64Cvt::FromI64 { signed, rnd } => (
                format!(
                    "xi64_to_f64({}, {signed}, {}u)",
                    self.v64(a),
                    float_mode(rnd)
                ),
                ExprWidth::B64,
            ),
        }
    }
}
