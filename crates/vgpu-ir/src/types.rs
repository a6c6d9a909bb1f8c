//! Scalar types of the kernel IR.

use std::fmt;

/// A scalar type of the kernel IR (and of the `.field` language).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ScalarType {
    /// IEEE binary32.
    F32,
    /// IEEE binary64 (CPU only: WGSL has no portable f64).
    F64,
    /// Signed 32-bit integer, wrapping arithmetic.
    I32,
    /// Unsigned 32-bit integer, wrapping arithmetic.
    U32,
    /// Boolean.
    Bool,
}

impl ScalarType {
    /// True for `f32` and `f64`.
    pub fn is_float(self) -> bool {
        matches!(self, ScalarType::F32 | ScalarType::F64)
    }
    /// True for `i32` and `u32`.
    pub fn is_int(self) -> bool {
        matches!(self, ScalarType::I32 | ScalarType::U32)
    }
    /// The name used in `.field` text (and in WGSL, except `f64`).
    pub fn name(self) -> &'static str {
        match self {
            ScalarType::F32 => "f32",
            ScalarType::F64 => "f64",
            ScalarType::I32 => "i32",
            ScalarType::U32 => "u32",
            ScalarType::Bool => "bool",
        }
    }
    /// Parses a type name (`f32`, `f64`, `i32`, `u32`, `bool`).
    pub fn from_name(s: &str) -> Option<ScalarType> {
        Some(match s {
            "f32" => ScalarType::F32,
            "f64" => ScalarType::F64,
            "i32" => ScalarType::I32,
            "u32" => ScalarType::U32,
            "bool" => ScalarType::Bool,
            _ => return None,
        })
    }
}

impl fmt::Display for ScalarType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A scalar value of one of the IR's types.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Value {
    /// An `f32`.
    F32(f32),
    /// An `f64`.
    F64(f64),
    /// An `i32`.
    I32(i32),
    /// A `u32`.
    U32(u32),
    /// A `bool`.
    Bool(bool),
}

impl Value {
    /// The value's type.
    pub fn ty(self) -> ScalarType {
        match self {
            Value::F32(_) => ScalarType::F32,
            Value::F64(_) => ScalarType::F64,
            Value::I32(_) => ScalarType::I32,
            Value::U32(_) => ScalarType::U32,
            Value::Bool(_) => ScalarType::Bool,
        }
    }
    /// The value converted to `f64` (exact for every type but none wider).
    pub fn as_f64(self) -> f64 {
        match self {
            Value::F32(v) => v as f64,
            Value::F64(v) => v,
            Value::I32(v) => v as f64,
            Value::U32(v) => v as f64,
            Value::Bool(v) => v as u8 as f64,
        }
    }
    /// Bit pattern, used to hash constants (so `-0.0` and `0.0` stay distinct).
    pub(crate) fn key(self) -> (u8, u64) {
        match self {
            Value::F32(v) => (0, v.to_bits() as u64),
            Value::F64(v) => (1, v.to_bits()),
            Value::I32(v) => (2, v as u32 as u64),
            Value::U32(v) => (3, v as u64),
            Value::Bool(v) => (4, v as u64),
        }
    }
    /// The value converted to type `ty` (as a cast in the language does: float to
    /// integer truncates toward zero and saturates, as Rust's `as` and WGSL do).
    pub fn cast(self, ty: ScalarType) -> Value {
        match ty {
            ScalarType::F32 => Value::F32(match self {
                Value::F32(v) => v,
                Value::F64(v) => v as f32,
                Value::I32(v) => v as f32,
                Value::U32(v) => v as f32,
                Value::Bool(v) => v as u8 as f32,
            }),
            ScalarType::F64 => Value::F64(self.as_f64()),
            ScalarType::I32 => Value::I32(match self {
                Value::F32(v) => v as i32,
                Value::F64(v) => v as i32,
                Value::I32(v) => v,
                Value::U32(v) => v as i32,
                Value::Bool(v) => v as i32,
            }),
            ScalarType::U32 => Value::U32(match self {
                Value::F32(v) => v as u32,
                Value::F64(v) => v as u32,
                Value::I32(v) => v as u32,
                Value::U32(v) => v,
                Value::Bool(v) => v as u32,
            }),
            ScalarType::Bool => Value::Bool(match self {
                Value::F32(v) => v != 0.0,
                Value::F64(v) => v != 0.0,
                Value::I32(v) => v != 0,
                Value::U32(v) => v != 0,
                Value::Bool(v) => v,
            }),
        }
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::F32(v) => write!(f, "{v:?}"),
            Value::F64(v) => write!(f, "{v:?}"),
            Value::I32(v) => write!(f, "{v}"),
            Value::U32(v) => write!(f, "{v}u"),
            Value::Bool(v) => write!(f, "{v}"),
        }
    }
}
