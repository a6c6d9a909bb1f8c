//! The `vgpu` command: run the equivalence demos, benchmarks, ensembles and PTX kernels.

use clap::{Parser, Subcommand};
use std::process::ExitCode;

mod cli;

/// VGPU: a virtual GPU where every kernel is a vector field and every launch
/// integrates one trajectory per thread.
#[derive(Parser)]
#[command(name = "vgpu", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// The subcommands. Each one's implementation lives in `cli/<name>.rs`.
#[derive(Subcommand)]
enum Command {
    /// Benchmarks (programs, never tests): each prints its figure, `--json` for one JSON object.
    #[command(subcommand)]
    Bench(BenchCommand),
}

/// `vgpu bench …` subcommands.
#[derive(Subcommand)]
enum BenchCommand {}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result: Result<ExitCode, vgpu::Error> = match cli.command {
        Command::Bench(b) => match b {},
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}
