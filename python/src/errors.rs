//! Python exceptions: `vgpu.VGPUError`, and the guard that turns Rust panics into it.

use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyMemoryError, PyValueError};
use pyo3::{PyErr, PyResult};
use std::panic::{catch_unwind, AssertUnwindSafe};
use vgpu::GpuError;

create_exception!(
    vgpu,
    VGPUError,
    PyException,
    "Any VGPU failure that is not a bad shape or dtype: a .field or PTX parse error \
     (its message names file:line:col), a runtime fault, no GPU when one was required. \
     The message is the Rust error's."
);

/// A `VGPUError` carrying `err`'s message.
pub(crate) fn vgpu_error(err: impl std::fmt::Display) -> PyErr {
    VGPUError::new_err(err.to_string())
}

/// A facade error as a Python exception: problems with the caller's input
/// (usage, shapes, arguments, step limits) as `ValueError`, memory beyond what
/// the machine has as `MemoryError`, everything else as `VGPUError`.
/// The message is the Rust error's, which names the place.
pub(crate) fn facade_error(err: vgpu::Error) -> PyErr {
    match err {
        vgpu::Error::Usage(m) => PyValueError::new_err(m),
        // Python has no --max-* options: the message names the need and the limit.
        vgpu::Error::Limit {
            quantity,
            need,
            limit,
            flag,
        } => limit_error(&quantity, &need, &limit, flag),
        vgpu::Error::Gpu(e) => gpu_err(e),
        other => vgpu_error(other),
    }
}

/// A size refused before allocation as a Python exception: beyond the memory
/// limit a `MemoryError`, beyond another limit (threads, steps) a `ValueError`.
/// Python has no `--max-*` options, so the message names the need and the
/// limit without the option.
pub(crate) fn limit_error(quantity: &str, need: &str, limit: &str, flag: &str) -> PyErr {
    let m = format!("{quantity} needs {need}, over the limit of {limit}");
    if flag == "--max-memory" {
        PyMemoryError::new_err(m)
    } else {
        PyValueError::new_err(m)
    }
}

/// A `GpuError` as a Python exception: bad shapes and backend names are the
/// caller's `ValueError`, everything else a `VGPUError`.
pub(crate) fn gpu_err(e: GpuError) -> PyErr {
    match e {
        GpuError::ShapeMismatch { .. }
        | GpuError::EmptyMatrix { .. }
        | GpuError::DataLength { .. }
        | GpuError::FusedShape { .. }
        | GpuError::BadBackendEnv { .. } => PyValueError::new_err(e.to_string()),
        other => vgpu_error(other),
    }
}

/// Runs `f`, turning a panic into an `Err` with the panic's message, so that no
/// panic crosses into Python (a panic is a VGPU bug; the message says so).
pub(crate) fn no_panic<T>(what: &str, f: impl FnOnce() -> T) -> Result<T, String> {
    catch_unwind(AssertUnwindSafe(f)).map_err(|payload| {
        let msg = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".to_string());
        format!("{what}: internal error (a VGPU bug, please report it): {msg}")
    })
}

/// Refuses, before anything is allocated, a result of `rows × cols` float32
/// elements for `op` beyond the memory the system reports available.
pub(crate) fn check_result_size(op: &str, rows: usize, cols: usize) -> PyResult<()> {
    let limits = vgpu::Limits::default();
    let what = format!("{op}: the result ({rows} × {cols} float32)");
    limits
        .bytes(&what, rows as u64, (cols as u64).saturating_mul(4))
        .and_then(|b| limits.memory(&what, b))
        .map_err(facade_error)
}
