//! Events: `event name: g (direction) { x := …; }` / `… terminate;`.

use super::types::Ty;
use super::{Binding, Lower};
use crate::ast::{EventAction, EventDecl};
use crate::error::IrError;
use crate::kernel::Event;
use crate::types::ScalarType;

impl Lower<'_> {
    /// Lowers one event: its condition (a scalar of the field's float type),
    /// its jumps (to distinct states) or `terminate`.
    pub(super) fn lower_event(&mut self, e: &EventDecl) -> Result<Event, IrError> {
        if let Some(prev) = self.k.events.iter().find(|p| p.name == e.name) {
            return Err(self.err(
                e.pos,
                format!(
                    "event `{}` is already declared at {}:{}",
                    e.name, prev.pos.line, prev.pos.col
                ),
            ));
        }
        let fty = self.k.float_type();
        if let Ty::Strong(ScalarType::Bool) = self.infer(&e.condition)? {
            return Err(self.err(
                e.condition.pos,
                format!(
                    "the condition of event `{}` must be a {fty} scalar whose zero crossing \
                     triggers the event, found bool (write `y - 2.0 rising`, not `y > 2.0`)",
                    e.name
                ),
            ));
        }
        let condition = self.lower_to(
            &e.condition,
            fty,
            &format!("the condition of event `{}`", e.name),
        )?;
        let mut jumps: Vec<(u32, crate::kernel::NodeId)> = Vec::new();
        let mut terminate = None;
        for a in &e.actions {
            match a {
                EventAction::Terminate(pos) => {
                    if terminate.is_some() {
                        return Err(
                            self.err(*pos, format!("event `{}` already terminates", e.name))
                        );
                    }
                    terminate = Some(*pos);
                }
                EventAction::Jump { state, value, pos } => {
                    let k = match self.globals.get(state) {
                        Some(Binding::State(k)) => *k,
                        Some(Binding::Scalar(_) | Binding::Buffer(_)) => {
                            return Err(self.err(
                                *pos,
                                format!(
                                    "event `{}` jumps `{state}`, a parameter: only states can jump",
                                    e.name
                                ),
                            ))
                        }
                        Some(_) => {
                            return Err(self.err(
                                *pos,
                                format!(
                                    "event `{}` jumps `{state}`, which is not a state: only states can jump",
                                    e.name
                                ),
                            ))
                        }
                        None => {
                            return Err(self.err(
                                *pos,
                                format!("event `{}` jumps an unknown state `{state}`", e.name),
                            ))
                        }
                    };
                    if jumps.iter().any(|(j, _)| *j == k) {
                        return Err(self.err(
                            *pos,
                            format!("event `{}` jumps state `{state}` twice", e.name),
                        ));
                    }
                    let ty = self.k.states[k as usize].ty;
                    let node = self.lower_to(
                        value,
                        ty,
                        &format!("the jump of state `{state}` in event `{}`", e.name),
                    )?;
                    jumps.push((k, node));
                }
            }
        }
        match (terminate, jumps.is_empty()) {
            (Some(pos), false) => Err(self.err(
                pos,
                format!(
                    "event `{}` both jumps and terminates: a terminating event ends the \
                     trajectory at the crossing, so its jumps would never apply",
                    e.name
                ),
            )),
            (None, true) => Err(self.err(
                e.pos,
                format!(
                    "event `{}` does nothing: give it jumps (`x := …;`) or `terminate;`",
                    e.name
                ),
            )),
            _ => Ok(Event {
                name: e.name.clone(),
                condition,
                direction: e.direction,
                jumps,
                terminate: terminate.is_some(),
                pos: e.pos,
            }),
        }
    }
}
