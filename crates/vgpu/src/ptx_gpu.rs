//! PTX launches on a chosen backend: `cpu` is the checked interpreter,
//! `gpu` the entry compiled into the IR's control-flow form
//! ([`vgpu_ptx::lower`]) and run as WGSL through the kernel cache
//! ([`vgpu_gpu::cfg_kernel`]), `auto` the GPU where the kernel compiles and an
//! adapter exists, otherwise the interpreter, counted and said. `gpu` never
//! falls back: what cannot run there is an error naming the instruction and
//! its PTX line, or the adapter limit.

use vgpu_gpu::{
    run_cfg_kernel, AtomicF32Path, CfgFault, CfgLaunch, FmaF32Path, GlobalLayout, KernelCache,
};
use vgpu_ir::wgsl::cfg::fault;
use vgpu_ptx::{
    ExecOptions, Fault, FaultClass, KernelArg, LaunchConfig, LaunchStats, Module, PtxError,
};

use crate::dispatch::Backend;

/// Runs PTX launches on one backend, keeping the GPU's kernel cache between
/// launches and counting fallbacks.
#[derive(Debug)]
pub struct PtxRunner {
    backend: Backend,
    checked: bool,
    cache: Option<KernelCache>,
    /// Launches that ran on the GPU.
    pub gpu_launches: u64,
    /// Kernels compiled for the GPU (cache misses).
    pub gpu_compiles: u64,
    /// Launches that `auto` ran on the interpreter instead, with the reason.
    pub fallbacks: Vec<String>,
    /// GPU: time this many dispatches of each kernel alone after its launch.
    pub time_iterations: u32,
    /// Seconds per dispatch of the last timed kernel.
    pub kernel_seconds: Option<f64>,
    /// GPU: the shared-memory race check in the checked kernel (off by
    /// default: it multiplies the checked kernel's time by about 20 on an
    /// H100; the interpreter always runs it, unless `ExecOptions::check` is
    /// off).
    pub racecheck: bool,
    /// GPU: how `fma.rn.f32` runs (default: `VGPU_PTX_EXACT_FMA`, else the
    /// device's fused `fma` where vgpu-gpu's probe found it fused).
    pub fma_f32: FmaF32Path,
    /// How the last GPU kernel with an f32 fma ran it: `Some(true)` the
    /// device's `fma`, `Some(false)` the exact f64 emulation.
    pub native_fma_f32: Option<bool>,
    /// Whether that kernel's device `fma` was guarded: the device may flush
    /// f32 subnormals in it (NVIDIA's does), so its fmas ran speculatively
    /// and again, the suspect ones emulated, where a value was zero or tiny
    /// (vgpu-ir's `wgsl::cfg::fma_guarded`).
    pub fma_f32_guarded: bool,
    /// Whether the last GPU launch kept f32 subnormals (vgpu-gpu's
    /// `subnormal_probe`; `None`: no GPU launch yet).
    pub f32_subnormals: Option<bool>,
    /// GPU: how global `atom.add.f32`/`red.add.f32` run (default:
    /// `VGPU_PTX_ATOMIC_F32`, else the device's f32 atomics where vgpu-gpu's
    /// probe found them PTX's).
    pub atomic_f32: AtomicF32Path,
    /// How the last GPU kernel with a global f32 atomic add ran it:
    /// `Some(true)` the device's f32 atomics, `Some(false)` a
    /// compare-and-swap loop.
    pub native_atomic_f32: Option<bool>,
}

fn gpu_err(entry: &str, msg: String) -> PtxError {
    PtxError::Launch {
        entry: entry.to_string(),
        msg: format!("on the GPU: {msg}"),
    }
}

fn fault_class(c: u32) -> FaultClass {
    match c {
        fault::CLASS_MISALIGNED => FaultClass::Misaligned,
        fault::CLASS_WATCHDOG => FaultClass::Watchdog,
        fault::CLASS_TRAP => FaultClass::Trap,
        fault::CLASS_BARRIER => FaultClass::Barrier,
        fault::CLASS_UNINITIALIZED | fault::CLASS_UNINITIALIZED_GLOBAL => FaultClass::Uninitialized,
        fault::CLASS_RACE => FaultClass::Race,
        _ => FaultClass::OutOfBounds,
    }
}

/// The initcheck's message for the GPU's fault at `addr` (the first unwritten
/// byte's address; high word 1 for an atomic, 0 for a load), naming the byte,
/// its allocation and its size as the interpreter's (vgpu-ptx memory.rs).
fn global_uninitialised(
    k: &vgpu_ir::cfg::CfgKernel,
    layout: &GlobalLayout,
    lens: &[usize],
    opts: &ExecOptions,
    addr: u64,
) -> String {
    let what = if addr >> 32 == 1 {
        "atomic on"
    } else {
        "read of"
    };
    let at = addr & 0xffff_ffff;
    let globals = k
        .globals
        .iter()
        .map(|g| (g.name.clone(), g.addr, g.bytes.len() as u64));
    let buffers = layout
        .buffer_addrs
        .iter()
        .zip(lens)
        .enumerate()
        .map(|(i, (&a, &n))| (opts.buffer_name(i), a, n as u64));
    let whose = globals
        .chain(buffers)
        .find(|(_, base, len)| at >= *base && at - base < *len);
    vgpu_ptx::uninitialised_global_message(
        what,
        at,
        whose.as_ref().map(|(n, b, l)| (n.as_str(), *b, *l)),
        "initcheck; GPU kernel check",
    )
}

/// The race check's message for the GPU's fault at `addr` (the shared byte;
/// the high word's hazard and other warp: vgpu-ir's `fault::CLASS_RACE`), in
/// the interpreter's words (vgpu-ptx race.rs) with the other access's warp.
fn shared_race(addr: u64) -> String {
    let at = addr & 0xffff_ffff;
    let h = (addr >> 32) as u32;
    let (hazard, here, there) = match h & 0xff {
        1 => ("read-after-write", "read", "written"),
        2 => ("write-after-write", "written", "written"),
        _ => ("write-after-read", "written", "read"),
    };
    let warp = match h >> 8 {
        0xff => "threads of other warps".to_string(),
        w => format!("a thread of warp {w}"),
    };
    format!(
        "{hazard} hazard on shared byte 0x{at:x}: {here} here, {there} by {warp}, with no barrier between (GPU kernel check)"
    )
}

impl PtxRunner {
    /// A runner for `backend`; `checked`: bounds, alignment and watchdog
    /// checks in the GPU kernel (the interpreter always checks bounds).
    pub fn new(backend: Backend, checked: bool) -> PtxRunner {
        PtxRunner {
            backend,
            checked,
            cache: None,
            gpu_launches: 0,
            gpu_compiles: 0,
            fallbacks: Vec::new(),
            time_iterations: 0,
            kernel_seconds: None,
            racecheck: false,
            fma_f32: FmaF32Path::Auto,
            atomic_f32: AtomicF32Path::Auto,
            native_atomic_f32: None,
            native_fma_f32: None,
            fma_f32_guarded: false,
            f32_subnormals: None,
        }
    }

    /// Seconds spent compiling GPU kernels so far (the kernel cache's count).
    pub fn compile_seconds(&self) -> f64 {
        self.cache
            .as_ref()
            .map_or(0.0, |c| c.stats().compile_time.as_secs_f64())
    }

    /// Kernels written as WGSL so far (the kernel cache's count): a kernel
    /// launched again for the same block shape and options reuses its WGSL
    /// rather than running the emitter again.
    pub fn kernels_emitted(&self) -> u64 {
        self.cache.as_ref().map_or(0, |c| c.cfg_kernels_emitted())
    }

    /// The backend asked for.
    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// Launches `entry` of `m` on this runner's backend (see the module docs).
    ///
    /// # Errors
    /// The interpreter's errors; on the GPU, [`PtxError::Unsupported`] for an
    /// instruction the GPU path cannot run, [`PtxError::Launch`] for an
    /// adapter that is missing, a limit exceeded or a failed dispatch, and
    /// [`PtxError::Fault`] for a fault the checked kernel recorded.
    pub fn launch(
        &mut self,
        m: &Module,
        entry: &str,
        cfg: &LaunchConfig,
        args: &[KernelArg],
        bufs: &mut [Vec<u8>],
        opts: &ExecOptions,
    ) -> Result<LaunchStats, PtxError> {
        match self.backend {
            Backend::Cpu => m.launch(entry, cfg, args, bufs, opts),
            Backend::Gpu => self.launch_gpu(m, entry, cfg, args, bufs, opts),
            Backend::Auto => match self.launch_gpu(m, entry, cfg, args, bufs, opts) {
                Err(e @ PtxError::Fault(_)) => Err(e),
                Err(e) => {
                    self.fallbacks.push(format!("{entry}: {e}"));
                    m.launch(entry, cfg, args, bufs, opts)
                }
                ok => ok,
            },
        }
    }

    fn launch_gpu(
        &mut self,
        m: &Module,
        entry: &str,
        cfg: &LaunchConfig,
        args: &[KernelArg],
        bufs: &mut [Vec<u8>],
        opts: &ExecOptions,
    ) -> Result<LaunchStats, PtxError> {
        if opts.trace.is_some() {
            return Err(gpu_err(
                entry,
                "a trace runs on the interpreter only (--backend cpu)".into(),
            ));
        }
        if opts.initcheck && !self.checked {
            return Err(gpu_err(
                entry,
                "the global-memory initcheck needs the checked GPU kernel (not --unchecked)".into(),
            ));
        }
        let (k, ck) = vgpu_ptx::lower::lower_entry(m, entry)?;
        if self.cache.is_none() {
            self.cache = Some(KernelCache::new().map_err(|e| gpu_err(entry, e.to_string()))?);
        }
        let cache = self.cache.as_mut().expect("set above");
        let lens: Vec<usize> = bufs.iter().map(Vec::len).collect();
        let layout = GlobalLayout::new(&ck, &lens).map_err(|e| gpu_err(entry, e.to_string()))?;
        let params = vgpu_ptx::param_bytes(&k, args, &layout.buffer_addrs)?;
        // The initcheck: which buffers the host wrote (vgpu-ptx's launch.rs).
        let host_wrote: Vec<bool> = (0..bufs.len())
            .map(|i| !opts.uninitialised_buffers.contains(&i))
            .collect();
        let launch = CfgLaunch {
            grid: cfg.grid.into(),
            block: cfg.block.into(),
            dyn_shared: cfg.shared_bytes,
            params: &params,
            checked: self.checked,
            // The interpreter's watchdog counts instructions per warp, the GPU's
            // instructions per thread (checked at loop headers; kept below 2^31
            // so the count cannot wrap).
            watchdog: opts.watchdog.min(i32::MAX as u64) as u32,
            time_iterations: self.time_iterations,
            fma_f32: self.fma_f32,
            atomic_f32: self.atomic_f32,
            initcheck: opts.initcheck.then_some(&host_wrote[..]),
            racecheck: self.racecheck,
        };
        let run = run_cfg_kernel(cache, &ck, &layout, &launch, bufs)
            .map_err(|e| gpu_err(entry, e.to_string()))?;
        self.gpu_launches += 1;
        self.gpu_compiles += run.compiled as u64;
        self.kernel_seconds = run.kernel_seconds.or(self.kernel_seconds);
        self.native_fma_f32 = run.native_fma_f32.or(self.native_fma_f32);
        if run.native_fma_f32.is_some() {
            self.fma_f32_guarded = run.fma_f32_guarded;
        }
        self.f32_subnormals = Some(run.f32_subnormals);
        self.native_atomic_f32 = run.native_atomic_f32.or(self.native_atomic_f32);
        if let Some(f) = run.fault {
            let CfgFault {
                class: raw,
                line,
                block,
                thread,
                addr,
            } = f;
            let class = fault_class(raw);
            let detail = match class {
                FaultClass::Watchdog => "the GPU kernel's watchdog ran out".to_string(),
                FaultClass::Trap => "trap".to_string(),
                FaultClass::Barrier => "at a barrier's release, threads of the block wait at different barriers, or one has exited (GPU kernel check)".to_string(),
                FaultClass::Uninitialized if raw == fault::CLASS_UNINITIALIZED_GLOBAL => {
                    global_uninitialised(&ck, &layout, &lens, opts, addr)
                }
                FaultClass::Race => shared_race(addr),
                FaultClass::Uninitialized => "a load or atomic of shared memory that nothing wrote (nor did any other thread before the next barrier; GPU kernel check)".to_string(),
                _ => format!("address {addr:#x} (GPU kernel check)"),
            };
            return Err(PtxError::Fault(Box::new(Fault {
                class,
                entry: entry.to_string(),
                block,
                thread,
                line,
                detail,
            })));
        }
        Ok(LaunchStats::default())
    }
}
