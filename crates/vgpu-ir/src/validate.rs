//! [`Kernel::validate`]: the well-formedness the evaluators rely on, checked
//! on the IR itself (operands before their users, every operation applied to
//! types it is defined on, lengths and counts uniform, initial values free of
//! states). The type checker only builds kernels that pass; a kernel built or
//! edited by hand is checked here before it runs, so that no kernel can make
//! the evaluator panic.

use crate::error::IrError;
use crate::kernel::{Builtin, Kernel, Node, NodeId, Update, Variance};
use crate::ops;
use crate::types::ScalarType;

impl Kernel {
    /// Checks that the kernel is well formed: see the module docs.
    ///
    /// # Errors
    /// [`IrError::Malformed`] naming the first node or declaration at fault.
    pub fn validate(&self) -> Result<(), IrError> {
        let bad = |message: String| IrError::Malformed {
            kernel: self.name.clone(),
            message,
        };
        if self.types.len() != self.nodes.len() {
            return Err(bad(format!(
                "{} nodes but {} node types",
                self.nodes.len(),
                self.types.len()
            )));
        }
        for (i, node) in self.nodes.iter().enumerate() {
            if let Some(o) = node.operands().iter().find(|o| o.index() >= i) {
                return Err(bad(format!(
                    "node {i} reads node {}, which does not come before it",
                    o.index()
                )));
            }
            if let Some(why) = self.node_fault(node, self.types[i]) {
                return Err(bad(format!("node {i} ({node:?}): {why}")));
            }
        }
        let var = self.variance();
        let node = |id: NodeId, what: &str, want: Option<ScalarType>| -> Result<(), IrError> {
            let Some(&t) = self.types.get(id.index()) else {
                return Err(bad(format!(
                    "{what} is node {}, which does not exist",
                    id.0
                )));
            };
            match want {
                Some(w) if t != w => Err(bad(format!("{what} is {t}, expected {w}"))),
                None if !t.is_int() => Err(bad(format!("{what} is {t}, expected an integer"))),
                _ => Ok(()),
            }
        };
        let uniform = |id: NodeId, what: &str| -> Result<(), IrError> {
            if var[id.index()] != Variance::Uniform {
                return Err(bad(format!("{what} is not uniform")));
            }
            Ok(())
        };
        let fty = self.float_type();
        for s in &self.states {
            if s.ty != fty || !s.ty.is_float() {
                return Err(bad(format!("state `{}` is {}", s.name, s.ty)));
            }
            node(
                s.init,
                &format!("the initial value of `{}`", s.name),
                Some(fty),
            )?;
            let reads_state = self.reachable(&[s.init]).iter().any(|n| {
                matches!(
                    self.nodes[n.index()],
                    Node::State(_) | Node::Init(_) | Node::SharedLoad { .. }
                )
            });
            if reads_state {
                return Err(bad(format!(
                    "the initial value of `{}` reads a state or a shared sub-field",
                    s.name
                )));
            }
        }
        for s in &self.shared {
            let what = format!("the length of shared `{}`", s.name);
            node(s.len, &what, Some(ScalarType::U32))?;
            uniform(s.len, &what)?;
            let what = format!("the initial value of shared `{}`", s.name);
            node(s.init, &what, Some(s.ty))?;
            uniform(s.init, &what)?;
        }
        for f in &self.fluxes {
            let what = format!("the length of flux `{}`", f.name);
            node(f.len, &what, Some(ScalarType::U32))?;
            uniform(f.len, &what)?;
        }
        if self.phases.is_empty() {
            return Err(bad("the kernel has no phase".into()));
        }
        for p in &self.phases {
            let at = |what: &str| format!("{what} of phase `{}`", p.name);
            if let Some(r) = p.repeat {
                node(r, &at("the repetition count"), Some(ScalarType::U32))?;
                uniform(r, &at("the repetition count"))?;
            }
            if let Some(s) = p.span {
                node(s, &at("the span"), Some(fty))?;
                uniform(s, &at("the span"))?;
            }
            if p.updates.len() != self.states.len() {
                return Err(bad(at("the number of updates")));
            }
            for (u, s) in p.updates.iter().zip(&self.states) {
                if let Update::Rate(n) | Update::Jump(n) = u {
                    node(*n, &at(&format!("the update of `{}`", s.name)), Some(s.ty))?;
                }
            }
            for d in &p.drives {
                let Some(s) = self.shared.get(d.shared as usize) else {
                    return Err(bad(at("a drive's shared sub-field")));
                };
                node(d.index, &at("a drive's index"), None)?;
                node(d.value, &at("a drive's value"), Some(s.ty))?;
                if let Some(g) = d.guard {
                    node(g, &at("a drive's guard"), Some(ScalarType::Bool))?;
                }
                if d.site as usize >= self.sites.len() {
                    return Err(bad(at("a drive's site")));
                }
            }
            for e in &p.emits {
                let Some(f) = self.fluxes.get(e.flux as usize) else {
                    return Err(bad(at("an emission's flux output")));
                };
                node(e.index, &at("an emission's index"), None)?;
                node(e.value, &at("an emission's value"), Some(f.ty))?;
                if let Some(g) = e.guard {
                    node(g, &at("an emission's guard"), Some(ScalarType::Bool))?;
                }
                if e.site as usize >= self.sites.len() {
                    return Err(bad(at("an emission's site")));
                }
            }
        }
        if let (Some(e), true) = (self.events.first(), self.is_phased()) {
            return Err(bad(format!(
                "event `{}` in a field with phases (events run with the adaptive methods, unphased fields only)",
                e.name
            )));
        }
        for e in &self.events {
            let at = |what: &str| format!("{what} of event `{}`", e.name);
            node(e.condition, &at("the condition"), Some(fty))?;
            if e.terminate && !e.jumps.is_empty() {
                return Err(bad(at("the jumps (it terminates)")));
            }
            for (j, &(k, v)) in e.jumps.iter().enumerate() {
                let Some(s) = self.states.get(k as usize) else {
                    return Err(bad(at(&format!(
                        "jump {j}: state {k}, which does not exist,"
                    ))));
                };
                if e.jumps[..j].iter().any(|(q, _)| *q == k) {
                    return Err(bad(at(&format!("a second jump of `{}`", s.name))));
                }
                node(v, &at(&format!("the jump of `{}`", s.name)), Some(s.ty))?;
            }
        }
        Ok(())
    }

    /// Why `node` (of type `ty`) is ill-typed, if it is.
    fn node_fault(&self, node: &Node, ty: ScalarType) -> Option<String> {
        let t = |n: NodeId| self.types[n.index()];
        let want = |w: ScalarType| (ty != w).then(|| format!("typed {ty}, expected {w}"));
        match *node {
            Node::Const(v) => want(v.ty()),
            Node::State(k) | Node::Init(k) => match self.states.get(k as usize) {
                Some(s) => want(s.ty),
                None => Some("no such state".into()),
            },
            Node::Param(p) => match self.params.get(p as usize) {
                Some(q) if !q.buffer => want(q.ty),
                _ => Some("not a scalar parameter".into()),
            },
            Node::Load { buf, index, site } => match self.params.get(buf as usize) {
                Some(q) if q.buffer && t(index).is_int() && (site as usize) < self.sites.len() => {
                    want(q.ty)
                }
                _ => Some("not a buffer read at an integer index".into()),
            },
            Node::SharedLoad {
                shared,
                index,
                site,
            } => match self.shared.get(shared as usize) {
                Some(s) if t(index).is_int() && (site as usize) < self.sites.len() => want(s.ty),
                _ => Some("not a shared read at an integer index".into()),
            },
            Node::Builtin(b) => want(if b == Builtin::Time {
                self.float_type()
            } else {
                ScalarType::U32
            }),
            Node::Unary(op, a) => {
                if !ops::unary_applies(op, t(a)) {
                    return Some(format!("{op:?} does not apply to {}", t(a)));
                }
                want(t(a))
            }
            Node::Binary(op, a, b) => {
                if !ops::binary_applies(op, t(a), t(b)) {
                    return Some(format!("{op:?} does not apply to {} and {}", t(a), t(b)));
                }
                want(if op.is_comparison() {
                    ScalarType::Bool
                } else {
                    t(a)
                })
            }
            Node::Select(c, a, b) => {
                if t(c) != ScalarType::Bool || t(a) != t(b) {
                    return Some("select needs a bool and two values of one type".into());
                }
                want(t(a))
            }
            Node::Fma(a, b, c) => {
                if t(a) != t(b) || t(a) != t(c) || t(a) == ScalarType::Bool {
                    return Some("fma needs three numbers of one type".into());
                }
                want(t(a))
            }
            Node::Cast(to, _) => want(to),
        }
    }
}
