//! WGSL expressions of the IR's operations: unary, binary, ternary and
//! conversion operators over register values (the emitter's `stmt` assigns
//! them; emit.rs).

use super::half;
use super::writer::{ExprWidth, KernelWriter};
use crate::cfg::*;

impl KernelWriter<'_> {
    pub(super) fn un(&self, op: UnOp, a: Val) -> (String, ExprWidth) {
        let a32 = self.v32(a);
        match op {
            UnOp::Mov(b) if b > 32 => (self.v64(a), ExprWidth::B64),
            UnOp::Mov(b) => (format!("({a32} & msk({b}u))"), ExprWidth::B32),
            UnOp::Not(b) if b > 32 => (format!("(~{})", self.v64(a)), ExprWidth::B64),
            UnOp::Not(b) => (format!("(~{a32} & msk({b}u))"), ExprWidth::B32),
            UnOp::Neg(b) if b > 32 => (format!("neg64({})", self.v64(a)), ExprWidth::B64),
            UnOp::Neg(b) => (format!("((0u - {a32}) & msk({b}u))"), ExprWidth::B32),
            UnOp::NegF32 => (format!("({a32} ^ 0x80000000u)"), ExprWidth::B32),
            UnOp::AbsF32 => (format!("({a32} & 0x7fffffffu)"), ExprWidth::B32),
            UnOp::SqrtF32Rn => (format!("sqrt_f32({a32})"), ExprWidth::B32),
            UnOp::RcpF32Rn => (format!("rcp_f32({a32})"), ExprWidth::B32),
            UnOp::RsqrtF32 => (format!("rsqrt_f32({a32})"), ExprWidth::B32),
            UnOp::Lg2F32 => (format!("lg2_f32({a32})"), ExprWidth::B32),
            UnOp::Ex2F32 { ftz } => (format!("ex2_f32({a32}, {ftz})"), ExprWidth::B32),
            UnOp::Popc(b) if b > 32 => {
                let x = self.v64(a);
                (
                    format!("(countOneBits(({x}).x) + countOneBits(({x}).y))"),
                    ExprWidth::B32,
                )
            }
            UnOp::Popc(_) => (format!("countOneBits({a32})"), ExprWidth::B32),
            UnOp::Clz(b) if b > 32 => {
                let x = self.v64(a);
                (
                    format!(
                        "select(countLeadingZeros(({x}).y), 32u + countLeadingZeros(({x}).x), ({x}).y == 0u)"
                    ),
                    ExprWidth::B32,
                )
            }
            UnOp::Clz(_) => (format!("countLeadingZeros({a32})"), ExprWidth::B32),
            UnOp::Brev(b) if b > 32 => {
                let x = self.v64(a);
                (
                    format!("vec2<u32>(reverseBits(({x}).y), reverseBits(({x}).x))"),
                    ExprWidth::B64,
                )
            }
            UnOp::Brev(_) => (format!("reverseBits({a32})"), ExprWidth::B32),
            UnOp::F64(op) => self.f64_un(op, a),
            UnOp::Bfind { signed, shiftamt } => {
                let m = if signed {
                    format!("bitcast<u32>(firstLeadingBit(bitcast<i32>({a32})))")
                } else {
                    format!("firstLeadingBit({a32})")
                };
                let e = if shiftamt {
                    format!("bfind_shift({m})")
                } else {
                    m
                };
                (e, ExprWidth::B32)
            }
        }
    }

    pub(super) fn bin(&self, op: BinOp, a: Val, b: Val) -> (String, ExprWidth) {
        let (a32, b32) = (self.v32(a), self.v32(b));
        let (a64, b64) = (self.v64(a), self.v64(b));
        let f32op = |o: &str| {
            (
                format!("bitcast<u32>(f({a32}) {o} f({b32}))"),
                ExprWidth::B32,
            )
        };
        let int = |bits: u8, o32: &str, f64: &str| {
            if bits > 32 {
                (format!("{f64}({a64}, {b64})"), ExprWidth::B64)
            } else {
                (
                    format!("(({a32} {o32} {b32}) & msk({bits}u))"),
                    ExprWidth::B32,
                )
            }
        };
        let bit = |bits: u8, o: &str| {
            if bits > 32 {
                (format!("({a64} {o} {b64})"), ExprWidth::B64)
            } else {
                (
                    format!("(({a32} {o} {b32}) & msk({bits}u))"),
                    ExprWidth::B32,
                )
            }
        };
        match op {
            BinOp::AddF32 => f32op("+"),
            BinOp::SubF32 => f32op("-"),
            BinOp::MulF32 => f32op("*"),
            BinOp::DivF32Rn => (format!("div_f32({a32}, {b32})"), ExprWidth::B32),
            BinOp::MinF32 => (format!("fminmax32({a32}, {b32}, false)"), ExprWidth::B32),
            BinOp::MaxF32 => (format!("fminmax32({a32}, {b32}, true)"), ExprWidth::B32),
            BinOp::Add(bits) => int(bits, "+", "add64"),
            BinOp::Sub(bits) => int(bits, "-", "sub64"),
            BinOp::MulLo(bits) => int(bits, "*", "mul64"),
            BinOp::MulHi32 { signed } => (
                format!("mulw_{}32({a32}, {b32}).y", if signed { "s" } else { "u" }),
                ExprWidth::B32,
            ),
            BinOp::MulWide { signed } => (mul_wide(signed, b, &a32, &b32), ExprWidth::B64),
            BinOp::MulWide16 { signed: false } => (
                format!("(({a32} & 0xffffu) * ({b32} & 0xffffu))"),
                ExprWidth::B32,
            ),
            BinOp::MulWide16 { signed: true } => (
                format!(
                    "bitcast<u32>(bitcast<i32>(sx32({a32}, 16u)) * bitcast<i32>(sx32({b32}, 16u)))"
                ),
                ExprWidth::B32,
            ),
            BinOp::Div { bits, signed } => (
                format!("divi32({a32}, {b32}, {signed}, {bits}u)"),
                ExprWidth::B32,
            ),
            BinOp::Rem { bits, signed } => (
                format!("remi32({a32}, {b32}, {signed}, {bits}u)"),
                ExprWidth::B32,
            ),
            BinOp::Bmsk { clamp } => (format!("bmsk32({a32}, {b32}, {clamp})"), ExprWidth::B32),
            BinOp::Min { bits, signed } | BinOp::Max { bits, signed } => {
                let lt_ab = matches!(op, BinOp::Min { .. });
                let (x, y) = if lt_ab { (&a, &b) } else { (&b, &a) };
                // Min: a < b ? a : b. Max: b < a ? a : b.
                if bits > 32 {
                    let c = format!("cmp64({}, {}, 2u, {signed})", self.v64(*x), self.v64(*y));
                    (format!("select({b64}, {a64}, {c} != 0u)"), ExprWidth::B64)
                } else {
                    let c = format!(
                        "cmp32({}, {}, 2u, {signed}, {bits}u)",
                        self.v32(*x),
                        self.v32(*y)
                    );
                    (
                        format!("(select({b32}, {a32}, {c} != 0u) & msk({bits}u))"),
                        ExprWidth::B32,
                    )
                }
            }
            BinOp::And(bits) => bit(bits, "&"),
            BinOp::Or(bits) => bit(bits, "|"),
            BinOp::Xor(bits) => bit(bits, "^"),
            BinOp::Shl(bits) if bits > 32 => (format!("shl64({a64}, {b32})"), ExprWidth::B64),
            BinOp::Shl(bits) => (format!("shl32({a32}, {b32}, {bits}u)"), ExprWidth::B32),
            BinOp::ShrU(bits) if bits > 32 => (format!("shru64({a64}, {b32})"), ExprWidth::B64),
            BinOp::ShrU(bits) => (format!("shru32({a32}, {b32}, {bits}u)"), ExprWidth::B32),
            BinOp::ShrS(bits) if bits > 32 => (format!("shrs64({a64}, {b32})"), ExprWidth::B64),
            BinOp::ShrS(bits) => (format!("shrs32({a32}, {b32}, {bits}u)"), ExprWidth::B32),
            BinOp::SetpInt { cmp, signed, bits } => {
                let c = cmp as u32;
                if bits > 32 {
                    (
                        format!("cmp64({a64}, {b64}, {c}u, {signed})"),
                        ExprWidth::B32,
                    )
                } else {
                    (
                        format!("cmp32({a32}, {b32}, {c}u, {signed}, {bits}u)"),
                        ExprWidth::B32,
                    )
                }
            }
            BinOp::SetpF32(c) => (
                format!("fcmp32({a32}, {b32}, {}u)", c as u32),
                ExprWidth::B32,
            ),
            BinOp::SetpF32Ftz(c) => (
                format!("fcmp32(ftz32({a32}), ftz32({b32}), {}u)", c as u32),
                ExprWidth::B32,
            ),
            BinOp::F64(op) => self.f64_bin(op, a, b),
        }
    }

    /// `fma.rn.f32` of the bits `a`, `b`, `c` (each negation flag flips an
    /// operand's sign) as this kernel computes it: the guarded device `fma`
    /// (its bare form where `dev`, in a speculative region's fast copy), the
    /// device's where it is exact, else the emulation.
    pub(super) fn fma_f32(
        &self,
        a: &str,
        b: &str,
        c: &str,
        (neg_ab, neg_c): (bool, bool),
        dev: bool,
    ) -> String {
        let na = if neg_ab { " ^ 0x80000000u" } else { "" };
        let nc = if neg_c { " ^ 0x80000000u" } else { "" };
        if self.guarded_fma {
            let f = if dev { "dev_fma" } else { "fma_native_f32" };
            format!("{f}({a}{na}, {b}, {c}{nc})")
        } else if self.o.native_fma_f32 {
            format!("bitcast<u32>(fma(f({a}{na}), f({b}), f({c}{nc})))")
        } else if self.o.int64 {
            format!("fma_f32_fast({a}{na}, {b}, {c}{nc})")
        } else {
            format!("fma_f32({a}{na}, {b}, {c}{nc})")
        }
    }

    /// [`TernOp::F32Mod`]: the operation on the operands' bits, each flushed
    /// first under `.ftz`, the result flushed, then clamped under `.sat`, a
    /// NaN result canonical.
    fn f32_mod(&self, op: F32Arith, m: F32Mods, [a, b, c]: [String; 3]) -> String {
        let fl = |x: String| if m.ftz { format!("ftz32({x})") } else { x };
        let (a, b, c) = (fl(a), fl(b), fl(c));
        let arith = |o: &str| format!("bitcast<u32>(f({a}) {o} f({b}))");
        let e = match op {
            F32Arith::Add => arith("+"),
            F32Arith::Sub => arith("-"),
            F32Arith::Mul => arith("*"),
            F32Arith::Div => format!("div_f32({a}, {b})"),
            F32Arith::Min => format!("fminmax32({a}, {b}, false)"),
            F32Arith::Max => format!("fminmax32({a}, {b}, true)"),
            F32Arith::Abs => format!("({a} & 0x7fffffffu)"),
            F32Arith::Neg => format!("({a} ^ 0x80000000u)"),
            F32Arith::Sqrt => format!("sqrt_f32({a})"),
            F32Arith::Rcp => format!("rcp_f32({a})"),
            F32Arith::Rsqrt => format!("rsqrt_f32({a})"),
            F32Arith::Lg2 => format!("lg2_f32({a})"),
            // Never the bare device fma: speculative regions test only
            // `FmaF32`.
            F32Arith::Fma { neg_ab, neg_c } => self.fma_f32(&a, &b, &c, (neg_ab, neg_c), false),
        };
        let e = fl(e);
        let e = if m.sat { format!("sat32({e})") } else { e };
        // As the interpreter: a NaN result canonical, but `abs`' and `neg`'s
        // (bit operations).
        if matches!(op, F32Arith::Abs | F32Arith::Neg) {
            e
        } else {
            format!("cnan32({e})")
        }
    }

    pub(super) fn tern(&self, op: TernOp, a: Val, b: Val, c: Val) -> (String, ExprWidth) {
        let (a32, b32, c32) = (self.v32(a), self.v32(b), self.v32(c));
        match op {
            TernOp::FmaF32 { neg_ab, neg_c } => (
                self.fma_f32(&a32, &b32, &c32, (neg_ab, neg_c), self.fast),
                ExprWidth::B32,
            ),
            TernOp::F32Mod { op, m } => (self.f32_mod(op, m, [a32, b32, c32]), ExprWidth::B32),
            TernOp::MadLo(bits) if bits > 32 => (
                format!(
                    "add64(mul64({}, {}), {})",
                    self.v64(a),
                    self.v64(b),
                    self.v64(c)
                ),
                ExprWidth::B64,
            ),
            TernOp::MadLo(bits) => (
                format!("(({a32} * {b32} + {c32}) & msk({bits}u))"),
                ExprWidth::B32,
            ),
            TernOp::MadWide { signed } => (
                format!(
                    "add64({}, {})",
                    mul_wide(signed, b, &a32, &b32),
                    self.v64(c)
                ),
                ExprWidth::B64,
            ),
            TernOp::Bit(op) => self.bits(op, a, b, c),
            TernOp::Half(h) => (half::expr(h, &a32, &b32, &c32), ExprWidth::B32),
            TernOp::FmaF64 {
                neg_ab,
                neg_c,
                round,
            } => (
                self.f64_fma(neg_ab, neg_c, round, [a, b, c]),
                ExprWidth::B64,
            ),
            TernOp::Selp(bits) => {
                let w = if bits > 32 {
                    ExprWidth::B64
                } else {
                    ExprWidth::B32
                };
                (
                    format!(
                        "select({}, {}, {c32} != 0u)",
                        self.val(b, bits),
                        self.val(a, bits)
                    ),
                    w,
                )
            }
        }
    }

    pub(super) fn cvt(&self, op: CvtOp, a: Val) -> (String, ExprWidth) {
        let a32 = self.v32(a);
        let mode = |r: IntRound| match r {
            IntRound::Zero => 0,
            IntRound::Nearest => 1,
            IntRound::Down => 2,
            IntRound::Up => 3,
        };
        match op {
            CvtOp::Int {
                sbits,
                signed,
                dbits,
            } => {
                if dbits > 32 {
                    if sbits > 32 {
                        (self.v64(a), ExprWidth::B64)
                    } else if signed {
                        (format!("sw64(sx32({a32}, {sbits}u))"), ExprWidth::B64)
                    } else {
                        (format!("w64({a32} & msk({sbits}u))"), ExprWidth::B64)
                    }
                } else if signed && sbits <= 32 {
                    (
                        format!("(sx32({a32}, {sbits}u) & msk({dbits}u))"),
                        ExprWidth::B32,
                    )
                } else {
                    (
                        format!("({a32} & msk({}u) & msk({dbits}u))", sbits.min(32)),
                        ExprWidth::B32,
                    )
                }
            }
            CvtOp::I32ToF32Rn { signed } => (
                format!("{}32_to_f32({a32})", if signed { "s" } else { "u" }),
                ExprWidth::B32,
            ),
            CvtOp::F32ToI32 { signed, rnd } => (
                format!("f32_to_i32({a32}, {signed}, {}u)", mode(rnd)),
                ExprWidth::B32,
            ),
            CvtOp::F32Round(rnd) => (format!("f32_round({a32}, {}u)", mode(rnd)), ExprWidth::B32),
            CvtOp::F32ToF16Rn => (format!("f32_to_f16({a32})"), ExprWidth::B32),
            CvtOp::F16ToF32 => (format!("f16_to_f32({a32})"), ExprWidth::B32),
            CvtOp::F64(op) => self.f64_cvt(op, a),
        }
    }
}

/// The 64-bit product of two 32-bit operands (`mul.wide`), written `a32`
/// and `b32`: by a power of two `2^k` (an immediate `b`, `k` ≤ 30 signed, ≤ 31
/// unsigned) a shift, whose low word stays one instruction where only it is
/// used (an address's); else `mulw_s32`/`mulw_u32`.
fn mul_wide(signed: bool, b: Val, a32: &str, b32: &str) -> String {
    let k = match b {
        Val::Imm(x) if (x as u32).is_power_of_two() => (x as u32).trailing_zeros(),
        _ => 32,
    };
    match (signed, k) {
        (true, 0) => format!("sw64({a32})"),
        (false, 0) => format!("w64({a32})"),
        (true, 1..=30) => format!(
            "vec2<u32>({a32} << {k}u, bitcast<u32>(bitcast<i32>({a32}) >> {}u))",
            32 - k
        ),
        (false, 1..=31) => format!("vec2<u32>({a32} << {k}u, {a32} >> {}u)", 32 - k),
        _ => format!("mulw_{}32({a32}, {b32})", if signed { "s" } else { "u" }),
    }
}
