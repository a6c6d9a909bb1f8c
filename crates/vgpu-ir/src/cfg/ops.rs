//! The operations of the control-flow form. Integer operations name their
//! width in bits (8, 16, 32 or 64; 1 for predicates): the result is masked to
//! it. Float operations name their type and rounding; every one is exact
//! (correctly rounded as PTX defines it) or not here at all. Registers hold
//! bits only; an f64 in a register is its bits ([`F64Un`], [`F64Bin`],
//! [`F64Cvt`], [`TernOp::FmaF64`]).

/// Integer comparisons (`lo ls hi hs` are `Lt Le Gt Ge` unsigned).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ICmp {
    /// `==`
    Eq,
    /// `!=`
    Ne,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
}

/// Float comparisons: ordered (false when either operand is NaN), unordered
/// (true when either is NaN), `Num` (neither is NaN) and `Nan` (either is).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FCmp {
    /// ordered `==`
    Eq,
    /// ordered `!=`
    Ne,
    /// ordered `<`
    Lt,
    /// ordered `<=`
    Le,
    /// ordered `>`
    Gt,
    /// ordered `>=`
    Ge,
    /// unordered `==`
    Equ,
    /// unordered `!=`
    Neu,
    /// unordered `<`
    Ltu,
    /// unordered `<=`
    Leu,
    /// unordered `>`
    Gtu,
    /// unordered `>=`
    Geu,
    /// neither is NaN
    Num,
    /// either is NaN
    Nan,
}

/// One-source operations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum UnOp {
    /// The low `bits` bits of `a`.
    Mov(u8),
    /// Bitwise not on `bits` bits.
    Not(u8),
    /// Two's-complement negation on `bits` bits.
    Neg(u8),
    /// f32 `−a` (the sign bit flipped).
    NegF32,
    /// f32 `|a|` (the sign bit cleared).
    AbsF32,
    /// f32 square root, correctly rounded (`sqrt.rn.f32`; computed in f64 and
    /// rounded once, exact since 53 ≥ 2·24 + 2).
    SqrtF32Rn,
    /// f32 reciprocal, correctly rounded (`rcp.rn.f32`, through f64 as above).
    RcpF32Rn,
    /// `rsqrt.approx.f32` as the interpreter defines it: `1 / √a` in f64
    /// (each step correctly rounded), rounded once to f32.
    RsqrtF32,
    /// `lg2.approx.f32` as the interpreter defines it: `log2` of `a` in f64,
    /// rounded once to f32 (NaN and negative `a` give the canonical NaN, ±0
    /// −∞). Evaluated in f64 to within about 0.6 ulp of f64, which rounds to
    /// the same f32 for every f32 `a`: no f32's f64 log2 lies within 3 f64
    /// ulps of an f32 rounding boundary (checked over all 2³² inputs).
    Lg2F32,
    /// `ex2.approx{.ftz}.f32`: the correctly rounded f32 of `2^a`
    /// ([`crate::cfg::ex2_f32`], the interpreter's definition), on integers
    /// only, so every backend gives the same bits without f64.
    Ex2F32 {
        /// `.ftz`: a subnormal `a` reads as zero, a subnormal result is `+0`.
        ftz: bool,
    },
    /// `popc.b{32,64}`: the number of one bits (a 32-bit result).
    Popc(u8),
    /// `clz.b{32,64}`: the number of leading zero bits (a 32-bit result).
    Clz(u8),
    /// `brev.b{32,64}`: the bits reversed.
    Brev(u8),
    /// `bfind{.shiftamt}.{u32,s32}`: the most significant bit (of `!a` for a
    /// negative signed `a`), or `31 −` it with `shiftamt`; all ones when none.
    Bfind {
        /// `.s32`.
        signed: bool,
        /// `.shiftamt`.
        shiftamt: bool,
    },
    /// An f64 operation on a 64-bit register ([`F64Un`]).
    F64(F64Un),
}

/// One-source f64 operations (registers hold the f64's bits). The rounded
/// ones are correctly rounded to nearest even, a NaN result is PTX's
/// canonical `0x7fffffffffffffff`, as in the interpreter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum F64Un {
    /// `−a` (the sign bit flipped).
    Neg,
    /// `|a|` (the sign bit cleared).
    Abs,
    /// `sqrt.rn.f64`: `√a` (`√−0 = −0`, a negative `a` gives NaN).
    Sqrt,
    /// `rcp.rn.f64` (and `rcp.approx{.ftz}.f64`, which the interpreter
    /// computes alike): `1 / a`.
    Rcp,
    /// `rsqrt.approx{.ftz}.f64` as the interpreter defines it: `1 / √a`, each
    /// step correctly rounded.
    Rsqrt,
    /// `sqrt.{rz,rm,rp}.f64`: `√a` correctly rounded in the mode (`√±0 = ±0`,
    /// `√+∞ = +∞`, a negative `a` gives NaN).
    SqrtRound(FloatRound),
    /// `rcp.{rz,rm,rp}.f64`: `1 / a` correctly rounded in the mode.
    RcpRound(FloatRound),
}

/// Two-source f64 operations, to nearest even; a NaN result is PTX's
/// canonical `0x7fffffffffffffff`, as in the interpreter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum F64Bin {
    /// `a + b`.
    Add,
    /// `a − b`.
    Sub,
    /// `a · b`.
    Mul,
    /// `min` (a NaN operand loses; −0 below +0).
    Min,
    /// `max` (a NaN operand loses; +0 above −0).
    Max,
    /// `div.rn.f64`: `a / b`, correctly rounded.
    Div,
    /// `setp.CMP.f64`: the comparison into a predicate (±0 equal; the
    /// unordered ones true when either operand is NaN).
    Setp(FCmp),
    /// `add.{rz,rm,rp}.f64`: `a + b` correctly rounded in the mode (IEEE
    /// 754: an overflow is `±∞` or the largest finite number of its sign as
    /// the mode rounds; an exact zero sum of opposite signs is `+0`, `−0`
    /// under `.rm`).
    AddRound(FloatRound),
    /// `sub.{rz,rm,rp}.f64`: [`F64Bin::AddRound`] of `a` and `−b`.
    SubRound(FloatRound),
    /// `mul.{rz,rm,rp}.f64`: `a · b` correctly rounded in the mode (a zero
    /// result signed by the operands' signs in every mode).
    MulRound(FloatRound),
    /// `div.{rz,rm,rp}.f64`: `a / b` correctly rounded in the mode.
    DivRound(FloatRound),
}

/// Two-source operations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BinOp {
    /// f32 `a + b`, to nearest even.
    AddF32,
    /// f32 `a − b`, to nearest even.
    SubF32,
    /// f32 `a · b`, to nearest even.
    MulF32,
    /// f32 `a / b`, correctly rounded (`div.rn.f32`; through f64, exact since
    /// 53 ≥ 2·24 + 2).
    DivF32Rn,
    /// f32 `min` (a NaN operand loses; −0 below +0).
    MinF32,
    /// f32 `max` (a NaN operand loses; +0 above −0).
    MaxF32,
    /// `setp.CMP.ftz.f32`: the comparison of the operands with subnormals
    /// read as zeros of their sign.
    SetpF32Ftz(FCmp),
    /// Integer `a + b` on `bits` bits, wrapping.
    Add(u8),
    /// Integer `a − b` on `bits` bits, wrapping.
    Sub(u8),
    /// Integer `a · b`, the low `bits` bits.
    MulLo(u8),
    /// Integer `a · b` of 32-bit operands, the high 32 bits.
    MulHi32 {
        /// Signed operands.
        signed: bool,
    },
    /// 32 × 32 → 64-bit product.
    MulWide {
        /// Signed operands.
        signed: bool,
    },
    /// 16 × 16 → 32-bit product (`mul.wide.{u16,s16}`).
    MulWide16 {
        /// Signed operands.
        signed: bool,
    },
    /// Integer quotient on `bits` ≤ 32 bits, toward zero; all ones when
    /// `b = 0`, wrapping for `MIN / −1`.
    Div {
        /// Width.
        bits: u8,
        /// Signed operands.
        signed: bool,
    },
    /// Integer remainder on `bits` ≤ 32 bits with the dividend's sign; `a`
    /// when `b = 0`, 0 for `MIN % −1`.
    Rem {
        /// Width.
        bits: u8,
        /// Signed operands.
        signed: bool,
    },
    /// `bmsk.{clamp,wrap}.b32`: a mask of `b` bits from bit `a`.
    Bmsk {
        /// `.clamp` (else `.wrap`).
        clamp: bool,
    },
    /// Integer minimum on `bits` bits.
    Min {
        /// Width.
        bits: u8,
        /// Signed comparison.
        signed: bool,
    },
    /// Integer maximum on `bits` bits.
    Max {
        /// Width.
        bits: u8,
        /// Signed comparison.
        signed: bool,
    },
    /// Bitwise and on `bits` bits.
    And(u8),
    /// Bitwise or on `bits` bits.
    Or(u8),
    /// Bitwise xor on `bits` bits.
    Xor(u8),
    /// `a << b` on `bits` bits (0 once `b ≥ bits`).
    Shl(u8),
    /// Logical `a >> b` on `bits` bits (0 once `b ≥ bits`).
    ShrU(u8),
    /// Arithmetic `a >> b` on `bits` bits (the sign once `b ≥ bits`).
    ShrS(u8),
    /// Integer comparison of `bits`-bit operands into a predicate.
    SetpInt {
        /// Which comparison.
        cmp: ICmp,
        /// Signed comparison.
        signed: bool,
        /// Operand width.
        bits: u8,
    },
    /// f32 comparison into a predicate.
    SetpF32(FCmp),
    /// An f64 operation on 64-bit registers ([`F64Bin`]).
    F64(F64Bin),
}

/// The modes of `prmt.b32`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PrmtMode {
    /// Four 4-bit selectors in `c[15:0]`, the msb of each replicating the sign.
    Generic,
    /// `.f4e`: forward four extract.
    F4e,
    /// `.b4e`: backward four extract.
    B4e,
    /// `.rc8`: replicate one byte.
    Rc8,
    /// `.ecl`: edge clamp left.
    Ecl,
    /// `.ecr`: edge clamp right.
    Ecr,
    /// `.rc16`: replicate one half.
    Rc16,
}

/// The f32 operations that PTX writes with `.ftz` or `.sat`
/// ([`TernOp::F32Mod`]), each correctly rounded to nearest even as the
/// interpreter computes them (`div.approx`/`div.full`, `sqrt.approx`,
/// `rcp.approx` included; `rsqrt` and `lg2` as [`UnOp::RsqrtF32`] and
/// [`UnOp::Lg2F32`]). Binary ones read `a` and `b`, unary ones `a`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum F32Arith {
    /// `a + b`
    Add,
    /// `a − b`
    Sub,
    /// `a · b`
    Mul,
    /// `a / b`
    Div,
    /// `min(a, b)` as [`BinOp::MinF32`]
    Min,
    /// `max(a, b)` as [`BinOp::MaxF32`]
    Max,
    /// `|a|`
    Abs,
    /// `−a`
    Neg,
    /// `√a`
    Sqrt,
    /// `1 / a`
    Rcp,
    /// `1 / √a`
    Rsqrt,
    /// `log2 a`
    Lg2,
    /// `(±a) · b + (±c)`, one rounding (as [`TernOp::FmaF32`])
    Fma {
        /// The product negated.
        neg_ab: bool,
        /// The addend negated.
        neg_c: bool,
    },
}

impl F32Arith {
    /// Whether the operation is computed through f64 (`SHADER_F64`).
    pub(crate) fn uses_f64(self) -> bool {
        matches!(
            self,
            F32Arith::Div
                | F32Arith::Sqrt
                | F32Arith::Rcp
                | F32Arith::Rsqrt
                | F32Arith::Lg2
                | F32Arith::Fma { .. }
        )
    }
}

/// PTX's f32 modifiers around an [`F32Arith`] operation, as the interpreter
/// applies them: `.ftz` reads each subnormal operand as a zero of its sign
/// and writes a subnormal result as one; `.sat` then clamps the result to
/// `[0, 1]` (NaN to `+0`, `−0` kept).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct F32Mods {
    /// `.ftz`
    pub ftz: bool,
    /// `.sat`
    pub sat: bool,
}

/// Three-source operations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TernOp {
    /// An f32 operation with PTX's `.ftz` and `.sat` ([`F32Mods`]); its
    /// unused operands are ignored.
    F32Mod {
        /// The operation.
        op: F32Arith,
        /// Its modifiers.
        m: F32Mods,
    },
    /// f32 `(±a) · b + (±c)` with one rounding to nearest even (`fma.rn.f32`;
    /// the product is exact in f64, the sum rounded to odd there and then to
    /// f32, which is exact since 53 ≥ 24 + 2).
    FmaF32 {
        /// The product negated.
        neg_ab: bool,
        /// The addend negated.
        neg_c: bool,
    },
    /// Integer `a · b + c`, the low `bits` bits.
    MadLo(u8),
    /// 32 × 32 + 64 → 64 bits.
    MadWide {
        /// Signed operands.
        signed: bool,
    },
    /// `c ? a : b` on `bits` bits, `c` a predicate.
    Selp(u8),
    /// A bit-manipulation instruction ([`BitOp`]).
    Bit(BitOp),
    /// Half-precision arithmetic ([`Half`]).
    Half(Half),
    /// f64 `(±a) · b + (±c)` with one rounding (`fma.f64`, `mad.f64`, a
    /// contracted `mul` + `add/sub`), IEEE 754's: an exact zero sum of
    /// opposite signs is `+0`, `−0` under `.rm`; a NaN result is the
    /// canonical NaN.
    FmaF64 {
        /// The product negated.
        neg_ab: bool,
        /// The addend negated.
        neg_c: bool,
        /// The rounding mode (`.rn` for a contracted `mul` + `add/sub`).
        round: FloatRound,
    },
}

/// Half-precision arithmetic on f16 bits: `.f16` on the low 16 bits of a
/// register (the result's high bits 0), `.f16x2` on both halves of a 32-bit
/// one. Each result is the exact value rounded once to nearest even, as the
/// interpreter's half_ops.rs computes it; a NaN result is `0x7fff`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Half {
    /// The operation.
    pub op: HalfOp,
    /// `.f16x2` (else `.f16`).
    pub x2: bool,
    /// `.ftz`: subnormal operands and results flushed to a zero of their sign.
    pub ftz: bool,
    /// `.sat`: the result clamped to [0, 1], NaN to +0.
    pub sat: bool,
}

/// The operations of [`Half`], on sources `a, b, c`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HalfOp {
    /// `a + b`.
    Add,
    /// `a − b`.
    Sub,
    /// `a · b`.
    Mul,
    /// `(±a) · b + (±c)`, rounded once (`fma.rn`, and a contracted
    /// `mul` + `add`/`sub`).
    Fma {
        /// The product negated.
        neg_ab: bool,
        /// The addend negated.
        neg_c: bool,
    },
    /// `min` (a NaN operand loses; −0 below +0).
    Min,
    /// `max` (a NaN operand loses; +0 above −0).
    Max,
    /// `−a` (the sign bit flipped).
    Neg,
    /// `|a|` (the sign bit cleared).
    Abs,
}

/// The bit-manipulation instructions, on up to three sources `a, b, c`
/// (the interpreter's `bit_ops.rs`, from the PTX ISA pseudocode).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BitOp {
    /// `bfi.b{32,64}`: `b` with the low `len` bits of `a` inserted at `pos`
    /// (both `& 0xff`), the part past the msb dropped. `len` is the immediate
    /// when known (then `c` is `pos`), else `c` holds
    /// [`BitOp::PackPosLen`]'s packed pair.
    Bfi {
        /// Width.
        bits: u8,
        /// The immediate length.
        len: Option<u32>,
    },
    /// `bfe.{u,s}{32,64}`: the field of `c & 0xff` bits at `b & 0xff` of `a`,
    /// zero- or sign-extended (the sign is the field's last bit inside `a`).
    Bfe {
        /// Width.
        bits: u8,
        /// Signed.
        signed: bool,
    },
    /// `prmt.b32{.mode}`: bytes of `{b, a}` selected by `c`.
    Prmt(PrmtMode),
    /// `lop3.b32`: bit `i` is bit `(a_i << 2) | (b_i << 1) | c_i` of the table.
    Lop3(u8),
    /// `shf.{l,r}.{clamp,wrap}.b32`: the 64-bit `{b, a}` shifted by `c`
    /// (`min(c, 32)` or `c & 31`), its high (`.l`) or low (`.r`) word.
    Shf {
        /// `.l` (else `.r`).
        left: bool,
        /// `.clamp` (else `.wrap`).
        clamp: bool,
    },
    /// `fns.b32 mask, base, offset`: the `|offset|`-th set bit from `base`
    /// up (offset > 0) or down (< 0), all ones when none or `base > 31`.
    Fns,
    /// `dp4a`: `c` plus the dot product of the bytes of `a` and `b`.
    Dp4a {
        /// `a` signed.
        sa: bool,
        /// `b` signed.
        sb: bool,
    },
    /// `dp2a.{lo,hi}`: `c` plus the dot product of the halves of `a` and
    /// bytes 0,1 (`.lo`) or 2,3 (`.hi`) of `b`.
    Dp2a {
        /// `a` signed.
        sa: bool,
        /// `b` signed.
        sb: bool,
        /// `.hi`.
        hi: bool,
    },
    /// `szext.{clamp,wrap}.{s32,u32}`: the low `b` bits of `a`, sign- or
    /// zero-extended.
    Szext {
        /// `.clamp` (else `.wrap`).
        clamp: bool,
        /// `.s32`.
        signed: bool,
    },
    /// `(a & 0xff) | ((b & 0xff) << 8)`: a `bfi`'s position and length in one
    /// operand (the form [`BitOp::Bfi`] reads when the length is a register).
    PackPosLen,
    /// `mov.b{32,64} d, {a, b}`: two parts of `w` bits packed, `a` low.
    Pack {
        /// The width of a part (8, 16 or 32).
        w: u8,
    },
    /// `mov.b{32,64} {…}, a`: part `i` of `a`, bits `w·i` up to `w·(i+1)`.
    Unpack {
        /// The width of a part (8, 16 or 32).
        w: u8,
        /// Which part.
        i: u8,
    },
    /// The predicate of `lop3.{or,and}`: `(a != 0) or/and b` (`a` the 32-bit
    /// result, `b` a predicate).
    Lop3Pred {
        /// `.or` (else `.and`).
        or: bool,
    },
}

/// Float rounding to an integer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IntRound {
    /// Toward zero (`.rzi`).
    Zero,
    /// To nearest even (`.rni`).
    Nearest,
    /// Toward −∞ (`.rmi`).
    Down,
    /// Toward +∞ (`.rpi`).
    Up,
}

/// Conversions (`cvt`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CvtOp {
    /// An integer of `sbits` bits (sign-extended when `signed`) wrapped to `dbits`.
    Int {
        /// Source width.
        sbits: u8,
        /// Source signed.
        signed: bool,
        /// Destination width.
        dbits: u8,
    },
    /// A 32-bit integer → f32, to nearest even.
    I32ToF32Rn {
        /// Source signed.
        signed: bool,
    },
    /// f32 → a 32-bit integer with the rounding, saturating; NaN gives 0.
    F32ToI32 {
        /// Destination signed.
        signed: bool,
        /// Rounding.
        rnd: IntRound,
    },
    /// f32 → f32 rounded to an integral value (`cvt.rni.f32.f32` …).
    F32Round(IntRound),
    /// `cvt.rn.f16.f32`: to the nearest f16, ties to even, overflow to
    /// infinity, NaN to `0x7fff` (the interpreter's), in the low 16 bits.
    F32ToF16Rn,
    /// `cvt.f32.f16` (exact; an f16 NaN becomes PTX's canonical NaN
    /// `0x7fffffff`, as in the interpreter).
    F16ToF32,
    /// A conversion to or from f64 ([`F64Cvt`]).
    F64(F64Cvt),
}

/// Conversions to and from f64, as PTX's `cvt` with `.rn` (or exact).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum F64Cvt {
    /// A 32-bit integer → f64 (exact).
    FromI32 {
        /// Source signed.
        signed: bool,
    },
    /// A 64-bit integer → f64, to nearest even.
    FromI64Rn {
        /// Source signed.
        signed: bool,
    },
    /// f32 → f64 (exact; NaN becomes the canonical f64 NaN).
    FromF32,
    /// f64 → f32, to nearest even (NaN becomes the canonical f32 NaN).
    ToF32Rn,
    /// f64 → an integer of `bits` bits (`cvt.{rni,rzi,rmi,rpi}{.sat}.
    /// {s,u}{8,16,32,64}.f64`): rounded with `rnd` (`.rzi` when no integer
    /// rounding is written), always saturated to the type (`.sat` changes
    /// nothing), NaN gives 0; the bits masked to the width.
    ToInt {
        /// Destination width.
        bits: u8,
        /// Destination signed.
        signed: bool,
        /// Rounding.
        rnd: IntRound,
    },
    /// f64 → f64 rounded to an integral value (`cvt.rni.f64.f64` …); NaN
    /// becomes the canonical NaN.
    Round(IntRound),
    /// f64 rounded to an integral value, then to the nearest f32
    /// (`cvt.rni.f32.f64` …, as the interpreter does it).
    RoundToF32(IntRound),
    /// f32 rounded to an integral value, in f64 (`cvt.rni.f64.f32` …).
    RoundFromF32(IntRound),
    /// f64 → f32 in a rounding mode (`cvt.{rn,rz,rm,rp}{.ftz}{.sat}.f32.f64`):
    /// `.ftz` flushes a subnormal result to a zero of its sign, `.sat` then
    /// clamps to [0, 1] (NaN to +0, −0 kept); NaN becomes the canonical NaN.
    ToF32 {
        /// The rounding.
        rnd: FloatRound,
        /// `.ftz`.
        ftz: bool,
        /// `.sat`.
        sat: bool,
    },
    /// A 64-bit integer → f64 in a rounding mode (`cvt.{rz,rm,rp}.f64.s64` …).
    FromI64 {
        /// Source signed.
        signed: bool,
        /// The rounding.
        rnd: FloatRound,
    },
}

/// A float rounding mode (`.rn`, `.rz`, `.rm`, `.rp`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FloatRound {
    /// To nearest, ties to even (`.rn`).
    Nearest,
    /// Toward zero (`.rz`).
    Zero,
    /// Toward −∞ (`.rm`).
    Down,
    /// Toward +∞ (`.rp`).
    Up,
}

impl UnOp {
    pub(crate) fn uses_f64(self) -> bool {
        matches!(
            self,
            UnOp::SqrtF32Rn | UnOp::RcpF32Rn | UnOp::RsqrtF32 | UnOp::Lg2F32 | UnOp::F64(_)
        )
    }
}

impl BinOp {
    pub(crate) fn uses_f64(self) -> bool {
        matches!(self, BinOp::DivF32Rn | BinOp::F64(_))
    }
}

impl TernOp {
    pub(crate) fn uses_f64(self) -> bool {
        match self {
            TernOp::FmaF32 { .. } | TernOp::FmaF64 { .. } => true,
            TernOp::F32Mod { op, .. } => op.uses_f64(),
            _ => false,
        }
    }
}

/// Atomic read-modify-write operations on 32-bit words (`atom`, `red`): the
/// word becomes `op(old, b, c)` and the destination receives `old`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AtomOp {
    /// Integer `old + b`, wrapping.
    Add,
    /// f32 `old + b` with subnormal operands and result flushed to zero (as
    /// `atom.add.f32` is defined), to nearest even.
    AddF32,
    /// Integer minimum.
    Min {
        /// Signed comparison.
        signed: bool,
    },
    /// Integer maximum.
    Max {
        /// Signed comparison.
        signed: bool,
    },
    /// f32 minimum (a NaN operand loses).
    MinF32,
    /// f32 maximum (a NaN operand loses).
    MaxF32,
    /// `old & b`.
    And,
    /// `old | b`.
    Or,
    /// `old ^ b`.
    Xor,
    /// `b`.
    Exch,
    /// `old == b ? c : old`.
    Cas,
    /// `old >= b ? 0 : old + 1`.
    Inc,
    /// `old == 0 || old > b ? b : old - 1`.
    Dec,
}
