//! `vgpu bench ptx`: PTX emulation throughput (executed thread-instructions per
//! second) for nvcc's `matmul_naive` and `lorenz_rk4`, each beside the same
//! computation as a VGPU Rust field in the same run; their time ratio is the
//! price of emulation.

use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;
use vgpu::demos::lorenz::{lorenz_field, LorenzProblem};
use vgpu::demos::ptx_workload::{self as workload, inputs, Workload};
use vgpu::field::Par;
use vgpu::ptx::{ExecOptions, Kernel, Module};

/// Options of `vgpu bench ptx`.
#[derive(Debug, Args)]
pub(crate) struct PtxBenchArgs {
    /// The nvcc module with `matmul_naive` and `lorenz_rk4` (default: the
    /// repository's `ptx-cases/kernels.ptx`, built into the binary).
    #[arg(long)]
    pub ptx: Option<PathBuf>,
    /// Matmul size (M = K = N).
    #[arg(long, default_value_t = 256)]
    pub matmul_n: usize,
    /// Lorenz trajectories.
    #[arg(long, default_value_t = 65_536)]
    pub lorenz_n: usize,
    /// Lorenz RK4 steps.
    #[arg(long, default_value_t = 20)]
    pub steps: usize,
    /// Timed runs of each variant; the fastest counts.
    #[arg(long, default_value_t = 5)]
    pub repeats: usize,
    /// Run the PTX without the checker (bounds and the watchdog stay on).
    #[arg(long)]
    pub no_check: bool,
    /// Print one JSON object instead of the table.
    #[arg(long)]
    pub json: bool,
}

/// One kernel's figures.
struct Row {
    name: &'static str,
    thread_instructions: u64,
    ptx_seconds: f64,
    field_seconds: f64,
    field_work: f64,
    work_unit: &'static str,
    /// Largest `|ptx − field| / max(|field|, 1e-30)` over the outputs (0: the
    /// same bits; nvcc contracts the Lorenz arithmetic into FMAs, the field does
    /// not, so there they differ in the last bits).
    max_rel_diff: f64,
}

impl Row {
    fn instr_rate(&self) -> f64 {
        self.thread_instructions as f64 / self.ptx_seconds
    }
    fn ratio(&self) -> f64 {
        self.ptx_seconds / self.field_seconds
    }
    fn json(&self) -> serde_json::Value {
        serde_json::json!({
            "thread_instructions": self.thread_instructions,
            "ptx_seconds": self.ptx_seconds,
            "thread_instructions_per_s": self.instr_rate(),
            "field_seconds": self.field_seconds,
            "field_rate": self.field_work / self.field_seconds,
            "field_unit": self.work_unit,
            "ptx_over_field_time": self.ratio(),
            "max_rel_diff": self.max_rel_diff,
        })
    }
}

/// The fastest of `repeats` runs of `f`, in seconds, and its last result.
fn best_of<T>(
    repeats: usize,
    mut f: impl FnMut() -> Result<T, vgpu::Error>,
) -> Result<(f64, T), vgpu::Error> {
    let mut best = f64::INFINITY;
    let mut last = None;
    for _ in 0..repeats.max(1) {
        let t = Instant::now();
        let v = f()?;
        best = best.min(t.elapsed().as_secs_f64());
        last = Some(v);
    }
    Ok((best, last.expect("at least one run")))
}

/// See [`Row::max_rel_diff`]; a length mismatch or a NaN is infinite.
fn max_rel_diff(field: &[f32], ptx: &[u8]) -> f64 {
    if field.len() * 4 != ptx.len() {
        return f64::INFINITY;
    }
    field
        .iter()
        .zip(ptx.chunks_exact(4))
        .map(|(&f, p)| {
            let p = f32::from_le_bytes([p[0], p[1], p[2], p[3]]);
            if f.to_bits() == p.to_bits() {
                0.0
            } else {
                let d = (p as f64 - f as f64).abs() / (f as f64).abs().max(1e-30);
                if d.is_nan() {
                    f64::INFINITY
                } else {
                    d
                }
            }
        })
        .fold(0.0, f64::max)
}

/// Runs `k` on fresh copies of the workload's buffers `repeats` times: the best
/// time, the thread-instructions of one launch, and the buffers after it.
fn time_ptx(
    k: &Kernel,
    w: &Workload,
    opts: &ExecOptions,
    repeats: usize,
) -> Result<(f64, u64, Vec<Vec<u8>>), vgpu::Error> {
    let (secs, (instr, bufs)) = best_of(repeats, || {
        let mut bufs = w.buffers.clone();
        let stats = vgpu::ptx::launch(k, &w.cfg, &w.args, &mut bufs, opts)?;
        Ok((stats.thread_instructions, bufs))
    })?;
    Ok((secs, instr, bufs))
}

fn matmul(m: &Module, a: &PtxBenchArgs, opts: &ExecOptions) -> Result<Row, vgpu::Error> {
    let n = a.matmul_n;
    let k = m.kernel("matmul_naive")?;
    let (x, y) = (inputs(n * n, 1), inputs(n * n, 2));
    let w = workload::matmul_naive(n, &x, &y);
    let (ptx_seconds, instr, out) = time_ptx(&k, &w, opts, a.repeats)?;
    let (field_seconds, (c, _)) = best_of(a.repeats, || {
        Ok(vgpu::demos::matmul_field(&x, &y, (n, n, n), Par::Auto)?)
    })?;
    Ok(Row {
        name: "matmul_naive",
        thread_instructions: instr,
        ptx_seconds,
        field_seconds,
        field_work: (n * n * n) as f64,
        work_unit: "fma/s",
        max_rel_diff: max_rel_diff(&c, &out[2]),
    })
}

fn lorenz(m: &Module, a: &PtxBenchArgs, opts: &ExecOptions) -> Result<Row, vgpu::Error> {
    let k = m.kernel("lorenz_rk4")?;
    let mut p = LorenzProblem::new(a.lorenz_n);
    p.steps = a.steps;
    let state: Vec<f32> = (0..p.n).flat_map(|_| p.u0).collect();
    let w = workload::lorenz_rk4(&state, &p.rho(), p.dt, p.steps);
    let (ptx_seconds, instr, out) = time_ptx(&k, &w, opts, a.repeats)?;
    let (field_seconds, u) = best_of(a.repeats, || Ok(lorenz_field(&p, 256, Par::Auto)?))?;
    Ok(Row {
        name: "lorenz_rk4",
        thread_instructions: instr,
        ptx_seconds,
        field_seconds,
        field_work: (p.n * p.steps) as f64,
        work_unit: "RK4 steps/s",
        max_rel_diff: max_rel_diff(&u, &out[0]),
    })
}

/// The repository's nvcc module (`ptx-cases/kernels.ptx`), built into the binary so
/// that `vgpu bench ptx` runs from any folder.
const DEFAULT_PTX: &str = include_str!("../../../../ptx-cases/kernels.ptx");

/// Runs the benchmark and prints its figures.
pub(crate) fn run(a: PtxBenchArgs) -> Result<ExitCode, vgpu::Error> {
    if a.matmul_n == 0 || a.lorenz_n == 0 {
        return Err(vgpu::Error::Usage(
            "bench ptx: --matmul-n and --lorenz-n must be at least 1".into(),
        ));
    }
    let m = match &a.ptx {
        Some(path) => Module::from_file(path)?,
        None => Module::parse(DEFAULT_PTX, "ptx-cases/kernels.ptx")?,
    };
    let opts = ExecOptions {
        check: !a.no_check,
        ..ExecOptions::default()
    };
    let rows = [matmul(&m, &a, &opts)?, lorenz(&m, &a, &opts)?];
    if a.json {
        let mut obj = serde_json::json!({
            "ptx": a.ptx.as_ref().map_or("ptx-cases/kernels.ptx (built in)".to_string(), |p| p.display().to_string()),
            "check": opts.check,
            "repeats": a.repeats,
        });
        for r in &rows {
            obj[r.name] = r.json();
        }
        println!("{obj}");
        return Ok(ExitCode::SUCCESS);
    }
    println!(
        "PTX emulation ({}, checker {}), best of {}",
        a.ptx
            .as_ref()
            .map_or("ptx-cases/kernels.ptx (built in)".into(), |p| p
                .display()
                .to_string()),
        if opts.check { "on" } else { "off" },
        a.repeats
    );
    println!(
        "{:<14} {:>14} {:>10} {:>16} {:>10} {:>22} {:>10} {:>12}",
        "kernel",
        "thread-instr",
        "PTX s",
        "thread-instr/s",
        "field s",
        "field rate",
        "PTX/field",
        "max rel diff"
    );
    for r in &rows {
        println!(
            "{:<14} {:>14} {:>10.4} {:>16.3e} {:>10.4} {:>22} {:>9.1}x {:>12.2e}",
            r.name,
            r.thread_instructions,
            r.ptx_seconds,
            r.instr_rate(),
            r.field_seconds,
            format!("{:.3e} {}", r.field_work / r.field_seconds, r.work_unit),
            r.ratio(),
            r.max_rel_diff
        );
    }
    Ok(ExitCode::SUCCESS)
}
