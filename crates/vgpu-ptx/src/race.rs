//! The shared-memory checker: a per-byte shadow of the block's shared memory
//! that finds races and reads of memory nothing wrote, as compute-sanitizer's
//! racecheck and initcheck do.
//!
//! Two accesses to one byte by different threads of a block, at least one of
//! them a write, race unless something orders them: a block barrier between
//! them (`bar.sync`: they are in different barrier intervals, "epochs"), or, for
//! two threads of one warp, a `bar.warp.sync` whose member mask holds both,
//! completed after the first access. All three orders are reported, whichever
//! comes first in VGPU's schedule: read-after-write, write-after-read and
//! write-after-write, each naming both threads and both PTX lines.
//!
//! Strong operations (atomics, `.relaxed`/`.acquire`/`.release`/`.volatile`
//! loads and stores: every scope includes the block) never race with each
//! other. Release and acquire order the accesses around them: a release by a
//! warp (`st.release`, `atom/red.release`, `.acq_rel`) publishes the warp's
//! clock at that byte, an acquire of the byte by another warp (`ld.acquire`,
//! `atom.acquire`, `.acq_rel`) joins it into its own, and an earlier access of
//! warp W is ordered before warp V's access when V's clock of W has reached the
//! access's (vector clocks at warp granularity: a release publishes what all of
//! the warp's lanes did before it, as the lanes that release in practice do
//! after a `bar.warp.sync`). A weak store to the byte ends the release
//! sequence; atomics continue it.
//!
//! A read of a byte nothing has written is not reported at once: in VGPU's
//! schedule (warp after warp) another thread may write it later in the same
//! barrier interval, which makes the read a write-after-read race, not an
//! uninitialised read. The first such read is kept and reported as
//! uninitialised when the interval ends (the next barrier, or the end of the
//! block) with no such write, or when another fault would be reported first.

use crate::error::{FaultClass, MemFault};
use crate::program::Order;
use std::collections::HashMap;

/// One access, as the shadow remembers it.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Access {
    /// The thread's linear index in the block, plus 1 (0: none).
    who: u32,
    /// The PTX line.
    line: u32,
    /// The thread's warp's warp-sync count when it accessed.
    sync: u32,
    /// The warp instruction it was part of ([`Shadow::next_instance`]).
    inst: u32,
    /// A strong operation (an atomic, or a `.relaxed`/`.acquire`/`.release`/
    /// `.volatile` load or store): it races with no other strong operation.
    strong: bool,
    /// The warp's own clock when it accessed (release/acquire order).
    rc: u32,
}

/// A read of shared memory that nothing had written, waiting for the end of its
/// barrier interval.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PendingRead {
    /// The reader's linear index in the block.
    pub tid: u32,
    /// The PTX line of the read.
    pub line: u32,
    /// The byte.
    pub byte: usize,
}

/// A warp's `bar.warp.sync`s in the current barrier interval.
#[derive(Debug, Clone, Default)]
struct WarpSyncs {
    /// Completed syncs so far (the number of the last one).
    count: u32,
    /// Lanes that executed `bar.warp.sync` since the last one completed.
    arrived: u32,
    /// The mask each completed sync ordered, by number (1-based: `done[n-1]`).
    done: Vec<u32>,
}

/// Per-byte shadow of shared memory for the race and uninitialised checks.
pub(crate) struct Shadow {
    writer: Vec<Access>,
    wepoch: Vec<u32>,
    /// The first thread to read the byte in `repoch`, and the latest other.
    reader: Vec<Access>,
    reader2: Vec<Access>,
    repoch: Vec<u32>,
    /// Whether anything ever wrote the byte in this block.
    written: Vec<bool>,
    /// Current barrier interval, from 1.
    epoch: u32,
    warps: Vec<WarpSyncs>,
    /// The first read of unwritten memory in this interval.
    pub pending: Option<PendingRead>,
    /// The space's name in messages (`shared`, `global`).
    space: &'static str,
    /// The current warp instruction's number (wrapping).
    inst: u32,
    /// The current warp instruction's memory order.
    order: Order,
    /// Warps in the block.
    nwarps: usize,
    /// Vector clocks: `vc[v * nwarps + w]` is what warp `v` has acquired of
    /// warp `w`'s clock (`vc[w * nwarps + w]`: `w`'s own, from 1).
    vc: Vec<u32>,
    /// The clocks released at a byte (its release sequence's join).
    released: HashMap<usize, Vec<u32>>,
}

/// Bytes of checker shadow per byte of shared memory (what a launch's memory
/// estimate counts).
pub(crate) const SHADOW_BYTES_PER_BYTE: u64 = 3 * std::mem::size_of::<Access>() as u64 + 9;

impl Shadow {
    /// A shadow of `size` bytes for a block of `nwarps` warps.
    pub(crate) fn new(size: usize, nwarps: usize) -> Shadow {
        Shadow {
            writer: vec![Access::default(); size],
            wepoch: vec![0; size],
            reader: vec![Access::default(); size],
            reader2: vec![Access::default(); size],
            repoch: vec![0; size],
            written: vec![false; size],
            epoch: 1,
            warps: vec![WarpSyncs::default(); nwarps],
            pending: None,
            space: "shared",
            inst: 0,
            order: Order::Weak,
            nwarps,
            vc: fresh_clocks(nwarps),
            released: HashMap::new(),
        }
    }

    /// A shadow of `size` bytes of `space` that all start initialised (global
    /// memory: the host wrote it), for a block of `nwarps` warps.
    pub(crate) fn new_initialised(size: usize, nwarps: usize, space: &'static str) -> Shadow {
        let mut s = Shadow::new(size, nwarps);
        s.written.fill(true);
        s.space = space;
        s
    }

    /// Marks the bytes `range` as initialised (written before the block began).
    pub(crate) fn mark_initialised(&mut self, range: std::ops::Range<usize>) {
        self.written[range].fill(true);
    }

    /// Clears for the next block.
    pub(crate) fn reset(&mut self) {
        self.writer.fill(Access::default());
        self.wepoch.fill(0);
        self.reader.fill(Access::default());
        self.reader2.fill(Access::default());
        self.repoch.fill(0);
        self.written.fill(false);
        self.epoch = 1;
        self.warps.fill(WarpSyncs::default());
        self.pending = None;
        reset_clocks(&mut self.vc, self.nwarps);
        self.released.clear();
    }

    /// A block barrier completed: a new interval begins. Returns the pending
    /// uninitialised read of the interval that ended, if any.
    pub(crate) fn barrier(&mut self) -> Option<PendingRead> {
        self.epoch += 1;
        self.warps.fill(WarpSyncs::default());
        self.pending.take()
    }

    /// The lanes `em` of warp `warp` executed `bar.warp.sync membermask`. Once
    /// every lane of the mask has (a warp may reach it in divergent groups) the
    /// sync completes and orders the accesses of those lanes before it with
    /// theirs after it.
    pub(crate) fn warp_sync(&mut self, warp: u32, membermask: u32, em: u32) {
        let Some(w) = self.warps.get_mut(warp as usize) else {
            return;
        };
        w.arrived |= em;
        if w.arrived & membermask == membermask {
            w.count += 1;
            w.done.push(membermask);
            w.arrived = 0;
        }
    }

    fn access(&self, tid: u32, line: u32) -> Access {
        Access {
            who: tid + 1,
            line,
            sync: self.warps.get((tid / 32) as usize).map_or(0, |w| w.count),
            inst: self.inst,
            strong: self.order.strong(),
            rc: self.clock(tid / 32, tid / 32),
        }
    }

    /// Warp `v`'s clock of warp `w` (0 for a warp outside the block).
    fn clock(&self, v: u32, w: u32) -> u32 {
        let (v, w) = (v as usize, w as usize);
        if v < self.nwarps && w < self.nwarps {
            self.vc[v * self.nwarps + w]
        } else {
            0
        }
    }

    /// A new warp instruction begins: the accesses its lanes make until the
    /// next call are simultaneous (one instruction of one warp); `order`: its
    /// semantics in the PTX memory model.
    pub(crate) fn next_instance(&mut self, order: Order) {
        self.inst = self.inst.wrapping_add(1);
        self.order = order;
    }

    /// Whether the earlier access `a` and an access now conflict without
    /// racing: both strong (morally strong: every scope includes the block).
    fn both_strong(&self, a: Access) -> bool {
        self.order.strong() && a.strong
    }

    /// An acquire of byte `b` by thread `tid`'s warp: joins what was released there.
    fn acquire(&mut self, b: usize, tid: u32) {
        let v = (tid / 32) as usize;
        if v >= self.nwarps {
            return;
        }
        if let Some(r) = self.released.get(&b) {
            let row = &mut self.vc[v * self.nwarps..(v + 1) * self.nwarps];
            for (x, y) in row.iter_mut().zip(r) {
                *x = (*x).max(*y);
            }
        }
    }

    /// A release at byte `b` by thread `tid`'s warp: publishes its clocks there
    /// (joined with the release sequence's when `rmw`, replacing it otherwise),
    /// then advances its own clock.
    fn release(&mut self, b: usize, tid: u32, rmw: bool) {
        let v = (tid / 32) as usize;
        if v >= self.nwarps {
            return;
        }
        let n = self.nwarps;
        let row = self.vc[v * n..(v + 1) * n].to_vec();
        match self.released.get_mut(&b) {
            Some(r) if rmw => r.iter_mut().zip(&row).for_each(|(x, y)| *x = (*x).max(*y)),
            _ => {
                self.released.insert(b, row);
            }
        }
        self.vc[v * n + v] += 1;
    }

    /// Whether the earlier access `a` (of this interval) is ordered before an
    /// access by thread `tid` now: the same thread, a warp sync of both since
    /// (one warp), or an acquire of a release made after it (two warps).
    fn ordered(&self, a: Access, tid: u32) -> bool {
        let other = a.who - 1;
        if other == tid {
            return true;
        }
        if other / 32 != tid / 32 {
            return self.clock(tid / 32, other / 32) >= a.rc;
        }
        let both = (1u32 << (other % 32)) | (1u32 << (tid % 32));
        let w = &self.warps[(tid / 32) as usize];
        w.done[a.sync as usize..].iter().any(|m| m & both == both)
    }

    /// Checks and records a read of byte `b` by thread `tid` at PTX `line`.
    /// `who` formats a thread index.
    pub(crate) fn read(
        &mut self,
        b: usize,
        tid: u32,
        line: u32,
        who: &dyn Fn(u32) -> String,
    ) -> Result<(), MemFault> {
        self.read_at(b, b as u64, tid, line, who)
    }

    /// [`Shadow::read`] of byte `b`, whose address messages name as `at`.
    pub(crate) fn read_at(
        &mut self,
        b: usize,
        at: u64,
        tid: u32,
        line: u32,
        who: &dyn Fn(u32) -> String,
    ) -> Result<(), MemFault> {
        if !self.written[b] {
            self.pending
                .get_or_insert(PendingRead { tid, line, byte: b });
        } else if self.wepoch[b] == self.epoch
            && !self.both_strong(self.writer[b])
            && !self.ordered(self.writer[b], tid)
        {
            let w = self.writer[b];
            return Err(race(format!(
                "read-after-write hazard on {} byte 0x{at:x}: read here, written by thread {} at PTX line {}, with no barrier between",
                self.space,
                who(w.who - 1),
                w.line
            )));
        }
        let me = self.access(tid, line);
        if self.repoch[b] != self.epoch {
            self.reader[b] = me;
            self.reader2[b] = Access::default();
            self.repoch[b] = self.epoch;
        } else if self.reader[b].who == me.who {
            self.reader[b] = me;
        } else {
            self.reader2[b] = me;
        }
        if self.order.acquires() {
            self.acquire(b, tid);
        }
        Ok(())
    }

    #[cfg(test)]
    /// Checks and records a write of byte `b` by thread `tid` at PTX `line`.
    pub(crate) fn write(
        &mut self,
        b: usize,
        tid: u32,
        line: u32,
        who: &dyn Fn(u32) -> String,
    ) -> Result<(), MemFault> {
        self.write_at(b, b as u64, tid, line, who, false)
    }

    /// [`Shadow::write`] that knows whether the byte already holds the value
    /// written (`same_value`): lanes of one warp instruction writing the same
    /// value to one byte do not race (the store is one transaction and every
    /// outcome is the same, as racecheck treats it); different values do.
    pub(crate) fn write_value(
        &mut self,
        b: usize,
        tid: u32,
        line: u32,
        who: &dyn Fn(u32) -> String,
        same_value: bool,
    ) -> Result<(), MemFault> {
        self.write_at(b, b as u64, tid, line, who, same_value)
    }

    /// [`Shadow::write_value`] of byte `b`, whose address messages name as `at`.
    pub(crate) fn write_at(
        &mut self,
        b: usize,
        at: u64,
        tid: u32,
        line: u32,
        who: &dyn Fn(u32) -> String,
        same_value: bool,
    ) -> Result<(), MemFault> {
        let w = self.writer[b];
        let simultaneous = same_value && w.inst == self.inst && (w.who - 1) / 32 == tid / 32;
        if self.wepoch[b] == self.epoch
            && !simultaneous
            && !self.both_strong(w)
            && !self.ordered(w, tid)
        {
            let w = self.writer[b];
            return Err(race(format!(
                "write-after-write hazard on {} byte 0x{at:x}: written here and by thread {} at PTX line {}, with no barrier between",
                self.space,
                who(w.who - 1),
                w.line
            )));
        }
        if self.repoch[b] == self.epoch {
            for r in [self.reader[b], self.reader2[b]] {
                if r.who != 0 && !self.both_strong(r) && !self.ordered(r, tid) {
                    let unwritten = self
                        .pending
                        .is_some_and(|p| p.byte == b && p.tid + 1 == r.who);
                    if unwritten {
                        self.pending = None;
                    }
                    return Err(race(format!(
                        "write-after-read hazard on {} byte 0x{at:x}: written here, read by thread {} at PTX line {}{}, with no barrier between",
                        self.space,
                        who(r.who - 1),
                        r.line,
                        if unwritten { " before anything wrote it" } else { "" }
                    )));
                }
            }
        }
        self.writer[b] = self.access(tid, line);
        self.wepoch[b] = self.epoch;
        self.written[b] = true;
        if self.order.releases() {
            self.release(b, tid, false);
        } else {
            // A store without release semantics ends the release sequence.
            self.released.remove(&b);
        }
        Ok(())
    }

    /// An atomic on byte `b`: the byte must have been written; atomics do not
    /// race with each other.
    pub(crate) fn atomic(&mut self, b: usize, tid: u32, line: u32) -> Result<(), MemFault> {
        if !self.written[b] {
            return Err(MemFault {
                class: FaultClass::Uninitialized,
                detail: format!("atomic on shared byte 0x{b:x} that nothing wrote"),
            });
        }
        if self.order.acquires() {
            self.acquire(b, tid);
        }
        self.writer[b] = Access {
            strong: true,
            ..self.access(tid, line)
        };
        self.wepoch[b] = self.epoch;
        self.repoch[b] = 0;
        if self.order.releases() {
            self.release(b, tid, true);
        }
        Ok(())
    }
}

/// Vector clocks for `n` warps: each warp's own clock 1, nothing acquired.
fn fresh_clocks(n: usize) -> Vec<u32> {
    let mut vc = vec![0; n * n];
    reset_clocks(&mut vc, n);
    vc
}

/// Refills the `n × n` vector clocks `vc` in place: each warp's own clock 1,
/// nothing acquired (a new block).
fn reset_clocks(vc: &mut [u32], n: usize) {
    vc.fill(0);
    for w in 0..n {
        vc[w * n + w] = 1;
    }
}

fn race(detail: String) -> MemFault {
    MemFault {
        class: FaultClass::Race,
        detail,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn who(t: u32) -> String {
        format!("#{t}")
    }

    #[test]
    fn lanes_of_one_store_writing_one_value_do_not_race() {
        let mut s = Shadow::new(8, 2);
        // One warp instruction: lanes 0 and 1 write the same value to byte 0.
        s.next_instance(Order::Weak);
        s.write_value(0, 0, 10, &who, false).unwrap();
        s.write_value(0, 1, 10, &who, true).unwrap();
        // A different value in one instruction is a race.
        s.next_instance(Order::Weak);
        s.write_value(1, 0, 11, &who, false).unwrap();
        let e = s.write_value(1, 1, 11, &who, false).unwrap_err();
        assert!(
            e.detail.contains("write-after-write") && e.detail.contains("#0"),
            "{}",
            e.detail
        );
        // The same value in a later instruction of the warp (no sync) is a race.
        s.next_instance(Order::Weak);
        let e = s.write_value(0, 2, 10, &who, true).unwrap_err();
        assert!(e.detail.contains("write-after-write"), "{}", e.detail);
        // So is the same value from another warp in the "same" instruction number.
        let mut s = Shadow::new(8, 2);
        s.next_instance(Order::Weak);
        s.write_value(0, 0, 10, &who, false).unwrap();
        let e = s.write_value(0, 32, 10, &who, true).unwrap_err();
        assert!(e.detail.contains("write-after-write"), "{}", e.detail);
    }

    #[test]
    fn release_then_acquire_orders_the_accesses_around_them() {
        // Warp 0: thread 31 writes a slot, thread 0 releases a flag (an
        // atomic with .acq_rel). Warp 1: thread 32 acquires the flag, then
        // reads the slot: ordered, no race.
        let mut s = Shadow::new(16, 2);
        s.mark_initialised(8..12);
        s.next_instance(Order::Weak);
        s.write(0, 31, 10, &who).unwrap();
        s.next_instance(Order::AcqRel);
        s.atomic(8, 0, 11).unwrap();
        s.next_instance(Order::Acquire);
        s.read(8, 32, 12, &who).unwrap();
        s.next_instance(Order::Weak);
        s.read(0, 32, 13, &who).unwrap();
        // A write after the release is not published by it: a race.
        s.write(1, 31, 14, &who).unwrap();
        let e = s.read(1, 33, 15, &who).unwrap_err();
        assert!(e.detail.contains("read-after-write"), "{}", e.detail);
        // Without the acquire (a relaxed load of the flag), the read races.
        let mut s = Shadow::new(16, 2);
        s.mark_initialised(8..12);
        s.next_instance(Order::Weak);
        s.write(0, 31, 10, &who).unwrap();
        s.next_instance(Order::Release);
        s.write(8, 0, 11, &who).unwrap();
        s.next_instance(Order::Relaxed);
        s.read(8, 32, 12, &who).unwrap();
        s.next_instance(Order::Weak);
        let e = s.read(0, 32, 13, &who).unwrap_err();
        assert!(e.detail.contains("read-after-write"), "{}", e.detail);
        // A weak store to the flag ends the release sequence.
        let mut s = Shadow::new(16, 2);
        s.next_instance(Order::Weak);
        s.write(0, 31, 10, &who).unwrap();
        s.next_instance(Order::Release);
        s.write(8, 0, 11, &who).unwrap();
        s.next_instance(Order::Weak);
        s.write(8, 0, 12, &who).unwrap();
        s.next_instance(Order::Acquire);
        s.read(8, 32, 13, &who).unwrap_err();
    }

    #[test]
    fn strong_operations_and_atomics_do_not_race_with_each_other() {
        let mut s = Shadow::new(8, 2);
        s.write(0, 0, 9, &who).unwrap();
        s.next_instance(Order::Weak);
        s.write(1, 0, 9, &who).unwrap();
        s.write(2, 0, 9, &who).unwrap();
        // An atomic by thread 0, then an `ld.acquire` by thread 40: no race.
        s.atomic(0, 0, 10).unwrap();
        s.next_instance(Order::Relaxed);
        s.read(0, 40, 11, &who).unwrap();
        // A plain load after the atomic races.
        s.next_instance(Order::Weak);
        let e = s.read(0, 41, 12, &who).unwrap_err();
        assert!(e.detail.contains("read-after-write"), "{}", e.detail);
        // `st.relaxed` after `st.relaxed` of another warp: no race; a plain
        // store after it: a race.
        s.next_instance(Order::Relaxed);
        s.write(1, 0, 13, &who).unwrap();
        s.write(1, 40, 14, &who).unwrap();
        s.next_instance(Order::Weak);
        let e = s.write(1, 41, 15, &who).unwrap_err();
        assert!(e.detail.contains("write-after-write"), "{}", e.detail);
        // A strong store after another warp's plain read races (WAR).
        let mut s = Shadow::new(8, 2);
        s.write(3, 0, 16, &who).unwrap();
        let mut t = Shadow::new(8, 2);
        t.mark_initialised(3..4);
        t.next_instance(Order::Weak);
        t.read(3, 0, 17, &who).unwrap();
        t.next_instance(Order::Relaxed);
        let e = t.write(3, 40, 18, &who).unwrap_err();
        assert!(e.detail.contains("write-after-read"), "{}", e.detail);
        s.next_instance(Order::Relaxed);
        s.read(3, 0, 19, &who).unwrap();
    }

    fn class(r: Result<(), MemFault>) -> Option<FaultClass> {
        r.err().map(|e| e.class)
    }

    #[test]
    fn read_after_write_in_one_interval_races_and_a_barrier_orders_it() {
        let mut s = Shadow::new(8, 4);
        s.write(0, 40, 10, &who).unwrap();
        let e = s.read(0, 3, 12, &who).unwrap_err();
        assert_eq!(e.class, FaultClass::Race);
        assert!(e.detail.contains("read-after-write") && e.detail.contains("#40 at PTX line 10"));
        let mut s = Shadow::new(8, 4);
        s.write(0, 40, 10, &who).unwrap();
        assert!(s.barrier().is_none());
        s.read(0, 3, 12, &who).unwrap();
    }

    #[test]
    fn write_after_read_of_unwritten_memory_is_a_race_not_uninitialised() {
        let mut s = Shadow::new(8, 4);
        s.read(4, 3, 12, &who).unwrap();
        assert!(s.pending.is_some());
        let e = s.write(4, 40, 20, &who).unwrap_err();
        assert_eq!(e.class, FaultClass::Race);
        assert!(e.detail.contains("write-after-read") && e.detail.contains("#3 at PTX line 12"));
        assert!(s.pending.is_none());
    }

    #[test]
    fn an_unwritten_read_is_reported_when_its_interval_ends() {
        let mut s = Shadow::new(8, 4);
        s.read(4, 3, 12, &who).unwrap();
        s.read(5, 7, 13, &who).unwrap();
        let p = s.barrier().expect("pending");
        assert_eq!((p.tid, p.line, p.byte), (3, 12, 4));
        // The thread's own later write does not make it a race.
        let mut s = Shadow::new(8, 4);
        s.read(4, 3, 12, &who).unwrap();
        s.write(4, 3, 14, &who).unwrap();
        assert!(s.barrier().is_some());
    }

    #[test]
    fn write_after_write_races() {
        let mut s = Shadow::new(8, 4);
        s.write(0, 1, 10, &who).unwrap();
        s.write(0, 1, 11, &who).unwrap();
        let e = s.write(0, 2, 12, &who).unwrap_err();
        assert!(e.detail.contains("write-after-write") && e.detail.contains("#1 at PTX line 11"));
    }

    #[test]
    fn every_reader_is_checked_against_a_later_writer() {
        let mut s = Shadow::new(8, 4);
        s.write(0, 0, 9, &who).unwrap();
        s.barrier();
        s.read(0, 0, 10, &who).unwrap();
        s.read(0, 1, 11, &who).unwrap();
        // Thread 0 writing races with thread 1's read (not its own).
        let e = s.write(0, 0, 12, &who).unwrap_err();
        assert!(e.detail.contains("#1 at PTX line 11"), "{}", e.detail);
    }

    #[test]
    fn a_warp_sync_orders_its_members_only() {
        let mut s = Shadow::new(8, 2);
        s.write(0, 1, 10, &who).unwrap();
        s.warp_sync(0, u32::MAX, u32::MAX);
        s.read(0, 2, 12, &who).unwrap();
        // Thread 33 is in another warp: the sync does not order it.
        assert_eq!(class(s.read(0, 33, 13, &who)), Some(FaultClass::Race));
        // A mask without the writer does not order.
        let mut s = Shadow::new(8, 2);
        s.write(0, 1, 10, &who).unwrap();
        s.warp_sync(0, 0b100, 0b100);
        assert_eq!(class(s.read(0, 2, 12, &who)), Some(FaultClass::Race));
        // A sync before the write does not order it.
        let mut s = Shadow::new(8, 2);
        s.warp_sync(0, u32::MAX, u32::MAX);
        s.write(0, 1, 10, &who).unwrap();
        assert_eq!(class(s.read(0, 2, 12, &who)), Some(FaultClass::Race));
    }

    #[test]
    fn a_warp_sync_completes_when_every_member_arrived() {
        let mut s = Shadow::new(8, 1);
        s.write(0, 1, 10, &who).unwrap();
        s.warp_sync(0, u32::MAX, 0x0000_ffff);
        assert_eq!(class(s.read(0, 20, 12, &who)), Some(FaultClass::Race));
        s.warp_sync(0, u32::MAX, 0xffff_0000);
        s.read(0, 20, 12, &who).unwrap();
        // It orders write-after-read too.
        s.warp_sync(0, u32::MAX, u32::MAX);
        s.write(0, 5, 14, &who).unwrap();
    }

    #[test]
    fn atomics_need_initialised_memory_and_do_not_race() {
        let mut s = Shadow::new(8, 1);
        assert_eq!(class(s.atomic(0, 1, 5)), Some(FaultClass::Uninitialized));
        s.write(0, 1, 4, &who).unwrap();
        s.barrier();
        s.atomic(0, 1, 5).unwrap();
        s.atomic(0, 2, 5).unwrap();
    }
}
