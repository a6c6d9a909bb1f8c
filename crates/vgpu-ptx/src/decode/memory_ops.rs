//! Memory instructions: `ld`/`st` in every state space (vectors, generic
//! addresses) and atomics (`atom`, `red`).

use super::*;

impl Lower<'_> {
    pub(super) fn mem(
        &mut self,
        ins: &Instruction,
        g: Option<(u32, bool)>,
    ) -> Result<(), PtxError> {
        let is_st = ins.opcode[0] == "st";
        let mods = Mods(&ins.opcode[1..]);
        let space = space_of(&ins.opcode[1..]);
        let ty = mods.ty().ok_or_else(|| self.unsupported(ins, "no type"))?;
        if mods.0.iter().any(|m| m == "v8" || m.starts_with("b128")) {
            return Err(self.unsupported(ins, "128-bit and .v8 accesses"));
        }
        let ops = &ins.operands;
        if ops.len() != 2 {
            return Err(self.err_sem(ins.line, format!("{} needs 2 operands", ins.opcode_text())));
        }
        let size = ty.bytes() as u8;
        // Strong operations (PTX ISA, memory consistency model): a scope
        // qualifier's semantics, or `.volatile` (relaxed at system scope).
        let order = Order::of(mods.0, false);
        if is_st {
            let (sp, addr) = self.addr(ins, &ops[0], space)?;
            let src = match &ops[1] {
                Operand::Vector(v) => v
                    .iter()
                    .map(|o| self.src(ins, o, ty))
                    .collect::<Result<Vec<_>, _>>()?,
                o => vec![self.src(ins, o, ty)?],
            };
            if sp == Space::Param && !matches!(addr.base, Src::Imm(_)) || sp == Space::Const {
                return Err(self.unsupported(ins, "stores to kernel parameters or constant memory"));
            }
            self.emit(
                Op::St {
                    space: sp,
                    size,
                    src,
                    addr,
                    order,
                },
                g,
                ins.line,
            );
        } else {
            let (sp, addr) = self.addr(ins, &ops[1], space)?;
            let d = match &ops[0] {
                Operand::Vector(v) => v
                    .iter()
                    .map(|o| {
                        if *o == Operand::Sink {
                            Ok(u32::MAX)
                        } else {
                            self.dst(ins, o)
                        }
                    })
                    .collect::<Result<Vec<_>, _>>()?,
                o => vec![self.dst(ins, o)?],
            };
            // Elements none of whose bytes the used-bytes mask keeps.
            let mut unused = 0u32;
            if let Some(m) = ins.used_bytes_mask {
                for i in 0..d.len().min(32) {
                    let lo = i * size as usize;
                    let bits = if lo >= 32 {
                        0
                    } else {
                        (m as u64 >> lo) & ((1u64 << size) - 1)
                    };
                    if bits == 0 {
                        unused |= 1 << i;
                    }
                }
            }
            self.emit(
                Op::Ld {
                    space: sp,
                    size,
                    sign: ty.is_signed(),
                    d,
                    addr,
                    unused,
                    order,
                },
                g,
                ins.line,
            );
        }
        Ok(())
    }

    pub(super) fn atom(
        &mut self,
        ins: &Instruction,
        g: Option<(u32, bool)>,
    ) -> Result<(), PtxError> {
        let is_red = ins.opcode[0] == "red";
        let mods = Mods(&ins.opcode[1..]);
        let space = space_of(&ins.opcode[1..]);
        let ty = mods.ty().ok_or_else(|| self.unsupported(ins, "no type"))?;
        if mods.0.iter().any(|m| m.starts_with('v') && m.len() == 2) {
            return Err(self.unsupported(ins, "vector atomics"));
        }
        let aop = [
            "add", "min", "max", "and", "or", "xor", "exch", "cas", "inc", "dec",
        ]
        .into_iter()
        .find(|o| mods.has(o))
        .ok_or_else(|| self.unsupported(ins, "unknown atomic operation"))?;
        let f = semantics::atomic(aop, ty).map_err(|e| self.unsupported(ins, e))?;
        let ops = &ins.operands;
        let first = if is_red { 0 } else { 1 };
        let need = first + if aop == "cas" { 3 } else { 2 };
        if ops.len() != need {
            return Err(self.err_sem(
                ins.line,
                format!("{} needs {need} operands", ins.opcode_text()),
            ));
        }
        let d = if is_red || ops[0] == Operand::Sink {
            None
        } else {
            Some(self.dst(ins, &ops[0])?)
        };
        let (sp, addr) = self.addr(ins, &ops[first], space)?;
        if !matches!(sp, Space::Global | Space::Shared | Space::Generic) {
            return Err(self.unsupported(ins, "atomics outside global and shared memory"));
        }
        let b = self.src(ins, &ops[first + 1], ty)?;
        let c = if aop == "cas" {
            self.src(ins, &ops[first + 2], ty)?
        } else {
            Src::Imm(0)
        };
        self.emit(
            Op::Atom {
                space: sp,
                size: ty.bytes() as u8,
                f,
                d,
                addr,
                b,
                c,
                deferred: false,
                order: Order::of(mods.0, true),
            },
            g,
            ins.line,
        );
        Ok(())
    }
}
