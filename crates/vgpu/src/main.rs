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
    /// Run the equivalence demos (scale, matmul, relax, reverse, tree-sum, histogram)
    /// against the CUDA-style computation; prints a table, exits non-zero if any fails.
    Demo(cli::demo::DemoArgs),
    /// Integrate a `.field` kernel over N trajectories (CPU or GPU) and write the
    /// endpoint states as an (N, state) .npy.
    Ensemble(cli::ensemble::EnsembleArgs),
    /// Join the outputs of `vgpu ensemble --shard I/R` runs into the bytes of
    /// one run, after checking they are one run's complete set of shards.
    Merge(cli::merge::MergeArgs),
    /// Benchmarks (programs, never tests): each prints its figure, `--json` for one JSON object.
    #[command(subcommand)]
    Bench(BenchCommand),
    /// Run nvcc's PTX on the CPU, checked: `vgpu ptx run CASE.json`, `vgpu ptx run
    /// FILE.ptx --entry … --grid … --block … --arg …`, `vgpu ptx trace …`.
    #[command(subcommand)]
    Ptx(cli::ptx::PtxCommand),
    /// The kernel-cache demo: 200 matmul calls (N=16, N=64, then interleaved), each
    /// checked against the CPU, then the cache's counters.
    CacheDemo,
}

/// `vgpu bench …` subcommands.
#[derive(Subcommand)]
enum BenchCommand {
    /// Lorenz ensemble (f32, 1000 RK4 steps) through the field API, beside the
    /// hand-written Rust + rayon loops; prints traj-steps/s and the ratios.
    Lorenz(cli::bench_lorenz::LorenzArgs),
    /// Lorenz ensemble with Tsit5 (f32, rtol = atol = 1e-6): `.field` through
    /// the adaptive CPU path and a Rust closure through the driver, beside the
    /// hand-written Tsit5 loop; same endpoint bits, ratios to the hand loop.
    Adaptive(cli::bench_adaptive::AdaptiveArgs),
    /// Square f32 matmul, host arrays in and out: first call, cached calls, GFLOP/s.
    Matmul(cli::bench_matmul::MatmulArgs),
    /// PTX emulation throughput (thread-instructions/s) of nvcc's matmul_naive and
    /// lorenz_rk4, beside the same computation as a Rust field.
    Ptx(cli::bench_ptx::PtxBenchArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    // Ctrl-C while outputs are written removes their partial files.
    vgpu::output::remove_pending_on_interrupt();
    let result: Result<ExitCode, vgpu::Error> = match cli.command {
        Command::Demo(args) => cli::demo::run(args),
        Command::Ptx(p) => cli::ptx::run(p),
        Command::Ensemble(args) => cli::ensemble::run(args),
        Command::Merge(args) => cli::merge::run(args),
        Command::Bench(b) => match b {
            BenchCommand::Lorenz(args) => cli::bench_lorenz::run(args),
            BenchCommand::Adaptive(args) => cli::bench_adaptive::run(args),
            BenchCommand::Matmul(args) => cli::bench_matmul::run(args),
            BenchCommand::Ptx(args) => cli::bench_ptx::run(args),
        },
        Command::CacheDemo => cli::cache_demo::run(),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}
