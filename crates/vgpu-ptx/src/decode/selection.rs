//! Instruction selection: each PTX opcode (with its modifiers) becomes a typed
//! warp operation or a closure; forms with their own operand shapes are in
//! `operand_forms.rs`, memory and atomics in `memory_ops.rs`.

use super::*;

impl Lower<'_> {
    pub(super) fn instruction(
        &mut self,
        ins: &Instruction,
        is_entry: bool,
        fixups: &mut Vec<(usize, String, u32)>,
    ) -> Result<(), PtxError> {
        let op = ins.opcode[0].as_str();
        let mods = Mods(&ins.opcode[1..]);
        let g = self.guard(ins)?;
        let ops = &ins.operands;
        let line = ins.line;
        let need = |n: usize| -> Result<(), PtxError> {
            if ops.len() < n {
                Err(PtxError::Semantic {
                    file: self.file.into(),
                    line,
                    msg: format!(
                        "`{}` needs {n} operands, has {}",
                        ins.opcode_text(),
                        ops.len()
                    ),
                })
            } else {
                Ok(())
            }
        };
        match op {
            "bra" | "brx" => {
                if op == "brx" {
                    return Err(self.unsupported(ins, "indirect branches"));
                }
                need(1)?;
                let Operand::Name(l) = &ops[0] else {
                    return Err(self.err_sem(line, "bra needs a label".into()));
                };
                fixups.push((self.code.len(), l.clone(), line));
                self.emit(Op::Bra { target: u32::MAX }, g, line);
            }
            "ret" => {
                if is_entry && self.stack.len() == 1 {
                    self.emit(Op::Exit, g, line);
                } else {
                    fixups.push((self.code.len(), "\u{0}ret".into(), line));
                    self.emit(Op::Bra { target: u32::MAX }, g, line);
                }
            }
            "exit" => self.emit(Op::Exit, g, line),
            "trap" | "brkpt" => self.emit(Op::Trap, g, line),
            "call" => self.call(ins, g)?,
            "bar" | "barrier" => {
                if mods.has("warp") {
                    need(1)?;
                    let mask = self.src(ins, &ops[0], Ty::B32)?;
                    self.emit(Op::WarpSync { mask }, g, line);
                } else if mods.has("sync")
                    || mods.0.is_empty()
                    || (mods.has("aligned") && mods.0.len() == 1)
                {
                    if ops.len() > 1 {
                        return Err(self.unsupported(ins, "a barrier with a thread count"));
                    }
                    self.emit(Op::Bar { red: None }, g, line);
                } else if mods.has("red") {
                    self.bar_red(ins, g)?;
                } else {
                    return Err(self.unsupported(ins, "only bar.sync / barrier.sync are supported"));
                }
            }
            "membar" | "fence" | "prefetch" | "prefetchu" | "nanosleep" | "pmevent" | "discard"
            | "applypriority" | "griddepcontrol" => self.emit(Op::Nop, g, line),
            "ld" | "ldu" | "st" => self.mem(ins, g)?,
            "atom" | "red" => self.atom(ins, g)?,
            "mov" => self.mov(ins, g)?,
            "cvta" | "isspacep" => {
                need(2)?;
                let sp = space_of(&ins.opcode[1..]);
                let to = mods.has("to");
                let ty = mods.ty().unwrap_or(Ty::U64);
                let d = self.dst(ins, &ops[0])?;
                let a = self.src(ins, &ops[1], ty)?;
                let z = Src::Imm(0);
                let op = if op == "isspacep" {
                    Op::Alu {
                        f: Box::new(move |a, _, _| (generic_window(a).0 == sp) as u64),
                        d,
                        a,
                        b: z,
                        c: z,
                    }
                } else {
                    // The generic window of the space moved to or from.
                    let win = match sp {
                        Space::Shared => SHARED_WINDOW,
                        Space::Local => LOCAL_WINDOW,
                        _ => 0,
                    };
                    let m = mask(ty.bits());
                    let kind = if to { Kind::Sub(m) } else { Kind::Add(m) };
                    Op::Warp(WarpOp {
                        kind,
                        d,
                        a,
                        b: Src::Imm(win),
                        c: z,
                    })
                };
                self.emit(op, g, line);
            }
            "setp" | "set" => self.setp(ins, g)?,
            "cvt" => {
                need(2)?;
                let (f, at) = semantics::cvt(&mods).map_err(|e| self.unsupported(ins, e))?;
                let d = self.dst(ins, &ops[0])?;
                let a = self.src(ins, &ops[1], at)?;
                let z = Src::Imm(0);
                self.emit(alu_op(warp_ops::cvt(&mods), f, d, [a, z, z]), g, line);
            }
            "bfi" => {
                need(5)?;
                let ty = mods
                    .ty()
                    .ok_or_else(|| self.unsupported(ins, "bfi without type"))?;
                let bits = ty.bits();
                let d = self.dst(ins, &ops[0])?;
                let a = self.src(ins, &ops[1], ty)?;
                let b = self.src(ins, &ops[2], ty)?;
                let c = self.src(ins, &ops[3], Ty::U32)?;
                let e = self.src(ins, &ops[4], Ty::U32)?;
                // Four sources: the length must be an immediate or a register read
                // through a pre-packed pair; pack pos|len into one operand.
                let (pc, lenimm) = match e {
                    Src::Imm(len) => (c, Some(len)),
                    Src::Reg(_) => {
                        let t = self.new_reg("bfi.poslen".into(), Ty::B64);
                        self.emit(
                            Op::Alu {
                                f: Box::new(|p, l, _| (p & 0xff) | ((l & 0xff) << 8)),
                                d: t,
                                a: c,
                                b: e,
                                c: Src::Imm(0),
                            },
                            g,
                            line,
                        );
                        (Src::Reg(t), None)
                    }
                };
                let f: AluFn = match lenimm {
                    Some(len) => Box::new(move |a, b, pos| bit_ops::bfi(a, b, pos, len, bits)),
                    None => Box::new(move |a, b, pl| {
                        bit_ops::bfi(a, b, pl & 0xff, (pl >> 8) & 0xff, bits)
                    }),
                };
                self.emit(Op::Alu { f, d, a, b, c: pc }, g, line);
            }
            "prmt" => {
                need(4)?;
                let mode = bit_ops::prmt_mode(&mods);
                let d = self.dst(ins, &ops[0])?;
                let a = self.src(ins, &ops[1], Ty::B32)?;
                let b = self.src(ins, &ops[2], Ty::B32)?;
                let c = self.src(ins, &ops[3], Ty::B32)?;
                let f: AluFn = Box::new(move |a, b, c| {
                    bit_ops::prmt(a as u32, b as u32, c as u32, mode) as u64
                });
                self.emit(Op::Alu { f, d, a, b, c }, g, line);
            }
            "lop3" => self.lop3(ins, g)?,
            "addc" | "subc" => self.carry(ins, g)?,
            "add" | "sub" if mods.has("cc") => self.carry(ins, g)?,
            "shfl" => {
                need(4)?;
                let mode = if mods.has("up") {
                    ShflMode::Up
                } else if mods.has("down") {
                    ShflMode::Down
                } else if mods.has("bfly") {
                    ShflMode::Bfly
                } else if mods.has("idx") {
                    ShflMode::Idx
                } else {
                    return Err(self.unsupported(ins, "shfl without a mode"));
                };
                let (d, p) = match &ops[0] {
                    Operand::Pair(a, b) => (self.dst(ins, a)?, Some(self.dst(ins, b)?)),
                    o => (self.dst(ins, o)?, None),
                };
                let a = self.src(ins, &ops[1], Ty::B32)?;
                let b = self.src(ins, &ops[2], Ty::U32)?;
                let c = self.src(ins, &ops[3], Ty::U32)?;
                self.emit(
                    Op::Shfl {
                        mode,
                        d,
                        p,
                        a,
                        b,
                        c,
                    },
                    g,
                    line,
                );
            }
            "vote" => {
                need(2)?;
                let mode = if mods.has("all") {
                    VoteMode::All
                } else if mods.has("any") {
                    VoteMode::Any
                } else if mods.has("uni") {
                    VoteMode::Uni
                } else if mods.has("ballot") {
                    VoteMode::Ballot
                } else {
                    return Err(self.unsupported(ins, "vote without a mode"));
                };
                let d = self.dst(ins, &ops[0])?;
                let (a, neg) = match &ops[1] {
                    Operand::Not(x) => (self.src(ins, x, Ty::Pred)?, true),
                    o => (self.src(ins, o, Ty::Pred)?, false),
                };
                self.emit(Op::Vote { mode, d, a, neg }, g, line);
            }
            "match" => {
                need(3)?;
                let all = mods.has("all");
                if !all && !mods.has("any") {
                    return Err(self.unsupported(ins, "match.sync without .any or .all"));
                }
                let ty = mods
                    .ty()
                    .filter(|t| t.bits() == 32 || t.bits() == 64)
                    .ok_or_else(|| self.unsupported(ins, "match.sync needs .b32 or .b64"))?;
                let (d, p) = match &ops[0] {
                    Operand::Pair(a, b) if all => (self.dst(ins, a)?, Some(self.dst(ins, b)?)),
                    o => (self.dst(ins, o)?, None),
                };
                let a = self.src(ins, &ops[1], ty)?;
                self.emit(Op::Match { all, d, p, a }, g, line);
            }
            "activemask" => {
                need(1)?;
                let d = self.dst(ins, &ops[0])?;
                self.emit(Op::ActiveMask { d }, g, line);
            }
            "redux" => {
                need(2)?;
                let ty = mods.ty().unwrap_or(Ty::U32);
                let rop = ["add", "min", "max", "and", "or", "xor"]
                    .into_iter()
                    .find(|m| mods.has(m));
                let rop = match rop {
                    Some("add") => ReduxOp::Add,
                    Some("min") => ReduxOp::Min,
                    Some("max") => ReduxOp::Max,
                    Some("and") => ReduxOp::And,
                    Some("or") => ReduxOp::Or,
                    Some("xor") => ReduxOp::Xor,
                    _ => return Err(self.unsupported(ins, "redux.sync operation")),
                };
                if ty.is_float() {
                    return Err(self.unsupported(ins, "redux.sync on floats"));
                }
                let d = self.dst(ins, &ops[0])?;
                let a = self.src(ins, &ops[1], ty)?;
                let mask = match ops.get(2) {
                    Some(o) => self.src(ins, o, Ty::B32)?,
                    None => Src::Imm(u32::MAX as u64),
                };
                self.emit(
                    Op::Redux {
                        op: rop,
                        signed: ty.is_signed(),
                        d,
                        a,
                        mask,
                    },
                    g,
                    line,
                );
            }
            _ => {
                let x2 = mods.has("f16x2");
                let half = x2
                    || (mods.ty() == Some(Ty::F16)
                        && !matches!(op, "mov" | "selp" | "slct" | "and" | "or" | "xor" | "not"));
                let (f, tys) = if half {
                    half_ops::alu(op, &mods, x2)
                } else {
                    semantics::alu(op, &mods)
                }
                .map_err(|e| self.unsupported(ins, e))?;
                need(1 + tys.len())?;
                let d = self.dst(ins, &ops[0])?;
                let mut s = [Src::Imm(0); 3];
                for (i, t) in tys.iter().enumerate() {
                    s[i] = self.src(ins, &ops[1 + i], *t)?;
                }
                self.emit(alu_op(warp_ops::alu(op, &mods), f, d, s), g, line);
            }
        }
        Ok(())
    }
}

/// `d = op(a, b, c)`: the warp form when the instruction has one, else the
/// general closure.
pub(super) fn alu_op(kind: Option<Kind>, f: AluFn, d: u32, [a, b, c]: [Src; 3]) -> Op {
    match kind {
        Some(kind) => Op::Warp(WarpOp { kind, d, a, b, c }),
        None => Op::Alu { f, d, a, b, c },
    }
}
