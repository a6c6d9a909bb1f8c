//! Matrix multiplication: shape checks, the CPU GEMM fallback; the WGSL
//! kernels and their tiles are generated in vgpu-ir's WGSL room
//! ([`vgpu_ir::wgsl::matmul`]).

pub mod cpu;
/// The matmul kernels' WGSL (in the WGSL room, vgpu-ir).
pub use vgpu_ir::wgsl::matmul as wgsl;
/// The register-blocked kernel's tile configuration (in the WGSL room, vgpu-ir).
pub use vgpu_ir::wgsl::matmul_tile as tile;

use crate::GpuError;

/// Checks a product A(m×k)·B(k×n) given as row-major slices with stated shapes:
/// no empty matrix, lengths equal to rows·columns, A's columns equal B's rows.
/// Returns (m, k, n).
pub fn check_shapes(
    a: &[f32],
    a_shape: (usize, usize),
    b: &[f32],
    b_shape: (usize, usize),
) -> Result<(usize, usize, usize), GpuError> {
    for (operand, shape) in [("A", a_shape), ("B", b_shape)] {
        if shape.0 == 0 || shape.1 == 0 {
            return Err(GpuError::EmptyMatrix { operand, shape });
        }
    }
    for (operand, data, shape) in [("A", a, a_shape), ("B", b, b_shape)] {
        let expected = shape.0.checked_mul(shape.1).ok_or(GpuError::TooLarge {
            operand,
            shape,
            reason: "rows × columns overflows usize".into(),
        })?;
        if data.len() != expected {
            return Err(GpuError::DataLength {
                operand,
                shape,
                len: data.len(),
                expected,
            });
        }
    }
    if a_shape.1 != b_shape.0 {
        return Err(GpuError::ShapeMismatch {
            a: a_shape,
            b: b_shape,
        });
    }
    let (m, k, n) = (a_shape.0, a_shape.1, b_shape.1);
    m.checked_mul(n).ok_or(GpuError::TooLarge {
        operand: "C",
        shape: (m, n),
        reason: "rows × columns overflows usize".into(),
    })?;
    Ok((m, k, n))
}

/// C = A·B on the CPU (the fallback's GEMM), with the shapes checked.
/// Row-major A (m×k) and B (k×n) in, row-major C (m×n) out.
pub fn matmul_cpu(
    a: &[f32],
    a_shape: (usize, usize),
    b: &[f32],
    b_shape: (usize, usize),
) -> Result<Vec<f32>, GpuError> {
    let (m, k, n) = check_shapes(a, a_shape, b, b_shape)?;
    let mut c = vec![0.0f32; m * n];
    cpu::matmul_into(a, b, &mut c, m, k, n);
    Ok(c)
}
