//! Native code for unphased IR kernels (issue 16 item 1): the JIT executor.
//!
//! The column evaluator ([`crate::field::IrField`]) stays the reference
//! semantics of the IR; this module compiles the same nodes with Cranelift
//! into a native function per kernel and is tested against the evaluator bit
//! for bit. It never rounds differently: `+ − × ÷`, `sqrt`, `floor`, `abs`,
//! `fma` are single IEEE operations in both, no multiply-add is contracted,
//! and the library functions (`sin`, `exp`, `pow`, `min`, `%` on floats, …)
//! are calls to the very Rust functions the evaluator runs ([`ops`](crate::ops)).
//!
//! What it cannot compile (a phased kernel, shared sub-fields, flux,
//! a host Cranelift has no backend for, a build without the `jit` feature) is
//! a [`NotCompilable`] naming the reason, and the caller runs the evaluator.
//! [`Engine`] is the user's choice between the two.

use std::fmt;

#[cfg(feature = "jit")]
mod code;
#[cfg(feature = "jit")]
mod lanes;
#[cfg(feature = "jit")]
mod lower;
#[cfg(feature = "jit")]
mod scalar;
#[cfg(feature = "jit")]
mod step;

#[cfg(feature = "jit")]
pub(crate) use lanes::LaneKernel;
#[cfg(feature = "jit")]
pub(crate) use scalar::ScalarSet;
#[cfg(feature = "jit")]
pub(crate) use step::StepKernel;

/// Which CPU executor runs a `.field` kernel.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Engine {
    /// Native code from Cranelift where the kernel and the host allow it,
    /// the column evaluator otherwise (same bits either way).
    #[default]
    Jit,
    /// The column evaluator, the reference semantics of the IR.
    Eval,
}

impl Engine {
    /// Both engines, the default first.
    pub const ALL: [Engine; 2] = [Engine::Jit, Engine::Eval];

    /// Its name on the command line (`jit`, `eval`).
    pub fn name(self) -> &'static str {
        match self {
            Engine::Jit => "jit",
            Engine::Eval => "eval",
        }
    }
}

impl fmt::Display for Engine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Engine {
    type Err = String;
    fn from_str(s: &str) -> Result<Engine, String> {
        match s {
            "jit" => Ok(Engine::Jit),
            "eval" => Ok(Engine::Eval),
            _ => Err(format!("unknown CPU engine `{s}` (expected jit or eval)")),
        }
    }
}

/// Why a kernel runs on the evaluator rather than as native code.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("kernel `{kernel}` is not compilable to native code: {reason}")]
pub struct NotCompilable {
    /// The kernel.
    pub kernel: String,
    /// What stands in the way.
    pub reason: String,
}

impl NotCompilable {
    #[cfg_attr(not(feature = "jit"), allow(dead_code))]
    pub(crate) fn new(kernel: &str, reason: impl Into<String>) -> NotCompilable {
        NotCompilable {
            kernel: kernel.to_string(),
            reason: reason.into(),
        }
    }
}

/// Whether this build and host can run native code at all (`Err` names why not).
///
/// # Errors
/// A build without the `jit` feature, or a host Cranelift has no backend for.
pub fn available() -> Result<(), NotCompilable> {
    #[cfg(feature = "jit")]
    {
        code::host_isa().map(|_| ())
    }
    #[cfg(not(feature = "jit"))]
    {
        Err(NotCompilable::new(
            "",
            "this build of vgpu-ir has no `jit` feature",
        ))
    }
}

#[cfg(all(test, feature = "jit"))]
mod tests;
