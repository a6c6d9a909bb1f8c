//! Errors of the PTX front end: parse errors with `file:line:col`, unsupported
//! instructions with their line, launch problems, and runtime faults found by the
//! checker (class, entry, block, thread, PTX line).

use std::fmt;

/// The class of a runtime fault, as the checker names it (the strings of the
/// `expect_error` key of a case.json).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FaultClass {
    /// An access outside every allocation of its state space.
    OutOfBounds,
    /// An access whose address is not a multiple of its size.
    Misaligned,
    /// A barrier not reached by every (non-exited) thread of its block, or reached
    /// at different places.
    Barrier,
    /// Shared memory written by one thread and read or written by another with no
    /// barrier between.
    Race,
    /// A read of shared memory that nothing wrote.
    Uninitialized,
    /// The step limit ran out: the kernel does not finish.
    Watchdog,
    /// The kernel executed `trap` (or `brkpt`).
    Trap,
}

impl FaultClass {
    /// The class's name, e.g. `out-of-bounds`.
    pub fn as_str(self) -> &'static str {
        match self {
            FaultClass::OutOfBounds => "out-of-bounds",
            FaultClass::Misaligned => "misaligned",
            FaultClass::Barrier => "barrier",
            FaultClass::Race => "race",
            FaultClass::Uninitialized => "uninitialized",
            FaultClass::Watchdog => "watchdog",
            FaultClass::Trap => "trap",
        }
    }

    /// Parses a class name (`out-of-bounds`, `misaligned`, …).
    pub fn parse(s: &str) -> Option<FaultClass> {
        Some(match s {
            "out-of-bounds" => FaultClass::OutOfBounds,
            "misaligned" => FaultClass::Misaligned,
            "barrier" => FaultClass::Barrier,
            "race" => FaultClass::Race,
            "uninitialized" => FaultClass::Uninitialized,
            "watchdog" => FaultClass::Watchdog,
            "trap" => FaultClass::Trap,
            _ => return None,
        })
    }
}

impl fmt::Display for FaultClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A runtime fault: what went wrong, and where (entry, block, thread, PTX line).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fault {
    /// The class of the fault.
    pub class: FaultClass,
    /// The kernel entry that was running.
    pub entry: String,
    /// The block index (`%ctaid`).
    pub block: [u32; 3],
    /// The thread index inside the block (`%tid`).
    pub thread: [u32; 3],
    /// The line of the PTX instruction, 1-based.
    pub line: u32,
    /// What happened, in words (address, size, the other thread, …).
    pub detail: String,
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: entry `{}`, block ({},{},{}), thread ({},{},{}), PTX line {}: {}",
            self.class,
            self.entry,
            self.block[0],
            self.block[1],
            self.block[2],
            self.thread[0],
            self.thread[1],
            self.thread[2],
            self.line,
            self.detail
        )
    }
}

/// Any error of the PTX front end.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PtxError {
    /// The PTX text does not parse.
    #[error("{file}:{line}:{col}: {msg}")]
    Parse {
        /// The file (or `<ptx>` for text given directly).
        file: String,
        /// 1-based line.
        line: u32,
        /// 1-based column.
        col: u32,
        /// What was found and what was expected.
        msg: String,
    },
    /// An instruction or construct VGPU does not execute (never skipped).
    #[error("{file}:{line}: unsupported `{what}`: {why}")]
    Unsupported {
        /// The file.
        file: String,
        /// 1-based line.
        line: u32,
        /// The instruction (opcode with its modifiers) or construct.
        what: String,
        /// Why it cannot run.
        why: String,
    },
    /// A semantic problem in a well-formed module (unknown register, label, …).
    #[error("{file}:{line}: {msg}")]
    Semantic {
        /// The file.
        file: String,
        /// 1-based line.
        line: u32,
        /// What is wrong.
        msg: String,
    },
    /// The launch itself is wrong (missing entry, argument count or type, geometry).
    #[error("launch of `{entry}`: {msg}")]
    Launch {
        /// The entry asked for.
        entry: String,
        /// What is wrong.
        msg: String,
    },
    /// A runtime fault the checker found.
    #[error("{0}")]
    Fault(Box<Fault>),
    /// A size taken from input exceeds a resource limit ([`crate::limits`]),
    /// refused before anything was allocated.
    #[error("{quantity} needs {need}, over the limit of {limit} (raise it with {flag})")]
    Limit {
        /// What was asked for (names the geometry, buffer or file it came from).
        quantity: String,
        /// How much it needs.
        need: String,
        /// The limit in force.
        limit: String,
        /// The option of `vgpu ptx run` that raises the limit.
        flag: &'static str,
    },
    /// A case.json or buffer file problem.
    #[error("{path}: {msg}")]
    Case {
        /// The file involved.
        path: String,
        /// What is wrong.
        msg: String,
    },
}

impl PtxError {
    /// The fault, when this error is a runtime fault.
    pub fn fault(&self) -> Option<&Fault> {
        match self {
            PtxError::Fault(f) => Some(f),
            _ => None,
        }
    }
}

/// A memory fault before it gets its place (entry, block, thread, line).
#[derive(Debug)]
pub(crate) struct MemFault {
    pub class: FaultClass,
    pub detail: String,
}
