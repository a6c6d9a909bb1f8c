//! Instructions whose operand lists have their own forms: `bar.red`, `lop3`,
//! carry chains (`add.cc`, `addc`, …), `setp` (with a second predicate and
//! combining op) and `mov` (vectors, packing and unpacking).

use super::*;

impl Lower<'_> {
    /// `bar.red.popc.u32 d, a, {!}c` and `bar.red.and|or.pred p, a, {!}c`.
    pub(super) fn bar_red(
        &mut self,
        ins: &Instruction,
        g: Option<(u32, bool)>,
    ) -> Result<(), PtxError> {
        let mods = Mods(&ins.opcode[1..]);
        let op = if mods.has("popc") {
            BarRedOp::Popc
        } else if mods.has("and") {
            BarRedOp::And
        } else if mods.has("or") {
            BarRedOp::Or
        } else {
            return Err(self.unsupported(ins, "bar.red needs .popc, .and or .or"));
        };
        let ops = &ins.operands;
        match ops.len() {
            3 => {}
            4 => return Err(self.unsupported(ins, "a barrier with a thread count")),
            n => return Err(self.err_sem(ins.line, format!("bar.red needs 3 operands, has {n}"))),
        }
        let d = self.dst(ins, &ops[0])?;
        let (c, neg) = match &ops[2] {
            Operand::Not(x) => (self.src(ins, x, Ty::Pred)?, true),
            o => (self.src(ins, o, Ty::Pred)?, false),
        };
        let red = Some(BarRed { op, d, c, neg });
        self.emit(Op::Bar { red }, g, ins.line);
        Ok(())
    }

    /// `lop3.b32 d, a, b, c, immLut` and `lop3.{or,and}.b32 d|p, a, b, c, immLut, q`
    /// (then `p = (d != 0) op q`).
    pub(super) fn lop3(
        &mut self,
        ins: &Instruction,
        g: Option<(u32, bool)>,
    ) -> Result<(), PtxError> {
        let mods = Mods(&ins.opcode[1..]);
        let ops = &ins.operands;
        let boolop = match (mods.has("or"), mods.has("and")) {
            (false, false) => None,
            (true, false) => Some(true),
            (false, true) => Some(false),
            _ => return Err(self.unsupported(ins, "lop3 with both .or and .and")),
        };
        let want = if boolop.is_some() { 6 } else { 5 };
        if ops.len() != want || mods.ty().map(|t| t.bits()) != Some(32) {
            return Err(self.err_sem(
                ins.line,
                format!("`{}` needs .b32 and {want} operands", ins.opcode_text()),
            ));
        }
        let lut = match &ops[4] {
            Operand::Int(v) if (0..=255).contains(v) => *v as u8,
            o => {
                return Err(self.err_sem(
                    ins.line,
                    format!("lop3's look-up table must be an integer 0..255, found {o:?}"),
                ))
            }
        };
        let (d, p) = match (&ops[0], boolop) {
            (Operand::Pair(d, p), Some(_)) => (self.dst(ins, d)?, Some(self.dst(ins, p)?)),
            (o, None) => (self.dst(ins, o)?, None),
            (o, Some(_)) => {
                return Err(self.err_sem(
                    ins.line,
                    format!("lop3 with a boolean operation needs `d|p`, found {o:?}"),
                ))
            }
        };
        let a = self.src(ins, &ops[1], Ty::B32)?;
        let b = self.src(ins, &ops[2], Ty::B32)?;
        let c = self.src(ins, &ops[3], Ty::B32)?;
        let f: AluFn =
            Box::new(move |a, b, c| bit_ops::lop3(a as u32, b as u32, c as u32, lut) as u64);
        self.emit(Op::Alu { f, d, a, b, c }, g, ins.line);
        if let (Some(p), Some(or)) = (p, boolop) {
            let q = self.src(ins, &ops[5], Ty::Pred)?;
            let f: AluFn = if or {
                Box::new(|d, q, _| ((d & 0xffff_ffff) != 0 || q & 1 == 1) as u64)
            } else {
                Box::new(|d, q, _| ((d & 0xffff_ffff) != 0 && q & 1 == 1) as u64)
            };
            let z = Src::Imm(0);
            self.emit(
                Op::Alu {
                    f,
                    d: p,
                    a: Src::Reg(d),
                    b: q,
                    c: z,
                },
                g,
                ins.line,
            );
        }
        Ok(())
    }

    pub(super) fn carry(
        &mut self,
        ins: &Instruction,
        g: Option<(u32, bool)>,
    ) -> Result<(), PtxError> {
        let op = ins.opcode[0].as_str();
        let mods = Mods(&ins.opcode[1..]);
        let ty = mods.ty().ok_or_else(|| self.unsupported(ins, "no type"))?;
        let bits = ty.bits();
        if ins.operands.len() < 3 {
            return Err(self.err_sem(ins.line, "needs 3 operands".into()));
        }
        let cc = match self.scopes[0].get("\u{0}cc") {
            Some(Bind::Reg(r)) => *r,
            _ => {
                let r = self.new_reg("%cc".into(), Ty::Pred);
                self.scopes[0].insert("\u{0}cc".into(), Bind::Reg(r));
                r
            }
        };
        let d = self.dst(ins, &ins.operands[0])?;
        let a = self.src(ins, &ins.operands[1], ty)?;
        let b = self.src(ins, &ins.operands[2], ty)?;
        let use_c = op == "addc" || op == "subc";
        let set_c = mods.has("cc");
        let sub = op.starts_with("sub");
        let f: Alu2Fn = Box::new(move |a, b, c| {
            let (a, b) = ((a & mask(bits)) as u128, (b & mask(bits)) as u128);
            let cin = if use_c { (c & 1) as u128 } else { 0 };
            if sub {
                let r = a.wrapping_sub(b).wrapping_sub(cin);
                let borrow = (b + cin > a) as u64;
                ((r as u64) & mask(bits), borrow)
            } else {
                let r = a + b + cin;
                ((r as u64) & mask(bits), ((r >> bits) & 1) as u64)
            }
        });
        let d2 = if set_c { cc } else { u32::MAX };
        self.emit(
            Op::Alu2 {
                f,
                d,
                d2,
                a,
                b,
                c: Src::Reg(cc),
            },
            g,
            ins.line,
        );
        Ok(())
    }

    pub(super) fn setp(
        &mut self,
        ins: &Instruction,
        g: Option<(u32, bool)>,
    ) -> Result<(), PtxError> {
        let is_set = ins.opcode[0] == "set";
        let mods = Mods(&ins.opcode[1..]);
        let tys = mods.types();
        let sty = *tys.last().ok_or_else(|| self.unsupported(ins, "no type"))?;
        let dty = if is_set { tys[0] } else { Ty::Pred };
        let cmpname = ins.opcode.get(1).cloned().unwrap_or_default();
        let cmp = semantics::compare(&cmpname, sty, mods.has("ftz"))
            .map_err(|e| self.unsupported(ins, e))?;
        let bop = ["and", "or", "xor"].into_iter().find(|b| mods.has(b));
        let ops = &ins.operands;
        if ops.len() < 3 {
            return Err(self.err_sem(ins.line, "setp needs 3 operands".into()));
        }
        let (d, q) = match &ops[0] {
            Operand::Pair(a, b) => (self.dst(ins, a)?, Some(self.dst(ins, b)?)),
            o => (self.dst(ins, o)?, None),
        };
        let a = self.src(ins, &ops[1], sty)?;
        let b = self.src(ins, &ops[2], sty)?;
        let (c, cneg) = match (bop, ops.get(3)) {
            (Some(_), Some(Operand::Not(x))) => (self.src(ins, x, Ty::Pred)?, true),
            (Some(_), Some(o)) => (self.src(ins, o, Ty::Pred)?, false),
            (Some(_), None) => {
                return Err(self.err_sem(
                    ins.line,
                    "setp with a boolean op needs a 4th operand".into(),
                ))
            }
            (None, _) => (Src::Imm(0), false),
        };
        let comb: fn(bool, bool) -> bool = match bop {
            Some("and") => |x, y| x && y,
            Some("or") => |x, y| x || y,
            Some("xor") => |x, y| x ^ y,
            _ => |x, _| x,
        };
        let out: Box<dyn Fn(bool) -> u64 + Send + Sync> = match dty {
            Ty::Pred => Box::new(|v| v as u64),
            Ty::F32 => Box::new(|v| if v { 1.0f32.to_bits() as u64 } else { 0 }),
            _ => Box::new(|v| if v { 0xffff_ffff } else { 0 }),
        };
        let fast = match (q, bop, is_set) {
            (None, None, false) => warp_ops::setp(&cmpname, sty, mods.has("ftz")),
            _ => None,
        };
        if let Some(kind) = fast {
            self.emit(Op::Warp(WarpOp { kind, d, a, b, c }), g, ins.line);
            return Ok(());
        }
        match q {
            None => {
                let f: AluFn = Box::new(move |a, b, c| out(comb(cmp(a, b), (c & 1 == 1) ^ cneg)));
                self.emit(Op::Alu { f, d, a, b, c }, g, ins.line);
            }
            Some(q) => {
                let f: Alu2Fn = Box::new(move |a, b, c| {
                    let t = cmp(a, b);
                    let cv = (c & 1 == 1) ^ cneg;
                    (comb(t, cv) as u64, comb(!t, cv) as u64)
                });
                self.emit(
                    Op::Alu2 {
                        f,
                        d,
                        d2: q,
                        a,
                        b,
                        c,
                    },
                    g,
                    ins.line,
                );
            }
        }
        Ok(())
    }

    pub(super) fn mov(
        &mut self,
        ins: &Instruction,
        g: Option<(u32, bool)>,
    ) -> Result<(), PtxError> {
        let mods = Mods(&ins.opcode[1..]);
        let ty = mods
            .ty()
            .ok_or_else(|| self.unsupported(ins, "mov without type"))?;
        let ops = &ins.operands;
        if ops.len() != 2 {
            return Err(self.err_sem(ins.line, "mov needs 2 operands".into()));
        }
        match (&ops[0], &ops[1]) {
            (Operand::Vector(parts), src) => {
                // Unpack: {lo, hi, …} = src
                let a = self.src(ins, src, ty)?;
                let w = ty.bits() / parts.len() as u32;
                for (i, p) in parts.iter().enumerate() {
                    if *p == Operand::Sink {
                        continue;
                    }
                    let d = self.dst(ins, p)?;
                    let sh = w * i as u32;
                    let f: AluFn = Box::new(move |a, _, _| (a >> sh) & mask(w));
                    self.emit(
                        Op::Alu {
                            f,
                            d,
                            a,
                            b: Src::Imm(0),
                            c: Src::Imm(0),
                        },
                        g,
                        ins.line,
                    );
                }
            }
            (dst, Operand::Vector(parts)) => {
                // Pack: d = {lo, hi, …}
                let d = self.dst(ins, dst)?;
                let n = parts.len() as u32;
                let w = ty.bits() / n;
                if !(2..=4).contains(&n) {
                    return Err(self.unsupported(ins, "vector mov of this width"));
                }
                let pty = match w {
                    8 => Ty::B8,
                    16 => Ty::B16,
                    32 => Ty::B32,
                    _ => Ty::B64,
                };
                // Accumulate pairs through a temporary when there are more than 3 parts.
                let srcs: Vec<Src> = parts
                    .iter()
                    .map(|p| self.src(ins, p, pty))
                    .collect::<Result<_, _>>()?;
                if n <= 3 {
                    let f: AluFn = Box::new(move |a, b, c| {
                        (a & mask(w))
                            | ((b & mask(w)) << w)
                            | if n == 3 { (c & mask(w)) << (2 * w) } else { 0 }
                    });
                    let c = if n == 3 { srcs[2] } else { Src::Imm(0) };
                    self.emit(
                        Op::Alu {
                            f,
                            d,
                            a: srcs[0],
                            b: srcs[1],
                            c,
                        },
                        g,
                        ins.line,
                    );
                } else {
                    let t = self.new_reg("mov.pack".into(), Ty::B64);
                    let f: AluFn = Box::new(move |a, b, c| {
                        (a & mask(w)) | ((b & mask(w)) << w) | ((c & mask(w)) << (2 * w))
                    });
                    self.emit(
                        Op::Alu {
                            f,
                            d: t,
                            a: srcs[0],
                            b: srcs[1],
                            c: srcs[2],
                        },
                        g,
                        ins.line,
                    );
                    let f: AluFn = Box::new(move |t, x, _| t | ((x & mask(w)) << (3 * w)));
                    self.emit(
                        Op::Alu {
                            f,
                            d,
                            a: Src::Reg(t),
                            b: srcs[3],
                            c: Src::Imm(0),
                        },
                        g,
                        ins.line,
                    );
                }
            }
            (dst, src) => {
                let d = self.dst(ins, dst)?;
                if let Operand::Name(n) = src {
                    if self.lookup(n).is_none() {
                        if let Some(s) = special(n) {
                            self.emit(Op::Special { d, s }, g, ins.line);
                            return Ok(());
                        }
                    }
                }
                let a = self.src(ins, src, ty)?;
                let m = mask(if ty == Ty::Pred { 1 } else { ty.bits() });
                let z = Src::Imm(0);
                self.emit(
                    Op::Warp(WarpOp {
                        kind: Kind::Mov(m),
                        d,
                        a,
                        b: z,
                        c: z,
                    }),
                    g,
                    ins.line,
                );
            }
        }
        Ok(())
    }
}
