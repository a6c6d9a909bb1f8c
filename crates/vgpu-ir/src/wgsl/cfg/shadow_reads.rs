//! The initialisation check's reads of shared memory, grouped.
//!
//! A checked kernel notes each read of shared memory for the
//! initialisation check (`sh_rd`: is the byte written yet?), which costs a
//! branch per load even once all of shared memory is written (`sh_full`),
//! when the note does nothing. A load proven in bounds (ranges.rs) cannot
//! fault, so its note may wait: the notes of such loads, unguarded, are
//! collected and written once, under one `if (!sh_full)`, before the next
//! statement that touches memory in any other way (a store could write the
//! byte read, an access could fault first), at the end of the statements and
//! at the end of a speculative region's copy. The shadow bits a note reads do
//! not change in between (only this thread's stores and other threads'
//! writes, which the check judges at the interval's end, set them), so each
//! note finds what it would have found at its load, in the same order (the
//! first pending read keeps its line). Not with the race check, whose marks
//! each access makes at once.

use super::writer::KernelWriter;
use crate::cfg::{Inst, Space, Stmt};
use crate::error::IrError;

impl KernelWriter<'_> {
    /// Whether statement `s` is a load of shared memory whose
    /// initialisation-check notes may wait (module documentation): checked
    /// with the shadow and without the race check, unguarded, every element
    /// proven in bounds and aligned.
    pub(super) fn defers_shadow_reads(&self, s: &Stmt) -> bool {
        let Inst::Load {
            space: Space::Shared,
            size,
            ref d,
            off,
            ..
        } = s.inst
        else {
            return false;
        };
        if !(self.o.checked && self.shadow && !self.race) || s.guard.is_some() {
            return false;
        }
        let total = size as u32 * d.len() as u32;
        (0..d.len()).all(|i| {
            let align = if i == 0 { total.min(16) } else { size as u32 };
            self.proven(
                Space::Shared,
                s,
                off + i as i64 * size as i64,
                (size, align),
            )
        })
    }

    /// Statement `s`'s code under its guard; a load whose notes wait adds
    /// them to the waiting ones.
    pub(super) fn piece(&mut self, s: &Stmt) -> Result<String, IrError> {
        self.defer_reads = self.defers_shadow_reads(s);
        let code = self.guarded(s);
        self.defer_reads = false;
        code
    }

    /// The waiting notes where statement `s` must follow them: it touches
    /// memory in another way than a load whose notes wait. Written as a
    /// piece of its own (a block's pieces may be split into cases between
    /// them, never inside one).
    pub(super) fn flush_before(&mut self, s: &Stmt) -> String {
        let memory = matches!(
            s.inst,
            Inst::Load { .. } | Inst::Store { .. } | Inst::Atom { .. }
        );
        if memory && !self.defers_shadow_reads(s) {
            self.flush_reads()
        } else {
            String::new()
        }
    }

    /// The waiting notes, once, under `if (!sh_full)` (empty when none
    /// wait).
    pub(super) fn flush_reads(&mut self) -> String {
        if self.waiting_reads.is_empty() {
            return String::new();
        }
        let notes = std::mem::take(&mut self.waiting_reads);
        format!("        if (!sh_full) {{\n{}        }}\n", notes.concat())
    }
}
