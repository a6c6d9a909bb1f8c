//! `VGPU.ptx_case`: a PTX case (real nvcc PTX, inputs, expected outputs) run on
//! VGPU's SIMT field executor, its report as Python values.

use crate::errors::{limit_error, no_panic, vgpu_error};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use std::path::Path;
use vgpu::ptx::{run_case_on, CaseOptions, CaseReport, ExecOptions, PtxError};
use vgpu::ptx_gpu::PtxRunner;

/// Runs the case whose `case.json` is `path` (or the folder holding it) on
/// `backend` (`cpu`, the default, `gpu` or `auto`); `initcheck`: with the
/// global-memory initcheck on (the GPU's checked kernel too); `racecheck`: the GPU
/// kernel's shared-memory race check (the interpreter's runs with `check`).
pub(crate) fn ptx_case<'py>(
    py: Python<'py>,
    path: &str,
    check: bool,
    parallel: bool,
    initcheck: bool,
    backend: Option<&str>,
    racecheck: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let backend = vgpu::resolve_backend(Some(backend.unwrap_or("cpu")))
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    let p = Path::new(path);
    let json = if p.is_dir() {
        p.join("case.json")
    } else {
        p.to_path_buf()
    };
    let opts = ExecOptions {
        check,
        parallel,
        initcheck,
        ..ExecOptions::default()
    };
    let mut runner = PtxRunner::new(backend, true);
    runner.racecheck = racecheck;
    let report = py
        .detach(|| {
            no_panic("ptx_case", || {
                run_case_on(
                    &json,
                    &opts,
                    &CaseOptions::default(),
                    &mut |m, e, g, a, b, o| runner.launch(m, e, g, a, b, o),
                )
            })
        })
        .map_err(vgpu_error)?
        .map_err(ptx_error)?;
    let d = report_dict(py, &report)?;
    d.set_item("backend", backend.to_string())?;
    d.set_item("gpu_launches", runner.gpu_launches)?;
    d.set_item("fallbacks", runner.fallbacks.clone())?;
    Ok(d)
}

/// A PTX error as a Python exception: a size beyond the memory limit as
/// `MemoryError`, beyond another limit (threads) or a launch the case
/// describes wrongly (geometry, arguments, traced thread) as `ValueError`,
/// everything else (parse errors, faults, files) as `VGPUError`. Sizes are
/// refused before anything is allocated, so a huge grid or buffer never
/// aborts the interpreter.
fn ptx_error(e: PtxError) -> PyErr {
    match e {
        PtxError::Limit {
            quantity,
            need,
            limit,
            flag,
        } => limit_error(&quantity, &need, &limit, flag),
        e @ PtxError::Launch { .. } => PyValueError::new_err(e.to_string()),
        other => vgpu_error(other),
    }
}

fn report_dict<'py>(py: Python<'py>, r: &CaseReport) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("path", r.path.display().to_string())?;
    d.set_item("entry", &r.entry)?;
    d.set_item("passed", r.passed())?;
    d.set_item("error", r.error.as_ref().map(|e| e.to_string()))?;
    d.set_item("expect_error", r.expect_error.clone())?;
    let buffers = PyList::empty(py);
    for b in &r.buffers {
        let bd = PyDict::new(py);
        bd.set_item("name", &b.name)?;
        bd.set_item("dtype", b.dtype.name())?;
        bd.set_item("len", b.len)?;
        bd.set_item("mismatches", b.mismatches)?;
        bd.set_item("max_ulp", b.max_ulp)?;
        bd.set_item("max_abs", b.max_abs)?;
        bd.set_item("first_mismatch", b.first_mismatch)?;
        bd.set_item("passed", b.passed())?;
        buffers.append(bd)?;
    }
    d.set_item("buffers", buffers)?;
    d.set_item(
        "thread_instructions",
        r.stats.as_ref().map(|s| s.thread_instructions),
    )?;
    Ok(d)
}
