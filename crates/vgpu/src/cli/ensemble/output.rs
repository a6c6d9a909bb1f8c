//! The outputs of `vgpu ensemble`: the endpoint states and flux outputs of a
//! fixed-step run, the states, `STEM.status.npy` and `STEM.steps.npy` of an
//! adaptive one (each set written whole or not at all), and a slice's parts
//! with the summary lines it adds.

use super::args::{usage, EnsembleArgs};
use crate::cli::split::{run_hash, Figures, Mode, Split};
use ndarray::{Array1, Array2, ArrayView2};
use ndarray_npy::write_npy;
use std::path::PathBuf;
use vgpu::ir::Buffer;
use vgpu::output::OutputSet;
use vgpu::shard::{role_path, sidecar_path, OutputMeta, Part, PartData, ShardMeta};

/// Writes the endpoint states (`out`, an (n, dim) array) and each flux output
/// (`STEM.NAME.npy`) whole or not at all: under temporary names first, renamed
/// together once all are written ([`OutputSet`]).
pub(super) fn write_outputs(
    out: &std::path::Path,
    n: usize,
    dim: usize,
    states: &Buffer,
    fluxes: &[(String, Buffer)],
) -> Result<(), vgpu::Error> {
    let mut set = OutputSet::new();
    set.write(out, |tmp| {
        // Straight from the results: no copy, no conversion.
        match states {
            Buffer::F64(v) => write_npy(
                tmp,
                &ArrayView2::from_shape((n, dim), &v[..]).map_err(|e| e.to_string())?,
            ),
            Buffer::F32(v) => write_npy(
                tmp,
                &ArrayView2::from_shape((n, dim), &v[..]).map_err(|e| e.to_string())?,
            ),
            other => write_npy(
                tmp,
                &Array2::from_shape_vec((n, dim), to_f32(other)).map_err(|e| e.to_string())?,
            ),
        }
        .map_err(|e| e.to_string())
    })?;
    let stem = out.with_extension("");
    for (name, b) in fluxes {
        let path = PathBuf::from(format!("{}.{name}.npy", stem.display()));
        set.write(&path, |tmp| {
            match b {
                Buffer::F32(v) => write_npy(tmp, &Array1::from(v.to_vec())),
                Buffer::F64(v) => write_npy(tmp, &Array1::from(v.to_vec())),
                Buffer::I32(v) => write_npy(tmp, &Array1::from(v.to_vec())),
                Buffer::U32(v) => write_npy(tmp, &Array1::from(v.to_vec())),
            }
            .map_err(|e| e.to_string())
        })?;
    }
    set.commit()
}

/// The endpoint states of a slice as its `out` part.
pub(super) fn states_part(states: &Buffer, dim: usize) -> Part {
    let data = match states {
        Buffer::F64(v) => PartData::F64(v.to_vec()),
        other => PartData::F32(to_f32(other)),
    };
    Part {
        role: "out".into(),
        data,
        row: vec![dim],
    }
}

/// The adaptive outputs of a slice: `out`, `status`, `steps` parts.
pub(super) fn adaptive_parts(o: &vgpu::ir::adaptive::AdaptiveOutput) -> Vec<Part> {
    let (k, d) = (o.saveat.len(), o.dim);
    let (values, row) = if k > 0 {
        (&o.saved, vec![k, d])
    } else {
        (&o.end, vec![d])
    };
    let mut out = states_part(values, d);
    out.row = row;
    vec![
        out,
        Part {
            role: "status".into(),
            data: PartData::U8(o.stats.iter().map(|s| s.status.code()).collect()),
            row: vec![],
        },
        Part {
            role: "steps".into(),
            data: PartData::U64(
                o.stats
                    .iter()
                    .flat_map(|s| [s.accepted, s.rejected])
                    .collect(),
            ),
            row: vec![2],
        },
    ]
}

/// Writes a slice's parts ([`write_slice`]) and prints what the summary
/// adds for it; `Ok(false)`: this process prints no summary (MPI ranks but 0).
pub(super) fn finish_split(
    s: &Split,
    a: &EnsembleArgs,
    field: &str,
    parts: &[Part],
    fig: Figures,
    json: &mut serde_json::Value,
) -> Result<bool, vgpu::Error> {
    let hash = run_hash(a)?;
    let Some(extra) = write_slice(s, a, field, &hash, parts, &fig)? else {
        return Ok(false);
    };
    if let (Some(obj), Some(more)) = (json.as_object_mut(), extra.as_object()) {
        obj.extend(more.clone());
    }
    if !a.json {
        if let Some(ranks) = extra.get("ranks").and_then(|r| r.as_array()) {
            println!(
                "MPI: {} ranks, {} trajectories; slowest rank {:.6} s",
                ranks.len(),
                s.total,
                extra["rank_seconds_max"].as_f64().unwrap_or(0.0)
            );
        } else {
            println!(
                "{}: run hash {hash}, metadata {}",
                s.name(),
                extra["metadata"].as_str().unwrap_or("")
            );
        }
    }
    Ok(true)
}

/// Writes this slice's outputs: the shard files and sidecar, or (MPI) its
/// rows of the one output. Returns the JSON fields to add to the
/// summary, or `None` where this process prints nothing (ranks other
/// than 0).
fn write_slice(
    s: &Split,
    a: &EnsembleArgs,
    field: &str,
    hash: &str,
    parts: &[Part],
    fig: &Figures,
) -> Result<Option<serde_json::Value>, vgpu::Error> {
    let out = a.out.as_ref().ok_or_else(|| usage("--out is required"))?;
    match &s.mode {
        Mode::Files => {
            let meta = ShardMeta {
                version: env!("CARGO_PKG_VERSION").into(),
                run_hash: hash.into(),
                field: field.into(),
                backend: fig.backend.clone(),
                shard: s.spec,
                range: (s.lo, s.hi),
                total: s.total,
                outputs: parts
                    .iter()
                    .map(|p| OutputMeta {
                        role: p.role.clone(),
                        file: file_name(&role_path(out, &p.role)),
                        dtype: p.dtype(),
                        shape: p.shape(s.total),
                    })
                    .collect(),
            };
            let mut set = OutputSet::new();
            for p in parts {
                set.write(&role_path(out, &p.role), |tmp| p.write_npy(tmp))?;
            }
            set.write(&sidecar_path(out), |tmp| {
                std::fs::write(tmp, meta.to_json()).map_err(|e| e.to_string())
            })?;
            set.commit()?;
            Ok(Some(serde_json::json!({
                "shard": [s.spec.index, s.spec.count],
                "range": [s.lo, s.hi], "total": s.total, "run_hash": hash,
                "metadata": sidecar_path(out).display().to_string(),
            })))
        }
        #[cfg(feature = "mpi")]
        Mode::Mpi(w) => crate::cli::mpi_write::write(w, s, out, parts, fig),
    }
}

fn file_name(p: &std::path::Path) -> String {
    p.file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The adaptive outputs: `out` ((N, D), or (N, K, D) with save times) and
/// beside it `STEM.status.npy` ((N,) u8 status codes) and `STEM.steps.npy`
/// ((N, 2) u64: accepted, rejected), renamed together ([`OutputSet`]).
pub(super) fn write_adaptive_outputs(
    out: &std::path::Path,
    o: &vgpu::ir::adaptive::AdaptiveOutput,
) -> Result<(), vgpu::Error> {
    let (n, k, d) = (o.n, o.saveat.len(), o.dim);
    let (values, shape) = if k > 0 {
        (&o.saved, vec![n, k, d])
    } else {
        (&o.end, vec![n, d])
    };
    let mut set = OutputSet::new();
    set.write(out, |tmp| {
        let shape = ndarray::IxDyn(&shape);
        match values {
            Buffer::F64(v) => write_npy(
                tmp,
                &ndarray::ArrayD::from_shape_vec(shape, v.to_vec()).map_err(|e| e.to_string())?,
            ),
            other => write_npy(
                tmp,
                &ndarray::ArrayD::from_shape_vec(shape, to_f32(other))
                    .map_err(|e| e.to_string())?,
            ),
        }
        .map_err(|e| e.to_string())
    })?;
    let stem = out.with_extension("");
    let beside = |what: &str| PathBuf::from(format!("{}.{what}.npy", stem.display()));
    set.write(&beside("status"), |tmp| {
        let codes: Array1<u8> = o.stats.iter().map(|s| s.status.code()).collect();
        write_npy(tmp, &codes).map_err(|e| e.to_string())
    })?;
    set.write(&beside("steps"), |tmp| {
        let steps: Vec<u64> = o
            .stats
            .iter()
            .flat_map(|s| [s.accepted, s.rejected])
            .collect();
        let a = Array2::from_shape_vec((n, 2), steps).map_err(|e| e.to_string())?;
        write_npy(tmp, &a).map_err(|e| e.to_string())
    })?;
    set.commit()
}

/// The values of a non-f64 result buffer as the f32 an output file holds.
fn to_f32(b: &Buffer) -> Vec<f32> {
    (0..b.len()).map(|i| b.get(i).as_f64() as f32).collect()
}

/// The summary's note for a run the dispatcher moved to the CPU (empty for
/// none).
pub(super) fn fallback_note(fallback: Option<&str>) -> String {
    fallback.map_or(String::new(), |why| format!("on the CPU: {why}"))
}

/// The summary's backend line: where the run went, on which adapter, and the
/// fallback note if any.
pub(super) fn print_backend(backend: &str, adapter: &str, note: &str) {
    println!(
        "backend: {backend} | adapter: {adapter}{}",
        if note.is_empty() {
            String::new()
        } else {
            format!(" | {note}")
        }
    );
}
