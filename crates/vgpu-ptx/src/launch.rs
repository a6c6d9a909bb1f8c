//! Loading a module and launching a kernel: arguments, buffers in global memory,
//! blocks in parallel (rayon), atomics as deterministic flux.

use std::sync::atomic::{AtomicU64, Ordering};

use rayon::prelude::*;

use crate::ast;
use crate::error::PtxError;
use crate::exec::{run_block, BlockOut, LaunchCtx, Scratch};
pub use crate::exec_options::{ExecOptions, TraceStep, TraceTarget, DEFAULT_WATCHDOG};
use crate::limits::{self, human_bytes};
use crate::memory::{GlobalMem, Region, BUFFER_BASE, BUFFER_GAP};
use crate::program::Kernel;

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
    /// Blocks ran one at a time, in order: some global atomic's old value is
    /// read (so the order of atomics is fixed and results deterministic), the
    /// initcheck is on, or the caller asked for it.
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

    /// Reads and parses a .ptx file: a regular file of at most
    /// [`limits::MAX_PTX_FILE_BYTES`], UTF-8, whose first token (after
    /// whitespace and comments) is the `.version` directive that begins every
    /// PTX module (PTX ISA, "PTX module directives"). A file that is not PTX
    /// by that test is refused naming only its path: no error quotes its
    /// contents. Parse errors in a PTX file name the file, line and column and
    /// may quote the offending token.
    pub fn from_file(path: &std::path::Path) -> Result<Module, PtxError> {
        let ferr = |msg: &str| PtxError::Case {
            path: path.display().to_string(),
            msg: msg.to_string(),
        };
        let bytes = limits::read_file_limited(path, limits::MAX_PTX_FILE_BYTES, "PTX module")?;
        let text = String::from_utf8(bytes)
            .map_err(|_| ferr("not a PTX module: not UTF-8 text (its contents are not shown)"))?;
        if !starts_with_version(&text) {
            return Err(ferr(
                "not a PTX module: it does not begin with a `.version` directive \
                 (its contents are not shown)",
            ));
        }
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

    /// The file name the module was read from (for messages).
    pub fn file(&self) -> &str {
        &self.file
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

/// Whether `text`, past whitespace and `//` and `/* */` comments, begins
/// with the token `.version`.
fn starts_with_version(text: &str) -> bool {
    let mut t = text;
    loop {
        t = t.trim_start();
        if let Some(r) = t.strip_prefix("//") {
            t = r.find('\n').map_or("", |i| &r[i..]);
        } else if let Some(r) = t.strip_prefix("/*") {
            match r.find("*/") {
                Some(i) => t = &r[i + 2..],
                None => return false,
            }
        } else {
            return t
                .strip_prefix(".version")
                .is_some_and(|r| r.starts_with(|c: char| c.is_whitespace()));
        }
    }
}

/// The parameter buffer of `k` for `args`, a buffer argument `i` given the
/// address `bases[i]`; each argument checked against its parameter's type and size.
pub fn param_bytes(k: &Kernel, args: &[KernelArg], bases: &[u64]) -> Result<Vec<u8>, PtxError> {
    let lerr = |msg: String| PtxError::Launch {
        entry: k.name.clone(),
        msg,
    };
    if args.len() != k.params.len() {
        return Err(lerr(format!(
            "{} arguments given, the kernel has {} parameters",
            args.len(),
            k.params.len()
        )));
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
    Ok(params)
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
    check_launch(k, cfg, buffers, opts)?;
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
        let name = match opts.buffer_names.get(i) {
            Some(n) => format!("buffer {i} ({n})"),
            None => format!("buffer {i}"),
        };
        regions.push(Region::new(name, at, b, true));
        at = (at + b.len() as u64 + BUFFER_GAP).next_multiple_of(256);
    }
    let params = param_bytes(k, args, &bases)?;
    mark_tracked(k, args, &mut regions);
    if opts.initcheck {
        let n_globals = k.globals.len();
        for (i, r) in regions.iter_mut().enumerate() {
            let host_wrote =
                i < n_globals || !opts.uninitialised_buffers.contains(&(i - n_globals));
            r.track_init(host_wrote);
        }
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
    // At most 2^31 - 1 × 65535 × 65535 (checked), and at most max_threads.
    let nblocks = gx as u64 * gy as u64 * gz as u64;
    let bid = |b: u64| {
        [
            (b % gx as u64) as u32,
            ((b / gx as u64) % gy as u64) as u32,
            (b / (gx as u64 * gy as u64)) as u32,
        ]
    };
    let ordered = runs_ordered(k, opts);
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
        // Rayon calls the init closure once per split of the range, far more
        // often than there are workers: scratch goes back to a pool when a
        // split's job ends, so a launch allocates it about once per worker.
        let pool = ScratchPool(std::sync::Mutex::new(Vec::new()));
        (0..nblocks)
            .into_par_iter()
            .map_init(
                || pool.take(&ctx),
                |sc, b| {
                    if b > first_err.load(Ordering::Relaxed) {
                        return None;
                    }
                    let r = run_block(&ctx, bid(b), sc.get());
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

/// Whether the launch runs its blocks one at a time in linear order: some
/// global atomic's old value is read, the caller asked, or the initcheck is on
/// (its "written before" is that order).
fn runs_ordered(k: &Kernel, opts: &ExecOptions) -> bool {
    k.needs_ordered_blocks || !opts.parallel || opts.initcheck
}

/// The geometry, the traced thread and every size the launch will allocate,
/// checked before anything is: CUDA's limits on grid and block, the total
/// thread count against [`limits::Limits::max_threads`], and the memory of the copies
/// of the buffers, one result slot per block and each worker's scratch
/// (shared memory and its checker shadow, local memory, registers) against
/// [`limits::Limits::max_memory`]. All arithmetic is overflow-checked.
/// Marks the allocations whose loads the global race checker logs: the buffers
/// passed for the parameters the kernel's store addresses derive from, the
/// module's writable variables when it stores at all (a symbol's address is an
/// immediate the analysis does not follow), and every writable allocation when
/// a store address is not followed or comes from a parameter that is not a
/// buffer.
fn mark_tracked(k: &Kernel, args: &[KernelArg], regions: &mut [Region]) {
    let t = &k.store_targets;
    if !t.some {
        return;
    }
    let n_globals = k.globals.len();
    let mut all = t.any;
    for (i, &stored) in t.params.iter().enumerate() {
        if !stored {
            continue;
        }
        match args.get(i) {
            Some(KernelArg::Buffer(b)) => {
                if let Some(r) = regions.get_mut(n_globals + b) {
                    r.tracked = true;
                }
            }
            _ => all = true,
        }
    }
    for (i, r) in regions.iter_mut().enumerate() {
        if r.writable && (all || i < n_globals) {
            r.tracked = true;
        }
    }
}

/// Per-worker scratch reused across the splits of a parallel launch.
struct ScratchPool(std::sync::Mutex<Vec<Scratch>>);

/// Scratch taken from a [`ScratchPool`], returned to it when dropped.
struct PooledScratch<'p> {
    sc: Option<Scratch>,
    pool: &'p ScratchPool,
}

impl ScratchPool {
    fn take(&self, ctx: &LaunchCtx) -> PooledScratch<'_> {
        let sc = self
            .0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .pop()
            .unwrap_or_else(|| Scratch::new(ctx));
        PooledScratch {
            sc: Some(sc),
            pool: self,
        }
    }
}

impl PooledScratch<'_> {
    fn get(&mut self) -> &mut Scratch {
        self.sc.as_mut().expect("present until dropped")
    }
}

impl Drop for PooledScratch<'_> {
    fn drop(&mut self) {
        if let Some(sc) = self.sc.take() {
            self.pool
                .0
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(sc);
        }
    }
}

fn check_launch(
    k: &Kernel,
    cfg: &LaunchConfig,
    buffers: &[Vec<u8>],
    opts: &ExecOptions,
) -> Result<(), PtxError> {
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
    if cfg.grid[0] > i32::MAX as u32 || cfg.grid[1] > 65535 || cfg.grid[2] > 65535 {
        return Err(lerr(format!(
            "grid {:?}: at most 2147483647 × 65535 × 65535 blocks (CUDA's limits)",
            cfg.grid
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
    if let Some(t) = &opts.trace {
        let inside = |i: [u32; 3], d: [u32; 3]| i.iter().zip(&d).all(|(a, b)| a < b);
        if !inside(t.block, cfg.grid) {
            return Err(lerr(format!(
                "the traced block ({},{},{}) is outside the grid {:?}",
                t.block[0], t.block[1], t.block[2], cfg.grid
            )));
        }
        if !inside(t.thread, cfg.block) {
            return Err(lerr(format!(
                "the traced thread ({},{},{}) is outside the block {:?} ({nthreads} threads per block)",
                t.thread[0], t.thread[1], t.thread[2], cfg.block
            )));
        }
    }
    let l = &opts.limits;
    let geometry = format!(
        "launch of `{}` (grid {:?}, block {:?})",
        k.name, cfg.grid, cfg.block
    );
    // Cannot overflow: at most 2^31 · 2^32 blocks.
    let nblocks = cfg.grid.iter().map(|&v| v as u64).product::<u64>();
    let threads = nblocks
        .checked_mul(nthreads)
        .ok_or_else(|| PtxError::Limit {
            quantity: geometry.clone(),
            need: format!("{nblocks} × {nthreads} threads (more than 2^64)"),
            limit: format!("{} threads", l.max_threads),
            flag: "--max-threads",
        })?;
    l.threads(&geometry, threads)?;
    // Memory: the buffers' copies (global memory, then the bytes written back),
    // one result slot per block, and one scratch per worker.
    let buffer_bytes = limits::sum(
        l,
        "the launch's buffers",
        &buffers.iter().map(|b| b.len() as u64).collect::<Vec<_>>(),
    )?;
    let globals = k.globals.iter().map(|g| g.bytes.len() as u64).sum::<u64>();
    let slot = std::mem::size_of::<Option<Result<crate::exec::BlockOut, PtxError>>>() as u64;
    let slots = l.bytes(
        &format!("{geometry}: one result slot per block"),
        nblocks,
        slot,
    )?;
    let nwarps = nthreads.div_ceil(32);
    let scratch = limits::sum(
        l,
        &format!("{geometry}: per-worker scratch"),
        &[
            // The block's shared window: its bytes and the reserved region's.
            crate::special::reserved_region(shared_total).1
                * (1 + crate::race::SHADOW_BYTES_PER_BYTE),
            nthreads * k.local_bytes as u64,
            nwarps * 32 * 8 * k.regs.len().max(1) as u64,
            if opts.check && k.store_targets.some {
                crate::global_race::LOG_BYTES_BOUND
            } else {
                0
            },
        ],
    )?;
    let workers = if runs_ordered(k, opts) {
        1
    } else {
        rayon::current_num_threads() as u64
    };
    let scratch = l.bytes(&format!("{geometry}: per-worker scratch"), workers, scratch)?;
    // The initcheck's shadow: one bit per byte, in 8-byte words.
    let init_shadow = if opts.initcheck {
        buffers
            .iter()
            .map(|b| b.len() as u64)
            .chain(k.globals.iter().map(|g| g.bytes.len() as u64))
            .map(|n| n.div_ceil(64) * 8)
            .fold(0u64, u64::saturating_add)
    } else {
        0
    };
    let need = limits::sum(
        l,
        &geometry,
        &[
            buffer_bytes,
            buffer_bytes,
            globals,
            slots,
            scratch,
            init_shadow,
        ],
    )?;
    l.memory(&geometry, need).map_err(|e| match e {
        PtxError::Limit {
            quantity,
            need,
            limit,
            flag,
        } => PtxError::Limit {
            quantity: format!(
                "{quantity} ({} of buffers, {} of per-block result slots, {} of scratch)",
                human_bytes(buffer_bytes),
                human_bytes(slots),
                human_bytes(scratch)
            ),
            need,
            limit,
            flag,
        },
        e => e,
    })
}
