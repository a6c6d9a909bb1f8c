//! An instruction's modifiers (the dotted parts after the opcode) and what
//! they say: its types and its rounding mode.

use crate::float::Rnd;
use crate::types::Ty;

/// Modifiers of an instruction (the dotted parts after the opcode).
pub(crate) struct Mods<'a>(pub &'a [String]);

impl Mods<'_> {
    pub(crate) fn has(&self, m: &str) -> bool {
        self.0.iter().any(|s| s == m)
    }
    /// The types among the modifiers, in order.
    pub(crate) fn types(&self) -> Vec<Ty> {
        self.0.iter().filter_map(|s| Ty::parse(s)).collect()
    }
    /// The last type (the instruction type).
    pub(crate) fn ty(&self) -> Option<Ty> {
        self.types().last().copied()
    }
    /// The floating rounding modifier, `.rn` when absent.
    pub(crate) fn rnd(&self) -> Rnd {
        if self.has("rz") {
            Rnd::Z
        } else if self.has("rm") {
            Rnd::M
        } else if self.has("rp") {
            Rnd::P
        } else {
            Rnd::N
        }
    }
    /// The integer rounding modifier (`.rni` …), if any.
    pub(crate) fn irnd(&self) -> Option<Rnd> {
        if self.has("rni") {
            Some(Rnd::N)
        } else if self.has("rzi") {
            Some(Rnd::Z)
        } else if self.has("rmi") {
            Some(Rnd::M)
        } else if self.has("rpi") {
            Some(Rnd::P)
        } else {
            None
        }
    }
}
