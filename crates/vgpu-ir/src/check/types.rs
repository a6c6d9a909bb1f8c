//! The types of expressions: literals are weakly typed (they take the type their
//! use needs), everything else has one scalar type; operators unify operands.

use super::{Binding, Lower};
use crate::ast::{Expr, ExprKind, UnaryOp};
use crate::error::{IrError, Pos};
use crate::kernel::{BinOp, Builtin, NodeId};
use crate::types::ScalarType;

#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Ty {
    Strong(ScalarType),
    WeakFloat,
    WeakInt,
}

impl Ty {
    pub(super) fn describe(self) -> String {
        match self {
            Ty::Strong(t) => t.to_string(),
            Ty::WeakFloat => "a float literal".into(),
            Ty::WeakInt => "an integer literal".into(),
        }
    }
}

impl Lower<'_> {
    pub(super) fn lower_index(&mut self, e: &Expr, of: &str) -> Result<NodeId, IrError> {
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

    pub(super) fn default_type(&self, t: Ty) -> ScalarType {
        match t {
            Ty::Strong(t) => t,
            Ty::WeakFloat => self.k.float_type(),
            Ty::WeakInt => ScalarType::I32,
        }
    }

    /// Lowers `e` as a value of type `want`, or explains why it is not one.
    pub(super) fn lower_to(
        &mut self,
        e: &Expr,
        want: ScalarType,
        what: &str,
    ) -> Result<NodeId, IrError> {
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

    pub(super) fn unify(&self, pos: Pos, op: &str, a: Ty, b: Ty) -> Result<Ty, IrError> {
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

    pub(super) fn infer(&self, e: &Expr) -> Result<Ty, IrError> {
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

    pub(super) fn arity(&self, e: &Expr, f: &str, args: &[Expr], n: usize) -> Result<(), IrError> {
        if args.len() != n {
            return Err(self.err(
                e.pos,
                format!("`{f}` takes {n} argument(s), found {}", args.len()),
            ));
        }
        Ok(())
    }
}
