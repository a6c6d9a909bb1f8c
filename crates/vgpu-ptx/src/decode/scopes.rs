//! Names and operands: registers and symbols in nested scopes, the body of a
//! function lowered statement by statement, and operands (registers,
//! immediates, symbols, addresses, guards) resolved in the current scope.

use super::*;

impl Lower<'_> {
    pub(super) fn new_reg(&mut self, name: String, ty: Ty) -> u32 {
        self.regs.push(RegInfo { name, ty });
        (self.regs.len() - 1) as u32
    }

    pub(super) fn lookup(&self, name: &str) -> Option<Bind> {
        for s in self.scopes[self.floor..].iter().rev() {
            if let Some(b) = s.get(name) {
                return Some(*b);
            }
        }
        self.scopes[0].get(name).copied()
    }

    pub(super) fn declare(&mut self, name: &str, b: Bind) {
        self.scopes
            .last_mut()
            .expect("a scope")
            .insert(name.to_string(), b);
    }

    pub(super) fn emit(&mut self, op: Op, guard: Option<(u32, bool)>, line: u32) {
        let yields = matches!(&op, Op::Ld { order, .. } if order.strong());
        self.code.push(Inst {
            op,
            guard,
            line,
            yields,
        });
    }

    /// Lowers one function body (entry or inlined callee).
    pub(super) fn function_body(&mut self, body: &[Stmt], is_entry: bool) -> Result<(), PtxError> {
        let mut labels: HashMap<String, u32> = HashMap::new();
        let mut fixups: Vec<(usize, String, u32)> = Vec::new();
        let mut depth = 0usize;
        let plan = contraction_plan(body);
        for (si, s) in body.iter().enumerate() {
            if let (Some(&(mi, which)), Stmt::Inst(ins), Stmt::Inst(mul)) = (
                plan.get(&si),
                s,
                &body[plan.get(&si).map(|p| p.0).unwrap_or(0)],
            ) {
                let _ = mi;
                self.contracted(ins, mul, which)?;
                continue;
            }
            match s {
                Stmt::Reg { ty, names, line } => {
                    let t = Ty::parse(ty).ok_or_else(|| {
                        self.err_sem(*line, format!("unknown register type .{ty}"))
                    })?;
                    for n in names {
                        let r = self.new_reg(format!("{}{}", self.prefix, n), t);
                        self.declare(n, Bind::Reg(r));
                    }
                }
                Stmt::Var(v) => match v.space {
                    Space::Shared => {
                        if v.is_extern {
                            let b = Bind::Sym(Space::Shared, self.dyn_shared_base);
                            self.declare(&v.name, b);
                        } else if let (true, Some(b)) = (
                            is_entry,
                            self.scopes[0]
                                .get(&format!("\u{0}entry-shared:{}", v.name))
                                .copied(),
                        ) {
                            self.declare(&v.name, b);
                        } else {
                            return Err(self.err_sem(
                                v.line,
                                format!(
                                    "`.shared {}` inside a called function is not supported",
                                    v.name
                                ),
                            ));
                        }
                    }
                    Space::Local | Space::Param => {
                        let size = var_size(v, self.file)?;
                        let align = v
                            .align
                            .unwrap_or(elem_size(&v.ty, v.line, self.file)? as u32)
                            as u64;
                        let addr = self.alloc_local(size, align);
                        self.declare(&v.name, Bind::Sym(Space::Local, addr));
                    }
                    Space::Global | Space::Const => {
                        return Err(self.err_sem(
                            v.line,
                            format!(
                                "function-scope .global/.const `{}` is not supported",
                                v.name
                            ),
                        ))
                    }
                    Space::Generic => unreachable!("the parser gives a space"),
                },
                Stmt::Label(name, line) => {
                    if labels
                        .insert(name.clone(), self.code.len() as u32)
                        .is_some()
                    {
                        return Err(self.err_sem(*line, format!("label `{name}` defined twice")));
                    }
                }
                Stmt::Open => {
                    depth += 1;
                    self.scopes.push(HashMap::new());
                }
                Stmt::Close => {
                    depth = depth.saturating_sub(1);
                    self.scopes.pop();
                }
                Stmt::Inst(ins) => self.instruction(ins, is_entry, &mut fixups)?,
            }
        }
        let end = self.code.len() as u32;
        if is_entry {
            // Falling off the end of the entry exits.
            let line = self.code.last().map(|i| i.line).unwrap_or(0);
            self.emit(Op::Exit, None, line);
        }
        for (at, label, line) in fixups {
            let target = if label == "\u{0}ret" {
                end
            } else {
                *labels
                    .get(&label)
                    .ok_or_else(|| self.err_sem(line, format!("unknown label `{label}`")))?
            };
            if let Op::Bra { target: t } = &mut self.code[at].op {
                *t = target;
            }
        }
        Ok(())
    }

    pub(super) fn reg(&self, ins: &Instruction, name: &str) -> Result<u32, PtxError> {
        match self.lookup(name) {
            Some(Bind::Reg(r)) => Ok(r),
            _ => Err(self.err_sem(ins.line, format!("`{name}` is not a declared register"))),
        }
    }

    pub(super) fn dst(&mut self, ins: &Instruction, o: &Operand) -> Result<u32, PtxError> {
        match o {
            Operand::Name(n) => self.reg(ins, n),
            Operand::Sink => Ok(self.new_reg("_".into(), Ty::B64)),
            _ => Err(self.err_sem(
                ins.line,
                format!("expected a destination register, found {o:?}"),
            )),
        }
    }

    pub(super) fn src(&mut self, ins: &Instruction, o: &Operand, ty: Ty) -> Result<Src, PtxError> {
        match o {
            Operand::Name(n) => match self.lookup(n) {
                Some(Bind::Reg(r)) => Ok(Src::Reg(r)),
                Some(Bind::Sym(space, addr)) => Ok(Src::Imm(sym_value(space, addr))),
                None if n == "WARP_SZ" => Ok(Src::Imm(crate::special::WARP_SZ)),
                None => match special(n) {
                    Some(s) => {
                        let r = self.new_reg(n.clone(), Ty::U32);
                        self.emit(Op::Special { d: r, s }, None, ins.line);
                        Ok(Src::Reg(r))
                    }
                    None => Err(self.err_sem(ins.line, format!("unknown name `{n}`"))),
                },
            },
            Operand::NameOffset(n, off) => match self.lookup(n) {
                Some(Bind::Sym(space, addr)) => {
                    Ok(Src::Imm(sym_value(space, addr).wrapping_add(*off as u64)))
                }
                _ => Err(self.err_sem(ins.line, format!("`{n}+{off}`: `{n}` is not a variable"))),
            },
            Operand::Int(v) => Ok(Src::Imm(if ty.is_float() {
                // An integer literal in a float position is its value.
                float_bits(FloatLit::Decimal(*v as f64), ty)
            } else if ty == Ty::Pred {
                (*v != 0) as u64
            } else {
                (*v as u64) & mask(ty.bits())
            })),
            Operand::Float(f) => Ok(Src::Imm(float_bits(*f, ty))),
            _ => Err(self.err_sem(ins.line, format!("expected a source operand, found {o:?}"))),
        }
    }

    /// Resolves an address operand; a symbol base decides the space when the
    /// instruction gives none, and a call parameter lives in local memory.
    pub(super) fn addr(
        &mut self,
        ins: &Instruction,
        o: &Operand,
        space: Space,
    ) -> Result<(Space, Addr), PtxError> {
        let (base, off) = match o {
            Operand::Address(b, off) => (b.clone(), *off),
            Operand::Name(n) => (Some(n.clone()), 0),
            _ => {
                return Err(
                    self.err_sem(ins.line, format!("expected an address `[…]`, found {o:?}"))
                )
            }
        };
        match base {
            None => Ok((
                space,
                Addr {
                    base: Src::Imm(0),
                    off,
                },
            )),
            Some(n) => match self.lookup(&n) {
                Some(Bind::Reg(r)) => Ok((
                    space,
                    Addr {
                        base: Src::Reg(r),
                        off,
                    },
                )),
                Some(Bind::Sym(s, a)) => {
                    let sp = match (space, s) {
                        (Space::Generic, s) => s,
                        (Space::Param, Space::Local) => Space::Local,
                        (Space::Const, Space::Global) => Space::Global,
                        (sp, s) if sp == s => sp,
                        (sp, s) => {
                            return Err(self.err_sem(
                                ins.line,
                                format!(
                                    "`{n}` is in the {s:?} space, the instruction accesses {sp:?}"
                                ),
                            ))
                        }
                    };
                    Ok((
                        sp,
                        Addr {
                            base: Src::Imm(a),
                            off,
                        },
                    ))
                }
                None => Err(self.err_sem(ins.line, format!("unknown name `{n}` in address"))),
            },
        }
    }

    pub(super) fn guard(&self, ins: &Instruction) -> Result<Option<(u32, bool)>, PtxError> {
        match &ins.guard {
            None => Ok(None),
            Some((n, neg)) => Ok(Some((self.reg(ins, n)?, *neg))),
        }
    }
}

/// The value of a symbol used as an operand: its address in its space (kernel
/// parameters: their offset in the parameter buffer).
fn sym_value(_space: Space, addr: u64) -> u64 {
    addr
}
