//! Lowering typed expressions to IR nodes (the types were checked by `types.rs`).

use super::types::Ty;
use super::{Binding, Ctx, Lower};
use crate::ast::{Expr, ExprKind, UnaryOp};
use crate::error::{IrError, Pos};
use crate::kernel::{BinOp, Builtin, NodeId, UnOp};
use crate::ops;
use crate::types::{ScalarType, Value};

impl Lower<'_> {
    /// Lowers `e` as type `t` (the caller checked with `infer` that it fits).
    pub(super) fn lower_as(&mut self, e: &Expr, t: ScalarType) -> Result<NodeId, IrError> {
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
                        self.unary_at(op, a, e.pos)?
                    }
                    "min" | "max" | "pow" => {
                        let op = match f.as_str() {
                            "min" => BinOp::Min,
                            "max" => BinOp::Max,
                            _ => BinOp::Pow,
                        };
                        let a = self.lower_as(&args[0], t)?;
                        let b = self.lower_as(&args[1], t)?;
                        self.binary_at(op, a, b, e.pos)?
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
                self.unary_at(op, a, e.pos)?
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
                        self.binary_at(bop, x, y, e.pos)?
                    }
                    _ if bop.is_comparison() => {
                        let ot = self.unify(e.pos, op.symbol(), self.infer(a)?, self.infer(b)?)?;
                        let ot = self.default_type(ot);
                        let x = self.lower_as(a, ot)?;
                        let y = self.lower_as(b, ot)?;
                        self.binary_at(bop, x, y, e.pos)?
                    }
                    BinOp::And | BinOp::Or => {
                        let x = self.lower_as(a, ScalarType::Bool)?;
                        let y = self.lower_as(b, ScalarType::Bool)?;
                        self.binary_at(bop, x, y, e.pos)?
                    }
                    _ => {
                        let x = self.lower_as(a, t)?;
                        let y = self.lower_as(b, t)?;
                        self.binary_at(bop, x, y, e.pos)?
                    }
                }
            }
        })
    }

    /// `op(a)`, or a type error at `pos` when `op` does not apply to `a`'s type:
    /// a literal takes the type of its use, and some uses give it a type the
    /// operator does not take (`-1` as a `u32` index, `!0` as a float).
    fn unary_at(&mut self, op: UnOp, a: NodeId, pos: Pos) -> Result<NodeId, IrError> {
        let t = self.k.ty(a);
        if !ops::unary_applies(op, t) {
            let (what, hint) = match op {
                UnOp::Neg => (
                    "`-`",
                    if t == ScalarType::U32 {
                        " (indices, lengths and counts are u32: write a negative index as i32, e.g. `-1i`)"
                    } else {
                        ""
                    },
                ),
                UnOp::Not => ("`!`", ""),
                _ => ("this function", ""),
            };
            return Err(self.err(
                pos,
                format!("{what} does not apply to {t}, the type this expression takes here{hint}"),
            ));
        }
        Ok(self.k.unary(op, a))
    }

    /// `op(x, y)`, or a type error at `pos` when `op` does not apply to their types.
    fn binary_at(&mut self, op: BinOp, x: NodeId, y: NodeId, pos: Pos) -> Result<NodeId, IrError> {
        let (tx, ty) = (self.k.ty(x), self.k.ty(y));
        if !ops::binary_applies(op, tx, ty) {
            let hint = if tx.is_float() && !matches!(op, BinOp::Pow) {
                " (integer operators make integers: write integer literals and convert, e.g. `f32(6i & 3i)`)"
            } else if op == BinOp::Shl || op == BinOp::Shr {
                " (shifts take integers)"
            } else {
                ""
            };
            let types = if tx == ty {
                tx.to_string()
            } else {
                format!("{tx} and {ty}")
            };
            return Err(self.err(
                pos,
                format!(
                    "`{}` does not apply to {types}, the type this expression takes here{hint}",
                    op.symbol()
                ),
            ));
        }
        Ok(self.k.binary(op, x, y))
    }

    pub(super) fn coerce(
        &self,
        node: NodeId,
        t: ScalarType,
        pos: Pos,
        name: &str,
    ) -> Result<NodeId, IrError> {
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
