//! Lowering a parsed field to the kernel IR, checking names and types. Every
//! error names the variable and the place (`file:line:col`).

use crate::ast::{Expr, ExprKind, FieldDecl, Item, Stmt, UnaryOp};
use crate::error::{IrError, Pos};
use crate::kernel::*;
use crate::types::{ScalarType, Value};
use std::collections::HashMap;

/// Parses `.field` text and lowers every field in it to a [`Kernel`].
pub fn compile_all(file: &str, src: &str) -> Result<Vec<Kernel>, IrError> {
    let fields = crate::parser::parse(file, src)?;
    fields.iter().map(|f| lower_field(file, f)).collect()
}

/// Parses `.field` text holding exactly one field and lowers it.
pub fn compile(file: &str, src: &str) -> Result<Kernel, IrError> {
    let mut ks = compile_all(file, src)?;
    if ks.len() != 1 {
        return Err(IrError::ty(
            file,
            Pos { line: 1, col: 1 },
            format!("expected one field in the file, found {}", ks.len()),
        ));
    }
    Ok(ks.remove(0))
}

/// Reads a `.field` file and compiles its one field.
pub fn compile_file(path: &std::path::Path) -> Result<Kernel, IrError> {
    let file = path.display().to_string();
    let src = std::fs::read_to_string(path).map_err(|e| IrError::Parse {
        file: file.clone(),
        pos: Pos { line: 1, col: 1 },
        expected: "a readable .field file".into(),
        found: e.to_string(),
    })?;
    compile(&file, &src)
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Ty {
    Strong(ScalarType),
    WeakFloat,
    WeakInt,
}

impl Ty {
    fn describe(self) -> String {
        match self {
            Ty::Strong(t) => t.to_string(),
            Ty::WeakFloat => "a float literal".into(),
            Ty::WeakInt => "an integer literal".into(),
        }
    }
}

/// What a name means in the current scope.
#[derive(Clone, Copy)]
enum Binding {
    Let(NodeId),
    State(u32),
    Scalar(u32),
    Buffer(u32),
    Shared(u32),
    Flux(u32),
    Builtin(Builtin),
}

struct Lower<'a> {
    file: &'a str,
    k: Kernel,
    globals: HashMap<String, Binding>,
    locals: HashMap<String, NodeId>,
    /// The repetition variable's name inside a repeating phase.
    rep: Option<String>,
    /// What the expression being lowered may read.
    ctx: Ctx,
}

#[derive(Clone, Copy, PartialEq)]
enum Ctx {
    /// A length or repeat count: parameters, `n`, `bdim`, `gdim`.
    Uniform,
    /// A state's initial value: no states, no time, no shared.
    Init,
    /// A phase's span: uniform plus the repetition.
    Span,
    /// A rate, jump, drive or emit.
    Dynamic,
}

fn lower_field(file: &str, f: &FieldDecl) -> Result<Kernel, IrError> {
    let mut l = Lower {
        file,
        k: Kernel::new(&f.name, file),
        globals: HashMap::new(),
        locals: HashMap::new(),
        rep: None,
        ctx: Ctx::Uniform,
    };
    for (name, b) in [
        ("i", Builtin::Global),
        ("tid", Builtin::Thread),
        ("bid", Builtin::Block),
        ("bdim", Builtin::BlockDim),
        ("gdim", Builtin::GridDim),
        ("n", Builtin::Count),
        ("t", Builtin::Time),
    ] {
        l.globals.insert(name.to_string(), Binding::Builtin(b));
    }
    for p in &f.params {
        l.declare(&p.name, p.pos, "parameter")?;
        let idx = l.k.params.len() as u32;
        l.k.params.push(Param {
            name: p.name.clone(),
            ty: p.ty,
            buffer: p.buffer,
        });
        l.globals.insert(
            p.name.clone(),
            if p.buffer {
                Binding::Buffer(idx)
            } else {
                Binding::Scalar(idx)
            },
        );
    }
    // States first (their types fix the field's float type), then their initial values.
    let mut state_decls = Vec::new();
    for item in &f.items {
        if let Item::State(ds) = item {
            for d in ds {
                let ty = d.ty.unwrap_or(ScalarType::F32);
                if !ty.is_float() {
                    return Err(IrError::ty(
                        file,
                        d.pos,
                        format!("state `{}` is {ty}: states are f32 or f64", d.name),
                    ));
                }
                if let Some(first) = l.k.states.first() {
                    if first.ty != ty {
                        return Err(IrError::ty(
                            file,
                            d.pos,
                            format!(
                                "state `{}` is {ty} but state `{}` is {}: all states of a field share one float type",
                                d.name, first.name, first.ty
                            ),
                        ));
                    }
                }
                l.declare(&d.name, d.pos, "state")?;
                let idx = l.k.states.len() as u32;
                l.k.states.push(StateVar {
                    name: d.name.clone(),
                    ty,
                    init: NodeId(0),
                });
                l.globals.insert(d.name.clone(), Binding::State(idx));
                state_decls.push(d);
            }
        }
    }
    if l.k.states.is_empty() && !f.items.iter().any(|i| matches!(i, Item::Flux(_))) {
        return Err(IrError::ty(
            file,
            f.pos,
            format!(
                "field `{}` has no state and no flux output: it computes nothing",
                f.name
            ),
        ));
    }
    l.ctx = Ctx::Init;
    for (k, d) in state_decls.iter().enumerate() {
        let ty = l.k.states[k].ty;
        let init = l.lower_to(
            &d.init,
            ty,
            &format!("the initial value of state `{}`", d.name),
        )?;
        l.k.states[k].init = init;
    }
    l.ctx = Ctx::Uniform;
    for item in &f.items {
        match item {
            Item::Shared(d) => {
                l.declare(&d.name, d.pos, "shared sub-field")?;
                let len = l.lower_len(&d.len, &d.name)?;
                l.ctx = Ctx::Uniform;
                let init = l.lower_to(
                    &d.init,
                    d.ty,
                    &format!("the initial value of shared `{}`", d.name),
                )?;
                let idx = l.k.shared.len() as u32;
                l.k.shared.push(SharedVar {
                    name: d.name.clone(),
                    ty: d.ty,
                    len,
                    init,
                });
                l.globals.insert(d.name.clone(), Binding::Shared(idx));
            }
            Item::Flux(d) => {
                l.declare(&d.name, d.pos, "flux output")?;
                let len = l.lower_len(&d.len, &d.name)?;
                let idx = l.k.fluxes.len() as u32;
                l.k.fluxes.push(FluxVar {
                    name: d.name.clone(),
                    ty: d.ty,
                    len,
                });
                l.globals.insert(d.name.clone(), Binding::Flux(idx));
            }
            _ => {}
        }
    }
    let has_phases = f.items.iter().any(|i| matches!(i, Item::Phase(_)));
    let mut main = l.empty_phase("main", None, None);
    let mut top_lets: Vec<(String, NodeId)> = Vec::new();
    for item in &f.items {
        match item {
            Item::Stmt(Stmt::Let {
                name,
                ty,
                value,
                pos,
            }) => {
                l.ctx = Ctx::Dynamic;
                let node = l.lower_let(name, *ty, value, *pos)?;
                top_lets.push((name.clone(), node));
                l.locals.insert(name.clone(), node);
            }
            Item::Stmt(s) => {
                if has_phases {
                    return Err(IrError::ty(
                        file,
                        stmt_pos(s),
                        "this field has phases: put rates, jumps, drives and emits inside a `phase`",
                    ));
                }
                if let Stmt::Drive { .. } | Stmt::Emit { .. } = s {
                    return Err(IrError::ty(
                        file,
                        stmt_pos(s),
                        "drives and emits need a phase (the basin collapse that publishes them): write `phase main { … }` around the statements",
                    ));
                }
                l.ctx = Ctx::Dynamic;
                l.stmt(s, &mut main)?;
            }
            Item::Phase(p) => {
                let saved = l.locals.clone();
                let repeat = match &p.repeat {
                    Some((var, count)) => {
                        l.declare(var, p.pos, "repetition variable")?;
                        let n =
                            l.lower_len(count, &format!("the repetitions of phase `{}`", p.name))?;
                        l.rep = Some(var.clone());
                        Some(n)
                    }
                    None => None,
                };
                l.ctx = Ctx::Span;
                let fty = l.k.float_type();
                let span = match &p.over {
                    Some(e) => l.lower_to(e, fty, &format!("the span of phase `{}`", p.name))?,
                    None => l.k.constant_node(Value::F64(1.0).cast(fty)),
                };
                let mut phase = l.empty_phase(&p.name, repeat, Some(span));
                l.ctx = Ctx::Dynamic;
                for s in &p.body {
                    l.stmt(s, &mut phase)?;
                }
                l.k.phases.push(phase);
                l.locals = saved;
                l.rep = None;
            }
            _ => {}
        }
    }
    if !has_phases {
        l.k.phases.push(main);
    }
    Ok(l.k)
}

fn stmt_pos(s: &Stmt) -> Pos {
    match s {
        Stmt::Let { pos, .. }
        | Stmt::Rate { pos, .. }
        | Stmt::Jump { pos, .. }
        | Stmt::Drive { pos, .. }
        | Stmt::Emit { pos, .. } => *pos,
    }
}

impl Lower<'_> {
    fn err(&self, pos: Pos, msg: impl Into<String>) -> IrError {
        IrError::ty(self.file, pos, msg)
    }

    fn declare(&self, name: &str, pos: Pos, what: &str) -> Result<(), IrError> {
        if let Some(b) = self.globals.get(name) {
            let prev = match b {
                Binding::Builtin(_) => "a built-in index",
                Binding::State(_) => "a state",
                Binding::Scalar(_) | Binding::Buffer(_) => "a parameter",
                Binding::Shared(_) => "a shared sub-field",
                Binding::Flux(_) => "a flux output",
                Binding::Let(_) => "a `let`",
            };
            return Err(self.err(pos, format!("{what} `{name}` is already {prev}")));
        }
        if self.locals.contains_key(name) || self.rep.as_deref() == Some(name) {
            return Err(self.err(pos, format!("{what} `{name}` is already a `let`")));
        }
        if ["init", "select", "fma", "min", "max", "pow"].contains(&name) {
            return Err(self.err(
                pos,
                format!("{what} `{name}` would hide the built-in function `{name}`"),
            ));
        }
        Ok(())
    }

    fn empty_phase(&self, name: &str, repeat: Option<NodeId>, span: Option<NodeId>) -> Phase {
        Phase {
            name: name.to_string(),
            repeat,
            span,
            updates: vec![Update::Hold; self.k.states.len()],
            drives: vec![],
            emits: vec![],
        }
    }

    fn lower_len(&mut self, e: &Expr, what: &str) -> Result<NodeId, IrError> {
        let saved = self.ctx;
        self.ctx = Ctx::Uniform;
        let r = self.lower_to(e, ScalarType::U32, what);
        self.ctx = saved;
        r
    }

    fn lower_let(
        &mut self,
        name: &str,
        ty: Option<ScalarType>,
        value: &Expr,
        pos: Pos,
    ) -> Result<NodeId, IrError> {
        self.declare(name, pos, "`let`")?;
        match ty {
            Some(t) => self.lower_to(value, t, &format!("`let {name}`")),
            None => {
                let inferred = self.infer(value)?;
                let t = self.default_type(inferred);
                self.lower_as(value, t)
            }
        }
    }

    fn stmt(&mut self, s: &Stmt, phase: &mut Phase) -> Result<(), IrError> {
        match s {
            Stmt::Let {
                name,
                ty,
                value,
                pos,
            } => {
                let node = self.lower_let(name, *ty, value, *pos)?;
                self.locals.insert(name.clone(), node);
            }
            Stmt::Rate { state, value, pos } | Stmt::Jump { state, value, pos } => {
                let k = self.state_index(state, *pos)?;
                if phase.updates[k as usize] != Update::Hold {
                    return Err(self.err(
                        *pos,
                        format!("state `{state}` already has a rate or jump in this phase"),
                    ));
                }
                let ty = self.k.states[k as usize].ty;
                let is_rate = matches!(s, Stmt::Rate { .. });
                let what = if is_rate {
                    format!("the rate of state `{state}`")
                } else {
                    format!("the jump of state `{state}`")
                };
                let node = self.lower_to(value, ty, &what)?;
                phase.updates[k as usize] = if is_rate {
                    Update::Rate(node)
                } else {
                    Update::Jump(node)
                };
            }
            Stmt::Drive {
                shared,
                index,
                value,
                guard,
                pos,
            } => {
                let s = match self.globals.get(shared) {
                    Some(Binding::Shared(s)) => *s,
                    _ => return Err(self.err(*pos, format!("`{shared}` is not a shared sub-field (declare it: `shared {shared}: f32[LEN] = 0.0;`)"))),
                };
                let ty = self.k.shared[s as usize].ty;
                let index = self.lower_index(index, shared)?;
                let value = self.lower_to(value, ty, &format!("the drive of shared `{shared}`"))?;
                let guard = match guard {
                    Some(g) => Some(self.lower_to(g, ScalarType::Bool, "the `if` condition")?),
                    None => None,
                };
                let site = self.k.site(*pos);
                phase.drives.push(Drive {
                    shared: s,
                    index,
                    value,
                    guard,
                    site,
                });
            }
            Stmt::Emit {
                flux,
                index,
                value,
                guard,
                pos,
            } => {
                let f = match self.globals.get(flux) {
                    Some(Binding::Flux(f)) => *f,
                    _ => {
                        return Err(self.err(
                            *pos,
                            format!(
                            "`{flux}` is not a flux output (declare it: `flux {flux}: f32[LEN];`)"
                        ),
                        ))
                    }
                };
                let ty = self.k.fluxes[f as usize].ty;
                let index = self.lower_index(index, flux)?;
                let value = self.lower_to(value, ty, &format!("the emission into `{flux}`"))?;
                let guard = match guard {
                    Some(g) => Some(self.lower_to(g, ScalarType::Bool, "the `if` condition")?),
                    None => None,
                };
                let site = self.k.site(*pos);
                phase.emits.push(Emit {
                    flux: f,
                    index,
                    value,
                    guard,
                    site,
                });
            }
        }
        Ok(())
    }

    fn state_index(&self, name: &str, pos: Pos) -> Result<u32, IrError> {
        match self.globals.get(name) {
            Some(Binding::State(k)) => Ok(*k),
            Some(Binding::Shared(_)) => Err(self.err(
                pos,
                format!("`{name}` is a shared sub-field: drive an element, `d({name}[k])/dt += …`"),
            )),
            Some(_) => Err(self.err(
                pos,
                format!("`{name}` is not a state (only states have rates)"),
            )),
            None => Err(self.err(pos, format!("unknown state `{name}`"))),
        }
    }

    fn lower_index(&mut self, e: &Expr, of: &str) -> Result<NodeId, IrError> {
        let t = self.infer(e)?;
        let t = match t {
            Ty::Strong(t) if t.is_int() => t,
            Ty::WeakInt => ScalarType::U32,
            other => {
                return Err(self.err(
                    e.pos,
                    format!(
                        "the index of `{of}` must be an integer (i32 or u32), found {}",
                        other.describe()
                    ),
                ))
            }
        };
        self.lower_as(e, t)
    }

    fn default_type(&self, t: Ty) -> ScalarType {
        match t {
            Ty::Strong(t) => t,
            Ty::WeakFloat => self.k.float_type(),
            Ty::WeakInt => ScalarType::I32,
        }
    }

    /// Lowers `e` as a value of type `want`, or explains why it is not one.
    fn lower_to(&mut self, e: &Expr, want: ScalarType, what: &str) -> Result<NodeId, IrError> {
        let t = self.infer(e)?;
        let ok = match t {
            Ty::Strong(s) => s == want,
            Ty::WeakFloat => want.is_float(),
            Ty::WeakInt => want.is_float() || want.is_int(),
        };
        if !ok {
            let found = match &e.kind {
                ExprKind::Name(n) => format!("`{n}` is {}", t.describe()),
                _ => format!("found {}", t.describe()),
            };
            return Err(self.err(
                e.pos,
                format!("{what} must be {want}, but {found} (convert with `{want}(…)`)"),
            ));
        }
        self.lower_as(e, want)
    }

    fn unify(&self, pos: Pos, op: &str, a: Ty, b: Ty) -> Result<Ty, IrError> {
        use Ty::*;
        let mismatch = || {
            self.err(
                pos,
                format!(
                    "`{op}` needs operands of one type, found {} and {}",
                    a.describe(),
                    b.describe()
                ),
            )
        };
        Ok(match (a, b) {
            (Strong(x), Strong(y)) => {
                if x == y {
                    Strong(x)
                } else {
                    return Err(mismatch());
                }
            }
            (Strong(x), w) | (w, Strong(x)) => {
                let fits = match w {
                    WeakFloat => x.is_float(),
                    _ => x.is_float() || x.is_int(),
                };
                if fits {
                    Strong(x)
                } else {
                    return Err(mismatch());
                }
            }
            (WeakFloat, _) | (_, WeakFloat) => WeakFloat,
            _ => WeakInt,
        })
    }

    fn lookup(&self, name: &str, pos: Pos) -> Result<Binding, IrError> {
        if let Some(n) = self.locals.get(name) {
            return Ok(Binding::Let(*n));
        }
        if self.rep.as_deref() == Some(name) {
            return Ok(Binding::Builtin(Builtin::Repetition));
        }
        match self.globals.get(name) {
            Some(b) => Ok(*b),
            None => Err(self.err(pos, format!("unknown name `{name}`"))),
        }
    }

    fn infer(&self, e: &Expr) -> Result<Ty, IrError> {
        Ok(match &e.kind {
            ExprKind::Float(_) => Ty::WeakFloat,
            ExprKind::Int(_) => Ty::WeakInt,
            ExprKind::Bool(_) => Ty::Strong(ScalarType::Bool),
            ExprKind::Name(n) => match self.lookup(n, e.pos)? {
                Binding::Let(id) => Ty::Strong(self.k.ty(id)),
                Binding::State(k) => Ty::Strong(self.k.states[k as usize].ty),
                Binding::Scalar(k) => Ty::Strong(self.k.params[k as usize].ty),
                Binding::Builtin(Builtin::Time) => Ty::Strong(self.k.float_type()),
                Binding::Builtin(_) => Ty::Strong(ScalarType::U32),
                Binding::Buffer(_) => {
                    return Err(self.err(
                        e.pos,
                        format!("`{n}` is a buffer: read an element, `{n}[i]`"),
                    ))
                }
                Binding::Shared(_) => {
                    return Err(self.err(
                        e.pos,
                        format!("`{n}` is a shared sub-field: read an element, `{n}[k]`"),
                    ))
                }
                Binding::Flux(_) => {
                    return Err(self.err(
                        e.pos,
                        format!("`{n}` is a flux output: it can be emitted into, not read"),
                    ))
                }
            },
            ExprKind::Index(n, _) => match self.lookup(n, e.pos)? {
                Binding::Buffer(k) => Ty::Strong(self.k.params[k as usize].ty),
                Binding::Shared(k) => Ty::Strong(self.k.shared[k as usize].ty),
                Binding::Flux(_) => {
                    return Err(self.err(
                        e.pos,
                        format!("`{n}` is a flux output: it can be emitted into, not read"),
                    ))
                }
                _ => {
                    return Err(self.err(
                        e.pos,
                        format!("`{n}` is not a buffer or shared sub-field, it cannot be indexed"),
                    ))
                }
            },
            ExprKind::Call(f, args) => {
                if let Some(t) = ScalarType::from_name(f) {
                    self.arity(e, f, args, 1)?;
                    self.infer(&args[0])?;
                    return Ok(Ty::Strong(t));
                }
                match f.as_str() {
                    "sin" | "cos" | "exp" | "log" | "sqrt" | "tanh" | "floor" => {
                        self.arity(e, f, args, 1)?;
                        let t = self.infer(&args[0])?;
                        match t {
                            Ty::Strong(s) if !s.is_float() => {
                                return Err(
                                    self.err(e.pos, format!("`{f}` takes a float, found {s}"))
                                )
                            }
                            Ty::WeakInt => Ty::WeakFloat,
                            t => t,
                        }
                    }
                    "abs" => {
                        self.arity(e, f, args, 1)?;
                        let t = self.infer(&args[0])?;
                        if t == Ty::Strong(ScalarType::Bool) {
                            return Err(self.err(e.pos, "`abs` takes a number, found bool"));
                        }
                        t
                    }
                    "min" | "max" | "pow" => {
                        self.arity(e, f, args, 2)?;
                        let t =
                            self.unify(e.pos, f, self.infer(&args[0])?, self.infer(&args[1])?)?;
                        if t == Ty::Strong(ScalarType::Bool)
                            || (f == "pow" && matches!(t, Ty::Strong(s) if s.is_int()))
                        {
                            return Err(
                                self.err(e.pos, format!("`{f}` does not take {}", t.describe()))
                            );
                        }
                        if f == "pow" && t == Ty::WeakInt {
                            Ty::WeakFloat
                        } else {
                            t
                        }
                    }
                    "fma" => {
                        self.arity(e, f, args, 3)?;
                        let t =
                            self.unify(e.pos, f, self.infer(&args[0])?, self.infer(&args[1])?)?;
                        let t = self.unify(e.pos, f, t, self.infer(&args[2])?)?;
                        if t == Ty::Strong(ScalarType::Bool) {
                            return Err(self.err(e.pos, "`fma` does not take bool"));
                        }
                        t
                    }
                    "select" => {
                        self.arity(e, f, args, 3)?;
                        let c = self.infer(&args[0])?;
                        if c != Ty::Strong(ScalarType::Bool) {
                            return Err(self.err(
                                args[0].pos,
                                format!(
                                    "the condition of `select` must be bool, found {}",
                                    c.describe()
                                ),
                            ));
                        }
                        self.unify(e.pos, f, self.infer(&args[1])?, self.infer(&args[2])?)?
                    }
                    "init" => {
                        self.arity(e, f, args, 1)?;
                        match &args[0].kind {
                            ExprKind::Name(n) => match self.globals.get(n) {
                                Some(Binding::State(k)) => {
                                    Ty::Strong(self.k.states[*k as usize].ty)
                                }
                                _ => {
                                    return Err(self.err(
                                        args[0].pos,
                                        format!("`init` takes a state name, `{n}` is not a state"),
                                    ))
                                }
                            },
                            _ => return Err(self.err(args[0].pos, "`init` takes a state name")),
                        }
                    }
                    _ => return Err(self.err(e.pos, format!("unknown function `{f}`"))),
                }
            }
            ExprKind::Unary(UnaryOp::Neg, a) => {
                let t = self.infer(a)?;
                match t {
                    Ty::Strong(ScalarType::U32) | Ty::Strong(ScalarType::Bool) => {
                        return Err(self.err(e.pos, format!("cannot negate {}", t.describe())))
                    }
                    t => t,
                }
            }
            ExprKind::Unary(UnaryOp::Not, a) => {
                let t = self.infer(a)?;
                match t {
                    Ty::Strong(s) if s.is_float() => {
                        return Err(self.err(e.pos, format!("`!` does not take {s}")))
                    }
                    Ty::WeakFloat => return Err(self.err(e.pos, "`!` does not take a float")),
                    t => t,
                }
            }
            ExprKind::Binary(op, a, b) => {
                let (ta, tb) = (self.infer(a)?, self.infer(b)?);
                match op {
                    BinOp::And | BinOp::Or => {
                        for (t, x) in [(ta, a), (tb, b)] {
                            if t != Ty::Strong(ScalarType::Bool) {
                                return Err(self.err(
                                    x.pos,
                                    format!(
                                        "`{}` takes bool operands, found {}",
                                        op.symbol(),
                                        t.describe()
                                    ),
                                ));
                            }
                        }
                        Ty::Strong(ScalarType::Bool)
                    }
                    BinOp::Shl | BinOp::Shr => {
                        for (t, x) in [(ta, a), (tb, b)] {
                            if !matches!(t, Ty::WeakInt)
                                && !matches!(t, Ty::Strong(s) if s.is_int())
                            {
                                return Err(self.err(
                                    x.pos,
                                    format!(
                                        "`{}` takes integer operands, found {}",
                                        op.symbol(),
                                        t.describe()
                                    ),
                                ));
                            }
                        }
                        ta
                    }
                    _ => {
                        let t = self.unify(e.pos, op.symbol(), ta, tb)?;
                        if op.is_comparison() {
                            Ty::Strong(ScalarType::Bool)
                        } else {
                            let bad = match t {
                                Ty::Strong(ScalarType::Bool) => true,
                                Ty::Strong(s) if s.is_float() || t == Ty::WeakFloat => {
                                    matches!(op, BinOp::BitAnd | BinOp::BitOr | BinOp::BitXor)
                                }
                                Ty::WeakFloat => {
                                    matches!(op, BinOp::BitAnd | BinOp::BitOr | BinOp::BitXor)
                                }
                                _ => false,
                            };
                            if bad {
                                return Err(self.err(
                                    e.pos,
                                    format!("`{}` does not take {}", op.symbol(), t.describe()),
                                ));
                            }
                            t
                        }
                    }
                }
            }
        })
    }

    fn arity(&self, e: &Expr, f: &str, args: &[Expr], n: usize) -> Result<(), IrError> {
        if args.len() != n {
            return Err(self.err(
                e.pos,
                format!("`{f}` takes {n} argument(s), found {}", args.len()),
            ));
        }
        Ok(())
    }

    fn check_ctx(&self, pos: Pos, what: &str, allowed: &[Ctx]) -> Result<(), IrError> {
        if allowed.contains(&self.ctx) {
            return Ok(());
        }
        let place = match self.ctx {
            Ctx::Uniform => "a length or repetition count (only scalar parameters, `n`, `bdim`, `gdim` and numbers)",
            Ctx::Init => "an initial value",
            Ctx::Span => "a phase span",
            Ctx::Dynamic => "a rate",
        };
        Err(self.err(pos, format!("{what} cannot be used in {place}")))
    }

    /// Lowers `e` as type `t` (the caller checked with `infer` that it fits).
    fn lower_as(&mut self, e: &Expr, t: ScalarType) -> Result<NodeId, IrError> {
        use Ctx::*;
        Ok(match &e.kind {
            ExprKind::Float(text) => {
                let v = match t {
                    ScalarType::F32 => Value::F32(
                        text.parse::<f32>()
                            .map_err(|_| self.err(e.pos, "bad number"))?,
                    ),
                    ScalarType::F64 => Value::F64(
                        text.parse::<f64>()
                            .map_err(|_| self.err(e.pos, "bad number"))?,
                    ),
                    _ => {
                        return Err(self.err(
                            e.pos,
                            format!("float literal `{text}` where {t} is expected"),
                        ))
                    }
                };
                self.k.constant_node(v)
            }
            ExprKind::Int(v) => {
                let v = *v;
                let val = match t {
                    ScalarType::F32 => Value::F32(v as f32),
                    ScalarType::F64 => Value::F64(v as f64),
                    ScalarType::I32 if v <= i32::MAX as u64 => Value::I32(v as i32),
                    ScalarType::I32 if v == 1u64 << 31 => Value::I32(i32::MIN),
                    ScalarType::U32 if v <= u32::MAX as u64 => Value::U32(v as u32),
                    _ => return Err(self.err(e.pos, format!("integer `{v}` does not fit in {t}"))),
                };
                self.k.constant_node(val)
            }
            ExprKind::Bool(b) => self.k.constant_node(Value::Bool(*b)),
            ExprKind::Name(n) => {
                let node = match self.lookup(n, e.pos)? {
                    Binding::Let(id) => {
                        if self.ctx != Dynamic {
                            return Err(self.err(e.pos, format!("`let {n}` cannot be used here")));
                        }
                        id
                    }
                    Binding::State(k) => {
                        self.check_ctx(e.pos, &format!("state `{n}`"), &[Dynamic])?;
                        self.k.state(k)
                    }
                    Binding::Scalar(k) => self.k.param(k),
                    Binding::Builtin(b) => {
                        match b {
                            Builtin::Time => self.check_ctx(e.pos, "`t`", &[Dynamic])?,
                            Builtin::Global | Builtin::Thread | Builtin::Block => {
                                self.check_ctx(e.pos, &format!("`{n}`"), &[Init, Dynamic])?
                            }
                            Builtin::Repetition => {
                                self.check_ctx(e.pos, &format!("`{n}`"), &[Span, Dynamic])?
                            }
                            _ => {}
                        }
                        self.k.builtin(b)
                    }
                    _ => unreachable!("infer rejected it"),
                };
                self.coerce(node, t, e.pos, n)?
            }
            ExprKind::Index(n, idx) => match self.lookup(n, e.pos)? {
                Binding::Buffer(k) => {
                    self.check_ctx(e.pos, &format!("buffer `{n}`"), &[Init, Dynamic])?;
                    let i = self.lower_index(idx, n)?;
                    let site = self.k.site(e.pos);
                    self.k.load(k, i, site)
                }
                Binding::Shared(k) => {
                    self.check_ctx(e.pos, &format!("shared `{n}`"), &[Dynamic])?;
                    let i = self.lower_index(idx, n)?;
                    let site = self.k.site(e.pos);
                    self.k.shared_load(k, i, site)
                }
                _ => unreachable!("infer rejected it"),
            },
            ExprKind::Call(f, args) => {
                if let Some(to) = ScalarType::from_name(f) {
                    let at = self.infer(&args[0])?;
                    let at = match at {
                        Ty::Strong(s) => s,
                        Ty::WeakFloat => {
                            if to.is_float() {
                                to
                            } else {
                                ScalarType::F32
                            }
                        }
                        Ty::WeakInt => {
                            if to == ScalarType::Bool {
                                ScalarType::I32
                            } else {
                                to
                            }
                        }
                    };
                    let a = self.lower_as(&args[0], at)?;
                    return Ok(self.k.cast(to, a));
                }
                match f.as_str() {
                    "sin" | "cos" | "exp" | "log" | "sqrt" | "tanh" | "floor" | "abs" => {
                        let op = match f.as_str() {
                            "sin" => UnOp::Sin,
                            "cos" => UnOp::Cos,
                            "exp" => UnOp::Exp,
                            "log" => UnOp::Log,
                            "sqrt" => UnOp::Sqrt,
                            "tanh" => UnOp::Tanh,
                            "floor" => UnOp::Floor,
                            _ => UnOp::Abs,
                        };
                        let a = self.lower_as(&args[0], t)?;
                        self.k.unary(op, a)
                    }
                    "min" | "max" | "pow" => {
                        let op = match f.as_str() {
                            "min" => BinOp::Min,
                            "max" => BinOp::Max,
                            _ => BinOp::Pow,
                        };
                        let a = self.lower_as(&args[0], t)?;
                        let b = self.lower_as(&args[1], t)?;
                        self.k.binary(op, a, b)
                    }
                    "fma" => {
                        let a = self.lower_as(&args[0], t)?;
                        let b = self.lower_as(&args[1], t)?;
                        let c = self.lower_as(&args[2], t)?;
                        self.k.fma(a, b, c)
                    }
                    "select" => {
                        let c = self.lower_as(&args[0], ScalarType::Bool)?;
                        let a = self.lower_as(&args[1], t)?;
                        let b = self.lower_as(&args[2], t)?;
                        self.k.select(c, a, b)
                    }
                    "init" => {
                        self.check_ctx(e.pos, "`init(…)`", &[Dynamic])?;
                        let ExprKind::Name(n) = &args[0].kind else {
                            unreachable!("infer checked")
                        };
                        let Some(Binding::State(k)) = self.globals.get(n).copied() else {
                            unreachable!("infer checked")
                        };
                        let node = self.k.init(k);
                        self.coerce(node, t, e.pos, n)?
                    }
                    _ => unreachable!("infer rejected it"),
                }
            }
            ExprKind::Unary(op, a) => {
                let a = self.lower_as(a, t)?;
                let op = if *op == UnaryOp::Neg {
                    UnOp::Neg
                } else {
                    UnOp::Not
                };
                self.k.unary(op, a)
            }
            ExprKind::Binary(op, a, b) => {
                let bop = *op;
                match bop {
                    BinOp::Shl | BinOp::Shr => {
                        let x = self.lower_as(a, t)?;
                        let amount_ty = match self.infer(b)? {
                            Ty::Strong(s) => s,
                            _ => ScalarType::U32,
                        };
                        let y = self.lower_as(b, amount_ty)?;
                        let y = self.k.cast(ScalarType::U32, y);
                        self.k.binary(bop, x, y)
                    }
                    _ if bop.is_comparison() => {
                        let ot = self.unify(e.pos, op.symbol(), self.infer(a)?, self.infer(b)?)?;
                        let ot = self.default_type(ot);
                        let x = self.lower_as(a, ot)?;
                        let y = self.lower_as(b, ot)?;
                        self.k.binary(bop, x, y)
                    }
                    BinOp::And | BinOp::Or => {
                        let x = self.lower_as(a, ScalarType::Bool)?;
                        let y = self.lower_as(b, ScalarType::Bool)?;
                        self.k.binary(bop, x, y)
                    }
                    _ => {
                        let x = self.lower_as(a, t)?;
                        let y = self.lower_as(b, t)?;
                        self.k.binary(bop, x, y)
                    }
                }
            }
        })
    }

    fn coerce(&self, node: NodeId, t: ScalarType, pos: Pos, name: &str) -> Result<NodeId, IrError> {
        let have = self.k.ty(node);
        if have != t {
            return Err(self.err(
                pos,
                format!("`{name}` is {have}, expected {t} (convert with `{t}({name})`)"),
            ));
        }
        Ok(node)
    }
}
