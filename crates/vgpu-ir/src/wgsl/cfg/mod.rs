//! WGSL for the control-flow form ([`crate::cfg`]): one CUDA block is one
//! workgroup, one thread one invocation.
//!
//! * Control flow: a per-thread state machine, `loop { switch pc { … } }`, one
//!   case per basic block; WGSL has no goto, and this runs any graph.
//! * Barriers: when the kernel has any, the state machine sits in an outer loop
//!   of rounds. In a round every thread runs to its next barrier or its end;
//!   then all meet at a `workgroupBarrier()` (in uniform control flow, as WGSL
//!   demands), mark by workgroup atomic stores whether any is waiting (or
//!   held back), and leave the outer loop together when none is (the marks
//!   made uniform with `workgroupUniformLoad`; `writer::round_mark`). A thread that has returned keeps taking part in
//!   the rounds and does nothing in them, as an exited CUDA thread does not
//!   hold a `bar.sync` back. A thread ends its round early after a strong
//!   load ([`crate::cfg::Term::Yield`]), so one spinning on a flag lets the
//!   others run to the store that sets it; barriers are released only in a
//!   round where no thread yielded.
//! * Warp operations: 32 lanes by workgroup-memory emulation (warp.rs): each is
//!   a meeting point of the rounds, like a barrier, at which each warp's group
//!   (the interpreter's min-PC rule) exchanges values through workgroup arrays.
//! * Memory: global memory is one `array<u32>` (`array<atomic<u32>>` when the
//!   kernel stores sub-words there) addressed by bytes from [`GLOBAL_BASE`];
//!   sub-word loads shift and mask, sub-word stores are an atomic and/or pair
//!   so neighbouring bytes of other threads survive. Shared memory is a
//!   workgroup array, local memory a private array, parameters a storage
//!   buffer; a generic address goes to one of the first three by its window
//!   (access.rs). 64-bit integers are `vec2<u32>` (low, high).
//! * Checks (unless [`CfgWgslOptions::checked`] is off): every global access is
//!   looked up in the launch's region table (bounds, read-only, alignment),
//!   every shared, local and parameter access bounded (unless value ranges
//!   prove it in bounds and aligned: ranges.rs), and the number of block
//!   transitions counted against a watchdog, barrier divergence caught at
//!   each barrier's release and reads of shared memory nothing wrote
//!   (checks.rs), races on shared memory between warps, and with
//!   [`CfgChecks::initcheck`] reads of global memory nothing wrote; the first fault is written to the
//!   fault record (class, line, block, thread, address) and the thread stops.
//!
//! Bindings (group 0): `0` global memory, `1` launch words ([`meta`] layout:
//! region count, watchdog, the CUDA grid when the dispatch folds it, regions
//! as (start, end, writable) byte offsets),
//! `2` parameters (words), `3` the fault record ([`fault`] layout), `4` the
//! `atomic<f32>` view of global memory ([`binds_f32_atomic_view`]), and
//! with the global-memory initcheck its bits ([`initcheck_binding`]).

mod access;
mod atomic_probe;
mod bits;
mod bounded;
mod checks;
mod coverage;
mod emit;
mod exp2;
mod exprs;
mod float64;
mod float64_exact;
mod fma_plan;
mod fma_probe;
mod half;
mod magnitude;
mod motion;
mod padded_smem;
mod prelude;
mod ranges;
mod second_run;
mod seeds;
mod shadow_reads;
mod speculate;
mod structured;
mod subnormal_probe;
mod versioned;
mod warp;
mod watchdog;
mod writer;
mod written;

use crate::cfg::CfgKernel;
use crate::error::IrError;

pub use atomic_probe::atomic_add_f32_probe_wgsl;
pub use checks::check_workgroup_bytes;
pub use checks::{race_check_applies, race_workgroup_bytes};
pub use emit::{emit_cfg_kernel, emit_cfg_wgsl, emit_cfg_wgsl_with, fma_guarded, CfgWgsl};
pub use fma_probe::fma_probe_wgsl;
pub use subnormal_probe::f32_subnormal_probe_wgsl;
pub use warp::warp_exchange_bytes;

/// The byte address that global memory's offset 0 has (module variables sit
/// at their own addresses above it, launch buffers after them).
pub const GLOBAL_BASE: u64 = 0x10_0000;

/// Layout of the launch words (binding 1).
pub mod meta {
    /// Word: how many regions follow.
    pub const NREGIONS: usize = 0;
    /// Word: the watchdog's limit on block transitions per thread.
    pub const WATCHDOG: usize = 1;
    /// Word: `0xffffffff` records the first fault's details; any other
    /// value records only the first fault of the block with that linear
    /// index ([`super::fault::KEY`]), for the re-run that reports the
    /// lowest faulting block.
    pub const FAULT_ONLY: usize = 2;
    /// Word: the index of the first region-cache seed (seeds.rs): for each
    /// 8-byte parameter slot four words, the region its value points into
    /// as a region cache holds it (its first byte's address, the global
    /// base included, and its length), then the same for stores and
    /// atomics where the region is writable; (0, 0) where none.
    pub const SEEDS: usize = 3;
    /// Words `GRID..GRID + 3`: the CUDA grid (x, y, z) when the dispatch is
    /// not the grid itself but a two-dimensional fold of the linear block
    /// index (a grid dimension over the adapter's workgroups per dimension):
    /// each workgroup then computes its `%ctaid` from its linear index, and
    /// those past the grid's last block do nothing. All 0: the dispatch is
    /// the grid (`%ctaid` the workgroup id, `%nctaid` the workgroup count).
    pub const GRID: usize = 4;
    /// First region word; each region is (start, end, writable) in byte offsets
    /// from [`super::GLOBAL_BASE`].
    pub const REGIONS: usize = 8;
}

/// Layout of the fault record (binding 3), in words.
pub mod fault {
    /// Nonzero once a fault is recorded (the first one wins; see
    /// [`MIN_KEY`]).
    pub const CLAIMED: usize = 0;
    /// The class ([`CLASS_OUT_OF_BOUNDS`] …).
    pub const CLASS: usize = 1;
    /// The source line.
    pub const LINE: usize = 2;
    /// The block index, x y z.
    pub const BLOCK: usize = 3;
    /// The thread index, x y z.
    pub const THREAD: usize = 6;
    /// The faulting address, low then high word.
    pub const ADDR: usize = 9;
    /// The recorded fault's block, its linear index (x fastest).
    pub const KEY: usize = 11;
    /// The lowest block (linear) in which a thread faulted (the host sets
    /// it to `0xffffffff` before the dispatch). Where it differs from
    /// [`KEY`], the host runs the launch again with
    /// [`super::meta::FAULT_ONLY`] set to it, so that the reported fault is
    /// the lowest faulting block's first, as the interpreter reports it.
    pub const MIN_KEY: usize = 12;
    /// Set (to 1) by a workgroup of a kernel without its versioned loops'
    /// checked copies ([`super::CfgWgslOptions::speculative_loops`]) whose
    /// test before such a loop failed: it returned there, and the launch
    /// must run again with the full kernel.
    pub const FALLBACK: usize = 13;
    /// Words in the record.
    pub const WORDS: usize = 14;
    /// An access outside every allocation (or a write to a read-only one).
    pub const CLASS_OUT_OF_BOUNDS: u32 = 1;
    /// An access not aligned to its size.
    pub const CLASS_MISALIGNED: u32 = 2;
    /// The watchdog ran out.
    pub const CLASS_WATCHDOG: u32 = 3;
    /// `trap`.
    pub const CLASS_TRAP: u32 = 4;
    /// Barrier divergence: at a barrier's release, threads of the block wait
    /// at different barriers, or one has exited (the interpreter's rule).
    pub const CLASS_BARRIER: u32 = 5;
    /// A read of shared memory that nothing wrote (the interpreter's
    /// initialisation check of shared memory).
    pub const CLASS_UNINITIALIZED: u32 = 6;
    /// A load or atomic of global memory that neither the host initialised
    /// nor any thread wrote (the global-memory initcheck,
    /// [`CfgChecks::initcheck`]); the address is the first such
    /// byte's, its high word 0 for a load and 1 for an atomic.
    pub const CLASS_UNINITIALIZED_GLOBAL: u32 = 7;
    /// A shared-memory race between threads of different warps in one
    /// barrier interval (checks.rs); the address is the byte's offset in
    /// shared memory, its high word the hazard (1 read-after-write, 2
    /// write-after-write, 3 write-after-read) and in bits 8–15 the other
    /// warp (255: one of several).
    pub const CLASS_RACE: u32 = 8;
}

impl CfgWgslOptions {
    /// Options for blocks of `block` threads, checked or not, on an adapter
    /// assumed to have nothing optional: no f64 or 64-bit integers, the f32
    /// fma emulated, f32 atomics by compare-and-swap, subnormals not kept;
    /// the structured form where it applies. Callers set what their adapter
    /// has.
    pub fn plain(block: [u32; 3], checked: bool) -> Self {
        CfgWgslOptions {
            block,
            dyn_shared: 0,
            checked,
            f64: false,
            int64: false,
            native_fma_f32: false,
            f32_atomic_add: false,
            structured: true,
            f32_subnormals: false,
            f32_subnormal_compares: false,
            fma_flush_model: false,
            smem_pad_words: 0,
            earliest_fault: true,
            speculative_loops: false,
        }
    }
}

/// The checks of a checked kernel that the caller chooses
/// ([`emit_cfg_wgsl_with`]; nothing of them is emitted unchecked).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CfgChecks {
    /// The global-memory initcheck: the kernel declares `ginit`, a bit per
    /// byte of global memory at [`initcheck_binding`], and a load or atomic
    /// of a byte whose bit is clear faults
    /// [`fault::CLASS_UNINITIALIZED_GLOBAL`].
    pub initcheck: bool,
    /// The shared-memory race check between warps, where
    /// [`race_check_applies`] (it takes [`race_workgroup_bytes`] of
    /// workgroup memory).
    pub race: bool,
}

/// What the WGSL is generated for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CfgWgslOptions {
    /// The block shape (the workgroup size).
    pub block: [u32; 3],
    /// Dynamic shared memory in bytes.
    pub dyn_shared: u32,
    /// Bounds, alignment and watchdog checks with fault records.
    pub checked: bool,
    /// The adapter has `SHADER_F64` (the correctly rounded f32 division,
    /// square root, reciprocal and fma compute in f64).
    pub f64: bool,
    /// The adapter has `SHADER_INT64` (with `f64`: f64 registers, whose bits
    /// move through `u64`).
    pub int64: bool,
    /// The adapter's WGSL `fma` on f32 is fused (one rounding, as a probe of
    /// the device found: vgpu-gpu's `fma_probe`, which runs
    /// [`fma_probe_wgsl`]): `fma.rn.f32` (and `mad.rn`, contracted
    /// `mul`+`add`) becomes that `fma` instead of the exact f64 emulation
    /// `fma_f32`. With `f64` it is `fma_native_f32`, whose zero or subnormal
    /// operands and results take the emulation (for devices that flush
    /// subnormals); without, the bare `fma`, needing no `SHADER_F64`. Off:
    /// the emulation.
    pub native_fma_f32: bool,
    /// Global `atom.add.f32` and `red.add.f32` use the device's f32
    /// `atomicAdd` (`SHADER_FLOAT32_ATOMIC`) on `gmemf`, an
    /// `array<atomic<f32>>` view of global memory at binding 4 (the caller
    /// binds global memory's buffer there again when
    /// [`binds_f32_atomic_view`] says so), where vgpu-gpu's probe found it to
    /// round and flush subnormals as PTX's does. Off: a compare-and-swap
    /// loop on the word.
    pub f32_atomic_add: bool,
    /// Write the kernel's control flow as structured WGSL (`loop`, `if`,
    /// direct `workgroupBarrier()`s) where its shape allows
    /// (structured.rs: reducible, single-exit loops, barriers met alike by
    /// a block's threads; checked with barriers, a fault does not end its
    /// thread); off, or where it does not apply: the state machine of
    /// `switch pc`.
    pub structured: bool,
    /// The device keeps f32 subnormals in its arithmetic and its `fma` (the
    /// kernel is compiled with SPIR-V's `DenormPreserve`: vgpu-gpu's
    /// `KernelSpec::keep_f32_subnormals` and `subnormal_probe`): the
    /// device's fma ([`CfgWgslOptions::native_fma_f32`]) is then the bare
    /// `fma`, exact without the guarded form's test.
    pub f32_subnormals: bool,
    /// The device keeps f32 subnormals in comparisons (vgpu-gpu's
    /// `subnormal_probe`, its `plain` verdict): the test of the device's fma
    /// for a result flushing may have changed (`fma_suspect`) compares
    /// floats instead of masking bits.
    pub f32_subnormal_compares: bool,
    /// The device's fma is replaced by a model of one that flushes f32
    /// subnormal operands and results (NVIDIA's `FFMA.FTZ`), and guarded as
    /// on such a device (with `native_fma_f32` and `f64`): for testing the
    /// guarded forms (the in-place guard, speculative regions) on a device
    /// that keeps subnormals. Off in production.
    pub fma_flush_model: bool,
    /// Workgroup words the launch may add after shared memory for its
    /// padded indexing (`padded_smem.rs`: word loads and stores at constant
    /// offsets from a base, unchecked or proven in bounds, index the array
    /// as `min(base, CAP) + k`, one clamp per base that the driver sees
    /// covers naga's own); 0: none, every access indexed as computed.
    pub smem_pad_words: u32,
    /// Where faults do not end the thread (a checked kernel with barriers
    /// in structured form), the block's end picks its earliest fault (the
    /// interpreter's first) among its threads' faults, at one barrier. Off,
    /// and where the end has no judgement of pending reads to make, every
    /// thread that faulted records its fault at once, without the barrier:
    /// the record's lowest faulting block is still exact, its details may
    /// not be the block's earliest, so a launch that faults must be run
    /// again with this on ([`CfgWgsl::first_pass`]).
    pub earliest_fault: bool,
    /// A versioned loop (versioned.rs) is written as its copy without
    /// checks alone: a workgroup whose test before it fails sets the fault
    /// record's [`fault::FALLBACK`] and its threads return, so that the
    /// launch runs again, from the same memory, with this off
    /// ([`CfgWgsl::speculative`]). The checked copy, written beside the
    /// other, takes registers the copy without checks then does not have.
    pub speculative_loops: bool,
}

/// Whether the WGSL of `k` under `o` declares binding 4, the `atomic<f32>`
/// view of global memory ([`CfgWgslOptions::f32_atomic_add`]).
pub fn binds_f32_atomic_view(k: &CfgKernel, o: &CfgWgslOptions) -> bool {
    o.f32_atomic_add && k.has_global_atomic_add_f32()
}

/// The binding of the global-memory initcheck's bits (`ginit`, an
/// `array<atomic<u32>>` with bit `o & 31` of word `o >> 5` for byte `o` of
/// global memory) in the WGSL of [`emit_cfg_wgsl_with`] with [`CfgChecks::initcheck`]: 5 when the
/// kernel binds the `atomic<f32>` view at 4 ([`binds_f32_atomic_view`]),
/// else 4.
pub fn initcheck_binding(k: &CfgKernel, o: &CfgWgslOptions) -> u32 {
    4 + binds_f32_atomic_view(k, o) as u32
}

/// Whether `k` can become WGSL under `o`, and why not (the first statement it
/// cannot emit, with its line).
pub fn check_cfg_wgsl(k: &CfgKernel, o: &CfgWgslOptions) -> Result<(), IrError> {
    let refuse = |reason: String| IrError::Unsupported {
        kernel: k.name.clone(),
        backend: "gpu (WGSL)".into(),
        reason,
    };
    k.validate().map_err(refuse)?;
    if let Some(line) = k.f64_line(o.native_fma_f32).filter(|_| !o.f64) {
        return Err(refuse(format!(
            "line {line}: a correctly rounded f32 division, square root, reciprocal or fma needs an adapter with SHADER_F64, which this one lacks"
        )));
    }
    if let Some(line) = k.f64_reg_line().filter(|_| !o.int64) {
        return Err(refuse(format!(
            "line {line}: f64 arithmetic needs an adapter with SHADER_F64 and SHADER_INT64, which this one lacks"
        )));
    }
    Ok(())
}
