//! The IR's operations ([`UnOp`], [`BinOp`]) and the scalar semantics of every
//! one: used for constant folding and uniform values, and the definition the
//! batched evaluator and the WGSL emitter follow.
//! Integer arithmetic wraps; integer `x / 0 = x` and `x % 0 = 0` (as in WGSL);
//! shifts take their amount modulo 32.

use crate::types::{ScalarType, Value};

/// One-operand operations.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UnOp {
    /// Negation.
    Neg,
    /// Logical (bool) or bitwise (integer) not.
    Not,
    /// sin
    Sin,
    /// cos
    Cos,
    /// exp
    Exp,
    /// natural log
    Log,
    /// square root
    Sqrt,
    /// tanh
    Tanh,
    /// absolute value
    Abs,
    /// floor
    Floor,
}

/// Two-operand operations.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BinOp {
    /// `+` (wrapping for integers)
    Add,
    /// `-` (wrapping for integers)
    Sub,
    /// `*` (wrapping for integers)
    Mul,
    /// `/` (integer division by zero gives 0 as in WGSL... see docs: it is an error on the CPU)
    Div,
    /// `%`
    Rem,
    /// `min`
    Min,
    /// `max`
    Max,
    /// `pow`
    Pow,
    /// `==`
    Eq,
    /// `!=`
    Ne,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
    /// `&&`
    And,
    /// `||`
    Or,
    /// `&`
    BitAnd,
    /// `|`
    BitOr,
    /// `^`
    BitXor,
    /// `<<` (shift amount taken modulo 32, as in WGSL)
    Shl,
    /// `>>` (arithmetic for i32)
    Shr,
}

impl BinOp {
    /// The operator's text in the `.field` language (`min`, `max`, `pow` are calls).
    pub fn symbol(self) -> &'static str {
        match self {
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::Rem => "%",
            BinOp::Min => "min",
            BinOp::Max => "max",
            BinOp::Pow => "pow",
            BinOp::Eq => "==",
            BinOp::Ne => "!=",
            BinOp::Lt => "<",
            BinOp::Le => "<=",
            BinOp::Gt => ">",
            BinOp::Ge => ">=",
            BinOp::And => "&&",
            BinOp::Or => "||",
            BinOp::BitAnd => "&",
            BinOp::BitOr => "|",
            BinOp::BitXor => "^",
            BinOp::Shl => "<<",
            BinOp::Shr => ">>",
        }
    }
    /// True when the result is `bool` whatever the operand type.
    pub fn is_comparison(self) -> bool {
        matches!(
            self,
            BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge
        )
    }
}

/// `op(a)`, or `None` when the operation does not apply to the type.
pub fn unary(op: UnOp, a: Value) -> Option<Value> {
    use Value::*;
    Some(match (op, a) {
        (UnOp::Neg, F32(x)) => F32(-x),
        (UnOp::Neg, F64(x)) => F64(-x),
        (UnOp::Neg, I32(x)) => I32(x.wrapping_neg()),
        (UnOp::Not, Bool(x)) => Bool(!x),
        (UnOp::Not, I32(x)) => I32(!x),
        (UnOp::Not, U32(x)) => U32(!x),
        (UnOp::Abs, I32(x)) => I32(x.wrapping_abs()),
        (UnOp::Abs, U32(x)) => U32(x),
        (op, F32(x)) => F32(unary_f32(op, x)),
        (op, F64(x)) => F64(unary_f64(op, x)),
        _ => return None,
    })
}

/// `unary_f32` and `unary_f64`: one body for both float types.
macro_rules! float_unary {
    ($($name:ident: $t:ident),*) => {$(
        #[doc = concat!("A float unary operation on `", stringify!($t), "`.")]
        #[inline]
        pub fn $name(op: UnOp, x: $t) -> $t {
            match op {
                UnOp::Neg => -x,
                UnOp::Sin => x.sin(),
                UnOp::Cos => x.cos(),
                UnOp::Exp => x.exp(),
                UnOp::Log => x.ln(),
                UnOp::Sqrt => x.sqrt(),
                UnOp::Tanh => x.tanh(),
                UnOp::Abs => x.abs(),
                UnOp::Floor => x.floor(),
                UnOp::Not => $t::NAN,
            }
        }
    )*};
}
float_unary!(unary_f32: f32, unary_f64: f64);

macro_rules! float_bin {
    ($op:expr, $a:expr, $b:expr) => {
        match $op {
            BinOp::Add => $a + $b,
            BinOp::Sub => $a - $b,
            BinOp::Mul => $a * $b,
            BinOp::Div => $a / $b,
            BinOp::Rem => $a % $b,
            BinOp::Min => $a.min($b),
            BinOp::Max => $a.max($b),
            BinOp::Pow => $a.powf($b),
            _ => return None,
        }
    };
}

macro_rules! int_bin {
    ($op:expr, $a:expr, $b:expr) => {
        match $op {
            BinOp::Add => $a.wrapping_add($b),
            BinOp::Sub => $a.wrapping_sub($b),
            BinOp::Mul => $a.wrapping_mul($b),
            BinOp::Div => {
                if $b == 0 {
                    $a
                } else {
                    $a.wrapping_div($b)
                }
            }
            BinOp::Rem => {
                if $b == 0 {
                    0
                } else {
                    $a.wrapping_rem($b)
                }
            }
            BinOp::Min => $a.min($b),
            BinOp::Max => $a.max($b),
            BinOp::BitAnd => $a & $b,
            BinOp::BitOr => $a | $b,
            BinOp::BitXor => $a ^ $b,
            BinOp::Shl => $a.wrapping_shl($b as u32),
            BinOp::Shr => $a.wrapping_shr($b as u32),
            _ => return None,
        }
    };
}

macro_rules! compare {
    ($op:expr, $a:expr, $b:expr) => {
        match $op {
            BinOp::Eq => $a == $b,
            BinOp::Ne => $a != $b,
            BinOp::Lt => $a < $b,
            BinOp::Le => $a <= $b,
            BinOp::Gt => $a > $b,
            BinOp::Ge => $a >= $b,
            _ => unreachable!(),
        }
    };
}

/// `op(a, b)` (shift amounts may be any integer), or `None` when it does not apply.
pub fn binary(op: BinOp, a: Value, b: Value) -> Option<Value> {
    use Value::*;
    if op.is_comparison() {
        return Some(Bool(match (a, b) {
            (F32(x), F32(y)) => compare!(op, x, y),
            (F64(x), F64(y)) => compare!(op, x, y),
            (I32(x), I32(y)) => compare!(op, x, y),
            (U32(x), U32(y)) => compare!(op, x, y),
            (Bool(x), Bool(y)) => compare!(op, x, y),
            _ => return None,
        }));
    }
    if matches!(op, BinOp::Shl | BinOp::Shr) {
        let amount = match b {
            I32(v) => v as u32,
            U32(v) => v,
            _ => return None,
        };
        return Some(match a {
            I32(x) => I32(if op == BinOp::Shl {
                x.wrapping_shl(amount)
            } else {
                x.wrapping_shr(amount)
            }),
            U32(x) => U32(if op == BinOp::Shl {
                x.wrapping_shl(amount)
            } else {
                x.wrapping_shr(amount)
            }),
            _ => return None,
        });
    }
    Some(match (a, b) {
        (F32(x), F32(y)) => F32(float_bin!(op, x, y)),
        (F64(x), F64(y)) => F64(float_bin!(op, x, y)),
        (I32(x), I32(y)) => I32(int_bin!(op, x, y)),
        (U32(x), U32(y)) => U32(int_bin!(op, x, y)),
        (Bool(x), Bool(y)) => Bool(match op {
            BinOp::And => x && y,
            BinOp::Or => x || y,
            _ => return None,
        }),
        _ => return None,
    })
}

/// `fma(a, b, c)`: one rounding for floats, wrapping multiply-add for integers.
pub fn fma(a: Value, b: Value, c: Value) -> Value {
    use Value::*;
    match (a, b, c) {
        (F32(x), F32(y), F32(z)) => F32(x.mul_add(y, z)),
        (F64(x), F64(y), F64(z)) => F64(x.mul_add(y, z)),
        (I32(x), I32(y), I32(z)) => I32(x.wrapping_mul(y).wrapping_add(z)),
        (U32(x), U32(y), U32(z)) => U32(x.wrapping_mul(y).wrapping_add(z)),
        _ => a,
    }
}

/// Whether `op` applies to an operand of type `t` (the type checker's rule, which
/// [`unary`] and the evaluator rely on): `-` on signed numbers, `!` on `bool` and
/// integers, `abs` on numbers, the other math functions on floats.
pub fn unary_applies(op: UnOp, t: ScalarType) -> bool {
    use ScalarType::*;
    match op {
        UnOp::Neg => matches!(t, F32 | F64 | I32),
        UnOp::Not => matches!(t, Bool | I32 | U32),
        UnOp::Abs => t != Bool,
        _ => t.is_float(),
    }
}

/// Whether `op` applies to operands of types `a` and `b` (the type checker's
/// rule, which [`binary`] and the evaluator rely on): one type for both operands
/// except a shift's amount (any integer); `&&`/`||` on `bool`; bitwise operators
/// and shifts on integers; `pow` on floats; ordering comparisons on numbers;
/// arithmetic, `min` and `max` on numbers.
pub fn binary_applies(op: BinOp, a: ScalarType, b: ScalarType) -> bool {
    use BinOp::*;
    match op {
        Shl | Shr => a.is_int() && b.is_int(),
        _ if a != b => false,
        Eq | Ne => true,
        And | Or => a == ScalarType::Bool,
        BitAnd | BitOr | BitXor => a.is_int(),
        Pow => a.is_float(),
        Lt | Le | Gt | Ge | Add | Sub | Mul | Div | Rem | Min | Max => a != ScalarType::Bool,
    }
}
