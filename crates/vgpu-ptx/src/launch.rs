//! Loading a module and launching a kernel: arguments, buffers in global memory,
//! blocks scheduled by vgpu-field's one block scheduler (in parallel, or one at
//! a time in order), atomics as deterministic flux. The geometry is
//! vgpu-field's [`LaunchConfig`], checked against CUDA's limits there.

use vgpu_field::blocks::{result_bytes_per_block, try_run_indexed};
use vgpu_field::Par;
pub use vgpu_field::{Dim3, LaunchConfig};

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
/// are applied after every block has run, in the fixed order of
/// `vgpu_field::flux` (block order, x fastest; within a block barrier interval,
/// then thread, then the thread's program order), so results are deterministic. If some global atomic's
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
        regions.push(Region::new(opts.buffer_name(i), at, b, true));
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
        grid: cfg.grid.into(),
        block: cfg.block.into(),
        dyn_shared: cfg.shared_bytes,
        gmem: &gmem,
        params: &params,
        opts,
    };
    // Blocks in linear order (x fastest), each worker with one scratch; a
    // failing block stops the blocks after it, and its error (the lowest
    // failing block's) is the launch's.
    let outs = try_run_indexed(
        launch_par(k, opts),
        cfg.num_blocks(),
        || Scratch::new(&ctx),
        |sc, b| run_block(&ctx, cfg.grid.delinearize(b as u64).into(), sc),
    )
    .map_err(|e| lerr(e.to_string()))??;
    let mut stats = LaunchStats {
        ordered_blocks: runs_ordered(k, opts),
        ..Default::default()
    };
    let mut flux = Vec::new();
    for o in outs {
        stats.thread_instructions += o.thread_instructions;
        flux.extend(o.flux.into_iter().map(|(_, fx)| fx));
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

/// How the launch's blocks are spread: one at a time in order on the calling
/// thread when [`runs_ordered`], over rayon's current pool otherwise.
fn launch_par(k: &Kernel, opts: &ExecOptions) -> Par {
    if runs_ordered(k, opts) {
        Par::Seq
    } else {
        Par::Auto
    }
}

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

/// The geometry, the traced thread and every size the launch will allocate,
/// checked before anything is: CUDA's limits on grid, block and shared memory
/// (vgpu-field's [`LaunchConfig::validate_with_shared`]), the total
/// thread count against [`limits::Limits::max_threads`], and the memory of the copies
/// of the buffers, one result slot per block and each worker's scratch
/// (shared memory and its checker shadow, local memory, registers) against
/// [`limits::Limits::max_memory`]. All arithmetic is overflow-checked.
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
    cfg.validate_with_shared(k.shared_static as u64)
        .map_err(|e| lerr(e.to_string()))?;
    let nthreads = cfg.block.count();
    let shared_total = k.shared_static as u64 + cfg.shared_bytes as u64;
    if k.local_bytes > 512 * 1024 {
        return Err(lerr(format!(
            "{} bytes of local memory per thread; at most 512 KiB",
            k.local_bytes
        )));
    }
    if let Some(t) = &opts.trace {
        let inside = |i: [u32; 3], d: Dim3| i.iter().zip(<[u32; 3]>::from(d)).all(|(&a, b)| a < b);
        if !inside(t.block, cfg.grid) {
            return Err(lerr(format!(
                "the traced block ({},{},{}) is outside the grid {}",
                t.block[0], t.block[1], t.block[2], cfg.grid
            )));
        }
        if !inside(t.thread, cfg.block) {
            return Err(lerr(format!(
                "the traced thread ({},{},{}) is outside the block {} ({nthreads} threads per block)",
                t.thread[0], t.thread[1], t.thread[2], cfg.block
            )));
        }
    }
    let l = &opts.limits;
    let geometry = format!(
        "launch of `{}` (grid {}, block {})",
        k.name, cfg.grid, cfg.block
    );
    // Cannot overflow: at most 2^31 · 2^32 blocks.
    let nblocks = cfg.grid.count();
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
    let slots = l.bytes(
        &format!("{geometry}: one result slot per block"),
        nblocks,
        result_bytes_per_block::<BlockOut>(),
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
    let workers = launch_par(k, opts).threads() as u64;
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

#[cfg(test)]
mod tests {
    use super::*;

    /// `out[gid] = gid`, unguarded: threads past the buffer fault.
    const IOTA: &str = ".version 8.0\n.target sm_90\n.address_size 64\n\
.visible .entry iota(.param .u64 pout)\n{\n\
.reg .b32 %r<8>;\n.reg .b64 %rd<4>;\n\
ld.param.u64 %rd1, [pout];\n\
mov.u32 %r1, %tid.x;\nmov.u32 %r2, %ctaid.x;\nmov.u32 %r3, %ntid.x;\n\
mad.lo.s32 %r4, %r2, %r3, %r1;\n\
mul.wide.u32 %rd2, %r4, 4;\nadd.s64 %rd3, %rd1, %rd2;\nst.global.u32 [%rd3], %r4;\nret;\n}\n";

    fn run(cfg: LaunchConfig, words: usize, parallel: bool) -> Result<Vec<u8>, PtxError> {
        let m = Module::parse(IOTA, "iota.ptx").expect("parses");
        let mut bufs = vec![vec![0u8; words * 4]];
        let opts = ExecOptions {
            parallel,
            ..ExecOptions::default()
        };
        m.launch("iota", &cfg, &[KernelArg::Buffer(0)], &mut bufs, &opts)?;
        Ok(bufs.remove(0))
    }

    fn cfg(grid: [u32; 3], block: [u32; 3], shared_bytes: u32) -> LaunchConfig {
        LaunchConfig {
            grid: grid.into(),
            block: block.into(),
            shared_bytes,
        }
    }

    /// CUDA's limits, checked by vgpu-field's `LaunchConfig`, refuse the
    /// launch naming the entry, the geometry and the limit.
    #[test]
    fn geometry_beyond_cuda_limits_is_a_launch_error_naming_the_limit() {
        for (c, says) in [
            (cfg([0, 1, 1], [32, 1, 1], 0), "grid dimension (0, 1, 1) has a zero component"),
            (cfg([1, 1, 1], [32, 32, 2], 0), "2048 trajectories, more than the limit of 1024 threads per block"),
            (cfg([1, 1, 1], [1, 1, 65], 0), "block dimension (1, 1, 65) exceeds CUDA's limit of 64 on axis z"),
            (cfg([1, 65536, 1], [1, 1, 1], 0), "grid dimension (1, 65536, 1) exceeds CUDA's limit of 65535 on axis y"),
            (cfg([1, 1, 1], [32, 1, 1], 228 * 1024 + 1), "233473 bytes of shared memory per block (0 static + 233473 dynamic), more than the limit of 233472 (228 KiB)"),
        ] {
            let e = run(c, 64, true).unwrap_err();
            let s = e.to_string();
            assert!(matches!(e, PtxError::Launch { .. }), "{s}");
            assert!(s.starts_with("launch of `iota`: ") && s.contains(says), "{s}");
        }
        let fine = run(cfg([2, 1, 1], [32, 1, 1], 228 * 1024), 64, true).unwrap();
        assert_eq!(fine[4 * 63..], 63u32.to_le_bytes());
    }

    /// Blocks 2.. of 8 write past the buffer: the launch's error is block 2's,
    /// in parallel and one block at a time alike.
    #[test]
    fn the_lowest_failing_block_is_the_launch_error() {
        for parallel in [true, false] {
            let e = run(cfg([8, 1, 1], [32, 1, 1], 0), 64, parallel).unwrap_err();
            let f = e.fault().unwrap_or_else(|| panic!("{e}"));
            assert_eq!(
                (f.class, f.block, f.thread),
                (crate::FaultClass::OutOfBounds, [2, 0, 0], [0, 0, 0]),
                "parallel {parallel}: {e}"
            );
        }
    }
}
