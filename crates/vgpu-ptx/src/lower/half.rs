//! Half-precision arithmetic (`add sub mul fma min max neg abs` on `.f16` and
//! `.f16x2`, the forms the interpreter's half_ops.rs computes) into the IR's
//! [`Half`], including the fused multiply-add the decoder makes of a `mul` and
//! the `add`/`sub` that uses its result (decode/contraction.rs): that one is
//! decoded at the `add`'s line with the `mul`'s sources, and is told from a
//! plain `add` by its operands.

use vgpu_ir::cfg::{Half, HalfOp, Val};

use super::{source, Lowering};
use crate::ast::{self, Operand};
use crate::error::PtxError;
use crate::modifiers::Mods;
use crate::types::Ty;

/// The modifiers the half forms may carry (`.rn` is their only rounding).
const KNOWN: [&str; 5] = ["rn", "ftz", "sat", "f16", "f16x2"];

impl Lowering<'_> {
    /// The half-precision instruction `ins`, decoded at `at` with sources
    /// `a, b, c`, or `None` when `ins` is not one.
    ///
    /// # Errors
    /// [`PtxError::Unsupported`] for a half form this does not lower (another
    /// modifier, or a contraction whose operands it cannot place).
    pub(super) fn half(
        &self,
        at: usize,
        ins: &ast::Instruction,
        src: [Val; 3],
    ) -> Result<Option<Half>, PtxError> {
        let op = ins.opcode[0].as_str();
        let mods = Mods(&ins.opcode[1..]);
        let x2 = mods.has("f16x2");
        let ops = ["add", "sub", "mul", "fma", "min", "max", "neg", "abs"];
        if !ops.contains(&op) || !(x2 || mods.ty() == Some(Ty::F16)) {
            return Ok(None);
        }
        if let Some(m) = ins.opcode[1..]
            .iter()
            .find(|m| !KNOWN.contains(&m.as_str()))
        {
            return Err(self.unsupported(at, &format!("half precision with `.{m}`")));
        }
        let op = match op {
            "add" | "sub" => self.add_or_fma(at, ins, src)?,
            "mul" => HalfOp::Mul,
            "fma" => HalfOp::Fma {
                neg_ab: false,
                neg_c: false,
            },
            "min" => HalfOp::Min,
            "max" => HalfOp::Max,
            "neg" => HalfOp::Neg,
            _ => HalfOp::Abs,
        };
        Ok(Some(Half {
            op,
            x2,
            ftz: mods.has("ftz"),
            sat: mods.has("sat"),
        }))
    }

    /// A decoded half `add`/`sub`: plain, or the contracted fma
    /// ([`Self::contraction`]).
    fn add_or_fma(
        &self,
        at: usize,
        ins: &ast::Instruction,
        src: [Val; 3],
    ) -> Result<HalfOp, PtxError> {
        Ok(match self.contraction(at, ins, src)? {
            None if ins.opcode[0] == "sub" => HalfOp::Sub,
            None => HalfOp::Add,
            Some((neg_ab, neg_c)) => HalfOp::Fma { neg_ab, neg_c },
        })
    }

    /// A decoded `add`/`sub` (half or f32): `None` when plain, its sources
    /// the instruction's operands (and no third); else the contraction
    /// `x·y ± other` of a `mul` whose result is operand `which`, `other` the
    /// decoded third source, as the negations of its product and addend.
    pub(super) fn contraction(
        &self,
        at: usize,
        ins: &ast::Instruction,
        [a, b, c]: [Val; 3],
    ) -> Result<Option<(bool, bool)>, PtxError> {
        let sub = ins.opcode[0] == "sub";
        let is = |v: Val, i: usize| self.is_operand(v, ins.operands.get(i));
        if c == Val::Imm(0) && is(a, 1) && is(b, 2) {
            return Ok(None);
        }
        let named = |i: usize| matches!(ins.operands.get(i), Some(Operand::Name(_)));
        let which = if is(c, 2) && named(1) {
            1
        } else if is(c, 1) && named(2) {
            2
        } else {
            return Err(self.unsupported(at, "a contracted fma whose operands are not placed"));
        };
        // d = x·y + c (add), x·y − c (sub, mul first), c − x·y (sub, mul second).
        Ok(Some((sub && which == 2, sub && which == 1)))
    }

    /// Whether decoded source `v` is operand `o` as written: the register it
    /// names, or an immediate for a literal.
    fn is_operand(&self, v: Val, o: Option<&Operand>) -> bool {
        match (v, o) {
            (Val::Reg(r), Some(Operand::Name(n))) => {
                source::names(&self.k.regs[r as usize].name, n)
            }
            (Val::Imm(_), Some(Operand::Int(_) | Operand::Float(_))) => true,
            _ => false,
        }
    }
}
