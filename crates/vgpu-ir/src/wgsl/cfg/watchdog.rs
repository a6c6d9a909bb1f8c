//! The watchdog of checked kernels: each thread counts the instructions it
//! runs (each block's statements and its terminator) and faults where the
//! count passes the launch's limit (`meta::WATCHDOG`), tested at loop
//! headers, which every endless execution passes. The structured form's
//! loops with barriers add a count of iterations alike in every thread
//! (structured.rs).

use super::writer::{KernelWriter, EXIT};
use super::{fault, meta};
use crate::cfg::Term;

impl KernelWriter<'_> {
    /// The watchdog's code at the start of block `i` of a checked kernel: it
    /// counts instructions (each block's statements and its terminator) and
    /// is checked at loop headers, which every endless execution passes.
    pub(super) fn watchdog(&self, i: usize, header: bool) -> String {
        self.watchdog_exiting(i, header, EXIT)
    }

    /// [`Self::watchdog`] with `exit` as the statement that follows a
    /// watchdog fault.
    pub(super) fn watchdog_exiting(&self, i: usize, header: bool, exit: &str) -> String {
        if !self.o.checked {
            return String::new();
        }
        let n = self.k.blocks[i].stmts.len() + 1;
        if !header {
            return format!("        steps = steps + {n}u;\n");
        }
        format!(
            "        steps = steps + {n}u;\n        if (steps > words[{}]) {{ raise({}u, {}u, vec2<u32>(0u, 0u)); {exit} }}\n",
            meta::WATCHDOG,
            fault::CLASS_WATCHDOG,
            self.header_line(i)
        )
    }

    /// The watchdog at header `i` of a loop with barriers in the structured
    /// form, where a fault does not end the thread (the loop's uniform count
    /// of iterations does): the first time the count passes the limit the
    /// thread only notes the header's line and the barriers passed
    /// (`wd_note`); the thread keeps no later fault, and the block's end
    /// takes the noted one as the thread's (checks.rs, `wd_take`), as early
    /// as if raised here. Measured on the H100 (session 24, `check_variants`
    /// `wdg`), `raise`'s body in the loop cost checked `matmul_tiled` 2.4 ms
    /// and `reduce_sum_atomic` 0.038 ms; taking the noted fault in every
    /// `raise` instead of the test there cost `matmul_tiled` 6 ms (call 3).
    /// The thread's stores after the noted fault still run (a raised one
    /// skips them); they can change only faults of a later time, which lose
    /// to it.
    pub(super) fn watchdog_noted(&self, i: usize) -> String {
        if !self.o.checked {
            return String::new();
        }
        let n = self.k.blocks[i].stmts.len() + 1;
        format!(
            "        steps = steps + {n}u;\n        if (steps > words[{}]) {{ wd_note({}u); }}\n",
            meta::WATCHDOG,
            self.header_line(i)
        )
    }

    /// The PTX line a watchdog fault at block `i` names: its first
    /// statement's, else its terminator's where it has one.
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
