//! The arguments of a launch: one value per declared parameter (a scalar or a
//! read-only buffer), checked against the kernel's declarations.

use crate::error::IrError;
use crate::kernel::Kernel;
use crate::types::{ScalarType, Value};
use std::sync::Arc;

/// A read-only buffer argument.
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

/// One argument.
#[derive(Clone, Debug, PartialEq)]
pub enum Arg {
    /// A scalar.
    Scalar(Value),
    /// A buffer.
    Buffer(Buffer),
}

/// The arguments of a kernel's launch, by parameter index.
#[derive(Clone, Debug, PartialEq)]
pub struct Args {
    kernel: String,
    names: Vec<String>,
    decl: Vec<(ScalarType, bool)>,
    values: Vec<Option<Arg>>,
}

impl Args {
    /// No arguments yet, for `kernel`'s parameters.
    pub fn new(kernel: &Kernel) -> Args {
        Args {
            kernel: kernel.name.clone(),
            names: kernel.params.iter().map(|p| p.name.clone()).collect(),
            decl: kernel.params.iter().map(|p| (p.ty, p.buffer)).collect(),
            values: vec![None; kernel.params.len()],
        }
    }

    fn index(&self, name: &str) -> Result<usize, IrError> {
        self.names
            .iter()
            .position(|n| n == name)
            .ok_or_else(|| IrError::UnknownParam {
                kernel: self.kernel.clone(),
                name: name.to_string(),
                known: if self.names.is_empty() {
                    "none".into()
                } else {
                    self.names.join(", ")
                },
            })
    }

    fn describe(&self, k: usize) -> String {
        let (ty, buf) = self.decl[k];
        if buf {
            format!("{ty}[]")
        } else {
            ty.to_string()
        }
    }

    /// Sets parameter `name` to `arg`. A scalar given as another numeric type is
    /// converted only if the conversion is exact (e.g. `3.0` for a `u32`).
    ///
    /// # Errors
    /// [`IrError::UnknownParam`], or [`IrError::ParamType`] for a buffer given
    /// for a scalar (or the reverse), a buffer of another element type, or a
    /// scalar that does not convert exactly.
    pub fn set(&mut self, name: &str, arg: Arg) -> Result<&mut Self, IrError> {
        let k = self.index(name)?;
        let (ty, buffer) = self.decl[k];
        let bad = |got: String| IrError::ParamType {
            kernel: self.kernel.clone(),
            name: name.to_string(),
            expected: self.describe(k),
            got,
        };
        let arg = match (arg, buffer) {
            (Arg::Buffer(b), true) => {
                if b.ty() != ty {
                    return Err(bad(format!("a {}[] buffer", b.ty())));
                }
                Arg::Buffer(b)
            }
            (Arg::Scalar(v), false) => {
                let c = v.cast(ty);
                if c.cast(v.ty()) != v && !(v.as_f64().is_nan() && c.as_f64().is_nan()) {
                    return Err(bad(format!(
                        "{v} ({}), which is not exactly a {ty}",
                        v.ty()
                    )));
                }
                Arg::Scalar(c)
            }
            (Arg::Buffer(b), false) => {
                return Err(bad(format!(
                    "a {}[] buffer of {} elements",
                    b.ty(),
                    b.len()
                )))
            }
            (Arg::Scalar(v), true) => return Err(bad(format!("the scalar {v}"))),
        };
        self.values[k] = Some(arg);
        Ok(self)
    }

    /// Sets scalar parameter `name`.
    ///
    /// # Errors
    /// As [`Args::set`].
    pub fn scalar(&mut self, name: &str, v: Value) -> Result<&mut Self, IrError> {
        self.set(name, Arg::Scalar(v))
    }

    /// Sets buffer parameter `name`.
    ///
    /// # Errors
    /// As [`Args::set`].
    pub fn buffer(&mut self, name: &str, b: impl Into<Buffer>) -> Result<&mut Self, IrError> {
        self.set(name, Arg::Buffer(b.into()))
    }

    /// Checks that every parameter was given.
    ///
    /// # Errors
    /// [`IrError::MissingParam`] naming the first missing one.
    pub fn check_complete(&self) -> Result<(), IrError> {
        for (k, v) in self.values.iter().enumerate() {
            if v.is_none() {
                return Err(IrError::MissingParam {
                    kernel: self.kernel.clone(),
                    name: self.names[k].clone(),
                    what: self.describe(k),
                });
            }
        }
        Ok(())
    }

    /// The argument of parameter `k`, if given.
    pub fn get(&self, k: usize) -> Option<&Arg> {
        self.values.get(k).and_then(|v| v.as_ref())
    }

    /// The scalar value of parameter `k` (after [`Args::check_complete`]).
    pub fn scalar_at(&self, k: usize) -> Option<Value> {
        match self.get(k) {
            Some(Arg::Scalar(v)) => Some(*v),
            _ => None,
        }
    }

    /// The buffer of parameter `k` (after [`Args::check_complete`]).
    pub fn buffer_at(&self, k: usize) -> Option<&Buffer> {
        match self.get(k) {
            Some(Arg::Buffer(b)) => Some(b),
            _ => None,
        }
    }
}
