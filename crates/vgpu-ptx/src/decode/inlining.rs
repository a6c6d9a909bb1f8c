//! Inlining: a `call` becomes the callee's body, its parameters bound to the
//! caller's argument variables or to fresh local slots.

use super::*;

impl Lower<'_> {
    /// `call`: the callee is inlined, its parameters bound to the caller's
    /// argument variables (or to fresh local slots for register arguments).
    pub(super) fn call(
        &mut self,
        ins: &Instruction,
        g: Option<(u32, bool)>,
    ) -> Result<(), PtxError> {
        let ops = &ins.operands;
        let (rets, fname, args, rest) = match ops.as_slice() {
            [Operand::List(r), Operand::Name(f), Operand::List(a), rest @ ..] => {
                (r.clone(), f.clone(), a.clone(), rest)
            }
            [Operand::List(r), Operand::Name(f), rest @ ..] => (r.clone(), f.clone(), vec![], rest),
            [Operand::Name(f), Operand::List(a), rest @ ..] => (vec![], f.clone(), a.clone(), rest),
            [Operand::Name(f), rest @ ..] => (vec![], f.clone(), vec![], rest),
            _ => return Err(self.err_sem(ins.line, "malformed call".into())),
        };
        if !rest.is_empty() || self.lookup(&fname).is_some() {
            return Err(self.unsupported(ins, "indirect calls (through a prototype)"));
        }
        let callee = self
            .m
            .functions
            .iter()
            .find(|f| !f.is_entry && f.name == fname && f.body.is_some())
            .ok_or_else(|| {
                self.unsupported(
                    ins,
                    format!("call of `{fname}`, which has no body in this module"),
                )
            })?;
        if self.stack.contains(&fname) {
            return Err(self.unsupported(ins, format!("recursive call of `{fname}`")));
        }
        // The entry is the stack's first name: the rest are calls being inlined.
        if self.stack.len() > crate::limits::MAX_CALL_DEPTH {
            return Err(self.unsupported(
                ins,
                format!(
                    "call of `{fname}` nested deeper than {} calls (the decoder's limit, vgpu_ptx::limits::MAX_CALL_DEPTH)",
                    crate::limits::MAX_CALL_DEPTH
                ),
            ));
        }
        if self.code.len() > crate::limits::MAX_KERNEL_INSTRUCTIONS {
            return Err(self.unsupported(
                ins,
                format!(
                    "call of `{fname}`: the kernel has {} instructions with its calls inlined so far, over the decoder's limit of {} (vgpu_ptx::limits::MAX_KERNEL_INSTRUCTIONS)",
                    self.code.len(),
                    crate::limits::MAX_KERNEL_INSTRUCTIONS
                ),
            ));
        }
        if callee.params.len() != args.len() || callee.rets.len() != rets.len() {
            return Err(self.err_sem(
                ins.line,
                format!("call of `{fname}`: argument count does not match"),
            ));
        }
        if g.is_some() {
            return Err(self.unsupported(ins, "a guarded call"));
        }
        let mut scope = HashMap::new();
        let mut after: Vec<(u32, u64, u8)> = Vec::new();
        for (p, a) in callee.params.iter().zip(&args) {
            let pty = Ty::parse(&p.ty).unwrap_or(Ty::B64);
            let bind = match a {
                Operand::Name(n) => match self.lookup(n) {
                    Some(Bind::Sym(sp, addr)) if p.space == Space::Param => Bind::Sym(sp, addr),
                    Some(_) | None => {
                        let s = self.src(ins, a, pty)?;
                        self.bind_value(ins, p, s, pty)?
                    }
                },
                other => {
                    let s = self.src(ins, other, pty)?;
                    self.bind_value(ins, p, s, pty)?
                }
            };
            scope.insert(p.name.clone(), bind);
        }
        for (p, r) in callee.rets.iter().zip(&rets) {
            let pty = Ty::parse(&p.ty).unwrap_or(Ty::B64);
            let Operand::Name(n) = r else {
                return Err(self.err_sem(ins.line, "call return must be a name".into()));
            };
            let bind = match self.lookup(n) {
                Some(Bind::Sym(sp, addr)) if p.space == Space::Param => Bind::Sym(sp, addr),
                Some(Bind::Reg(rr)) => {
                    if p.space == Space::Param {
                        let addr = self.alloc_local(pty.bytes() as u64 * p.count, 8);
                        after.push((rr, addr, pty.bytes() as u8));
                        Bind::Sym(Space::Local, addr)
                    } else {
                        Bind::Reg(rr)
                    }
                }
                _ => return Err(self.err_sem(ins.line, format!("unknown call return `{n}`"))),
            };
            scope.insert(p.name.clone(), bind);
        }
        self.inline_count += 1;
        let saved_prefix =
            std::mem::replace(&mut self.prefix, format!("{fname}#{}:", self.inline_count));
        let saved_floor = self.floor;
        let saved_depth = self.scopes.len();
        self.scopes.push(scope);
        self.floor = self.scopes.len() - 1;
        self.stack.push(fname.clone());
        let body = callee.body.as_ref().expect("checked");
        let r = self.function_body(body, false);
        self.stack.pop();
        self.scopes.truncate(saved_depth);
        self.floor = saved_floor;
        self.prefix = saved_prefix;
        r?;
        for (reg, addr, size) in after {
            self.emit(
                Op::Ld {
                    space: Space::Local,
                    size,
                    sign: false,
                    d: vec![reg],
                    addr: Addr {
                        base: Src::Imm(addr),
                        off: 0,
                    },
                    unused: 0,
                    order: Order::Weak,
                },
                None,
                ins.line,
            );
        }
        Ok(())
    }

    pub(super) fn bind_value(
        &mut self,
        ins: &Instruction,
        p: &ast::Param,
        s: Src,
        pty: Ty,
    ) -> Result<Bind, PtxError> {
        if p.space == Space::Param {
            let addr = self.alloc_local(pty.bytes() as u64 * p.count, 8);
            self.emit(
                Op::St {
                    space: Space::Local,
                    size: pty.bytes() as u8,
                    src: vec![s],
                    addr: Addr {
                        base: Src::Imm(addr),
                        off: 0,
                    },
                    order: Order::Weak,
                },
                None,
                ins.line,
            );
            Ok(Bind::Sym(Space::Local, addr))
        } else {
            let r = self.new_reg(format!("{}{}", self.prefix, p.name), pty);
            let z = Src::Imm(0);
            let kind = Kind::Mov(u64::MAX);
            self.emit(
                Op::Warp(WarpOp {
                    kind,
                    d: r,
                    a: s,
                    b: z,
                    c: z,
                }),
                None,
                ins.line,
            );
            Ok(Bind::Reg(r))
        }
    }
}
