//! The facade's error type: every crate's error, wrapped.

/// Any error VGPU returns. Each variant wraps the error of one part of VGPU and
/// keeps its message (which names the place: file:line:col, shapes, thread/block).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Reading or writing a file failed.
    #[error("{path}: {source}")]
    Io {
        /// The file involved.
        path: String,
        /// The underlying I/O error.
        source: std::io::Error,
    },
    /// The GPU runtime, kernel cache or matmul failed (shapes, adapter, kernel named).
    #[error(transparent)]
    Gpu(#[from] vgpu_gpu::GpuError),
    /// The field engine refused a launch or a state went non-finite (dimensions,
    /// step, buffer lengths, trajectory/block/thread and time named).
    #[error(transparent)]
    Field(#[from] vgpu_field::FieldError),
    /// The PTX front end: parse error (file:line:col), unsupported instruction
    /// (line), launch problem, or a checker fault (class, entry, block, thread, line).
    #[error(transparent)]
    Ptx(#[from] vgpu_ptx::PtxError),
    /// A command-line or input problem the facade itself detected.
    #[error("{0}")]
    Usage(String),
    /// A size taken from input exceeds a resource limit ([`crate::limits`]),
    /// refused before anything was allocated.
    #[error("{quantity} needs {need}, over the limit of {limit} (raise it with {flag})")]
    Limit {
        /// What was asked for (names the option or file it came from).
        quantity: String,
        /// How much it needs.
        need: String,
        /// The limit in force.
        limit: String,
        /// The option that raises the limit.
        flag: &'static str,
    },
    /// A `.field` kernel: parse, type, argument or launch error (names the place).
    #[error(transparent)]
    Ir(#[from] vgpu_ir::IrError),
    /// An adaptive ensemble's options or shapes (naming the option or the shapes).
    #[error(transparent)]
    Adaptive(#[from] vgpu_field::adaptive::AdaptiveError),
    /// A GPU ensemble failure that is neither the kernel's (`Ir`) nor the
    /// device's (`Gpu`); those two arrive as their own variants.
    #[error(transparent)]
    Ensemble(Box<vgpu_gpu::EnsembleError>),
}
