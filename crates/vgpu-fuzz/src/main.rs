//! `vgpu-fuzz`: mutation fuzzing of VGPU's front ends on stable Rust
//! (docs/FUZZING.md).
//!
//! ```sh
//! vgpu-fuzz run --target field --iterations 2000 --seconds 30  # CI's bounded run
//! vgpu-fuzz run --target ptx --seconds 36000 --jobs 2    # hours
//! vgpu-fuzz show --target npy --seed 1 --iteration 42     # regenerate one input
//! ```
#![deny(missing_docs)]

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use vgpu_fuzz::{corpus, driver, Corpus, RunConfig, Target};

#[derive(Parser)]
#[command(
    name = "vgpu-fuzz",
    about = "Mutation fuzzing of VGPU's front ends (docs/FUZZING.md)"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Fuzz one target; exits 1 when a new finding is saved.
    Run {
        /// field, ptx, case-json or npy.
        #[arg(long)]
        target: Target,
        /// Stop after this many inputs.
        #[arg(long)]
        iterations: Option<u64>,
        /// Stop after this many seconds.
        #[arg(long)]
        seconds: Option<f64>,
        /// The run's seed (input i is a function of seed and i).
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Child processes at once.
        #[arg(long, default_value_t = 1)]
        jobs: usize,
        /// Inputs per child process.
        #[arg(long, default_value_t = 5000)]
        batch: u64,
        /// Stack of the thread running the inputs, KiB (2048: a spawned
        /// thread's default, less than a main thread's 8 MiB).
        #[arg(long, default_value_t = 2048)]
        stack_kib: usize,
        /// An input running longer is a hang.
        #[arg(long, default_value_t = 30.0)]
        hang_secs: f64,
        /// The repository root (seeds; default: the nearest one above the
        /// current directory, else above this executable).
        #[arg(long)]
        root: Option<PathBuf>,
        /// The folder holding regressions/ and known/ (default:
        /// ROOT/crates/vgpu-fuzz).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Writes input ITERATION of the run with SEED to stdout.
    Show {
        /// The target.
        #[arg(long)]
        target: Target,
        /// The run's seed.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// The input's iteration.
        #[arg(long)]
        iteration: u64,
        /// The repository root (seeds).
        #[arg(long)]
        root: Option<PathBuf>,
    },
    /// Runs saved inputs in this process (a crash ends it, with the
    /// runtime's message); exits 1 when one panics or hits a bug.
    Exec {
        /// The target.
        #[arg(long)]
        target: Target,
        /// Stack of the thread running the inputs, KiB.
        #[arg(long, default_value_t = 2048)]
        stack_kib: usize,
        /// The inputs.
        files: Vec<PathBuf>,
    },
    /// Internal: runs a batch of inputs in this process (the driver's child).
    #[command(hide = true)]
    Batch {
        #[arg(long)]
        target: Target,
        #[arg(long)]
        seed: u64,
        #[arg(long)]
        start: u64,
        #[arg(long)]
        count: u64,
        #[arg(long, default_value_t = 0)]
        deadline_ms: u64,
        #[arg(long, default_value_t = 2048)]
        stack_kib: usize,
        #[arg(long)]
        root: PathBuf,
    },
}

fn main() -> ExitCode {
    match real_main() {
        Ok(code) => code,
        Err(e) => {
            eprintln!("vgpu-fuzz: {e}");
            ExitCode::from(2)
        }
    }
}

fn real_main() -> Result<ExitCode, vgpu_fuzz::FuzzError> {
    match Cli::parse().cmd {
        Cmd::Run {
            target,
            iterations,
            seconds,
            seed,
            jobs,
            batch,
            stack_kib,
            hang_secs,
            root,
            out,
        } => {
            let root = match root {
                Some(r) => r,
                None => corpus::find_root()?,
            };
            let exe = std::env::current_exe().map_err(|e| vgpu_fuzz::FuzzError::Io {
                path: "the current executable".into(),
                source: e,
            })?;
            let cfg = RunConfig {
                target,
                seed,
                iterations: iterations.or(if seconds.is_none() {
                    Some(100_000)
                } else {
                    None
                }),
                seconds,
                jobs,
                batch: batch.max(1),
                out: out.unwrap_or_else(|| root.join("crates").join("vgpu-fuzz")),
                root,
                stack_kib,
                hang_secs,
                exe,
            };
            eprintln!(
                "vgpu-fuzz: target {target}, seed {seed}, {} job(s), {}",
                cfg.jobs,
                match (cfg.iterations, cfg.seconds) {
                    (Some(n), Some(s)) => format!("{n} inputs or {s} s"),
                    (Some(n), None) => format!("{n} inputs"),
                    (None, Some(s)) => format!("{s} s"),
                    (None, None) => "no limit".into(),
                }
            );
            let s = driver::run(&cfg)?;
            let secs = s.elapsed.as_secs_f64();
            println!(
                "target {target}: {} executions in {secs:.1} s ({:.0}/s); {} accepted, {} rejected cleanly; {} finding(s), {} new",
                s.executions,
                s.executions as f64 / secs.max(1e-9),
                s.accepted,
                s.rejected,
                s.findings.len(),
                s.new_findings()
            );
            for f in &s.findings {
                println!(
                    "  {} at iteration {}: {}{}",
                    f.finding.kind.name(),
                    f.iteration,
                    f.finding.message.lines().next().unwrap_or(""),
                    f.path
                        .as_ref()
                        .map_or(" (known)".to_string(), |p| format!(" -> {}", p.display()))
                );
            }
            Ok(if s.new_findings() > 0 {
                ExitCode::from(1)
            } else {
                ExitCode::SUCCESS
            })
        }
        Cmd::Show {
            target,
            seed,
            iteration,
            root,
        } => {
            let root = match root {
                Some(r) => r,
                None => corpus::find_root()?,
            };
            let c = Corpus::load(target, &root)?;
            let input = vgpu_fuzz::generate(&c, seed, iteration);
            let mut out = std::io::stdout().lock();
            out.write_all(&input)
                .and_then(|()| out.flush())
                .map_err(|e| vgpu_fuzz::FuzzError::Io {
                    path: "stdout".into(),
                    source: e,
                })?;
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Exec {
            target,
            stack_kib,
            files,
        } => {
            let bad = vgpu_fuzz::exec_files(target, &files, stack_kib)?;
            Ok(if bad > 0 {
                ExitCode::from(1)
            } else {
                ExitCode::SUCCESS
            })
        }
        Cmd::Batch {
            target,
            seed,
            start,
            count,
            deadline_ms,
            stack_kib,
            root,
        } => {
            let c = Corpus::load(target, &root)?;
            let mut out = std::io::stdout();
            driver::run_batch(&c, seed, start, count, deadline_ms, stack_kib, &mut out)?;
            Ok(ExitCode::SUCCESS)
        }
    }
}
