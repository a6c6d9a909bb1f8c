//! The decoded ("lowered") form of a kernel: registers as indices, opcodes typed
//! (the common ALU/FMA/setp/cvt/mov forms as [`WarpOp`]s that run a whole warp
//! in one loop, the rest as closures over bits), symbols resolved to addresses,
//! calls inlined. Execution does no string work.
//!
//! Field view: every [`Inst`] is a unit-time segment of a piecewise-constant
//! field on the register file; its exact flow over that unit of time is the
//! assignment `dst = op(src)`, which the executor applies as is (DESIGN.md,
//! Exactness).

use crate::ast::Space;
pub(crate) use crate::operand::{Addr, Src};
pub(crate) use crate::special::Special;
use crate::types::Ty;
use crate::warp_ops::WarpOp;

/// A pure operation on up to three register values (as bits), giving one.
pub(crate) type AluFn = Box<dyn Fn(u64, u64, u64) -> u64 + Send + Sync>;
/// A memory operation's semantics in the PTX memory model. Every scope
/// (`.cta` and wider) includes the block, so two strong operations of one
/// block never race; release and acquire also order the accesses around them
/// (the checker's happens-before, race.rs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Order {
    /// A plain (weak) access.
    #[default]
    Weak,
    /// `.relaxed` (also `.volatile`, `.mmio`, and atomics without semantics).
    Relaxed,
    /// `.acquire`.
    Acquire,
    /// `.release`.
    Release,
    /// `.acq_rel`.
    AcqRel,
}

impl Order {
    /// The order a `ld`/`st`/`atom`/`red` instruction's modifiers give it;
    /// `atomic`: atomics are at least relaxed.
    pub(crate) fn of(mods: &[String], atomic: bool) -> Order {
        let has = |m: &str| mods.iter().any(|x| x == m);
        if has("acq_rel") {
            Order::AcqRel
        } else if has("acquire") {
            Order::Acquire
        } else if has("release") {
            Order::Release
        } else if atomic || has("relaxed") || has("volatile") || has("mmio") {
            Order::Relaxed
        } else {
            Order::Weak
        }
    }
    /// A strong operation (anything but a plain access).
    pub(crate) fn strong(self) -> bool {
        self != Order::Weak
    }
    /// Has acquire semantics.
    pub(crate) fn acquires(self) -> bool {
        matches!(self, Order::Acquire | Order::AcqRel)
    }
    /// Has release semantics.
    pub(crate) fn releases(self) -> bool {
        matches!(self, Order::Release | Order::AcqRel)
    }
}

/// A pure operation giving two values (`setp` with two destinations, carries).
pub(crate) type Alu2Fn = Box<dyn Fn(u64, u64, u64) -> (u64, u64) + Send + Sync>;
/// An atomic read-modify-write: `(old, b, c) -> new`.
pub(crate) type AtomFn = Box<dyn Fn(u64, u64, u64) -> u64 + Send + Sync>;

/// `shfl.sync` modes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ShflMode {
    Up,
    Down,
    Bfly,
    Idx,
}

/// `vote.sync` modes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum VoteMode {
    All,
    Any,
    Uni,
    Ballot,
}

/// `redux.sync` operations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ReduxOp {
    Add,
    Min,
    Max,
    And,
    Or,
    Xor,
}

/// What `bar.red` reduces over the threads of the block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BarRedOp {
    /// `.popc.u32`: how many threads' predicate is true.
    Popc,
    /// `.and.pred`: whether every thread's is.
    And,
    /// `.or.pred`: whether any thread's is.
    Or,
}

/// `bar.red`: at the barrier, `d` of every thread receives `op` over the
/// predicate `c` (negated when `neg`) of every thread of the block.
#[derive(Debug, Clone, Copy)]
pub(crate) struct BarRed {
    pub op: BarRedOp,
    pub d: u32,
    pub c: Src,
    pub neg: bool,
}

/// A decoded operation.
pub(crate) enum Op {
    /// `d = f(a, b, c)`.
    Alu {
        f: AluFn,
        d: u32,
        a: Src,
        b: Src,
        c: Src,
    },
    /// `d = kind(a, b, c)` in a typed form that the executor applies to a whole
    /// warp in one loop (the common instructions; see warp_ops.rs).
    Warp(WarpOp),
    /// `(d, d2) = f(a, b, c)`; a destination `u32::MAX` is discarded.
    Alu2 {
        f: Alu2Fn,
        d: u32,
        d2: u32,
        a: Src,
        b: Src,
        c: Src,
    },
    /// `d = special register`.
    Special { d: u32, s: Special },
    /// Load `d.len()` elements of `size` bytes; `sign` sign-extends. Bit `i`
    /// of `unused` is set when the program uses no byte of element `i`
    /// (`.pragma "used_bytes_mask"`): the checker does not look at it.
    /// `order`: its semantics in the PTX memory model (`.relaxed`,
    /// `.volatile`, `.mmio`: relaxed; `.acquire`).
    Ld {
        space: Space,
        size: u8,
        sign: bool,
        d: Vec<u32>,
        addr: Addr,
        unused: u32,
        order: Order,
    },
    /// Store `src.len()` elements of `size` bytes; `order` as for `Ld`
    /// (`.relaxed`, `.volatile`, `.mmio`: relaxed; `.release`).
    St {
        space: Space,
        size: u8,
        src: Vec<Src>,
        addr: Addr,
        order: Order,
    },
    /// Atomic read-modify-write; `d` receives the old value; `deferred`: the old
    /// value is never read, so a global atomic may be applied after the launch
    /// in a fixed order (flux).
    Atom {
        space: Space,
        size: u8,
        f: AtomFn,
        d: Option<u32>,
        addr: Addr,
        b: Src,
        c: Src,
        deferred: bool,
        /// Relaxed unless `.acquire`, `.release` or `.acq_rel`.
        order: Order,
    },
    /// Branch.
    Bra { target: u32 },
    /// `bar.sync` / `barrier.sync`: the whole block; `bar.red` also reduces a
    /// predicate over it.
    Bar { red: Option<BarRed> },
    /// `ret` from the entry, `exit`.
    Exit,
    /// `trap`.
    Trap,
    /// `shfl.sync`.
    Shfl {
        mode: ShflMode,
        d: u32,
        p: Option<u32>,
        a: Src,
        b: Src,
        c: Src,
    },
    /// `vote.sync`; `neg` negates the source predicate.
    Vote {
        mode: VoteMode,
        d: u32,
        a: Src,
        neg: bool,
    },
    /// `redux.sync`: each lane receives the reduction over the active lanes of
    /// its own member mask (groups of a warp may reduce apart in one
    /// instruction).
    Redux {
        op: ReduxOp,
        signed: bool,
        d: u32,
        a: Src,
        mask: Src,
    },
    /// `activemask.b32`.
    ActiveMask { d: u32 },
    /// `match.any.sync` (`all: false`): `d` is the mask of the active lanes whose
    /// `a` equals this lane's; `match.all.sync`: `d` is the active mask when every
    /// active lane's `a` is equal, else 0, and `p` says which.
    Match {
        all: bool,
        d: u32,
        p: Option<u32>,
        a: Src,
    },
    /// `bar.warp.sync membermask`: orders the memory accesses of the warp's
    /// lanes in the mask (the checker's view; execution is unaffected).
    WarpSync { mask: Src },
    /// No effect on the state (`membar`, `fence`, `prefetch`).
    Nop,
}

/// One decoded instruction.
pub(crate) struct Inst {
    pub op: Op,
    /// Guard predicate register and whether it is negated.
    pub guard: Option<(u32, bool)>,
    /// 1-based PTX line.
    pub line: u32,
    /// A strong load (`.volatile`, `.relaxed`, `.acquire`): the warp yields
    /// after it (precomputed at decode; the executor tests it per instruction).
    pub yields: bool,
}

impl Op {
    /// Registers this operation writes (for traces).
    pub(crate) fn dsts(&self) -> Vec<u32> {
        match self {
            Op::Alu { d, .. }
            | Op::Warp(WarpOp { d, .. })
            | Op::Special { d, .. }
            | Op::Vote { d, .. }
            | Op::Redux { d, .. }
            | Op::ActiveMask { d } => {
                vec![*d]
            }
            Op::Alu2 { d, d2, .. } => [*d, *d2].into_iter().filter(|&r| r != u32::MAX).collect(),
            Op::Ld { d, .. } => d.iter().copied().filter(|&r| r != u32::MAX).collect(),
            Op::Atom { d, .. } => d.iter().copied().collect(),
            Op::Bar { red: Some(r) } => vec![r.d],
            Op::Shfl { d, p, .. } | Op::Match { d, p, .. } => {
                std::iter::once(*d).chain(p.iter().copied()).collect()
            }
            _ => Vec::new(),
        }
    }

    /// Registers this operation reads.
    pub(crate) fn srcs(&self) -> Vec<u32> {
        let mut v = Vec::new();
        let mut s = |x: &Src| {
            if let Src::Reg(r) = x {
                v.push(*r)
            }
        };
        match self {
            Op::Alu { a, b, c, .. }
            | Op::Warp(WarpOp { a, b, c, .. })
            | Op::Alu2 { a, b, c, .. }
            | Op::Shfl { a, b, c, .. } => {
                s(a);
                s(b);
                s(c)
            }
            Op::Ld { addr, .. } => s(&addr.base),
            Op::St { src, addr, .. } => {
                src.iter().for_each(&mut s);
                s(&addr.base)
            }
            Op::Atom { addr, b, c, .. } => {
                s(&addr.base);
                s(b);
                s(c)
            }
            Op::Vote { a, .. } | Op::Match { a, .. } => s(a),
            Op::Redux { a, mask, .. } => {
                s(a);
                s(mask)
            }
            Op::Bar { red: Some(r) } => s(&r.c),
            Op::WarpSync { mask } => s(mask),
            _ => {}
        }
        v
    }
}

/// A register's name and declared type (for traces and messages).
#[derive(Debug, Clone)]
pub struct RegInfo {
    /// The name as written (`%f12`; an inlined callee's registers are prefixed).
    pub name: String,
    /// The declared type.
    pub ty: Ty,
}

/// A kernel parameter's layout in the parameter buffer.
#[derive(Debug, Clone)]
pub struct ParamInfo {
    /// The name.
    pub name: String,
    /// The type name (`u64`, `f32`, `b8` …).
    pub ty: String,
    /// Size in bytes.
    pub size: u32,
    /// Offset in the parameter buffer.
    pub offset: u32,
}

/// A module-level `.global`/`.const` variable placed in global memory.
#[derive(Debug, Clone)]
pub(crate) struct GlobalVar {
    pub name: String,
    pub addr: u64,
    pub bytes: Vec<u8>,
    pub writable: bool,
}

/// The global memory a kernel's plain (non-atomic) stores may write, from
/// where their addresses come from.
#[derive(Debug, Clone, Default)]
pub(crate) struct StoreTargets {
    /// Some store's address derives from something the analysis does not
    /// follow (a pointer loaded from memory): any writable allocation.
    pub any: bool,
    /// Whether some store's address derives from parameter `i`.
    pub params: Vec<bool>,
    /// The kernel has a global store at all.
    pub some: bool,
}

/// A decoded kernel, ready to launch.
pub struct Kernel {
    /// The entry's name.
    pub name: String,
    pub(crate) code: Vec<Inst>,
    /// Registers, by index.
    pub regs: Vec<RegInfo>,
    /// Parameters in order.
    pub params: Vec<ParamInfo>,
    /// Bytes of the parameter buffer.
    pub param_bytes: u32,
    /// Static shared memory in bytes (the dynamic part follows, aligned).
    pub shared_static: u32,
    /// Local memory per thread in bytes.
    pub local_bytes: u32,
    /// The module's global variables (placed in global memory at launch).
    pub(crate) globals: Vec<GlobalVar>,
    /// Some global atomic's old value is used: blocks run in order, one at a time.
    pub(crate) needs_ordered_blocks: bool,
    /// Registers a lane may read before writing them: cleared at each block's
    /// start (the others never show their initial value; analysis.rs).
    pub(crate) zero_regs: Vec<u32>,
    /// What the plain global stores may write (the global race checker logs
    /// reads of those allocations only).
    pub(crate) store_targets: StoreTargets,
}

impl Kernel {
    /// Number of decoded instructions.
    pub fn len(&self) -> usize {
        self.code.len()
    }

    /// No instructions.
    pub fn is_empty(&self) -> bool {
        self.code.is_empty()
    }
}
