//! Adaptive ensembles on the GPU (issue 13): the WGSL of
//! [`vgpu_ir::wgsl::adaptive`] (one invocation integrates one trajectory
//! through its whole adaptive run) compiled once through the
//! [`KernelCache`] and dispatched over **chunks** of trajectories.
//!
//! * **Options as the CPU's.** [`AdaptiveEnsemble::settings`] validates them
//!   (tolerances, step limits, spans, save times) with the CPU driver's own
//!   checks and errors, then they travel in one `cfg` binding: one compiled
//!   kernel per (field, method, float type) serves every tolerance.
//! * **Chunks.** Per-trajectory data (the chunk's `u0` and span rows, final
//!   states, statistics, save points) are bound per chunk, so `n` is bounded
//!   by host memory: a chunk holds as many trajectories as the largest of
//!   those bindings lets fit in the adapter's storage binding and buffer
//!   limits (or fewer, [`GpuAdaptiveOptions::max_chunk`]). Outputs are
//!   allocated whole, up front, with a typed error naming the shape when host
//!   memory refuses; each chunk downloads straight into its rows. The result
//!   does not depend on the chunking: every trajectory reads only its own
//!   inputs.
//! * **f64** needs the adapter's `SHADER_F64`; without it the run is refused
//!   with [`IrError::Unsupported`], which `auto` turns into a CPU run.

use crate::error::GpuError;
use crate::kernel_cache::{Binding, KernelCache, KernelSpec};
use std::time::{Duration, Instant};
use vgpu_field::adaptive::{
    AdaptiveEnsemble, AdaptiveError, AdaptiveMethod, DriverSettings, TrajectoryStats,
};
use vgpu_ir::adaptive::{AdaptiveOutput, AdaptiveRun};
use vgpu_ir::wgsl::adaptive::{
    cfg_values, check_adaptive_wgsl, emit_wgsl_method, flags, launch_words, stats_of,
    ADAPTIVE_WORKGROUP, STATS_WORDS, STATUS_CUT_SHORT,
};
use vgpu_ir::wgsl::phased::fault_error;
use vgpu_ir::{Args, Buffer, IrError, IrFloat, Kernel, ScalarType, Slice};

/// What a GPU adaptive ensemble refuses or fails with.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AdaptiveGpuError {
    /// The kernel, its arguments or what the GPU cannot run
    /// ([`IrError::Unsupported`]: an `f64` field without `SHADER_F64`, a
    /// binding beyond the adapter's limits, …).
    #[error(transparent)]
    Ir(#[from] IrError),
    /// The driver's options and shapes, as the CPU refuses them.
    #[error(transparent)]
    Adaptive(#[from] AdaptiveError),
    /// The GPU.
    #[error(transparent)]
    Gpu(#[from] GpuError),
}

impl AdaptiveGpuError {
    /// Whether the CPU may run what failed here: the GPU refused the kernel or
    /// the device failed (what `--backend auto` falls back on). Bad options,
    /// shapes and faults of the kernel are errors on every backend.
    pub fn cpu_can_run(&self) -> bool {
        matches!(
            self,
            AdaptiveGpuError::Gpu(_) | AdaptiveGpuError::Ir(IrError::Unsupported { .. })
        )
    }
}

/// How to run an adaptive ensemble on the GPU.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GpuAdaptiveOptions {
    /// At most this many trajectories per dispatch (default: as many as the
    /// adapter's binding limits hold).
    pub max_chunk: Option<usize>,
    /// Also measure the device time of the whole ensemble (every chunk's
    /// dispatch), the mean over this many repetitions.
    pub timing: Option<u32>,
}

/// The result of a GPU adaptive ensemble.
#[derive(Debug, Clone)]
pub struct GpuAdaptive {
    /// Endpoints, save points, statuses and step counts: the shapes and types
    /// of the CPU's [`vgpu_ir::adaptive::run_adaptive_cpu`].
    pub output: AdaptiveOutput,
    /// Host-to-host time: validation, shader emitted (and compiled on a miss),
    /// uploads, every chunk's dispatch, downloads, conversion.
    pub end_to_end: Duration,
    /// Device time of the whole ensemble, when asked for.
    pub kernel_time: Option<Duration>,
    /// Whether this call compiled the kernel.
    pub compiled: bool,
    /// Dispatches (chunks) the ensemble took.
    pub chunks: usize,
    /// Trajectories per chunk.
    pub chunk: usize,
}

/// The kernel spec of `k` with the adaptive method `m` (an explicit pair's
/// tableau or Rosenbrock23).
///
/// # Errors
/// [`IrError::Unsupported`] (see [`check_adaptive_wgsl`]); the Jacobian's
/// errors for Rosenbrock23.
pub fn adaptive_spec(k: &Kernel, m: AdaptiveMethod) -> Result<KernelSpec, IrError> {
    let wgsl = emit_wgsl_method(k, m)?;
    Ok(
        KernelSpec::new(&format!("adaptive field {}", k.name), wgsl, "main")
            .specialisation(&format!(
                "adaptive {} {} {}",
                k.name,
                m.name(),
                k.float_type().name()
            ))
            .workgroup_size([ADAPTIVE_WORKGROUP, 1, 1]),
    )
}

/// Integrates `run.n` trajectories of the unphased kernel `k` with `args` by
/// `run.options`' adaptive method on the GPU of `cache`. A trajectory that
/// fails has its status; the others run on.
///
/// # Errors
/// As [`vgpu_ir::adaptive::run_adaptive_cpu`] for the kernel, its arguments
/// and the options; [`IrError::Unsupported`] for what the GPU cannot run;
/// [`GpuError`]s of the device.
pub fn run_adaptive_gpu(
    cache: &mut KernelCache,
    k: &Kernel,
    args: &Args,
    run: &AdaptiveRun,
    opts: &GpuAdaptiveOptions,
) -> Result<GpuAdaptive, AdaptiveGpuError> {
    let start = Instant::now();
    k.validate()?;
    check_adaptive_wgsl(k)?;
    args.check_complete()?;
    let m = run.options.method();
    let f64_states = k.float_type() == ScalarType::F64;
    if f64_states && !cache.context().has_f64() {
        return Err(IrError::Unsupported {
            kernel: k.name.clone(),
            backend: format!("gpu ({})", cache.adapter().name),
            reason: "an f64 field needs SHADER_F64, which this adapter does not offer".into(),
        }
        .into());
    }
    if f64_states {
        typed::<f64>(cache, k, args, run, opts, m, start)
    } else {
        typed::<f32>(cache, k, args, run, opts, m, start)
    }
}

/// [`AdaptiveEnsemble::settings`] for a dimension known at run time.
fn settings<T: IrFloat>(
    o: &AdaptiveEnsemble,
    dim: usize,
    n: usize,
    spans: &[(f64, f64)],
) -> Result<DriverSettings, AdaptiveError> {
    macro_rules! by_dim {
        ($($d:literal)*) => {
            match dim {
                $($d => o.settings::<T, $d>(n, spans),)*
                _ => o.settings::<T, 0>(n, spans),
            }
        };
    }
    by_dim!(1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16)
}

fn too_large(what: &'static str, shape: String) -> AdaptiveError {
    AdaptiveError::TooLarge { what, shape }
}

/// A zeroed host buffer of `len` values (`None`: the count overflowed).
fn alloc<T: Clone + Default>(
    len: Option<usize>,
    what: &'static str,
    shape: impl Fn() -> String,
) -> Result<Vec<T>, AdaptiveError> {
    let len = len.ok_or_else(|| too_large(what, shape()))?;
    let mut v = Vec::new();
    v.try_reserve_exact(len)
        .map_err(|_| too_large(what, shape()))?;
    v.resize(len, T::default());
    Ok(v)
}

fn bytes(b: &Buffer) -> Vec<u8> {
    let mut v = b.to_le_bytes();
    if v.is_empty() {
        v = vec![0; 4];
    }
    v
}

#[allow(clippy::too_many_arguments)]
fn typed<T: IrFloat + bytemuck::Pod + Default>(
    cache: &mut KernelCache,
    k: &Kernel,
    args: &Args,
    run: &AdaptiveRun,
    opts: &GpuAdaptiveOptions,
    m: AdaptiveMethod,
    start: Instant,
) -> Result<GpuAdaptive, AdaptiveGpuError> {
    let n = run.n;
    let dim = k.states.len();
    let st = settings::<T>(&run.options, dim, n, &run.spans)?;
    if let Some(u0) = &run.u0 {
        if Some(u0.len()) != n.checked_mul(dim) {
            return Err(AdaptiveError::ShapeMismatch {
                what: "u0",
                got: u0.len(),
                expected: format!("(N, D) = ({n}, {dim}) → {} values", n.saturating_mul(dim)),
            }
            .into());
        }
    }
    // A slice of a larger launch sees the global i, n and gdim (as the CPU's).
    let slice = run.slice.unwrap_or(Slice::whole(n));
    slice.check(&k.name, n, 1)?;
    let total32 = u32::try_from(slice.total).map_err(|_| IrError::Launch {
        kernel: k.name.clone(),
        message: format!("n = {} exceeds 2^32 - 1 trajectories", slice.total),
    })?;
    let kk = st.saveat.len();
    let per_traj = run.spans.len() > 1;
    let has_u0 = run.u0.is_some();
    let sz = std::mem::size_of::<T>();
    // Bytes per trajectory of each per-trajectory binding.
    let row_bytes = [
        (dim + 1) * sz,
        STATS_WORDS * 4,
        kk.saturating_mul(dim).saturating_mul(sz),
        (if has_u0 { dim } else { 0 } + if per_traj { 2 } else { 0 }) * sz,
    ];
    let limits = cache.context().limits();
    let max_bind = limits
        .max_storage_buffer_binding_size
        .min(limits.max_buffer_size);
    let widest = *row_bytes.iter().max().expect("four rows") as u64;
    let adapter = cache.adapter().name.clone();
    let refuse = |reason: String| IrError::Unsupported {
        kernel: k.name.clone(),
        backend: format!("gpu ({adapter})"),
        reason,
    };
    if widest > max_bind {
        return Err(refuse(format!(
            "one trajectory's save points (K = {kk} × D = {dim} × {sz} bytes = {widest} bytes) exceed the adapter's storage binding of {max_bind} bytes: save fewer times or run on the CPU"
        ))
        .into());
    }
    let buffers: Vec<Vec<u8>> = (0..k.params.len())
        .filter_map(|i| args.buffer_at(i).map(bytes))
        .collect();
    for (p, b) in k.params.iter().filter(|p| p.buffer).zip(&buffers) {
        if b.len() as u64 > max_bind {
            return Err(refuse(format!(
                "buffer `{}` ({} bytes) exceeds the adapter's storage binding of {max_bind} bytes",
                p.name,
                b.len()
            ))
            .into());
        }
    }
    let max_groups = limits.max_compute_workgroups_per_dimension as u64;
    let mut chunk = (max_bind / widest.max(1))
        .min(max_groups * max_groups * ADAPTIVE_WORKGROUP as u64)
        .min(n as u64) as usize;
    if let Some(c) = opts.max_chunk {
        chunk = chunk.min(c.max(1));
    }
    let chunk = chunk.max(1);
    // Outputs, whole and up front.
    let mut out: Vec<T> = alloc(n.checked_mul(dim + 1), "endpoints", || {
        format!("(N, D + 1) = ({n}, {})", dim + 1)
    })?;
    let mut stats_w: Vec<u32> = alloc(n.checked_mul(STATS_WORDS), "stats", || {
        format!("(N, {STATS_WORDS}) = ({n}, {STATS_WORDS})")
    })?;
    let mut saved: Vec<T> = alloc(
        n.checked_mul(kk).and_then(|x| x.checked_mul(dim)),
        "saved",
        || format!("(N, K, D) = ({n}, {kk}, {dim})"),
    )?;
    let shared_span = if per_traj { (0.0, 0.0) } else { run.spans[0] };
    let cfg: Vec<T> = cfg_values(&st, shared_span)
        .iter()
        .map(|&v| T::from_f64(v))
        .collect();
    let fl = flags(&st, has_u0, per_traj);
    let spec = adaptive_spec(k, m)?;
    let compiled = !cache.is_compiled(&spec);
    let mut kernel_time = opts.timing.map(|_| Duration::ZERO);
    // Wall time spent measuring `kernel_time`, left out of `end_to_end`.
    let mut timing_wall = Duration::ZERO;
    let mut chunks = 0;
    let mut dummy = [T::default(); 1];
    for first in (0..n).step_by(chunk) {
        let c = chunk.min(n - first);
        chunks += 1;
        let words = launch_words(
            k,
            args,
            total32,
            (slice.first + first) as u32,
            c as u32,
            fl,
            &st,
        )?;
        let mut inp: Vec<T> = Vec::new();
        if let Some(u0) = &run.u0 {
            inp.extend(
                u0[first * dim..(first + c) * dim]
                    .iter()
                    .map(|&v| T::from_f64(v)),
            );
        }
        if per_traj {
            for &(a, b) in &run.spans[first..first + c] {
                inp.push(T::from_f64(a));
                inp.push(T::from_f64(b));
            }
        }
        if inp.is_empty() {
            inp.push(T::default());
        }
        let groups = c.div_ceil(ADAPTIVE_WORKGROUP as usize);
        let x = groups.min(max_groups as usize);
        let workgroups = [x as u32, groups.div_ceil(x) as u32, 1];
        let mut fault = [u32::MAX, 0, 0, 0];
        let o = &mut out[first * (dim + 1)..(first + c) * (dim + 1)];
        let s = &mut stats_w[first * STATS_WORDS..(first + c) * STATS_WORDS];
        let sv: &mut [T] = if kk == 0 {
            &mut dummy[..]
        } else {
            &mut saved[first * kk * dim..(first + c) * kk * dim]
        };
        let mut bindings = vec![
            Binding::write(o),
            Binding::read(&words[..]),
            Binding::read_write(&mut fault[..]),
        ];
        for b in &buffers {
            bindings.push(Binding::Read(b));
        }
        bindings.push(Binding::read(&cfg[..]));
        bindings.push(Binding::read(&inp[..]));
        bindings.push(Binding::write(s));
        bindings.push(Binding::write(sv));
        cache.dispatch(&spec, &mut bindings, workgroups)?;
        drop(bindings);
        if let Some(e) = fault_error(k, args, &[], &[], 1, &fault) {
            return Err(e.into());
        }
        if let Some(j) = s.chunks(STATS_WORDS).position(|w| w[0] == STATUS_CUT_SHORT) {
            return Err(refuse(format!(
                "the device stopped the loops of trajectory {} before its integration ended \
                 (llvmpipe leaves a shader invocation's loops after 65,535 iterations in all; \
                 {} steps were accepted): run it on the CPU (--backend cpu; auto falls back)",
                slice.first + first + j,
                s[j * STATS_WORDS + 1]
            ))
            .into());
        }
        if let (Some(iters), Some(total)) = (opts.timing, kernel_time.as_mut()) {
            // Timed again on the same data; nothing is downloaded.
            let timing_start = Instant::now();
            let mut fault = [u32::MAX, 0, 0, 0];
            let mut scratch_o = vec![T::default(); c * (dim + 1)];
            let mut scratch_s = vec![0u32; c * STATS_WORDS];
            let mut scratch_v = vec![T::default(); (c * kk * dim).max(1)];
            let mut bindings = vec![
                Binding::write(&mut scratch_o[..]),
                Binding::read(&words[..]),
                Binding::read_write(&mut fault[..]),
            ];
            for b in &buffers {
                bindings.push(Binding::Read(b));
            }
            bindings.push(Binding::read(&cfg[..]));
            bindings.push(Binding::read(&inp[..]));
            bindings.push(Binding::write(&mut scratch_s[..]));
            bindings.push(Binding::write(&mut scratch_v[..]));
            *total += cache.time_dispatches(&spec, &mut bindings, workgroups, iters)?;
            timing_wall += timing_start.elapsed();
        }
    }
    // Host layout: endpoints (N, D), stats per trajectory.
    let mut end: Vec<T> = alloc(n.checked_mul(dim), "endpoints", || {
        format!("(N, D) = ({n}, {dim})")
    })?;
    let mut stats: Vec<TrajectoryStats> = Vec::new();
    stats
        .try_reserve_exact(n)
        .map_err(|_| too_large("stats", format!("(N,) = ({n},)")))?;
    let nan = T::from_f64(f64::NAN);
    for i in 0..n {
        // Save rows the trajectory did not reach are NaN (the CPU's fill).
        let written = (stats_w[i * STATS_WORDS + 4] as usize).min(kk);
        saved[(i * kk + written) * dim..(i + 1) * kk * dim].fill(nan);
        let row = &out[i * (dim + 1)..(i + 1) * (dim + 1)];
        end[i * dim..(i + 1) * dim].copy_from_slice(&row[..dim]);
        stats.push(stats_of(
            &stats_w[i * STATS_WORDS..(i + 1) * STATS_WORDS],
            row[dim].to_f64(),
        ));
    }
    drop(out);
    let output = AdaptiveOutput {
        n,
        dim,
        saveat: run.options.save_times().to_vec(),
        end: to_buffer(end),
        saved: to_buffer(saved),
        stats,
    };
    Ok(GpuAdaptive {
        output,
        end_to_end: start.elapsed().saturating_sub(timing_wall),
        kernel_time,
        compiled,
        chunks,
        chunk,
    })
}

/// Values of the state type as a [`Buffer`] of that type.
fn to_buffer<T: IrFloat>(v: Vec<T>) -> Buffer {
    match T::TYPE {
        ScalarType::F64 => Buffer::F64(v.iter().map(|x| x.to_f64()).collect()),
        _ => Buffer::F32(v.iter().map(|x| x.to_f64() as f32).collect()),
    }
}
