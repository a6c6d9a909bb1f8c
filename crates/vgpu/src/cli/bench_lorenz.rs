//! `vgpu bench lorenz`: the Lorenz ensemble three ways in one run, in `f32` and
//! `f64`: the hand-written Rust + rayon loop, the Rust field API, and
//! `examples/lorenz.field` through the kernel-IR evaluator (`vgpu ensemble`'s
//! CPU path). Each is timed twice: its *kernel* (the call that integrates) and
//! its *whole run* (set-up + compile + arguments + kernel + writing the
//! endpoints as `.npy`), the figure a user of a command waits for.
//! `--only VARIANT` runs one variant's whole run once, so that the variants can
//! also be timed as whole processes from outside (`/usr/bin/time`).

use clap::Args;
use ndarray::ArrayView2;
use ndarray_npy::write_npy;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;
use vgpu::demos::lorenz::{self, LorenzConsts, LorenzProblem};
use vgpu::dispatch::{Backend, Dispatcher, EnsembleJob};
use vgpu::field::{Method, Par, Real};
use vgpu::ir::{Arg, Buffer};

/// Options of `vgpu bench lorenz`.
#[derive(Debug, Args)]
pub(crate) struct LorenzArgs {
    /// Trajectories (ρ = linspace(0, 21, N)).
    #[arg(long, default_value_t = 262_144)]
    pub n: usize,
    /// Worker threads (0: one per core).
    #[arg(long, default_value_t = 0)]
    pub threads: usize,
    /// Print one JSON object instead of the table.
    #[arg(long)]
    pub json: bool,
    /// Trajectories per block of the field launches.
    #[arg(long, default_value_t = 256)]
    pub block: u32,
    /// Timed runs of each variant; the fastest counts.
    #[arg(long, default_value_t = 3)]
    pub repeats: usize,
    /// Float types: f32, f64 or both.
    #[arg(long, default_value = "both")]
    pub precision: String,
    /// Skip the hand-written reference loops.
    #[arg(long)]
    pub no_reference: bool,
    /// Skip the `.field` variant (examples/lorenz.field through the IR evaluator).
    #[arg(long)]
    pub no_ir: bool,
    /// Run only this variant's whole run, once (hand, field-api, field-file or
    /// scalar), and print its stage times: for timing whole processes side by side.
    #[arg(long, value_name = "VARIANT")]
    pub only: Option<String>,
    /// Also run `examples/lorenz.field` on the GPU (f32; an error without an
    /// adapter): device set-up, shader and pipeline compile, host-to-host time
    /// and the kernel alone on the GPU's clock, each reported apart.
    #[arg(long)]
    pub gpu: bool,
    /// With `--only`: write the endpoints here (default: a temporary file,
    /// removed afterwards).
    #[arg(long)]
    pub out: Option<PathBuf>,
}

/// `examples/lorenz.field`, the same problem in the field language.
const LORENZ_FIELD: &str = include_str!("../../../../examples/lorenz.field");

/// `examples/lorenz_f64.field`: `examples/lorenz.field` with `f64` states and ρ.
const LORENZ_FIELD_F64: &str = include_str!("../../../../examples/lorenz_f64.field");

/// The float types the benchmark runs in.
pub(super) trait Float: Real {
    /// The `.field` source of the problem in this type.
    const SOURCE: &'static str;
    /// The endpoints of an IR run, if they are of this type.
    fn of_buffer(b: &Buffer) -> Option<&[Self]>;
    /// Writes `v` (`n × 3`) as an `.npy` array.
    fn write(path: &Path, v: &[Self]) -> Result<(), String>;
    /// `v` itself when `Self` is `f32` (moved, not copied).
    fn own(v: Vec<f32>) -> Option<Vec<Self>>;
}

macro_rules! float {
    ($t:ty, $var:ident, $src:expr, $own:expr) => {
        impl Float for $t {
            const SOURCE: &'static str = $src;
            fn of_buffer(b: &Buffer) -> Option<&[$t]> {
                match b {
                    Buffer::$var(v) => Some(v),
                    _ => None,
                }
            }
            fn write(path: &Path, v: &[$t]) -> Result<(), String> {
                let a = ArrayView2::from_shape((v.len() / 3, 3), v).map_err(|e| e.to_string())?;
                write_npy(path, &a).map_err(|e| e.to_string())
            }
            fn own(v: Vec<f32>) -> Option<Vec<$t>> {
                $own(v)
            }
        }
    };
}
float!(f32, F32, LORENZ_FIELD, Some);
float!(f64, F64, LORENZ_FIELD_F64, |_| None);

/// The variants.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Variant {
    /// The hand-written 16-lane loop (for `f32` the library's own).
    Hand,
    /// The hand-written scalar loop (`f32` only, the library's).
    Scalar,
    /// The Rust field API.
    FieldApi,
    /// `examples/lorenz.field` through `vgpu ensemble`'s CPU path.
    FieldFile,
    /// `examples/lorenz.field` through `vgpu ensemble --backend gpu`'s path (f32).
    FieldGpu,
}

impl Variant {
    fn parse(s: &str) -> Result<Variant, vgpu::Error> {
        Ok(match s {
            "hand" => Variant::Hand,
            "scalar" => Variant::Scalar,
            "field-api" => Variant::FieldApi,
            "field-file" => Variant::FieldFile,
            "field-gpu" => Variant::FieldGpu,
            other => {
                return Err(vgpu::Error::Usage(format!(
                    "bench lorenz: --only {other:?}: expected hand, scalar, field-api, field-file or field-gpu"
                )))
            }
        })
    }
    fn key(self) -> &'static str {
        match self {
            Variant::Hand => "hand",
            Variant::Scalar => "scalar",
            Variant::FieldApi => "field_api",
            Variant::FieldFile => "field_file",
            Variant::FieldGpu => "field_gpu",
        }
    }
    fn label(self) -> &'static str {
        match self {
            Variant::Hand => "hand-written, 16-lane chunks",
            Variant::Scalar => "hand-written, scalar per trajectory",
            Variant::FieldApi => "field API (vgpu)",
            Variant::FieldFile => ".field (vgpu ensemble's CPU path)",
            Variant::FieldGpu => ".field on the GPU (--backend gpu)",
        }
    }
}

/// One whole run of a variant, stage by stage (seconds).
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Stages {
    /// The GPU device's creation (adapter, device, queue: once per process,
    /// so only the first GPU run has it; GPU only).
    pub(super) setup: f64,
    /// Compiling the `.field` text (`.field` only), and on the GPU the shader
    /// module and pipeline.
    pub(super) compile: f64,
    /// Building the arguments: ρ as `--param rho=linspace:0:21` does (`.field` only).
    pub(super) args: f64,
    /// The kernel: the call that integrates (for `.field`, `run_cpu`: initial
    /// states, binding, the launch, the endpoints as a buffer).
    pub(super) kernel: f64,
    /// The endpoints as an `(N, 3)` `.npy` file.
    pub(super) output: f64,
    /// GPU only: one dispatch of the kernel alone on the GPU's clock (timestamp
    /// queries; `None` where the adapter has none). Not part of the whole run.
    pub(super) gpu_kernel: Option<f64>,
}

impl Stages {
    /// The whole run: every stage but the GPU-clock kernel.
    pub(super) fn whole(&self) -> f64 {
        self.setup + self.compile + self.args + self.kernel + self.output
    }
}

/// `lorenz.field` compiled (time into `st.compile`) and its arguments built as
/// `--param rho=linspace:0:21` does: f64 values, then the parameter's type
/// (time into `st.args`).
pub(super) fn field_and_args<T: Float>(
    n: usize,
    st: &mut Stages,
) -> Result<(vgpu::ir::Kernel, vgpu::Args), vgpu::Error> {
    let t = Instant::now();
    let k = vgpu::compile("lorenz.field", T::SOURCE)?;
    st.compile = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let step = if n > 1 { 21.0 / (n - 1) as f64 } else { 0.0 };
    let vals: Vec<f64> = (0..n).map(|i| i as f64 * step).collect();
    let buf = match T::NAME == f32::NAME {
        true => Buffer::F32(vals.iter().map(|&x| x as f32).collect()),
        false => Buffer::F64(vals.into()),
    };
    let mut args = vgpu::Args::new(&k);
    args.set("rho", Arg::Buffer(buf))?;
    st.args = t.elapsed().as_secs_f64();
    Ok((k, args))
}

/// The endpoints of `states` as `T`, or an error naming the type they have.
fn states_as<T: Float>(states: &Buffer) -> Result<&[T], vgpu::Error> {
    T::of_buffer(states).ok_or_else(|| {
        vgpu::Error::Usage(format!(
            "bench lorenz: lorenz.field gave {:?} states, expected {}",
            states.ty(),
            T::NAME
        ))
    })
}

pub(super) fn io_error(path: &Path, e: String) -> vgpu::Error {
    vgpu::Error::Io {
        path: path.display().to_string(),
        source: std::io::Error::other(e),
    }
}

/// Runs `v` once in `T` as a whole run; returns the stage times and the
/// endpoints' checksum (the `f64` sum of every component).
fn whole_run<T: Float>(
    v: Variant,
    n: usize,
    block: u32,
    par: Par,
    out: &Path,
) -> Result<(Stages, f64), vgpu::Error> {
    let steps = LorenzProblem::new(n).steps;
    let mut st = Stages::default();
    let sum = |u: &[T]| u.iter().map(|x| x.to_f64()).sum::<f64>();
    let write = |u: &[T], st: &mut Stages| -> Result<(), vgpu::Error> {
        let t = Instant::now();
        T::write(out, u).map_err(|e| io_error(out, e))?;
        st.output = t.elapsed().as_secs_f64();
        Ok(())
    };
    let f32_only = |u: Vec<f32>| -> Result<Vec<T>, vgpu::Error> {
        T::own(u).ok_or_else(|| vgpu::Error::Usage("bench lorenz: an f32-only variant".into()))
    };
    let check = match v {
        Variant::Hand | Variant::Scalar | Variant::FieldApi => {
            let t = Instant::now();
            let (rho, c) = (lorenz::linspace_rho::<T>(n), LorenzConsts::<T>::paper());
            let u: Vec<T> = match v {
                Variant::Scalar => {
                    f32_only(lorenz::lorenz_reference(&LorenzProblem::new(n), par)?)?
                }
                Variant::Hand => lorenz::lorenz_lanes(&rho, c, steps, par)?,
                _ => lorenz::lorenz_field_in(&rho, c, steps, block, par)?,
            };
            st.kernel = t.elapsed().as_secs_f64();
            write(&u, &mut st)?;
            sum(&u)
        }
        Variant::FieldFile => {
            let (k, args) = field_and_args::<T>(n, &mut st)?;
            let t = Instant::now();
            let integ = vgpu::Integration::new(n, 0.0, 1.0, 0.001)
                .method(Method::Rk4)
                .block(block)
                .par(par);
            let r = vgpu::run_cpu(&k, &args, &integ)?;
            st.kernel = t.elapsed().as_secs_f64();
            let u = states_as::<T>(&r.states)?;
            write(u, &mut st)?;
            sum(u)
        }
        Variant::FieldGpu => {
            if T::NAME != f32::NAME {
                return Err(vgpu::Error::Usage(
                    "bench lorenz: the GPU variant is f32 only".into(),
                ));
            }
            let (k, args) = field_and_args::<T>(n, &mut st)?;
            let integ = vgpu::Integration::new(n, 0.0, 1.0, 0.001).method(Method::Rk4);
            let job = EnsembleJob {
                kernel: &k,
                args: &args,
                integration: &integ,
                backend: Backend::Gpu,
                kernel_time: Some(3),
                limits: Default::default(),
            };
            // A fresh dispatcher, as a new `vgpu ensemble` process has: its
            // kernel cache compiles the pipeline again (the process's device
            // and the pipeline cache stay).
            let r = Dispatcher::new().ensemble(&job)?;
            let phases = r.gpu_phases.unwrap_or_default();
            st.setup = r.gpu_setup.map_or(0.0, |d| d.as_secs_f64());
            st.compile += phases.compile.as_secs_f64();
            st.kernel = r.seconds - phases.compile.as_secs_f64();
            st.gpu_kernel = r.kernel_time.map(|d| d.as_secs_f64());
            let u = states_as::<T>(&r.states)?;
            write(u, &mut st)?;
            sum(u)
        }
    };
    Ok((st, check))
}

/// A variant's figures over the repeats: the fastest kernel, the fastest whole run.
#[derive(Clone, Copy, Debug)]
struct Figures {
    /// The repeat with the fastest whole run.
    best: Stages,
    /// The fastest kernel of any repeat.
    kernel: f64,
    /// The GPU device's creation (the first GPU run of the process; 0 on the CPU).
    setup: f64,
    /// The fastest GPU-clock kernel of any repeat (GPU only).
    gpu_kernel: Option<f64>,
    checksum: f64,
}

fn measure<T: Float>(
    v: Variant,
    a: &LorenzArgs,
    par: Par,
    out: &Path,
) -> Result<Figures, vgpu::Error> {
    let mut best: Option<Stages> = None;
    let (mut kernel, mut checksum) = (f64::INFINITY, 0.0);
    let (mut setup, mut gpu_kernel) = (0.0f64, None::<f64>);
    for _ in 0..a.repeats.max(1) {
        let (st, sum) = whole_run::<T>(v, a.n, a.block, par, out)?;
        kernel = kernel.min(st.kernel);
        setup = setup.max(st.setup);
        gpu_kernel = match (gpu_kernel, st.gpu_kernel) {
            (Some(g), Some(s)) => Some(g.min(s)),
            (g, s) => g.or(s),
        };
        checksum = sum;
        if best.is_none_or(|b| st.whole() < b.whole()) {
            best = Some(st);
        }
    }
    Ok(Figures {
        best: best.unwrap_or_default(),
        kernel,
        setup,
        gpu_kernel,
        checksum,
    })
}

/// The figures of one float type.
struct Table {
    ty: &'static str,
    rows: Vec<(Variant, Figures)>,
}

impl Table {
    fn get(&self, v: Variant) -> Option<&Figures> {
        self.rows.iter().find(|(w, _)| *w == v).map(|(_, f)| f)
    }
    /// `.field` against the hand loop: (kernel, whole run), hand seconds ÷ `.field` seconds.
    fn ratios(&self) -> Option<(f64, f64)> {
        let (h, f) = (self.get(Variant::Hand)?, self.get(Variant::FieldFile)?);
        Some((h.kernel / f.kernel, h.best.whole() / f.best.whole()))
    }
}

fn table<T: Float>(a: &LorenzArgs, par: Par, out: &Path) -> Result<Table, vgpu::Error> {
    let mut vs = vec![];
    if !a.no_reference {
        vs.push(Variant::Hand);
        if T::NAME == f32::NAME {
            vs.push(Variant::Scalar);
        }
    }
    vs.push(Variant::FieldApi);
    if !a.no_ir {
        vs.push(Variant::FieldFile);
    }
    if a.gpu && T::NAME == f32::NAME {
        vs.push(Variant::FieldGpu);
    }
    let mut rows = vec![];
    for v in vs {
        rows.push((v, measure::<T>(v, a, par, out)?));
    }
    Ok(Table { ty: T::NAME, rows })
}

/// A temporary output path, removed when dropped.
pub(super) struct TempOut(pub(super) PathBuf);

impl Drop for TempOut {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Runs the benchmark and prints its figures.
pub(crate) fn run(args: LorenzArgs) -> Result<ExitCode, vgpu::Error> {
    if args.n == 0 {
        return Err(vgpu::Error::Usage(
            "bench lorenz: --n must be at least 1".into(),
        ));
    }
    let (f32s, f64s) = match args.precision.as_str() {
        "f32" => (true, false),
        "f64" => (false, true),
        "both" => (true, true),
        other => {
            return Err(vgpu::Error::Usage(format!(
                "bench lorenz: --precision {other:?}: expected f32, f64 or both"
            )))
        }
    };
    let par = Par::Rayon(args.threads);
    let threads = par.threads();
    let temp =
        TempOut(std::env::temp_dir().join(format!("vgpu-bench-lorenz-{}.npy", std::process::id())));
    if let Some(only) = &args.only {
        let v = Variant::parse(only)?;
        if f32s == f64s {
            return Err(vgpu::Error::Usage(
                "bench lorenz: --only runs one float type: give --precision f32 or f64".into(),
            ));
        }
        if v == Variant::Scalar && f64s {
            return Err(vgpu::Error::Usage(
                "bench lorenz: the scalar loop is f32 only".into(),
            ));
        }
        let out = args.out.as_deref().unwrap_or(&temp.0);
        let (st, sum) = if f32s {
            whole_run::<f32>(v, args.n, args.block, par, out)?
        } else {
            whole_run::<f64>(v, args.n, args.block, par, out)?
        };
        let ty = if f32s { "f32" } else { "f64" };
        if args.json {
            println!(
                "{}",
                serde_json::json!({
                    "variant": v.key(), "precision": ty, "n": args.n, "threads": threads,
                    "setup_s": st.setup, "compile_s": st.compile, "args_s": st.args,
                    "kernel_s": st.kernel, "gpu_kernel_s": st.gpu_kernel,
                    "output_s": st.output, "whole_s": st.whole(), "checksum": sum,
                })
            );
        } else {
            println!(
                "{} ({ty}, N = {}, {threads} threads): kernel {:.4} s, whole run {:.4} s (set-up {:.4}, compile {:.4}, args {:.4}, output {:.4}){}; checksum {sum:.10}",
                v.label(), args.n, st.kernel, st.whole(), st.setup, st.compile, st.args, st.output,
                st.gpu_kernel.map_or(String::new(), |g| format!(", GPU-clock kernel {g:.6} s"))
            );
        }
        return Ok(ExitCode::SUCCESS);
    }
    let mut tables = vec![];
    if f32s {
        tables.push(table::<f32>(&args, par, &temp.0)?);
    }
    if f64s {
        tables.push(table::<f64>(&args, par, &temp.0)?);
    }
    let steps = LorenzProblem::new(args.n).steps;
    let work = (args.n * steps) as f64;
    if args.json {
        let mut obj = serde_json::json!({
            "n": args.n, "steps": steps, "threads": threads, "block": args.block,
            "repeats": args.repeats.max(1),
        });
        for t in &tables {
            let mut o = serde_json::json!({});
            for (v, f) in &t.rows {
                o[v.key()] = serde_json::json!({
                    "kernel_s": f.kernel,
                    "whole_s": f.best.whole(),
                    "setup_s": f.setup,
                    "gpu_kernel_s": f.gpu_kernel,
                    "compile_s": f.best.compile,
                    "args_s": f.best.args,
                    "output_s": f.best.output,
                    "traj_steps_per_s": work / f.kernel,
                    "checksum": f.checksum,
                });
            }
            if let Some((k, w)) = t.ratios() {
                o["field_file_vs_hand"] = serde_json::json!({ "kernel": k, "whole": w });
            }
            obj[t.ty] = o;
        }
        // The f32 field API's figures at the top level, as before.
        if let Some(f) = tables
            .iter()
            .find(|t| t.ty == "f32")
            .and_then(|t| t.get(Variant::FieldApi))
        {
            obj["seconds"] = f.kernel.into();
            obj["traj_steps_per_s"] = (work / f.kernel).into();
            obj["checksum"] = f.checksum.into();
        }
        println!("{obj}");
        return Ok(ExitCode::SUCCESS);
    }
    println!(
        "Lorenz ensemble, N = {}, {steps} RK4 steps of dt = 0.001, {threads} threads, block {}, best of {}",
        args.n,
        args.block,
        args.repeats.max(1)
    );
    println!("kernel = the call that integrates (GPU: host in to host out, pipeline compile excluded); whole = set-up + compile + arguments + kernel + writing the (N, 3) .npy");
    println!("set-up = the GPU device's creation, in the process's first GPU run only (so with repeats > 1 the best whole run is a warm one); gpu = one dispatch of the kernel on the GPU's clock");
    for t in &tables {
        println!(
            "\n{:<4} {:<36} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>14} {:>20}",
            t.ty,
            "variant",
            "kernel s",
            "whole s",
            "set-up",
            "gpu",
            "compile",
            "args",
            "output",
            "traj-steps/s",
            "checksum"
        );
        for (v, f) in &t.rows {
            println!(
                "     {:<36} {:>9.4} {:>9.4} {:>9.4} {:>9} {:>9.4} {:>9.4} {:>9.4} {:>14.3e} {:>20.10}",
                v.label(),
                f.kernel,
                f.best.whole(),
                f.setup,
                f.gpu_kernel.map_or("-".into(), |g| format!("{g:.6}")),
                f.best.compile,
                f.best.args,
                f.best.output,
                work / f.kernel,
                f.checksum
            );
        }
        let sums: Vec<u64> = t.rows.iter().map(|(_, f)| f.checksum.to_bits()).collect();
        println!(
            "     checksums equal: {}",
            sums.windows(2).all(|w| w[0] == w[1])
        );
        if let Some((k, w)) = t.ratios() {
            println!("     .field ÷ hand-written 16-lane (hand seconds ÷ .field seconds; > 1: .field faster): kernel {k:.2}, whole run {w:.2}");
        }
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bits<T: Real>(v: &[T]) -> Vec<u64> {
        v.iter().map(|x| x.to_bits_u64()).collect()
    }

    /// The field file, the field API and the hand loop, each in `T`, agree bit for bit.
    fn all_agree<T: Float>() {
        let (n, block) = (300, 64);
        let dir = std::env::temp_dir().join(format!(
            "vgpu-bench-lorenz-test-{}-{}",
            std::process::id(),
            T::NAME
        ));
        let mut sums = vec![];
        for v in [Variant::Hand, Variant::FieldApi, Variant::FieldFile] {
            let (_, sum) = whole_run::<T>(v, n, block, Par::Rayon(2), &dir).unwrap();
            sums.push(sum.to_bits());
        }
        let _ = std::fs::remove_file(&dir);
        assert!(
            sums.windows(2).all(|w| w[0] == w[1]),
            "{} checksums {sums:?}",
            T::NAME
        );
    }

    #[test]
    fn every_variant_computes_the_same_bits_in_f32_and_f64() {
        all_agree::<f32>();
        all_agree::<f64>();
    }

    #[test]
    fn the_f64_field_file_computes_the_hand_written_bits() {
        let (n, steps) = (300, 50);
        let k = vgpu::compile("lorenz64.field", LORENZ_FIELD_F64).unwrap();
        let mut args = vgpu::Args::new(&k);
        args.buffer("rho", Buffer::F64(lorenz::linspace_rho::<f64>(n).into()))
            .unwrap();
        let integ = vgpu::Integration::new(n, 0.0, steps as f64 * 0.001, 0.001).block(64);
        let r = vgpu::run_cpu(&k, &args, &integ).unwrap();
        let ir = f64::of_buffer(&r.states).unwrap();
        let (rho, c) = (lorenz::linspace_rho::<f64>(n), LorenzConsts::paper());
        let hand = lorenz::lorenz_lanes(&rho, c, steps, Par::Seq).unwrap();
        assert_eq!(bits(ir), bits(&hand));
        let api = lorenz::lorenz_field_in(&rho, c, steps, 64, Par::Rayon(2)).unwrap();
        assert_eq!(bits(&api), bits(&hand));
    }

    #[test]
    fn the_field_file_computes_the_hand_written_bits() {
        let mut p = LorenzProblem::new(300);
        p.steps = 50;
        let k = vgpu::compile("lorenz.field", LORENZ_FIELD).unwrap();
        let mut args = vgpu::Args::new(&k);
        args.buffer("rho", p.rho()).unwrap();
        let integ = vgpu::Integration::new(p.n, 0.0, 0.05, 0.001)
            .block(64)
            .par(Par::Rayon(2));
        let r = vgpu::run_cpu(&k, &args, &integ).unwrap();
        let ir = f32::of_buffer(&r.states).unwrap();
        let hand = lorenz::lorenz_reference_lanes(&p, Par::Seq).unwrap();
        assert_eq!(bits(ir), bits(&hand));
        // The paper's constants in f32 are the problem's.
        assert_eq!(LorenzConsts::<f32>::paper(), p.consts());
    }
}
