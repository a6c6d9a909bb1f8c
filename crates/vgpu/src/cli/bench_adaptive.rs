//! `vgpu bench adaptive`: the adaptive benchmark of issue 13 as a program.
//! The Lorenz ensemble (`f32`, `ρ = linspace(0, 21, N)`, `u0 = (1, 0, 0)`,
//! `t ∈ [0, 1]`, endpoints) with Tsit5 at `rtol = atol = 1e-6`, three ways in
//! one run, alternating, best of `--repeats`:
//!
//! * `field`: `examples/lorenz.field` through `vgpu ensemble --method
//!   tsit5`'s CPU path (the dispatcher, native whole steps by default);
//! * `closure`: the same field as a Rust closure through the same adaptive
//!   driver (`vgpu_demos::lorenz_tsit5::lorenz_tsit5_driver`);
//! * `hand`: the hand-written Tsit5 loop doing the same operations
//!   (`lorenz_tsit5_reference`), the reference.
//!
//! All three must give the same endpoint bits; a difference is an error.
//! Each is timed as its *kernel* (the call that integrates) and its *whole
//! run* (compile and arguments for `.field`, the kernel, the `(N, 3)` `.npy`
//! written). `--only VARIANT` runs one whole run once, so that the variants
//! can also be timed as whole processes side by side.

use super::bench_lorenz::{field_and_args, io_error, Float, Stages, TempOut};
use clap::Args;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;
use vgpu::demos::lorenz_tsit5::{lorenz_tsit5_driver, lorenz_tsit5_reference, LORENZ_TOL};
use vgpu::dispatch::{AdaptiveJob, Backend, Dispatcher};
use vgpu::field::adaptive::{AdaptiveEnsemble, AdaptiveMethod};
use vgpu::field::Par;
use vgpu::ir::adaptive::AdaptiveRun;
use vgpu::ir::{Buffer, Engine};

/// Options of `vgpu bench adaptive`.
#[derive(Debug, Args)]
pub(crate) struct AdaptiveArgs {
    /// Trajectories (ρ = linspace(0, 21, N)).
    #[arg(long, default_value_t = 65_536)]
    pub n: usize,
    /// Worker threads (0: one per core; 1: the calling thread alone).
    #[arg(long, default_value_t = 0)]
    pub threads: usize,
    /// Rounds; each variant's fastest run counts.
    #[arg(long, default_value_t = 5)]
    pub repeats: usize,
    /// CPU engine of the `.field` variant: jit or eval.
    #[arg(long, default_value = "jit")]
    pub cpu_engine: String,
    /// Print one JSON object instead of the table.
    #[arg(long)]
    pub json: bool,
    /// Run only this variant's whole run, once (field, closure or hand), and
    /// print its stage times: for timing whole processes side by side.
    #[arg(long, value_name = "VARIANT")]
    pub only: Option<String>,
    /// With `--only`: write the endpoints here (default: a temporary file,
    /// removed afterwards).
    #[arg(long)]
    pub out: Option<PathBuf>,
}

/// The three ways the benchmark integrates the ensemble.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Variant {
    Field,
    Closure,
    Hand,
}

const VARIANTS: [Variant; 3] = [Variant::Field, Variant::Closure, Variant::Hand];

impl Variant {
    fn parse(s: &str) -> Result<Variant, vgpu::Error> {
        VARIANTS.into_iter().find(|v| v.key() == s).ok_or_else(|| {
            vgpu::Error::Usage(format!(
                "bench adaptive: --only {s:?}: expected field, closure or hand"
            ))
        })
    }
    fn key(self) -> &'static str {
        match self {
            Variant::Field => "field",
            Variant::Closure => "closure",
            Variant::Hand => "hand",
        }
    }
    fn label(self) -> &'static str {
        match self {
            Variant::Field => ".field (vgpu ensemble --method tsit5, CPU)",
            Variant::Closure => "Rust closure through the adaptive driver",
            Variant::Hand => "hand-written Tsit5 loop (reference)",
        }
    }
}

/// One whole run of `v`: its stage times and its endpoints `(N, 3)`.
fn whole_run(
    v: Variant,
    n: usize,
    par: Par,
    engine: Engine,
    out: &Path,
) -> Result<(Stages, Vec<f32>), vgpu::Error> {
    let mut st = Stages::default();
    let end = match v {
        Variant::Field => {
            let (k, args) = field_and_args::<f32>(n, &mut st)?;
            let t = Instant::now();
            let run = AdaptiveRun {
                n,
                spans: vec![(0.0, 1.0)],
                u0: None,
                options: AdaptiveEnsemble::new(AdaptiveMethod::Tsit5)
                    .rtol(LORENZ_TOL)
                    .atol(LORENZ_TOL)
                    .par(par),
                slice: None,
            };
            let job = AdaptiveJob {
                kernel: &k,
                args: &args,
                run: &run,
                backend: Backend::Cpu,
            };
            let r = Dispatcher::new()
                .cpu_engine(engine)
                .adaptive_with(&job, &Default::default())?;
            st.kernel = t.elapsed().as_secs_f64();
            match r.output.end {
                Buffer::F32(v) => v.to_vec(),
                other => {
                    return Err(vgpu::Error::Usage(format!(
                        "bench adaptive: lorenz.field gave {:?} endpoints, expected f32",
                        other.ty()
                    )))
                }
            }
        }
        Variant::Closure => {
            let t = Instant::now();
            let sol = lorenz_tsit5_driver(n, par)?;
            st.kernel = t.elapsed().as_secs_f64();
            sol.end
        }
        Variant::Hand => {
            let t = Instant::now();
            let (end, _) = lorenz_tsit5_reference(n, par)?;
            st.kernel = t.elapsed().as_secs_f64();
            end
        }
    };
    let t = Instant::now();
    f32::write(out, &end).map_err(|e| io_error(out, e))?;
    st.output = t.elapsed().as_secs_f64();
    Ok((st, end))
}

/// A variant's best figures over the rounds.
#[derive(Debug, Clone, Copy)]
struct Best {
    kernel: f64,
    whole: f64,
}

/// Runs the benchmark and prints its figures.
pub(crate) fn run(a: AdaptiveArgs) -> Result<ExitCode, vgpu::Error> {
    if a.n == 0 {
        return Err(vgpu::Error::Usage(
            "bench adaptive: --n must be at least 1".into(),
        ));
    }
    let engine: Engine = a.cpu_engine.parse().map_err(vgpu::Error::Usage)?;
    let par = match a.threads {
        1 => Par::Seq,
        t => Par::Rayon(t),
    };
    let threads = par.threads();
    let temp = TempOut(
        std::env::temp_dir().join(format!("vgpu-bench-adaptive-{}.npy", std::process::id())),
    );
    if let Some(only) = &a.only {
        let v = Variant::parse(only)?;
        let out = a.out.as_deref().unwrap_or(&temp.0);
        let (st, end) = whole_run(v, a.n, par, engine, out)?;
        let sum: f64 = end.iter().map(|&x| f64::from(x)).sum();
        if a.json {
            println!(
                "{}",
                serde_json::json!({
                    "variant": v.key(), "n": a.n, "threads": threads,
                    "compile_s": st.compile, "args_s": st.args, "kernel_s": st.kernel,
                    "output_s": st.output, "whole_s": st.whole(), "checksum": sum,
                })
            );
        } else {
            println!(
                "{} (N = {}, {threads} thread(s)): kernel {:.4} s, whole run {:.4} s (compile {:.4}, args {:.4}, output {:.4}); checksum {sum:.10}",
                v.label(), a.n, st.kernel, st.whole(), st.compile, st.args, st.output
            );
        }
        return Ok(ExitCode::SUCCESS);
    }
    let mut best = [Best {
        kernel: f64::INFINITY,
        whole: f64::INFINITY,
    }; 3];
    for _ in 0..a.repeats.max(1) {
        let mut ends: Vec<Vec<f32>> = Vec::with_capacity(3);
        for (i, v) in VARIANTS.into_iter().enumerate() {
            let (st, end) = whole_run(v, a.n, par, engine, &temp.0)?;
            best[i].kernel = best[i].kernel.min(st.kernel);
            best[i].whole = best[i].whole.min(st.whole());
            ends.push(end);
        }
        let hand = &ends[2];
        for (v, end) in VARIANTS.iter().zip(&ends).take(2) {
            if !end
                .iter()
                .map(|x| x.to_bits())
                .eq(hand.iter().map(|x| x.to_bits()))
            {
                return Err(vgpu::Error::Usage(format!(
                    "bench adaptive: the {} endpoints differ from the hand loop's",
                    v.key()
                )));
            }
        }
    }
    let hand = best[2];
    if a.json {
        let mut obj = serde_json::json!({
            "n": a.n, "threads": threads, "repeats": a.repeats.max(1),
            "method": "tsit5", "rtol": LORENZ_TOL, "atol": LORENZ_TOL,
            "cpu_engine": a.cpu_engine, "endpoints_equal": true,
        });
        for (v, b) in VARIANTS.iter().zip(&best) {
            obj[v.key()] = serde_json::json!({
                "kernel_s": b.kernel, "whole_s": b.whole,
                "hand_over_this_kernel": hand.kernel / b.kernel,
                "hand_over_this_whole": hand.whole / b.whole,
            });
        }
        println!("{obj}");
        return Ok(ExitCode::SUCCESS);
    }
    println!(
        "Lorenz ensemble, Tsit5 rtol = atol = {LORENZ_TOL:e}, f32, N = {}, t in [0, 1], {threads} thread(s), best of {} alternating rounds, .field engine {}",
        a.n,
        a.repeats.max(1),
        a.cpu_engine
    );
    println!("kernel = the call that integrates; whole = compile + arguments (.field) + kernel + writing the (N, 3) .npy; ratio = hand seconds / variant seconds (1: as fast as the hand loop)");
    println!(
        "{:<44} {:>9} {:>9} {:>13} {:>13}",
        "variant", "kernel s", "whole s", "hand/kernel", "hand/whole"
    );
    for (v, b) in VARIANTS.iter().zip(&best) {
        println!(
            "{:<44} {:>9.4} {:>9.4} {:>13.3} {:>13.3}",
            v.label(),
            b.kernel,
            b.whole,
            hand.kernel / b.kernel,
            hand.whole / b.whole
        );
    }
    println!("endpoints: the same bits in every variant and round");
    Ok(ExitCode::SUCCESS)
}
