//! Typed block memory for flow phases: the shared sub-field as arrays of their
//! own element types (`f32`, `f64`, `i32`, `u32`, `bool`), and flux
//! accumulators of their own types.
//!
//! A block's shared arrays are stored flat per kind ([`SharedMem`]): the `f32`
//! arrays one after the other in one vector, the `f64` arrays in another, the
//! integer arrays (as `u32` bits) and the `bool` arrays in two more. The float
//! vectors are states the phase's integrator advances together with the
//! registers; integer entries move only by unit flows.

use crate::flux::FluxLog;
use crate::scalar::{Buffer, ScalarType, Value};

/// The kind of a type's storage in a [`SharedMem`]: f32, f64, integers (as
/// `u32` bits), bool.
fn kind(ty: ScalarType) -> usize {
    match ty {
        ScalarType::F32 => 0,
        ScalarType::F64 => 1,
        ScalarType::I32 | ScalarType::U32 => 2,
        ScalarType::Bool => 3,
    }
}

/// A shared array of a block: element type, length and every element's
/// initial value.
#[derive(Debug, Clone, PartialEq)]
pub struct SharedDecl {
    /// Its name (for messages).
    pub name: String,
    /// Its length.
    pub len: usize,
    /// Every element's initial value (its type is the array's).
    pub init: Value,
}

/// Where a shared array lives in a [`SharedMem`]: its kind's vector and offset.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Place {
    pub ty: ScalarType,
    pub offset: usize,
    pub len: usize,
}

/// The layout of a block's shared arrays.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Layout {
    pub places: Vec<Place>,
    /// Elements per kind: f32, f64, integers, bool.
    pub sizes: [usize; 4],
}

impl Layout {
    pub(crate) fn new(decls: &[SharedDecl]) -> Layout {
        let mut sizes = [0usize; 4];
        let places = decls
            .iter()
            .map(|d| {
                let ty = d.init.ty();
                let offset = sizes[kind(ty)];
                sizes[kind(ty)] += d.len;
                Place {
                    ty,
                    offset,
                    len: d.len,
                }
            })
            .collect();
        Layout { places, sizes }
    }

    /// Sets `m` to a block's memory at its initial values (reusing its vectors).
    pub(crate) fn reset(&self, decls: &[SharedDecl], m: &mut SharedMem) {
        fn sized<E: Clone>(v: &mut Vec<E>, len: usize, zero: E) {
            v.clear();
            v.resize(len, zero);
        }
        sized(&mut m.f32s, self.sizes[0], 0.0);
        sized(&mut m.f64s, self.sizes[1], 0.0);
        sized(&mut m.ints, self.sizes[2], 0);
        sized(&mut m.bools, self.sizes[3], false);
        for (p, d) in self.places.iter().zip(decls) {
            let r = p.offset..p.offset + p.len;
            match d.init {
                Value::F32(x) => m.f32s[r].fill(x),
                Value::F64(x) => m.f64s[r].fill(x),
                Value::Bool(x) => m.bools[r].fill(x),
                v => m.ints[r].fill(v.int_bits().unwrap_or(0)),
            }
        }
    }
}

/// A block's shared arrays, flat per kind (see the module documentation).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SharedMem {
    /// Every `f32` array, one after the other.
    pub f32s: Vec<f32>,
    /// Every `f64` array.
    pub f64s: Vec<f64>,
    /// Every `i32` and `u32` array, as `u32` bits.
    pub ints: Vec<u32>,
    /// Every `bool` array.
    pub bools: Vec<bool>,
}

/// The shared arrays as a stage reads them.
#[derive(Debug, Clone, Copy)]
pub struct SharedView<'a> {
    pub(crate) layout: &'a Layout,
    pub(crate) f32s: &'a [f32],
    pub(crate) f64s: &'a [f64],
    pub(crate) ints: &'a [u32],
    pub(crate) bools: &'a [bool],
}

/// One shared array as a stage reads it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SharedSlice<'a> {
    /// An `f32` array.
    F32(&'a [f32]),
    /// An `f64` array.
    F64(&'a [f64]),
    /// An `i32` array, as `u32` bits.
    I32(&'a [u32]),
    /// A `u32` array.
    U32(&'a [u32]),
    /// A `bool` array.
    Bool(&'a [bool]),
}

impl<'a> SharedView<'a> {
    /// Number of shared arrays.
    pub fn arrays(&self) -> usize {
        self.layout.places.len()
    }
    /// Array `a` (panics if `a ≥ arrays()`, a kernel's own inconsistency).
    pub fn array(&self, a: usize) -> SharedSlice<'a> {
        let p = self.layout.places[a];
        let r = p.offset..p.offset + p.len;
        match p.ty {
            ScalarType::F32 => SharedSlice::F32(&self.f32s[r]),
            ScalarType::F64 => SharedSlice::F64(&self.f64s[r]),
            ScalarType::I32 => SharedSlice::I32(&self.ints[r]),
            ScalarType::U32 => SharedSlice::U32(&self.ints[r]),
            ScalarType::Bool => SharedSlice::Bool(&self.bools[r]),
        }
    }
}

impl SharedSlice<'_> {
    /// Elements of the array.
    pub fn len(&self) -> usize {
        match self {
            SharedSlice::F32(s) => s.len(),
            SharedSlice::F64(s) => s.len(),
            SharedSlice::I32(s) | SharedSlice::U32(s) => s.len(),
            SharedSlice::Bool(s) => s.len(),
        }
    }

    /// Whether the array has no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Element `i` as a value of the array's type (panics if `i ≥ len()`).
    pub fn get(&self, i: usize) -> Value {
        match self {
            SharedSlice::F32(s) => Value::F32(s[i]),
            SharedSlice::F64(s) => Value::F64(s[i]),
            SharedSlice::I32(s) => Value::I32(s[i] as i32),
            SharedSlice::U32(s) => Value::U32(s[i]),
            SharedSlice::Bool(s) => Value::Bool(s[i]),
        }
    }
}

/// A flux accumulator buffer of its own type (CUDA: the target of `atomicAdd`).
#[derive(Debug, Clone, PartialEq)]
pub enum FluxBuffer {
    /// `f32` accumulators.
    F32(Vec<f32>),
    /// `f64` accumulators.
    F64(Vec<f64>),
    /// `i32` accumulators (wrapping).
    I32(Vec<i32>),
    /// `u32` accumulators (wrapping).
    U32(Vec<u32>),
}

impl FluxBuffer {
    /// `len` zeros of type `ty` (`None` for `bool`, which cannot accumulate).
    pub fn zeros(ty: ScalarType, len: usize) -> Option<FluxBuffer> {
        Some(match ty {
            ScalarType::F32 => FluxBuffer::F32(vec![0.0; len]),
            ScalarType::F64 => FluxBuffer::F64(vec![0.0; len]),
            ScalarType::I32 => FluxBuffer::I32(vec![0; len]),
            ScalarType::U32 => FluxBuffer::U32(vec![0; len]),
            ScalarType::Bool => return None,
        })
    }
    /// Its element type.
    pub fn ty(&self) -> ScalarType {
        match self {
            FluxBuffer::F32(_) => ScalarType::F32,
            FluxBuffer::F64(_) => ScalarType::F64,
            FluxBuffer::I32(_) => ScalarType::I32,
            FluxBuffer::U32(_) => ScalarType::U32,
        }
    }
    /// Its length.
    pub fn len(&self) -> usize {
        match self {
            FluxBuffer::F32(v) => v.len(),
            FluxBuffer::F64(v) => v.len(),
            FluxBuffer::I32(v) => v.len(),
            FluxBuffer::U32(v) => v.len(),
        }
    }
    /// Whether it has no accumulators.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A block's emissions into one [`FluxBuffer`], in emission order.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum TypedLog {
    F32(FluxLog<f32>),
    F64(FluxLog<f64>),
    I32(FluxLog<i32>),
    U32(FluxLog<u32>),
}

impl TypedLog {
    pub(crate) fn for_buffer(b: &FluxBuffer) -> TypedLog {
        match b {
            FluxBuffer::F32(_) => TypedLog::F32(FluxLog::new()),
            FluxBuffer::F64(_) => TypedLog::F64(FluxLog::new()),
            FluxBuffer::I32(_) => TypedLog::I32(FluxLog::new()),
            FluxBuffer::U32(_) => TypedLog::U32(FluxLog::new()),
        }
    }
    /// Records `amount` (of the log's type, checked by the caller) for `index`.
    pub(crate) fn push(&mut self, index: usize, amount: Value) {
        match (self, amount) {
            (TypedLog::F32(l), Value::F32(a)) => l.push(index, a),
            (TypedLog::F64(l), Value::F64(a)) => l.push(index, a),
            (TypedLog::I32(l), Value::I32(a)) => l.push(index, a),
            (TypedLog::U32(l), Value::U32(a)) => l.push(index, a),
            (log, a) => unreachable!("{a:?} into a {log:?}: types are checked at emission"),
        }
    }
    pub(crate) fn len(&self) -> usize {
        match self {
            TypedLog::F32(l) => l.len(),
            TypedLog::F64(l) => l.len(),
            TypedLog::I32(l) => l.len(),
            TypedLog::U32(l) => l.len(),
        }
    }
    /// Adds the emissions to `acc` (the buffer this log was made for), in order.
    pub(crate) fn apply(&self, acc: &mut FluxBuffer) {
        match (self, acc) {
            (TypedLog::F32(l), FluxBuffer::F32(a)) => l.apply(a),
            (TypedLog::F64(l), FluxBuffer::F64(a)) => l.apply(a),
            (TypedLog::I32(l), FluxBuffer::I32(a)) => l.apply(a),
            (TypedLog::U32(l), FluxBuffer::U32(a)) => l.apply(a),
            _ => unreachable!("a log is applied to the buffer it was made for"),
        }
    }
}

impl From<FluxBuffer> for Buffer {
    /// A launch's flux accumulators as a read-only buffer of their type.
    fn from(b: FluxBuffer) -> Self {
        match b {
            FluxBuffer::F32(v) => Buffer::F32(v.into()),
            FluxBuffer::F64(v) => Buffer::F64(v.into()),
            FluxBuffer::I32(v) => Buffer::I32(v.into()),
            FluxBuffer::U32(v) => Buffer::U32(v.into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flux_buffers_become_buffers_of_their_type() {
        for (ty, vals) in [
            (ScalarType::F32, [1.5, -2.0]),
            (ScalarType::F64, [0.25, 3.0]),
            (ScalarType::I32, [-7.0, 9.0]),
            (ScalarType::U32, [7.0, 9.0]),
        ] {
            let mut f = FluxBuffer::zeros(ty, 2).expect("a number type");
            match &mut f {
                FluxBuffer::F32(v) => v.copy_from_slice(&vals.map(|x| x as f32)),
                FluxBuffer::F64(v) => v.copy_from_slice(&vals),
                FluxBuffer::I32(v) => v.copy_from_slice(&vals.map(|x| x as i32)),
                FluxBuffer::U32(v) => v.copy_from_slice(&vals.map(|x| x as u32)),
            }
            let b = Buffer::from(f);
            assert_eq!(b.ty(), ty);
            assert_eq!(b.len(), 2);
            for (i, &x) in vals.iter().enumerate() {
                assert_eq!(b.get(i), Value::F64(x).cast(ty));
            }
        }
        assert!(FluxBuffer::zeros(ScalarType::Bool, 2).is_none());
    }
}
