//! Lowering ("decode"): the syntax tree of one entry, with every function it
//! calls inlined, becomes a flat [`Kernel`]: registers as indices, symbols as
//! addresses, opcodes as typed warp operations (warp_ops.rs) or, for the rest,
//! closures, labels as instruction indices.

use std::collections::{HashMap, HashSet};

use crate::ast::{self, FloatLit, Init, Instruction, Operand, Space, Stmt};
use crate::bit_ops;
use crate::error::PtxError;
use crate::half_ops;
use crate::memory::{generic_window, GLOBAL_VAR_BASE, LOCAL_WINDOW, SHARED_WINDOW};
use crate::program::*;
use crate::semantics::{self, Mods};
use crate::special::special;
use crate::types::*;
use crate::warp_ops::{self, Kind, WarpOp};

#[derive(Debug, Clone, Copy)]
enum Bind {
    Reg(u32),
    Sym(Space, u64),
}

struct Lower<'a> {
    m: &'a ast::Module,
    file: &'a str,
    code: Vec<Inst>,
    regs: Vec<RegInfo>,
    /// scopes[0] is the module scope.
    scopes: Vec<HashMap<String, Bind>>,
    /// Lookups stop at this scope index (then go to the module scope).
    floor: usize,
    shared_off: u64,
    dyn_shared_base: u64,
    local_off: u64,
    stack: Vec<String>,
    prefix: String,
    inline_count: u32,
}

/// Decodes entry `entry` of module `m` into a [`Kernel`].
pub(crate) fn decode_entry(m: &ast::Module, file: &str, entry: &str) -> Result<Kernel, PtxError> {
    let f = m
        .functions
        .iter()
        .find(|f| f.is_entry && f.name == entry && f.body.is_some())
        .ok_or_else(|| {
            let names: Vec<&str> = m
                .functions
                .iter()
                .filter(|f| f.is_entry)
                .map(|f| f.name.as_str())
                .collect();
            PtxError::Launch {
                entry: entry.to_string(),
                msg: format!("no such .entry; the module has: {}", names.join(", ")),
            }
        })?;
    let mut lw = Lower {
        m,
        file,
        code: Vec::new(),
        regs: Vec::new(),
        scopes: vec![HashMap::new()],
        floor: 1,
        shared_off: 0,
        dyn_shared_base: 0,
        local_off: 0,
        stack: vec![entry.to_string()],
        prefix: String::new(),
        inline_count: 0,
    };
    // Module variables.
    let mut globals = Vec::new();
    let mut gaddr = GLOBAL_VAR_BASE;
    for v in &m.vars {
        match v.space {
            Space::Global | Space::Const => {
                let align = v
                    .align
                    .unwrap_or(elem_size(&v.ty, v.line, file)? as u32)
                    .max(1) as u64;
                gaddr = gaddr.next_multiple_of(align.max(16));
                let bytes = var_bytes(v, file)?;
                let size = bytes.len() as u64;
                lw.scopes[0].insert(v.name.clone(), Bind::Sym(Space::Global, gaddr));
                globals.push(GlobalVar {
                    name: v.name.clone(),
                    addr: gaddr,
                    bytes,
                    writable: v.space == Space::Global,
                });
                gaddr += size.max(1) + 256;
            }
            Space::Shared if !v.is_extern => {
                let addr = lw.alloc_shared(v)?;
                lw.scopes[0].insert(v.name.clone(), Bind::Sym(Space::Shared, addr));
            }
            _ => {}
        }
    }
    // Static shared memory of the entry body, to place the dynamic part after it.
    let body = f.body.as_ref().expect("checked above");
    let mut max_align = 16u64;
    for s in body {
        if let Stmt::Var(v) = s {
            if v.space == Space::Shared && !v.is_extern {
                let addr = lw.alloc_shared(v)?;
                lw.scopes[0].insert(
                    format!("\u{0}entry-shared:{}", v.name),
                    Bind::Sym(Space::Shared, addr),
                );
            }
            if v.space == Space::Shared {
                max_align = max_align.max(v.align.unwrap_or(1) as u64);
            }
        }
    }
    for v in &m.vars {
        if v.space == Space::Shared && v.is_extern {
            max_align = max_align.max(v.align.unwrap_or(1) as u64);
        }
    }
    lw.dyn_shared_base = lw.shared_off.next_multiple_of(max_align);
    for v in &m.vars {
        if v.space == Space::Shared && v.is_extern {
            lw.scopes[0].insert(v.name.clone(), Bind::Sym(Space::Shared, lw.dyn_shared_base));
        }
    }
    // Kernel parameters.
    let mut params = Vec::new();
    let mut poff = 0u32;
    let mut pscope = HashMap::new();
    for p in &f.params {
        let es = elem_size(&p.ty, p.line, file)? as u32;
        let size = es * p.count as u32;
        let align = p.align.unwrap_or(es).max(1);
        poff = poff.next_multiple_of(align);
        pscope.insert(p.name.clone(), Bind::Sym(Space::Param, poff as u64));
        params.push(ParamInfo {
            name: p.name.clone(),
            ty: p.ty.clone(),
            size,
            offset: poff,
        });
        poff += size;
    }
    lw.scopes.push(pscope);
    lw.floor = 1;
    lw.function_body(body, true)?;
    // Deferred (flux) atomics: their old value is never read.
    let read: HashSet<u32> = lw
        .code
        .iter()
        .flat_map(|i| {
            let mut v = i.op.srcs();
            if let Some((g, _)) = i.guard {
                v.push(g)
            }
            v
        })
        .collect();
    let mut needs_ordered = false;
    for inst in &mut lw.code {
        if let Op::Atom {
            d, deferred, space, ..
        } = &mut inst.op
        {
            *deferred = match d {
                None => true,
                Some(r) => !read.contains(r),
            };
            if !*deferred && matches!(space, Space::Global | Space::Generic) {
                needs_ordered = true;
            }
        }
    }
    Ok(Kernel {
        name: entry.to_string(),
        code: lw.code,
        regs: lw.regs,
        params,
        param_bytes: poff,
        shared_static: lw.dyn_shared_base as u32,
        local_bytes: lw.local_off.next_multiple_of(8) as u32,
        globals,
        needs_ordered_blocks: needs_ordered,
    })
}

fn elem_size(ty: &str, line: u32, file: &str) -> Result<u64, PtxError> {
    match Ty::parse(ty) {
        Some(t) => Ok(t.bytes() as u64),
        None => Err(PtxError::Semantic {
            file: file.into(),
            line,
            msg: format!("unknown type .{ty}"),
        }),
    }
}

fn var_size(v: &ast::VarDecl, file: &str) -> Result<u64, PtxError> {
    let es = elem_size(&v.ty, v.line, file)? * v.vec as u64;
    let mut n = 1u64;
    for d in &v.dims {
        match d {
            Some(k) => n = n.saturating_mul(*k),
            None => {
                // Unsized: the initialiser's length.
                n = n.saturating_mul(v.init.as_ref().map(|i| i.len() as u64).unwrap_or(0));
            }
        }
    }
    if n.saturating_mul(es) > 1 << 28 {
        return Err(PtxError::Semantic {
            file: file.into(),
            line: v.line,
            msg: format!("`{}` is too large", v.name),
        });
    }
    Ok(es * n)
}

/// The initial bytes of a module variable.
fn var_bytes(v: &ast::VarDecl, file: &str) -> Result<Vec<u8>, PtxError> {
    let size = var_size(v, file)? as usize;
    let mut out = vec![0u8; size];
    let ty = Ty::parse(&v.ty).expect("checked by var_size");
    let es = ty.bytes() as usize;
    if let Some(init) = &v.init {
        for (i, x) in init.iter().enumerate() {
            let bits: u64 = match (x, ty) {
                (Init::Int(k), t) if t.is_float() => float_bits(FloatLit::Decimal(*k as f64), t),
                (Init::Int(k), _) => *k as u64,
                (Init::Float(f), t) => float_bits(*f, t),
                (Init::Symbol(s), _) => {
                    return Err(PtxError::Unsupported {
                        file: file.into(),
                        line: v.line,
                        what: format!("initialiser `{s}`"),
                        why: "address initialisers are not supported".into(),
                    })
                }
            };
            let at = i * es;
            if at + es > out.len() {
                return Err(PtxError::Semantic {
                    file: file.into(),
                    line: v.line,
                    msg: format!("`{}`: more initial values than elements", v.name),
                });
            }
            out[at..at + es].copy_from_slice(&bits.to_le_bytes()[..es]);
        }
    }
    Ok(out)
}

fn float_bits(f: FloatLit, t: Ty) -> u64 {
    let v = match f {
        FloatLit::F32Bits(b) if t == Ty::F32 => return b as u64,
        FloatLit::F64Bits(b) if t == Ty::F64 => return b,
        FloatLit::F32Bits(b) if !t.is_float() => return b as u64,
        FloatLit::F64Bits(b) if !t.is_float() => return b,
        FloatLit::F32Bits(b) => f32::from_bits(b) as f64,
        FloatLit::F64Bits(b) => f64::from_bits(b),
        FloatLit::Decimal(d) => d,
    };
    match t {
        Ty::F32 => (v as f32).to_bits() as u64,
        Ty::F16 => half_ops::f16_rn(v) as u64,
        Ty::Bf16 => half::bf16::from_f64(v).to_bits() as u64,
        Ty::F64 => v.to_bits(),
        // A float literal for an integer type: its bits as f64 (PTX: 0d…) or f32.
        _ => v.to_bits(),
    }
}

fn space_of(mods: &[String]) -> Space {
    for m in mods {
        match m.as_str() {
            "global" => return Space::Global,
            "shared" | "shared::cta" | "shared::cluster" => return Space::Shared,
            "local" => return Space::Local,
            "param" | "param::entry" | "param::func" => return Space::Param,
            "const" => return Space::Const,
            _ => {}
        }
    }
    Space::Generic
}

impl<'a> Lower<'a> {
    fn err_sem(&self, line: u32, msg: String) -> PtxError {
        PtxError::Semantic {
            file: self.file.into(),
            line,
            msg,
        }
    }
    fn unsupported(&self, ins: &Instruction, why: impl Into<String>) -> PtxError {
        PtxError::Unsupported {
            file: self.file.into(),
            line: ins.line,
            what: ins.opcode_text(),
            why: why.into(),
        }
    }

    fn alloc_shared(&mut self, v: &ast::VarDecl) -> Result<u64, PtxError> {
        let size = var_size(v, self.file)?;
        let align = v
            .align
            .unwrap_or(elem_size(&v.ty, v.line, self.file)? as u32)
            .max(1) as u64;
        let addr = self.shared_off.next_multiple_of(align);
        self.shared_off = addr + size;
        if self.shared_off > 1 << 31 {
            return Err(self.err_sem(v.line, "shared memory over 2 GiB".into()));
        }
        Ok(addr)
    }

    fn alloc_local(&mut self, size: u64, align: u64) -> u64 {
        let addr = self.local_off.next_multiple_of(align.max(1));
        self.local_off = addr + size;
        addr
    }

    fn new_reg(&mut self, name: String, ty: Ty) -> u32 {
        self.regs.push(RegInfo { name, ty });
        (self.regs.len() - 1) as u32
    }

    fn lookup(&self, name: &str) -> Option<Bind> {
        for s in self.scopes[self.floor..].iter().rev() {
            if let Some(b) = s.get(name) {
                return Some(*b);
            }
        }
        self.scopes[0].get(name).copied()
    }

    fn declare(&mut self, name: &str, b: Bind) {
        self.scopes
            .last_mut()
            .expect("a scope")
            .insert(name.to_string(), b);
    }

    fn emit(&mut self, op: Op, guard: Option<(u32, bool)>, line: u32) {
        self.code.push(Inst { op, guard, line });
    }

    /// Lowers one function body (entry or inlined callee).
    fn function_body(&mut self, body: &[Stmt], is_entry: bool) -> Result<(), PtxError> {
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

    fn reg(&self, ins: &Instruction, name: &str) -> Result<u32, PtxError> {
        match self.lookup(name) {
            Some(Bind::Reg(r)) => Ok(r),
            _ => Err(self.err_sem(ins.line, format!("`{name}` is not a declared register"))),
        }
    }

    fn dst(&mut self, ins: &Instruction, o: &Operand) -> Result<u32, PtxError> {
        match o {
            Operand::Name(n) => self.reg(ins, n),
            Operand::Sink => Ok(self.new_reg("_".into(), Ty::B64)),
            _ => Err(self.err_sem(
                ins.line,
                format!("expected a destination register, found {o:?}"),
            )),
        }
    }

    fn src(&mut self, ins: &Instruction, o: &Operand, ty: Ty) -> Result<Src, PtxError> {
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
    fn addr(
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

    fn guard(&self, ins: &Instruction) -> Result<Option<(u32, bool)>, PtxError> {
        match &ins.guard {
            None => Ok(None),
            Some((n, neg)) => Ok(Some((self.reg(ins, n)?, *neg))),
        }
    }

    fn instruction(
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
                let mode = bit_ops::PrmtMode::of(&mods);
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
                self.emit(
                    Op::Redux {
                        op: rop,
                        signed: ty.is_signed(),
                        d,
                        a,
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

    /// `add/sub.f32` whose operand `which` (1 or 2) is the single-use result of a
    /// `mul.f32` (neither with a rounding modifier): one fused multiply-add, as
    /// ptxas contracts them (the PTX ISA allows it for exactly these forms).
    fn contracted(
        &mut self,
        ins: &Instruction,
        mul: &Instruction,
        which: usize,
    ) -> Result<(), PtxError> {
        let g = self.guard(ins)?;
        let mods = Mods(&ins.opcode[1..]);
        let ty = mods.ty().expect("planned on typed instructions");
        let ftz = mods.has("ftz");
        let sub = ins.opcode[0] == "sub";
        let d = self.dst(ins, &ins.operands[0])?;
        let x = self.src(mul, &mul.operands[1], ty)?;
        let y = self.src(mul, &mul.operands[2], ty)?;
        let other = self.src(ins, &ins.operands[3 - which], ty)?;
        // d = x*y + c   (add), x*y - c (sub, mul first), c - x*y (sub, mul second)
        let (nx, nc) = match (sub, which) {
            (false, _) => (false, false),
            (true, 1) => (false, true),
            _ => (true, false),
        };
        let op = alu_op(
            warp_ops::contracted(ty, ftz, nx, nc),
            semantics::contracted(ty, ftz, nx, nc),
            d,
            [x, y, other],
        );
        self.emit(op, g, ins.line);
        Ok(())
    }

    /// `bar.red.popc.u32 d, a, {!}c` and `bar.red.and|or.pred p, a, {!}c`.
    fn bar_red(&mut self, ins: &Instruction, g: Option<(u32, bool)>) -> Result<(), PtxError> {
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
    fn lop3(&mut self, ins: &Instruction, g: Option<(u32, bool)>) -> Result<(), PtxError> {
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

    fn carry(&mut self, ins: &Instruction, g: Option<(u32, bool)>) -> Result<(), PtxError> {
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

    fn setp(&mut self, ins: &Instruction, g: Option<(u32, bool)>) -> Result<(), PtxError> {
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

    fn mov(&mut self, ins: &Instruction, g: Option<(u32, bool)>) -> Result<(), PtxError> {
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

    fn mem(&mut self, ins: &Instruction, g: Option<(u32, bool)>) -> Result<(), PtxError> {
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
            self.emit(
                Op::Ld {
                    space: sp,
                    size,
                    sign: ty.is_signed(),
                    d,
                    addr,
                },
                g,
                ins.line,
            );
        }
        Ok(())
    }

    fn atom(&mut self, ins: &Instruction, g: Option<(u32, bool)>) -> Result<(), PtxError> {
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
            },
            g,
            ins.line,
        );
        Ok(())
    }

    /// `call`: the callee is inlined, its parameters bound to the caller's
    /// argument variables (or to fresh local slots for register arguments).
    fn call(&mut self, ins: &Instruction, g: Option<(u32, bool)>) -> Result<(), PtxError> {
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
                },
                None,
                ins.line,
            );
        }
        Ok(())
    }

    fn bind_value(
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

/// The value of a symbol used as an operand: its address in its space (kernel
/// parameters: their offset in the parameter buffer).
fn sym_value(_space: Space, addr: u64) -> u64 {
    addr
}

/// `d = op(a, b, c)`: the warp form when the instruction has one, else the
/// general closure.
fn alu_op(kind: Option<Kind>, f: AluFn, d: u32, [a, b, c]: [Src; 3]) -> Op {
    match kind {
        Some(kind) => Op::Warp(WarpOp { kind, d, a, b, c }),
        None => Op::Alu { f, d, a, b, c },
    }
}

fn is_contractible(ins: &Instruction, ops: &[&str]) -> Option<(Ty, bool)> {
    if !ops.contains(&ins.opcode[0].as_str()) || ins.operands.len() != 3 {
        return None;
    }
    let m = Mods(&ins.opcode[1..]);
    if m.0
        .iter()
        .any(|x| matches!(x.as_str(), "rn" | "rz" | "rm" | "rp" | "sat"))
    {
        return None;
    }
    let ty = m.ty()?;
    if ty != Ty::F32 && ty != Ty::F64 {
        return None;
    }
    Some((ty, m.has("ftz")))
}

fn names_in(o: &Operand, out: &mut Vec<String>) {
    match o {
        Operand::Name(n) | Operand::NameOffset(n, _) => out.push(n.clone()),
        Operand::Address(Some(n), _) => out.push(n.clone()),
        Operand::Vector(v) | Operand::List(v) => v.iter().for_each(|x| names_in(x, out)),
        Operand::Not(x) => names_in(x, out),
        Operand::Pair(a, b) => {
            names_in(a, out);
            names_in(b, out)
        }
        _ => {}
    }
}

/// Which `add/sub` statements become one fma with an earlier `mul` of the same
/// basic block: statement index → (mul statement index, operand 1 or 2). The mul's
/// result must have no other use, and its sources must not change in between.
fn contraction_plan(body: &[Stmt]) -> HashMap<usize, (usize, usize)> {
    let mut count: HashMap<String, usize> = HashMap::new();
    for s in body {
        if let Stmt::Inst(i) = s {
            let mut v = Vec::new();
            i.operands.iter().for_each(|o| names_in(o, &mut v));
            if let Some((g, _)) = &i.guard {
                v.push(g.clone());
            }
            for n in v {
                *count.entry(n).or_default() += 1;
            }
        }
    }
    let mut plan = HashMap::new();
    let mut last_def: HashMap<String, usize> = HashMap::new();
    for (si, s) in body.iter().enumerate() {
        let Stmt::Inst(i) = s else {
            if let Stmt::Label(..) = s {
                last_def.clear();
            }
            continue;
        };
        if let Some((ty, ftz)) = is_contractible(i, &["add", "sub"]) {
            'ops: for which in [1usize, 2] {
                let Operand::Name(n) = &i.operands[which] else {
                    continue;
                };
                let Some(&mi) = last_def.get(n) else { continue };
                let Stmt::Inst(mul) = &body[mi] else { continue };
                if is_contractible(mul, &["mul"]) != Some((ty, ftz))
                    || mul.guard != i.guard
                    || count.get(n) != Some(&2)
                {
                    continue;
                }
                for src in &mul.operands[1..] {
                    if let Operand::Name(sn) = src {
                        if last_def.get(sn).is_some_and(|&d| d > mi) {
                            continue 'ops;
                        }
                    }
                }
                plan.insert(si, (mi, which));
                break;
            }
        }
        if let Some(Operand::Name(d)) = i.operands.first() {
            last_def.insert(d.clone(), si);
        }
        if let Some(Operand::Pair(a, b)) = i.operands.first() {
            for x in [a, b] {
                if let Operand::Name(d) = &**x {
                    last_def.insert(d.clone(), si);
                }
            }
        }
        if matches!(
            i.opcode[0].as_str(),
            "bra" | "ret" | "exit" | "call" | "bar" | "barrier"
        ) {
            last_def.clear();
        }
    }
    plan
}
