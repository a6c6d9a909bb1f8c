//! Symbolic differentiation of a field's rates over its IR: `∂f_i/∂y_j` and
//! `∂f_i/∂t` as nodes of the same arena, built by forward-mode rules through
//! the arena's builders (hash-consed, constants folded) with zero and one
//! propagated structurally (a derivative that is zero is no node at all), so
//! the Jacobian of Van der Pol is four small expressions, not a tree of
//! zeros. The stiff methods evaluate it with the field's own evaluator, as
//! the derived kernel `derived::jacobian_kernel` builds from these nodes.
//!
//! Rules: sums, products, quotients, `fma`, `pow` (`a^b` with `b` free of the
//! variable: `b·a^(b−1)·a'`, else `a^b·(b'·log a + b·a'/a)`), `sin`, `cos`,
//! `exp`, `log`, `sqrt`, `tanh`; the piecewise ones by their pieces (`abs`:
//! `select(a < 0, −a', a')`; `min`/`max` and `select`: the derivative of the
//! chosen operand; `floor`: 0 where it is differentiable); float casts carry
//! the derivative; integers, booleans, parameters, buffer reads and `init(x)`
//! are constants. `a % b` with `b` depending on the variable has no
//! derivative formed here: an error naming the state whose rate uses it.

use crate::error::IrError;
use crate::kernel::{BinOp, Builtin, Kernel, Node, NodeId, UnOp, Update};
use crate::types::Value;

/// What a derivative is taken with respect to.
#[derive(Clone, Copy, PartialEq)]
enum Var {
    State(u32),
    Time,
}

/// The derivative builder over one kernel's arena.
struct Diff<'k> {
    k: &'k mut Kernel,
}

impl Diff<'_> {
    fn c(&mut self, like: NodeId, v: f64) -> NodeId {
        let ty = self.k.ty(like);
        self.k.constant_node(Value::F64(v).cast(ty))
    }
    fn is(&self, n: NodeId, v: f64) -> bool {
        self.k
            .constant(n)
            .is_some_and(|c| c.ty().is_float() && c.as_f64() == v)
    }
    fn add(&mut self, a: Option<NodeId>, b: Option<NodeId>) -> Option<NodeId> {
        match (a, b) {
            (None, x) | (x, None) => x,
            (Some(a), Some(b)) => Some(self.k.binary(BinOp::Add, a, b)),
        }
    }
    fn neg(&mut self, a: Option<NodeId>) -> Option<NodeId> {
        a.map(|a| self.k.unary(UnOp::Neg, a))
    }
    fn sub(&mut self, a: Option<NodeId>, b: Option<NodeId>) -> Option<NodeId> {
        match (a, b) {
            (x, None) => x,
            (None, b) => self.neg(b),
            (Some(a), Some(b)) => Some(self.k.binary(BinOp::Sub, a, b)),
        }
    }
    /// `x · d` for a value `x` and a derivative `d`.
    fn mul(&mut self, x: NodeId, d: Option<NodeId>) -> Option<NodeId> {
        let d = d?;
        if self.is(x, 0.0) || self.is(d, 0.0) {
            return None;
        }
        if self.is(x, 1.0) {
            return Some(d);
        }
        if self.is(d, 1.0) {
            return Some(x);
        }
        Some(self.k.binary(BinOp::Mul, x, d))
    }
    /// `d / x`.
    fn div(&mut self, d: Option<NodeId>, x: NodeId) -> Option<NodeId> {
        let d = d?;
        if self.is(x, 1.0) {
            return Some(d);
        }
        Some(self.k.binary(BinOp::Div, d, x))
    }
}

/// `∂(roots)/∂var` for every node reachable from `roots`; `None` is zero.
fn derivative(
    k: &mut Kernel,
    roots: &[NodeId],
    var: Var,
    what: &dyn Fn(NodeId) -> String,
) -> Result<Vec<Option<NodeId>>, IrError> {
    let order = k.reachable(roots);
    let mut d: Vec<Option<NodeId>> = vec![None; k.nodes.len()];
    let mut b = Diff { k };
    for id in order {
        let node = b.k.nodes[id.index()];
        if !b.k.ty(id).is_float() {
            continue;
        }
        let g = |n: NodeId, d: &Vec<Option<NodeId>>| d.get(n.index()).copied().flatten();
        let r = match node {
            Node::Const(_) | Node::Param(_) | Node::Init(_) | Node::Load { .. } => None,
            Node::SharedLoad { .. } => None,
            Node::State(s) => (var == Var::State(s)).then(|| b.c(id, 1.0)),
            Node::Builtin(bi) => (bi == Builtin::Time && var == Var::Time).then(|| b.c(id, 1.0)),
            Node::Cast(ty, a) => {
                if b.k.ty(a).is_float() {
                    g(a, &d).map(|da| b.k.cast(ty, da))
                } else {
                    None
                }
            }
            Node::Unary(op, a) => {
                if let Some(dav) = g(a, &d) {
                    let da = Some(dav);
                    match op {
                        UnOp::Neg => b.neg(da),
                        UnOp::Not | UnOp::Floor => None,
                        UnOp::Sin => {
                            let c = b.k.unary(UnOp::Cos, a);
                            b.mul(c, da)
                        }
                        UnOp::Cos => {
                            let s = b.k.unary(UnOp::Sin, a);
                            let ns = b.k.unary(UnOp::Neg, s);
                            b.mul(ns, da)
                        }
                        UnOp::Exp => b.mul(id, da),
                        UnOp::Log => b.div(da, a),
                        UnOp::Sqrt => {
                            let two = b.c(id, 2.0);
                            let den = b.k.binary(BinOp::Mul, two, id);
                            b.div(da, den)
                        }
                        UnOp::Tanh => {
                            let one = b.c(id, 1.0);
                            let sq = b.k.binary(BinOp::Mul, id, id);
                            let f = b.k.binary(BinOp::Sub, one, sq);
                            b.mul(f, da)
                        }
                        UnOp::Abs => {
                            let zero = b.c(a, 0.0);
                            let neg = b.k.binary(BinOp::Lt, a, zero);
                            let nda = b.k.unary(UnOp::Neg, dav);
                            Some(b.k.select(neg, nda, dav))
                        }
                    }
                } else {
                    None
                }
            }
            Node::Binary(op, x, y) => {
                let (dx, dy) = (g(x, &d), g(y, &d));
                if dx.is_none() && dy.is_none() {
                    None
                } else {
                    match op {
                        BinOp::Add => b.add(dx, dy),
                        BinOp::Sub => b.sub(dx, dy),
                        BinOp::Mul => {
                            let l = b.mul(y, dx);
                            let r = b.mul(x, dy);
                            b.add(l, r)
                        }
                        BinOp::Div => {
                            // (x/y)' = (x' − (x/y)·y') / y
                            let q = b.mul(id, dy);
                            let num = b.sub(dx, q);
                            b.div(num, y)
                        }
                        BinOp::Rem => {
                            if dy.is_some() {
                                return Err(IrError::Launch {
                                    kernel: b.k.name.clone(),
                                    message: format!(
                                        "the Jacobian cannot be formed: {} uses `a % b` with a \
                                         divisor that depends on the state or time, which has no \
                                         derivative here (stiff methods need one; use an explicit \
                                         method such as tsit5)",
                                        what(id)
                                    ),
                                });
                            }
                            dx
                        }
                        BinOp::Min | BinOp::Max => {
                            let cmp = if op == BinOp::Min {
                                BinOp::Le
                            } else {
                                BinOp::Ge
                            };
                            let c = b.k.binary(cmp, x, y);
                            let zx = dx.unwrap_or_else(|| b.c(x, 0.0));
                            let zy = dy.unwrap_or_else(|| b.c(y, 0.0));
                            Some(b.k.select(c, zx, zy))
                        }
                        BinOp::Pow => {
                            // d(x^y) = y·x^(y−1)·x' + x^y·log(x)·y'
                            let l = if dx.is_some() {
                                let one = b.c(y, 1.0);
                                let ym1 = b.k.binary(BinOp::Sub, y, one);
                                let p = b.k.binary(BinOp::Pow, x, ym1);
                                let f = b.mul(y, Some(p)).expect("non-zero");
                                b.mul(f, dx)
                            } else {
                                None
                            };
                            let r = if dy.is_some() {
                                let lx = b.k.unary(UnOp::Log, x);
                                let f = b.k.binary(BinOp::Mul, id, lx);
                                b.mul(f, dy)
                            } else {
                                None
                            };
                            b.add(l, r)
                        }
                        // Comparisons, logic and bit operations are not float-valued.
                        _ => None,
                    }
                }
            }
            Node::Select(c, x, y) => {
                let (dx, dy) = (g(x, &d), g(y, &d));
                if dx.is_none() && dy.is_none() {
                    None
                } else {
                    let zx = dx.unwrap_or_else(|| b.c(x, 0.0));
                    let zy = dy.unwrap_or_else(|| b.c(y, 0.0));
                    Some(b.k.select(c, zx, zy))
                }
            }
            Node::Fma(x, y, z) => {
                let (dx, dy, dz) = (g(x, &d), g(y, &d), g(z, &d));
                let l = b.mul(y, dx);
                let r = b.mul(x, dy);
                let s = b.add(l, r);
                b.add(s, dz)
            }
        };
        if d.len() < b.k.nodes.len() {
            d.resize(b.k.nodes.len(), None);
        }
        d[id.index()] = r;
    }
    Ok(d)
}

/// The Jacobian of the rates of `k` (an unphased kernel), as nodes added to
/// its arena: `(J, f_t)` with `J[i·D + j] = ∂f_i/∂y_j` and
/// `f_t[i] = ∂f_i/∂t` (a constant zero node where the derivative is zero).
///
/// # Errors
/// [`IrError::Launch`] naming the rate that uses an operation without a
/// derivative here (`%` with a varying divisor).
pub fn jacobian_nodes(k: &mut Kernel) -> Result<(Vec<NodeId>, Vec<NodeId>), IrError> {
    let dim = k.states.len();
    let fty = k.float_type();
    let zero = k.constant_node(Value::F64(0.0).cast(fty));
    let rates: Vec<Option<NodeId>> = k.phases[0]
        .updates
        .iter()
        .map(|u| match u {
            Update::Rate(r) => Some(*r),
            _ => None,
        })
        .collect();
    let roots: Vec<NodeId> = rates.iter().flatten().copied().collect();
    let names: Vec<String> = k.states.iter().map(|s| s.name.clone()).collect();
    let owner = |id: NodeId| -> String {
        match rates.iter().position(|r| *r == Some(id)) {
            Some(i) => format!("the rate of `{}`", names[i]),
            None => format!(
                "the rate of {}",
                names
                    .iter()
                    .map(|n| format!("`{n}`"))
                    .collect::<Vec<_>>()
                    .join(" or ")
            ),
        }
    };
    let mut jac = vec![zero; dim * dim];
    let mut ft = vec![zero; dim];
    for j in 0..dim {
        let d = derivative(k, &roots, Var::State(j as u32), &owner)?;
        for (i, r) in rates.iter().enumerate() {
            if let Some(v) = r.and_then(|r| d[r.index()]) {
                jac[i * dim + j] = v;
            }
        }
    }
    let d = derivative(k, &roots, Var::Time, &owner)?;
    for (i, r) in rates.iter().enumerate() {
        if let Some(v) = r.and_then(|r| d[r.index()]) {
            ft[i] = v;
        }
    }
    Ok((jac, ft))
}
