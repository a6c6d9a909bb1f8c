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

use super::access::element_align;
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
        (0..d.len()).all(|i| {
            let align = element_align(size, d.len(), i);
            self.proven(
                Space::Shared,
                s,
                off + i as i64 * size as i64,
                (size, align),
            )
        })
    }

    /// Statement `s`'s code under its guard (a load whose notes wait adds
    /// them to the waiting ones), and before it the waiting notes where `s`
    /// must follow them: it touches memory in another way. The two are
    /// apart, as a block's pieces may be split into cases between them, never
    /// inside one.
    pub(super) fn pieces(&mut self, s: &Stmt) -> Result<[String; 2], IrError> {
        let defers = self.defers_shadow_reads(s);
        let memory = matches!(
            s.inst,
            Inst::Load { .. } | Inst::Store { .. } | Inst::Atom { .. }
        );
        let notes = if memory && !defers {
            self.flush_reads()
        } else {
            String::new()
        };
        self.defer_reads = defers;
        let code = self.guarded(s);
        self.defer_reads = false;
        Ok([notes, code?])
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
