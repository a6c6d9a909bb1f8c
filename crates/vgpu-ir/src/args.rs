//! The arguments of a launch: one value per declared parameter (a scalar or a
//! read-only buffer), checked against the kernel's declarations.

use crate::error::IrError;
use crate::kernel::Kernel;
use crate::types::{ScalarType, Value};

pub use vgpu_field::scalar::Buffer;

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
