//! Fused kernels generated from the kernel IR (`.field` text compiled once per
//! process): `relu`, `bias_add`, `bias_relu`, row-wise `softmax`, and the
//! epilogue of `matmul_bias_relu`. Each runs on the GPU of a [`KernelCache`]
//! (one compiled kernel whatever the shape: sizes travel in launch words) or,
//! when no cache is given, on the CPU through the field engine's phased launch
//! (the IR's column evaluator giving the jumps; see [`jumps`]). The
//! methods of [`crate::VgpuCache`] wrap these with counting and fallback.
//!
//! Every kernel is a field of jumps (`y := e`, the exact flow of a unit step;
//! see [`jumps`]): an element-wise kernel is one step per element, so its
//! result is `e` rounded once, the same on both backends up to the rounding of
//! `exp` (the GPU's may differ from the CPU's by a few ulp).
//!
//! Row-wise softmax is computation as integration: one trajectory per row
//! integrates `cols` unit steps, ⌊t⌋ being the column, with the online
//! softmax's jumps `m := max(m, x)` and `s := s·e^(m − m') + e^(x − m')`, from
//! `m = −∞, s = 0`; then an element-wise kernel writes `e^(x − m)/s`. A `−∞`
//! element contributes 0 (a row of only `−∞` gives NaN, as `x − max(x)` does); a
//! NaN or `+∞` in a row makes the whole row NaN, as in numpy.

pub mod jumps;
mod methods;

use crate::{GpuError, KernelCache};
use jumps::JumpKernel;
use std::sync::OnceLock;
use vgpu_ir::kernel::Node;
use vgpu_ir::wgsl::emit_expressions;
use vgpu_ir::{Args, IrError, Value};

// `relu` as `select(v < 0, 0, v)`, not `max(v, 0)`: a NaN stays NaN on every
// backend (WGSL leaves `max` with a NaN operand to the implementation).
const RELU: &str =
    "field relu(x: f32[]) { state y = 0.0; let v = x[i]; y := select(v < 0.0, 0.0, v); }";
const BIAS_ADD: &str =
    "field bias_add(x: f32[], b: f32[], cols: u32) { state y = 0.0; y := x[i] + b[i % cols]; }";
/// Also the epilogue of `matmul_bias_relu` (see [`epilogue_wgsl`]).
const BIAS_RELU: &str = "field bias_relu(x: f32[], b: f32[], cols: u32) {
    state y = 0.0;
    let v = x[i] + b[i % cols];
    y := select(v < 0.0, 0.0, v);
}";
const SOFTMAX_ROWS: &str = "field softmax_rows(x: f32[], cols: u32) {
    state m = -1.0 / 0.0, s = 0.0;
    let v = x[i * cols + u32(t)];
    let mn = max(m, v);
    m := mn;
    s := s * select(m == mn, 1.0, exp(m - mn)) + select(v == -1.0 / 0.0, 0.0, exp(v - mn));
}";
const SOFTMAX_NORM: &str = "field softmax_norm(x: f32[], ms: f32[], cols: u32) {
    state y = 0.0;
    let r = i / cols;
    y := exp(x[i] - ms[2u * r]) / ms[2u * r + 1u];
}";

/// The fused kernels, compiled once per process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Op {
    Relu,
    BiasAdd,
    BiasRelu,
    SoftmaxRows,
    SoftmaxNorm,
}

impl Op {
    fn name(self) -> &'static str {
        match self {
            Op::Relu => "relu",
            Op::BiasAdd => "bias_add",
            Op::BiasRelu => "bias_relu",
            Op::SoftmaxRows => "softmax_rows",
            Op::SoftmaxNorm => "softmax_norm",
        }
    }

    fn source(self) -> &'static str {
        match self {
            Op::Relu => RELU,
            Op::BiasAdd => BIAS_ADD,
            Op::BiasRelu => BIAS_RELU,
            Op::SoftmaxRows => SOFTMAX_ROWS,
            Op::SoftmaxNorm => SOFTMAX_NORM,
        }
    }

    pub(crate) fn kernel(self) -> Result<&'static JumpKernel, GpuError> {
        static KERNELS: [OnceLock<Result<JumpKernel, GpuError>>; 5] = [
            OnceLock::new(),
            OnceLock::new(),
            OnceLock::new(),
            OnceLock::new(),
            OnceLock::new(),
        ];
        KERNELS[self as usize]
            .get_or_init(|| JumpKernel::new(self.name(), self.source()))
            .as_ref()
            .map_err(Clone::clone)
    }
}

fn shape_err(op: &'static str, reason: String) -> GpuError {
    GpuError::FusedShape { op, reason }
}

/// Checks a row-major `rows × cols` matrix given as a slice; returns the element count.
pub(crate) fn check_matrix(
    op: &'static str,
    name: &str,
    x: &[f32],
    (rows, cols): (usize, usize),
) -> Result<usize, GpuError> {
    if rows == 0 || cols == 0 {
        return Err(shape_err(
            op,
            format!("{name} is empty ({rows}×{cols}); it needs at least one row and one column"),
        ));
    }
    let len = rows
        .checked_mul(cols)
        .filter(|&l| l <= u32::MAX as usize)
        .ok_or_else(|| {
            shape_err(
                op,
                format!("{name} ({rows}×{cols}) has more than 2^32 elements"),
            )
        })?;
    if x.len() != len {
        return Err(shape_err(
            op,
            format!(
                "{name} has {} elements but its stated shape {rows}×{cols} needs {len}",
                x.len()
            ),
        ));
    }
    Ok(len)
}

/// Checks that `b` is a bias for `cols` columns.
pub(crate) fn check_bias(op: &'static str, b: &[f32], cols: usize) -> Result<(), GpuError> {
    if b.len() != cols {
        return Err(shape_err(
            op,
            format!(
                "the bias has {} elements but the matrix has {cols} columns (one bias per column)",
                b.len()
            ),
        ));
    }
    Ok(())
}

/// Runs `op` over `n` trajectories of `steps` unit steps with buffers and `cols`.
pub(crate) fn run(
    op: Op,
    buffers: &[(&str, &[f32])],
    cols: Option<usize>,
    n: usize,
    steps: usize,
    cache: Option<&mut KernelCache>,
) -> Result<Vec<f32>, GpuError> {
    let jk = op.kernel()?;
    let mut args = Args::new(&jk.kernel);
    let fill = |a: &mut Args| -> Result<(), IrError> {
        for (name, data) in buffers {
            a.buffer(name, data.to_vec())?;
        }
        if let Some(c) = cols {
            a.scalar("cols", Value::U32(c as u32))?;
        }
        Ok(())
    };
    fill(&mut args).map_err(|e| GpuError::FusedKernel {
        op: op.name(),
        message: e.to_string(),
    })?;
    match cache {
        Some(c) => jk.run_gpu(c, &args, n, steps),
        None => jk.run_cpu(&args, n, steps),
    }
}

/// `max(x, 0)` element-wise; on the GPU of `cache`, or the CPU when `None`.
///
/// # Errors
/// An empty input ([`GpuError::FusedShape`]), GPU errors.
pub fn relu(x: &[f32], cache: Option<&mut KernelCache>) -> Result<Vec<f32>, GpuError> {
    check_matrix("relu", "x", x, (1, x.len()))?;
    run(Op::Relu, &[("x", x)], None, x.len(), 1, cache)
}

/// `x[r, c] + b[c]` for a row-major `x` of `b.len()` columns.
///
/// # Errors
/// A shape mismatch (`x.len()` not a multiple of `b.len()`, or empty), GPU errors.
pub fn bias_add(
    x: &[f32],
    b: &[f32],
    cache: Option<&mut KernelCache>,
) -> Result<Vec<f32>, GpuError> {
    with_bias(Op::BiasAdd, x, b, cache)
}

/// `max(x[r, c] + b[c], 0)` for a row-major `x` of `b.len()` columns: the
/// kernel that is also `matmul_bias_relu`'s epilogue.
///
/// # Errors
/// As [`bias_add`].
pub fn bias_relu(
    x: &[f32],
    b: &[f32],
    cache: Option<&mut KernelCache>,
) -> Result<Vec<f32>, GpuError> {
    with_bias(Op::BiasRelu, x, b, cache)
}

/// Runs a one-step kernel of `x` and a bias `b` (one per column).
fn with_bias(
    op: Op,
    x: &[f32],
    b: &[f32],
    cache: Option<&mut KernelCache>,
) -> Result<Vec<f32>, GpuError> {
    let (_, cols) = rows_of(op.name(), x, b)?;
    run(op, &[("x", x), ("b", b)], Some(cols), x.len(), 1, cache)
}

fn rows_of(op: &'static str, x: &[f32], b: &[f32]) -> Result<(usize, usize), GpuError> {
    if b.is_empty() || x.len() % b.len() != 0 {
        return Err(shape_err(
            op,
            format!(
                "x has {} elements, not a whole number of rows of {} columns (the bias's length)",
                x.len(),
                b.len()
            ),
        ));
    }
    let shape = (x.len() / b.len(), b.len());
    check_matrix(op, "x", x, shape)?;
    Ok(shape)
}

/// Row-wise softmax of a row-major `rows × cols` matrix (see the module docs
/// for the integration and for non-finite values).
///
/// # Errors
/// Empty, or data not filling the shape ([`GpuError::FusedShape`]); GPU errors.
pub fn softmax(
    x: &[f32],
    shape: (usize, usize),
    mut cache: Option<&mut KernelCache>,
) -> Result<Vec<f32>, GpuError> {
    let len = check_matrix("softmax", "x", x, shape)?;
    let (rows, cols) = shape;
    let ms = run(
        Op::SoftmaxRows,
        &[("x", x)],
        Some(cols),
        rows,
        cols,
        cache.as_deref_mut(),
    )?;
    run(
        Op::SoftmaxNorm,
        &[("x", x), ("ms", &ms)],
        Some(cols),
        len,
        1,
        cache,
    )
}

/// The epilogue of `matmul_bias_relu` as a WGSL function
/// `fn epilogue(acc: f32, row: u32, col: u32) -> f32`, generated from the IR of
/// `bias_relu` (`max(x[i] + b[i % cols], 0)`, NaN kept) with `x[i]` the accumulator,
/// `b` the shader's `bias` binding, `cols` the shader's constant `N` and `i`
/// the element `row·N + col`.
///
/// # Errors
/// [`GpuError::FusedKernel`] if the IR cannot be emitted (a VGPU bug).
pub fn epilogue_wgsl() -> Result<String, GpuError> {
    let k = &Op::BiasRelu.kernel()?.kernel;
    let Some(&vgpu_ir::Update::Jump(root)) = k.phases[0].updates.first() else {
        return Err(GpuError::FusedKernel {
            op: "matmul_bias_relu",
            message: "bias_relu is not one jump".into(),
        });
    };
    let param = |name: &str| k.params.iter().position(|p| p.name == name);
    let (px, pb, pc) = (param("x"), param("b"), param("cols"));
    let leaf = |node: &Node, index: Option<&str>| -> Result<String, IrError> {
        match *node {
            Node::Load { buf, .. } if Some(buf as usize) == px => Ok("acc".into()),
            Node::Load { buf, .. } if Some(buf as usize) == pb => {
                Ok(format!("bias[u32({})]", index.unwrap_or("0u")))
            }
            Node::Param(p) if Some(p as usize) == pc => Ok("N".into()),
            Node::Builtin(vgpu_ir::Builtin::Global) => Ok("(row * N + col)".into()),
            ref other => Err(IrError::Unsupported {
                kernel: k.name.clone(),
                backend: "gpu (matmul epilogue)".into(),
                reason: format!("{other:?} has no meaning in the epilogue"),
            }),
        }
    };
    let (lets, values) =
        emit_expressions(k, &[root], &leaf).map_err(|e| GpuError::FusedKernel {
            op: "matmul_bias_relu",
            message: e.to_string(),
        })?;
    Ok(vgpu_ir::wgsl::matmul::epilogue_function(
        &k.name, &lets, &values[0],
    ))
}
