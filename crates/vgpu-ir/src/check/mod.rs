//! Lowering a parsed field to the kernel IR, checking names and types. Every
//! error names the variable and the place (`file:line:col`).
//!
//! * this file: the entry points, the lowering state ([`Lower`]) and a field's items in order;
//! * `scopes.rs`: names, declarations and where each may be read;
//! * `stmts.rs`: statements (lets, rates, jumps, drives, emits) and lengths;
//! * `types.rs`: the types of expressions, literals' weak types and their unification;
//! * `events.rs`: events (conditions, jumps, `terminate`);
//! * `lower.rs`: typed expressions to IR nodes.

mod events;
mod lower;
mod scopes;
mod stmts;
mod types;

use crate::ast::{FieldDecl, Item, Stmt};
use crate::error::{IrError, Pos};
use crate::kernel::*;
use crate::types::{ScalarType, Value};
use std::collections::HashMap;

/// Parses `.field` text and lowers every field in it to a [`Kernel`].
pub fn compile_all(file: &str, src: &str) -> Result<Vec<Kernel>, IrError> {
    let fields = crate::parser::parse(file, src)?;
    fields
        .iter()
        .map(|f| {
            let k = lower_field(file, f)?;
            // The checker's output is well formed by construction; checked all
            // the same, so that a checker bug is an error here, not a panic later.
            k.validate()?;
            Ok(k)
        })
        .collect()
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
                    pos: d.pos,
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
                    pos: d.pos,
                });
                l.globals.insert(d.name.clone(), Binding::Flux(idx));
            }
            _ => {}
        }
    }
    let has_phases = f.items.iter().any(|i| matches!(i, Item::Phase(_)));
    let mut main = l.empty_phase("main", None, None, f.pos);
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
                let mut phase = l.empty_phase(&p.name, repeat, Some(span), p.pos);
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
    let events: Vec<_> = f
        .items
        .iter()
        .filter_map(|i| match i {
            Item::Event(e) => Some(e),
            _ => None,
        })
        .collect();
    if let (Some(e), true) = (events.first(), has_phases) {
        return Err(l.err(
            e.pos,
            format!(
                "event `{}`: events need a field without phases (they run with the adaptive methods)",
                e.name
            ),
        ));
    }
    l.locals = top_lets.into_iter().collect();
    l.ctx = Ctx::Dynamic;
    for e in events {
        let ev = l.lower_event(e)?;
        l.k.events.push(ev);
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
