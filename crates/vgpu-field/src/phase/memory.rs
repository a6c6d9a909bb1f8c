//! Typed block memory for flow phases: the shared sub-field as arrays of their
//! own element types (`f32`, `f64`, `i32`, `u32`, `bool`), and flux
//! accumulators of their own types.
//!
//! A block's shared arrays are stored flat per kind ([`SharedMem`]): the `f32`
//! arrays one after the other in one vector, the `f64` arrays in another, the
//! integer arrays (as `u32` bits) and the `bool` arrays in two more. The float
//! vectors are states the phase's integrator advances together with the
//! registers; integer entries move only by unit flows.

use crate::flux::{FluxBuffer, FluxLog};
use crate::scalar::{ScalarType, Value};

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
