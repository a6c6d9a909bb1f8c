//! [`AdaptiveError`]: what an adaptive ensemble refuses before it runs.

use crate::error::FieldError;

/// An error of the adaptive ensemble driver. Every variant is found before any
/// trajectory is integrated; what goes wrong *during* integration is a
/// per-trajectory [`crate::adaptive::Status`], never an error, so one failing
/// trajectory cannot abort the others.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum AdaptiveError {
    /// A tolerance is zero, negative or not finite.
    #[error("option `{option}`: component {component} is {value}; tolerances must be positive and finite in the state type (f32 or f64)")]
    BadTolerance {
        /// `"rtol"` or `"atol"`.
        option: &'static str,
        /// The component (0 for a scalar tolerance).
        component: usize,
        /// The value given.
        value: f64,
    },
    /// A step-size option is out of range (`dt0 ≤ 0`, `dtmax ≤ 0`, `dtmin < 0`,
    /// `dtmin > dtmax`, a fixed step `≤ 0`, anything not finite).
    #[error("option `{option}` = {value}: {why}")]
    BadStepOption {
        /// The option's name (`"dt0"`, `"dtmin"`, `"dtmax"`, `"fixed_step"`).
        option: &'static str,
        /// Its value.
        value: f64,
        /// What it must be.
        why: String,
    },
    /// A controller setting is out of range.
    #[error("controller: {what} = {value} is out of range ({why})")]
    BadController {
        /// The setting's name.
        what: &'static str,
        /// Its value.
        value: f64,
        /// What it must be.
        why: &'static str,
    },
    /// A method name that is not one of the built-in pairs.
    #[error("unknown adaptive method `{name}` (expected tsit5, dp5, bs3, vern7 or rosenbrock23)")]
    UnknownMethod {
        /// The name given.
        name: String,
    },
    /// The method cannot run this right-hand side: Rosenbrock23 without a
    /// Jacobian, or with more states than its dense solver takes.
    #[error("option `method` = {method}: {why}")]
    MethodUnavailable {
        /// The method's name.
        method: &'static str,
        /// Why, and what to do instead.
        why: String,
    },
    /// `maxiters` is zero.
    #[error("option `maxiters` must be at least 1")]
    ZeroMaxIters,
    /// The ensemble has no trajectories.
    #[error("empty ensemble: N = 0 trajectories")]
    EmptyEnsemble,
    /// An input array does not have the shape the ensemble needs.
    #[error("shape mismatch: `{what}` has {got} values, expected {expected}")]
    ShapeMismatch {
        /// The array's name (`"y0"`, `"spans"`, `"params"`, `"atol"`, `"rtol"`).
        what: &'static str,
        /// The number of values given.
        got: usize,
        /// The shape it must have, spelled out (e.g. `"(N, D) = (4, 3) → 12"`).
        expected: String,
    },
    /// A time span is not finite, runs backwards, or is not representable in
    /// the state type.
    #[error("trajectory {trajectory}: span ({t0}, {t1}) {why}")]
    BadSpan {
        /// The trajectory (0 for a span shared by all).
        trajectory: usize,
        /// Start.
        t0: f64,
        /// End.
        t1: f64,
        /// What is wrong.
        why: &'static str,
    },
    /// A save time is outside a trajectory's span, not finite, or out of order.
    #[error("saveat[{index}] = {t}: {why}")]
    BadSaveat {
        /// Index into `saveat`.
        index: usize,
        /// The save time.
        t: f64,
        /// What is wrong (naming the span it leaves, or the order).
        why: String,
    },
    /// An output buffer's size overflows `usize`.
    #[error("output `{what}` of shape {shape} is too large to allocate (size overflows usize)")]
    TooLarge {
        /// The buffer (`"endpoints"`, `"saved"`).
        what: &'static str,
        /// Its shape, e.g. `"(N, K, D) = (…)"`.
        shape: String,
    },
    /// The right-hand side refused the ensemble (its own check).
    #[error("right-hand side: {0}")]
    Rhs(String),
    /// An error of the field engine (the thread pool, a field's own check).
    #[error(transparent)]
    Field(#[from] FieldError),
}
