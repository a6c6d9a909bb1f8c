//! The evaluator's column storage ([`Pools`], one column of lanes per slot),
//! a stage's state columns ([`StateCols`]), and the float types a kernel's
//! state can have over them ([`IrFloat`]), shared by the evaluator, the
//! field engine (`IrField`) and the native code (`jit`).

use crate::kernel::{BinOp, UnOp};
use crate::types::{ScalarType, Value};
use vgpu_field::Real;

/// Column storage for one block: one column of `width` values per slot.
#[derive(Debug, Default)]
pub struct Pools {
    pub f32s: Vec<f32>,
    pub f64s: Vec<f64>,
    pub ints: Vec<u32>,
    pub bools: Vec<bool>,
    pub width: usize,
}

impl Pools {
    pub fn new(slots: [u32; 4], width: usize) -> Pools {
        Pools {
            f32s: vec![0.0; slots[0] as usize * width],
            f64s: vec![0.0; slots[1] as usize * width],
            ints: vec![0; slots[2] as usize * width],
            bools: vec![false; slots[3] as usize * width],
            width,
        }
    }
}

/// The state columns of a stage, in the field's float type.
#[derive(Clone, Copy)]
pub enum StateCols<'a> {
    F32(&'a [f32]),
    F64(&'a [f64]),
}

/// The float types a kernel's state can have (`f32`, `f64`), seen by the evaluator.
pub trait IrFloat: Real {
    /// The IR type.
    const TYPE: ScalarType;
    #[doc(hidden)]
    fn cols(s: &[Self]) -> StateCols<'_>;
    #[doc(hidden)]
    fn of_cols(c: StateCols<'_>) -> Option<&[Self]>;
    #[doc(hidden)]
    fn from_value(v: Value) -> Self;
    #[doc(hidden)]
    fn pool(p: &Pools) -> &[Self];
    #[doc(hidden)]
    fn pool_mut(p: &mut Pools) -> &mut [Self];
    /// A float unary operation (as [`crate::ops::unary`] computes it).
    #[doc(hidden)]
    fn un(op: UnOp, x: Self) -> Self;
    /// A float binary arithmetic operation (as [`crate::ops::binary`] computes it).
    #[doc(hidden)]
    fn bin(op: BinOp, a: Self, b: Self) -> Self;
}

macro_rules! float_ops {
    ($t:ty, $var:ident, $pool:ident, $unary:path) => {
        fn cols(s: &[$t]) -> StateCols<'_> {
            StateCols::$var(s)
        }
        fn of_cols(c: StateCols<'_>) -> Option<&[$t]> {
            match c {
                StateCols::$var(s) => Some(s),
                _ => None,
            }
        }
        fn pool(p: &Pools) -> &[$t] {
            &p.$pool
        }
        fn pool_mut(p: &mut Pools) -> &mut [$t] {
            &mut p.$pool
        }
        #[inline(always)]
        fn un(op: UnOp, x: $t) -> $t {
            $unary(op, x)
        }
        #[inline(always)]
        fn bin(op: BinOp, a: $t, b: $t) -> $t {
            match op {
                BinOp::Add => a + b,
                BinOp::Sub => a - b,
                BinOp::Mul => a * b,
                BinOp::Div => a / b,
                BinOp::Rem => a % b,
                BinOp::Min => a.min(b),
                BinOp::Max => a.max(b),
                BinOp::Pow => a.powf(b),
                _ => <$t>::NAN,
            }
        }
    };
}

impl IrFloat for f32 {
    const TYPE: ScalarType = ScalarType::F32;
    fn from_value(v: Value) -> f32 {
        match v {
            Value::F32(x) => x,
            other => other.as_f64() as f32,
        }
    }
    float_ops!(f32, F32, f32s, crate::ops::unary_f32);
}

impl IrFloat for f64 {
    const TYPE: ScalarType = ScalarType::F64;
    fn from_value(v: Value) -> f64 {
        v.as_f64()
    }
    float_ops!(f64, F64, f64s, crate::ops::unary_f64);
}
