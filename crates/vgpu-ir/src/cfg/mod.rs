//! The control-flow kernel form: the IR extended with what PTX needs.
//!
//! A [`CfgKernel`] is one thread's program over typed virtual registers,
//! arranged in basic blocks that end in a [`Term`] (jump, conditional branch,
//! barrier, return, trap). Its instructions ([`Inst`]) are the integer and
//! float arithmetic, comparisons, selections, conversions, loads and stores by
//! memory space and special registers that a CUDA thread executes; a block of
//! threads runs it together, meeting at [`Term::Barrier`]s.
//!
//! Field view (SPEC.md, "PTX as a field"): every [`Stmt`] is one unit-time
//! segment of the piecewise-constant field on the register file; its flow over
//! that unit is the assignment it names. Barriers are the collapses between
//! which the threads' flows are independent. The WGSL emitter
//! ([`crate::wgsl::cfg`]) runs exactly this flow, one invocation per thread and
//! one workgroup per block.
//!
//! Values are bits: a register holds a predicate, 32 or 64 bits ([`RegTy`]);
//! each operation says how it reads them (`f32`, `s32`, …), as PTX does.
//! Sub-word integer types live in 32-bit registers and operations mask them.

mod exp2;
mod ops;
pub mod shape;
mod warp;

pub use exp2::{ex2_f32, EX2_COEFFS, EX2_NEAR_TIES};
pub use ops::{
    AtomOp, BinOp, BitOp, CvtOp, F32Arith, F32Mods, F64Bin, F64Cvt, F64Un, FCmp, FloatRound, Half,
    HalfOp, ICmp, IntRound, PrmtMode, TernOp, UnOp,
};
pub use warp::{ReduxOp, ShflMode, VoteMode, WarpOp};

/// A register, by index into [`CfgKernel::regs`].
pub type Reg = u32;

/// A basic block, by index into [`CfgKernel::blocks`].
pub type BlockId = u32;

/// How a register stores its bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RegTy {
    /// A predicate (one bit).
    Pred,
    /// 32 bits (also 8- and 16-bit integers, zero- or sign-extended as written).
    B32,
    /// 64 bits.
    B64,
}

/// A source operand: a register or an immediate (its bits, zero-extended).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Val {
    /// A register.
    Reg(Reg),
    /// An immediate's bits.
    Imm(u64),
}

/// A state space of a memory access.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Space {
    /// Global memory: byte addresses of the launch's allocations.
    Global,
    /// The block's shared memory (static, then dynamic, then the region
    /// reserved for system software: [`reserved_smem`]): byte offsets.
    Shared,
    /// The thread's local memory: byte offsets.
    Local,
    /// The kernel's parameter buffer: byte offsets.
    Param,
    /// A generic address: the space is decided at run time from the address,
    /// as the interpreter decides it. `[GENERIC_SHARED_WINDOW, +4 GiB)` is
    /// shared memory and `[GENERIC_LOCAL_WINDOW, +4 GiB)` local memory (offset
    /// = address - window), anything else global memory.
    Generic,
}

/// Generic addresses `[GENERIC_SHARED_WINDOW, +4 GiB)` are shared memory
/// (`cvta.shared` adds it, `cvta.to.shared` subtracts it): the high word
/// `0x1000`.
pub const GENERIC_SHARED_WINDOW: u64 = 1 << 44;
/// Generic addresses `[GENERIC_LOCAL_WINDOW, +4 GiB)` are local memory: the
/// high word `0x2000`.
pub const GENERIC_LOCAL_WINDOW: u64 = 2 << 44;

/// A special register's value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Special {
    /// `%tid.{x,y,z}`: the thread's index in its block.
    Tid(u8),
    /// `%ntid.{x,y,z}`: the block's shape.
    Ntid(u8),
    /// `%ctaid.{x,y,z}`: the block's index in the grid.
    Ctaid(u8),
    /// `%nctaid.{x,y,z}`: the grid's shape.
    Nctaid(u8),
    /// `%laneid`: the thread's linear index in its block modulo 32.
    LaneId,
    /// `%warpid`: the thread's linear index in its block divided by 32.
    WarpId,
    /// `%nwarpid`: the warps of the block (its threads / 32, rounded up).
    NWarpId,
    /// `%lanemask_{eq,lt,le,gt,ge}` (0..=4): lanes of the warp relative to
    /// this one.
    LaneMask(u8),
    /// `%dynamic_smem_size`: the launch's dynamic shared bytes.
    DynSmem,
    /// `%total_smem_size`: static plus dynamic shared bytes, rounded up to
    /// the 128-byte allocation unit.
    TotalSmem,
    /// `%reserved_smem_offset_begin` (and `_0`, `_1`): where the shared
    /// memory reserved for system software begins ([`reserved_smem`]).
    ReservedSmemBegin,
    /// `%reserved_smem_offset_end`: the end of the reserved region's usable
    /// bytes.
    ReservedSmemEnd,
    /// `%reserved_smem_offset_cap` and `%aggr_smem_size`: the end of the
    /// reserved region's capacity.
    ReservedSmemCap,
    /// A constant (`WARP_SZ`, `%nsmid`, the cluster registers …).
    Const(u64),
}

/// Shared memory's allocation unit on sm_80 and later, in bytes.
pub const SMEM_UNIT: u64 = 128;
/// Bytes of the region reserved for system software, from its beginning,
/// that a block has (cooperative groups' multi-warp scratch fits in them).
pub const RESERVED_SMEM_USABLE: u64 = 288;
/// The reserved region's capacity per block on sm_80 and later.
pub const RESERVED_SMEM_CAP: u64 = 1024;

/// The shared memory reserved for system software in a block whose kernel
/// uses `user` bytes of shared memory (static plus dynamic): `(begin, end,
/// cap)` byte offsets. The block's shared memory is its `user` bytes, padding
/// up to `begin` (out of bounds), and the `begin..end` usable reserved bytes
/// (zeroed at the block's start); the PTX interpreter lays it out the same.
pub fn reserved_smem(user: u64) -> (u64, u64, u64) {
    let begin = user.div_ceil(SMEM_UNIT) * SMEM_UNIT;
    (
        begin,
        begin + RESERVED_SMEM_USABLE,
        begin + RESERVED_SMEM_CAP,
    )
}

/// One instruction.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Inst {
    /// `d = op(a)`.
    Un {
        /// The operation.
        op: UnOp,
        /// Destination.
        d: Reg,
        /// Source.
        a: Val,
    },
    /// `d = op(a, b)`.
    Bin {
        /// The operation.
        op: BinOp,
        /// Destination.
        d: Reg,
        /// First source.
        a: Val,
        /// Second source.
        b: Val,
    },
    /// `d = op(a, b, c)`.
    Tern {
        /// The operation.
        op: TernOp,
        /// Destination.
        d: Reg,
        /// First source.
        a: Val,
        /// Second source.
        b: Val,
        /// Third source.
        c: Val,
    },
    /// `d = cvt(a)`.
    Cvt {
        /// The conversion.
        op: CvtOp,
        /// Destination.
        d: Reg,
        /// Source.
        a: Val,
    },
    /// `d = special register`.
    Special {
        /// Destination.
        d: Reg,
        /// Which.
        s: Special,
    },
    /// Loads `d.len()` consecutive elements of `size` bytes (1, 2, 4 or 8) from
    /// `base + off` in `space`; `sign` sign-extends sub-word elements. A
    /// destination [`None`] is loaded and dropped (a sink).
    Load {
        /// The state space.
        space: Space,
        /// Bytes per element.
        size: u8,
        /// Sign-extend.
        sign: bool,
        /// Destinations.
        d: Vec<Option<Reg>>,
        /// Base address.
        base: Val,
        /// Byte offset.
        off: i64,
        /// Elements the program does not use (bit `i`: element `i`; PTX's
        /// `.pragma "used_bytes_mask"`): loaded, bounds and alignment checked,
        /// but no read for the initialisation check, as in the interpreter.
        unused: u32,
    },
    /// Stores `src.len()` consecutive elements of `size` bytes at `base + off`.
    Store {
        /// The state space.
        space: Space,
        /// Bytes per element.
        size: u8,
        /// Values.
        src: Vec<Val>,
        /// Base address.
        base: Val,
        /// Byte offset.
        off: i64,
    },
    /// An atomic read-modify-write of the 32-bit word at `base + off` in
    /// global or shared memory (or a generic address, which faults where it
    /// is local memory, as the interpreter's atomics do); `d` receives the
    /// old value (`red`: none).
    Atom {
        /// The state space (global, shared or generic).
        space: Space,
        /// The operation.
        op: AtomOp,
        /// Receives the old value.
        d: Option<Reg>,
        /// Base address.
        base: Val,
        /// Byte offset.
        off: i64,
        /// The operand.
        b: Val,
        /// The second operand (`cas`: the new value).
        c: Val,
    },
}

impl Inst {
    /// The registers the instruction writes.
    pub fn dests(&self) -> Vec<Reg> {
        match self {
            Inst::Un { d, .. }
            | Inst::Bin { d, .. }
            | Inst::Tern { d, .. }
            | Inst::Cvt { d, .. }
            | Inst::Special { d, .. } => vec![*d],
            Inst::Load { d, .. } => d.iter().flatten().copied().collect(),
            Inst::Atom { d, .. } => d.iter().copied().collect(),
            Inst::Store { .. } => vec![],
        }
    }
}

/// A statement: an instruction, its guard and its source line.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Stmt {
    /// What is done.
    pub inst: Inst,
    /// Runs only when this predicate register is true (false when negated).
    pub guard: Option<(Reg, bool)>,
    /// The source line (1-based; faults name it).
    pub line: u32,
}

/// How a basic block ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Term {
    /// Go on at the block.
    Jump(BlockId),
    /// Go to `then` when the predicate (negated when `neg`) is true, else `els`.
    Branch {
        /// The predicate register.
        p: Reg,
        /// Negated.
        neg: bool,
        /// Target when true.
        then: BlockId,
        /// Target when false.
        els: BlockId,
    },
    /// Wait for every thread of the block that has not returned (`bar.sync`),
    /// then go on at `next`.
    Barrier {
        /// The block after the barrier.
        next: BlockId,
        /// The barrier's source line.
        line: u32,
    },
    /// The thread ends.
    Return,
    /// The thread faults (`trap`).
    Trap {
        /// The source line.
        line: u32,
    },
    /// The thread lets the other threads of its block run before it goes on
    /// at `next` (after a strong load, where it may be spinning on a flag
    /// another warp sets; the interpreter's warp yields there too).
    Yield {
        /// The block after it.
        next: BlockId,
    },
    /// A warp operation ([`WarpOp`]): when the guard holds, the thread waits
    /// for its warp's group (module `warp`), takes part, and goes on at
    /// `next`; otherwise it goes on at `next` at once. The block holding it
    /// has no statements, so its id orders it with the other program points.
    Warp {
        /// The operation.
        op: WarpOp,
        /// Runs only when this predicate register is true (false when negated).
        guard: Option<(Reg, bool)>,
        /// The block after it.
        next: BlockId,
        /// The source line.
        line: u32,
    },
}

/// A basic block.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Block {
    /// The statements, in order.
    pub stmts: Vec<Stmt>,
    /// How it ends.
    pub term: Term,
}

/// Initial bytes of global memory that the module itself defines (`.global`,
/// `.const` variables), at a fixed byte address.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct GlobalInit {
    /// The variable's name.
    pub name: String,
    /// Its byte address.
    pub addr: u64,
    /// Its initial bytes.
    pub bytes: Vec<u8>,
    /// Whether the kernel may write it (`.global`; `.const` is read-only).
    pub writable: bool,
}

/// A kernel in control-flow form. Block 0 is the entry.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CfgKernel {
    /// The kernel's name.
    pub name: String,
    /// Every register's storage.
    pub regs: Vec<RegTy>,
    /// The basic blocks; block 0 is the entry.
    pub blocks: Vec<Block>,
    /// Bytes of the parameter buffer.
    pub param_bytes: u32,
    /// Static shared memory in bytes (the launch's dynamic part follows it).
    pub shared_static: u32,
    /// Local memory per thread in bytes.
    pub local_bytes: u32,
    /// The module's global variables.
    pub globals: Vec<GlobalInit>,
}

impl CfgKernel {
    /// Whether any block ends in a barrier.
    pub fn has_barriers(&self) -> bool {
        self.blocks
            .iter()
            .any(|b| matches!(b.term, Term::Barrier { .. }))
    }

    /// Whether any block ends in a yield.
    pub fn has_yields(&self) -> bool {
        self.blocks
            .iter()
            .any(|b| matches!(b.term, Term::Yield { .. }))
    }

    /// Whether any statement is an f32 fma (`fma.rn.f32`, `mad.rn.f32`, a
    /// contracted multiply-add).
    pub fn has_fma_f32(&self) -> bool {
        self.blocks.iter().flat_map(|b| &b.stmts).any(|s| {
            matches!(
                s.inst,
                Inst::Tern {
                    op: TernOp::FmaF32 { .. },
                    ..
                }
            )
        })
    }

    /// Whether any statement is an f32 atomic add on global memory
    /// (`atom.global.add.f32`, `red.global.add.f32`).
    pub fn has_global_atomic_add_f32(&self) -> bool {
        self.blocks.iter().flat_map(|b| &b.stmts).any(|s| {
            matches!(
                s.inst,
                Inst::Atom {
                    space: Space::Global,
                    op: AtomOp::AddF32,
                    ..
                }
            )
        })
    }

    /// Whether any block ends in a warp operation.
    pub fn has_warp_ops(&self) -> bool {
        self.blocks
            .iter()
            .any(|b| matches!(b.term, Term::Warp { .. }))
    }

    /// Whether any operation computes in `f64` (the adapter needs `SHADER_F64`
    /// for the WGSL form), with the first such statement's line. With
    /// `native_fma_f32` the f32 fma is the adapter's own fused `fma` and needs
    /// no f64.
    pub fn f64_line(&self, native_fma_f32: bool) -> Option<u32> {
        self.blocks.iter().flat_map(|b| &b.stmts).find_map(|s| {
            let uses = match &s.inst {
                Inst::Un { op, .. } => op.uses_f64(),
                Inst::Bin { op, .. } => op.uses_f64(),
                Inst::Tern {
                    op: TernOp::FmaF32 { .. },
                    ..
                } => !native_fma_f32,
                Inst::Tern { op, .. } => op.uses_f64(),
                Inst::Cvt { op, .. } => matches!(op, CvtOp::F64(_)),
                _ => false,
            };
            uses.then_some(s.line)
        })
    }

    /// Whether any operation works on an f64 held in a 64-bit register (the
    /// WGSL form moves its bits through `u64`, so the adapter also needs
    /// `SHADER_INT64`), with the first such statement's line.
    pub fn f64_reg_line(&self) -> Option<u32> {
        self.blocks.iter().flat_map(|b| &b.stmts).find_map(|s| {
            let uses = matches!(
                s.inst,
                Inst::Un {
                    op: UnOp::F64(_),
                    ..
                } | Inst::Bin {
                    op: BinOp::F64(_),
                    ..
                } | Inst::Cvt {
                    op: CvtOp::F64(_),
                    ..
                } | Inst::Tern {
                    op: TernOp::FmaF64 { .. },
                    ..
                }
            );
            uses.then_some(s.line)
        })
    }

    /// Checks the kernel's structure: every register, block and access size in
    /// range, so that the emitters never meet an index they cannot name.
    pub fn validate(&self) -> Result<(), String> {
        let nregs = self.regs.len() as u64;
        let nblocks = self.blocks.len() as u32;
        if nblocks == 0 {
            return Err("the kernel has no blocks".into());
        }
        let reg = |r: Reg| -> Result<(), String> {
            if (r as u64) < nregs {
                Ok(())
            } else {
                Err(format!("register {r} out of range ({nregs} registers)"))
            }
        };
        let val = |v: &Val| match v {
            Val::Reg(r) => reg(*r),
            Val::Imm(_) => Ok(()),
        };
        let blk = |b: BlockId| {
            if b < nblocks {
                Ok(())
            } else {
                Err(format!("block {b} out of range ({nblocks} blocks)"))
            }
        };
        for b in &self.blocks {
            for s in &b.stmts {
                if let Some((g, _)) = s.guard {
                    reg(g)?;
                }
                match &s.inst {
                    Inst::Un { d, a, .. } | Inst::Cvt { d, a, .. } => {
                        reg(*d)?;
                        val(a)?;
                    }
                    Inst::Bin { d, a, b, .. } => {
                        reg(*d)?;
                        val(a)?;
                        val(b)?;
                    }
                    Inst::Tern { d, a, b, c, .. } => {
                        reg(*d)?;
                        val(a)?;
                        val(b)?;
                        val(c)?;
                    }
                    Inst::Special { d, .. } => reg(*d)?,
                    Inst::Atom {
                        space,
                        d,
                        base,
                        b,
                        c,
                        ..
                    } => {
                        if !matches!(space, Space::Global | Space::Shared | Space::Generic) {
                            return Err(format!("line {}: an atomic in {space:?} memory", s.line));
                        }
                        if let Some(r) = d {
                            reg(*r)?;
                        }
                        val(base)?;
                        val(b)?;
                        val(c)?;
                    }
                    Inst::Load { size, d, base, .. } => {
                        if ![1, 2, 4, 8].contains(size) {
                            return Err(format!("line {}: load of {size} bytes", s.line));
                        }
                        for r in d.iter().flatten() {
                            reg(*r)?;
                        }
                        val(base)?;
                    }
                    Inst::Store {
                        size, src, base, ..
                    } => {
                        if ![1, 2, 4, 8].contains(size) {
                            return Err(format!("line {}: store of {size} bytes", s.line));
                        }
                        for v in src {
                            val(v)?;
                        }
                        val(base)?;
                    }
                }
            }
            match b.term {
                Term::Jump(t) => blk(t)?,
                Term::Branch { p, then, els, .. } => {
                    reg(p)?;
                    blk(then)?;
                    blk(els)?;
                }
                Term::Barrier { next, .. } | Term::Yield { next } => blk(next)?,
                Term::Warp {
                    op, guard, next, ..
                } => {
                    if !b.stmts.is_empty() {
                        return Err("a warp operation's block has statements".into());
                    }
                    if let Some((g, _)) = guard {
                        reg(g)?;
                    }
                    for d in op.dsts() {
                        reg(d)?;
                    }
                    for v in op.srcs() {
                        val(&v)?;
                    }
                    blk(next)?;
                }
                Term::Return | Term::Trap { .. } => {}
            }
        }
        Ok(())
    }
}
