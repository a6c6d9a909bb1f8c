//! `vgpu._vgpu`: the compiled half of VGPU's Python package.
//!
//! The pure-Python package `vgpu` (python/vgpu/__init__.py) wraps this module: it
//! converts array-likes to C-contiguous float32 numpy arrays and documents the API.
//! This module checks everything again itself, so calling it directly is safe too:
//! bad shapes and dtypes raise `ValueError`, every other failure `vgpu.VGPUError`
//! carrying the Rust error's message, and no Rust panic reaches the interpreter.
#![deny(missing_docs)]

mod arrays;
mod cache;
mod ensemble;
mod errors;
mod merge;
mod ptx;
mod vgpu;

use pyo3::prelude::*;

/// The module `vgpu._vgpu`.
#[pymodule]
fn _vgpu(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("VGPUError", m.py().get_type::<errors::VGPUError>())?;
    m.add_class::<cache::PyVgpuCache>()?;
    m.add_class::<cache::PyCacheStats>()?;
    m.add_class::<vgpu::PyVgpu>()?;
    m.add_function(wrap_pyfunction!(merge::merge, m)?)?;
    Ok(())
}
