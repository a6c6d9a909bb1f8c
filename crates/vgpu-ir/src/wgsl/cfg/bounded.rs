//! Loops whose own code ends them within a few iterations, which the
//! watchdog need not test (watchdog.rs): the tree reduction's halving loop,
//! `for (s = n / 2; s > 0; s >>= 1)`, whose one latch goes on only while a
//! register is nonzero and shifts that register right (unsigned, by an
//! immediate of at least 1) before testing it, and nothing else in the loop
//! (no statement, no warp operation) writes it. Each iteration that goes on
//! halves it at least once, so a `b`-bit register lets at most `b`
//! iterations go on: the header is reached at most `b + 1` times whatever
//! the loop's other code does, and a thread that faulted and skips its loads
//! (the structured form's soft checks) halves it alike, since no load
//! writes it.
//!
//! An unchecked kernel in structured form whose every loop is a halving
//! loop ([`every_loop_ends`]) is compiled without the GPU compiler's own
//! loop bounds (naga's `force_loop_bounding`, a 64-bit count in every
//! loop): 12% of unchecked `reduce_sum_atomic` on the H100 (session 26).
//! Counted loops (`i += 1` to `i < n`, nvcc's unrolled `n − (n & 1)` down
//! by 2) end too, but without naga's bounds `lorenz_rk4` and
//! `matmul_tiled` ran slower there (30.3 → 43.3 and 40.1 → 47.9 ms
//! unchecked): their proof (3942d23) is kept out until it is measured on
//! the current tree.

use crate::cfg::shape::Shape;
use crate::cfg::{BinOp, CfgKernel, ICmp, Inst, Term, Val};

/// Whether block `h` is the header of a halving loop of `shape` (module
/// documentation), reached at most 33 times (65 for a 64-bit register) on
/// one entry.
pub(super) fn is_halving_loop(k: &CfgKernel, shape: &Shape, h: usize) -> bool {
    halving(k, shape, h).is_some()
}

/// Whether every loop of `shape` is a halving loop, so that each reaches
/// its header at most 65 times on one entry.
pub(super) fn every_loop_ends(k: &CfgKernel, shape: &Shape) -> bool {
    (0..k.blocks.len())
        .all(|h| shape.loops.get(h).is_none_or(|l| l.is_none()) || halving(k, shape, h).is_some())
}

/// [`is_halving_loop`], `Some(())` where it is.
fn halving(k: &CfgKernel, shape: &Shape, h: usize) -> Option<()> {
    let lp = shape.loops.get(h)?.as_ref()?;
    let mut latches = (0..k.blocks.len()).filter(|&b| {
        lp.body[b]
            && shape
                .succs
                .get(b)
                .is_some_and(|s| s.iter().any(|&t| t as usize == h))
    });
    let (Some(l), None) = (latches.next(), latches.next()) else {
        return None;
    };
    let blk = &k.blocks[l];
    let Term::Branch { p, neg, then, els } = blk.term else {
        return None;
    };
    // Whether the loop goes on where `p` is true: the latch's other target
    // must leave the loop.
    let on_true = if then as usize == h && !lp.body[els as usize] {
        !neg
    } else if els as usize == h && !lp.body[then as usize] {
        neg
    } else {
        return None;
    };
    // The predicate's last definition in the latch: `v != 0` where the loop
    // goes on while it holds, `v == 0` where it leaves then.
    let (si, setp) = blk
        .stmts
        .iter()
        .enumerate()
        .rev()
        .find(|(_, s)| s.inst.dests().contains(&p))?;
    let Inst::Bin {
        op: BinOp::SetpInt { cmp, bits, .. },
        a: Val::Reg(v),
        b: Val::Imm(0),
        ..
    } = setp.inst
    else {
        return None;
    };
    let goes_on_while_nonzero = match cmp {
        ICmp::Ne => on_true,
        ICmp::Eq => !on_true,
        _ => false,
    };
    if setp.guard.is_some() || !goes_on_while_nonzero {
        return None;
    }
    // `v`'s one definition in the loop: an unguarded `v = v >> c`, c ≥ 1,
    // in the latch before the test, at the test's width.
    let mut defs = k
        .blocks
        .iter()
        .enumerate()
        .filter(|&(b, _)| lp.body[b])
        .flat_map(|(b, blk)| blk.stmts.iter().enumerate().map(move |(i, s)| (b, i, s)))
        .filter(|(_, _, s)| s.inst.dests().contains(&v));
    let (Some((db, di, def)), None) = (defs.next(), defs.next()) else {
        return None;
    };
    // Nor does a warp operation of the loop write it.
    let warp_writes = k.blocks.iter().enumerate().any(|(b, blk)| {
        lp.body[b] && matches!(&blk.term, Term::Warp { op, .. } if op.dsts().any(|d| d == v))
    });
    if warp_writes {
        return None;
    }
    let halves = matches!(
        def.inst,
        Inst::Bin { op: BinOp::ShrU(w), a: Val::Reg(a), b: Val::Imm(c), .. }
            if a == v && w == bits && c >= 1
    );
    (halves && def.guard.is_none() && db == l && di < si).then_some(())
}
