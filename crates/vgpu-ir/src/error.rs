//! The errors of the kernel IR: parse and type errors name `file:line:col`,
//! launch errors name the parameter, buffer, trajectory or state involved.

/// A position in `.field` text (1-based line and column).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Hash)]
pub struct Pos {
    /// Line, from 1.
    pub line: u32,
    /// Column (in characters), from 1.
    pub col: u32,
}

impl std::fmt::Display for Pos {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.line, self.col)
    }
}

/// Every error of the kernel IR, its front end and its executors.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum IrError {
    /// The text does not follow the grammar.
    #[error("{file}:{pos}: expected {expected}, found {found}")]
    Parse {
        /// The source name (a file path, or `<text>`).
        file: String,
        /// Where.
        pos: Pos,
        /// What the grammar allows here.
        expected: String,
        /// What was found.
        found: String,
    },
    /// The text parses but is ill-typed or ill-formed (unknown name, wrong type, …).
    #[error("{file}:{pos}: {message}")]
    Type {
        /// The source name.
        file: String,
        /// Where.
        pos: Pos,
        /// What is wrong, naming the variable.
        message: String,
    },
    /// A parameter was given that the kernel does not declare.
    #[error("kernel `{kernel}` has no parameter `{name}` (it has: {known})")]
    UnknownParam {
        /// Kernel name.
        kernel: String,
        /// The parameter given.
        name: String,
        /// The declared parameters, comma-separated.
        known: String,
    },
    /// A declared parameter was not given.
    #[error("kernel `{kernel}`: parameter `{name}` ({what}) was not given")]
    MissingParam {
        /// Kernel name.
        kernel: String,
        /// The parameter.
        name: String,
        /// Its declared kind, e.g. `f32[]` or `f32`.
        what: String,
    },
    /// A parameter was given with the wrong kind or type.
    #[error("kernel `{kernel}`: parameter `{name}` is declared {expected}, got {got}")]
    ParamType {
        /// Kernel name.
        kernel: String,
        /// The parameter.
        name: String,
        /// Its declared kind.
        expected: String,
        /// What was given.
        got: String,
    },
    /// A buffer was read outside its length.
    #[error("kernel `{kernel}`: buffer `{buffer}` has {len} elements but trajectory {trajectory} (block {block}, thread {thread}) reads index {index} at {file}:{pos}")]
    OutOfBounds {
        /// Kernel name.
        kernel: String,
        /// The buffer (or shared sub-field / flux output) read or written.
        buffer: String,
        /// Its length.
        len: usize,
        /// The index used (as a signed number: negative indices show as such).
        index: i64,
        /// Global trajectory index.
        trajectory: usize,
        /// Block index.
        block: usize,
        /// Thread index inside the block.
        thread: usize,
        /// Source name.
        file: String,
        /// The access's place in the source.
        pos: Pos,
    },
    /// A state became NaN or infinite.
    #[error("kernel `{kernel}`: state `{state}` of trajectory {trajectory} is {value} at the end of the integration (t = {t})")]
    NonFinite {
        /// Kernel name.
        kernel: String,
        /// The state variable.
        state: String,
        /// The trajectory.
        trajectory: usize,
        /// The value (NaN or ±inf).
        value: f64,
        /// The time reached.
        t: f64,
    },
    /// The launch itself is malformed (bad n, dt, span, block size, method).
    #[error("kernel `{kernel}`: {message}")]
    Launch {
        /// Kernel name.
        kernel: String,
        /// What is wrong.
        message: String,
    },
    /// The kernel uses something a backend cannot run.
    #[error("kernel `{kernel}` cannot run on {backend}: {reason}")]
    Unsupported {
        /// Kernel name.
        kernel: String,
        /// The backend (`gpu`, `wgsl`).
        backend: String,
        /// Why.
        reason: String,
    },
    /// Two trajectories drove one element of a float shared sub-field in one step,
    /// which has no deterministic order on a GPU.
    #[error("kernel `{kernel}`: {message}")]
    Conflict {
        /// Kernel name.
        kernel: String,
        /// What collided.
        message: String,
    },
    /// A size taken from the input (a shared sub-field's bytes per block, flux
    /// elements, phase repetitions) is over a limit of [`crate::Limits`]; refused
    /// before anything of that size is allocated or compiled.
    #[error(
        "{file}:{pos}: kernel `{kernel}`: {quantity} {value} {unit}, over the limit of {limit} {unit} (raise `Limits::{field}`)",
        unit = .kind.unit(),
        field = .kind.field()
    )]
    Limit {
        /// Kernel name.
        kernel: String,
        /// Source name.
        file: String,
        /// The declaration that asks for it.
        pos: Pos,
        /// What is too large, naming the declaration (e.g. ``shared `s` takes``).
        quantity: String,
        /// How much it asks for (saturated at `u64::MAX`).
        value: u64,
        /// The limit.
        limit: u64,
        /// Which limit: [`crate::LimitKind::field`] names the [`crate::Limits`]
        /// field that raises it, for front ends to name their own option.
        kind: crate::LimitKind,
    },
    /// A kernel's IR is ill-formed (an operation on types it is not defined on,
    /// an operand after its user, …): a kernel built by hand, or a bug in the
    /// type checker. See [`crate::Kernel::validate`].
    #[error("kernel `{kernel}` is malformed: {message}")]
    Malformed {
        /// Kernel name.
        kernel: String,
        /// What is wrong.
        message: String,
    },
    /// The generated WGSL failed naga validation (a bug in the emitter).
    #[error("kernel `{kernel}`: generated WGSL does not validate: {message}")]
    Wgsl {
        /// Kernel name.
        kernel: String,
        /// naga's message.
        message: String,
    },
}

impl IrError {
    pub(crate) fn ty(file: &str, pos: Pos, message: impl Into<String>) -> IrError {
        IrError::Type {
            file: file.to_string(),
            pos,
            message: message.into(),
        }
    }
}
