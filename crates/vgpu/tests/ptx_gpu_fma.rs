//! The GPU path's f32 fma (`fma.rn`, `mad.rn`, contracted `mul` + `add/sub`)
//! on both of its forms: the exact f64 emulation and the device's own `fma`
//! (chosen by vgpu-gpu's probe, `vgpu_gpu::fma_probe`). Each equals the
//! interpreter bit for bit (NaN as NaN) where it is used: the emulation and
//! the probe's choice on the probe's own adversarial triples, the forced
//! native form on inputs where fused and unfused agree and (with SHADER_F64
//! on a device not keeping f32 subnormals, where a suspect result is
//! computed on the emulation in place) on
//! cancellations `c = -RN(a b)` and subnormal operands;
//! on ties it gives the device's `fma` exactly as the probe saw it. Skipped
//! without an adapter unless `VGPU_REQUIRE_GPU=1`.

mod common;

use common::ptx_gpu::{line, word, Kernel, Rng, Words};
use vgpu::gpu::fma_probe::{fma_f32_triples, fma_on_device};
use vgpu::gpu::{f32_subnormals_kept, fma_f32_fused, FmaF32Path, GpuContext, KernelCache};
use vgpu::ptx::KernelArg;

const NAMES: [&str; 4] = [
    "fma.rn a b c",
    "mad.rn b a -c",
    "mul+sub a b c",
    "sub-mul c a b",
];

/// Runs `tests/kernels/fma.ptx` over the triples on both backends, the GPU's
/// fma as `fma` says: (cpu, gpu, how the GPU ran it).
fn run(k: &Kernel, fma: FmaF32Path, t: &[[f32; 3]]) -> (Vec<u8>, Vec<u8>, Option<bool>) {
    let n = t.len();
    let col = |j: usize| {
        t.iter()
            .flat_map(|x| x[j].to_le_bytes())
            .collect::<Vec<u8>>()
    };
    let bufs = [col(0), col(1), col(2), vec![0u8; 16 * n]];
    let args = [
        KernelArg::Buffer(0),
        KernelArg::Buffer(1),
        KernelArg::Buffer(2),
        KernelArg::Buffer(3),
        KernelArg::U32(n as u32),
    ];
    k.on_both_fma(fma, &line(n.div_ceil(128) as u32, 128, 0), &args, &bufs, 3)
}

fn nan_or_same(x: u32, y: u32) -> bool {
    x == y || (f32::from_bits(x).is_nan() && f32::from_bits(y).is_nan())
}

fn assert_same(cpu: &[u8], gpu: &[u8], t: &[[f32; 3]]) {
    let operands = |i: usize| {
        format!(
            "{:e} {:e} {:e} ({:08x?})",
            t[i][0],
            t[i][1],
            t[i][2],
            t[i].map(f32::to_bits)
        )
    };
    Words {
        stride: 4,
        names: &NAMES,
    }
    .assert_same(cpu, gpu, operands, nan_or_same);
}

#[test]
fn emulated_and_probed_fma_match_the_interpreter_on_the_probe_triples() {
    let Some(k) = Kernel::load("fma") else {
        return;
    };
    let ctx = GpuContext::get().unwrap();
    let t = fma_f32_triples();
    // The interpreter contracts mul + sub into one rounding, as fma does.
    let (cpu, gpu, native) = run(&k, FmaF32Path::Emulated, &t);
    for (i, [a, b, c]) in t.iter().enumerate() {
        let want = [
            a.mul_add(*b, *c),
            b.mul_add(*a, -c),
            a.mul_add(*b, -c),
            (-a).mul_add(*b, *c),
        ];
        for (j, w) in want.iter().enumerate() {
            assert!(
                nan_or_same(word(&cpu, 4 * i + j), w.to_bits()),
                "{}: {:?}",
                NAMES[j],
                t[i]
            );
        }
    }
    if ctx.has_f64() {
        assert_eq!(native, Some(false));
        assert_same(&cpu, &gpu, &t);
    } else {
        eprintln!("no SHADER_F64: the emulation is not run");
    }
    let (cpu, gpu, native) = run(&k, FmaF32Path::Auto, &t);
    let expect = match std::env::var("VGPU_PTX_EXACT_FMA").as_deref() {
        Ok("emulate") => false,
        Ok("native") => true,
        _ => fma_f32_fused(ctx).unwrap(),
    };
    eprintln!("{}: f32 fma native: {expect}", ctx.adapter());
    assert_eq!(native, Some(expect));
    if expect || ctx.has_f64() {
        assert_same(&cpu, &gpu, &t);
    }
}

#[test]
fn native_fma_is_the_devices_fma() {
    let Some(k) = Kernel::load("fma") else {
        return;
    };
    // a and b of at most 12 significant bits, so a b is exact in f32 and a
    // multiply-then-add rounds once, as a fused fma: both agree with the
    // interpreter. Exponents keep every value normal.
    let mut r = Rng(0x5851_f42d_4c95_7f2d);
    let mut t = Vec::new();
    for _ in 0..4096 {
        let mut v = |bits: u32, scale: i32| {
            let m = (r.next32() & ((1 << bits) - 1)) | (1 << (bits - 1));
            let s = if r.next32() & 1 == 0 { 1.0 } else { -1.0 };
            s * m as f32 * 2f32.powi(scale + (r.next32() % 40) as i32 - 20)
        };
        t.push([v(12, -11), v(12, -11), v(24, -23)]);
    }
    let ctx = GpuContext::get().unwrap();
    // The kernels' device fma is guarded where the device has SHADER_F64
    // and may flush f32 subnormals; where it keeps them, the bare `fma`.
    let kept = f32_subnormals_kept(ctx).unwrap();
    let guarded = ctx.has_f64() && !(kept.plain && kept.fma);
    let (cpu, gpu, native) = run(&k, FmaF32Path::Native, &t);
    assert_eq!(
        native,
        Some(true),
        "no suspect result: the device's fma kept"
    );
    assert_same(&cpu, &gpu, &t);
    if guarded {
        // Suspect results, which a device that flushes subnormals may get
        // wrong: products cancelled to their rounding error (0 where the
        // error is subnormal), and subnormal operands. The guarded fma
        // computes them on the emulation in place (the launch stays on the
        // device's fma), equal to the interpreter.
        let mut m = || f32::from_bits(0x3f80_0000 | (r.next32() & 0x7f_ffff));
        let mut s = Vec::new();
        for i in 0..1024 {
            let (a, b) = (m() * 2f32.powi(i % 200 - 100), m());
            s.push([a, b, -(a * b)]);
        }
        s.push([1.5, 2.0, f32::from_bits(0x0000_0001)]);
        s.push([f32::from_bits(0x0040_0000), 2.0, 0.0]);
        for one in [&s[1024..1025], &s[1025..1026], &s[..]] {
            let (cpu, gpu, native) = run(&k, FmaF32Path::Native, one);
            assert_eq!(native, Some(true), "{one:?}: the guarded device fma");
            assert_same(&cpu, &gpu, one);
        }
    }
    // On ties, where fused and unfused differ, the kernel's result is the
    // device's fma as the probe's kernel computes it (on lavapipe, whose fma
    // is a multiply-then-add, not the interpreter's).
    let x = 1.0 + 2f32.powi(-12);
    let ties = [
        [x, x, 2f32.powi(-60)],
        [x, x, -(x * x)],
        [-x, x, -2f32.powi(-60)],
    ];
    // One launch each: a suspect result (the second's zero, with SHADER_F64)
    // runs its whole launch again on the emulation, as the probe's kernel
    // computes that one triple.
    let mut cache = KernelCache::new().unwrap();
    let device = fma_on_device(&mut cache, &ties, guarded, kept.plain).unwrap();
    for (i, d) in device.iter().enumerate() {
        let (_, gpu, _) = run(&k, FmaF32Path::Native, &ties[i..i + 1]);
        assert_eq!(word(&gpu, 0), *d, "{:?}", ties[i]);
    }
}
