//! Shared memory proven all written by the first barrier.
//!
//! Kernels commonly fill their shared arrays before their first barrier
//! (`tile[ty][tx] = …; __syncthreads();`). Where a checked kernel in
//! structured form is proven to write every byte of its shared memory, in
//! every thread, before any barrier, the initialisation check has nothing to
//! find after the first barrier: the code that runs only after a barrier is
//! written without its notes and marks, and is not copied on `sh_full`
//! (structured.rs).
//!
//! The proof: a set of shared stores, each unguarded, in a block that every
//! path from the kernel's entry to a barrier passes through — so every
//! thread runs it before its first barrier, the barriers being met alike in
//! the structured form — whose addresses, computed for every thread of the
//! block from its `%tid` and constants ([`Ranges::shared_store_addrs`]),
//! cover every byte of the kernel's shared memory. A thread that faults
//! before such a store, or at it, skips it; but its fault comes before the
//! first barrier, so before anything a note left out could find, and the
//! block's record is its earliest fault (checks.rs, `soft_publish`).

use super::ranges::Ranges;
use crate::cfg::{shape::successors, CfgKernel, Inst, Space, Term};

/// For each block of `k`: whether it runs only after a barrier and every
/// byte of the `shared` bytes is proven written before the first barrier
/// (module documentation); all false where that is not proven.
pub(super) fn written_after_first_barrier(
    k: &CfgKernel,
    ranges: &Ranges,
    shared: u32,
) -> Vec<bool> {
    let n = k.blocks.len();
    let none = vec![false; n];
    let barrier = |b: usize| matches!(k.blocks[b].term, Term::Barrier { .. });
    if shared == 0 || !(0..n).any(barrier) {
        return none;
    }
    // The blocks a thread reaches without passing a barrier.
    let before = reach(k, None, true);
    let mut bytes = vec![false; shared as usize];
    for b in (0..n).filter(|&b| before[b]) {
        let stores: Vec<_> = k.blocks[b]
            .stmts
            .iter()
            .filter(|s| {
                s.guard.is_none()
                    && matches!(
                        s.inst,
                        Inst::Store {
                            space: Space::Shared,
                            ..
                        }
                    )
            })
            .collect();
        if stores.is_empty() {
            continue;
        }
        // Every barrier lies past `b`: without `b`, no barrier is reached.
        let without = reach(k, Some(b), false);
        if (0..n).any(|x| x != b && without[x] && barrier(x)) {
            continue;
        }
        for s in stores {
            let Inst::Store { size, ref src, .. } = s.inst else {
                continue;
            };
            let Some(addrs) = ranges.shared_store_addrs(s) else {
                continue;
            };
            for &a in addrs {
                let end = a + src.len() as u64 * size as u64;
                for byte in a..end.min(shared as u64) {
                    bytes[byte as usize] = true;
                }
            }
        }
    }
    if !bytes.iter().all(|&w| w) {
        return none;
    }
    before.into_iter().map(|b| !b).collect()
}

/// Whether, by `written_after` ([`written_after_first_barrier`] of `k`),
/// the initialisation check has nothing to find anywhere: all of shared
/// memory proven written by the first barrier and no block that may run
/// before it reads shared memory (a load or an atomic, by a shared or a
/// generic address). Its notes, marks and judgements are then left out of
/// the kernel altogether (`reduce_sum_atomic`'s `sdata[tid] = …;
/// __syncthreads();`).
pub(super) fn nothing_unwritten_read(k: &CfgKernel, written_after: &[bool]) -> bool {
    written_after.iter().any(|&w| w)
        && k.blocks
            .iter()
            .zip(written_after)
            .filter(|(_, &after)| !after)
            .flat_map(|(b, _)| &b.stmts)
            .all(|s| {
                !matches!(
                    s.inst,
                    Inst::Load {
                        space: Space::Shared | Space::Generic,
                        ..
                    } | Inst::Atom {
                        space: Space::Shared | Space::Generic,
                        ..
                    }
                )
            })
}

/// The blocks reached from the entry, not entering `skip`, and (with
/// `stop_at_barriers`) not going on past a barrier.
fn reach(k: &CfgKernel, skip: Option<usize>, stop_at_barriers: bool) -> Vec<bool> {
    let mut seen = vec![false; k.blocks.len()];
    if skip == Some(0) {
        return seen;
    }
    let mut work = vec![0usize];
    seen[0] = true;
    while let Some(b) = work.pop() {
        let t = &k.blocks[b].term;
        if stop_at_barriers && matches!(t, Term::Barrier { .. }) {
            continue;
        }
        for s in successors(t) {
            let s = s as usize;
            if !seen[s] && Some(s) != skip {
                seen[s] = true;
                work.push(s);
            }
        }
    }
    seen
}
