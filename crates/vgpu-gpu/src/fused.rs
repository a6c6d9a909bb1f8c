//! Element-wise kernels generated from the kernel IR (`.field` text compiled at
//! run time): `relu` and `bias_add`, each a one-step Euler field from 0 (exact:
//! `0 + 1·v = v`), run on the GPU through the kernel cache (one compiled kernel,
//! whatever the shape: the size travels in the launch words) or on the CPU
//! through the IR evaluator when no cache is given.

use crate::ensemble::{run_ensemble_gpu, EnsembleError};
use crate::kernel_cache::KernelCache;
use vgpu_ir::{compile, run_cpu, Args, Buffer, Integration, IrError, Method, Value};

const RELU: &str = "field relu(x: f32[]) { state y = 0.0; d(y)/dt = max(x[i], 0.0); }";
const BIAS_ADD: &str = "field bias_add(x: f32[], b: f32[], cols: u32) { state y = 0.0; d(y)/dt = x[i] + b[i % cols]; }";

fn run(
    src: &str,
    name: &str,
    args: impl FnOnce(&mut Args) -> Result<(), IrError>,
    n: usize,
    cache: Option<&mut KernelCache>,
) -> Result<Vec<f32>, EnsembleError> {
    let k = compile(name, src)?;
    let mut a = Args::new(&k);
    args(&mut a)?;
    let integ = Integration::new(n, 0.0, 1.0, 1.0).method(Method::Euler);
    match cache {
        Some(c) => Ok(run_ensemble_gpu(c, &k, &a, &integ, None)?.states),
        None => match run_cpu(&k, &a, &integ)?.states {
            Buffer::F32(v) => Ok(v.to_vec()),
            other => Ok((0..other.len())
                .map(|i| other.get(i).as_f64() as f32)
                .collect()),
        },
    }
}

/// `max(x, 0)` element-wise; on the GPU of `cache`, or the CPU when `None`.
///
/// # Errors
/// An empty input, GPU errors.
pub fn relu(x: &[f32], cache: Option<&mut KernelCache>) -> Result<Vec<f32>, EnsembleError> {
    run(
        RELU,
        "relu.field",
        |a| a.buffer("x", x.to_vec()).map(|_| ()),
        x.len(),
        cache,
    )
}

/// `x[r, c] + b[c]` for a row-major `x` of `b.len()` columns.
///
/// # Errors
/// A shape mismatch (`x.len()` not a multiple of `b.len()`), GPU errors.
pub fn bias_add(
    x: &[f32],
    b: &[f32],
    cache: Option<&mut KernelCache>,
) -> Result<Vec<f32>, EnsembleError> {
    if b.is_empty() || x.len() % b.len() != 0 {
        return Err(IrError::Launch {
            kernel: "bias_add".into(),
            message: format!(
                "x has {} elements, not a whole number of rows of {} columns",
                x.len(),
                b.len()
            ),
        }
        .into());
    }
    run(
        BIAS_ADD,
        "bias_add.field",
        |a| {
            a.buffer("x", x.to_vec())?
                .buffer("b", b.to_vec())?
                .scalar("cols", Value::U32(b.len() as u32))?;
            Ok(())
        },
        x.len(),
        cache,
    )
}
