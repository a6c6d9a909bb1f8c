//! The CPU fallback: row-major f32 GEMM through `faer` (chosen over `gemm` and
//! `matrixmultiply` by measurement beside numpy, see docs/BENCHMARKS.md
//! "Matmul, CPU"); the other two stay for that comparison
//! (`vgpu bench matmul --backend cpu --cpu-lib gemm|matrixmultiply`).

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

/// The same product through the `gemm` crate (rayon from 96³ flops up); kept for
/// the CPU-library comparison, `vgpu bench matmul --backend cpu --cpu-lib gemm`.
pub fn matmul_into_gemm(a: &[f32], b: &[f32], c: &mut [f32], m: usize, k: usize, n: usize) {
    debug_assert_eq!(a.len(), m * k);
    debug_assert_eq!(b.len(), k * n);
    debug_assert_eq!(c.len(), m * n);
    // Below ~64³ the threads cost more than they save.
    let par = if m * n * k >= 96 * 96 * 96 {
        gemm::Parallelism::Rayon(0)
    } else {
        gemm::Parallelism::None
    };
    // SAFETY: the pointers come from slices of exactly m·k, k·n and m·n elements
    // (checked by the caller, asserted above), with row-major strides: row stride
    // = number of columns, column stride = 1. `read_dst = false`, so `c`'s old
    // contents are never read; the product is scaled by beta = 1.
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            c.as_mut_ptr(),
            1,
            n as isize,
            false,
            a.as_ptr(),
            1,
            k as isize,
            b.as_ptr(),
            1,
            n as isize,
            0.0,
            1.0,
            false,
            false,
            false,
            par,
        );
    }
}

/// The same product through `matrixmultiply::sgemm` (threads: `MATMUL_NUM_THREADS`,
/// default all cores); kept for the CPU-library comparison,
/// `vgpu bench matmul --backend cpu --cpu-lib matrixmultiply`.
pub fn matmul_into_matrixmultiply(
    a: &[f32],
    b: &[f32],
    c: &mut [f32],
    m: usize,
    k: usize,
    n: usize,
) {
    debug_assert_eq!(a.len(), m * k);
    debug_assert_eq!(b.len(), k * n);
    debug_assert_eq!(c.len(), m * n);
    // SAFETY: as for `matmul_into`; beta = 0 means `c` is only written.
    unsafe {
        matrixmultiply::sgemm(
            m,
            k,
            n,
            1.0,
            a.as_ptr(),
            k as isize,
            1,
            b.as_ptr(),
            n as isize,
            1,
            0.0,
            c.as_mut_ptr(),
            n as isize,
            1,
        );
    }
}
