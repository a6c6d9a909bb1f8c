//! The one vocabulary of scalar types, values and buffers: the element types
//! of shared arrays and flux accumulators here, and the scalar types, values
//! and buffer arguments of the kernel IR and the `.field` language (vgpu-ir
//! re-exports them as `vgpu_ir::types::{ScalarType, Value}` and
//! `vgpu_ir::Buffer`).

use std::fmt;
use std::sync::Arc;

/// A scalar type: of a shared array's elements, of a flux accumulator, of the
/// kernel IR's values (and of the `.field` language).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ScalarType {
    /// IEEE binary32.
    F32,
    /// IEEE binary64 (CPU only in the IR's shaders: WGSL has no portable f64).
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

/// A value of one of the [`ScalarType`]s.
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
    /// An integer as its `u32` bits (two's complement for `i32`); `None` otherwise.
    pub fn int_bits(self) -> Option<u32> {
        match self {
            Value::I32(x) => Some(x as u32),
            Value::U32(x) => Some(x),
            _ => None,
        }
    }
    /// The type's tag and the value's bit pattern: equal exactly when the
    /// values are the same bits of the same type (so `-0.0` and `0.0` stay
    /// distinct, and a NaN equals itself); the IR hashes constants by it.
    pub fn key(self) -> (u8, u64) {
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

/// As the `.field` language writes the value (`u32`s with a `u` suffix).
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

/// A read-only buffer of numbers (a kernel's buffer argument, a launch's flux
/// output), shared without copying.
#[derive(Clone, Debug, PartialEq)]
pub enum Buffer {
    /// `f32[]`
    F32(Arc<[f32]>),
    /// `f64[]`
    F64(Arc<[f64]>),
    /// `i32[]`
    I32(Arc<[i32]>),
    /// `u32[]`
    U32(Arc<[u32]>),
}

impl Buffer {
    /// Element type.
    pub fn ty(&self) -> ScalarType {
        match self {
            Buffer::F32(_) => ScalarType::F32,
            Buffer::F64(_) => ScalarType::F64,
            Buffer::I32(_) => ScalarType::I32,
            Buffer::U32(_) => ScalarType::U32,
        }
    }
    /// Number of elements.
    pub fn len(&self) -> usize {
        match self {
            Buffer::F32(v) => v.len(),
            Buffer::F64(v) => v.len(),
            Buffer::I32(v) => v.len(),
            Buffer::U32(v) => v.len(),
        }
    }
    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Element `i` (the caller checked the bounds).
    pub fn get(&self, i: usize) -> Value {
        match self {
            Buffer::F32(v) => Value::F32(v[i]),
            Buffer::F64(v) => Value::F64(v[i]),
            Buffer::I32(v) => Value::I32(v[i]),
            Buffer::U32(v) => Value::U32(v[i]),
        }
    }
    /// The buffer converted to `ty` element by element (as `ty(x)` casts do).
    pub fn cast(&self, ty: ScalarType) -> Buffer {
        if self.ty() == ty {
            return self.clone();
        }
        let vals = (0..self.len()).map(|i| self.get(i).cast(ty));
        match ty {
            ScalarType::F32 => Buffer::F32(
                vals.map(|v| if let Value::F32(x) = v { x } else { 0.0 })
                    .collect(),
            ),
            ScalarType::F64 => Buffer::F64(vals.map(|v| v.as_f64()).collect()),
            ScalarType::I32 => Buffer::I32(
                vals.map(|v| if let Value::I32(x) = v { x } else { 0 })
                    .collect(),
            ),
            _ => Buffer::U32(
                vals.map(|v| if let Value::U32(x) = v { x } else { 0 })
                    .collect(),
            ),
        }
    }
    /// The raw little-endian bytes (for GPU upload).
    pub fn to_le_bytes(&self) -> Vec<u8> {
        match self {
            Buffer::F32(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            Buffer::F64(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            Buffer::I32(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            Buffer::U32(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
        }
    }
}

impl From<Vec<f32>> for Buffer {
    fn from(v: Vec<f32>) -> Self {
        Buffer::F32(v.into())
    }
}
impl From<Vec<f64>> for Buffer {
    fn from(v: Vec<f64>) -> Self {
        Buffer::F64(v.into())
    }
}
impl From<Vec<i32>> for Buffer {
    fn from(v: Vec<i32>) -> Self {
        Buffer::I32(v.into())
    }
}
impl From<Vec<u32>> for Buffer {
    fn from(v: Vec<u32>) -> Self {
        Buffer::U32(v.into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_bits_of_a_type() {
        assert_ne!(Value::F32(0.0).key(), Value::F32(-0.0).key());
        assert_eq!(Value::F64(f64::NAN).key(), Value::F64(f64::NAN).key());
        assert_ne!(Value::I32(1).key(), Value::U32(1).key());
        assert_eq!(Value::I32(-1).int_bits(), Some(u32::MAX));
        assert_eq!(Value::F32(1.0).int_bits(), None);
    }
}
