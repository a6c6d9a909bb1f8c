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
    let guarded = kept.fma_guarded(ctx.has_f64());
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

/// `ptx-cases/kernels.ptx`, the repository's cases, parsed.
fn cases() -> vgpu::ptx::Module {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../ptx-cases/kernels.ptx");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    vgpu::ptx::Module::parse(&text, "kernels.ptx").expect("kernels.ptx parses")
}

/// `entry` of `m` on the interpreter and on the GPU with the guarded forms
/// over the flushing fma model (`FmaF32Path::FlushModel`), checked or not:
/// buffer `out` after each, (cpu, gpu).
fn on_both_flushing(
    m: &vgpu::ptx::Module,
    entry: &str,
    cfg: &vgpu::ptx::LaunchConfig,
    args: &[KernelArg],
    bufs: &[Vec<u8>],
    out: usize,
    checked: bool,
) -> (Vec<u8>, Vec<u8>) {
    let go = |backend| {
        let mut b = bufs.to_vec();
        let mut r = vgpu::ptx_gpu::PtxRunner::new(backend, checked);
        r.fma_f32 = FmaF32Path::FlushModel;
        let opts = vgpu::ptx::ExecOptions {
            check: checked,
            ..Default::default()
        };
        r.launch(m, entry, cfg, args, &mut b, &opts)
            .unwrap_or_else(|e| panic!("{entry} on {backend:?}: {e}"));
        if backend == vgpu::BackendChoice::Gpu {
            assert_eq!(r.native_fma_f32, Some(true), "{entry}: the device fma");
            assert!(r.fma_f32_guarded, "{entry}: guarded");
        }
        b.swap_remove(out)
    };
    (go(vgpu::BackendChoice::Cpu), go(vgpu::BackendChoice::Gpu))
}

/// An f32 whose magnitude is a random significand times 2^e, e in
/// `lo..hi`, of either sign (subnormal, or zero, below e = -149 + 23).
fn scaled(r: &mut Rng, lo: i32, hi: i32) -> f32 {
    let m = f32::from_bits(0x3f80_0000 | (r.next32() & 0x7f_ffff));
    let e = lo + (r.next32() % (hi - lo) as u32) as i32;
    let s = if r.next32() & 1 == 0 { 1.0 } else { -1.0 };
    // Two steps, so that 2^e below f32's range is not a zero factor.
    s * m * 2f32.powi(e / 2) * 2f32.powi(e - e / 2)
}

fn f32_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// The guarded forms of a device whose fma flushes subnormals (NVIDIA's
/// `FFMA.FTZ`, here a model of it: `FmaF32Path::FlushModel`) give the
/// interpreter's bits where the flush would change them: the in-place guard
/// on the probe's triples, and the speculative regions (vgpu-ir's
/// speculate.rs: a block's fmas run bare, and again guarded where one was
/// suspect) in `lorenz_rk4`'s step loop, checked and unchecked, on states
/// near and below 2^-126 and with a subnormal step, and in `matmul_tiled`'s
/// inner loop, whose
/// regions hold its shared-memory loads when unchecked. Needs SHADER_F64
/// (the emulation); skipped without.
#[test]
fn the_guarded_forms_are_exact_over_a_flushing_fma() {
    let Some(k) = Kernel::load("fma") else {
        return;
    };
    if !GpuContext::get().unwrap().has_f64() {
        eprintln!("no SHADER_F64: no guarded fma");
        return;
    }
    let t = fma_f32_triples();
    let (cpu, gpu, native) = run(&k, FmaF32Path::FlushModel, &t);
    assert_eq!(native, Some(true));
    assert_same(&cpu, &gpu, &t);

    let m = cases();
    let mut r = Rng(0x2545_f491_4f6c_dd1d);
    let n = 256usize;
    // A state per thread: each coordinate near the subnormal range, zero,
    // or of order one; rho and dt likewise, so that some steps stay normal
    // and others flush.
    let mut state = Vec::new();
    for i in 0..3 * n {
        state.push(match i % 5 {
            0 => 0.0,
            1 | 2 => scaled(&mut r, -150, -110),
            _ => scaled(&mut r, -3, 3),
        });
    }
    let rho: Vec<f32> = (0..n)
        .map(|i| {
            if i % 3 == 0 {
                scaled(&mut r, -140, -100)
            } else {
                scaled(&mut r, 0, 5)
            }
        })
        .collect();
    let bufs = [f32_bytes(&state), f32_bytes(&rho)];
    // A subnormal dt: the step sizes, written once before the loop, are
    // fma operands the loop's region must test.
    let tiny_dt = 2f32.powi(-130);
    for (dt, checked) in [
        (0.01f32, true),
        (2f32.powi(-40), false),
        (0.01, false),
        (tiny_dt, false),
        (tiny_dt, true),
    ] {
        let args = [
            KernelArg::Buffer(0),
            KernelArg::Buffer(1),
            KernelArg::F32(dt),
            KernelArg::U32(6),
            KernelArg::U32(n as u32),
        ];
        let (cpu, gpu) =
            on_both_flushing(&m, "lorenz_rk4", &line(2, 128, 0), &args, &bufs, 0, checked);
        let thread = |i: usize| {
            format!(
                "state {:?} rho {:e} dt {dt:e} checked {checked}",
                &state[3 * i..3 * i + 3],
                rho[i]
            )
        };
        Words {
            stride: 3,
            names: &["x", "y", "z"],
        }
        .assert_same(&cpu, &gpu, thread, nan_or_same);
    }

    let s = 32usize;
    let a: Vec<f32> = (0..s * s)
        .map(|i| {
            if i % 4 == 0 {
                scaled(&mut r, -150, -120)
            } else {
                scaled(&mut r, -70, -50)
            }
        })
        .collect();
    let b: Vec<f32> = (0..s * s).map(|_| scaled(&mut r, -75, -50)).collect();
    let bufs = [f32_bytes(&a), f32_bytes(&b), vec![0u8; 4 * s * s]];
    let args = [
        KernelArg::Buffer(0),
        KernelArg::Buffer(1),
        KernelArg::Buffer(2),
        KernelArg::U32(s as u32),
        KernelArg::U32(s as u32),
        KernelArg::U32(s as u32),
    ];
    let cfg = vgpu::ptx::LaunchConfig {
        grid: [2, 2, 1].into(),
        block: [16, 16, 1].into(),
        shared_bytes: 0,
    };
    // Subnormal operands whose products and sums are normal: in the even
    // rows of A, column 3 of each tile subnormal and the rest just above
    // 2^-126, B large; only the operand tests of the inner loop's region
    // (each value loaded from shared memory, tested where it is held) send
    // these tiles to the exact run, and only fifteen of the sixteen threads
    // of a row stored no subnormal word themselves (session 25 measured a
    // note of subnormal shared words instead of these tests, and kept the
    // tests: docs/BENCHMARKS.md).
    let a2: Vec<f32> = (0..s * s)
        .map(|i| match ((i / s) % 2, i % 16) {
            (0, 3) => scaled(&mut r, -149, -127),
            (0, _) => scaled(&mut r, -125, -120),
            _ => scaled(&mut r, -3, 3),
        })
        .collect();
    let b2: Vec<f32> = (0..s * s).map(|_| scaled(&mut r, 100, 110)).collect();
    let bufs2 = [f32_bytes(&a2), f32_bytes(&b2), vec![0u8; 4 * s * s]];
    for (bufs, what) in [(&bufs, "tiny"), (&bufs2, "subnormal A, large B")] {
        for checked in [false, true] {
            let (cpu, gpu) = on_both_flushing(&m, "matmul_tiled", &cfg, &args, bufs, 2, checked);
            Words {
                stride: 1,
                names: &["c"],
            }
            .assert_same(
                &cpu,
                &gpu,
                |i| format!("C[{i}] ({what}), checked {checked}"),
                nan_or_same,
            );
        }
    }
}

/// A speculative region tests an fma operand that is a product `x * k` by
/// an immediate of magnitude at least 1 through `x` (a tiny product has a
/// tiny factor), and only while `x` holds the value multiplied: over the
/// flushing fma model, `tests/kernels/scaled.ptx` gives the interpreter's
/// bits where the product alone is subnormal (`x * 0.25` of a normal `x`:
/// tested itself) and where `x` was redefined after the product (tested
/// itself), each with a normal result the flush would change (`y` = 2¹⁰⁴
/// or 2¹⁰⁵, `c` = 1: 1 + 2⁻²³ exact, 1 flushed), and on random rows.
#[test]
fn products_by_immediates_are_tested_through_their_factor() {
    let Some(k) = guarded_kernel("scaled") else {
        return;
    };
    let p = |e: i32| 2f32.powi(e);
    // x, x2, y, c.
    let mut rows = vec![
        // x * 0.25 subnormal, x normal.
        [p(-125), 1.0, p(104), 1.0],
        // x2 * 4 subnormal, x2 then redefined (normal).
        [1.0, p(-130), p(105), 1.0],
        // x * 4 subnormal: tested through x.
        [p(-130), 1.0, p(105), 1.0],
        [0.0, 0.0, 1.0, 0.0],
    ];
    let mut r = Rng(0x9e37_79b9_7f4a_7c15);
    while rows.len() < 512 {
        rows.push([
            scaled(&mut r, -150, -110),
            scaled(&mut r, -150, -110),
            scaled(&mut r, 90, 110),
            if r.next32() % 3 == 0 {
                0.0
            } else {
                scaled(&mut r, -2, 2)
            },
        ]);
    }
    rows_on_both_flushing(
        &k,
        "scaled",
        &rows,
        &[],
        &["x*4", "x*0.25", "x2*4 (x2 redefined)"],
    );
}

/// Values carried from one speculative region to the next (vgpu-ir's
/// wgsl/cfg/coverage.rs: a region takes a value an earlier region or a
/// pre-test tested without testing it again, starting from their flags):
/// over the flushing fma model, `tests/kernels/carried.ptx` gives the
/// interpreter's bits where the carried `x` decays into the subnormals
/// (`x·k` a step, `d = 0`) and region B's product makes it count (`m` =
/// 2¹¹⁰, `c` = 1: region A's second run leaves `x` subnormal, and B, which
/// takes it covered, must run twice too — fails with region flags that stay
/// false), where `x` or the invariant `k` is subnormal from the start and A's
/// result is normal (`x·k + 1` with `x·k` near 2⁻²⁰: the pre-test before the
/// loop — fails without it), with zeros, and on random rows.
#[test]
fn values_carried_between_regions_keep_their_tests() {
    let Some(k) = guarded_kernel("carried") else {
        return;
    };
    let p = |e: i32| 2f32.powi(e);
    // x, k, d, m, c.
    let mut rows = vec![
        [p(-100), 0.5, 0.0, p(110), 1.0],
        [p(-100), -0.5, 0.0, -p(110), 1.0],
        [p(-130), p(110), 1.0, 1.0, 0.0],
        [p(120), p(-140), 1.0, 1.0, 0.0],
        [0.0, 1.0, 0.0, 1.0, 0.0],
        [1.0, 1.0, 0.0, 1.0, 1.0],
    ];
    let mut r = Rng(0x2545_f491_4f6c_dd1d);
    while rows.len() < 512 {
        let zero_or = |r: &mut Rng, lo, hi| {
            if r.next32() % 3 == 0 {
                0.0
            } else {
                scaled(r, lo, hi)
            }
        };
        rows.push([
            scaled(&mut r, -140, -90),
            scaled(&mut r, -3, 1),
            zero_or(&mut r, -150, -110),
            scaled(&mut r, 90, 125),
            zero_or(&mut r, -2, 2),
        ]);
    }
    let steps = 40;
    let names: Vec<String> = (0..steps)
        .flat_map(|i| [format!("step {i} x"), format!("step {i} y")])
        .collect();
    rows_on_both_flushing(&k, "carried", &rows, &[steps], &names);
}

/// A speculative region leaves out the tests of values whose bounds
/// (vgpu-ir's wgsl/cfg/magnitude.rs) keep them at 2⁻¹²⁶ or above, and keeps
/// those whose bounds fall below it: over the flushing fma model,
/// `tests/kernels/bounded.ptx` gives the interpreter's bits where inputs of
/// at least 2⁻³² (which pass every threshold's test) cancel down to the
/// subnormals through an fma (`a·b + c` with `a·b` near `−c`), a sum (`a +
/// c2` with `c2` near `−a`) and a product — each fails with its rule
/// dropped, which would leave the subnormal result untested and flushed —
/// and on rows with small inputs and zeros.
#[test]
fn bounds_keep_the_tests_of_cancellations() {
    let Some(k) = guarded_kernel("bounded") else {
        return;
    };
    let p = |e: i32| 2f32.powi(e);
    let u = p(-23);
    let mut r = Rng(0x6a09_e667_f3bc_c909);
    // a, b, c, c2.
    let mut rows: Vec<[f32; 4]> = vec![
        // r1 = 2^-46, r3 = 2^-138; d = -2^-46 for a near 2^-23, r6 = 2^-138.
        [1.0 + u, 1.0 + u, -(1.0 + 2.0 * u), -(1.0 + 2.0 * u)],
        [p(-23) * (1.0 + u), 1.0, -p(-23), -p(-23) * (1.0 + 2.0 * u)],
        [0.0, 1.0, 0.0, 0.0],
        [p(-40), p(-40), 0.0, 1.0],
    ];
    while rows.len() < 1024 {
        let (i, j, k) = (
            (r.next32() % 2048 + 1) as f32,
            (r.next32() % 2048 + 1) as f32,
            (r.next32() % 1024 + 1) as f32,
        );
        // Down to 2^-47: d = a + c2 near 2^-70, whose square is subnormal
        // (tested where the threshold is 2^-48: fails without the sum
        // rule's 24); near 2^-25, d·d·d is (2^-32).
        let ea = (r.next32() % 56) as i32 - 47;
        let eb = (r.next32() % 17) as i32 - 8;
        let a = (1.0 + i * u) * p(ea);
        let b = (1.0 + j * u) * p(eb);
        let c = -(1.0 + (i + j) * u) * p(ea + eb);
        let c2 = -(1.0 + (i + k) * u) * p(ea);
        rows.push(match r.next32() % 8 {
            // Small inputs and zeros: tests that take the second run.
            0 => [scaled(&mut r, -140, -20), b, c, c2],
            1 => [a, b, 0.0, c2],
            _ => [a, b, c, c2],
        });
    }
    rows_on_both_flushing(
        &k,
        "bounded",
        &rows,
        &[],
        &["r1", "r2", "r3", "r5", "r6", "r7", "r0"],
    );
}

/// Words loaded from shared memory are taken as tested where every store
/// there tests its word and sets the workgroup's flag for a tiny one
/// (vgpu-ir's wgsl/cfg/fma_plan.rs, `SMEM_SITE`): over the flushing fma
/// model, `tests/kernels/smem_words.ptx` gives the interpreter's bits where
/// a thread's neighbour stored a subnormal (`v·y + c` with `y` near 2¹⁰⁰
/// and `c` near 2⁻³⁵: the flush would drop the product; fails without the
/// stores' tests),
/// and where every word is normal.
#[test]
fn words_from_shared_memory_are_tested_where_stored() {
    let Some(k) = guarded_kernel("smem_words") else {
        return;
    };
    let mut r = Rng(0xbb67_ae85_84ca_a73b);
    // x, y, c: one block of subnormals among normals, one of normals.
    let rows: Vec<[f32; 3]> = (0..512)
        .map(|i| {
            let x = if i < 256 && r.next32() % 8 == 0 {
                scaled(&mut r, -149, -127)
            } else {
                scaled(&mut r, -20, 20)
            };
            [x, scaled(&mut r, 95, 110), scaled(&mut r, -40, -30)]
        })
        .collect();
    rows_on_both_flushing(&k, "smem_words", &rows, &[], &["out"]);
}

/// A region's second run as a loop over its fmas (vgpu-ir's
/// wgsl/cfg/second_run.rs: `tests/kernels/fma_chain.ptx`, four fmas on one
/// sum, is written so): over the flushing fma model it gives the
/// interpreter's bits where the products are subnormal, where subnormal
/// factors meet huge ones, where the terms cancel down to the subnormals
/// (each row's second run runs, its suspect fmas on the one emulation in
/// turn), and where every value is normal.
#[test]
fn a_second_run_as_a_loop_over_its_fmas_is_exact() {
    let Some(k) = guarded_kernel("fma_chain") else {
        return;
    };
    let mut r = Rng(0x3c6e_f372_fe94_f82b);
    let rows: Vec<[f32; 8]> = (0..1024)
        .map(|i| {
            let mut v = [0f32; 8];
            for j in 0..4 {
                let (x, y) = match i % 4 {
                    0 => (scaled(&mut r, -75, -60), scaled(&mut r, -75, -60)),
                    1 => (scaled(&mut r, -149, -127), scaled(&mut r, 95, 110)),
                    2 => (scaled(&mut r, -66, -60), scaled(&mut r, -66, -60)),
                    _ => (scaled(&mut r, -20, 20), scaled(&mut r, -20, 20)),
                };
                v[2 * j] = x;
                v[2 * j + 1] = y;
            }
            if i % 4 == 2 {
                // The second term cancels the first but for its last bits.
                v[2] = -v[0];
                v[3] = f32::from_bits(v[1].to_bits() ^ 1);
            }
            v
        })
        .collect();
    rows_on_both_flushing(&k, "fma_chain", &rows, &[], &["out"]);
}

/// Kernel `name` of `tests/kernels`, where the adapter has a guarded fma
/// (SHADER_F64).
fn guarded_kernel(name: &'static str) -> Option<Kernel> {
    let k = Kernel::load(name)?;
    if !GpuContext::get().unwrap().has_f64() {
        eprintln!("no SHADER_F64: no guarded fma");
        return None;
    }
    Some(k)
}

/// Runs `entry(column 0, …, column N−1, out, n, extra…)` over `rows` (one
/// thread each) on the interpreter and, over the flushing fma model, on
/// the GPU, checked and not; asserts the same `names.len()` words a thread
/// in `out`.
fn rows_on_both_flushing<const N: usize, S: AsRef<str>>(
    k: &Kernel,
    entry: &str,
    rows: &[[f32; N]],
    extra: &[u32],
    names: &[S],
) {
    let n = rows.len();
    let mut bufs: Vec<Vec<u8>> = (0..N)
        .map(|j| f32_bytes(&rows.iter().map(|x| x[j]).collect::<Vec<f32>>()))
        .collect();
    bufs.push(vec![0u8; 4 * names.len() * n]);
    let mut args: Vec<KernelArg> = (0..=N).map(KernelArg::Buffer).collect();
    args.push(KernelArg::U32(n as u32));
    args.extend(extra.iter().map(|&x| KernelArg::U32(x)));
    let grid = n.div_ceil(256) as u32;
    for checked in [false, true] {
        let (cpu, gpu) = on_both_flushing(
            &k.module,
            entry,
            &line(grid, 256, 0),
            &args,
            &bufs,
            N,
            checked,
        );
        Words {
            stride: names.len(),
            names,
        }
        .assert_same(
            &cpu,
            &gpu,
            |i| format!("{:?} checked {checked}", rows[i]),
            nan_or_same,
        );
    }
}
