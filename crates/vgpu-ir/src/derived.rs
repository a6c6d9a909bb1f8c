//! Kernels derived from a field for the adaptive driver, so that everything
//! the driver evaluates besides the rates — event conditions, event jumps,
//! the Jacobian — runs through the one evaluator ([`crate::IrField`]) with
//! the field's launch values, buffers, slices and fault reports.
//!
//! A derived kernel is the field with its rates replaced by other roots of
//! the same arena ([`outputs_kernel`]): `M` outputs over the field's `D`
//! states, padded with `M − D` unused states when `M > D` (their inputs are
//! zero, nothing reads them).

use crate::error::IrError;
use crate::jacobian::jacobian_nodes;
use crate::kernel::{Kernel, NodeId, StateVar, Update};
use crate::types::Value;
use vgpu_field::adaptive::EventSpec;

/// `k` with the outputs `roots` (nodes of `k`'s float type) as its rates:
/// `max(D, roots.len())` states, output `j` the value of `roots[j]`, zero past
/// `roots.len()`. Events are dropped.
pub(crate) fn outputs_kernel(k: &Kernel, roots: &[NodeId]) -> Kernel {
    let mut d = k.clone();
    d.events.clear();
    let dim = k.states.len();
    let m = roots.len().max(dim);
    let fty = k.float_type();
    let zero = d.constant_node(Value::F64(0.0).cast(fty));
    for j in dim..m {
        d.states.push(StateVar {
            name: format!("__output{j}"),
            ty: fty,
            init: zero,
        });
    }
    d.phases[0].updates = (0..m)
        .map(|j| roots.get(j).map_or(Update::Hold, |&r| Update::Rate(r)))
        .collect();
    d
}

/// The derived kernel whose outputs are `J` (row-major) then `f_t`, the
/// nodes [`jacobian_nodes`] forms in a copy of `k`'s arena.
fn jacobian_kernel(k: &Kernel) -> Result<Kernel, IrError> {
    let mut base = k.clone();
    let (mut jac, ft) = jacobian_nodes(&mut base)?;
    jac.extend(ft);
    Ok(outputs_kernel(&base, &jac))
}

/// The kernels an adaptive run of a field needs beside the field itself.
#[derive(Debug, Clone)]
pub struct Derived {
    /// Every event's condition, one output per event (`None` without events).
    pub(crate) conditions: Option<Kernel>,
    /// Per event, the state after its jumps (`D` outputs; a state it does not
    /// jump keeps its value).
    pub(crate) jumps: Vec<Kernel>,
    /// The events' directions and termination.
    pub(crate) specs: Vec<EventSpec>,
    /// The Jacobian `∂f_i/∂y_j` (row-major, `D·D` outputs) followed by
    /// `∂f_i/∂t` (`D` outputs), when asked for.
    pub(crate) jacobian: Option<Kernel>,
}

impl Derived {
    /// The event kernels of `k`, and its Jacobian when `jacobian` is true.
    ///
    /// # Errors
    /// [`IrError::Launch`] when the Jacobian cannot be formed (an operation
    /// without a derivative, named).
    pub fn new(k: &Kernel, jacobian: bool) -> Result<Derived, IrError> {
        let (conditions, jumps, specs) = if k.events.is_empty() {
            (None, vec![], vec![])
        } else {
            // The identity of every state, for the states an event does not jump.
            let mut base = k.clone();
            let same: Vec<NodeId> = (0..k.states.len() as u32).map(|s| base.state(s)).collect();
            let conds: Vec<NodeId> = k.events.iter().map(|e| e.condition).collect();
            let c = outputs_kernel(&base, &conds);
            let jumps = k
                .events
                .iter()
                .map(|e| {
                    let mut roots = same.clone();
                    for &(s, v) in &e.jumps {
                        roots[s as usize] = v;
                    }
                    outputs_kernel(&base, &roots)
                })
                .collect();
            let specs = k
                .events
                .iter()
                .map(|e| EventSpec {
                    direction: e.direction,
                    terminate: e.terminate,
                })
                .collect();
            (Some(c), jumps, specs)
        };
        let jacobian = if jacobian {
            Some(jacobian_kernel(k)?)
        } else {
            None
        };
        Ok(Derived {
            conditions,
            jumps,
            specs,
            jacobian,
        })
    }

    /// Whether the field has events.
    pub fn has_events(&self) -> bool {
        !self.specs.is_empty()
    }
}
