//! The global-memory race checker: two accesses by different threads of one
//! block to the same global bytes, at least one a write, race unless a block
//! barrier (`bar.sync`) or a completed `bar.warp.sync` whose mask holds both
//! lanes orders them, as for shared memory (race.rs). Atomics never race.
//! Threads of different blocks are not compared (CUDA orders nothing between
//! blocks; VGPU runs them in any order).
//!
//! It stays cheap by tracking only what can race. A block's accesses to global
//! memory are logged during a barrier interval: every plain store, and the
//! loads from allocations the kernel may store to (the parameters its store
//! addresses derive from, analysis.rs; all writable ones when the analysis
//! cannot tell). Nothing is kept per byte while the block runs. When the
//! interval ends (a barrier completes, the block ends, or another fault is
//! about to be reported) the bytes the block wrote in it are collected, and
//! the log is replayed in schedule order through a shadow of those bytes only
//! (race.rs's [`Shadow`], every byte initialised): a read-after-write,
//! write-after-read or write-after-write is reported naming both threads and
//! both PTX lines. An interval with no store costs nothing but its log.
//!
//! Bound: an interval's log holds at most [`MAX_LOGGED`] lane accesses and
//! [`MAX_WRITTEN`] written bytes; when it is full it is replayed and cleared,
//! so an access logged before that point is not compared with one after it.

use crate::memory::MemFault;
use crate::race::Shadow;

/// The most lane accesses (plus warp syncs) one interval's log holds before it
/// is checked and cleared: 2,048 accesses of a whole warp.
pub(crate) const MAX_LOGGED: usize = 1 << 16;

/// The most bytes the lane stores of one interval's log may write before it
/// is checked and cleared.
pub(crate) const MAX_WRITTEN: usize = 1 << 16;

/// The most bytes a worker's log and its check use: per logged lane access an
/// address, an event, a written span and a merged range; per written byte its
/// shadow.
pub(crate) const LOG_BYTES_BOUND: u64 = MAX_LOGGED as u64
    * (8 + std::mem::size_of::<Event>() as u64 + 16 + 24)
    + MAX_WRITTEN as u64 * crate::race::SHADOW_BYTES_PER_BYTE;

/// What a logged event is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Read,
    Write,
    /// `bar.warp.sync`: `bytes` unused, `start` holds the member mask.
    WarpSync,
}

/// One warp instruction's accesses (or a warp sync), in schedule order.
#[derive(Debug, Clone, Copy)]
struct Event {
    kind: Kind,
    line: u32,
    /// The warp's first thread (its linear index in the block).
    base: u32,
    /// The lanes, in order; their addresses are `addrs[start..]`.
    em: u32,
    /// Bytes each lane accesses from its address.
    bytes: u32,
    start: u32,
}

/// A race found by [`GlobalLog::check`]: the later access's thread and line
/// and the message naming the earlier one.
pub(crate) struct Race {
    /// The thread (linear index in the block) of the later access.
    pub tid: u32,
    /// Its PTX line.
    pub line: u32,
    /// The message.
    pub detail: String,
}

/// A block's global accesses in the current barrier interval.
#[derive(Default)]
pub(crate) struct GlobalLog {
    events: Vec<Event>,
    addrs: Vec<u64>,
    writes: usize,
    /// Bytes the logged stores write (counting overlaps).
    written: usize,
    /// Written byte ranges `[lo, hi)`, merged, with the shadow index of `lo`.
    ranges: Vec<(u64, u64, usize)>,
    /// Per written byte: the one thread that accessed it in the interval,
    /// [`SHARED`] when several did, [`NONE`] when none did.
    owner: Vec<u32>,
    /// The written spans (scratch of [`GlobalLog::check`]).
    spans: Vec<(u64, u64)>,
}

/// [`GlobalLog::owner`] of a byte no thread accessed.
const NONE: u32 = u32::MAX;
/// [`GlobalLog::owner`] of a byte several threads accessed.
const SHARED: u32 = u32::MAX - 1;

impl GlobalLog {
    /// Empties the log (a new block).
    pub(crate) fn reset(&mut self) {
        self.events.clear();
        self.addrs.clear();
        self.writes = 0;
        self.written = 0;
    }

    /// Whether the log is full and must be checked now.
    pub(crate) fn full(&self) -> bool {
        self.addrs.len() + self.events.len() >= MAX_LOGGED || self.written >= MAX_WRITTEN
    }

    /// Logs an access of `bytes` bytes at `addrs[l]` by the lanes `l` of `em`
    /// of the warp whose first thread is `base`.
    pub(crate) fn access(
        &mut self,
        write: bool,
        line: u32,
        base: u32,
        em: u32,
        bytes: u32,
        addrs: &[u64; 32],
    ) {
        if em == 0 {
            return;
        }
        let start = self.addrs.len() as u32;
        let mut m = em;
        while m != 0 {
            self.addrs.push(addrs[m.trailing_zeros() as usize]);
            m &= m - 1;
        }
        if write {
            self.writes += 1;
            self.written += em.count_ones() as usize * bytes as usize;
        }
        self.events.push(Event {
            kind: if write { Kind::Write } else { Kind::Read },
            line,
            base,
            em,
            bytes,
            start,
        });
    }

    /// Logs one lane's access (the per-lane path).
    pub(crate) fn lane_access(&mut self, write: bool, line: u32, tid: u32, bytes: u32, addr: u64) {
        let mut a = [0u64; 32];
        a[(tid % 32) as usize] = addr;
        self.access(write, line, tid - tid % 32, 1 << (tid % 32), bytes, &a);
    }

    /// Logs `bar.warp.sync membermask` executed by the lanes `em` of the warp
    /// whose first thread is `base`.
    pub(crate) fn warp_sync(&mut self, base: u32, membermask: u32, em: u32) {
        self.events.push(Event {
            kind: Kind::WarpSync,
            line: 0,
            base,
            em,
            bytes: 0,
            start: membermask,
        });
    }

    /// The shadow index of byte `a`, if the block wrote it in this interval;
    /// `hint` is the range that held the last byte asked about.
    #[inline]
    fn index(&self, a: u64, hint: &mut usize) -> Option<usize> {
        if let Some(&(lo, hi, at)) = self.ranges.get(*hint) {
            if lo <= a && a < hi {
                return Some(at + (a - lo) as usize);
            }
        }
        let i = self.ranges.partition_point(|r| r.1 <= a);
        let &(lo, hi, at) = self.ranges.get(i)?;
        *hint = i;
        (lo <= a && a < hi).then(|| at + (a - lo) as usize)
    }

    /// The lane accesses of the log: (event, thread, address).
    fn lane_accesses(&self) -> impl Iterator<Item = (&Event, u32, u64)> + '_ {
        self.events
            .iter()
            .filter(|e| e.kind != Kind::WarpSync)
            .flat_map(move |e| {
                let mut m = e.em;
                let mut k = e.start as usize;
                std::iter::from_fn(move || {
                    if m == 0 {
                        return None;
                    }
                    let l = m.trailing_zeros();
                    m &= m - 1;
                    k += 1;
                    Some((e, e.base + l, self.addrs[k - 1]))
                })
            })
    }

    /// Checks the interval's accesses (see the module documentation) for a
    /// block of `nwarps` warps and clears the log. `who` formats a thread.
    pub(crate) fn check(&mut self, nwarps: usize, who: &dyn Fn(u32) -> String) -> Option<Race> {
        if self.writes == 0 {
            self.reset();
            return None;
        }
        let mut spans = std::mem::take(&mut self.spans);
        spans.clear();
        for e in self.events.iter().filter(|e| e.kind == Kind::Write) {
            let n = e.em.count_ones() as usize;
            for &a in &self.addrs[e.start as usize..e.start as usize + n] {
                spans.push((a, a.saturating_add(e.bytes as u64)));
            }
        }
        spans.sort_unstable();
        self.ranges.clear();
        let mut total = 0usize;
        for &(lo, hi) in &spans {
            match self.ranges.last_mut() {
                Some(last) if lo <= last.1 => {
                    if hi > last.1 {
                        total += (hi - last.1) as usize;
                        last.1 = hi;
                    }
                }
                _ => {
                    self.ranges.push((lo, hi, total));
                    total += (hi - lo) as usize;
                }
            }
        }
        self.spans = spans;
        let (wlo, whi) = (self.ranges[0].0, self.ranges[self.ranges.len() - 1].1);
        // Only bytes two threads accessed can race: find them first.
        let mut owner = std::mem::take(&mut self.owner);
        owner.clear();
        owner.resize(total, NONE);
        let mut hint = 0;
        let mut shared = false;
        for (e, tid, a) in self.lane_accesses() {
            let end = a.saturating_add(e.bytes as u64);
            if a >= whi || end <= wlo {
                continue;
            }
            let mut mark = |o: &mut u32| {
                if *o == NONE {
                    *o = tid;
                } else if *o != tid && *o != SHARED {
                    *o = SHARED;
                    shared = true;
                }
            };
            // The common case: the whole access inside one written range.
            if let Some(i) = self.index(a, &mut hint) {
                let (lo, hi, _) = self.ranges[hint];
                if lo <= a && end <= hi {
                    owner[i..i + e.bytes as usize].iter_mut().for_each(mark);
                    continue;
                }
            }
            for b in a..end {
                if let Some(i) = self.index(b, &mut hint) {
                    mark(&mut owner[i]);
                }
            }
        }
        let mut found = None;
        if shared {
            found = self.replay(&owner, total, nwarps, who);
        }
        self.owner = owner;
        self.reset();
        found
    }

    /// Replays the log through a shadow of the written bytes that several
    /// threads accessed: the first race, if any.
    fn replay(
        &self,
        owner: &[u32],
        total: usize,
        nwarps: usize,
        who: &dyn Fn(u32) -> String,
    ) -> Option<Race> {
        let mut shadow = Shadow::new_initialised(total, nwarps, "global");
        let mut hint = 0;
        for e in &self.events {
            if e.kind == Kind::WarpSync {
                shadow.warp_sync(e.base / 32, e.start, e.em);
                continue;
            }
            let mut m = e.em;
            let mut k = e.start as usize;
            while m != 0 {
                let tid = e.base + m.trailing_zeros();
                m &= m - 1;
                let a = self.addrs[k];
                k += 1;
                for b in a..a.saturating_add(e.bytes as u64) {
                    let Some(i) = self.index(b, &mut hint) else {
                        continue;
                    };
                    if owner[i] != SHARED {
                        continue;
                    }
                    let r = if e.kind == Kind::Write {
                        shadow.write_at(i, b, tid, e.line, who, false)
                    } else {
                        shadow.read_at(i, b, tid, e.line, who)
                    };
                    if let Err(MemFault { detail, .. }) = r {
                        return Some(Race {
                            tid,
                            line: e.line,
                            detail,
                        });
                    }
                }
            }
        }
        None
    }
}
