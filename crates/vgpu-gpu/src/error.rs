//! The error type of the GPU runtime, the kernel cache and the matmul.

/// Everything that can go wrong in `vgpu-gpu`. Each message names the place:
/// the kernel (label and entry point), the binding, or the matrix shapes.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum GpuError {
    /// `VGPU_BACKEND` holds something other than `auto`, `gpu` or `cpu`.
    #[error("VGPU_BACKEND={value:?}: expected one of auto, gpu, cpu")]
    BadBackendEnv {
        /// The value found in the environment.
        value: String,
    },
    /// A GPU was required (`VGPU_BACKEND=gpu` or `--backend gpu`) but wgpu found no adapter.
    #[error("a GPU was required (VGPU_BACKEND=gpu) but no GPU adapter was found (WGPU_BACKEND={wgpu_backend}): {reason}")]
    NoAdapter {
        /// The value of `WGPU_BACKEND`, or `unset`.
        wgpu_backend: String,
        /// What wgpu said.
        reason: String,
    },
    /// The adapter exists but refused to create a device.
    #[error("adapter {adapter:?} refused to create a device: {reason}")]
    DeviceRequest {
        /// The adapter's name.
        adapter: String,
        /// What wgpu said.
        reason: String,
    },
    /// The device was lost (driver reset, out of memory, destroyed).
    #[error("the GPU device {adapter:?} was lost: {reason}")]
    DeviceLost {
        /// The adapter's name.
        adapter: String,
        /// The reason the driver reported.
        reason: String,
    },
    /// The WGSL source did not compile, or the pipeline could not be created.
    #[error("kernel {label:?} (entry {entry:?}): compilation failed: {message}")]
    Compile {
        /// The kernel's label.
        label: String,
        /// The entry point.
        entry: String,
        /// The compiler's message (with the WGSL line:column where naga gives one).
        message: String,
    },
    /// A binding given to a dispatch is unusable.
    #[error("kernel {label:?}: binding {index}: {reason}")]
    Binding {
        /// The kernel's label.
        label: String,
        /// The binding index (`@binding(index)` in group 0).
        index: usize,
        /// What is wrong with it.
        reason: String,
    },
    /// The dispatch (upload, encode, submit, readback) failed on the device.
    #[error("kernel {label:?}: dispatch of {workgroups:?} workgroups failed: {message}")]
    Dispatch {
        /// The kernel's label.
        label: String,
        /// The workgroup counts requested.
        workgroups: [u32; 3],
        /// What wgpu reported.
        message: String,
    },
    /// The inner dimensions of a matrix product differ.
    #[error("matmul: inner dimensions differ: A is {}×{} but B is {}×{} (A's columns must equal B's rows)", a.0, a.1, b.0, b.1)]
    ShapeMismatch {
        /// A's shape (rows, columns).
        a: (usize, usize),
        /// B's shape (rows, columns).
        b: (usize, usize),
    },
    /// A matrix with a zero dimension was given.
    #[error("matmul: {operand} is empty ({}×{}); both matrices need at least one row and one column", shape.0, shape.1)]
    EmptyMatrix {
        /// `"A"` or `"B"`.
        operand: &'static str,
        /// The stated shape.
        shape: (usize, usize),
    },
    /// The data length does not match the stated shape.
    #[error("matmul: {operand} has {len} elements but its stated shape {}×{} needs {expected}", shape.0, shape.1)]
    DataLength {
        /// `"A"` or `"B"`.
        operand: &'static str,
        /// The stated shape.
        shape: (usize, usize),
        /// The number of elements given.
        len: usize,
        /// rows × columns.
        expected: usize,
    },
    /// A matrix is larger than the device (or the address space) can hold.
    #[error("matmul: {operand} ({}×{}) is too large: {reason}", shape.0, shape.1)]
    TooLarge {
        /// `"A"`, `"B"` or `"C"`.
        operand: &'static str,
        /// Its shape.
        shape: (usize, usize),
        /// Which limit it exceeds.
        reason: String,
    },
    /// A matmul tile configuration string or value is invalid.
    #[error("matmul tile {tile:?}: {reason}")]
    BadTile {
        /// The tile as given.
        tile: String,
        /// What is wrong.
        reason: String,
    },
    /// The operands of a fused kernel (`relu`, `bias_add`, `softmax`,
    /// `matmul_bias_relu`) do not fit together: an empty input, data that does
    /// not fill its stated shape, a bias whose length is not the number of columns.
    #[error("{op}: {reason}")]
    FusedShape {
        /// The fused kernel.
        op: &'static str,
        /// What does not fit, naming the shapes.
        reason: String,
    },
    /// A control-flow kernel (compiled PTX) cannot be launched as asked: over an
    /// adapter limit (named), or not expressible in WGSL.
    #[error("kernel {kernel:?} on the GPU: {msg}")]
    CfgLaunch {
        /// The kernel's name.
        kernel: String,
        /// What is wrong, with the limit or instruction named.
        msg: String,
    },
    /// `VGPU_PTX_EXACT_FMA` holds none of its values.
    #[error("VGPU_PTX_EXACT_FMA={value:?}: expected one of auto, emulate, native, flush-model")]
    BadFmaEnv {
        /// The value found.
        value: String,
    },
    /// `VGPU_PTX_CONTROL` holds none of its values.
    #[error("VGPU_PTX_CONTROL={value:?}: expected one of auto, switch")]
    BadControlEnv {
        /// The value found.
        value: String,
    },
    /// `VGPU_PTX_ATOMIC_F32` holds none of its values.
    #[error("VGPU_PTX_ATOMIC_F32={value:?}: expected one of auto, cas, native")]
    BadAtomicEnv {
        /// The value found.
        value: String,
    },
    /// A fused kernel's IR could not be built or run (its generated code, not
    /// the caller's data: a VGPU bug).
    #[error("fused kernel {op}: {message}")]
    FusedKernel {
        /// The fused kernel.
        op: &'static str,
        /// The IR's message.
        message: String,
    },
}

impl From<vgpu_ir::wgsl::matmul_tile::BadTile> for GpuError {
    fn from(e: vgpu_ir::wgsl::matmul_tile::BadTile) -> Self {
        GpuError::BadTile {
            tile: e.tile,
            reason: e.reason,
        }
    }
}
