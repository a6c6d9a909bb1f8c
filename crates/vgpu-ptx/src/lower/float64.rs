//! Lowering the closure-decoded f64 instructions: `add`, `sub`, `mul`,
//! `min`, `max`, `neg`, `abs`, `fma`/`mad` (and a `mul` contracted into an
//! `add`/`sub`), `div`, `rcp`, `sqrt`, `rsqrt.approx`, `setp` and the `cvt`s to
//! and from f64, each as the interpreter computes it (semantics.rs, float.rs).
//! The directed `add/sub/mul/fma/mad/div/rcp/sqrt.{rz,rm,rp}.f64` (IEEE 754,
//! as float.rs computes them) are lowered too; `.sat` with a directed
//! rounding is refused, naming the line.

use vgpu_ir::cfg::{
    BinOp, CvtOp, F64Bin, F64Cvt, F64Un, FloatRound, Inst, IntRound, TernOp, UnOp, Val,
};

use super::{source, Lowering};
use crate::ast::{self, Operand};
use crate::error::PtxError;
use crate::modifiers::Mods;
use crate::types::Ty;

/// The float rounding modifier, `.rn` when none is written (as the
/// interpreter's `Mods::rnd`).
fn float_round(m: &Mods) -> FloatRound {
    if m.has("rz") {
        FloatRound::Zero
    } else if m.has("rm") {
        FloatRound::Down
    } else if m.has("rp") {
        FloatRound::Up
    } else {
        FloatRound::Nearest
    }
}

impl Lowering<'_> {
    /// The f64 instruction `ins` (decoded into `d` from `[a, b, c]`), or
    /// `None` when it is not one.
    pub(super) fn float64(
        &self,
        at: usize,
        ins: &ast::Instruction,
        d: u32,
        [a, b, c]: [Val; 3],
    ) -> Result<Option<Inst>, PtxError> {
        let op = ins.opcode[0].as_str();
        let mods = Mods(&ins.opcode[1..]);
        let rn = float_round(&mods) == FloatRound::Nearest;
        let sat = mods.has("sat");
        let bin = |op| Inst::Bin {
            op: BinOp::F64(op),
            d,
            a,
            b,
        };
        let un = |op| Inst::Un {
            op: UnOp::F64(op),
            d,
            a,
        };
        let no = |why: &str| Err(self.unsupported(at, why));
        Ok(Some(match (op, mods.types().as_slice()) {
            ("cvt", [dt, st]) if *dt == Ty::F64 || *st == Ty::F64 => {
                return self.cvt64(at, &mods, d, a).map(Some)
            }
            // The interpreter ignores `.ftz` (and `.sat` on div/rcp/sqrt) here.
            (_, [Ty::F64]) if !rn => {
                let r = float_round(&mods);
                match op {
                    "add" if !sat => bin(F64Bin::AddRound(r)),
                    "sub" if !sat => bin(F64Bin::SubRound(r)),
                    "mul" if !sat => bin(F64Bin::MulRound(r)),
                    "fma" | "mad" if !sat => Inst::Tern {
                        op: TernOp::FmaF64 {
                            neg_ab: false,
                            neg_c: false,
                            round: r,
                        },
                        d,
                        a,
                        b,
                        c,
                    },
                    "div" => bin(F64Bin::DivRound(r)),
                    "rcp" => un(F64Un::RcpRound(r)),
                    "sqrt" => un(F64Un::SqrtRound(r)),
                    _ => return no("an f64 operation with a directed rounding"),
                }
            }
            (_, [Ty::F64]) if sat && !matches!(op, "div" | "rcp" | "sqrt" | "rsqrt") => {
                return no("an f64 operation with .sat")
            }
            ("add" | "sub", [Ty::F64]) => self.add_or_fma64(at, ins, d, [a, b, c])?,
            ("mul", [Ty::F64]) => bin(F64Bin::Mul),
            ("min", [Ty::F64]) => bin(F64Bin::Min),
            ("max", [Ty::F64]) => bin(F64Bin::Max),
            ("neg", [Ty::F64]) => un(F64Un::Neg),
            ("abs", [Ty::F64]) => un(F64Un::Abs),
            ("fma" | "mad", [Ty::F64]) => Inst::Tern {
                op: TernOp::FmaF64 {
                    neg_ab: false,
                    neg_c: false,
                    round: FloatRound::Nearest,
                },
                d,
                a,
                b,
                c,
            },
            // The interpreter ignores `.sat`, `.ftz` and `.approx` here.
            ("div", [Ty::F64]) => bin(F64Bin::Div),
            ("rcp", [Ty::F64]) => un(F64Un::Rcp),
            ("sqrt", [Ty::F64]) => un(F64Un::Sqrt),
            ("rsqrt", [Ty::F64]) => un(F64Un::Rsqrt),
            ("setp", [Ty::F64]) => {
                if ["and", "or", "xor"].iter().any(|b| mods.has(b)) {
                    return no("setp.f64 with a boolean operation");
                }
                match ins
                    .opcode
                    .get(1)
                    .and_then(|n| crate::warp_ops::float_cmp(n))
                {
                    Some(cmp) => bin(F64Bin::Setp(cmp)),
                    None => return no("this setp.f64 comparison"),
                }
            }
            _ => return Ok(None),
        }))
    }

    /// A `cvt` to or from f64, as semantics.rs' `cvt` computes it.
    fn cvt64(&self, at: usize, mods: &Mods, d: u32, a: Val) -> Result<Inst, PtxError> {
        let no = |why: &str| Err(self.unsupported(at, why));
        let (ftz, sat) = (mods.has("ftz"), mods.has("sat"));
        let irnd = super::int_round(mods);
        let rnd = float_round(mods);
        let tys = mods.types();
        let [dt, st] = tys[..] else {
            return no("cvt without two types");
        };
        let op = match (dt, st) {
            // f64 → integer: always saturated, so `.sat` changes nothing;
            // `.rzi` when no integer rounding is written.
            (dt, Ty::F64) if dt.is_int() => F64Cvt::ToInt {
                bits: dt.bits() as u8,
                signed: dt.is_signed(),
                rnd: irnd.unwrap_or(IntRound::Zero),
            },
            // A 32-bit integer is exact in f64 whatever the mode.
            (Ty::F64, Ty::S32 | Ty::U32) if !sat => F64Cvt::FromI32 {
                signed: st == Ty::S32,
            },
            (Ty::F64, Ty::S64 | Ty::U64) if !sat => {
                let signed = st == Ty::S64;
                if rnd == FloatRound::Nearest {
                    F64Cvt::FromI64Rn { signed }
                } else {
                    F64Cvt::FromI64 { signed, rnd }
                }
            }
            (Ty::F64, Ty::F32) if !sat && !ftz => match irnd {
                None => F64Cvt::FromF32,
                Some(r) => F64Cvt::RoundFromF32(r),
            },
            (Ty::F64, Ty::F64) if !sat => match irnd {
                Some(r) => F64Cvt::Round(r),
                None => return no("cvt.f64.f64 without an integer rounding"),
            },
            (Ty::F32, Ty::F64) => match irnd {
                Some(r) if !sat && !ftz => F64Cvt::RoundToF32(r),
                Some(_) => return no("cvt.rXi.f32.f64 with .ftz or .sat"),
                None if rnd == FloatRound::Nearest && !ftz && !sat => F64Cvt::ToF32Rn,
                None => F64Cvt::ToF32 { rnd, ftz, sat },
            },
            _ => return no("this conversion"),
        };
        Ok(Inst::Cvt {
            op: CvtOp::F64(op),
            d,
            a,
        })
    }

    /// A decoded `add/sub.f64`: plain when its sources are the instruction's
    /// operands (and no third), else the contraction `x·y ± other` of a `mul`
    /// whose result is operand `which`, as the interpreter fuses them.
    fn add_or_fma64(
        &self,
        at: usize,
        ins: &ast::Instruction,
        d: u32,
        [a, b, c]: [Val; 3],
    ) -> Result<Inst, PtxError> {
        let sub = ins.opcode[0] == "sub";
        let is = |v: Val, i: usize| match (v, ins.operands.get(i)) {
            (Val::Reg(r), Some(Operand::Name(n))) => {
                source::names(&self.k.regs[r as usize].name, n)
            }
            (Val::Imm(_), Some(Operand::Int(_) | Operand::Float(_))) => true,
            _ => false,
        };
        if c == Val::Imm(0) && is(a, 1) && is(b, 2) {
            let op = BinOp::F64(if sub { F64Bin::Sub } else { F64Bin::Add });
            return Ok(Inst::Bin { op, d, a, b });
        }
        let named = |i: usize| matches!(ins.operands.get(i), Some(Operand::Name(_)));
        let which = if is(c, 2) && named(1) {
            1
        } else if is(c, 1) && named(2) {
            2
        } else {
            return Err(self.unsupported(at, "a contracted f64 fma whose operands are not placed"));
        };
        // d = x·y + c (add), x·y − c (sub, mul first), c − x·y (sub, mul second).
        Ok(Inst::Tern {
            op: TernOp::FmaF64 {
                neg_ab: sub && which == 2,
                neg_c: sub && which == 1,
                round: FloatRound::Nearest,
            },
            d,
            a,
            b,
            c,
        })
    }
}
