//! The flux accumulator: CUDA's `atomicAdd` as a flux-conservative boundary op.
//!
//! Trajectories emit amounts ("flux") into accumulators. Every emission is
//! recorded and applied to the accumulator in **the fixed order**: blocks by
//! linear block index; within a block by [`FluxPlace`] — segment (a phase
//! repetition; a barrier interval of a PTX kernel), then step within it, then
//! lane — and emissions at one place in the order the lane made them
//! ([`order_block`]). So the total is conserved (every amount is added exactly
//! once, none lost, none twice) and the result is the same bits for any thread
//! count. CUDA's float atomics add in whatever order the hardware serialises
//! them; VGPU's order is one of those orders, always the same one. The phased
//! executor ([`crate::phase`]: phased `.field` and IR kernels, attractor
//! phases, jump kernels) and the PTX interpreter's deferred atomics both order
//! a block's emissions with [`order_block`]. Integer accumulators wrap on
//! overflow, as CUDA's `atomicAdd` does.

use crate::scalar::{Buffer, ScalarType, Value};
use std::fmt::Debug;

/// A type an accumulator holds: `f32`, `f64`, `i32` or `u32`.
pub trait FluxValue: Copy + Send + Sync + Debug + PartialEq + Default + 'static {
    /// The type's name.
    const NAME: &'static str;
    /// `self + amount` with the type's addition (IEEE round-to-nearest for
    /// floats, wrapping for integers: CUDA's `atomicAdd` semantics).
    fn accumulate(self, amount: Self) -> Self;
    /// The amount as a typed [`Value`].
    fn to_value(self) -> Value;
    /// A flux buffer of this type holding a copy of `acc`.
    fn to_buffer(acc: &[Self]) -> FluxBuffer;
    /// The accumulators of `b` if it is a buffer of this type.
    fn of_buffer(b: &FluxBuffer) -> Option<&[Self]>;
}

/// The conversions of a [`FluxValue`] to and from its [`Value`] and
/// [`FluxBuffer`] variant.
macro_rules! typed_flux {
    ($var:ident) => {
        #[inline(always)]
        fn to_value(self) -> Value {
            Value::$var(self)
        }
        fn to_buffer(acc: &[Self]) -> FluxBuffer {
            FluxBuffer::$var(acc.to_vec())
        }
        fn of_buffer(b: &FluxBuffer) -> Option<&[Self]> {
            match b {
                FluxBuffer::$var(v) => Some(v),
                _ => None,
            }
        }
    };
}

macro_rules! float_flux {
    ($t:ty, $var:ident) => {
        impl FluxValue for $t {
            const NAME: &'static str = stringify!($t);
            #[inline(always)]
            fn accumulate(self, amount: Self) -> Self {
                self + amount
            }
            typed_flux!($var);
        }
    };
}
macro_rules! int_flux {
    ($t:ty, $var:ident) => {
        impl FluxValue for $t {
            const NAME: &'static str = stringify!($t);
            #[inline(always)]
            fn accumulate(self, amount: Self) -> Self {
                self.wrapping_add(amount)
            }
            typed_flux!($var);
        }
    };
}
float_flux!(f32, F32);
float_flux!(f64, F64);
int_flux!(i32, I32);
int_flux!(u32, U32);

/// Where an emission stands in its block's share of the fixed order (see the
/// module documentation): ordered by segment, then step, then lane.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FluxPlace {
    /// The segment: a phase repetition, counted over all phases in order (a
    /// PTX kernel: the barrier interval, counted from 0).
    pub segment: usize,
    /// The step within the segment: 0 for the impulses at its start, `n + 1`
    /// for its step `n` (a PTX interval is one step: 0).
    pub step: usize,
    /// The emitting lane: the thread's linear index in its block.
    pub lane: usize,
}

/// Puts one block's emissions into the fixed order: by place, and at one
/// place in the order they were made (a stable sort; emissions already in
/// order cost one pass).
pub fn order_block<E>(emissions: &mut [(FluxPlace, E)]) {
    if !emissions.is_sorted_by_key(|e| e.0) {
        emissions.sort_by_key(|e| e.0);
    }
}

/// The emissions of one block, in emission order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FluxLog<A> {
    entries: Vec<(usize, A)>,
}

impl<A: FluxValue> FluxLog<A> {
    /// An empty log.
    pub fn new() -> Self {
        FluxLog {
            entries: Vec::new(),
        }
    }
    /// Records `amount` for accumulator `index`.
    #[inline]
    pub fn push(&mut self, index: usize, amount: A) {
        self.entries.push((index, amount));
    }
    /// Forgets every emission (keeps the memory).
    pub fn clear(&mut self) {
        self.entries.clear();
    }
    /// The emissions, in order.
    pub fn entries(&self) -> &[(usize, A)] {
        &self.entries
    }
    /// Number of emissions.
    pub fn len(&self) -> usize {
        self.entries.len()
    }
    /// Whether nothing was emitted.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
    /// Adds every emission to `acc`, in order. Indices were checked at emission.
    pub fn apply(&self, acc: &mut [A]) {
        for &(i, a) in &self.entries {
            acc[i] = acc[i].accumulate(a);
        }
    }
}

/// Applies the logs to `acc` one after the other: the fixed order that makes
/// accumulation deterministic.
pub fn apply_in_order<'a, A: FluxValue>(
    acc: &mut [A],
    logs: impl IntoIterator<Item = &'a FluxLog<A>>,
) {
    for log in logs {
        log.apply(acc);
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
    fn integers_wrap_like_cuda_atomic_add() {
        assert_eq!(u32::MAX.accumulate(2), 1);
        assert_eq!(i32::MAX.accumulate(1), i32::MIN);
    }

    #[test]
    fn a_block_is_ordered_by_place_then_by_emission() {
        let at = |segment, step, lane| FluxPlace {
            segment,
            step,
            lane,
        };
        let mut e = vec![
            (at(1, 0, 0), 'f'),
            (at(0, 1, 1), 'd'),
            (at(0, 1, 0), 'b'),
            (at(0, 0, 3), 'a'),
            (at(0, 1, 1), 'e'),
            (at(0, 1, 0), 'c'),
        ];
        order_block(&mut e);
        let order: String = e.iter().map(|x| x.1).collect();
        assert_eq!(order, "abcdef");
    }

    #[test]
    fn logs_apply_in_order() {
        // 1e8 + 1 - 1e8 in f32 depends on the order: the log's order is kept.
        let mut a = FluxLog::new();
        a.push(0, 1e8f32);
        a.push(0, 1.0);
        let mut b = FluxLog::new();
        b.push(0, -1e8f32);
        let mut acc = [0.0f32];
        apply_in_order(&mut acc, [&a, &b]);
        assert_eq!(acc[0], 0.0);
        let mut acc = [0.0f32];
        apply_in_order(&mut acc, [&b, &a]);
        assert_eq!(acc[0], 1.0);
    }

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
