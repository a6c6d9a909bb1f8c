//! The watchdog of checked kernels: each thread counts the instructions it
//! runs (each block's statements and its terminator) and faults where the
//! count passes the launch's limit (`meta::WATCHDOG`), tested at loop
//! headers, which every endless execution passes. The structured form's
//! loops with barriers add a count of iterations alike in every thread
//! (structured.rs). A loop its own code ends within a few iterations (a
//! halving loop, bounded.rs) only counts: nothing there can run forever.
//!
//! Its tests were a quarter of checked `reduce_sum_atomic`'s time on the
//! H100 and 4 ms of checked `matmul_tiled`'s (session 24, `check_variants`
//! `nosteps`); a loop with barriers that only noted the fault and took it at
//! the block's end, later faults kept out by a test in `raise` (0e8ffde,
//! 9b13186), made `reduce_sum_atomic` faster (0.318–0.346 ms against 0.366)
//! but `matmul_tiled` slower (59.6–60.4 ms against 54.1), so the fault is
//! raised where the count passes the limit. In a loop with barriers whose
//! threads go on after a fault, it is raised without a branch (`raise_if`,
//! checks.rs: three of the record's fields selected): the branch cost
//! `matmul_tiled` 3.8 of its 34.9 ms and `reduce_sum_atomic` 0.020 of 0.266
//! (session 30, `mask_variants` `sel3`; selecting all five fields took back
//! 3.5 ms and nothing). Where the fault ends the thread, its line is noted
//! (`g_wd`) and recorded at the thread's end: as a variant of an older
//! build this took checked `lorenz_rk4` from 20.30 to 19.85 ms (session 30,
//! `wdnote`), but as built it still takes 20.30 (session 31).

use super::bounded::VisitBound;
use super::writer::{KernelWriter, EXIT};
use super::{fault, meta};
use crate::cfg::{ICmp, Term, Val};

/// The workgroup's words for [`KernelWriter::fits_code`]: whether a thread
/// found that its count may reach the limit in the loop, and the verdict
/// handed to all.
pub(super) const FITS_DECLS: &str =
    "var<workgroup> wg_wdslow: atomic<u32>;\nvar<workgroup> wg_wdfast: u32;\n";

/// Where a watchdog fault goes on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum AfterFault {
    /// The thread ends (`EXIT`).
    EndThread,
    /// The loop is left (`break;`), the thread going on.
    LeaveLoop,
}

impl KernelWriter<'_> {
    /// The watchdog's code at the start of block `i` of a checked kernel: it
    /// counts instructions (each block's statements and its terminator) and
    /// is checked at loop headers, which every endless execution passes.
    pub(super) fn watchdog(&self, i: usize, header: bool) -> String {
        self.watchdog_then(i, header, AfterFault::EndThread)
    }

    /// [`Self::watchdog`] going on as `after` says after a watchdog fault.
    pub(super) fn watchdog_then(&self, i: usize, header: bool, after: AfterFault) -> String {
        if !self.o.checked {
            return String::new();
        }
        let n = self.k.blocks[i].stmts.len() + 1;
        if !header {
            return format!("        steps = steps + {n}u;\n");
        }
        let exit = match after {
            AfterFault::EndThread => EXIT,
            AfterFault::LeaveLoop => "break;",
        };
        if after == AfterFault::EndThread && !self.soft {
            // The fault ends the thread, none came before it: its line (plus
            // one, never zero: a header without statements names line 0) is
            // noted and taken into the record at the thread's end (emit.rs,
            // `epilogue`) rather than raised in the loop.
            return format!(
                "        steps = steps + {n}u;\n        if (steps > words[{}]) {{ g_wd = {}u; {exit} }}\n",
                meta::WATCHDOG,
                self.header_line(i) + 1
            );
        }
        format!(
            "        steps = steps + {n}u;\n        if (steps > words[{}]) {{ raise({}u, {}u, vec2<u32>(0u, 0u)); {exit} }}\n",
            meta::WATCHDOG,
            fault::CLASS_WATCHDOG,
            self.header_line(i)
        )
    }

    /// The watchdog's test at loop header `i` where its fault neither ends
    /// the thread nor leaves the loop (a loop through barriers in the
    /// structured form whose threads go on after a fault; the count is
    /// written apart): the fault raised without a branch (`raise_if`,
    /// checks.rs).
    pub(super) fn watchdog_raise_if(&self, i: usize) -> String {
        if !self.o.checked {
            return String::new();
        }
        format!(
            "        raise_if(steps > words[{}], {}u, {}u);\n",
            meta::WATCHDOG,
            fault::CLASS_WATCHDOG,
            self.header_line(i)
        )
    }

    /// The code before the loop with header `h`, through barriers, whose
    /// threads go on after a fault, and whose visits `vb` bounds
    /// (bounded.rs): `wdok{h}`, 1 where no thread of the workgroup can pass
    /// the watchdog's limit at a visit of the header in this entry, so that
    /// every thread skips the header's test and its count of iterations
    /// alike (the count stays the same in all threads). A thread's bound:
    /// `d + 1` visits (`max(d, 1)` where the step comes first) of at most
    /// `max_steps` instructions each from its count now (`d` as
    /// [`VisitBound`] says; where the test fails on entry and the step could
    /// wrap, no bound: `d` is then 2^32 − 1, which no `q` reaches, since
    /// `max_steps` is at least 2, the latch's test and branch). The threads'
    /// findings meet in `wg_wdslow` by the barrier after, and thread 0 hands
    /// the verdict to all through `workgroupUniformLoad` (uniform, as the
    /// loop's barriers need; `wg_wdslow` cleared for the next entry before
    /// it). Neither barrier is a PTX barrier: `g_nbar` does not count them.
    ///
    /// A versioned loop (versioned.rs) adds its sites' tests: `lets`, lines
    /// placed after `d`, and `also`, a condition each thread's finding
    /// needs too (empty: none).
    pub(super) fn fits_code(&self, h: usize, vb: &VisitBound, lets: &str, also: &str) -> String {
        let i = self.v32(Val::Reg(vb.i));
        let n = self.v32(vb.n);
        let bits = vb.bits;
        let top = if bits >= 32 {
            u32::MAX
        } else {
            (1u32 << bits) - 1
        };
        let sign = 1u32 << (bits - 1);
        // The comparison that holds while the loop goes on, the distance
        // to its bound, and the value whose step wraps.
        let (cmp, d, edge) = match (vb.up, vb.signed) {
            (true, true) => (ICmp::Lt, format!("{n} - {i}"), sign - 1),
            (true, false) => (ICmp::Lt, format!("{n} - {i}"), top),
            (false, true) => (ICmp::Gt, format!("{i} - {n}"), sign),
            (false, false) => (ICmp::Gt, format!("{i} - {n}"), 0),
        };
        let wd = meta::WATCHDOG;
        let (s, signed) = (vb.max_steps.min(u64::from(u32::MAX)), vb.signed);
        format!(
            "{{
  let q = (words[{wd}] - steps) / {s}u;
  let on = cmp32({i}, {n}, {c}u, {signed}, {bits}u) != 0u;
  let d = select(select(0u, 0xffffffffu, ({i} & msk({bits}u)) == {edge}u), ({d}) & msk({bits}u), on);
{lets}  if (!(steps <= words[{wd}] && {fits}{also})) {{ atomicStore(&wg_wdslow, 1u); }}
}}
workgroupBarrier();
if (lidx == 0u) {{ wg_wdfast = select(0u, 1u, atomicLoad(&wg_wdslow) == 0u); atomicStore(&wg_wdslow, 0u); }}
wdok{h} = workgroupUniformLoad(&wg_wdfast);
",
            c = cmp as u32,
            fits = if vb.step_first { "max(d, 1u) <= q" } else { "d < q" },
            also = if also.is_empty() {
                String::new()
            } else {
                format!(" && {also}")
            }
        )
    }

    /// The PTX line a watchdog fault at block `i` names: its first
    /// statement's, or its terminator's where that has one.
    fn header_line(&self, i: usize) -> u32 {
        let b = &self.k.blocks[i];
        b.stmts
            .first()
            .map(|s| s.line)
            .or(match b.term {
                Term::Barrier { line, .. } | Term::Trap { line } | Term::Warp { line, .. } => {
                    Some(line)
                }
                _ => None,
            })
            .unwrap_or(0)
    }
}
