//! `vgpu demo`: run the equivalence demos and print one table row per demo.

use clap::Args;
use std::process::ExitCode;
use vgpu::demos::{self, DemoOptions, DemoReport};
use vgpu::field::{Method, Par};

/// Options of `vgpu demo`.
#[derive(Debug, Args)]
pub(crate) struct DemoArgs {
    /// Elements of the 1-D demos (scale, relax, reverse, tree-sum, histogram).
    #[arg(long, default_value_t = 32_768)]
    pub n: usize,
    /// Matmul shape `M,K,N` (A is M×K, B is K×N); the default does not divide the 16×16 block.
    #[arg(long, default_value = "37,53,29", value_parser = parse_shape)]
    pub mat: (usize, usize, usize),
    /// Trajectories per block of the 1-D demos (≤ 1024; a power of two for tree-sum).
    #[arg(long, default_value_t = 256)]
    pub block: u32,
    /// Integrator of the relax demo: `rk4` or `euler`.
    #[arg(long, default_value = "rk4")]
    pub method: Method,
    /// Step of the relax demo (in (0, 1]).
    #[arg(long, default_value_t = 0.01)]
    pub dt: f64,
    /// End time of the relax demo.
    #[arg(long, default_value_t = 20.0)]
    pub t_end: f64,
    /// Worker threads (0: one per core, 1: sequential).
    #[arg(long, default_value_t = 0)]
    pub threads: usize,
    /// Seed of the demo inputs.
    #[arg(long, default_value_t = 0x5eed)]
    pub seed: u64,
}

fn parse_shape(s: &str) -> Result<(usize, usize, usize), String> {
    let parts: Vec<&str> = s.split(',').map(str::trim).collect();
    let parse = |p: &str| {
        p.parse::<usize>()
            .map_err(|e| format!("`{p}` in shape `{s}`: {e}"))
    };
    match parts.as_slice() {
        [m, k, n] => Ok((parse(m)?, parse(k)?, parse(n)?)),
        _ => Err(format!("shape `{s}` must be M,K,N")),
    }
}

/// Runs every demo; exit status 0 if all pass, 1 if any fails or errs.
pub(crate) fn run(args: DemoArgs) -> Result<ExitCode, vgpu::Error> {
    let opts = DemoOptions {
        n: args.n,
        mat: args.mat,
        block: args.block,
        method: args.method,
        dt: args.dt,
        t_end: args.t_end,
        s: DemoOptions::default().s,
        par: match args.threads {
            1 => Par::Seq,
            t => Par::Rayon(t),
        },
        seed: args.seed,
    };
    println!(
        "{:<10} {:>12} {:>7} {:>11} {:>8} {:>10}",
        "demo", "trajectories", "steps", "max error", "verdict", "time"
    );
    let mut all_pass = true;
    let mut notes = Vec::new();
    let names = [
        "scale",
        "matmul",
        "relax",
        "reverse",
        "tree-sum",
        "histogram",
    ];
    for (name, result) in names.iter().zip(demos::run_all(&opts)) {
        match result {
            Ok(r) => {
                all_pass &= r.passed;
                println!("{}", row(&r));
                notes.push(format!("{}: {}", r.name, r.note));
            }
            Err(e) => {
                all_pass = false;
                println!(
                    "{name:<10} {:>12} {:>7} {:>11} {:>8} {:>10}",
                    "-", "-", "-", "ERROR", "-"
                );
                notes.push(format!("{name}: {e}"));
            }
        }
    }
    println!();
    for n in notes {
        println!("  {n}");
    }
    Ok(if all_pass {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

fn row(r: &DemoReport) -> String {
    let err = if r.max_error == 0.0 {
        "0".to_string()
    } else {
        format!("{:.3e}", r.max_error)
    };
    let verdict = if r.passed { "PASS" } else { "FAIL" };
    let ms = r.elapsed.as_secs_f64() * 1e3;
    format!(
        "{:<10} {:>12} {:>7} {:>11} {:>8} {:>8.2}ms",
        r.name, r.trajectories, r.steps, err, verdict, ms
    )
}
