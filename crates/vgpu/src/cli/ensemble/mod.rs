//! `vgpu ensemble FILE.field …`: integrate a `.field` kernel over N trajectories
//! on the CPU or a GPU and write the endpoint states as an (N, state) `.npy`.
//!
//! The options and their checks are in `args`, what is read from them and
//! from files in `input`, the two kinds of run in `fixed` and `adaptive`, the
//! files they write in `output` and the progress bar in `progress`.

mod adaptive;
pub(crate) mod args;
mod fixed;
mod input;
mod output;
mod progress;

pub(crate) use args::EnsembleArgs;

use super::split::{run_hash, Split};
use std::process::ExitCode;
use std::time::Instant;
use vgpu::dispatch::MethodChoice;

/// Runs `vgpu ensemble`: the whole run, or this process's slice of it
/// (`--shard`, or a rank of `mpirun` with the `mpi` feature).
pub(crate) fn run(a: EnsembleArgs) -> Result<ExitCode, vgpu::Error> {
    let split = Split::plan(&a)?;
    match &split {
        Some(s) => s.guard(|| {
            s.agree(&run_hash(&a)?)?;
            run_part(a, Some(s))
        }),
        None => run_part(a, None),
    }
}

/// `vgpu ensemble`, whole or one slice: fixed-step or adaptive by `--method`.
fn run_part(a: EnsembleArgs, split: Option<&Split>) -> Result<ExitCode, vgpu::Error> {
    let wall = Instant::now();
    let choice =
        MethodChoice::parse(&a.method, "--method").map_err(|e| args::usage(e.to_string()))?;
    match choice {
        MethodChoice::Adaptive(method) => adaptive::run(a, method, split),
        MethodChoice::Fixed(method) => fixed::run(a, method, split, wall),
    }
}
