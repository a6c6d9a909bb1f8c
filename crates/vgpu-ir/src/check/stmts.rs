//! Statements (lets, rates, jumps, drives, emits) and lengths, lowered into a phase.

use super::{Binding, Ctx, Lower};
use crate::ast::{Expr, Stmt};
use crate::error::{IrError, Pos};
use crate::kernel::{Drive, Emit, NodeId, Phase, Update};
use crate::types::ScalarType;

impl Lower<'_> {
    pub(super) fn lower_len(&mut self, e: &Expr, what: &str) -> Result<NodeId, IrError> {
        let saved = self.ctx;
        self.ctx = Ctx::Uniform;
        let r = self.lower_to(e, ScalarType::U32, what);
        self.ctx = saved;
        r
    }

    pub(super) fn lower_let(
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

    pub(super) fn stmt(&mut self, s: &Stmt, phase: &mut Phase) -> Result<(), IrError> {
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
}
