//! `vgpu.merge(shards, out)`: joins the outputs of `vgpu ensemble --shard I/R`
//! runs into the bytes of one run, through the facade's `vgpu::shard::merge`
//! (the function `vgpu merge` runs).

use crate::errors::{facade_error, no_panic, vgpu_error};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::path::PathBuf;

/// Merges the shards (each one's `--out` file or `STEM.shard.json`, any
/// order) into `out` and its companions; returns `{"trajectories", "shards",
/// "files": [(path, shape), …]}`. Every check runs before anything is
/// written; a refused merge (shards of different runs, a duplicate, a missing
/// shard, a data file that does not match its metadata) raises `ValueError`
/// and leaves `out` as it was.
#[pyfunction]
pub(crate) fn merge<'py>(
    py: Python<'py>,
    shards: Vec<PathBuf>,
    out: PathBuf,
) -> PyResult<Bound<'py, PyDict>> {
    let r = no_panic("merge", || vgpu::shard::merge(&shards, &out))
        .map_err(vgpu_error)?
        .map_err(facade_error)?;
    let d = PyDict::new(py);
    d.set_item("trajectories", r.total)?;
    d.set_item("shards", r.shards)?;
    let files: Vec<(String, Vec<usize>)> = r
        .files
        .iter()
        .map(|(p, s)| (p.display().to_string(), s.clone()))
        .collect();
    d.set_item("files", files)?;
    Ok(d)
}
