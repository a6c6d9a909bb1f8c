//! The GPU path's correctly rounded f32 operations (and `div.approx`/`div.full`,
//! which the interpreter computes correctly rounded) equal the interpreter's bit
//! for bit on adversarial inputs: `fma.rn` on exact midpoints decided by a tiny
//! addend (the double-rounding trap), subnormal results, huge and tiny
//! quotients, overflow to infinity, signed zeros, infinities and NaNs, and
//! random bit patterns. Skipped without an adapter unless `VGPU_REQUIRE_GPU=1`.

use vgpu::ptx::{ExecOptions, KernelArg, LaunchConfig, Module};
use vgpu::ptx_gpu::PtxRunner;
use vgpu::BackendChoice;

const PTX: &str = r#"
.version 8.0
.target sm_90
.address_size 64
.visible .entry exact(.param .u64 pa, .param .u64 pb, .param .u64 pc, .param .u64 po, .param .u32 pn)
{
    .reg .pred %p<2>;
    .reg .f32 %f<10>;
    .reg .b32 %r<6>;
    .reg .b64 %rd<12>;
    ld.param.u64 %rd1, [pa];
    ld.param.u64 %rd2, [pb];
    ld.param.u64 %rd3, [pc];
    ld.param.u64 %rd4, [po];
    ld.param.u32 %r1, [pn];
    mov.u32 %r2, %ctaid.x;
    mov.u32 %r3, %ntid.x;
    mov.u32 %r4, %tid.x;
    mad.lo.s32 %r5, %r2, %r3, %r4;
    setp.ge.u32 %p1, %r5, %r1;
    @%p1 bra DONE;
    mul.wide.u32 %rd5, %r5, 4;
    add.s64 %rd6, %rd1, %rd5;
    add.s64 %rd7, %rd2, %rd5;
    add.s64 %rd8, %rd3, %rd5;
    ld.global.f32 %f1, [%rd6];
    ld.global.f32 %f2, [%rd7];
    ld.global.f32 %f3, [%rd8];
    fma.rn.f32 %f4, %f1, %f2, %f3;
    div.rn.f32 %f5, %f1, %f2;
    sqrt.rn.f32 %f6, %f1;
    rcp.rn.f32 %f7, %f2;
    div.approx.f32 %f8, %f1, %f2;
    div.full.f32 %f9, %f1, %f2;
    mul.wide.u32 %rd9, %r5, 32;
    add.s64 %rd10, %rd4, %rd9;
    st.global.v4.f32 [%rd10], {%f4, %f5, %f6, %f7};
    st.global.v2.f32 [%rd10+16], {%f8, %f9};
DONE:
    ret;
}
"#;

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u32 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 16) as u32
    }
}

fn inputs() -> (Vec<f32>, Vec<f32>, Vec<f32>) {
    let (mut a, mut b, mut c) = (Vec::new(), Vec::new(), Vec::new());
    let mut push = |x: f32, y: f32, z: f32| {
        a.push(x);
        b.push(y);
        c.push(z);
    };
    // fma midpoints: (1 + 2^-k)^2 = 1 + 2^(1-k) + 2^-2k lands on a tie of f32
    // for k = 12; a tiny c (or none) decides it.
    for k in [12i32, 11, 13] {
        let x = 1.0 + 2f32.powi(-k);
        for z in [0.0, 2f32.powi(-60), -2f32.powi(-60), 2f32.powi(-100), -0.0] {
            push(x, x, z);
            push(-x, x, -z);
        }
    }
    // Ties near the overflow threshold and in the subnormal range.
    let max = f32::MAX;
    push(max, 1.0 + 2f32.powi(-24), 0.0);
    push(max, 1.0, max * 2f32.powi(-24));
    push(max, 1.0, -max * 2f32.powi(-25));
    push(2f32.powi(-75), 2f32.powi(-75), 2f32.powi(-149));
    push(1.5 * 2f32.powi(-75), 2f32.powi(-75), -2f32.powi(-149));
    push(f32::from_bits(1), 0.5, 0.0);
    push(f32::from_bits(3), 0.5, f32::from_bits(1));
    // Quotients: huge, tiny (subnormal), exact, by zero.
    push(3e38, 1e-38, 0.0);
    push(1e-38, 3e38, 0.0);
    push(1.0, 3.0, 0.0);
    push(f32::from_bits(0x0000_0007), 3.0, 1.0);
    push(1.0, 0.0, 0.0);
    push(-1.0, -0.0, 0.0);
    push(0.0, 0.0, 0.0);
    push(f32::INFINITY, 0.0, 1.0);
    push(f32::INFINITY, f32::INFINITY, f32::NEG_INFINITY);
    push(f32::NAN, 1.0, 1.0);
    push(-4.0, 2.0, 1.0);
    push(-0.0, 1.0, -0.0);
    // Random bit patterns (all exponents) and random values near 1.
    let mut r = Rng(0x9e37_79b9_7f4a_7c15);
    for _ in 0..3000 {
        push(
            f32::from_bits(r.next()),
            f32::from_bits(r.next()),
            f32::from_bits(r.next()),
        );
    }
    for _ in 0..1000 {
        let m = |r: &mut Rng| f32::from_bits(0x3f80_0000 | (r.next() & 0x7f_ffff));
        let (x, y) = (m(&mut r), m(&mut r));
        let z = -(x * y) * f32::from_bits(0x3f80_0000 | (r.next() & 0xff));
        push(x, y, z);
    }
    (a, b, c)
}

fn run(backend: BackendChoice, m: &Module, n: usize, bufs: &mut [Vec<u8>]) {
    let cfg = LaunchConfig {
        grid: [n.div_ceil(128) as u32, 1, 1],
        block: [128, 1, 1],
        shared_bytes: 0,
    };
    let args = [
        KernelArg::Buffer(0),
        KernelArg::Buffer(1),
        KernelArg::Buffer(2),
        KernelArg::Buffer(3),
        KernelArg::U32(n as u32),
    ];
    PtxRunner::new(backend, true)
        .launch(m, "exact", &cfg, &args, bufs, &ExecOptions::default())
        .unwrap_or_else(|e| panic!("{backend:?}: {e}"));
}

#[test]
fn correctly_rounded_f32_operations_match_the_interpreter() {
    if let Err(e) = vgpu::gpu::GpuContext::get() {
        assert!(
            std::env::var("VGPU_REQUIRE_GPU").as_deref() != Ok("1"),
            "VGPU_REQUIRE_GPU=1 but there is no GPU adapter: {e}"
        );
        eprintln!("no GPU adapter ({e}): skipped");
        return;
    }
    let m = Module::parse(PTX, "exact.ptx").unwrap();
    let (a, b, c) = inputs();
    let n = a.len();
    let bytes = |v: &[f32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    let fresh = || vec![bytes(&a), bytes(&b), bytes(&c), vec![0u8; 32 * n]];
    let mut cpu = fresh();
    let mut gpu = fresh();
    run(BackendChoice::Cpu, &m, n, &mut cpu);
    run(BackendChoice::Gpu, &m, n, &mut gpu);
    let word = |v: &[u8], i: usize| u32::from_le_bytes(v[4 * i..4 * i + 4].try_into().unwrap());
    // div.approx and div.full: correctly rounded in the interpreter (PTX allows
    // 2 ulp), the same on the GPU.
    let names = [
        "fma.rn",
        "div.rn",
        "sqrt.rn",
        "rcp.rn",
        "div.approx",
        "div.full",
    ];
    let mut bad = Vec::new();
    for i in 0..n {
        for (j, name) in names.iter().enumerate() {
            let (x, y) = (word(&cpu[3], 8 * i + j), word(&gpu[3], 8 * i + j));
            let both_nan = f32::from_bits(x).is_nan() && f32::from_bits(y).is_nan();
            if x != y && !both_nan {
                bad.push(format!(
                    "{name}({:e} [{:#x}], {:e} [{:#x}], {:e} [{:#x}]): cpu {:#x}, gpu {:#x}",
                    a[i],
                    a[i].to_bits(),
                    b[i],
                    b[i].to_bits(),
                    c[i],
                    c[i].to_bits(),
                    x,
                    y
                ));
            }
        }
    }
    assert!(
        bad.is_empty(),
        "{} of {} results differ:\n{}",
        bad.len(),
        names.len() * n,
        bad.iter().take(20).cloned().collect::<Vec<_>>().join("\n")
    );
}

/// `cvt.rn.f16.f32` and `cvt.f32.f16` (integer code on the GPU, no f16
/// arithmetic needed): every f16 bit pattern widened, and f32 values of every
/// exponent from below the f16 subnormals to past the f16 overflow with
/// mantissa tails at, just below and just above each rounding point.
const HALF: &str = r#"
.version 8.0
.target sm_90
.address_size 64
.visible .entry halves(.param .u64 px, .param .u64 po)
{
    .reg .b16 %rs<3>;
    .reg .f32 %f<4>;
    .reg .b32 %r<6>;
    .reg .b64 %rd<8>;
    ld.param.u64 %rd1, [px];
    ld.param.u64 %rd2, [po];
    mov.u32 %r1, %ctaid.x;
    mov.u32 %r2, %ntid.x;
    mov.u32 %r3, %tid.x;
    mad.lo.s32 %r4, %r1, %r2, %r3;
    mul.wide.u32 %rd3, %r4, 4;
    add.s64 %rd4, %rd1, %rd3;
    ld.global.f32 %f1, [%rd4];
    ld.global.b16 %rs2, [%rd4];
    cvt.rn.f16.f32 %rs1, %f1;
    cvt.f32.f16 %f2, %rs1;
    cvt.f32.f16 %f3, %rs2;
    cvt.u32.u16 %r5, %rs1;
    mul.wide.u32 %rd5, %r4, 12;
    add.s64 %rd6, %rd2, %rd5;
    st.global.u32 [%rd6], %r5;
    st.global.f32 [%rd6+4], %f2;
    st.global.f32 [%rd6+8], %f3;
    ret;
}
"#;

#[test]
fn f16_conversions_match_the_interpreter() {
    if let Err(e) = vgpu::gpu::GpuContext::get() {
        assert!(
            std::env::var("VGPU_REQUIRE_GPU").as_deref() != Ok("1"),
            "VGPU_REQUIRE_GPU=1 but there is no GPU adapter: {e}"
        );
        eprintln!("no GPU adapter ({e}): skipped");
        return;
    }
    let m = Module::parse(HALF, "halves.ptx").unwrap();
    let n = 1usize << 17;
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let x: Vec<u32> = (0..n)
        .map(|i| {
            let r = rng.next();
            if i < 1 << 16 {
                // The low half is every f16 pattern; the high half random.
                (r << 16) | i as u32
            } else {
                let j = (i - (1 << 16)) as u32;
                let e = 100 + j % 46;
                let sh = 13 + (j / 46) % 12;
                let t = (j / 552) % 3;
                let tail = ((1u32 << (sh - 1)) + t).wrapping_sub(1) & ((1 << sh) - 1);
                let m = ((r & 0x7f_ffff) & !((1 << sh) - 1)) | tail;
                (r & 0x8000_0000) | (e << 23) | (m & 0x7f_ffff)
            }
        })
        .collect();
    let xb: Vec<u8> = x.iter().flat_map(|v| v.to_le_bytes()).collect();
    let go = |backend: BackendChoice| {
        let mut bufs = vec![xb.clone(), vec![0u8; 12 * n]];
        let cfg = LaunchConfig {
            grid: [(n / 256) as u32, 1, 1],
            block: [256, 1, 1],
            shared_bytes: 0,
        };
        let args = [KernelArg::Buffer(0), KernelArg::Buffer(1)];
        PtxRunner::new(backend, true)
            .launch(
                &m,
                "halves",
                &cfg,
                &args,
                &mut bufs,
                &ExecOptions::default(),
            )
            .unwrap_or_else(|e| panic!("{backend:?}: {e}"));
        bufs.swap_remove(1)
    };
    let (cpu, gpu) = (go(BackendChoice::Cpu), go(BackendChoice::Gpu));
    let word = |v: &[u8], i: usize| u32::from_le_bytes(v[4 * i..4 * i + 4].try_into().unwrap());
    let names = [
        "cvt.rn.f16.f32",
        "its cvt.f32.f16",
        "cvt.f32.f16 of the low half",
    ];
    let mut bad = Vec::new();
    for (t, xt) in x.iter().enumerate() {
        for (j, name) in names.iter().enumerate() {
            let (c, g) = (word(&cpu, 3 * t + j), word(&gpu, 3 * t + j));
            if c != g {
                bad.push(format!("x = {xt:#010x}: {name}: cpu {c:#x}, gpu {g:#x}"));
            }
        }
    }
    assert!(
        bad.is_empty(),
        "{} results differ:\n{}",
        bad.len(),
        bad.iter().take(30).cloned().collect::<Vec<_>>().join("\n")
    );
    // Not vacuous: subnormal, normal, infinite and NaN halves all occur.
    let h: Vec<u32> = (0..n).map(|t| word(&cpu, 3 * t)).collect();
    assert!(h.iter().any(|&v| v & 0x7c00 == 0 && v & 0x3ff != 0));
    assert!(h.iter().any(|&v| v & 0x7fff == 0x7c00));
    assert!(h.contains(&0x7fff));
}

/// `popc`, `clz` and `brev` on 32 and 64 bits, `bfind` (u32, s32, `.shiftamt`).
const BITS: &str = r#"
.version 8.0
.target sm_90
.address_size 64
.visible .entry bits(.param .u64 px, .param .u64 po)
{
    .reg .b32 %r<16>;
    .reg .b64 %rd<10>;
    ld.param.u64 %rd1, [px];
    ld.param.u64 %rd2, [po];
    mov.u32 %r1, %ctaid.x;
    mov.u32 %r2, %ntid.x;
    mov.u32 %r3, %tid.x;
    mad.lo.s32 %r4, %r1, %r2, %r3;
    mul.wide.u32 %rd3, %r4, 8;
    add.s64 %rd4, %rd1, %rd3;
    ld.global.u64 %rd5, [%rd4];
    cvt.u32.u64 %r5, %rd5;
    popc.b32 %r6, %r5;
    clz.b32 %r7, %r5;
    brev.b32 %r8, %r5;
    popc.b64 %r9, %rd5;
    clz.b64 %r10, %rd5;
    brev.b64 %rd6, %rd5;
    bfind.u32 %r11, %r5;
    bfind.s32 %r12, %r5;
    bfind.shiftamt.u32 %r13, %r5;
    bfind.shiftamt.s32 %r14, %r5;
    mul.wide.u32 %rd7, %r4, 48;
    add.s64 %rd8, %rd2, %rd7;
    st.global.v4.u32 [%rd8], {%r6, %r7, %r8, %r9};
    st.global.u32 [%rd8+16], %r10;
    st.global.u64 [%rd8+24], %rd6;
    st.global.v4.u32 [%rd8+32], {%r11, %r12, %r13, %r14};
    ret;
}
"#;

#[test]
fn bit_counts_match_the_interpreter() {
    if vgpu::gpu::GpuContext::get().is_err() {
        assert!(std::env::var("VGPU_REQUIRE_GPU").as_deref() != Ok("1"));
        return;
    }
    let m = Module::parse(BITS, "bits.ptx").unwrap();
    let n = 4096usize;
    let mut rng = Rng(0x1234_5678_9abc_def1);
    let x: Vec<u64> = (0..n)
        .map(|i| {
            let r = ((rng.next() as u64) << 32) | rng.next() as u64;
            match i % 4 {
                // Zeros, single bits and short runs at every position.
                0 => 1u64.checked_shl(i as u32 / 4 % 65).unwrap_or(0),
                1 => r >> (i / 4 % 64),
                2 => (r as u32) as u64,
                _ => r,
            }
        })
        .collect();
    let xb: Vec<u8> = x.iter().flat_map(|v| v.to_le_bytes()).collect();
    let go = |backend: BackendChoice| {
        let mut bufs = vec![xb.clone(), vec![0u8; 48 * n]];
        let cfg = LaunchConfig {
            grid: [(n / 128) as u32, 1, 1],
            block: [128, 1, 1],
            shared_bytes: 0,
        };
        let args = [KernelArg::Buffer(0), KernelArg::Buffer(1)];
        PtxRunner::new(backend, true)
            .launch(&m, "bits", &cfg, &args, &mut bufs, &ExecOptions::default())
            .unwrap_or_else(|e| panic!("{backend:?}: {e}"));
        bufs.swap_remove(1)
    };
    let (cpu, gpu) = (go(BackendChoice::Cpu), go(BackendChoice::Gpu));
    assert_eq!(cpu.len(), gpu.len());
    for (t, xt) in x.iter().enumerate() {
        let (c, g) = (&cpu[48 * t..48 * t + 48], &gpu[48 * t..48 * t + 48]);
        assert_eq!(c, g, "x = {xt:#018x}");
        // The interpreter's own values, so the comparison is not vacuous.
        let w = |i: usize| u32::from_le_bytes(c[4 * i..4 * i + 4].try_into().unwrap());
        assert_eq!(w(0), (*xt as u32).count_ones());
        assert_eq!(w(4), xt.leading_zeros());
    }
}
