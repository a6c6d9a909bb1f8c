//! The GPU path's exact f64 sequences (vgpu-ir `wgsl/cfg/float64_exact.rs`):
//! `fma.rn.f64`, `mad.rn.f64`, a `mul.f64` contracted into `add/sub.f64`,
//! `add/sub/mul/fma/mad/div/rcp/sqrt.{rz,rm,rp}.f64`, `div.rn.f64`,
//! `rcp.rn.f64`, `sqrt.rn.f64`, `rsqrt.approx.f64`, `setp.f64` with every
//! comparison, and the `cvt`s with integer roundings (f64 →
//! s64/u64/s32/u32/s16/u8, f64 → f64, f64 → f32, f32 → f64), directed
//! roundings (f64 → f32, s64/u64 → f64), `.sat` and `.ftz`, equal the
//! interpreter's bit for bit on adversarial inputs: specials (±0, ±∞, NaN
//! payloads), subnormal operands and results, exact fma ties broken (or not)
//! by a tiny addend, cancellations `c = −RN(ab)`, overflowing products brought
//! back, huge and tiny quotients, perfect squares and their neighbours,
//! halves and integers at the conversions' edges, random bits. Skipped
//! without an adapter unless `VGPU_REQUIRE_GPU=1`; skipped where the adapter
//! lacks SHADER_F64 or SHADER_INT64.

mod common;

use common::ptx_gpu::{assert_same_bytes, in_out, line, Kernel, Rng, IN_OUT};

/// Bytes each thread writes (tests/kernels/f64exact.ptx).
const STRIDE: usize = 416;
/// Threads.
const N: usize = 8192;

/// Special f64 values.
const SPECIAL: [u64; 16] = [
    0,
    0x8000_0000_0000_0000, // -0
    0x7ff0_0000_0000_0000, // +inf
    0xfff0_0000_0000_0000, // -inf
    0x7ff8_0000_0000_0001, // NaN with a payload
    0xfff4_0000_0000_0000, // negative signalling NaN
    0x7fef_ffff_ffff_ffff, // largest normal
    0x0010_0000_0000_0000, // smallest normal
    0x0000_0000_0000_0001, // smallest subnormal
    0x800f_ffff_ffff_ffff, // largest negative subnormal
    0x3ff0_0000_0000_0000, // 1
    0xbff8_0000_0000_0000, // -1.5
    0x3fe0_0000_0000_0000, // 0.5
    0x43e0_0000_0000_0000, // 2^63
    0xc3e0_0000_0000_0000, // -2^63
    0x41e0_0000_0000_0000, // 2^31
];

fn f(x: u64) -> f64 {
    f64::from_bits(x)
}

/// `m · 2^e` for an integer `m` below 2^53 (exact, or 0/inf past the range).
fn scaled(m: u64, e: i32) -> f64 {
    let mut v = m as f64;
    // Scale in steps that stay exact until the final under/overflow.
    let mut e = e;
    while e > 600 {
        v *= 2f64.powi(600);
        e -= 600;
    }
    while e < -600 {
        v *= 2f64.powi(-600);
        e += 600;
    }
    v * 2f64.powi(e)
}

/// A random f64 with an exponent in `lo..hi` (unbiased) and random sign.
fn rand_exp(r: &mut Rng, lo: i32, hi: i32) -> f64 {
    let e = lo + (r.next64() % (hi - lo) as u64) as i32;
    let m = r.next64() >> 11 | 1 << 52;
    let s = if r.next64() & 1 == 1 { -1.0 } else { 1.0 };
    s * scaled(m, e - 52)
}

/// One thread's x, y, z (f64 bits) and k, by category `(i / 5) % 17`.
fn case(i: usize, r: &mut Rng) -> [u64; 4] {
    let special = |r: &mut Rng| SPECIAL[(r.next64() % SPECIAL.len() as u64) as usize];
    let sign = |r: &mut Rng| if r.next64() & 1 == 1 { -1.0 } else { 1.0 };
    let k = match i % 5 {
        0 => r.next64(),
        1 => (1u64 << 53) + r.next64() % 4096,
        2 => (r.next64() % 4000).wrapping_sub(2000),
        3 => {
            1u64.wrapping_shl((r.next64() % 64) as u32)
                .wrapping_add(r.next64() % 3)
                - 1
        }
        // The low word as an f32 with a fraction, near a half, or subnormal.
        _ => {
            let v = [0.5f32, 1.5, 2.5, -0.5, -2.5, 1e-40, -1e-40, 3.75, 8388607.5]
                [(r.next64() % 9) as usize];
            v.to_bits() as u64 | (r.next64() << 32)
        }
    };
    let [x, y, z]: [f64; 3] = match (i / 5) % 17 {
        // Specials everywhere.
        0 => [f(special(r)), f(special(r)), f(special(r))],
        // Exact ties of the product: odd a (27 bits) times odd b (28 bits) has
        // 54 (a tie) or 55 bits; z breaks it by a tiny amount, or not at all.
        1 | 2 => {
            let a = (r.next64() % (1 << 26)) | (1 << 26) | 1;
            let b = (r.next64() % (1 << 27)) | (1 << 27) | 1;
            let (ea, eb) = (
                (r.next64() % 200) as i32 - 100,
                (r.next64() % 200) as i32 - 100,
            );
            let x = sign(r) * scaled(a, ea);
            let y = sign(r) * scaled(b, eb);
            let p = (a as f64 * b as f64).log2() as i32 + ea + eb;
            let z = match r.next64() % 6 {
                0 => 0.0,
                1 => sign(r) * scaled(1, p - 60),
                2 => sign(r) * scaled(1, p - 110),
                3 => sign(r) * scaled(1, -1074),
                4 => sign(r) * scaled(3, p - 56),
                _ => sign(r) * scaled(1, p - 54),
            };
            [x, y, z]
        }
        // Cancellation: z = -RN(xy), or a neighbour of it.
        3 | 4 => {
            let x = rand_exp(r, -300, 300);
            let y = rand_exp(r, -300, 300);
            let p = -(x * y);
            let z = match r.next64() % 3 {
                0 => p,
                1 => f(p.to_bits() + 1),
                _ => f(p.to_bits() - 1),
            };
            [x, y, z]
        }
        // Subnormal products, sums and quotients.
        5 => [
            rand_exp(r, -560, -500),
            rand_exp(r, -560, -500),
            rand_exp(r, -1074, -1000),
        ],
        6 => [
            rand_exp(r, -1074, -1020),
            rand_exp(r, 0, 60),
            rand_exp(r, -1074, -1022),
        ],
        // Overflowing products, brought back by z or beside an infinity.
        7 => {
            let x = rand_exp(r, 1000, 1024);
            let y = rand_exp(r, 0, 40);
            let z = match r.next64() % 3 {
                0 => -x * 2f64.powi(20),
                1 => sign(r) * f64::INFINITY,
                _ => sign(r) * f64::MAX,
            };
            [x, y, z]
        }
        // Huge and tiny quotients.
        8 => [
            rand_exp(r, 900, 1024),
            rand_exp(r, -1074, -900),
            rand_exp(r, -1074, -1000),
        ],
        9 => [
            rand_exp(r, -1074, -900),
            rand_exp(r, 900, 1024),
            rand_exp(r, 60, 100),
        ],
        // Quotients near representable values: x = RN(q·y) ± 1 ulp.
        10 => {
            let y = rand_exp(r, -50, 50);
            let q = rand_exp(r, -50, 50);
            let x = f((q * y)
                .to_bits()
                .wrapping_add(r.next64() % 3)
                .wrapping_sub(1));
            [x, y, q]
        }
        // Perfect squares and their neighbours (x, |z|), at any exponent.
        11 | 12 => {
            let s = (r.next64() % (1 << 26)) | 1;
            let e = (r.next64() % 1000) as i32 * 2 - 1000;
            let sq = scaled(s * s, e);
            let d = (r.next64() % 3) as i64 - 1;
            let x = f((sq.to_bits() as i64 + d) as u64);
            let t = rand_exp(r, -1074, 1024);
            [x, f((t * t).to_bits() ^ (r.next64() & 1)), -x]
        }
        // Halves and integers for the conversions, near the types' edges.
        13 => {
            let base = [
                0.0,
                1.0,
                2.0,
                255.0,
                32767.0,
                2147483647.0,
                4294967295.0,
                9.2e18,
            ][(r.next64() % 8) as usize];
            let frac = [0.0, 0.5, 0.25, 0.75, 1.0, 1.5][(r.next64() % 6) as usize];
            let x = sign(r) * (base + frac);
            [x, sign(r) * (base + 0.5), f(x.to_bits() + 1)]
        }
        // f32 edges for cvt.f32.f64: f32 ties, the overflow boundary, f32
        // subnormals.
        14 => {
            let m = r.next64() >> 11 | 1 << 52;
            let tie = (m & !((1u64 << 29) - 1)) | (1 << 28);
            let e = [0i32, 127, 128, -126, -140, -149, -150, -151][(r.next64() % 8) as usize];
            let z = sign(r) * scaled(tie + (r.next64() % 3) - 1, e - 52);
            [rand_exp(r, -200, 200), rand_exp(r, -200, 200), z]
        }
        // Quotients within 2^-100 of a midpoint (x = a·2^ea, y = b·2^eb with
        // a·2^54 = b·(2M + 1) + δ, δ = ±1, ±3), at any exponent.
        15 => {
            let (a, b) = near_midpoint_quotient(r);
            let ea = (r.next64() % 1600) as i32 - 800;
            let eb = ea - 1100 + (r.next64() % 2200) as i32;
            [scaled(a, ea), scaled(b, eb), rand_exp(r, -10, 10)]
        }
        // Random bits.
        _ => [f(r.next64()), f(r.next64()), f(r.next64())],
    };
    [x.to_bits(), y.to_bits(), z.to_bits(), k]
}

/// `a, b` in `[2^52, 2^53)` with `a / b` within `3 · 2^-106` relatively of
/// a midpoint between two f64: `a · 2^54 ≡ δ (mod b)` for a small odd `δ`,
/// so `a · 2^54 = b · (2M + 1) + δ` (both sides even), `a = δ · 2^-54 mod b`.
fn near_midpoint_quotient(r: &mut Rng) -> (u64, u64) {
    loop {
        let b = (r.next64() >> 11) | (1 << 52) | 1;
        let delta = [1i128, -1, 3, -3][(r.next64() % 4) as usize];
        let inv = inverse(((1u128 << 54) % b as u128) as i128, b as i128);
        let a = (delta.rem_euclid(b as i128) * inv).rem_euclid(b as i128) as u64;
        if a >= 1 << 52 {
            return (a, b);
        }
    }
}

/// `x⁻¹ mod m` (`x`, `m` coprime) by the extended Euclidean algorithm.
fn inverse(x: i128, m: i128) -> i128 {
    let (mut r0, mut r1, mut s0, mut s1) = (m, x, 0i128, 1i128);
    while r1 != 0 {
        let q = r0 / r1;
        (r0, r1) = (r1, r0 - q * r1);
        (s0, s1) = (s1, s0 - q * s1);
    }
    s0.rem_euclid(m)
}

fn inputs(n: usize) -> Vec<u64> {
    let mut r = Rng(0x2545_f491_4f6c_dd1d);
    (0..n).flat_map(|i| case(i, &mut r)).collect()
}

/// `tests/kernels/f64exact.ptx` on [`N`] threads: every word equal.
#[test]
fn exact_f64_sequences_match_the_interpreter() {
    let Some(kernel) = Kernel::load_f64("f64exact") else {
        return;
    };
    let x = inputs(N);
    let bufs = in_out(&x, u64::to_le_bytes, STRIDE * N);
    let (cpu, gpu) = kernel.on_both(&line((N / 128) as u32, 128, 0), &IN_OUT, &bufs, 1);
    assert_same_bytes(&cpu, &gpu, STRIDE, &x, 4);
    // Not vacuous: the inputs reach what the sequences must get right. The
    // fma (first word of a thread) differs from the twice-rounded x·y + z
    // on many threads, is the product's rounding error on the cancellations,
    // and is subnormal on some.
    let word64 = |t: usize, off: usize| {
        u64::from_le_bytes(
            cpu[STRIDE * t + off..STRIDE * t + off + 8]
                .try_into()
                .unwrap(),
        )
    };
    let (mut fused, mut cancelled, mut subnormal) = (0, 0, 0);
    for t in 0..N {
        let [a, b, c] = [f(x[4 * t]), f(x[4 * t + 1]), f(x[4 * t + 2])];
        let got = f(word64(t, 0));
        let want = a.mul_add(b, c);
        let want = if want.is_nan() {
            0x7fff_ffff_ffff_ffff
        } else {
            want.to_bits()
        };
        assert_eq!(got.to_bits(), want, "thread {t}: the interpreter's fma");
        if !got.is_nan() && got != a * b + c {
            fused += 1;
        }
        // The rounding error of x·y, recovered from x·y − RN(x·y).
        cancelled += (got != 0.0 && got.abs() < (a * b).abs() * 2f64.powi(-50)) as usize;
        subnormal += got.is_subnormal() as usize;
    }
    // The near-midpoint quotients are there: the remainder a − q·b is half
    // an ulp of q times b to within 2^-40 of it.
    let near = (0..N)
        .filter(|&t| (t / 5) % 17 == 15)
        .filter(|&t| {
            let q = f(word64(t, 40)); // div x y
            let (a, b) = (f(x[4 * t]), f(x[4 * t + 1]));
            let ulp = f(q.to_bits() & 0x7ff0_0000_0000_0000) * 2f64.powi(-52);
            let rem = (-q).mul_add(b, a);
            let h = (ulp * b).abs() / 2.0;
            q.is_normal()
                && rem.is_normal()
                && h.is_normal()
                && (rem.abs() - h).abs() <= h * 2f64.powi(-40)
        })
        .count();
    assert!(near > 300, "only {near} near-midpoint quotients");
    assert!(
        fused > 500,
        "only {fused} fma results differ from mul then add"
    );
    assert!(cancelled > 500, "only {cancelled} cancellations");
    assert!(subnormal > 100, "only {subnormal} subnormal fma results");
}

/// Bytes each thread writes in tests/kernels/f64directed.ptx.
const STRIDE_DIRECTED: usize = 168;

/// `tests/kernels/f64directed.ptx` (`mul/fma/mad/div/sqrt/rcp.{rz,rm,rp}.f64`)
/// on [`N`] threads of the same inputs: every word equal.
#[test]
fn directed_f64_match_the_interpreter() {
    let Some(kernel) = Kernel::load_f64("f64directed") else {
        return;
    };
    let x = inputs(N);
    let bufs = in_out(&x, u64::to_le_bytes, STRIDE_DIRECTED * N);
    let (cpu, gpu) = kernel.on_both(&line((N / 128) as u32, 128, 0), &IN_OUT, &bufs, 1);
    assert_same_bytes(&cpu, &gpu, STRIDE_DIRECTED, &x, 4);
    // Not vacuous: the directed forms are reached where they differ:
    // inexact products (mul.rm below mul.rp), subnormal ones, overflow held
    // at MAX by .rz, inexact quotients and roots, and exact zero sums signed
    // −0 by .rm.
    let word64 = |t: usize, off: usize| {
        let at = STRIDE_DIRECTED * t + off;
        u64::from_le_bytes(cpu[at..at + 8].try_into().unwrap())
    };
    let count = |p: &dyn Fn(usize) -> bool| (0..N).filter(|&t| p(t)).count();
    let inexact_mul = count(&|t| word64(t, 8) != word64(t, 16));
    let subnormal_mul = count(&|t| f(word64(t, 0)).is_subnormal());
    let max_mul = count(&|t| f(word64(t, 0)).abs() == f64::MAX);
    let inexact_div = count(&|t| word64(t, 72) != word64(t, 80));
    let inexact_sqrt = count(&|t| word64(t, 104) != word64(t, 112));
    let minus_zero = count(&|t| word64(t, 152) == 1 << 63);
    assert!(inexact_mul > 2000, "only {inexact_mul} inexact mul");
    assert!(subnormal_mul > 100, "only {subnormal_mul} subnormal mul.rz");
    assert!(max_mul > 20, "only {max_mul} mul.rz at MAX");
    assert!(inexact_div > 2000, "only {inexact_div} inexact div");
    assert!(inexact_sqrt > 1000, "only {inexact_sqrt} inexact sqrt");
    assert!(minus_zero > 300, "only {minus_zero} exact fma.rm zeros");
}
