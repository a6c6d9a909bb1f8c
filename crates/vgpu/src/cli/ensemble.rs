//! `vgpu ensemble FILE.field …`: integrate a `.field` kernel over N trajectories
//! on the CPU or a GPU and write the endpoint states as an (N, state) `.npy`.

use clap::Args as ClapArgs;
use indicatif::ProgressDrawTarget;
use ndarray::{Array1, Array2};
use ndarray_npy::{read_npy, write_npy};
use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use vgpu::field::executor::Progress;
use vgpu::field::{Method, Par};
use vgpu::ir::{compile_file, Arg, Args, Buffer, Integration, Kernel, ScalarType, Value};
use vgpu::limits::parse_size;
use vgpu::output::OutputSet;
use vgpu::{Dispatcher, EnsembleJob, Limits};

/// Options of `vgpu ensemble`.
#[derive(Debug, ClapArgs)]
pub(crate) struct EnsembleArgs {
    /// The `.field` file (one field).
    pub file: PathBuf,
    /// Trajectories.
    #[arg(long)]
    pub n: usize,
    /// Time span `T0:T1` (fields without phases).
    #[arg(long, default_value = "0:1")]
    pub t: String,
    /// Step size.
    #[arg(long, default_value_t = 0.001)]
    pub dt: f64,
    /// Integrator: euler or rk4.
    #[arg(long, default_value = "rk4")]
    pub method: String,
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
    /// Write the endpoint states here, an (N, state) array (flux outputs go to
    /// `STEM.NAME.npy` beside it).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// CPU worker threads (0: one per core).
    #[arg(long, default_value_t = 0)]
    pub threads: usize,
    /// GPU: also time the kernel alone over this many dispatches.
    #[arg(long)]
    pub kernel_time: Option<u32>,
    /// Print one JSON object (backend, adapter, seconds, kernel seconds, …).
    #[arg(long)]
    pub json: bool,
    /// CPU progress bar of the trajectory-steps done, drawn on stderr only when
    /// it is a terminal: auto (long runs), always or never.
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
}

/// The front end's limits: the defaults, raised or lowered by the options.
fn ir_limits(a: &EnsembleArgs) -> vgpu::ir::Limits {
    let d = vgpu::ir::Limits::default();
    vgpu::ir::Limits {
        max_shared_bytes: a.max_shared_bytes.unwrap_or(d.max_shared_bytes),
        max_flux_elements: a.max_flux_elements.unwrap_or(d.max_flux_elements),
        max_phase_repetitions: a.max_phase_repetitions.unwrap_or(d.max_phase_repetitions),
        max_phase_steps: a.max_phase_steps.unwrap_or(d.max_phase_steps),
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
        match states {
            Buffer::F64(v) => write_npy(
                tmp,
                &Array2::from_shape_vec((n, dim), v.to_vec()).map_err(|e| e.to_string())?,
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

/// Runs `f`, handing it a [`Progress`] counter when `draw`, and meanwhile draws
/// the counter as a bar on stderr (trajectory-steps done of the total), redrawn
/// ten times a second and cleared at the end.
fn with_progress<R>(draw: bool, f: impl FnOnce(Option<Progress>) -> R) -> R {
    if !draw {
        return f(None);
    }
    let p = Progress::new();
    // Hidden until the run has announced its work.
    let bar = indicatif::ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::hidden());
    if let Ok(style) = indicatif::ProgressStyle::with_template(
        "{bar:40} {human_pos}/{human_len} trajectory-steps ({percent}%, {elapsed} elapsed, eta {eta})",
    ) {
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

/// Runs `vgpu ensemble`.
pub(crate) fn run(a: EnsembleArgs) -> Result<ExitCode, vgpu::Error> {
    let k = compile_file(&a.file)?;
    let (t0, t1) = parse_span(&a.t)?;
    let method: Method = a
        .method
        .parse()
        .map_err(|_| usage(format!("--method {:?}: expected euler or rk4", a.method)))?;
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
    let integ = Integration {
        n: a.n,
        block: a.block,
        t0,
        t1,
        dt: a.dt,
        method,
        par,
        progress: None,
    };
    limits.ensemble(&k, &integ)?;
    let args = build_args(&k, &a.params, a.n, &limits)?;
    let backend = vgpu::resolve_backend(a.backend.as_deref())?;
    let dim = k.states.len();
    // The bar counts the CPU executor's trajectory-steps; a GPU run announces no
    // work, so the bar stays hidden there.
    let steps_guess = integ.steps(&k.name).unwrap_or(0).max(1);
    let long = (a.n as f64) * (steps_guess as f64) * (dim.max(1) as f64) > 2e8;
    let draw = match a.progress.as_str() {
        "auto" => long,
        "always" => true,
        "never" => false,
        other => {
            return Err(usage(format!(
                "--progress {other:?}: expected auto, always or never"
            )))
        }
    } && std::io::stderr().is_terminal();
    let run = with_progress(draw, |p| {
        let integ = match p {
            Some(p) => integ.clone().progress(p),
            None => integ.clone(),
        };
        Dispatcher::new().ensemble(&EnsembleJob {
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
    if let Some(out) = &a.out {
        write_outputs(out, a.n, dim, states, fluxes)?;
    }
    let traj_steps = a.n as f64 * steps as f64 / seconds;
    if a.json {
        let j = serde_json::json!({
            "field": k.name, "file": a.file.display().to_string(), "backend": backend, "adapter": adapter,
            "n": a.n, "steps": steps, "method": method.name(), "seconds": seconds,
            "kernel_seconds": kernel_time.map(|d| d.as_secs_f64()), "traj_steps_per_s": traj_steps,
            "note": note,
        });
        println!("{j}");
    } else {
        println!(
            "field {} ({}): {} trajectories × {} steps ({})",
            k.name,
            a.file.display(),
            a.n,
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
            println!("wrote {} ({} × {})", out.display(), a.n, dim);
        }
    }
    Ok(ExitCode::SUCCESS)
}
