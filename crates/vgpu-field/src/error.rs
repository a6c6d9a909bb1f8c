//! [`FieldError`]: everything the field engine refuses, naming what and where.

use crate::dim3::Dim3;

/// An error of the field engine. Each message names what went wrong and where
/// (launch dimension, buffer and lengths, trajectory, block, thread, time).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum FieldError {
    /// A grid or block dimension is zero.
    #[error("{which} dimension {dims} has a zero component (every dimension must be at least 1)")]
    ZeroDimension {
        /// `"grid"` or `"block"`.
        which: &'static str,
        /// The dimension given.
        dims: Dim3,
    },
    /// A block has more trajectories than CUDA allows (1024).
    #[error(
        "block {dims} has {threads} trajectories, more than the limit of {limit} threads per block"
    )]
    BlockTooLarge {
        /// The block dimension given.
        dims: Dim3,
        /// Its number of trajectories.
        threads: u64,
        /// The limit (1024).
        limit: u64,
    },
    /// A block dimension exceeds CUDA's per-axis limit, or the grid is too large.
    #[error("{which} dimension {dims} exceeds CUDA's limit of {limit} on axis {axis}")]
    DimensionTooLarge {
        /// `"grid"` or `"block"`.
        which: &'static str,
        /// The dimension given.
        dims: Dim3,
        /// `'x'`, `'y'` or `'z'`.
        axis: char,
        /// The limit on that axis.
        limit: u64,
    },
    /// A block's shared memory, static and dynamic together, exceeds the limit
    /// (228 KiB, CUDA's most per block).
    #[error("{total} bytes of shared memory per block ({static_bytes} static + {dynamic_bytes} dynamic), more than the limit of {limit} (228 KiB)")]
    SharedTooLarge {
        /// The kernel's own (static) shared bytes.
        static_bytes: u64,
        /// The launch's dynamic shared bytes.
        dynamic_bytes: u32,
        /// Their sum.
        total: u64,
        /// The limit ([`crate::launch::MAX_SHARED_BYTES_PER_BLOCK`]).
        limit: u64,
    },
    /// The time step is zero, negative or not finite (after conversion to the state type).
    #[error("integration: dt = {dt} is not a positive finite {ty} step")]
    BadStep {
        /// The step as given.
        dt: f64,
        /// The state type (`f32` or `f64`).
        ty: &'static str,
    },
    /// The start time is not finite.
    #[error("integration: t0 = {t0} is not finite")]
    BadStartTime {
        /// The start time as given.
        t0: f64,
    },
    /// A barrier setting (threshold or phase time) is out of range.
    #[error("barrier: {what} = {value} is out of range ({why})")]
    BadBarrier {
        /// The setting's name.
        what: &'static str,
        /// Its value.
        value: f64,
        /// What it must be.
        why: &'static str,
    },
    /// A buffer is shorter than the launch's index space needs.
    #[error("buffer `{name}` has {len} elements, the launch needs at least {needed} ({why})")]
    BufferTooShort {
        /// The buffer's name.
        name: String,
        /// Its length.
        len: usize,
        /// The length the launch needs.
        needed: usize,
        /// How `needed` follows from the launch.
        why: String,
    },
    /// A Butcher tableau is not a valid explicit Runge–Kutta method.
    #[error("tableau `{name}`: {why}")]
    BadTableau {
        /// The tableau's name.
        name: String,
        /// What is wrong with it.
        why: String,
    },
    /// A NaN or an infinity appeared in a trajectory's state.
    #[error("trajectory {trajectory} (block {block}, thread {thread}) became non-finite in component {component} at t = {t} (value {value})")]
    NonFinite {
        /// Global (linear) trajectory index.
        trajectory: usize,
        /// Its block index.
        block: Dim3,
        /// Its thread index in the block.
        thread: Dim3,
        /// The state component that became non-finite.
        component: usize,
        /// The time at the end of the step (or phase) where it appeared.
        t: f64,
        /// The value (NaN or ±inf), as `f64`.
        value: f64,
    },
    /// A phase kernel addressed a shared sub-field entry, register or flux
    /// accumulator outside its length.
    #[error("{what} index {index} out of bounds (length {len}) in phase {phase}, block {block}, thread {thread}")]
    OutOfBounds {
        /// `"shared"`, `"register"` or `"flux"`.
        what: &'static str,
        /// The index used.
        index: usize,
        /// The length of what was addressed.
        len: usize,
        /// The phase.
        phase: usize,
        /// The block.
        block: Dim3,
        /// The thread.
        thread: Dim3,
    },
    /// A demo's or kernel's own input is inconsistent (shapes, sizes).
    #[error("{context}: {why}")]
    Invalid {
        /// Where (demo or kernel name).
        context: String,
        /// What is wrong.
        why: String,
    },
    /// The rayon thread pool could not be built.
    #[error("thread pool with {threads} threads: {why}")]
    ThreadPool {
        /// Threads asked for.
        threads: usize,
        /// The reason rayon gave.
        why: String,
    },
}

/// Checks that buffer `name` has at least `needed` elements.
///
/// # Errors
/// [`FieldError::BufferTooShort`] naming the buffer, both lengths and `why`.
pub fn check_len(name: &str, len: usize, needed: usize, why: &str) -> Result<(), FieldError> {
    if len < needed {
        return Err(FieldError::BufferTooShort {
            name: name.to_string(),
            len,
            needed,
            why: why.to_string(),
        });
    }
    Ok(())
}
