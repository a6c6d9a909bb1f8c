//! Several instructions on one source line (CUB's inline assembly) on the GPU
//! path: the lowering matches each decoded instruction to its instruction on
//! the line (vgpu-ptx lower/source.rs), and the results equal the
//! interpreter's bit for bit: CUB's one-line f64 shuffle with its guarded
//! add, and lines of closure-decoded integer, bit and atomic instructions,
//! some writing one register several times under opposite guards. Skipped
//! without an adapter unless `VGPU_REQUIRE_GPU=1`; refused by name where the
//! adapter lacks SHADER_F64 or SHADER_INT64.

mod common;

use common::ptx_gpu::{assert_same_bytes, in_out, line, word, Kernel, Rng, IN_OUT};

/// Bytes each thread writes.
const STRIDE: usize = 32;

/// `tests/kernels/oneline.ptx`, one input word per thread: zeros, all ones,
/// f64 specials and random words (its halves are the integer operands).
#[test]
fn instructions_sharing_a_line_match_the_interpreter() {
    let Some(kernel) = Kernel::load_f64("oneline") else {
        return;
    };
    let n = 4096usize;
    let mut r = Rng(0x6a09_e667_f3bc_c908);
    let x: Vec<u64> = (0..n)
        .map(|i| match i % 8 {
            0 => 0,
            1 => u64::MAX,
            2 => 0x7ff0_0000_0000_0000,
            3 => 0x3ff0_0000_0000_0000 | (r.next64() >> 12),
            _ => r.next64(),
        })
        .collect();
    let bufs = in_out(&x, u64::to_le_bytes, STRIDE * n);
    let (cpu, gpu) = kernel.on_both(&line((n / 128) as u32, 128, 0), &IN_OUT, &bufs, 1);
    assert_same_bytes(&cpu, &gpu, STRIDE, &x, 1);
    // Not vacuous: the shuffled sums and the guarded results vary, and the
    // guard of the sub/max pairs takes both ways.
    let w = |t: usize, i: usize| word(&cpu, STRIDE / 4 * t + i);
    assert!((1..n).any(|t| w(t, 1) != w(0, 1)));
    assert!((1..n).any(|t| w(t, 5) != w(0, 5)));
    let lt = |t: usize| (x[t] as u32) < (x[t] >> 32) as u32;
    assert!((0..n).any(lt) && (0..n).any(|t| !lt(t)));
}
