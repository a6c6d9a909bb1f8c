//! The CPU fallback: row-major f32 GEMM through `faer`, chosen over `gemm` and
//! `matrixmultiply` by measurement beside numpy (docs/BENCHMARKS.md "Matmul,
//! CPU", sessions 1–3); those two are no longer dependencies.

/// C = A·B for row-major A (m×k), B (k×n), written into `c` (m×n), through
/// `faer` (its x86 kernels; rayon's pool from 96³ flops per call up, one thread
/// below). The shapes must already be checked (`faer` asserts them).
pub fn matmul_into(a: &[f32], b: &[f32], c: &mut [f32], m: usize, k: usize, n: usize) {
    use faer::{Accum, MatMut, MatRef, Par};
    let a = MatRef::from_row_major_slice(a, m, k);
    let b = MatRef::from_row_major_slice(b, k, n);
    let c = MatMut::from_row_major_slice_mut(c, m, n);
    let par = if m * n * k >= 96 * 96 * 96 {
        Par::rayon(0)
    } else {
        Par::Seq
    };
    faer::linalg::matmul::matmul(c, Accum::Replace, a, b, 1.0f32, par);
}
