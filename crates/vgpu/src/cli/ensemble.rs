//! `vgpu ensemble FILE.field …`: integrate a `.field` kernel over N trajectories
//! on the CPU or a GPU and write the endpoint states as an (N, state) `.npy`.

use clap::Args as ClapArgs;
use indicatif::ProgressDrawTarget;
use ndarray::{Array1, Array2, ArrayView2};
use ndarray_npy::{read_npy, write_npy};
use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use vgpu::dispatch::{AdaptiveJob, MethodChoice, STATUS_NAMES};
use vgpu::field::adaptive::{AdaptiveEnsemble, AdaptiveError};
use vgpu::field::executor::Progress;
use vgpu::field::{Method, Par};
use vgpu::ir::adaptive::AdaptiveRun;
use vgpu::ir::{compile_file, Arg, Args, Buffer, Integration, Kernel, ScalarType, Value};
use vgpu::limits::parse_size;
use vgpu::output::OutputSet;
use vgpu::{Dispatcher, EnsembleJob, Limits};

use super::split::{run_hash, Figures, Split};
use vgpu::shard::{Part, PartData};

/// Options of `vgpu ensemble`.
#[derive(Debug, Clone, ClapArgs)]
pub(crate) struct EnsembleArgs {
    /// The `.field` file (one field).
    pub file: PathBuf,
    /// Trajectories.
    #[arg(long)]
    pub n: usize,
    /// Time span `T0:T1` (fields without phases).
    #[arg(long, default_value = "0:1")]
    pub t: String,
    /// Step size of the fixed-step methods (default 0.001; adaptive methods take
    /// --dt0 instead).
    #[arg(long)]
    pub dt: Option<f64>,
    /// Integrator: fixed-step euler or rk4, an adaptive embedded pair tsit5,
    /// dp5, bs3 or vern7, or the stiff rosenbrock23 (Jacobian derived from the
    /// field, at most 16 states) (CPU; fields without phases; `event`s run
    /// with the adaptive methods).
    #[arg(long, default_value = "rk4")]
    pub method: String,
    /// The adaptive methods' options (boxed: they are many and seldom given).
    #[command(flatten)]
    pub adaptive: Box<AdaptiveOpts>,
    /// A parameter: `NAME=linspace:A:B` (N values), `NAME=FILE.npy` (1-D), or `NAME=NUMBER`.
    #[arg(long = "param", value_name = "NAME=VALUE")]
    pub params: Vec<String>,
    /// cpu, gpu or auto (default: $VGPU_BACKEND, else auto: the GPU when there is
    /// an adapter and the kernel can run there).
    #[arg(long)]
    pub backend: Option<String>,
    /// Trajectories per block (CPU; the block of shared sub-fields).
    #[arg(long, default_value_t = 256)]
    pub block: u32,
    /// Run only shard I of R (0-based): trajectories [N·I/R, N·(I+1)/R) cut
    /// at whole blocks, written to --out with STEM.shard.json; `vgpu merge`
    /// joins the shards into the bytes of one run.
    #[arg(long, value_name = "I/R")]
    pub shard: Option<String>,
    /// Write the endpoint states here, an (N, state) array (flux outputs go to
    /// `STEM.NAME.npy` beside it).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// CPU worker threads (0: one per core).
    #[arg(long, default_value_t = 0)]
    pub threads: usize,
    /// CPU engine of unphased fields: jit (native code through
    /// Cranelift where the kernel and host allow it, else the evaluator) or
    /// eval (the IR's column evaluator, the reference); same results.
    #[arg(long, value_name = "jit|eval", default_value = "jit")]
    pub cpu_engine: String,
    /// GPU: also time the kernel alone over this many dispatches.
    #[arg(long)]
    pub kernel_time: Option<u32>,
    /// Print one JSON object (backend, adapter, seconds, kernel seconds, …).
    #[arg(long)]
    pub json: bool,
    /// CPU progress bar (trajectory-steps done; trajectories finished for the
    /// adaptive methods), drawn on stderr only when it is a terminal: auto (long
    /// runs), always or never.
    #[arg(long, default_value = "auto")]
    pub progress: String,
    /// Host memory the run may use, e.g. 8G (default: what the system reports
    /// available). Checked before anything is allocated.
    #[arg(long, value_name = "SIZE")]
    pub max_memory: Option<String>,
    /// Steps per trajectory the run may take.
    #[arg(long, default_value_t = vgpu::limits::DEFAULT_MAX_STEPS)]
    pub max_steps: u64,
    /// Bytes of shared sub-fields per block (default 49152, CUDA's static limit).
    #[arg(long)]
    pub max_shared_bytes: Option<u64>,
    /// Elements of flux outputs, all together (default 2^26).
    #[arg(long)]
    pub max_flux_elements: Option<u64>,
    /// Phase repetitions (`phase p for j in 0..K`), summed (default 2^16).
    #[arg(long)]
    pub max_phase_repetitions: Option<u64>,
    /// Steps per trajectory of a phased field (default 2^32 - 1).
    #[arg(long)]
    pub max_phase_steps: Option<u64>,
    /// Bytes of the WGSL shader generated for the GPU (default 2^20; naga's
    /// compile time grows with its square).
    #[arg(long)]
    pub max_wgsl_bytes: Option<u64>,
}

/// Options of the adaptive methods (`--method tsit5|dp5|bs3|vern7|rosenbrock23`).
#[derive(Debug, Clone, ClapArgs)]
pub(crate) struct AdaptiveOpts {
    /// Adaptive: relative tolerance, one value or one per state (`1e-6,1e-8,1e-8`);
    /// default 1e-3.
    #[arg(long, value_name = "R")]
    pub rtol: Option<String>,
    /// Adaptive: absolute tolerance, one value or one per state; default 1e-6.
    #[arg(long, value_name = "A")]
    pub atol: Option<String>,
    /// Adaptive: first step of every trajectory (default: Hairer's estimate).
    #[arg(long, value_name = "H")]
    pub dt0: Option<f64>,
    /// Adaptive: smallest step; below it a trajectory stops with status dtmin.
    #[arg(long, value_name = "H")]
    pub dtmin: Option<f64>,
    /// Adaptive: largest step.
    #[arg(long, value_name = "H")]
    pub dtmax: Option<f64>,
    /// Adaptive: most step attempts per trajectory (default 100000); beyond it
    /// a trajectory stops with status maxiters.
    #[arg(long, value_name = "K")]
    pub maxiters: Option<u64>,
    /// Adaptive: step-size controller, `pi` (OrdinaryDiffEq's PI defaults for
    /// the method's order, the default) or `i` (integral only: β₂ = 0,
    /// `h·0.9·E^(-1/(p))` clamped to [0.2, 10]).
    #[arg(long, value_name = "pi|i")]
    pub controller: Option<String>,
    /// Adaptive, GPU: at most this many trajectories per dispatch (default: as
    /// many as the adapter's storage bindings hold).
    #[arg(long, value_name = "N")]
    pub gpu_chunk: Option<usize>,
    /// Adaptive: initial states, an (N, state) .npy (default: the kernel's
    /// `state x = …`).
    #[arg(long, value_name = "FILE.npy")]
    pub u0: Option<PathBuf>,
    /// Adaptive: a time span per trajectory, an (N, 2) .npy of (t0, t1) rows
    /// (instead of --t).
    #[arg(long, value_name = "FILE.npy")]
    pub tspan: Option<PathBuf>,
    /// Adaptive: save times `T0:T1:K` (K evenly spaced, both ends included) or a
    /// 1-D .npy; --out is then (N, K, state), from the method's dense output.
    #[arg(long, value_name = "T0:T1:K|FILE.npy")]
    pub saveat: Option<String>,
}

/// The front end's limits: the defaults, raised or lowered by the options.
fn ir_limits(a: &EnsembleArgs) -> vgpu::ir::Limits {
    let d = vgpu::ir::Limits::default();
    vgpu::ir::Limits {
        max_shared_bytes: a.max_shared_bytes.unwrap_or(d.max_shared_bytes),
        max_flux_elements: a.max_flux_elements.unwrap_or(d.max_flux_elements),
        max_phase_repetitions: a.max_phase_repetitions.unwrap_or(d.max_phase_repetitions),
        max_phase_steps: a.max_phase_steps.unwrap_or(d.max_phase_steps),
        max_wgsl_bytes: a.max_wgsl_bytes.unwrap_or(d.max_wgsl_bytes),
    }
}

/// A front-end limit error with the option of this command that raises it.
fn name_the_option(e: vgpu::Error) -> vgpu::Error {
    match e {
        vgpu::Error::Ir(vgpu::ir::IrError::Limit { kind, .. }) => {
            let flag = format!("--{}", kind.field().replace('_', "-"));
            vgpu::Error::Usage(format!("{e} [vgpu ensemble: {flag}]"))
        }
        e => e,
    }
}

/// The limits of this run: the machine's, with `--max-memory` and `--max-steps`.
fn limits(a: &EnsembleArgs) -> Result<Limits, vgpu::Error> {
    let mut l = Limits {
        max_steps: a.max_steps,
        ..Limits::default()
    };
    if let Some(m) = &a.max_memory {
        l.max_memory = parse_size(m).map_err(|e| usage(format!("--max-memory {e}")))?;
    }
    Ok(l)
}

fn usage(m: impl Into<String>) -> vgpu::Error {
    vgpu::Error::Usage(format!("ensemble: {}", m.into()))
}

fn parse_span(s: &str) -> Result<(f64, f64), vgpu::Error> {
    let (a, b) = s
        .split_once(':')
        .ok_or_else(|| usage(format!("--t {s:?}: expected T0:T1")))?;
    let p = |x: &str| {
        x.trim()
            .parse::<f64>()
            .map_err(|_| usage(format!("--t {s:?}: {x:?} is not a number")))
    };
    Ok((p(a)?, p(b)?))
}

fn typed(vals: Vec<f64>, ty: ScalarType) -> Buffer {
    match ty {
        ScalarType::F64 => Buffer::F64(vals.into()),
        ScalarType::I32 => Buffer::I32(vals.iter().map(|&v| v as i32).collect()),
        ScalarType::U32 => Buffer::U32(vals.iter().map(|&v| v as u32).collect()),
        _ => Buffer::F32(vals.iter().map(|&v| v as f32).collect()),
    }
}

fn read_buffer(path: &str, ty: ScalarType, limits: &Limits) -> Result<Buffer, vgpu::Error> {
    let io = |e: String| vgpu::Error::Io {
        path: path.into(),
        source: std::io::Error::other(e),
    };
    macro_rules! try_read {
        ($t:ty, $wrap:expr) => {
            if let Ok(a) = read_npy::<_, Array1<$t>>(path) {
                return Ok($wrap(a.to_vec()).cast(ty));
            }
        };
    }
    if !std::path::Path::new(path).exists() {
        return Err(io("no such file".into()));
    }
    // The header's shape must fit in the file and in memory before the read.
    let shape = limits.npy(std::path::Path::new(path))?;
    if shape.len() != 1 {
        return Err(io(format!(
            "a parameter array must be 1-D, this one has shape {shape:?}"
        )));
    }
    try_read!(f32, |v: Vec<f32>| Buffer::F32(v.into()));
    try_read!(f64, |v: Vec<f64>| Buffer::F64(v.into()));
    try_read!(i32, |v: Vec<i32>| Buffer::I32(v.into()));
    try_read!(u32, |v: Vec<u32>| Buffer::U32(v.into()));
    try_read!(i64, |v: Vec<i64>| Buffer::F64(
        v.iter().map(|&x| x as f64).collect()
    ));
    Err(io(
        "not a 1-D .npy array of f32, f64, i32, u32 or i64".into()
    ))
}

/// Builds the arguments from `--param` options.
fn build_args(
    k: &Kernel,
    params: &[String],
    n: usize,
    limits: &Limits,
) -> Result<Args, vgpu::Error> {
    let mut args = Args::new(k);
    for p in params {
        let (name, value) = p
            .split_once('=')
            .ok_or_else(|| usage(format!("--param {p:?}: expected NAME=VALUE")))?;
        let decl = k.params.iter().find(|q| q.name == name);
        let ty = decl.map(|d| d.ty).unwrap_or(ScalarType::F32);
        let is_buffer = decl.is_some_and(|d| d.buffer);
        let arg = if let Some(spec) = value.strip_prefix("linspace:") {
            let (a, b) = spec
                .split_once(':')
                .ok_or_else(|| usage(format!("--param {p:?}: expected linspace:A:B")))?;
            let a: f64 = a
                .parse()
                .map_err(|_| usage(format!("--param {p:?}: {a:?} is not a number")))?;
            let b: f64 = b
                .parse()
                .map_err(|_| usage(format!("--param {p:?}: {b:?} is not a number")))?;
            // numpy.linspace(a, b, n): a + i·(b − a)/(n − 1), in f64.
            let step = if n > 1 { (b - a) / (n - 1) as f64 } else { 0.0 };
            Arg::Buffer(typed((0..n).map(|i| a + i as f64 * step).collect(), ty))
        } else if value.ends_with(".npy") {
            Arg::Buffer(read_buffer(value, ty, limits)?)
        } else {
            let v: f64 = value.parse().map_err(|_| {
                usage(format!(
                    "--param {p:?}: expected a number, linspace:A:B or FILE.npy"
                ))
            })?;
            if is_buffer {
                return Err(usage(format!(
                    "--param {p:?}: `{name}` is a buffer: give linspace:A:B or FILE.npy"
                )));
            }
            Arg::Scalar(Value::F64(v))
        };
        args.set(name, arg)?;
    }
    args.check_complete()?;
    Ok(args)
}

/// Writes the endpoint states (`out`, an (n, dim) array) and each flux output
/// (`STEM.NAME.npy`) whole or not at all: under temporary names first, renamed
/// together once all are written ([`OutputSet`]).
fn write_outputs(
    out: &std::path::Path,
    n: usize,
    dim: usize,
    states: &Buffer,
    fluxes: &[(String, Buffer)],
) -> Result<(), vgpu::Error> {
    let mut set = OutputSet::new();
    set.write(out, |tmp| {
        // Straight from the results: no copy, no conversion.
        match states {
            Buffer::F64(v) => write_npy(
                tmp,
                &ArrayView2::from_shape((n, dim), &v[..]).map_err(|e| e.to_string())?,
            ),
            Buffer::F32(v) => write_npy(
                tmp,
                &ArrayView2::from_shape((n, dim), &v[..]).map_err(|e| e.to_string())?,
            ),
            other => {
                let v: Vec<f32> = (0..other.len())
                    .map(|i| other.get(i).as_f64() as f32)
                    .collect();
                write_npy(
                    tmp,
                    &Array2::from_shape_vec((n, dim), v).map_err(|e| e.to_string())?,
                )
            }
        }
        .map_err(|e| e.to_string())
    })?;
    let stem = out.with_extension("");
    for (name, b) in fluxes {
        let path = PathBuf::from(format!("{}.{name}.npy", stem.display()));
        set.write(&path, |tmp| {
            match b {
                Buffer::F32(v) => write_npy(tmp, &Array1::from(v.to_vec())),
                Buffer::F64(v) => write_npy(tmp, &Array1::from(v.to_vec())),
                Buffer::I32(v) => write_npy(tmp, &Array1::from(v.to_vec())),
                Buffer::U32(v) => write_npy(tmp, &Array1::from(v.to_vec())),
            }
            .map_err(|e| e.to_string())
        })?;
    }
    set.commit()
}

/// Whether to draw a progress bar: `--progress auto` (when the run is `long`),
/// `always` or `never`, and only when stderr is a terminal.
fn draw_progress(progress: &str, long: bool) -> Result<bool, vgpu::Error> {
    Ok(match progress {
        "auto" => long,
        "always" => true,
        "never" => false,
        other => {
            return Err(usage(format!(
                "--progress {other:?}: expected auto, always or never"
            )))
        }
    } && std::io::stderr().is_terminal())
}

/// Runs `f`, handing it a [`Progress`] counter when `draw`, and meanwhile draws
/// the counter as a bar on stderr (`unit`s done of the total: trajectory-steps
/// for fixed steps, trajectories for adaptive runs), redrawn ten times a second
/// and cleared at the end.
fn with_progress<R>(draw: bool, unit: &str, f: impl FnOnce(Option<Progress>) -> R) -> R {
    if !draw {
        return f(None);
    }
    let p = Progress::new();
    // Hidden until the run has announced its work.
    let bar = indicatif::ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::hidden());
    if let Ok(style) = indicatif::ProgressStyle::with_template(&format!(
        "{{bar:40}} {{human_pos}}/{{human_len}} {unit} ({{percent}}%, {{elapsed}} elapsed, eta {{eta}})"
    )) {
        bar.set_style(style);
    }
    let stop = AtomicBool::new(false);
    let r = std::thread::scope(|s| {
        s.spawn(|| {
            while !stop.load(Ordering::Relaxed) {
                if p.total() > 0 && bar.is_hidden() {
                    bar.set_draw_target(ProgressDrawTarget::stderr());
                }
                bar.set_length(p.total());
                bar.set_position(p.done());
                std::thread::sleep(Duration::from_millis(100));
            }
        });
        let r = f(Some(p.clone()));
        stop.store(true, Ordering::Relaxed);
        r
    });
    bar.finish_and_clear();
    r
}

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

/// The endpoint states of a slice as its `out` part.
fn states_part(states: &Buffer, dim: usize) -> Part {
    let data = match states {
        Buffer::F64(v) => PartData::F64(v.to_vec()),
        other => PartData::F32(
            (0..other.len())
                .map(|i| other.get(i).as_f64() as f32)
                .collect(),
        ),
    };
    Part {
        role: "out".into(),
        data,
        row: vec![dim],
    }
}

/// The adaptive outputs of a slice: `out`, `status`, `steps` parts.
fn adaptive_parts(o: &vgpu::ir::adaptive::AdaptiveOutput) -> Vec<Part> {
    let (k, d) = (o.saveat.len(), o.dim);
    let (values, row) = if k > 0 {
        (&o.saved, vec![k, d])
    } else {
        (&o.end, vec![d])
    };
    let mut out = states_part(values, d);
    out.row = row;
    vec![
        out,
        Part {
            role: "status".into(),
            data: PartData::U8(o.stats.iter().map(|s| s.status.code()).collect()),
            row: vec![],
        },
        Part {
            role: "steps".into(),
            data: PartData::U64(
                o.stats
                    .iter()
                    .flat_map(|s| [s.accepted, s.rejected])
                    .collect(),
            ),
            row: vec![2],
        },
    ]
}

/// Writes a slice's parts ([`Split::finish`]) and prints what the summary
/// adds for it; `Ok(false)`: this process prints no summary (MPI ranks but 0).
fn finish_split(
    s: &Split,
    a: &EnsembleArgs,
    field: &str,
    parts: &[Part],
    fig: Figures,
    json: &mut serde_json::Value,
) -> Result<bool, vgpu::Error> {
    let hash = run_hash(a)?;
    let Some(extra) = s.finish(a, field, &hash, parts, &fig)? else {
        return Ok(false);
    };
    if let (Some(obj), Some(more)) = (json.as_object_mut(), extra.as_object()) {
        obj.extend(more.clone());
    }
    if !a.json {
        if let Some(ranks) = extra.get("ranks").and_then(|r| r.as_array()) {
            println!(
                "MPI: {} ranks, {} trajectories; slowest rank {:.6} s",
                ranks.len(),
                s.total,
                extra["rank_seconds_max"].as_f64().unwrap_or(0.0)
            );
        } else {
            println!(
                "{}: run hash {hash}, metadata {}",
                s.name(),
                extra["metadata"].as_str().unwrap_or("")
            );
        }
    }
    Ok(true)
}

/// `vgpu ensemble`, whole or one slice.
fn run_part(a: EnsembleArgs, split: Option<&Split>) -> Result<ExitCode, vgpu::Error> {
    let wall = Instant::now();
    let choice = MethodChoice::parse(&a.method, "--method").map_err(|e| usage(e.to_string()))?;
    let method: Method = match choice {
        MethodChoice::Adaptive(_) => return run_adaptive(a, choice, split),
        MethodChoice::Fixed(m) => m,
    };
    let adaptive_only = [
        ("--rtol", a.adaptive.rtol.is_some()),
        ("--atol", a.adaptive.atol.is_some()),
        ("--dt0", a.adaptive.dt0.is_some()),
        ("--dtmin", a.adaptive.dtmin.is_some()),
        ("--dtmax", a.adaptive.dtmax.is_some()),
        ("--maxiters", a.adaptive.maxiters.is_some()),
        ("--u0", a.adaptive.u0.is_some()),
        ("--tspan", a.adaptive.tspan.is_some()),
        ("--saveat", a.adaptive.saveat.is_some()),
    ];
    if let Some((flag, _)) = adaptive_only.iter().find(|(_, given)| *given) {
        return Err(usage(format!(
            "{flag} applies to the adaptive methods (tsit5, dp5, bs3, vern7), not to --method {method}"
        )));
    }
    let k = compile_file(&a.file)?;
    let (t0, t1) = parse_span(&a.t)?;
    let limits = limits(&a)?;
    let (threads, capped) = limits.threads(a.threads);
    if let Some(note) = capped {
        eprintln!("note: {note}");
    }
    let par = if a.threads == 0 {
        Par::Auto
    } else {
        Par::Rayon(threads)
    };
    if let Some(s) = split {
        vgpu::shard::refuse_flux(&k, &format!("ensemble: {}", s.name()))?;
    }
    let engine: vgpu_ir::Engine = a.cpu_engine.parse().map_err(vgpu::Error::Usage)?;
    let integ = Integration {
        n: split.map_or(a.n, Split::n),
        block: a.block,
        t0,
        t1,
        dt: a.dt.unwrap_or(0.001),
        method,
        par,
        progress: None,
        slice: split.map(Split::slice),
    };
    limits.ensemble(&k, &integ)?;
    let args = build_args(&k, &a.params, a.n, &limits)?;
    let backend = vgpu::resolve_backend(a.backend.as_deref())?;
    let dim = k.states.len();
    // The bar counts the CPU executor's trajectory-steps; a GPU run announces no
    // work, so the bar stays hidden there.
    let steps_guess = integ.steps(&k.name).unwrap_or(0).max(1);
    let long = (a.n as f64) * (steps_guess as f64) * (dim.max(1) as f64) > 2e8;
    let draw = draw_progress(&a.progress, long)?;
    let run = with_progress(draw, "trajectory-steps", |p| {
        let integ = match p {
            Some(p) => integ.clone().progress(p),
            None => integ.clone(),
        };
        Dispatcher::new().cpu_engine(engine).ensemble(&EnsembleJob {
            kernel: &k,
            args: &args,
            integration: &integ,
            backend,
            kernel_time: a.kernel_time,
            limits: ir_limits(&a),
        })
    })
    .map_err(name_the_option)?;
    let note = run
        .fallback
        .as_deref()
        .map_or(String::new(), |why| format!("on the CPU: {why}"));
    let (states, fluxes, steps, seconds, kernel_time) = (
        &run.states,
        &run.fluxes,
        run.steps,
        run.seconds,
        run.kernel_time,
    );
    let adapter = &run.adapter;
    let backend = run.backend.to_string();
    let n = integ.n;
    let traj_steps = n as f64 * steps as f64 / seconds;
    let mut j = serde_json::json!({
        "field": k.name, "file": a.file.display().to_string(), "backend": backend, "adapter": adapter,
        "n": n, "steps": steps, "method": method.name(), "seconds": seconds,
        "kernel_seconds": kernel_time.map(|d| d.as_secs_f64()), "traj_steps_per_s": traj_steps,
        "note": note,
    });
    if let Some(p) = run.gpu_phases {
        j["phases"] = serde_json::json!({
            "prepare_seconds": p.prepare.as_secs_f64(), "compile_seconds": p.compile.as_secs_f64(),
            "device_seconds": p.device.as_secs_f64(), "check_seconds": p.check.as_secs_f64(),
            "upload_seconds": p.upload.as_secs_f64(), "gpu_seconds": p.gpu.as_secs_f64(),
            "download_seconds": p.download.as_secs_f64(),
        });
    }
    if let Some(setup) = run.gpu_setup {
        j["setup_seconds"] = setup.as_secs_f64().into();
    }
    match (split, &a.out) {
        (Some(s), _) => {
            let fig = Figures {
                seconds,
                backend: backend.clone(),
            };
            if !finish_split(s, &a, &k.name, &[states_part(states, dim)], fig, &mut j)? {
                return Ok(ExitCode::SUCCESS);
            }
        }
        (None, Some(out)) => {
            let start = Instant::now();
            write_outputs(out, n, dim, states, fluxes)?;
            j["output_seconds"] = start.elapsed().as_secs_f64().into();
        }
        (None, None) => {}
    }
    j["wall_seconds"] = wall.elapsed().as_secs_f64().into();
    if a.json {
        println!("{j}");
    } else {
        println!(
            "field {} ({}): {} trajectories × {} steps ({})",
            k.name,
            a.file.display(),
            n,
            steps,
            method
        );
        println!(
            "backend: {backend} | adapter: {adapter}{}",
            if note.is_empty() {
                String::new()
            } else {
                format!(" | {note}")
            }
        );
        match kernel_time {
            Some(kt) => println!("time: {seconds:.6} s end to end, {:.6} s kernel ({traj_steps:.3e} trajectory-steps/s)", kt.as_secs_f64()),
            None => println!("time: {seconds:.6} s ({traj_steps:.3e} trajectory-steps/s)"),
        }
        if let Some(out) = &a.out {
            println!("wrote {} ({} × {})", out.display(), n, dim);
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// A tolerance option: one positive finite value, or one per state separated
/// by commas.
fn parse_tolerance(flag: &str, s: &str) -> Result<Vec<f64>, vgpu::Error> {
    s.split(',')
        .map(|x| {
            let v: f64 = x.trim().parse().map_err(|_| {
                usage(format!(
                    "{flag} {s:?}: {x:?} is not a number (e.g. 1e-6 or 1e-6,1e-8)"
                ))
            })?;
            if !(v.is_finite() && v > 0.0) {
                return Err(usage(format!(
                    "{flag} {s:?}: {v} is not a tolerance (positive and finite)"
                )));
            }
            Ok(v)
        })
        .collect()
}

/// A numeric `.npy` array as `f64` values with its shape (f64, f32, i64, i32).
fn read_numeric(
    flag: &str,
    path: &std::path::Path,
    limits: &Limits,
) -> Result<(Vec<usize>, Vec<f64>), vgpu::Error> {
    let io = |e: String| vgpu::Error::Io {
        path: format!("{flag} {}", path.display()),
        source: std::io::Error::other(e),
    };
    if !path.exists() {
        return Err(io("no such file".into()));
    }
    let shape = limits.npy(path)?;
    macro_rules! try_read {
        ($t:ty) => {
            if let Ok(a) = read_npy::<_, ndarray::ArrayD<$t>>(path) {
                let shape = a.shape().to_vec();
                return Ok((shape, a.iter().map(|&v| v as f64).collect()));
            }
        };
    }
    try_read!(f64);
    try_read!(f32);
    try_read!(i64);
    try_read!(i32);
    Err(io(format!(
        "not a .npy array of f64, f32, i64 or i32 (shape {shape:?})"
    )))
}

/// `--saveat`: `T0:T1:K` (numpy.linspace(T0, T1, K)) or a 1-D `.npy`.
fn parse_saveat(s: &str, limits: &Limits) -> Result<Vec<f64>, vgpu::Error> {
    if s.ends_with(".npy") {
        let (shape, v) = read_numeric("--saveat", std::path::Path::new(s), limits)?;
        if shape.len() != 1 {
            return Err(usage(format!(
                "--saveat {s}: save times must be a 1-D array, this one has shape {shape:?}"
            )));
        }
        return Ok(v);
    }
    let parts: Vec<&str> = s.split(':').collect();
    let [a, b, k] = parts[..] else {
        return Err(usage(format!(
            "--saveat {s:?}: expected T0:T1:K or FILE.npy"
        )));
    };
    let num = |x: &str| {
        x.trim()
            .parse::<f64>()
            .map_err(|_| usage(format!("--saveat {s:?}: {x:?} is not a number")))
    };
    let (a, b) = (num(a)?, num(b)?);
    let k: usize = k
        .trim()
        .parse()
        .ok()
        .filter(|&k| k >= 1)
        .ok_or_else(|| usage(format!("--saveat {s:?}: K must be a whole number ≥ 1")))?;
    limits.memory(
        &format!("--saveat {s:?}"),
        limits.bytes(&format!("--saveat {s:?}"), k as u64, 8)?,
    )?;
    let step = if k > 1 { (b - a) / (k - 1) as f64 } else { 0.0 };
    Ok((0..k)
        .map(|i| if i + 1 == k { b } else { a + i as f64 * step })
        .collect())
}

/// A driver error with the command-line option it comes from.
fn name_the_adaptive_option(e: vgpu::Error) -> vgpu::Error {
    let vgpu::Error::Adaptive(ae) = &e else {
        return name_the_option(e);
    };
    let flag = match ae {
        AdaptiveError::BadTolerance { option, .. }
        | AdaptiveError::BadStepOption { option, .. } => {
            format!("--{option}")
        }
        AdaptiveError::ZeroMaxIters => "--maxiters".into(),
        AdaptiveError::BadSaveat { .. } => "--saveat".into(),
        AdaptiveError::BadSpan { .. } => "--t / --tspan".into(),
        AdaptiveError::ShapeMismatch { what, .. } => match *what {
            "u0" | "y0" => "--u0".into(),
            "spans" => "--tspan".into(),
            "rtol" => "--rtol".into(),
            "atol" => "--atol".into(),
            other => other.to_string(),
        },
        _ => return e,
    };
    usage(format!("{flag}: {ae}"))
}

/// The adaptive outputs: `out` ((N, D), or (N, K, D) with save times) and
/// beside it `STEM.status.npy` ((N,) u8 status codes) and `STEM.steps.npy`
/// ((N, 2) u64: accepted, rejected), renamed together ([`OutputSet`]).
fn write_adaptive_outputs(
    out: &std::path::Path,
    o: &vgpu::ir::adaptive::AdaptiveOutput,
) -> Result<(), vgpu::Error> {
    let (n, k, d) = (o.n, o.saveat.len(), o.dim);
    let (values, shape) = if k > 0 {
        (&o.saved, vec![n, k, d])
    } else {
        (&o.end, vec![n, d])
    };
    let mut set = OutputSet::new();
    set.write(out, |tmp| {
        let shape = ndarray::IxDyn(&shape);
        match values {
            Buffer::F64(v) => write_npy(
                tmp,
                &ndarray::ArrayD::from_shape_vec(shape, v.to_vec()).map_err(|e| e.to_string())?,
            ),
            other => {
                let v: Vec<f32> = (0..other.len())
                    .map(|i| other.get(i).as_f64() as f32)
                    .collect();
                write_npy(
                    tmp,
                    &ndarray::ArrayD::from_shape_vec(shape, v).map_err(|e| e.to_string())?,
                )
            }
        }
        .map_err(|e| e.to_string())
    })?;
    let stem = out.with_extension("");
    let beside = |what: &str| PathBuf::from(format!("{}.{what}.npy", stem.display()));
    set.write(&beside("status"), |tmp| {
        let codes: Array1<u8> = o.stats.iter().map(|s| s.status.code()).collect();
        write_npy(tmp, &codes).map_err(|e| e.to_string())
    })?;
    set.write(&beside("steps"), |tmp| {
        let steps: Vec<u64> = o
            .stats
            .iter()
            .flat_map(|s| [s.accepted, s.rejected])
            .collect();
        let a = Array2::from_shape_vec((n, 2), steps).map_err(|e| e.to_string())?;
        write_npy(tmp, &a).map_err(|e| e.to_string())
    })?;
    set.commit()
}

/// `vgpu ensemble --method tsit5|dp5|bs3|vern7 …`: an adaptive ensemble on
/// the CPU, through [`Dispatcher::adaptive`].
fn run_adaptive(
    a: EnsembleArgs,
    choice: MethodChoice,
    split: Option<&Split>,
) -> Result<ExitCode, vgpu::Error> {
    let MethodChoice::Adaptive(method) = choice else {
        return Err(usage(format!("--method {}: not adaptive", a.method)));
    };
    if let Some(dt) = a.dt {
        return Err(usage(format!(
            "--dt {dt}: --dt is the step of the fixed-step methods (rk4, euler); \
             --method {method} chooses its own steps (set the first with --dt0)"
        )));
    }
    let limits = limits(&a)?;
    let k = compile_file(&a.file)?;
    let dim = k.states.len();
    let (threads, capped) = limits.threads(a.threads);
    if let Some(note) = capped {
        eprintln!("note: {note}");
    }
    let par = if a.threads == 0 {
        Par::Auto
    } else {
        Par::Rayon(threads)
    };
    if a.n == 0 {
        return Err(usage("--n 0: nothing to integrate"));
    }
    if a.n > u32::MAX as usize {
        return Err(usage(format!("--n {}: at most 2^32 - 1 trajectories", a.n)));
    }
    let mut opts = AdaptiveEnsemble::new(method).par(par);
    if let Some(r) = &a.adaptive.rtol {
        opts = opts.rtol_per_component(parse_tolerance("--rtol", r)?);
    }
    if let Some(t) = &a.adaptive.atol {
        opts = opts.atol_per_component(parse_tolerance("--atol", t)?);
    }
    if let Some(h) = a.adaptive.dt0 {
        opts = opts.dt0(h);
    }
    if let Some(h) = a.adaptive.dtmin {
        opts = opts.dtmin(h);
    }
    if let Some(h) = a.adaptive.dtmax {
        opts = opts.dtmax(h);
    }
    if let Some(m) = a.adaptive.maxiters {
        limits.steps(&format!("--maxiters {m}"), m)?;
        opts = opts.maxiters(m);
    }
    match a.adaptive.controller.as_deref() {
        None | Some("pi") => {}
        Some("i") => {
            opts = opts.controller(vgpu::field::adaptive::PiController {
                beta2: 0.0,
                beta1: 1.0 / f64::from(method.order()),
                ..vgpu::field::adaptive::PiController::for_order(method.order())
            })
        }
        Some(other) => return Err(usage(format!("--controller {other:?}: expected pi or i"))),
    }
    if a.adaptive.gpu_chunk == Some(0) {
        return Err(usage(
            "--gpu-chunk 0: a chunk holds at least one trajectory",
        ));
    }
    let saveat = match &a.adaptive.saveat {
        Some(s) => parse_saveat(s, &limits)?,
        None => Vec::new(),
    };
    let k_save = saveat.len();
    opts = opts.saveat(saveat);
    let spans = match &a.adaptive.tspan {
        Some(path) => {
            let want = |shape: &[usize]| {
                if shape != [a.n, 2] {
                    return Err(usage(format!(
                        "--tspan {}: expected shape (N, 2) = ({}, 2) of (t0, t1) rows, got {shape:?}",
                        path.display(),
                        a.n
                    )));
                }
                Ok(())
            };
            // A slice reads only its rows.
            let v = match split {
                Some(s) => vgpu::shard::read_npy_rows(path, s.lo, s.hi, &limits, &want)?,
                None => {
                    let (shape, v) = read_numeric("--tspan", path, &limits)?;
                    want(&shape)?;
                    v
                }
            };
            v.chunks(2).map(|r| (r[0], r[1])).collect()
        }
        None => vec![parse_span(&a.t)?],
    };
    let u0 = match &a.adaptive.u0 {
        Some(path) => {
            let want = |shape: &[usize]| {
                if shape != [a.n, dim] {
                    return Err(usage(format!(
                        "--u0 {}: expected shape (N, state) = ({}, {dim}), got {shape:?}",
                        path.display(),
                        a.n
                    )));
                }
                Ok(())
            };
            // A slice reads only its rows.
            Some(match split {
                Some(s) => vgpu::shard::read_npy_rows(path, s.lo, s.hi, &limits, &want)?,
                None => {
                    let (shape, v) = read_numeric("--u0", path, &limits)?;
                    want(&shape)?;
                    v
                }
            })
        }
        None => None,
    };
    let n = split.map_or(a.n, Split::n);
    // Outputs and working states, checked against --max-memory before anything
    // of that size is allocated.
    let elem: u64 = if k.float_type() == ScalarType::F64 {
        8
    } else {
        4
    };
    let per_traj = (dim as u64)
        .saturating_mul(k_save as u64 + 2)
        .saturating_mul(elem)
        .saturating_add(64);
    let what = format!("{n} trajectories of {dim} states, {k_save} save times");
    limits.memory(&what, limits.bytes(&what, n as u64, per_traj)?)?;
    let args = build_args(&k, &a.params, a.n, &limits)?;
    let backend = vgpu::resolve_backend(a.backend.as_deref())?;
    let run = AdaptiveRun {
        n,
        spans,
        u0,
        options: opts,
        slice: split.map(Split::slice),
    };
    let gpu = vgpu::gpu::GpuAdaptiveOptions {
        max_chunk: a.adaptive.gpu_chunk,
        timing: a.kernel_time,
    };
    let engine: vgpu_ir::Engine = a.cpu_engine.parse().map_err(vgpu::Error::Usage)?;
    // The bar counts trajectories the CPU driver finished; a GPU run announces
    // none, so the bar stays hidden there. Long: a million trajectories.
    let draw = draw_progress(&a.progress, n >= 1 << 20)?;
    let mut run = run;
    let r = with_progress(draw, "trajectories", |p| {
        if let Some(p) = p {
            run.options = run.options.clone().progress(p);
        }
        Dispatcher::new().cpu_engine(engine).adaptive_with(
            &AdaptiveJob {
                kernel: &k,
                args: &args,
                run: &run,
                backend,
            },
            &gpu,
        )
    })
    .map_err(name_the_adaptive_option)?;
    let mut shard_json = serde_json::json!({});
    match (split, &a.out) {
        (Some(s), _) => {
            let fig = Figures {
                seconds: r.seconds,
                backend: r.backend.to_string(),
            };
            let parts = adaptive_parts(&r.output);
            if !finish_split(s, &a, &k.name, &parts, fig, &mut shard_json)? {
                return Ok(ExitCode::SUCCESS);
            }
        }
        (None, Some(out)) => write_adaptive_outputs(out, &r.output)?,
        (None, None) => {}
    }
    let counts = r.status_counts();
    let (accepted, rejected) = r.total_steps();
    let note = r
        .fallback
        .as_deref()
        .map_or(String::new(), |why| format!("on the CPU: {why}"));
    let statuses: Vec<String> = STATUS_NAMES
        .iter()
        .zip(counts)
        .filter(|(_, c)| *c > 0)
        .map(|(name, c)| format!("{c} {name}"))
        .collect();
    if a.json {
        let status_counts: serde_json::Map<String, serde_json::Value> = STATUS_NAMES
            .iter()
            .zip(counts)
            .map(|(name, c)| (name.to_string(), c.into()))
            .collect();
        let mut j = serde_json::json!({
            "field": k.name, "file": a.file.display().to_string(), "backend": r.backend.to_string(),
            "adapter": r.adapter, "n": n, "method": method.name(), "seconds": r.seconds,
            "saveat": k_save, "status_counts": status_counts, "accepted_steps": accepted,
            "rejected_steps": rejected, "note": note,
            "kernel_seconds": r.kernel_time.map(|d| d.as_secs_f64()), "gpu_chunks": r.chunks,
        });
        if let (Some(obj), Some(more)) = (j.as_object_mut(), shard_json.as_object()) {
            obj.extend(more.clone());
        }
        println!("{j}");
    } else {
        println!(
            "field {} ({}): {} trajectories, {method} (adaptive)",
            k.name,
            a.file.display(),
            n
        );
        println!(
            "backend: {} | adapter: {}{}",
            r.backend,
            r.adapter,
            if note.is_empty() {
                String::new()
            } else {
                format!(" | {note}")
            }
        );
        println!(
            "status: {} | steps: {accepted} accepted, {rejected} rejected | time: {:.6} s",
            statuses.join(", "),
            r.seconds
        );
        if let Some(kt) = r.kernel_time {
            println!(
                "kernel: {:.6} ms on the device ({} dispatches)",
                kt.as_secs_f64() * 1e3,
                r.chunks
            );
        }
        if let Some(out) = &a.out {
            let stem = out.with_extension("");
            let shape = if k_save > 0 {
                format!("{n} × {k_save} × {dim}")
            } else {
                format!("{n} × {dim}")
            };
            println!(
                "wrote {} ({shape}), {}.status.npy, {}.steps.npy",
                out.display(),
                stem.display(),
                stem.display()
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}
