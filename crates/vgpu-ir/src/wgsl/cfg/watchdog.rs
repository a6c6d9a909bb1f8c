//! The watchdog of checked kernels: each thread counts the instructions it
//! runs (each block's statements and its terminator) and faults where the
//! count passes the launch's limit (`meta::WATCHDOG`), tested at loop
//! headers, which every endless execution passes. The structured form's
//! loops with barriers add a count of iterations alike in every thread
//! (structured.rs).
//!
//! Its tests are a quarter of checked `reduce_sum_atomic`'s time on the H100
//! and 4 ms of checked `matmul_tiled`'s (session 24, `check_variants`
//! `nosteps`); a loop with barriers that only noted the fault and took it at
//! the block's end, later faults kept out by a test in `raise` (0e8ffde,
//! 9b13186), made `reduce_sum_atomic` faster (0.318–0.346 ms against 0.366)
//! but `matmul_tiled` slower (59.6–60.4 ms against 54.1), so the fault is
//! raised where the count passes the limit.

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
        let b = &self.k.blocks[i];
        let n = b.stmts.len() + 1;
        if !header {
            return format!("        steps = steps + {n}u;\n");
        }
        let line = b
            .stmts
            .first()
            .map(|s| s.line)
            .or(match b.term {
                Term::Barrier { line, .. } | Term::Trap { line } | Term::Warp { line, .. } => {
                    Some(line)
                }
                _ => None,
            })
            .unwrap_or(0);
        format!(
            "        steps = steps + {n}u;\n        if (steps > words[{}]) {{ raise({}u, {line}u, vec2<u32>(0u, 0u)); {exit} }}\n",
            meta::WATCHDOG,
            fault::CLASS_WATCHDOG
        )
    }
}
