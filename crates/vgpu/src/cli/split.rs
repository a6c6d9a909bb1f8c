//! `vgpu ensemble --shard I/R` (one slice, its outputs and the sidecar
//! `STEM.shard.json`, for job arrays; joined by `vgpu merge`) and, with the
//! `mpi` feature under `mpirun -n R`, one slice per rank written collectively
//! into one `.npy` (each rank's rows at their byte offset after the header):
//! the same bytes as one process. The slices and sidecars are `vgpu::shard`'s;
//! `ensemble/output.rs` writes a slice's files (`mpi_write.rs` under MPI).

use super::ensemble::args::EnsembleArgs;
use std::path::PathBuf;
use vgpu::dispatch::MethodChoice;
use vgpu::ir::Slice;
use vgpu::shard::{RunHash, ShardSpec};
use vgpu::Error;

fn usage(m: impl Into<String>) -> Error {
    Error::Usage(format!("ensemble: {}", m.into()))
}

/// How the slices are run: one per process of a job array, or the ranks of
/// an MPI world.
#[derive(Debug)]
pub(crate) enum Mode {
    /// One slice per process, written as shard files with a sidecar.
    Files,
    /// One slice per rank, written collectively into one output.
    #[cfg(feature = "mpi")]
    Mpi(vgpu::mpi_world::World),
}

/// This process's slice of the run.
#[derive(Debug)]
pub(crate) struct Split {
    /// Shard I of R (the rank of R under MPI).
    pub(crate) spec: ShardSpec,
    /// Its trajectories `[lo, hi)` of `total`.
    pub(crate) lo: usize,
    pub(crate) hi: usize,
    pub(crate) total: usize,
    /// How the slices are run (and their outputs written).
    pub(crate) mode: Mode,
}

/// What one slice measured, for the summary and `--json`.
#[derive(Debug, Clone)]
pub(crate) struct Figures {
    /// Seconds of the slice's integration (summed over ranks under MPI).
    #[cfg_attr(not(feature = "mpi"), allow(dead_code))]
    pub(crate) seconds: f64,
    pub(crate) backend: String,
}

impl Split {
    /// The slice of this process: from `--shard`, or from the MPI world when
    /// the `mpi` feature is on and `mpirun` started more than one rank;
    /// `None` for a whole run.
    pub(crate) fn plan(a: &EnsembleArgs) -> Result<Option<Split>, Error> {
        // Fixed-step slices are whole blocks (a block's lanes share `bid`, its
        // shared sub-fields); an adaptive trajectory is a block of one.
        let adaptive = MethodChoice::parse(&a.method, "--method").is_ok_and(|m| m.is_adaptive());
        let unit = if adaptive { 1 } else { a.block.max(1) as usize };
        let (spec, mode) = match &a.shard {
            Some(s) => (ShardSpec::parse(s)?, Mode::Files),
            None => match detect_world() {
                Some((spec, mode)) => (spec, mode),
                None => return Ok(None),
            },
        };
        if a.n == 0 {
            return Err(usage("--n 0: nothing to integrate"));
        }
        if a.out.is_none() {
            return Err(usage(format!(
                "{}: a slice needs --out (its rows are written there{})",
                spec_name(&spec, &mode),
                if matches!(mode, Mode::Files) {
                    ", with STEM.shard.json for `vgpu merge`"
                } else {
                    ""
                }
            )));
        }
        let flag = format!("--shard {}/{}", spec.index, spec.count);
        let (lo, hi) = spec.range(a.n, unit).map_err(|e| match e {
            Error::Usage(m) => Error::Usage(m.replace(&flag, &spec_name(&spec, &mode))),
            e => e,
        })?;
        Ok(Some(Split {
            spec,
            lo,
            hi,
            total: a.n,
            mode,
        }))
    }

    /// Trajectories of this slice.
    pub(crate) fn n(&self) -> usize {
        self.hi - self.lo
    }

    /// The launch's [`Slice`].
    pub(crate) fn slice(&self) -> Slice {
        Slice {
            first: self.lo,
            total: self.total,
        }
    }

    /// `shard I/R` or `rank I of R`, with the trajectories.
    pub(crate) fn name(&self) -> String {
        format!(
            "{} (trajectories {}..{} of {})",
            spec_name(&self.spec, &self.mode),
            self.lo,
            self.hi,
            self.total
        )
    }

    /// Runs `f`; under MPI a failure is reported naming this rank's slice and
    /// the whole job is aborted (non-zero exit, every rank stopped; no output
    /// file exists yet at that point, or its temporary is removed first). A
    /// failed `--shard` notes its slice and that it can be rerun alone.
    pub(crate) fn guard<R>(&self, f: impl FnOnce() -> Result<R, Error>) -> Result<R, Error> {
        let r = f();
        #[cfg(feature = "mpi")]
        if let (Mode::Mpi(w), Err(e)) = (&self.mode, &r) {
            eprintln!("error: {}: {e}", self.name());
            w.abort(2);
        }
        if r.is_err() && matches!(self.mode, Mode::Files) {
            eprintln!(
                "note: {} failed and wrote nothing: rerun it alone, then `vgpu merge` the shards",
                self.name()
            );
        }
        r
    }

    /// Checks that every rank runs the same field and options (MPI; a
    /// job array's shards are checked by `vgpu merge`).
    pub(crate) fn agree(&self, hash: &str) -> Result<(), Error> {
        #[cfg(feature = "mpi")]
        if let Mode::Mpi(w) = &self.mode {
            let mine = u64::from_str_radix(hash, 16).unwrap_or(0);
            let all = w.all_gather(mine);
            let differ: Vec<usize> = (0..all.len()).filter(|&r| all[r] != all[0]).collect();
            if !differ.is_empty() {
                return Err(usage(format!(
                    "MPI ranks disagree on the field or options: rank(s) {differ:?} hash differently from rank 0 \
                     ({:016x}); every rank must get the same command and files",
                    all[0]
                )));
            }
        }
        let _ = hash;
        Ok(())
    }
}

fn spec_name(spec: &ShardSpec, mode: &Mode) -> String {
    match mode {
        Mode::Files => format!("--shard {}/{}", spec.index, spec.count),
        #[cfg(feature = "mpi")]
        Mode::Mpi(_) => format!("rank {} of {}", spec.index, spec.count),
    }
}

#[cfg(feature = "mpi")]
fn detect_world() -> Option<(ShardSpec, Mode)> {
    let w = vgpu::mpi_world::World::detect()?;
    let spec = ShardSpec {
        index: w.rank(),
        count: w.size(),
    };
    Some((spec, Mode::Mpi(w)))
}

#[cfg(not(feature = "mpi"))]
fn detect_world() -> Option<(ShardSpec, Mode)> {
    if std::env::var_os("OMPI_COMM_WORLD_SIZE").is_some_and(|v| v != "1") {
        eprintln!(
            "note: running under mpirun, but this vgpu was built without the `mpi` feature: \
             every rank runs the whole ensemble (cargo build --features mpi)"
        );
    }
    None
}

/// The run hash: the field's source, every `.npy` input's contents, and
/// every option that affects the result (all of `vgpu ensemble`'s options
/// but where the outputs go, how they are reported, the threads and the
/// resource limits, which change no bit of the result).
pub(crate) fn run_hash(a: &EnsembleArgs) -> Result<String, Error> {
    let mut h = RunHash::new();
    h.bytes(b"vgpu ensemble");
    h.file(&a.file)?;
    let mut files: Vec<PathBuf> = a
        .params
        .iter()
        .filter_map(|p| p.split_once('=').map(|(_, v)| v))
        .filter(|v| v.ends_with(".npy"))
        .map(PathBuf::from)
        .collect();
    files.extend(a.adaptive.u0.iter().cloned());
    files.extend(a.adaptive.tspan.iter().cloned());
    if let Some(s) = a.adaptive.saveat.as_ref().filter(|s| s.ends_with(".npy")) {
        files.push(PathBuf::from(s));
    }
    for f in &files {
        h.file(f)?;
    }
    let mut opts = a.clone();
    opts.file = PathBuf::new();
    opts.out = None;
    opts.shard = None;
    opts.json = false;
    opts.progress = String::new();
    opts.threads = 0;
    opts.backend = None;
    opts.kernel_time = None;
    opts.max_memory = None;
    opts.max_steps = 0;
    h.bytes(format!("{opts:?}").as_bytes());
    Ok(h.hex())
}
