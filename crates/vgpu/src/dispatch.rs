//! The one dispatch API: where a launch runs and what happens when the GPU cannot
//! run it. The `vgpu` command and the Python package both go through here, so
//! the backend choice (`cpu | gpu | auto`, `VGPU_BACKEND`), the pre-checks and the
//! CPU-fallback rule (and its counting) are decided in one place.
//!
//! ```no_run
//! use vgpu::dispatch::{resolve_backend, Dispatcher, EnsembleJob};
//! let k = vgpu::compile_file(std::path::Path::new("examples/lorenz.field"))?;
//! let mut args = vgpu::Args::new(&k);
//! args.buffer("rho", vec![28.0f32; 1024])?;
//! let integration = vgpu::Integration::new(1024, 0.0, 1.0, 1e-3);
//! let mut d = Dispatcher::new();
//! let job = EnsembleJob { kernel: &k, args: &args, integration: &integration,
//!                         backend: resolve_backend(None)?, kernel_time: None,
//!                         limits: Default::default() };
//! let run = d.ensemble(&job)?;
//! println!("{} ({} fallbacks)", run.backend, d.cpu_fallbacks());
//! # Ok::<(), vgpu::Error>(())
//! ```

use crate::Error;
use std::time::{Duration, Instant};
use vgpu_field::adaptive::AdaptiveMethod;
use vgpu_gpu::{
    run_adaptive_gpu, run_ensemble_gpu_with, ActiveBackend, AdaptiveGpuError, EnsembleError,
    GpuAdaptiveOptions, GpuPhases, KernelCache,
};
use vgpu_ir::adaptive::{run_adaptive_cpu_on, AdaptiveIrError, AdaptiveOutput, AdaptiveRun};
use vgpu_ir::Engine;
use vgpu_ir::{run_cpu_on, Args, Buffer, Integration, Kernel};

/// Which executor a launch is asked to use: `cpu`, `gpu` or `auto`.
///
/// The same type as the kernel cache's (`vgpu_gpu::BackendChoice`): one
/// vocabulary from the environment variable to the executor.
pub type Backend = vgpu_gpu::BackendChoice;

/// The one rule for choosing a backend: an explicit choice (a command-line
/// option, a Python argument) wins; otherwise `VGPU_BACKEND`; otherwise `auto`.
/// An unknown name is an error that names the accepted ones.
pub fn resolve_backend(explicit: Option<&str>) -> Result<Backend, Error> {
    let parsed = match explicit {
        Some(name) => name.parse::<Backend>(),
        None => Backend::from_env(),
    };
    parsed.map_err(|_| {
        let (what, value) = match explicit {
            Some(v) => ("backend", v.to_string()),
            None => (
                Backend::ENV,
                std::env::var(Backend::ENV).unwrap_or_default(),
            ),
        };
        Error::Usage(format!("{what} {value:?}: expected cpu, gpu or auto"))
    })
}

/// One ensemble launch: a compiled `.field` kernel, its arguments, how to
/// integrate it and where.
#[derive(Debug, Clone, Copy)]
pub struct EnsembleJob<'a> {
    /// The kernel.
    pub kernel: &'a Kernel,
    /// Its arguments (parameters and buffers).
    pub args: &'a Args,
    /// Trajectories, span, step, method, CPU parallelism and progress.
    pub integration: &'a Integration,
    /// Where to run it.
    pub backend: Backend,
    /// GPU only: also time the kernel alone over this many dispatches.
    pub kernel_time: Option<u32>,
    /// The front end's size limits (shared and flux sizes, phase repetitions
    /// and steps), the same on both backends.
    pub limits: vgpu_ir::Limits,
}

/// What an ensemble launch produced, and where.
#[derive(Debug, Clone)]
pub struct EnsembleRun {
    /// The executor that ran it.
    pub backend: ActiveBackend,
    /// The GPU adapter, or `"N threads"` on the CPU.
    pub adapter: String,
    /// Trajectories.
    pub n: usize,
    /// State components per trajectory.
    pub dim: usize,
    /// Final states, trajectory-major (`n × dim`), in the field's float type.
    pub states: Buffer,
    /// Flux outputs by name, in declaration order.
    pub fluxes: Vec<(String, Buffer)>,
    /// Steps integrated.
    pub steps: usize,
    /// Host-to-host time of the launch (GPU: conversions, emit, compile on a
    /// miss, transfers, checks; not the `kernel_time` dispatches).
    pub seconds: f64,
    /// Device time of one dispatch, when asked for.
    pub kernel_time: Option<Duration>,
    /// Why it ran on the CPU under `auto`, if it did for a reason other than
    /// the choice itself (no adapter, a kernel the GPU cannot hold, a device error).
    pub fallback: Option<String>,
    /// GPU runs: where `seconds` went (prepare, compile, device, check).
    pub gpu_phases: Option<GpuPhases>,
    /// GPU runs that opened this dispatcher's kernel cache: how long that took
    /// (the process's device is created then, once; not part of `seconds`).
    pub gpu_setup: Option<Duration>,
}

/// Runs launches on the chosen backend, holding the GPU kernel cache between
/// them (a kernel compiles once per dispatcher) and counting CPU fallbacks.
#[derive(Debug, Default)]
pub struct Dispatcher {
    cache: Option<KernelCache>,
    cpu_fallbacks: u64,
    cpu_engine: Engine,
}

impl Dispatcher {
    /// A dispatcher with no GPU device yet (created on the first GPU launch).
    pub fn new() -> Self {
        Self::default()
    }

    /// Runs the CPU's launches of unphased fields (adaptive and fixed-step) on
    /// `engine` ([`Engine::Jit`], the default: native code where the kernel
    /// and host allow it, else the evaluator; [`Engine::Eval`]: the column
    /// evaluator, the reference). Same bits.
    pub fn cpu_engine(mut self, engine: Engine) -> Self {
        self.cpu_engine = engine;
        self
    }

    /// How many launches asked for `auto` ran on the CPU because the GPU could
    /// not run them.
    pub fn cpu_fallbacks(&self) -> u64 {
        self.cpu_fallbacks
    }

    /// Runs an ensemble. `gpu` never falls back: what the GPU cannot run is an
    /// error naming why. `auto` runs on the GPU when the kernel passes the GPU
    /// pre-checks and an adapter exists, otherwise on the CPU, counted and with
    /// the reason in [`EnsembleRun::fallback`]. `cpu` never touches the GPU.
    pub fn ensemble(&mut self, job: &EnsembleJob<'_>) -> Result<EnsembleRun, Error> {
        let fallback = match job.backend {
            Backend::Cpu => None,
            Backend::Gpu => return self.ensemble_gpu(job).map_err(Error::from),
            Backend::Auto => match self.ensemble_gpu(job) {
                Ok(run) => return Ok(run),
                Err(e) if e.cpu_can_run() => {
                    self.cpu_fallbacks += 1;
                    Some(match e {
                        EnsembleError::Gpu(e @ vgpu_gpu::GpuError::NoAdapter { .. }) => {
                            format!("no GPU ({e})")
                        }
                        EnsembleError::Gpu(e) => format!("the GPU failed ({e})"),
                        e => e.to_string(),
                    })
                }
                Err(e) => return Err(e.into()),
            },
        };
        let start = Instant::now();
        let out = run_cpu_on(
            job.kernel,
            job.args,
            job.integration,
            &job.limits,
            self.cpu_engine,
        )?;
        Ok(EnsembleRun {
            backend: ActiveBackend::Cpu,
            adapter: format!("{} threads", job.integration.par.threads()),
            n: out.n,
            dim: out.dim,
            states: out.states,
            fluxes: out.fluxes,
            steps: out.steps,
            seconds: start.elapsed().as_secs_f64(),
            kernel_time: None,
            fallback,
            gpu_phases: None,
            gpu_setup: None,
        })
    }

    /// The GPU path: pre-checks (the kernel's types and constructs), the device
    /// (created once), the launch.
    fn ensemble_gpu(&mut self, job: &EnsembleJob<'_>) -> Result<EnsembleRun, EnsembleError> {
        let k = job.kernel;
        if let Some(slice) = job.integration.slice {
            if k.is_phased() && slice != vgpu_ir::Slice::whole(job.integration.n) {
                return Err(EnsembleError::Ir(vgpu_ir::IrError::Unsupported {
                    kernel: k.name.clone(),
                    backend: "gpu".into(),
                    reason: format!(
                        "{GPU_NO_SLICES} (trajectories {}..{} of {})",
                        slice.first,
                        slice.first + job.integration.n,
                        slice.total
                    ),
                }));
            }
        }
        if k.is_phased() {
            vgpu_ir::wgsl::phased::check_phased_wgsl(k)?;
        } else {
            vgpu_ir::wgsl::check_wgsl(k)?;
        }
        let mut gpu_setup = None;
        let cache = match &mut self.cache {
            Some(c) => c,
            slot @ None => {
                let start = Instant::now();
                let c = slot.insert(KernelCache::new()?);
                gpu_setup = Some(start.elapsed());
                c
            }
        };
        let r = run_ensemble_gpu_with(
            cache,
            k,
            job.args,
            job.integration,
            job.kernel_time,
            &job.limits,
        )?;
        Ok(EnsembleRun {
            backend: ActiveBackend::Gpu,
            adapter: cache.adapter().to_string(),
            n: job.integration.n,
            dim: k.states.len(),
            states: Buffer::F32(r.states),
            fluxes: r.fluxes,
            steps: r.steps,
            seconds: r.end_to_end.as_secs_f64(),
            kernel_time: r.kernel_time,
            fallback: None,
            gpu_phases: Some(r.phases),
            gpu_setup,
        })
    }
}

impl From<EnsembleError> for Error {
    fn from(e: EnsembleError) -> Self {
        match e {
            EnsembleError::Ir(e) => Error::Ir(e),
            EnsembleError::Gpu(e) => Error::Gpu(e),
            other => Error::Ensemble(Box::new(other)),
        }
    }
}

/// Why a slice of a launch (`--shard`, MPI ranks) of a field with phases does
/// not run on the GPU: the phased WGSL launch (a workgroup per block) has no
/// index offset, so `gpu` refuses it (before any adapter is looked for) and
/// `auto` runs it on the CPU with this note. Unphased fixed-step and adaptive
/// slices run on the GPU.
pub const GPU_NO_SLICES: &str =
    "a slice of a field with phases runs on the CPU so far (the phased WGSL launch has no index offset)";

/// An integrator by name: a fixed-step method (`euler`, `rk4`) or an adaptive
/// embedded pair (`tsit5`, `dp5`, `bs3`, `vern7`). The one parser of method
/// names for the `vgpu` command and the Python package.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MethodChoice {
    /// A fixed-step Butcher tableau, run through [`Dispatcher::ensemble`].
    Fixed(vgpu_field::Method),
    /// An adaptive pair, run through [`Dispatcher::adaptive`].
    Adaptive(AdaptiveMethod),
}

impl MethodChoice {
    /// The accepted names, as an error message lists them.
    pub const NAMES: &'static str =
        "euler or rk4, or an adaptive tsit5, dp5, bs3, vern7 or rosenbrock23";

    /// Parses a method name (case-insensitive).
    ///
    /// # Errors
    /// [`Error::Usage`] naming `option` (`--method`, `method=`) and the
    /// accepted names.
    pub fn parse(name: &str, option: &str) -> Result<MethodChoice, Error> {
        if let Ok(m) = name.parse::<AdaptiveMethod>() {
            return Ok(MethodChoice::Adaptive(m));
        }
        match name.to_ascii_lowercase().as_str() {
            "euler" => Ok(MethodChoice::Fixed(vgpu_field::Method::Euler)),
            "rk4" => Ok(MethodChoice::Fixed(vgpu_field::Method::Rk4)),
            _ => Err(Error::Usage(format!(
                "{option} {name:?}: unknown method (expected {})",
                Self::NAMES
            ))),
        }
    }

    /// The method's name.
    pub fn name(self) -> &'static str {
        match self {
            MethodChoice::Fixed(m) => m.name(),
            MethodChoice::Adaptive(m) => m.name(),
        }
    }

    /// Whether it is an adaptive pair.
    pub fn is_adaptive(self) -> bool {
        matches!(self, MethodChoice::Adaptive(_))
    }
}

/// One adaptive ensemble launch: an unphased `.field` kernel, its arguments,
/// the trajectories, spans, initial states and the driver's options, and where.
#[derive(Debug, Clone, Copy)]
pub struct AdaptiveJob<'a> {
    /// The kernel (without phases).
    pub kernel: &'a Kernel,
    /// Its arguments (parameters and buffers).
    pub args: &'a Args,
    /// Trajectories, spans, initial states, method, tolerances, step limits,
    /// save times, CPU parallelism.
    pub run: &'a AdaptiveRun,
    /// Where to run it: `cpu`, `gpu` (never falls back) or `auto` (the GPU
    /// when it can run the kernel, else the CPU, counted, with the reason).
    pub backend: Backend,
}

/// What an adaptive ensemble launch produced.
#[derive(Debug, Clone)]
pub struct AdaptiveEnsembleRun {
    /// The executor that ran it.
    pub backend: ActiveBackend,
    /// The GPU adapter, or `"N threads"` on the CPU.
    pub adapter: String,
    /// Endpoints, save points, statuses and step counts.
    pub output: AdaptiveOutput,
    /// Host time of the launch (GPU: host in to host out, compile on a miss
    /// included, the `kernel_time` dispatches not).
    pub seconds: f64,
    /// GPU only, when asked for: device time of the whole ensemble.
    pub kernel_time: Option<Duration>,
    /// GPU only: dispatches (chunks of trajectories) the ensemble took.
    pub chunks: usize,
    /// Why it ran on the CPU under `auto`.
    pub fallback: Option<String>,
}

impl AdaptiveEnsembleRun {
    /// How many trajectories ended with each status, indexed by
    /// [`vgpu_field::adaptive::Status::code`] (`[success, maxiters, dtmin, nonfinite, terminated]`).
    pub fn status_counts(&self) -> [u64; 5] {
        let mut c = [0u64; 5];
        for s in &self.output.stats {
            c[s.status.code() as usize] += 1;
        }
        c
    }
    /// Accepted and rejected steps, summed over the trajectories.
    pub fn total_steps(&self) -> (u64, u64) {
        self.output
            .stats
            .iter()
            .fold((0, 0), |(a, r), s| (a + s.accepted, r + s.rejected))
    }
}

/// The status names in code order, as summaries and JSON spell them.
pub const STATUS_NAMES: [&str; 5] = ["success", "maxiters", "dtmin", "nonfinite", "terminated"];

impl Dispatcher {
    /// Runs an adaptive ensemble ([`Dispatcher::adaptive_with`] with the
    /// GPU's defaults: chunks as large as the adapter allows, no timing).
    ///
    /// # Errors
    /// As [`Dispatcher::adaptive_with`].
    pub fn adaptive(&mut self, job: &AdaptiveJob<'_>) -> Result<AdaptiveEnsembleRun, Error> {
        self.adaptive_with(job, &GpuAdaptiveOptions::default())
    }

    /// Runs an adaptive ensemble, the same rule as [`Dispatcher::ensemble`]:
    /// `gpu` never falls back (what the GPU cannot run is an error naming
    /// why: an `f64` field without `SHADER_F64`, an `f64` `sin`, …); `auto`
    /// runs on the GPU when the kernel passes the GPU pre-checks and an adapter
    /// exists, otherwise on the CPU, counted, with the reason in
    /// [`AdaptiveEnsembleRun::fallback`]; `cpu` never touches the GPU. A phased
    /// kernel is an error on every backend (adaptive steps need a field without
    /// barriers). One trajectory's failure is its status, never an error.
    ///
    /// # Errors
    /// [`Error::Usage`] for a phased kernel; [`Error::Ir`] for the kernel, its
    /// arguments and what the GPU refuses; [`Error::Adaptive`] for the options
    /// and shapes (naming the option); [`Error::Gpu`] for the device.
    pub fn adaptive_with(
        &mut self,
        job: &AdaptiveJob<'_>,
        gpu: &GpuAdaptiveOptions,
    ) -> Result<AdaptiveEnsembleRun, Error> {
        let method = job.run.options.method();
        if job.kernel.is_phased() {
            return Err(Error::Usage(format!(
                "kernel `{}` has phases (shared sub-fields, barriers or flux): adaptive \
                 methods ({method}) need a field without phases; use rk4 or euler",
                job.kernel.name
            )));
        }
        let fallback = match job.backend {
            Backend::Cpu => None,
            Backend::Gpu => return self.adaptive_gpu(job, gpu).map_err(Error::from),
            Backend::Auto => match self.adaptive_gpu(job, gpu) {
                Ok(run) => return Ok(run),
                Err(e) if e.cpu_can_run() => {
                    self.cpu_fallbacks += 1;
                    Some(match e {
                        AdaptiveGpuError::Gpu(e @ vgpu_gpu::GpuError::NoAdapter { .. }) => {
                            format!("no GPU ({e})")
                        }
                        AdaptiveGpuError::Gpu(e) => format!("the GPU failed ({e})"),
                        e => e.to_string(),
                    })
                }
                Err(e) => return Err(e.into()),
            },
        };
        let start = Instant::now();
        let output = run_adaptive_cpu_on(job.kernel, job.args, job.run, self.cpu_engine);
        let output = output.map_err(|e| match e {
            AdaptiveIrError::Ir(e) => Error::Ir(e),
            AdaptiveIrError::Adaptive(e) => Error::Adaptive(e),
            other => Error::Usage(other.to_string()),
        })?;
        Ok(AdaptiveEnsembleRun {
            backend: ActiveBackend::Cpu,
            adapter: format!("{} threads", job.run.options.parallelism().threads()),
            output,
            seconds: start.elapsed().as_secs_f64(),
            kernel_time: None,
            chunks: 0,
            fallback,
        })
    }

    /// The GPU path of an adaptive ensemble: pre-checks (before any device is
    /// created), the device (once), the chunked launch.
    fn adaptive_gpu(
        &mut self,
        job: &AdaptiveJob<'_>,
        gpu: &GpuAdaptiveOptions,
    ) -> Result<AdaptiveEnsembleRun, AdaptiveGpuError> {
        vgpu_ir::wgsl::adaptive::check_adaptive_wgsl(job.kernel)?;
        let cache = match &mut self.cache {
            Some(c) => c,
            slot @ None => slot.insert(KernelCache::new()?),
        };
        let r = run_adaptive_gpu(cache, job.kernel, job.args, job.run, gpu)?;
        Ok(AdaptiveEnsembleRun {
            backend: ActiveBackend::Gpu,
            adapter: cache.adapter().to_string(),
            output: r.output,
            seconds: r.end_to_end.as_secs_f64(),
            kernel_time: r.kernel_time,
            chunks: r.chunks,
            fallback: None,
        })
    }
}

impl From<AdaptiveGpuError> for Error {
    fn from(e: AdaptiveGpuError) -> Self {
        match e {
            AdaptiveGpuError::Ir(e) => Error::Ir(e),
            AdaptiveGpuError::Adaptive(e) => Error::Adaptive(e),
            AdaptiveGpuError::Gpu(e) => Error::Gpu(e),
            other => Error::Usage(other.to_string()),
        }
    }
}
