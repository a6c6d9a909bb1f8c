//! IR ensembles on the GPU: the WGSL generated from a kernel runs through the
//! [`KernelCache`] (compiled once per kernel, integrator and workgroup size),
//! one invocation per trajectory integrating all of its steps in a single
//! dispatch.
//!
//! * Unphased fields: [`vgpu_ir::emit_wgsl`], one workgroup per block of the
//!   launch (`--block`, 256 by default as in most CUDA launches), so `tid`,
//!   `bid`, `bdim` and `gdim` read what the CPU reads; see [`unphased_workgroup`].
//! * Fields with phases: [`vgpu_ir::wgsl::phased`], one workgroup per block (the
//!   launch's block size), shared sub-fields in workgroup memory, barriers
//!   between phases' steps, flux outputs as atomics read back into
//!   [`GpuEnsemble::fluxes`]. Float flux outputs are summed in the GPU's order:
//!   they match the CPU's fixed-order sums to rounding, not bit for bit.

use crate::error::GpuError;
use crate::kernel_cache::{Binding, KernelCache, KernelSpec};
use rayon::prelude::*;
use std::borrow::Cow;
use std::sync::Arc;
use std::time::{Duration, Instant};
use vgpu_ir::wgsl::phased::{emit_wgsl_phased, fault_error, PhasedLayout};
use vgpu_ir::wgsl::{emit_wgsl, meta_words, slice_words};
use vgpu_ir::{
    Args, Buffer, Builtin, Integration, IrError, Kernel, Limits, Node, ScalarType, Slice,
};

/// Invocations per workgroup of the unphased ensemble kernel of `k` launched
/// over `integ` on `cache`'s device: the launch's block (`integ.block`, one
/// CUDA block = one workgroup), so the block builtins (`tid`, `bid`, `bdim`,
/// `gdim`) read on the GPU what they read on the CPU.
///
/// A block beyond the device's invocations per workgroup is shrunk to that
/// limit when the kernel reads none of the block builtins (the blocks are then
/// invisible to it); otherwise it is refused, naming the limit and `--block`.
///
/// # Errors
/// [`IrError::Unsupported`] for a block the device cannot run as one workgroup
/// of a kernel that reads the block builtins.
pub fn unphased_workgroup(
    cache: &KernelCache,
    k: &Kernel,
    integ: &Integration,
) -> Result<u32, IrError> {
    let block = integ.block.max(1);
    let max = max_block(cache).max(1);
    if block <= max {
        return Ok(block);
    }
    let reads_block = k.nodes.iter().any(|n| {
        matches!(
            n,
            Node::Builtin(Builtin::Thread | Builtin::Block | Builtin::BlockDim | Builtin::GridDim)
        )
    });
    if reads_block {
        return Err(IrError::Unsupported {
            kernel: k.name.clone(),
            backend: format!("gpu ({})", cache.adapter().name),
            reason: format!(
                "a block of {block} trajectories is one workgroup, and this GPU allows {max} invocations per workgroup (the kernel reads tid/bid/bdim/gdim; lower --block)"
            ),
        });
    }
    Ok(max)
}

/// An error of a GPU ensemble: the kernel's (IR) or the device's.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EnsembleError {
    /// The kernel, its arguments or its results.
    #[error(transparent)]
    Ir(#[from] IrError),
    /// The GPU.
    #[error(transparent)]
    Gpu(#[from] GpuError),
}

impl EnsembleError {
    /// Whether the CPU may run what failed here: the GPU refused the kernel
    /// (beyond its limits, or a type it lacks) or the device failed. Faults of
    /// the kernel itself (out-of-bounds, non-finite states, bad arguments) are
    /// not: they are errors on every backend. What a `--backend auto` run
    /// falls back on.
    pub fn cpu_can_run(&self) -> bool {
        matches!(
            self,
            EnsembleError::Gpu(_) | EnsembleError::Ir(IrError::Unsupported { .. })
        )
    }
}

/// The result of a GPU ensemble.
#[derive(Debug, Clone)]
pub struct GpuEnsemble {
    /// Final states, trajectory-major (`n × dim`), in the allocation they
    /// were downloaded into.
    pub states: Arc<[f32]>,
    /// Flux outputs by name, in declaration order, typed as declared: the
    /// shape and types of the CPU's [`vgpu_ir::Output::fluxes`].
    pub fluxes: Vec<(String, Buffer)>,
    /// Steps integrated.
    pub steps: usize,
    /// Host-to-host time of the run: arguments converted, shader emitted (and
    /// compiled on the first call), upload, kernel, download, results checked
    /// and converted; not the dispatches of `timing`.
    pub end_to_end: Duration,
    /// Device time of one dispatch, when asked for ([`run_ensemble_gpu`]'s `timing`).
    pub kernel_time: Option<Duration>,
    /// Whether this call compiled the kernel (a cache miss).
    pub compiled: bool,
    /// Where [`GpuEnsemble::end_to_end`] went.
    pub phases: GpuPhases,
}

/// Where the host-to-host time of a GPU ensemble went: `prepare`, `compile`,
/// `device` and `check` add up to [`GpuEnsemble::end_to_end`]. The device's creation (adapter, device,
/// queue) is not among them: it happens once per process
/// ([`crate::GpuContext::init_time`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GpuPhases {
    /// Arguments checked and converted, the shader generated, launch words built.
    pub prepare: Duration,
    /// Shader module and pipeline created (zero when the kernel was cached).
    pub compile: Duration,
    /// Buffers allocated and uploaded, the kernel run, results downloaded into
    /// host memory: [`GpuPhases::upload`], [`GpuPhases::gpu`] and
    /// [`GpuPhases::download`], and the small rest between them.
    pub device: Duration,
    /// Part of `device`: buffers (re)allocated, uploads queued, passes encoded.
    pub upload: Duration,
    /// Part of `device`: submission to completion (the uploads' copies, the
    /// kernel, the copy into the staging buffer and its mapping).
    pub gpu: Duration,
    /// Part of `device`: the mapped results copied into host memory.
    pub download: Duration,
    /// The fault record and the non-finite check read, fluxes converted.
    pub check: Duration,
}

/// The largest block `cache`'s device runs as one workgroup of a 1-D launch.
fn max_block(cache: &KernelCache) -> u32 {
    let limits = cache.context().limits();
    limits
        .max_compute_invocations_per_workgroup
        .min(limits.max_compute_workgroup_size_x)
}

/// The kernel spec of the unphased kernel `k` integrated with `integ.method`,
/// in workgroups of `wg` invocations (see [`unphased_workgroup`]).
///
/// # Errors
/// [`IrError::Unsupported`] for `f64` or phased kernels (see [`phased_spec`]),
/// [`IrError::Limit`] for a shader over [`Limits::max_wgsl_bytes`].
pub fn ensemble_spec(
    k: &Kernel,
    integ: &Integration,
    limits: &Limits,
    wg: u32,
) -> Result<KernelSpec, IrError> {
    let tableau = integ.method.tableau();
    let wgsl = emit_wgsl(k, &tableau, wg)?;
    limits.check_wgsl(k, &wgsl)?;
    Ok(KernelSpec::new(&format!("field {}", k.name), wgsl, "main")
        .specialisation(&format!(
            "ensemble {} {} block {wg}",
            k.name,
            tableau.name()
        ))
        .workgroup_size([wg, 1, 1]))
}

/// The kernel spec of the phased kernel `k` over `layout` (workgroup size: the
/// block size).
///
/// # Errors
/// [`IrError::Unsupported`] (see [`vgpu_ir::wgsl::phased::check_phased_wgsl`]),
/// or a block or workgroup memory beyond the limits of `cache`'s device;
/// [`IrError::Limit`] for a shader over [`Limits::max_wgsl_bytes`].
pub fn phased_spec(
    cache: &KernelCache,
    k: &Kernel,
    integ: &Integration,
    layout: &PhasedLayout,
    limits: &Limits,
) -> Result<KernelSpec, IrError> {
    let w = emit_wgsl_phased(k, integ.method, layout)?;
    limits.check_wgsl(k, &w.source)?;
    let limits = cache.context().limits();
    let too_big = |reason: String| IrError::Unsupported {
        kernel: k.name.clone(),
        backend: format!("gpu ({})", cache.adapter().name),
        reason,
    };
    let max_block = max_block(cache);
    if layout.block > max_block {
        return Err(too_big(format!(
            "a block of {} trajectories is one workgroup, and this GPU allows {max_block} invocations per workgroup",
            layout.block
        )));
    }
    if w.workgroup_bytes > limits.max_compute_workgroup_storage_size as u64 {
        return Err(too_big(format!(
            "the shared sub-fields need {} bytes of workgroup memory, this GPU has {}",
            w.workgroup_bytes, limits.max_compute_workgroup_storage_size
        )));
    }
    Ok(
        KernelSpec::new(&format!("field {}", k.name), w.source, "main")
            .specialisation(&format!(
                "phased ensemble {} {} block {}",
                k.name,
                integ.method.name(),
                layout.block
            ))
            .workgroup_size([layout.block, 1, 1]),
    )
}

/// A buffer argument's bytes as the GPU reads them (little-endian): borrowed
/// where the host is little-endian, converted otherwise; at least 4 bytes (a
/// binding is never empty).
fn bytes(b: &Buffer) -> Cow<'_, [u8]> {
    let v: Cow<'_, [u8]> = if cfg!(target_endian = "little") {
        match b {
            Buffer::F32(v) => Cow::Borrowed(bytemuck::cast_slice(&v[..])),
            Buffer::F64(v) => Cow::Borrowed(bytemuck::cast_slice(&v[..])),
            Buffer::I32(v) => Cow::Borrowed(bytemuck::cast_slice(&v[..])),
            Buffer::U32(v) => Cow::Borrowed(bytemuck::cast_slice(&v[..])),
        }
    } else {
        Cow::Owned(b.to_le_bytes())
    };
    if v.is_empty() {
        Cow::Owned(vec![0; 4])
    } else {
        v
    }
}

/// `len` zeros in one shared allocation, written on all cores (the first
/// touch of a large allocation is its page faults).
fn zeroed(len: usize) -> Arc<[f32]> {
    let mut a = Arc::<[f32]>::new_uninit_slice(len);
    let s = Arc::get_mut(&mut a).expect("just created, not shared");
    s.par_chunks_mut(1 << 16).for_each(|c| {
        for x in c {
            x.write(0.0);
        }
    });
    // SAFETY: every element was written above.
    unsafe { a.assume_init() }
}

/// A launch ready to dispatch: the kernel, its launch words and geometry, and
/// what its results are checked against.
struct Prepared {
    spec: KernelSpec,
    meta: Vec<u32>,
    /// Workgroups to run (laid out over x and y).
    groups: usize,
    /// Trajectories per workgroup.
    bdim: u32,
    steps: usize,
    /// The time the states are reported at.
    t_end: f64,
    shared_lens: Vec<u32>,
    flux_lens: Vec<u32>,
}

impl Prepared {
    fn unphased(
        cache: &KernelCache,
        k: &Kernel,
        args: &Args,
        integ: &Integration,
        limits: &Limits,
    ) -> Result<Prepared, IrError> {
        if k.phases
            .iter()
            .any(|p| !p.drives.is_empty() || !p.emits.is_empty())
        {
            return Err(IrError::Unsupported {
                kernel: k.name.clone(),
                backend: "gpu (WGSL)".into(),
                reason: "drives and emits outside a `phase` are not integrated on the GPU: put them in a phase".into(),
            });
        }
        let wg = unphased_workgroup(cache, k, integ)?;
        // SAFETY: the shader `emit_wgsl` writes stays in bounds and terminates
        // with the bindings and launch words this launch gives it, so wgpu's
        // own checks (index clamping, a counter in every loop: 6-7 % of the
        // kernel's time on the H200, docs/BENCHMARKS.md) are not needed:
        // - its loops count a u32 `step` up to the launch word `steps`;
        // - `launch` is read at constant indices below `meta_words` +
        //   `slice_words`, the words written below;
        // - parameter buffers are read only through `ld{j}`, which reports and
        //   returns 0 for an index at or past the buffer's length word, the
        //   length of the buffer `run_ensemble_gpu_with` binds (bindings are
        //   at least one element; a length over u32::MAX is written u32::MAX);
        // - `out[local * dim + j]` runs only for `local < ` the slice's count,
        //   and `out` is bound with count × dim elements (fewer than 2^32:
        //   storage bindings are at most 4 GiB);
        // - `fault` is a fixed array of 4 read at constant indices; integer
        //   division and shifts are total (`idiv_*`, masked shifts).
        // The spec is built here, not by the public `ensemble_spec`, so that
        // no caller can dispatch it with other bindings.
        let spec = unsafe { ensemble_spec(k, integ, limits, wg)?.without_runtime_checks() };
        let steps = integ.steps(&k.name)?;
        if integ.n == 0 || integ.n > u32::MAX as usize {
            return Err(IrError::Launch {
                kernel: k.name.clone(),
                message: format!("n = {} is out of range 1..2^32", integ.n),
            });
        }
        // A slice of a larger launch (`--shard`, MPI ranks) runs with the whole
        // launch's `n`, `gdim` and global indices; its rows come back alone.
        let slice = integ.slice.unwrap_or(Slice::whole(integ.n));
        slice.check(&k.name, integ.n, integ.block.max(1) as usize)?;
        let mut meta = meta_words(
            k,
            args,
            slice.total as u32,
            steps as u32,
            integ.t0,
            integ.dt,
        )?;
        meta.extend(slice_words(&k.name, slice.first, integ.n, slice.total, wg)?);
        Ok(Prepared {
            spec,
            meta,
            groups: integ.n.div_ceil(wg as usize),
            bdim: wg,
            steps,
            t_end: integ.t0 + steps as f64 * integ.dt,
            shared_lens: vec![],
            flux_lens: vec![],
        })
    }

    fn phased(
        cache: &KernelCache,
        k: &Kernel,
        args: &Args,
        integ: &Integration,
        limits: &Limits,
    ) -> Result<Prepared, IrError> {
        if let Some(s) = integ.slice.filter(|s| *s != Slice::whole(integ.n)) {
            return Err(IrError::Unsupported {
                kernel: k.name.clone(),
                backend: "gpu (WGSL)".into(),
                reason: format!(
                    "a slice of a field with phases (trajectories {}..{} of {}) runs on the CPU: \
                     the phased launch has no index offset",
                    s.first,
                    s.first + integ.n,
                    s.total
                ),
            });
        }
        let layout = PhasedLayout::new_with(k, args, integ, limits)?;
        let spec = phased_spec(cache, k, integ, &layout, limits)?;
        Ok(Prepared {
            spec,
            meta: layout.launch_words(k, args)?,
            groups: layout.blocks as usize,
            bdim: layout.block,
            steps: layout.steps,
            t_end: layout.steps as f64 * integ.dt,
            shared_lens: layout.shared_lens,
            flux_lens: layout.flux_lens,
        })
    }
}

/// Flux words read back as the declared type.
fn flux_buffer(ty: ScalarType, words: &[u32]) -> Buffer {
    match ty {
        ScalarType::I32 => Buffer::from(words.iter().map(|&w| w as i32).collect::<Vec<_>>()),
        ScalarType::U32 => Buffer::from(words.to_vec()),
        _ => Buffer::from(words.iter().map(|&w| f32::from_bits(w)).collect::<Vec<_>>()),
    }
}

/// Runs `k` over `integ` on the GPU of `cache`. With `timing = Some(iters)` it
/// also measures the device time of one dispatch over `iters` dispatches.
///
/// # Errors
/// Unsupported kernels, missing arguments, bad launches, out-of-bounds reads
/// and writes (the lowest faulting trajectory, its place), non-finite states,
/// GPU errors.
pub fn run_ensemble_gpu(
    cache: &mut KernelCache,
    k: &Kernel,
    args: &Args,
    integ: &Integration,
    timing: Option<u32>,
) -> Result<GpuEnsemble, EnsembleError> {
    run_ensemble_gpu_with(cache, k, args, integ, timing, &Limits::default())
}

/// [`run_ensemble_gpu`] with the front end's size limits (shared and flux
/// sizes, phase repetitions and steps) given rather than the defaults.
///
/// # Errors
/// As [`run_ensemble_gpu`], and [`IrError::Limit`] for a size beyond `limits`.
pub fn run_ensemble_gpu_with(
    cache: &mut KernelCache,
    k: &Kernel,
    args: &Args,
    integ: &Integration,
    timing: Option<u32>,
    limits: &Limits,
) -> Result<GpuEnsemble, EnsembleError> {
    let start = Instant::now();
    args.check_complete()?;
    let p = if k.is_phased() {
        Prepared::phased(cache, k, args, integ, limits)?
    } else {
        Prepared::unphased(cache, k, args, integ, limits)?
    };
    let n = integ.n;
    let dim = k.states.len();
    let buffers: Vec<Cow<'_, [u8]>> = (0..k.params.len())
        .filter_map(|i| args.buffer_at(i).map(bytes))
        .collect();
    // The results land in the allocation the caller gets (no copy after the
    // download). Bindings are at least one element long; the kernel never
    // touches the padding.
    let mut states = zeroed(n * dim);
    let mut pad = [0.0f32];
    let out: &mut [f32] = match Arc::get_mut(&mut states) {
        Some(s) if !s.is_empty() => s,
        _ => &mut pad,
    };
    let mut fault = [u32::MAX, 0, 0, 0];
    let zero_flux: Vec<Vec<u32>> = p
        .flux_lens
        .iter()
        .map(|&len| vec![0u32; (len as usize).max(1)])
        .collect();
    let mut flux = zero_flux.clone();
    let x = p.groups.min(65535);
    let workgroups = [x as u32, p.groups.div_ceil(x) as u32, 1];
    let compiled = !cache.is_compiled(&p.spec);
    let prepare = start.elapsed();
    let compile_before = cache.stats().compile_time;
    dispatch(
        cache, &p, &buffers, out, &mut fault, &mut flux, workgroups, None,
    )?;
    let compile = cache.stats().compile_time.saturating_sub(compile_before);
    let device = start.elapsed().saturating_sub(prepare + compile);
    let run = cache.last_run();
    if let Some(e) = fault_error(k, args, &p.shared_lens, &p.flux_lens, p.bdim, &fault) {
        return Err(e.into());
    }
    let first = integ.slice.map_or(0, |s| s.first);
    // The lowest non-finite value, found on all cores: the first chunk that
    // holds one (a vectorised scan each), then its place in that chunk.
    const CHUNK: usize = 1 << 16;
    let bad = states
        .par_chunks(CHUNK)
        .position_first(|c| !c.iter().fold(true, |ok, v| ok & v.is_finite()))
        .and_then(|c| {
            let at = states[c * CHUNK..].iter().position(|v| !v.is_finite())?;
            Some(c * CHUNK + at)
        });
    if let Some(i) = bad {
        return Err(IrError::NonFinite {
            kernel: k.name.clone(),
            state: k.states[i % dim].name.clone(),
            trajectory: first + i / dim,
            value: states[i] as f64,
            t: p.t_end,
        }
        .into());
    }
    let fluxes = k
        .fluxes
        .iter()
        .zip(&flux)
        .zip(&p.flux_lens)
        .map(|((f, words), &len)| (f.name.clone(), flux_buffer(f.ty, &words[..len as usize])))
        .collect();
    let end_to_end = start.elapsed();
    let phases = GpuPhases {
        prepare,
        compile,
        device,
        upload: run.upload,
        gpu: run.gpu,
        download: run.download,
        check: end_to_end.saturating_sub(prepare + compile + device),
    };
    let kernel_time = match timing {
        Some(iters) => {
            let mut scratch_out = vec![0.0f32; (n * dim).max(1)];
            let mut scratch_fault = [u32::MAX, 0, 0, 0];
            let mut scratch_flux = zero_flux;
            Some(dispatch(
                cache,
                &p,
                &buffers,
                &mut scratch_out,
                &mut scratch_fault,
                &mut scratch_flux,
                workgroups,
                Some(iters),
            )?)
        }
        None => None,
    };
    Ok(GpuEnsemble {
        states,
        fluxes,
        steps: p.steps,
        end_to_end,
        kernel_time,
        compiled,
        phases,
    })
}

/// One dispatch (`timing: None`, results downloaded into the slices) or the
/// device time of one over `iters` ([`KernelCache::time_dispatches`]).
#[allow(clippy::too_many_arguments)]
fn dispatch(
    cache: &mut KernelCache,
    p: &Prepared,
    buffers: &[Cow<'_, [u8]>],
    out: &mut [f32],
    fault: &mut [u32; 4],
    flux: &mut [Vec<u32>],
    workgroups: [u32; 3],
    timing: Option<u32>,
) -> Result<Duration, crate::GpuError> {
    let mut bindings = vec![
        Binding::write(out),
        Binding::read(&p.meta[..]),
        Binding::read_write(&mut fault[..]),
    ];
    for b in buffers {
        bindings.push(Binding::Read(b.as_ref()));
    }
    for f in flux.iter_mut() {
        bindings.push(Binding::read_write(&mut f[..]));
    }
    match timing {
        None => cache
            .dispatch(&p.spec, &mut bindings, workgroups)
            .map(|_| Duration::ZERO),
        Some(iters) => cache.time_dispatches(&p.spec, &mut bindings, workgroups, iters),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// GPU refusals and device failures may fall back to the CPU; faults of
    /// the kernel itself may not.
    #[test]
    fn only_refusals_and_device_failures_fall_back_to_the_cpu() {
        let refused = EnsembleError::Ir(IrError::Unsupported {
            kernel: "k".into(),
            backend: "gpu".into(),
            reason: "too much workgroup memory".into(),
        });
        let lost = EnsembleError::Gpu(GpuError::DeviceLost {
            adapter: "a".into(),
            reason: "reset".into(),
        });
        let nan = EnsembleError::Ir(IrError::NonFinite {
            kernel: "k".into(),
            state: "x".into(),
            trajectory: 3,
            value: f64::NAN,
            t: 0.5,
        });
        let launch = EnsembleError::Ir(IrError::Launch {
            kernel: "k".into(),
            message: "n = 0".into(),
        });
        assert!(refused.cpu_can_run() && lost.cpu_can_run());
        assert!(!nan.cpu_can_run() && !launch.cpu_can_run());
    }

    /// The fixed-step shader runs without wgpu's runtime checks (its own
    /// bounds are the ones that matter: see `Prepared::unphased`), and only
    /// when built for the launch here: the public spec keeps them.
    #[test]
    fn the_fixed_step_launch_alone_drops_the_runtime_checks() {
        let cache = match KernelCache::new() {
            Ok(c) => c,
            Err(e) => {
                let required = std::env::var("VGPU_REQUIRE_GPU").is_ok_and(|v| v == "1");
                assert!(!required, "VGPU_REQUIRE_GPU=1 but no GPU: {e}");
                eprintln!("skipped: no GPU adapter ({e})");
                return;
            }
        };
        let k = vgpu_ir::compile(
            "k.field",
            "field k(a: f32[]) { state x = 1.0; d(x)/dt = a[i] - x; }",
        )
        .unwrap();
        let mut args = Args::new(&k);
        args.buffer("a", vec![1.0f32; 8]).unwrap();
        let integ = Integration::new(8, 0.0, 1.0, 0.1);
        let limits = Limits::default();
        let p = Prepared::unphased(&cache, &k, &args, &integ, &limits).unwrap();
        assert!(!p.spec.runtime_checks());
        assert!(ensemble_spec(&k, &integ, &limits, 64)
            .unwrap()
            .runtime_checks());
    }
}
