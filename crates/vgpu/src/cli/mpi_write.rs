//! The collective write of an MPI ensemble: rank 0 creates each output under
//! a temporary name with the header one process writes (zeroed data), every
//! rank writes its rows at `header + lo · row bytes`, and rank 0 renames the
//! files once every rank has written, or removes them if any failed. The rows
//! go through one collective MPI-IO write per output (`vgpu::mpi_io`:
//! `MPI_File_open`, `MPI_File_write_at_all`, `MPI_File_close`).

use super::split::{Figures, Split};
use std::path::{Path, PathBuf};
use vgpu::mpi_io::{self, MpiFile};
use vgpu::mpi_world::World;
use vgpu::shard::{role_path, Part};
use vgpu::Error;

fn io(path: &Path, e: impl std::fmt::Display) -> String {
    format!("{}: {e}", path.display())
}

/// Writes `parts` (this rank's rows) into the outputs beside `out`; the
/// summary's `ranks` figures on rank 0.
pub(super) fn write(
    w: &World,
    split: &Split,
    out: &Path,
    parts: &[Part],
    fig: &Figures,
) -> Result<Option<serde_json::Value>, Error> {
    let rank = w.rank();
    // One temporary name per output, the same on every rank (rank 0's pid).
    let pid = w.all_gather(std::process::id() as u64)[0];
    let names: Vec<(PathBuf, PathBuf)> = parts
        .iter()
        .map(|p| {
            let dest = role_path(out, &p.role);
            let name = dest
                .file_name()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            let tmp = dest.with_file_name(format!(".{name}.vgpu-mpi-partial-{pid}"));
            (tmp, dest)
        })
        .collect();
    let remove = || {
        for (tmp, _) in &names {
            let _ = std::fs::remove_file(tmp);
        }
    };
    // Rank 0: the headers; everyone learns each data offset from it.
    let mut offsets = Vec::with_capacity(parts.len());
    let mut created: Result<(), String> = Ok(());
    for (p, (tmp, dest)) in parts.iter().zip(&names) {
        let mut off = 0u64;
        if rank == 0 && created.is_ok() {
            created = if dest.is_dir() {
                Err(io(dest, "is a directory; nothing was written"))
            } else {
                std::fs::File::create(tmp)
                    .map_err(|e| io(tmp, e))
                    .and_then(|f| p.write_header(&f, split.total).map_err(|e| io(tmp, e)))
                    .map(|o| off = o)
            };
        }
        offsets.push(w.all_gather(off)[0]);
    }
    let ok = w.all_ok(created.is_ok());
    if !ok[0] {
        remove();
        let why = created.err().unwrap_or_else(|| "see rank 0".into());
        return Err(Error::Usage(format!(
            "MPI write: rank 0 could not create the outputs: {why}"
        )));
    }
    // Every rank: its rows at its offset, one collective MPI-IO write per
    // output (open, write_at_all, close): every rank makes every call, also
    // after a failure of its own, so no collective waits for a missing rank.
    let mut wrote: Result<(), String> = Ok(());
    for ((p, (tmp, _)), off) in parts.iter().zip(&names).zip(&offsets) {
        let bytes = p.le_bytes();
        let rounds = mpi_io::rounds(w, bytes.len());
        let at = off + split.lo as u64 * p.row_bytes();
        let file = MpiFile::open_write(w, tmp);
        let opened = w.all_ok(file.is_ok());
        let mut f = match file {
            Ok(f) if opened.iter().all(|&x| x) => f,
            Ok(f) => {
                // Another rank has no handle, so no collective on this file can
                // complete: it is left to MPI_Abort, which follows.
                std::mem::forget(f);
                let bad: Vec<usize> = (0..opened.len()).filter(|&r| !opened[r]).collect();
                wrote = Err(format!(
                    "{}: MPI_File_open failed on rank(s) {bad:?}",
                    tmp.display()
                ));
                break;
            }
            Err(e) => {
                wrote = Err(e.to_string());
                break;
            }
        };
        let r = f.write_at_all(at, &bytes, rounds);
        let c = f.close();
        if let (Ok(()), Err(e)) = (&wrote, r.and(c)) {
            wrote = Err(e.to_string());
        }
    }
    if let Err(e) = &wrote {
        eprintln!("error: {}: {e}", split.name());
    }
    let ok = w.all_ok(wrote.is_ok());
    if let Some(bad) = ok.iter().position(|&x| !x) {
        if rank == 0 {
            remove();
        }
        let failed: Vec<usize> = (0..ok.len()).filter(|&r| !ok[r]).collect();
        return Err(Error::Usage(format!(
            "MPI write: rank(s) {failed:?} failed to write their rows (first: rank {bad}); no output written"
        )));
    }
    // Figures of every rank, and rank 0 renames.
    let ns = w.all_gather(split.n() as u64);
    let secs = w.all_gather_f64(fig.seconds);
    let gpu = w.all_gather((fig.backend == "gpu") as u64);
    let node = w.node_rank();
    let nodes = w.all_gather(node as u64);
    if rank != 0 {
        return Ok(None);
    }
    for (tmp, dest) in &names {
        std::fs::rename(tmp, dest).map_err(|e| {
            remove();
            Error::Io {
                path: dest.display().to_string(),
                source: e,
            }
        })?;
    }
    let ranks: Vec<serde_json::Value> = (0..ns.len())
        .map(|r| {
            serde_json::json!({"rank": r, "node_rank": nodes[r], "trajectories": ns[r],
                "seconds": secs[r], "backend": if gpu[r] == 1 { "gpu" } else { "cpu" }})
        })
        .collect();
    Ok(Some(serde_json::json!({
        "n": split.total,
        "mpi_ranks": ns.len(),
        "ranks": ranks,
        "trajectories_total": ns.iter().sum::<u64>(),
        "rank_seconds_sum": secs.iter().sum::<f64>(),
        "rank_seconds_max": secs.iter().cloned().fold(0.0, f64::max),
    })))
}
