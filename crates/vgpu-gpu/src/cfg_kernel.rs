//! Running a kernel in the IR's control-flow form ([`vgpu_ir::cfg`], e.g. a
//! compiled PTX entry) on the GPU: global memory laid out as one storage
//! buffer ([`GlobalLayout`]), the launch's limits checked against the
//! adapter's before anything is dispatched, the WGSL written once per
//! (kernel, block shape, dynamic shared memory, checks, features) and
//! compiled once per source through the [`KernelCache`] (the WGSL differs where f32 `fma` is the device's own,
//! fused one: [`crate::fma_probe`]), one dispatch (a grid over the adapter's workgroups per
//! dimension folded into two dimensions), the fault record read back.

use crate::{AtomicF32Path, Binding, FmaF32Path, GpuError, KernelCache, KernelSpec};
use vgpu_ir::cfg::{reserved_smem, CfgKernel};
use vgpu_ir::wgsl::cfg::{
    binds_f32_atomic_view, check_workgroup_bytes, fault, initcheck_binding, meta,
    race_workgroup_bytes, warp_exchange_bytes, CfgChecks, CfgWgslOptions, GLOBAL_BASE,
};

/// Whether kernels are written in structured form where their shape allows
/// (`VGPU_PTX_CONTROL`: `auto` or unset) or always as the state machine
/// (`switch`, for comparing the two).
///
/// # Errors
/// [`GpuError::BadControlEnv`] for another value.
fn structured_from_env() -> Result<bool, GpuError> {
    match std::env::var("VGPU_PTX_CONTROL").as_deref() {
        Err(_) | Ok("auto") => Ok(true),
        Ok("switch") => Ok(false),
        Ok(v) => Err(GpuError::BadControlEnv { value: v.into() }),
    }
}

/// Bytes left free after each allocation in global memory, so an access just
/// past one lands in no allocation.
const GAP: u64 = 256;

/// Where each allocation of a launch sits in global memory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GlobalLayout {
    /// Each launch buffer's byte address, in order.
    pub buffer_addrs: Vec<u64>,
    /// Bytes of the one global-memory binding.
    pub total: u64,
    /// (start, end, writable) byte offsets from [`GLOBAL_BASE`]: the module's
    /// variables, then the buffers.
    regions: Vec<(u64, u64, bool)>,
}

impl GlobalLayout {
    /// The layout of `k`'s module variables (at their own addresses) and
    /// buffers of `lens` bytes after them, each 256-aligned with a gap.
    ///
    /// # Errors
    /// [`GpuError::CfgLaunch`] when the total does not fit in 32-bit offsets.
    pub fn new(k: &CfgKernel, lens: &[usize]) -> Result<GlobalLayout, GpuError> {
        let mut regions = Vec::new();
        let mut end = 0u64;
        for g in &k.globals {
            let start = g.addr.checked_sub(GLOBAL_BASE).ok_or_else(|| {
                launch_err(
                    k,
                    format!("module variable `{}` below the global base", g.name),
                )
            })?;
            let e = start + g.bytes.len() as u64;
            regions.push((start, e, g.writable));
            end = end.max(e);
        }
        let mut at = (end + GAP).next_multiple_of(256);
        let mut buffer_addrs = Vec::new();
        for &len in lens {
            buffer_addrs.push(GLOBAL_BASE + at);
            regions.push((at, at + len as u64, true));
            at = (at + len as u64 + GAP).next_multiple_of(256);
        }
        if GLOBAL_BASE + at > u32::MAX as u64 {
            return Err(launch_err(
                k,
                format!(
                    "global memory of {at} bytes does not fit the GPU path's 32-bit offsets (4 GiB)"
                ),
            ));
        }
        Ok(GlobalLayout {
            buffer_addrs,
            total: at,
            regions,
        })
    }
}

/// One launch of a control-flow kernel.
#[derive(Debug, Clone, Copy)]
pub struct CfgLaunch<'a> {
    /// Blocks per grid.
    pub grid: [u32; 3],
    /// Threads per block.
    pub block: [u32; 3],
    /// Dynamic shared memory in bytes.
    pub dyn_shared: u32,
    /// The parameter buffer's bytes (pointers as [`GlobalLayout::buffer_addrs`]).
    pub params: &'a [u8],
    /// Bounds, alignment and watchdog checks on.
    pub checked: bool,
    /// The watchdog: block transitions per thread before it faults.
    pub watchdog: u32,
    /// After the launch, also time this many dispatches of the kernel alone
    /// (on the state the launch left; nothing more is read back). 0: none.
    pub time_iterations: u32,
    /// How `fma.rn.f32` runs: the device's fused `fma` or the f64 emulation.
    pub fma_f32: FmaF32Path,
    /// The global-memory initcheck (with `checked` only): `Some(w)` with
    /// `w[i]` whether the host wrote buffer `i` (module variables count as
    /// written); a load or atomic of a byte neither the host nor a thread
    /// wrote then faults [`fault::CLASS_UNINITIALIZED_GLOBAL`]. `None`: off.
    pub initcheck: Option<&'a [bool]>,
    /// How global `atom.add.f32`/`red.add.f32` run: the device's f32
    /// atomics or a compare-and-swap loop.
    pub atomic_f32: AtomicF32Path,
    /// The shared-memory race check between warps (with `checked` only; the
    /// interpreter's, vgpu-ir's checks.rs), as compute-sanitizer's racecheck
    /// is a tool of its own: it marks every shared access by
    /// compare-and-swap, about 20 times the checked kernel's time on an H100
    /// (docs/BENCHMARKS.md). A launch asking for it where its marks do not
    /// fit in the workgroup memory the kernel leaves is refused.
    pub racecheck: bool,
}

/// The first fault a checked launch recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CfgFault {
    /// The class ([`fault::CLASS_OUT_OF_BOUNDS`] …).
    pub class: u32,
    /// The source line.
    pub line: u32,
    /// The block.
    pub block: [u32; 3],
    /// The thread in its block.
    pub thread: [u32; 3],
    /// The address of the access (0 for the watchdog and `trap`).
    pub addr: u64,
}

/// What a launch did.
#[derive(Debug, Clone, Default)]
pub struct CfgRun {
    /// The first fault, if any; the buffers are then left as they were.
    pub fault: Option<CfgFault>,
    /// The kernel was compiled by this call (a cache miss).
    pub compiled: bool,
    /// Seconds per dispatch of the kernel alone, when timing was asked.
    pub kernel_seconds: Option<f64>,
    /// How the kernel's f32 fma ran: `Some(true)` the device's own `fma`,
    /// `Some(false)` the exact f64 emulation, `None` it has none.
    pub native_fma_f32: Option<bool>,
    /// The kernel ran declaring f32 subnormals kept, and the device keeps
    /// them in plain arithmetic (vgpu-gpu's `subnormal_probe`): its `add`,
    /// `sub`, `mul` and comparisons are PTX's also on subnormal operands and
    /// results (its fma is exact either way: the emulation, or the device's
    /// kept bare where it keeps them too, guarded where not).
    pub f32_subnormals: bool,
    /// The device's fma ran guarded ([`vgpu_ir::wgsl::cfg::fma_guarded`]):
    /// it may flush f32 subnormals (NVIDIA's does), so the kernel's fmas ran
    /// speculatively and a run of them with a zero or tiny value ran again
    /// with its suspect fmas on the emulation.
    pub fma_f32_guarded: bool,
    /// How the kernel's global f32 atomic adds ran: `Some(true)` the device's
    /// f32 atomics, `Some(false)` a compare-and-swap loop, `None` it has none.
    pub native_atomic_f32: Option<bool>,
}

fn launch_err(k: &CfgKernel, msg: String) -> GpuError {
    GpuError::CfgLaunch {
        kernel: k.name.clone(),
        msg,
    }
}

/// Checks the launch against the adapter's limits, naming the limit; returns
/// the bytes of workgroup memory left (for the race check's marks).
fn check_limits(
    k: &CfgKernel,
    l: &CfgLaunch<'_>,
    limits: &wgpu::Limits,
    gmem: u64,
) -> Result<u64, GpuError> {
    let [bx, by, bz] = l.block;
    let threads = bx as u64 * by as u64 * bz as u64;
    let e = |m: String| Err(launch_err(k, m));
    if threads == 0 || l.grid.contains(&0) {
        return e(format!(
            "empty launch: grid {:?}, block {:?}",
            l.grid, l.block
        ));
    }
    if threads > limits.max_compute_invocations_per_workgroup as u64 {
        return e(format!(
            "block {:?} has {threads} threads; the adapter's max_compute_invocations_per_workgroup is {}",
            l.block, limits.max_compute_invocations_per_workgroup
        ));
    }
    let dims = [
        limits.max_compute_workgroup_size_x,
        limits.max_compute_workgroup_size_y,
        limits.max_compute_workgroup_size_z,
    ];
    for (i, (&b, &m)) in l.block.iter().zip(&dims).enumerate() {
        if b > m {
            return e(format!(
                "block dimension {} is {b}; the adapter's max_compute_workgroup_size_{} is {m}",
                ["x", "y", "z"][i],
                ["x", "y", "z"][i]
            ));
        }
    }
    let warp = if k.has_warp_ops() {
        warp_exchange_bytes(threads)
    } else {
        0
    };
    let user = k.shared_static as u64 + l.dyn_shared as u64;
    let end = reserved_smem(user).1;
    let checks = check_workgroup_bytes(k, user, l.checked);
    let shared = end + 8 + warp + checks;
    if shared > limits.max_compute_workgroup_storage_size as u64 {
        return e(format!(
            "{shared} bytes of shared memory per block (static {}, dynamic {}, {} for the padding and region reserved for system software, 8 for barriers, {warp} for warp operations, {checks} for the checker); the adapter's max_compute_workgroup_storage_size is {}",
            k.shared_static, l.dyn_shared, end - user, limits.max_compute_workgroup_storage_size
        ));
    }
    let max_binding = limits
        .max_storage_buffer_binding_size
        .min(limits.max_buffer_size);
    if gmem > max_binding {
        return e(format!(
            "global memory of {gmem} bytes (buffers and module variables) exceeds the adapter's max_storage_buffer_binding_size of {max_binding} bytes"
        ));
    }
    Ok(limits.max_compute_workgroup_storage_size as u64 - shared)
}

/// The global-memory initcheck's bits for `layout` (a bit per byte of the
/// `gmem_len` bytes, in 32-bit words): set for the module's variables and
/// the buffers the host wrote (`host[i]`), clear elsewhere.
///
/// # Errors
/// [`GpuError::CfgLaunch`] when the launch is unchecked, `host` does not
/// name every buffer, or the bits exceed the adapter's storage-binding limit.
fn initcheck_bits(
    k: &CfgKernel,
    layout: &GlobalLayout,
    launch: &CfgLaunch<'_>,
    host: &[bool],
    gmem_len: u64,
    limits: &wgpu::Limits,
) -> Result<Vec<u32>, GpuError> {
    if !launch.checked {
        return Err(launch_err(
            k,
            "the global-memory initcheck needs the checked kernel".into(),
        ));
    }
    if host.len() != layout.buffer_addrs.len() {
        return Err(launch_err(
            k,
            format!(
                "the initcheck names {} buffers, the launch has {}",
                host.len(),
                layout.buffer_addrs.len()
            ),
        ));
    }
    let nwords = gmem_len.div_ceil(32).max(1);
    let max_binding = limits
        .max_storage_buffer_binding_size
        .min(limits.max_buffer_size);
    if 4 * nwords > max_binding {
        return Err(launch_err(
            k,
            format!(
                "the global-memory initcheck's {} bytes of bits (one per byte of {gmem_len} bytes of global memory) exceed the adapter's max_storage_buffer_binding_size of {max_binding} bytes",
                4 * nwords
            ),
        ));
    }
    let mut bits = vec![0u32; nwords as usize];
    let mut set = |start: u64, len: u64| {
        for b in start..start + len {
            bits[(b / 32) as usize] |= 1 << (b % 32);
        }
    };
    for g in &k.globals {
        set(g.addr - GLOBAL_BASE, g.bytes.len() as u64);
    }
    for (i, (&a, &wrote)) in layout.buffer_addrs.iter().zip(host).enumerate() {
        if wrote {
            let (s, e, _) = layout.regions[k.globals.len() + i];
            debug_assert_eq!(s, a - GLOBAL_BASE);
            set(s, e - s);
        }
    }
    Ok(bits)
}

/// The workgroups to dispatch for `grid`, and the grid to pass in the launch
/// words ([`meta::GRID`]) when they are not the grid itself: a grid with a
/// dimension over the adapter's `max_compute_workgroups_per_dimension` runs
/// as a two-dimensional dispatch of its linear block index (CUDA blocks are
/// independent, so any order of them is a CUDA schedule), each workgroup
/// computing its `%ctaid` from that index.
///
/// # Errors
/// [`GpuError::CfgLaunch`] naming the limit when the grid has more blocks
/// than such a dispatch holds (the limit squared, within 32-bit indices).
fn dispatch_shape(
    k: &CfgKernel,
    grid: [u32; 3],
    limits: &wgpu::Limits,
) -> Result<([u32; 3], Option<[u32; 3]>), GpuError> {
    let m = limits.max_compute_workgroups_per_dimension;
    if grid.iter().all(|&g| g <= m) {
        return Ok((grid, None));
    }
    let total: u64 = grid.iter().map(|&g| g as u64).product();
    let dx = (m as u64).min(total);
    let dy = total.div_ceil(dx);
    if dy > m as u64 || dx * dy > u32::MAX as u64 {
        let most = m as u64 * (m as u64).min(u32::MAX as u64 / m as u64);
        return Err(launch_err(
            k,
            format!(
                "grid {grid:?} has {total} blocks; a grid with a dimension over the adapter's max_compute_workgroups_per_dimension of {m} runs as a two-dimensional dispatch of at most {most} blocks"
            ),
        ));
    }
    Ok(([dx as u32, dy as u32, 1], Some(grid)))
}

/// `DIR/<entry>.wgsl` where the environment variable `var` is `DIR`.
fn wgsl_path(var: &str, k: &CfgKernel) -> Option<std::path::PathBuf> {
    wgsl_path_of(var, k, "")
}

/// [`wgsl_path`] of the file `<entry><run>.wgsl`.
fn wgsl_path_of(var: &str, k: &CfgKernel, run: &str) -> Option<std::path::PathBuf> {
    std::env::var_os(var)
        .map(|dir| std::path::Path::new(&dir).join(format!("{}{run}.wgsl", k.name)))
}

/// The launch words of the region caches' first guesses (vgpu-ir's
/// `wgsl/cfg/seeds.rs`, [`meta::SEEDS`]): for each 8-byte slot of the
/// kernel's `param_bytes` (every slot a seed may name), the region of
/// `regions` its value in `params` points into, as a region cache holds it
/// (its first byte's address from 0, [`GLOBAL_BASE`] included, and its
/// length), then the same for stores and atomics if that region is
/// writable; zeros (a cache no access hits) where it points into none or
/// past 32-bit addresses.
fn region_seeds(params: &[u8], param_bytes: u32, regions: &[(u64, u64, bool)]) -> Vec<u32> {
    let slots = (param_bytes as usize).div_ceil(8);
    let mut w = Vec::with_capacity(slots * 4);
    for j in 0..slots {
        let mut bytes = [0u8; 8];
        for (i, b) in bytes.iter_mut().enumerate() {
            *b = params.get(8 * j + i).copied().unwrap_or(0);
        }
        let a = u64::from_le_bytes(bytes);
        let region = a
            .checked_sub(GLOBAL_BASE)
            .and_then(|o| regions.iter().find(|&&(s, e, _)| s <= o && o < e).copied());
        let cache = region.and_then(|(s, e, writable)| {
            let start = u32::try_from(GLOBAL_BASE + s).ok()?;
            u32::try_from(GLOBAL_BASE + e).ok()?;
            Some(([start, (e - s) as u32], writable))
        });
        let (read, write) = match cache {
            Some((c, true)) => (c, c),
            Some((c, false)) => (c, [0, 0]),
            None => ([0, 0], [0, 0]),
        };
        w.extend(read);
        w.extend(write);
    }
    w
}

/// With `VGPU_DUMP_WGSL=DIR` in the environment, writes the kernel's WGSL to
/// `DIR/<entry><run>.wgsl` (for reading what the GPU runs): `run` empty for
/// the launch's first run, `.full` for the full kernel a speculative first
/// run falls back to, `.precise` for the run again that picks a block's
/// earliest fault.
///
/// # Errors
/// [`GpuError::CfgLaunch`] naming the file when it cannot be written.
fn dump_wgsl(k: &CfgKernel, wgsl: &str, run: &str) -> Result<(), GpuError> {
    let Some(path) = wgsl_path_of("VGPU_DUMP_WGSL", k, run) else {
        return Ok(());
    };
    std::fs::write(&path, wgsl).map_err(|e| {
        launch_err(
            k,
            format!("VGPU_DUMP_WGSL: cannot write {}: {e}", path.display()),
        )
    })
}

/// With `VGPU_LOAD_WGSL=DIR` in the environment and a file `DIR/<entry>.wgsl`,
/// that file's WGSL instead of the generated one (for measuring a hand-edited
/// variant of a dump; it must keep the generated kernel's bindings, launch
/// words and fault record).
///
/// # Errors
/// [`GpuError::CfgLaunch`] naming the file when it cannot be read.
fn load_wgsl(k: &CfgKernel) -> Result<Option<String>, GpuError> {
    let Some(path) = wgsl_path("VGPU_LOAD_WGSL", k).filter(|p| p.exists()) else {
        return Ok(None);
    };
    std::fs::read_to_string(&path).map(Some).map_err(|e| {
        launch_err(
            k,
            format!("VGPU_LOAD_WGSL: cannot read {}: {e}", path.display()),
        )
    })
}

/// Runs `k` once over `buffers` (updated in place unless a fault is recorded).
///
/// # Errors
/// [`GpuError::CfgLaunch`] for a launch over the adapter's limits or a kernel
/// the WGSL emitter refuses (naming why); the cache's errors for compilation,
/// dispatch and a lost device.
pub fn run_cfg_kernel(
    cache: &mut KernelCache,
    k: &CfgKernel,
    layout: &GlobalLayout,
    launch: &CfgLaunch<'_>,
    buffers: &mut [Vec<u8>],
) -> Result<CfgRun, GpuError> {
    let ctx = cache.context();
    if buffers.len() != layout.buffer_addrs.len() {
        return Err(launch_err(
            k,
            format!(
                "{} buffers given, the layout has {}",
                buffers.len(),
                layout.buffer_addrs.len()
            ),
        ));
    }
    let gmem_len = layout.total.max(4).next_multiple_of(4);
    let wg_free = check_limits(k, launch, ctx.limits(), gmem_len)?;
    let (dispatch, folded) = dispatch_shape(k, launch.grid, ctx.limits())?;
    let has_fma = k.has_fma_f32();
    let has_atomic_f32 = k.has_global_atomic_add_f32();
    let kept = crate::subnormal_probe::f32_subnormals_kept(ctx)?;
    let mut opts = CfgWgslOptions {
        dyn_shared: launch.dyn_shared,
        f64: ctx.has_f64(),
        int64: ctx.has_int64(),
        native_fma_f32: has_fma && launch.fma_f32.native(ctx)?,
        f32_atomic_add: has_atomic_f32 && launch.atomic_f32.native(ctx)?,
        structured: structured_from_env()?,
        f32_subnormals: kept.plain && kept.fma,
        f32_subnormal_compares: kept.plain,
        fma_flush_model: has_fma && launch.fma_f32.flush_model()?,
        ..CfgWgslOptions::plain(launch.block, launch.checked)
    };
    let view = binds_f32_atomic_view(k, &opts);
    let fma_f32_guarded = vgpu_ir::wgsl::cfg::fma_guarded(k, &opts);
    let limits = ctx.limits().clone();
    let fresh_ginit = || {
        launch
            .initcheck
            .map(|host| initcheck_bits(k, layout, launch, host, gmem_len, &limits))
            .transpose()
    };
    let ginit = fresh_ginit()?;
    // The race check where asked (its marks' bytes: 0 where it does not
    // apply, e.g. unchecked), if they fit in the workgroup memory left.
    let race_bytes = if launch.racecheck {
        race_workgroup_bytes(k, &opts)
    } else {
        0
    };
    if race_bytes > wg_free {
        return Err(launch_err(
            k,
            format!(
                "the race check needs {race_bytes} bytes of workgroup memory, the kernel leaves {wg_free} of the adapter's {} (run without the race check, or on the interpreter)",
                ctx.limits().max_compute_workgroup_storage_size
            ),
        ));
    }
    let race = race_bytes > 0;
    // Shared memory's padded indexing (vgpu-ir wgsl/cfg/padded_smem.rs) in
    // what workgroup memory is left, at most 16 KiB of it.
    opts.smem_pad_words = ((wg_free - race_bytes) / 4).min(4096) as u32;
    let checks = CfgChecks {
        initcheck: ginit.is_some(),
        race,
    };
    // The first run's block ends record every faulting thread's fault
    // without a barrier; a launch that faults runs again with the block's
    // earliest fault picked (vgpu-ir's `CfgWgslOptions::earliest_fault`).
    opts.earliest_fault = false;
    // And its versioned loops without their checked copies: a workgroup
    // that would need one sets the record's fallback word, and the launch
    // runs again with them (`CfgWgslOptions::speculative_loops`).
    opts.speculative_loops = true;
    // `run`: the dump's name for the run (dump_wgsl), empty for the first,
    // whose WGSL VGPU_LOAD_WGSL may replace.
    let spec_of = |cache: &mut KernelCache, opts: &CfgWgslOptions, run: &str| {
        let emitted = cache
            .cfg_wgsl()
            .get(k, opts, checks)
            .map_err(|e| launch_err(k, e.to_string()))?;
        let mut wgsl = emitted.text;
        dump_wgsl(k, &wgsl, run)?;
        if run.is_empty() {
            wgsl = load_wgsl(k)?.unwrap_or(wgsl);
        }
        let spec = KernelSpec::new(&format!("cfg:{}", k.name), wgsl, "main")
            .specialisation(&format!("{opts:?} {checks:?}"))
            .workgroup_size(launch.block)
            .keep_f32_subnormals();
        // SAFETY: a checked kernel's watchdog counts its steps at every loop
        // header of the PTX and ends the thread (or its loop) past the launch's
        // limit; an unchecked kernel's loops are bounded only where each ends
        // itself (vgpu-ir's wgsl/cfg: `bounded`, `CfgWgsl::loops_end`). The
        // prelude's own loops are counted, or retry an atomic compare-and-swap
        // that another thread's success ends (vgpu-ir's wgsl/cfg: `watchdog`);
        // a speculative region's second run loops once per fma at most, plus
        // once (vgpu-ir's wgsl/cfg: `second_run`).
        // WGSL loaded in place of the generated (VGPU_LOAD_WGSL) keeps the
        // generated kernel's promise.
        let spec = if opts.checked || emitted.loops_end {
            unsafe { spec.with_loops_bounded() }
        } else {
            spec
        };
        Ok::<_, GpuError>((spec, emitted.first_pass, emitted.speculative))
    };
    let (mut spec, mut first_pass, speculative) = spec_of(cache, &opts, "")?;
    let compiled = !cache.is_compiled(&spec);
    // Global memory: the module's variables, then the buffers.
    let fresh_gmem = || {
        let mut gmem = vec![0u8; gmem_len as usize];
        for g in &k.globals {
            let o = (g.addr - GLOBAL_BASE) as usize;
            gmem[o..o + g.bytes.len()].copy_from_slice(&g.bytes);
        }
        for (b, &a) in buffers.iter().zip(&layout.buffer_addrs) {
            let o = (a - GLOBAL_BASE) as usize;
            gmem[o..o + b.len()].copy_from_slice(b);
        }
        gmem
    };
    let mut words = vec![0u32; meta::REGIONS + 3 * layout.regions.len()];
    words[meta::NREGIONS] = layout.regions.len() as u32;
    words[meta::WATCHDOG] = launch.watchdog;
    words[meta::FAULT_ONLY] = u32::MAX;
    if let Some(g) = folded {
        words[meta::GRID..meta::GRID + 3].copy_from_slice(&g);
    }
    for (i, &(s, e, w)) in layout.regions.iter().enumerate() {
        words[meta::REGIONS + 3 * i] = s as u32;
        words[meta::REGIONS + 3 * i + 1] = e as u32;
        words[meta::REGIONS + 3 * i + 2] = w as u32;
    }
    words[meta::SEEDS] = words.len() as u32;
    words.extend(region_seeds(launch.params, k.param_bytes, &layout.regions));
    let mut params = launch.params.to_vec();
    params.resize(params.len().max(4).next_multiple_of(4), 0);
    let mut fresh_rec = vec![0u32; fault::WORDS];
    fresh_rec[fault::MIN_KEY] = u32::MAX;
    // Binding 4, where the kernel declares it: global memory again, as
    // `atomic<f32>` for the device's f32 atomic adds; after it the
    // initcheck's bits.
    let ginit_at = initcheck_binding(k, &opts) as usize;
    // The kernel's bindings in their order: global memory, the launch words,
    // the parameters, the fault record, the f32 view where the kernel
    // declares it, the initcheck's bits where it is on.
    fn bind<'b>(
        gmem: &'b mut [u8],
        words: &'b [u32],
        params: &'b [u8],
        rec: &'b mut [u32],
        view: bool,
        ginit: Option<&'b mut Vec<u32>>,
    ) -> Vec<Binding<'b>> {
        let mut b = vec![
            Binding::ReadWrite(gmem),
            Binding::read(words),
            Binding::Read(params),
            Binding::read_write(rec),
        ];
        if view {
            b.push(Binding::Alias(0));
        }
        if let Some(bits) = ginit {
            b.push(Binding::read_write(bits));
        }
        b
    }
    // One dispatch from the launch's memory and the initcheck's fresh bits:
    // its global memory, fault record and bits afterwards.
    let dispatch_fresh =
        |cache: &mut KernelCache, spec: &KernelSpec, words: &[u32], mut ginit: Option<Vec<u32>>| {
            let mut gmem = fresh_gmem();
            let mut rec = fresh_rec.clone();
            let has_ginit = ginit.is_some();
            let mut b = bind(&mut gmem, words, &params, &mut rec, view, ginit.as_mut());
            debug_assert!(!has_ginit || b.len() == ginit_at + 1);
            cache.dispatch(spec, &mut b, dispatch)?;
            drop(b);
            Ok::<_, GpuError>((gmem, rec, ginit))
        };
    let (mut gmem, mut rec, mut ginit) = dispatch_fresh(cache, &spec, &words, ginit)?;
    if speculative && rec[fault::FALLBACK] != 0 {
        // A workgroup needed a versioned loop's checked copy: the launch
        // again from the same memory with the full kernel, whose results
        // (and timing) stand.
        opts.speculative_loops = false;
        (spec, first_pass, _) = spec_of(cache, &opts, ".full")?;
        drop(std::mem::take(&mut gmem));
        (gmem, rec, ginit) = dispatch_fresh(cache, &spec, &words, fresh_ginit()?)?;
    }
    // A first pass's fault, or not the lowest faulting block's: the launch
    // again from the same memory, recording only that block's first fault
    // (the interpreter reports the lowest failing block's error), picked
    // among its threads' faults. A kernel whose faults depend on the
    // schedule may not fault there again; the first run's record stands
    // then.
    if rec[fault::CLAIMED] != 0 && (first_pass || rec[fault::KEY] != rec[fault::MIN_KEY]) {
        words[meta::FAULT_ONLY] = rec[fault::MIN_KEY];
        // A fault returns no memory: the first run's is freed first.
        gmem = Vec::new();
        opts.earliest_fault = true;
        opts.speculative_loops = false;
        let (precise, _, _) = spec_of(cache, &opts, ".precise")?;
        let (_, r2, _) = dispatch_fresh(cache, &precise, &words, fresh_ginit()?)?;
        if r2[fault::CLAIMED] != 0 {
            rec = r2;
        }
    }
    let kernel_seconds = if launch.time_iterations > 0 && rec[fault::CLAIMED] == 0 {
        let mut g2 = gmem.clone();
        let mut r2 = rec.clone();
        let mut i2 = ginit.clone();
        let mut b2 = bind(&mut g2, &words, &params, &mut r2, view, i2.as_mut());
        let mut t = cache.time_dispatches(&spec, &mut b2, dispatch, launch.time_iterations)?;
        drop(b2);
        if speculative && opts.speculative_loops && r2[fault::FALLBACK] != 0 {
            // From the memory the run left, a workgroup of the timed runs
            // returned for its checked copy: the full kernel is timed.
            opts.speculative_loops = false;
            let (full, _, _) = spec_of(cache, &opts, ".full")?;
            let (mut g3, mut r3, mut i3) = (gmem.clone(), rec.clone(), ginit.clone());
            let mut b3 = bind(&mut g3, &words, &params, &mut r3, view, i3.as_mut());
            t = cache.time_dispatches(&full, &mut b3, dispatch, launch.time_iterations)?;
        }
        Some(t.as_secs_f64())
    } else {
        None
    };
    if rec[fault::CLAIMED] != 0 {
        let w = |i: usize| rec[i];
        return Ok(CfgRun {
            fault: Some(CfgFault {
                class: w(fault::CLASS),
                line: w(fault::LINE),
                block: [w(fault::BLOCK), w(fault::BLOCK + 1), w(fault::BLOCK + 2)],
                thread: [w(fault::THREAD), w(fault::THREAD + 1), w(fault::THREAD + 2)],
                addr: w(fault::ADDR) as u64 | (w(fault::ADDR + 1) as u64) << 32,
            }),
            compiled,
            kernel_seconds,
            native_fma_f32: has_fma.then_some(opts.native_fma_f32),
            native_atomic_f32: has_atomic_f32.then_some(opts.f32_atomic_add),
            f32_subnormals: kept.plain,
            fma_f32_guarded,
        });
    }
    for (b, &a) in buffers.iter_mut().zip(&layout.buffer_addrs) {
        let o = (a - GLOBAL_BASE) as usize;
        let n = b.len();
        b.copy_from_slice(&gmem[o..o + n]);
    }
    Ok(CfgRun {
        fault: None,
        compiled,
        kernel_seconds,
        native_fma_f32: has_fma.then_some(opts.native_fma_f32),
        native_atomic_f32: has_atomic_f32.then_some(opts.f32_atomic_add),
        f32_subnormals: kept.plain,
        fma_f32_guarded,
    })
}

#[cfg(test)]
mod tests {
    use super::{region_seeds, GLOBAL_BASE};

    /// Each 8-byte parameter slot's seed: the region its value points into
    /// for loads, and for stores only where that region is writable; zeros
    /// for a value in no region (an integer, a gap, below the base) and for
    /// the slots past the parameter bytes given.
    #[test]
    fn a_pointer_parameter_seeds_its_region_and_stores_only_a_writable_one() {
        let far = (1u64 << 32) - GLOBAL_BASE - 8;
        let regions = [(0, 64, false), (256, 1280, true), (far, far + 16, true)];
        let mut params = Vec::new();
        for a in [GLOBAL_BASE + 16, GLOBAL_BASE + 300, 7, GLOBAL_BASE + 1280] {
            params.extend(a.to_le_bytes());
        }
        params.extend((GLOBAL_BASE + far).to_le_bytes());
        let gb = GLOBAL_BASE as u32;
        let w = region_seeds(&params, 48, &regions);
        assert_eq!(
            w,
            [
                [gb, 64, 0, 0],
                [gb + 256, 1024, gb + 256, 1024],
                [0; 4],
                [0; 4],
                // A region ending past 32-bit addresses seeds nothing.
                [0; 4],
                [0; 4]
            ]
            .concat()
        );
    }
}
