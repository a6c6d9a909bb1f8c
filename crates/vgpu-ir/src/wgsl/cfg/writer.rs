//! What the control-flow emitter's parts share: the kernel writer (the
//! kernel, its options, the WGSL written so far, the kernel-level facts the
//! statements depend on), the width of a WGSL expression, the encoding of a
//! thread's program counter, and how operands, jumps and register stores are
//! written. emit.rs writes the kernel with it; bits.rs, float64.rs and
//! warp.rs add the expressions and rounds of their instructions to it.

use super::coverage::Coverage;
use super::motion::Motion;
use super::ranges::Ranges;
use super::CfgWgslOptions;
use crate::cfg::{Block, BlockId, CfgKernel, Reg, RegTy, Stmt, Term, Val};
use std::collections::HashMap;

/// The `pc` of a thread that has returned (or faulted).
pub(super) const RET: u32 = 0xffff_ffff;
/// The statement that ends a thread in the state machine (a check's fault,
/// the watchdog): `pc` set to [`RET`], out of the switch's loop. The
/// structured form (structured.rs) writes `return;` in its place.
pub(super) const EXIT: &str = "pc = 4294967295u; break;";
const _: () = assert!(RET == 4_294_967_295);
/// Set in `pc` while the thread has yielded for the rest of the round
/// ([`crate::cfg::Term::Yield`]); `next` in the low bits.
pub(super) const YIELD: u32 = 0x8000_0000;
/// Set in `pc` while the thread waits at a barrier.
pub(super) const WAIT: u32 = 0x4000_0000;
/// Set in `pc` while the thread waits at a warp point (warp.rs).
pub(super) const WARP: u32 = 0x2000_0000;
/// Set in `pc` (with [`WARP`]) while the thread waits at a backward jump from
/// the block in the low bits to the block in `bt`.
pub(super) const BACK: u32 = 0x1000_0000;

/// The width of a WGSL expression.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum ExprWidth {
    /// `u32`.
    B32,
    /// `vec2<u32>` (low, high).
    B64,
}

/// The state of writing one kernel's WGSL.
pub(super) struct KernelWriter<'a> {
    /// The kernel.
    pub(super) k: &'a CfgKernel,
    /// What it is generated for.
    pub(super) o: &'a CfgWgslOptions,
    /// The WGSL written so far.
    pub(super) out: String,
    /// The next number of a temporary (`t{n}`).
    pub(super) tmp: u32,
    /// The kernel has warp operations (backward jumps stop at their target).
    pub(super) warps: bool,
    /// Shared-memory accesses keep the initialisation check's bits
    /// (checks.rs: checked, and the kernel reads shared memory).
    pub(super) shadow: bool,
    /// Global accesses keep the global-memory initcheck's bits (checks.rs:
    /// checked, and the launch asked for the initcheck).
    pub(super) ginit: bool,
    /// Shared accesses keep the race check's marks (checks.rs:
    /// [`super::CfgChecks::race`] and [`super::checks::race_check_applies`]).
    pub(super) race: bool,
    /// Faults do not end the thread: the structured form of a checked kernel
    /// with barriers (structured.rs), whose threads must all go on meeting
    /// its barriers. A fault is kept with the count of barriers passed and
    /// the block's earliest recorded at its end (`checks::raise_decl`); the
    /// faulting access is skipped, and the thread's stores and atomics after
    /// it too.
    pub(super) soft: bool,
    /// Writing a speculative region's fast copy (speculate.rs): an f32 fma
    /// is the device's own (`dev_fma`), its operands and result tested by
    /// the region.
    pub(super) fast: bool,
    /// The kernel's f32 fmas are the guarded device `fma`
    /// ([`super::fma_guarded`], decided once per kernel).
    pub(super) guarded_fma: bool,
    /// The proven ranges of shared, local and parameter addresses (a
    /// checked kernel's: ranges.rs); an access proven in bounds and aligned
    /// skips `saddr` (access.rs).
    pub(super) ranges: Option<Ranges>,
    /// Writing a load whose initialisation-check notes wait
    /// (shadow_reads.rs).
    pub(super) defer_reads: bool,
    /// The notes waiting, each a line of WGSL.
    pub(super) waiting_reads: Vec<String>,
    /// What the code being written knows of `sh_full` (whether all of
    /// shared memory is written; it changes only at a barrier): `Some(true)`
    /// in the copy of a block or loop that runs once it is, whose
    /// initialisation-check notes and marks would do nothing and are left
    /// out, `Some(false)` in the other copy (structured.rs, `unswitched`).
    pub(super) sh_known: Option<bool>,
    /// For each block: whether it runs only after a barrier, by which every
    /// byte of shared memory is proven written (written.rs); its
    /// statements are written without the initialisation check's notes
    /// and marks. Empty where not proven.
    pub(super) written_after: Vec<bool>,
    /// How many accesses have had an initialisation-check note or mark
    /// written (structured.rs asks whether a loop's body has any).
    pub(super) shadow_notes: u32,
    /// How many global or generic access sites have a region cache of
    /// their own (access.rs, [`super::access::SITE_CACHES`] at most).
    pub(super) site_caches: u32,
    /// Each handed-out region cache's first guess: the parameter slot its
    /// site's address derives from, whether the site writes and the most
    /// bytes its accesses take (seeds.rs, access.rs).
    pub(super) site_seeds: Vec<Option<(u32, bool, u32)>>,
    /// Each register's parameter slot, where a checked kernel's addresses
    /// derive from one (seeds.rs; empty unchecked).
    pub(super) param_slots: Vec<Option<u32>>,
    /// The padded indexing of shared memory, where the kernel takes it
    /// (padded_smem.rs).
    pub(super) pad: Option<SmemPad>,
    /// The tests carried from one speculative region to the next
    /// (coverage.rs; empty where the fma is not guarded).
    pub(super) coverage: Coverage,
    /// Writing the copy of a versioned loop that runs where nothing in it
    /// can fault (versioned.rs): its header and its global access sites,
    /// whose offsets are taken unchecked.
    pub(super) clean: Option<CleanCopy>,
    /// How many sites that may fault have been written: accesses not
    /// proven (or with checks after them), traps, barrier releases that
    /// check (a versioned loop's clean copy must add none).
    pub(super) fault_sites: u32,
    /// While writing a loop that may be versioned, the region cache and
    /// alignment each global access element was given (by its statement
    /// and offset), for the tests before the loop.
    pub(super) site_log: Option<SiteLog>,
    /// A versioned loop was written without its checked copy
    /// ([`super::CfgWgslOptions::speculative_loops`]).
    pub(super) speculated: bool,
}

/// Each global access element's statement and offset, region cache and
/// alignment, in the order written, once each ([`KernelWriter::site_log`]).
pub(super) type SiteLog = Vec<((*const Stmt, i64), String, u32)>;

/// The copy of a versioned loop without checks (versioned.rs).
pub(super) struct CleanCopy {
    /// The loop's header.
    pub(super) header: usize,
    /// Its global access statements and how their addresses move.
    pub(super) sites: HashMap<*const Stmt, Motion>,
}

/// The padded indexing of a kernel's shared memory (padded_smem.rs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct SmemPad {
    /// The largest base word left alone by the clamp (the mask where
    /// `mask`).
    pub(super) cap: u64,
    /// The least constant word offset (`kmin ≤ 0`).
    pub(super) kmin: i64,
    /// The padded array's length in words.
    pub(super) words: u64,
    /// Whether the base is clamped by `& cap` (`cap + 1` a power of two),
    /// else by `min(·, cap)`.
    pub(super) mask: bool,
}

impl KernelWriter<'_> {
    /// How register `r` stores its bits.
    pub(super) fn reg_ty(&self, r: Reg) -> RegTy {
        self.k.regs[r as usize]
    }

    /// The statement a jump from block `from` to block `to` is: in a kernel
    /// with warp operations a backward jump over a range of blocks holding one
    /// stops at its source (`WARP | BACK | from`, target in `bt`: warp.rs), as
    /// the interpreter's lane waits at its branch while lower lanes of its warp
    /// run. A loop without warp operations runs freely: a thread in it can
    /// reach a warp operation only by leaving it forward, as the interpreter's
    /// min-PC order would run it there first.
    pub(super) fn goto(&self, from: usize, to: BlockId) -> String {
        let t = to as usize;
        let warp_block = |b: &Block| matches!(b.term, Term::Warp { .. });
        let stop = self.warps && t <= from && self.k.blocks[t..=from].iter().any(warp_block);
        if stop {
            format!("bt = {to}u; pc = {}u;", from as u32 | WARP | BACK)
        } else {
            format!("pc = {to}u;")
        }
    }

    /// `v` as a u32 expression.
    pub(super) fn v32(&self, v: Val) -> String {
        match v {
            Val::Reg(r) => match self.reg_ty(r) {
                RegTy::B64 => format!("r{r}.x"),
                _ => format!("r{r}"),
            },
            Val::Imm(x) => format!("{}u", x as u32),
        }
    }

    /// `v` as a vec2<u32> expression (a 32-bit register zero-extended).
    pub(super) fn v64(&self, v: Val) -> String {
        match v {
            Val::Reg(r) => match self.reg_ty(r) {
                RegTy::B64 => format!("r{r}"),
                _ => format!("w64(r{r})"),
            },
            Val::Imm(x) => format!("vec2<u32>({}u, {}u)", x as u32, (x >> 32) as u32),
        }
    }

    /// `v` as an expression of `bits` bits: [`Self::v64`] above 32, else
    /// [`Self::v32`].
    pub(super) fn val(&self, v: Val, bits: u8) -> String {
        if bits > 32 {
            self.v64(v)
        } else {
            self.v32(v)
        }
    }

    /// The statement storing expression `e` of width `w` in register `d`
    /// (widened or narrowed to the register).
    pub(super) fn assign(&self, d: Reg, e: String, w: ExprWidth) -> String {
        match (self.reg_ty(d), w) {
            (RegTy::B64, ExprWidth::B64) | (RegTy::B32 | RegTy::Pred, ExprWidth::B32) => {
                format!("r{d} = {e};")
            }
            (RegTy::B64, ExprWidth::B32) => format!("r{d} = w64({e});"),
            (RegTy::B32 | RegTy::Pred, ExprWidth::B64) => format!("r{d} = ({e}).x;"),
        }
    }
}

/// A thread's part in a round's count (in uniform control flow, before the
/// round's `workgroupBarrier()`): where `held` (a WGSL bool: at a warp
/// point or yielded) it marks the round as holding threads back, else,
/// where it has not returned, as having threads waiting at a barrier. Marks
/// are atomic stores of 1, not counting read-modify-writes: every thread of
/// the workgroup would otherwise serialise on one word (all the rounds need
/// is whether any thread is in either state).
pub(super) fn round_mark(held: &str) -> String {
    format!(
        "  if ({held}) {{ atomicStore(&wg_held, 1u); }} else if (pc != {RET}u) {{ atomicStore(&wg_waiting, 1u); }}\n"
    )
}

/// Thread 0's reading of the round's marks into `wg_round` (1: a thread
/// waits at a barrier, `0x10000` added: one is held back; 0: all returned),
/// clearing them for the next round.
pub(super) const ROUND_TAKE: &str = "wg_round = select(0u, 1u, atomicLoad(&wg_waiting) != 0u) | select(0u, 0x10000u, atomicLoad(&wg_held) != 0u); atomicStore(&wg_waiting, 0u); atomicStore(&wg_held, 0u);";
