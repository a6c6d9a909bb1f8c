//! WGSL for the bit-manipulation instructions of the control-flow form
//! (`bfi`, `bfe`, `prmt`, `lop3`, `shf`, `szext`, `fns`, `dp4a`, `dp2a`):
//! each written from the same PTX ISA pseudocode as the interpreter's
//! `bit_ops.rs`, on `u32` and `vec2<u32>` (64-bit) values, so the results are
//! the interpreter's bit for bit.

use super::writer::{ExprWidth, KernelWriter};
use crate::cfg::{BitOp, Inst, PrmtMode, Stmt, TernOp, Val};

/// The helpers, emitted when a kernel uses one of these instructions.
pub(super) const BITS_PRELUDE: &str = r#"
// The low n bits set (all once n >= 32 or 64).
fn lm32(n: u32) -> u32 { return select((1u << min(n, 31u)) - 1u, 0xffffffffu, n >= 32u); }
fn lm64(n: u32) -> vec2<u32> {
  if (n >= 32u) { return vec2<u32>(0xffffffffu, lm32(n - 32u)); }
  return vec2<u32>(lm32(n), 0u);
}
fn bit64(x: vec2<u32>, k: u32) -> u32 { return select(x.x >> k, x.y >> (k - 32u), k >= 32u) & 1u; }
fn bfi32(a: u32, b: u32, pos: u32, len: u32) -> u32 {
  let m = shl32(lm32(len & 0xffu), pos & 0xffu, 32u);
  return (b & ~m) | (shl32(a, pos & 0xffu, 32u) & m);
}
fn bfi64(a: vec2<u32>, b: vec2<u32>, pos: u32, len: u32) -> vec2<u32> {
  let m = shl64(lm64(len & 0xffu), pos & 0xffu);
  return (b & ~m) | (shl64(a, pos & 0xffu) & m);
}
fn bfe32(x: u32, b: u32, c: u32, signed: bool) -> u32 {
  let pos = b & 0xffu;
  let len = c & 0xffu;
  let v = min(len, 32u - min(pos, 32u));
  var s = 0u;
  if (signed && len > 0u) { s = (x >> min(pos + len - 1u, 31u)) & 1u; }
  return (shru32(x, pos, 32u) & lm32(v)) | select(0u, ~lm32(v), s != 0u);
}
fn bfe64(x: vec2<u32>, b: u32, c: u32, signed: bool) -> vec2<u32> {
  let pos = b & 0xffu;
  let len = c & 0xffu;
  let v = min(len, 64u - min(pos, 64u));
  var s = 0u;
  if (signed && len > 0u) { s = bit64(x, min(pos + len - 1u, 63u)); }
  let m = lm64(v);
  return (shru64(x, pos) & m) | select(vec2<u32>(0u), ~m, s != 0u);
}
fn szext32(a: u32, b: u32, clamp: bool, signed: bool) -> u32 {
  let b1 = b & 31u;
  let too_large = b >= 32u && clamp;
  let m = select(0xffffffffu << b1, 0u, too_large);
  let sign_pos = (b1 + 31u) & 31u;
  let sign = !(b1 == 0u || too_large || !signed) && ((a >> sign_pos) & 1u) == 1u;
  return (a & ~m) | select(0u, m, sign);
}
fn prmt_byte(a: u32, b: u32, i: u32) -> u32 {
  let j = i & 7u;
  return select(a >> (8u * j), b >> (8u * (j - 4u)), j >= 4u) & 0xffu;
}
fn prmt32(a: u32, b: u32, c: u32, mode: u32) -> u32 {
  var d = 0u;
  if (mode == 0u) {
    for (var k = 0u; k < 4u; k = k + 1u) {
      let s = (c >> (4u * k)) & 0xfu;
      var v = prmt_byte(a, b, s);
      if ((s & 8u) != 0u) { v = select(0u, 0xffu, (v & 0x80u) != 0u); }
      d = d | (v << (8u * k));
    }
    return d;
  }
  let s = c & 3u;
  var idx = vec4<u32>(s, s + 1u, s + 2u, s + 3u);
  switch mode {
    case 2u: { idx = vec4<u32>(s, (s + 7u) & 7u, (s + 6u) & 7u, (s + 5u) & 7u); }
    case 3u: { idx = vec4<u32>(s); }
    case 4u: { idx = vec4<u32>(s, max(s, 1u), max(s, 2u), 3u); }
    case 5u: { idx = vec4<u32>(0u, min(s, 1u), min(s, 2u), s); }
    case 6u: { let h = 2u * (s & 1u); idx = vec4<u32>(h, h + 1u, h, h + 1u); }
    default: {}
  }
  for (var k = 0u; k < 4u; k = k + 1u) { d = d | (prmt_byte(a, b, idx[k & 3u]) << (8u * k)); }
  return d;
}
fn lop3_32(a: u32, b: u32, c: u32, lut: u32) -> u32 {
  var d = 0u;
  for (var j = 0u; j < 8u; j = j + 1u) {
    if (((lut >> j) & 1u) == 1u) {
      let x = select(~a, a, (j & 4u) != 0u);
      let y = select(~b, b, (j & 2u) != 0u);
      let z = select(~c, c, (j & 1u) != 0u);
      d = d | (x & y & z);
    }
  }
  return d;
}
fn shf32(a: u32, b: u32, c: u32, left: bool, clamp: bool) -> u32 {
  let n = select(c & 31u, min(c, 32u), clamp);
  let x = vec2<u32>(a, b);
  if (left) { return shl64(x, n).y; }
  return shru64(x, n).x;
}
fn fns32(mask: u32, base: u32, offset: u32) -> u32 {
  if (base > 31u) { return 0xffffffffu; }
  let off = bitcast<i32>(offset);
  if (off == 0) { return select(0xffffffffu, base, ((mask >> base) & 1u) == 1u); }
  var count = u32(abs(off + select(-1, 1, off < 0)));
  if (off == i32(-2147483647 - 1)) { count = 0x7fffffffu; }
  var pos = i32(base);
  let inc = select(-1, 1, off > 0);
  loop {
    if (pos < 0 || pos > 31) { break; }
    if (((mask >> u32(pos)) & 1u) == 1u) {
      if (count == 0u) { return u32(pos); }
      count = count - 1u;
    }
    pos = pos + inc;
  }
  return 0xffffffffu;
}
fn sbyte(x: u32, i: u32, signed: bool) -> i32 {
  let v = (x >> (8u * i)) & 0xffu;
  return select(i32(v), bitcast<i32>(sx32(v, 8u)), signed);
}
fn shalf(x: u32, i: u32, signed: bool) -> i32 {
  let v = (x >> (16u * i)) & 0xffffu;
  return select(i32(v), bitcast<i32>(sx32(v, 16u)), signed);
}
fn dp4a32(a: u32, b: u32, c: u32, sa: bool, sb: bool) -> u32 {
  var d = c;
  for (var i = 0u; i < 4u; i = i + 1u) { d = d + bitcast<u32>(sbyte(a, i, sa) * sbyte(b, i, sb)); }
  return d;
}
fn dp2a32(a: u32, b: u32, c: u32, sa: bool, sb: bool, hi: bool) -> u32 {
  let sel = select(0u, 2u, hi);
  var d = c;
  for (var i = 0u; i < 2u; i = i + 1u) { d = d + bitcast<u32>(shalf(a, i, sa) * sbyte(b, sel + i, sb)); }
  return d;
}
"#;

/// Whether a statement needs [`BITS_PRELUDE`].
pub(super) fn uses(s: &Stmt) -> bool {
    matches!(
        s.inst,
        Inst::Tern {
            op: TernOp::Bit(_),
            ..
        }
    )
}

fn mode_code(m: PrmtMode) -> u32 {
    match m {
        PrmtMode::Generic => 0,
        PrmtMode::F4e => 1,
        PrmtMode::B4e => 2,
        PrmtMode::Rc8 => 3,
        PrmtMode::Ecl => 4,
        PrmtMode::Ecr => 5,
        PrmtMode::Rc16 => 6,
    }
}

impl KernelWriter<'_> {
    /// A bit-manipulation operation on `a, b, c`.
    pub(super) fn bits(&self, op: BitOp, a: Val, b: Val, c: Val) -> (String, ExprWidth) {
        let (a32, b32, c32) = (self.v32(a), self.v32(b), self.v32(c));
        let pos_len = |len: Option<u32>| match len {
            Some(l) => (c32.clone(), format!("{}u", l & 0xff)),
            None => (
                format!("({c32} & 0xffu)"),
                format!("(({c32} >> 8u) & 0xffu)"),
            ),
        };
        match op {
            BitOp::Bfi { bits, len } if bits > 32 => {
                let (p, n) = pos_len(len);
                (
                    format!("bfi64({}, {}, {p}, {n})", self.v64(a), self.v64(b)),
                    ExprWidth::B64,
                )
            }
            BitOp::Bfi { len, .. } => {
                let (p, n) = pos_len(len);
                (format!("bfi32({a32}, {b32}, {p}, {n})"), ExprWidth::B32)
            }
            BitOp::Bfe { bits, signed } if bits > 32 => (
                format!("bfe64({}, {b32}, {c32}, {signed})", self.v64(a)),
                ExprWidth::B64,
            ),
            BitOp::Bfe { signed, .. } => (
                format!("bfe32({a32}, {b32}, {c32}, {signed})"),
                ExprWidth::B32,
            ),
            BitOp::Prmt(m) => (
                format!("prmt32({a32}, {b32}, {c32}, {}u)", mode_code(m)),
                ExprWidth::B32,
            ),
            BitOp::Lop3(lut) => (
                format!("lop3_32({a32}, {b32}, {c32}, {lut}u)"),
                ExprWidth::B32,
            ),
            BitOp::Shf { left, clamp } => (
                format!("shf32({a32}, {b32}, {c32}, {left}, {clamp})"),
                ExprWidth::B32,
            ),
            BitOp::Fns => (format!("fns32({a32}, {b32}, {c32})"), ExprWidth::B32),
            BitOp::Dp4a { sa, sb } => (
                format!("dp4a32({a32}, {b32}, {c32}, {sa}, {sb})"),
                ExprWidth::B32,
            ),
            BitOp::Dp2a { sa, sb, hi } => (
                format!("dp2a32({a32}, {b32}, {c32}, {sa}, {sb}, {hi})"),
                ExprWidth::B32,
            ),
            BitOp::Szext { clamp, signed } => (
                format!("szext32({a32}, {b32}, {clamp}, {signed})"),
                ExprWidth::B32,
            ),
            BitOp::PackPosLen => (
                format!("(({a32} & 0xffu) | (({b32} & 0xffu) << 8u))"),
                ExprWidth::B32,
            ),
            BitOp::Pack { w: 32 } => (format!("vec2<u32>({a32}, {b32})"), ExprWidth::B64),
            BitOp::Pack { w } => (
                format!("(({a32} & msk({w}u)) | (({b32} & msk({w}u)) << {w}u))"),
                ExprWidth::B32,
            ),
            BitOp::Unpack { w: 32, i } => {
                let half = if i == 0 { "x" } else { "y" };
                (format!("({}).{half}", self.v64(a)), ExprWidth::B32)
            }
            BitOp::Unpack { w, i } => (
                format!(
                    "(shru64({}, {}u).x & msk({w}u))",
                    self.v64(a),
                    u32::from(w) * u32::from(i)
                ),
                ExprWidth::B32,
            ),
            BitOp::Lop3Pred { or } => {
                let o = if or { "||" } else { "&&" };
                (
                    format!("select(0u, 1u, ({a32} != 0u) {o} (({b32} & 1u) != 0u))"),
                    ExprWidth::B32,
                )
            }
        }
    }
}
