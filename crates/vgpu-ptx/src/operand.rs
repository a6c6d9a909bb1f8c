//! The operands of a decoded instruction: a source (a register or an
//! immediate) and an address (a base plus a byte offset).

/// A source operand.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Src {
    /// A register, by index.
    Reg(u32),
    /// An immediate, as bits.
    Imm(u64),
}

/// An address operand: base plus byte offset.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Addr {
    /// A register holding the base, or an absolute base (a symbol's address).
    pub base: Src,
    /// The byte offset.
    pub off: i64,
}
