//! Names: declaring them, looking them up, and where each kind may be read.

use super::{Binding, Ctx, Lower};
use crate::error::{IrError, Pos};
use crate::kernel::{Builtin, NodeId, Phase, Update};

impl Lower<'_> {
    pub(super) fn err(&self, pos: Pos, msg: impl Into<String>) -> IrError {
        IrError::ty(self.file, pos, msg)
    }

    pub(super) fn declare(&self, name: &str, pos: Pos, what: &str) -> Result<(), IrError> {
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

    pub(super) fn empty_phase(
        &self,
        name: &str,
        repeat: Option<NodeId>,
        span: Option<NodeId>,
        pos: Pos,
    ) -> Phase {
        Phase {
            name: name.to_string(),
            repeat,
            span,
            updates: vec![Update::Hold; self.k.states.len()],
            drives: vec![],
            emits: vec![],
            pos,
        }
    }

    pub(super) fn state_index(&self, name: &str, pos: Pos) -> Result<u32, IrError> {
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

    pub(super) fn lookup(&self, name: &str, pos: Pos) -> Result<Binding, IrError> {
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

    pub(super) fn check_ctx(&self, pos: Pos, what: &str, allowed: &[Ctx]) -> Result<(), IrError> {
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
}
