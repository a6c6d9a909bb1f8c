//! The options of `vgpu ensemble`, the limits they set, and the checks and
//! parsing of the options that need no file: time spans, tolerances, and the
//! naming of the option behind a front-end or driver error.

use clap::Args as ClapArgs;
use std::path::PathBuf;
use vgpu::field::adaptive::AdaptiveError;
use vgpu::field::Par;
use vgpu::limits::parse_size;
use vgpu::Limits;

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
pub(super) fn ir_limits(a: &EnsembleArgs) -> vgpu::ir::Limits {
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
pub(super) fn name_the_option(e: vgpu::Error) -> vgpu::Error {
    match e {
        vgpu::Error::Ir(vgpu::ir::IrError::Limit { kind, .. }) => {
            let flag = format!("--{}", kind.field().replace('_', "-"));
            vgpu::Error::Usage(format!("{e} [vgpu ensemble: {flag}]"))
        }
        e => e,
    }
}

/// The limits of this run: the machine's, with `--max-memory` and `--max-steps`.
pub(super) fn limits(a: &EnsembleArgs) -> Result<Limits, vgpu::Error> {
    let mut l = Limits {
        max_steps: a.max_steps,
        ..Limits::default()
    };
    if let Some(m) = &a.max_memory {
        l.max_memory = parse_size(m).map_err(|e| usage(format!("--max-memory {e}")))?;
    }
    Ok(l)
}

/// A usage error of `vgpu ensemble`.
pub(super) fn usage(m: impl Into<String>) -> vgpu::Error {
    vgpu::Error::Usage(format!("ensemble: {}", m.into()))
}

/// `--t T0:T1`.
pub(super) fn parse_span(s: &str) -> Result<(f64, f64), vgpu::Error> {
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

/// A tolerance option: one positive finite value, or one per state separated
/// by commas.
pub(super) fn parse_tolerance(flag: &str, s: &str) -> Result<Vec<f64>, vgpu::Error> {
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

/// A driver error with the command-line option it comes from.
pub(super) fn name_the_adaptive_option(e: vgpu::Error) -> vgpu::Error {
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

/// The CPU workers of this run: one per core for `--threads 0`, else
/// `--threads` capped by the machine's limit (with a note on stderr).
pub(super) fn par(a: &EnsembleArgs, limits: &Limits) -> Par {
    let (threads, capped) = limits.threads(a.threads);
    if let Some(note) = capped {
        eprintln!("note: {note}");
    }
    if a.threads == 0 {
        Par::Auto
    } else {
        Par::Rayon(threads)
    }
}
