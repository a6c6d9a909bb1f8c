//! Loading a module and launching a kernel: arguments, buffers in global memory,
//! blocks in parallel (rayon), atomics as deterministic flux.

use std::sync::atomic::{AtomicU64, Ordering};

use rayon::prelude::*;

use crate::ast;
use crate::error::PtxError;
use crate::exec::{run_block, BlockOut, LaunchCtx, Scratch};
use crate::memory::{GlobalMem, Region, BUFFER_BASE, BUFFER_GAP};
use crate::program::Kernel;
use crate::types::Ty;

/// Options of a launch.
#[derive(Debug, Clone)]
pub struct ExecOptions {
    /// Run the checker (misaligned access, barrier divergence, shared-memory races
    /// and uninitialised reads). Out-of-bounds accesses and the watchdog are
    /// always errors: there is no memory past an allocation.
    pub check: bool,
    /// Watchdog: the most instructions one warp may execute.
    pub watchdog: u64,
    /// Record one thread's trajectory.
    pub trace: Option<TraceTarget>,
    /// Run blocks in parallel on all cores (results are the same either way).
    pub parallel: bool,
}

impl Default for ExecOptions {
    fn default() -> Self {
        ExecOptions {
            check: true,
            watchdog: DEFAULT_WATCHDOG,
            trace: None,
            parallel: true,
        }
    }
}

/// The default watchdog limit: instructions per warp.
pub const DEFAULT_WATCHDOG: u64 = 1 << 26;

/// The thread whose trajectory a trace records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TraceTarget {
    /// Block index.
    pub block: [u32; 3],
    /// Thread index in the block.
    pub thread: [u32; 3],
}

/// One step of a traced thread: the PTX line it executed and the registers it
/// wrote (name, declared type, new bits).
#[derive(Debug, Clone, PartialEq)]
pub struct TraceStep {
    /// 1-based PTX line.
    pub line: u32,
    /// Registers written by this instruction.
    pub writes: Vec<(String, Ty, u64)>,
}

/// A kernel argument.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum KernelArg {
    /// A 32-bit unsigned scalar.
    U32(u32),
    /// A 32-bit signed scalar.
    S32(i32),
    /// An f32 scalar.
    F32(f32),
    /// A 64-bit unsigned scalar.
    U64(u64),
    /// A 64-bit signed scalar.
    S64(i64),
    /// An f64 scalar.
    F64(f64),
    /// A device pointer to buffer `i` of the launch.
    Buffer(usize),
}

impl KernelArg {
    fn bytes(&self, base_of: &dyn Fn(usize) -> Option<u64>) -> Option<Vec<u8>> {
        Some(match *self {
            KernelArg::U32(v) => v.to_le_bytes().to_vec(),
            KernelArg::S32(v) => v.to_le_bytes().to_vec(),
            KernelArg::F32(v) => v.to_le_bytes().to_vec(),
            KernelArg::U64(v) => v.to_le_bytes().to_vec(),
            KernelArg::S64(v) => v.to_le_bytes().to_vec(),
            KernelArg::F64(v) => v.to_le_bytes().to_vec(),
            KernelArg::Buffer(i) => base_of(i)?.to_le_bytes().to_vec(),
        })
    }
}

/// Launch geometry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LaunchConfig {
    /// Blocks per grid.
    pub grid: [u32; 3],
    /// Threads per block.
    pub block: [u32; 3],
    /// Dynamic shared memory in bytes (`extern .shared`).
    pub shared_bytes: u32,
}

/// What a launch did.
#[derive(Debug, Clone, Default)]
pub struct LaunchStats {
    /// Thread-instructions executed (each warp instruction counts its issuing lanes).
    pub thread_instructions: u64,
    /// Blocks ran one at a time, in order, because some global atomic's old value
    /// is read (so the order of atomics is fixed and results deterministic).
    pub ordered_blocks: bool,
    /// The traced thread's steps, when asked.
    pub trace: Vec<TraceStep>,
}

/// A parsed PTX module.
#[derive(Debug, Clone)]
pub struct Module {
    ast: ast::Module,
    file: String,
}

impl Module {
    /// Parses PTX text; `file` names it in errors.
    pub fn parse(text: &str, file: &str) -> Result<Module, PtxError> {
        Ok(Module {
            ast: crate::parser::parse_module(text, file)?,
            file: file.to_string(),
        })
    }

    /// Reads and parses a .ptx file.
    pub fn from_file(path: &std::path::Path) -> Result<Module, PtxError> {
        let text = std::fs::read_to_string(path).map_err(|e| PtxError::Case {
            path: path.display().to_string(),
            msg: e.to_string(),
        })?;
        Module::parse(&text, &path.display().to_string())
    }

    /// The syntax tree.
    pub fn ast(&self) -> &ast::Module {
        &self.ast
    }

    /// The names of the module's `.entry` kernels.
    pub fn entries(&self) -> Vec<&str> {
        self.ast
            .functions
            .iter()
            .filter(|f| f.is_entry && f.body.is_some())
            .map(|f| f.name.as_str())
            .collect()
    }

    /// Decodes one entry (calls inlined) into a launchable [`Kernel`].
    pub fn kernel(&self, entry: &str) -> Result<Kernel, PtxError> {
        crate::decode::decode_entry(&self.ast, &self.file, entry)
    }

    /// Decodes `entry` and launches it on `buffers` (updated in place).
    pub fn launch(
        &self,
        entry: &str,
        cfg: &LaunchConfig,
        args: &[KernelArg],
        buffers: &mut [Vec<u8>],
        opts: &ExecOptions,
    ) -> Result<LaunchStats, PtxError> {
        launch(&self.kernel(entry)?, cfg, args, buffers, opts)
    }
}

/// Launches `k` with `args` over `buffers` (global memory; updated in place).
///
/// Blocks run in parallel. Atomics whose old value is never read are flux: they
/// are applied after every block has run, in block order (x fastest) and within a
/// block in execution order, so results are deterministic. If some global atomic's
/// old value is read, blocks run one at a time in that same order instead.
pub fn launch(
    k: &Kernel,
    cfg: &LaunchConfig,
    args: &[KernelArg],
    buffers: &mut [Vec<u8>],
    opts: &ExecOptions,
) -> Result<LaunchStats, PtxError> {
    let lerr = |msg: String| PtxError::Launch {
        entry: k.name.clone(),
        msg,
    };
    if cfg.block.contains(&0) || cfg.grid.contains(&0) {
        return Err(lerr(format!(
            "empty geometry: grid {:?}, block {:?}",
            cfg.grid, cfg.block
        )));
    }
    let nthreads = cfg.block.iter().map(|&v| v as u64).product::<u64>();
    if nthreads > 1024 || cfg.block[2] > 64 {
        return Err(lerr(format!(
            "block {:?} has {nthreads} threads; at most 1024 (z at most 64)",
            cfg.block
        )));
    }
    let shared_total = k.shared_static as u64 + cfg.shared_bytes as u64;
    if shared_total > 228 * 1024 {
        return Err(lerr(format!(
            "{shared_total} bytes of shared memory per block; at most 228 KiB"
        )));
    }
    if k.local_bytes > 512 * 1024 {
        return Err(lerr(format!(
            "{} bytes of local memory per thread; at most 512 KiB",
            k.local_bytes
        )));
    }
    if args.len() != k.params.len() {
        return Err(lerr(format!(
            "{} arguments given, the kernel has {} parameters",
            args.len(),
            k.params.len()
        )));
    }
    // Global memory: module variables, then the buffers.
    let mut regions: Vec<Region> = k
        .globals
        .iter()
        .map(|g| Region::new(g.name.clone(), g.addr, &g.bytes, g.writable))
        .collect();
    let mut bases = Vec::new();
    let mut at = BUFFER_BASE;
    for (i, b) in buffers.iter().enumerate() {
        bases.push(at);
        regions.push(Region::new(format!("buffer {i}"), at, b, true));
        at = (at + b.len() as u64 + BUFFER_GAP).next_multiple_of(256);
    }
    let mut params = vec![0u8; k.param_bytes as usize];
    for (i, (a, p)) in args.iter().zip(&k.params).enumerate() {
        let bytes = a.bytes(&|b| bases.get(b).copied()).ok_or_else(|| {
            lerr(format!(
                "argument {i}: no buffer {a:?} ({} buffers given)",
                bases.len()
            ))
        })?;
        let float_param = p.ty.starts_with('f');
        let int_param = p.ty.starts_with('u') || p.ty.starts_with('s');
        let ok = bytes.len() as u32 == p.size
            && match a {
                KernelArg::Buffer(_) => !float_param,
                KernelArg::F32(_) | KernelArg::F64(_) => !int_param,
                _ => !float_param,
            };
        if !ok {
            return Err(lerr(format!(
                "argument {i} ({a:?}) does not fit parameter `{}` of type .{} ({} bytes)",
                p.name, p.ty, p.size
            )));
        }
        params[p.offset as usize..(p.offset + p.size) as usize].copy_from_slice(&bytes);
    }
    let gmem = GlobalMem { regions };
    let ctx = LaunchCtx {
        k,
        grid: cfg.grid,
        block: cfg.block,
        dyn_shared: cfg.shared_bytes,
        gmem: &gmem,
        params: &params,
        opts,
    };
    let [gx, gy, gz] = cfg.grid;
    let nblocks = gx as u64 * gy as u64 * gz as u64;
    let bid = |b: u64| {
        [
            (b % gx as u64) as u32,
            ((b / gx as u64) % gy as u64) as u32,
            (b / (gx as u64 * gy as u64)) as u32,
        ]
    };
    let ordered = k.needs_ordered_blocks || !opts.parallel;
    let outs: Vec<Option<Result<BlockOut, PtxError>>> = if ordered {
        let mut sc = Scratch::new(&ctx);
        let mut v = Vec::new();
        for b in 0..nblocks {
            let r = run_block(&ctx, bid(b), &mut sc);
            let stop = r.is_err();
            v.push(Some(r));
            if stop {
                break;
            }
        }
        v
    } else {
        let first_err = AtomicU64::new(u64::MAX);
        (0..nblocks)
            .into_par_iter()
            .map_init(
                || Scratch::new(&ctx),
                |sc, b| {
                    if b > first_err.load(Ordering::Relaxed) {
                        return None;
                    }
                    let r = run_block(&ctx, bid(b), sc);
                    if r.is_err() {
                        first_err.fetch_min(b, Ordering::Relaxed);
                    }
                    Some(r)
                },
            )
            .collect()
    };
    let mut stats = LaunchStats {
        ordered_blocks: ordered,
        ..Default::default()
    };
    let mut flux = Vec::new();
    for o in outs.into_iter().flatten() {
        let o = o?;
        stats.thread_instructions += o.thread_instructions;
        flux.extend(o.flux);
        if !o.trace.is_empty() {
            stats.trace = o.trace;
        }
    }
    for fx in flux {
        if let crate::program::Op::Atom { f, size, .. } = &k.code[fx.pc as usize].op {
            gmem.rmw(fx.addr, *size, &|o| f(o, fx.b, fx.c))
                .map_err(|e| lerr(e.detail))?;
        }
    }
    let n_globals = k.globals.len();
    for (i, b) in buffers.iter_mut().enumerate() {
        *b = gmem.regions[n_globals + i].to_bytes();
    }
    Ok(stats)
}
