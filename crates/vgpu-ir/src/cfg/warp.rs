//! Warp operations of the control-flow form: the points where the 32
//! consecutive threads of a warp (linear thread index / 32) meet and read each
//! other's registers. Each one ends a basic block ([`super::Term::Warp`]).
//!
//! Which threads take part is decided as the checked interpreter decides it
//! (vgpu-ptx exec: "min-PC" scheduling): of the warp's threads that are neither
//! waiting at a `bar.sync` nor returned, those at the lowest program point run
//! together, and a warp operation reads the threads of that group whose guard
//! holds (the *active mask*). A `membermask` operand does not change who takes
//! part (the interpreter's rule: the mask is a promise of the program), except
//! for `redux`, which reduces over the active lanes of each lane's own mask.

use super::{Reg, Val};

/// `shfl.sync` modes: which lane each lane reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ShflMode {
    /// `lane − b`, kept when at or above the segment's first lane.
    Up,
    /// `lane + b`, kept when at or below the segment's last lane (`c`'s clamp).
    Down,
    /// `lane ^ b`, kept when at or below the last lane.
    Bfly,
    /// The segment's lane `b`, kept when at or below the last lane.
    Idx,
}

/// `vote.sync` modes over the active lanes' predicates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum VoteMode {
    /// True on every active lane.
    All,
    /// True on some active lane.
    Any,
    /// The same on every active lane.
    Uni,
    /// The mask of the active lanes where it is true.
    Ballot,
}

/// `redux.sync` operations on 32-bit values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReduxOp {
    /// Wrapping sum.
    Add,
    /// Minimum (signed or unsigned).
    Min,
    /// Maximum (signed or unsigned).
    Max,
    /// Bitwise and (all ones over no lane).
    And,
    /// Bitwise or.
    Or,
    /// Bitwise xor.
    Xor,
}

/// A warp operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WarpOp {
    /// `shfl.sync.mode.b32 d|p, a, b, c, membermask`: `d` is lane `j`'s `a`
    /// (the lane `mode` names from `b` within the segment and clamp that `c`
    /// encodes as `((32 − width) << 8) | clamp`), or this lane's own `a` when
    /// `j` is outside; `p` says which. A source lane that does not take part
    /// gives its register as it is.
    Shfl {
        /// The mode.
        mode: ShflMode,
        /// Destination.
        d: Reg,
        /// The in-range predicate, if written.
        p: Option<Reg>,
        /// The value shared.
        a: Val,
        /// The lane or offset.
        b: Val,
        /// The clamp and segment mask.
        c: Val,
    },
    /// `vote.sync.mode d, {!}a, membermask`.
    Vote {
        /// The mode.
        mode: VoteMode,
        /// Destination (a predicate, or 32 bits for `ballot`).
        d: Reg,
        /// The predicate voted.
        a: Val,
        /// `a` negated.
        neg: bool,
    },
    /// `redux.sync.op d, a, membermask`: the reduction of `a` over the active
    /// lanes of this lane's `mask`.
    Redux {
        /// The operation.
        op: ReduxOp,
        /// Signed comparison (`min`/`max` on `.s32`).
        signed: bool,
        /// Destination.
        d: Reg,
        /// The value reduced.
        a: Val,
        /// The member mask.
        mask: Val,
    },
    /// `activemask.b32 d`: the active mask.
    ActiveMask {
        /// Destination.
        d: Reg,
    },
    /// `match.any.sync` (`all` false): `d` is the mask of the active lanes
    /// whose `a` equals this lane's; `match.all.sync`: the active mask when all
    /// are equal, else 0, and `p` says whether they were.
    Match {
        /// `match.all`.
        all: bool,
        /// Destination.
        d: Reg,
        /// Whether all were equal, if written.
        p: Option<Reg>,
        /// The value compared (32 or 64 bits).
        a: Val,
    },
    /// `bar.warp.sync membermask`: a meeting of the warp's threads (their
    /// memory accesses before it are seen by those after it), no value.
    Sync,
}

impl WarpOp {
    /// The registers it writes.
    pub fn dsts(&self) -> impl Iterator<Item = Reg> {
        let (d, p) = match *self {
            WarpOp::Shfl { d, p, .. } | WarpOp::Match { d, p, .. } => (Some(d), p),
            WarpOp::Vote { d, .. } | WarpOp::Redux { d, .. } | WarpOp::ActiveMask { d } => {
                (Some(d), None)
            }
            WarpOp::Sync => (None, None),
        };
        d.into_iter().chain(p)
    }

    /// The operands it reads.
    pub fn srcs(&self) -> Vec<Val> {
        match *self {
            WarpOp::Shfl { a, b, c, .. } => vec![a, b, c],
            WarpOp::Vote { a, .. } | WarpOp::Match { a, .. } => vec![a],
            WarpOp::Redux { a, mask, .. } => vec![a, mask],
            WarpOp::ActiveMask { .. } | WarpOp::Sync => vec![],
        }
    }

    /// The operand every lane of the warp publishes to the others (the value
    /// shuffled, voted, reduced or matched).
    pub fn shared_operand(&self) -> Option<Val> {
        match *self {
            WarpOp::Shfl { a, .. }
            | WarpOp::Vote { a, .. }
            | WarpOp::Redux { a, .. }
            | WarpOp::Match { a, .. } => Some(a),
            WarpOp::ActiveMask { .. } | WarpOp::Sync => None,
        }
    }
}
