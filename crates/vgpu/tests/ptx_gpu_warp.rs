//! Warp operations on the GPU path (32 lanes by workgroup-memory emulation)
//! equal the interpreter's bit for bit: `shfl.sync` in all four modes with
//! clamps and segments and its predicate, `vote` (all, any with a negated
//! source, uni, ballot), `redux` (add, min, max, xor, or; signed and unsigned;
//! a partial member mask), `match.any`/`match.all`, `activemask` and a shuffle
//! under divergence (pairs of lanes branch together, so the butterfly reads
//! only active lanes: a shuffle from an inactive lane is undefined in CUDA and
//! differs between the paths, docs/PTX_GPU.md), `bar.warp.sync`, a loop whose
//! lanes leave after different trip counts (the active mask shrinks each time,
//! as min-PC scheduling makes it; lane l + 1 iterates at least as long as lane
//! l, so `shfl.down` by one reads an active lane) and a guarded warp operation,
//! in blocks of 80 threads (the last warp has 16 lanes) and of 7; a butterfly
//! sum in a loop; the warp and launch special registers. Skipped without an
//! adapter unless `VGPU_REQUIRE_GPU=1`.

use vgpu::ptx::{ExecOptions, KernelArg, LaunchConfig, Module};
use vgpu::ptx_gpu::PtxRunner;
use vgpu::BackendChoice;

/// Words each thread writes.
const WORDS: usize = 20;

const PTX: &str = r#"
.version 8.0
.target sm_90
.address_size 64
.visible .entry warps(.param .u64 px, .param .u64 po)
{
    .reg .pred %p<10>;
    .reg .b32 %r<48>;
    .reg .b64 %rd<8>;
    ld.param.u64 %rd1, [px];
    ld.param.u64 %rd2, [po];
    mov.u32 %r1, %ctaid.x;
    mov.u32 %r2, %ntid.x;
    mov.u32 %r3, %tid.x;
    mad.lo.s32 %r4, %r1, %r2, %r3;
    mul.wide.u32 %rd3, %r4, 4;
    add.s64 %rd4, %rd1, %rd3;
    ld.global.u32 %r5, [%rd4];
    mul.wide.u32 %rd5, %r4, 80;
    add.s64 %rd6, %rd2, %rd5;
    and.b32 %r6, %r5, 31;
    shfl.sync.down.b32 %r7|%p1, %r5, %r6, 31, -1;
    shfl.sync.up.b32 %r8|%p2, %r5, %r6, 0x1800, -1;
    shfl.sync.bfly.b32 %r9, %r5, %r6, 0x101f, -1;
    shfl.sync.idx.b32 %r10|%p3, %r5, %r6, 0x1007, -1;
    selp.u32 %r11, 1, 0, %p1;
    selp.u32 %r12, 2, 0, %p2;
    selp.u32 %r13, 4, 0, %p3;
    or.b32 %r11, %r11, %r12;
    or.b32 %r11, %r11, %r13;
    setp.lt.u32 %p4, %r5, 0x80000000;
    vote.sync.ballot.b32 %r12, %p4, -1;
    vote.sync.all.pred %p5, %p4, -1;
    vote.sync.any.pred %p6, !%p4, -1;
    vote.sync.uni.pred %p7, %p4, -1;
    selp.u32 %r13, 1, 0, %p5;
    selp.u32 %r14, 2, 0, %p6;
    selp.u32 %r15, 4, 0, %p7;
    or.b32 %r13, %r13, %r14;
    or.b32 %r13, %r13, %r15;
    redux.sync.add.s32 %r14, %r5, -1;
    redux.sync.min.s32 %r15, %r5, -1;
    mov.u32 %r17, 0x0f0f0f0f;
    redux.sync.max.u32 %r16, %r5, %r17;
    redux.sync.xor.b32 %r18, %r5, -1;
    and.b32 %r19, %r5, 3;
    match.any.sync.b32 %r20, %r19, -1;
    match.all.sync.b32 %r21|%p1, %r19, -1;
    selp.u32 %r22, 0x100, 0, %p1;
    or.b32 %r21, %r21, %r22;
    shr.u32 %r23, %r3, 1;
    mul.lo.u32 %r23, %r23, -1640531527;
    and.b32 %r23, %r23, 0x8000000;
    setp.ne.u32 %p2, %r23, 0;
    mov.u32 %r24, 0;
    mov.u32 %r25, 0;
    @%p2 bra SKIP;
    activemask.b32 %r24;
    shfl.sync.bfly.b32 %r25, %r5, 1, 31, -1;
SKIP:
    bar.warp.sync -1;
    mov.u32 %r26, %laneid;
    shr.u32 %r26, %r26, 3;
    add.u32 %r26, %r26, 1;
    mov.u32 %r27, 0;
    mov.u32 %r28, %r5;
LOOP:
    activemask.b32 %r29;
    mad.lo.u32 %r27, %r27, 31, %r29;
    shfl.sync.down.b32 %r28, %r28, 1, 31, -1;
    sub.u32 %r26, %r26, 1;
    setp.ne.u32 %p3, %r26, 0;
    @%p3 bra LOOP;
    mov.u32 %r30, 0;
    @%p4 redux.sync.or.b32 %r30, %r5, -1;
    redux.sync.max.s32 %r31, %r5, -1;
    redux.sync.min.u32 %r32, %r5, -1;
    st.global.v4.u32 [%rd6], {%r7, %r8, %r9, %r10};
    st.global.v4.u32 [%rd6+16], {%r11, %r12, %r13, %r14};
    st.global.v4.u32 [%rd6+32], {%r15, %r16, %r18, %r20};
    st.global.v4.u32 [%rd6+48], {%r21, %r24, %r25, %r27};
    st.global.v4.u32 [%rd6+64], {%r28, %r30, %r31, %r32};
    ret;
}
"#;

const NAMES: [&str; WORDS] = [
    "shfl.down",
    "shfl.up (width 8)",
    "shfl.bfly (width 16)",
    "shfl.idx (width 16, clamp 7)",
    "shfl predicates",
    "vote.ballot",
    "vote all/any/uni",
    "redux.add.s32",
    "redux.min.s32",
    "redux.max.u32 (partial mask)",
    "redux.xor",
    "match.any",
    "match.all | predicate",
    "activemask under divergence",
    "shfl.bfly under divergence",
    "activemask in a loop of varying trip counts",
    "shfl.down in that loop",
    "guarded redux.or",
    "redux.max.s32",
    "redux.min.u32",
];

fn inputs(n: usize) -> Vec<u32> {
    let mut s = 0x2545_f491_4f6c_dd1du64;
    (0..n)
        .map(|i| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            // Some equal values, so that match and vote.uni see both outcomes.
            if i % 7 == 3 {
                5
            } else {
                (s >> 16) as u32
            }
        })
        .collect()
}

fn run(
    backend: BackendChoice,
    m: &Module,
    entry: &str,
    (block, grid): (u32, u32),
    bufs: &mut [Vec<u8>],
) {
    let cfg = LaunchConfig {
        grid: [grid, 1, 1],
        block: [block, 1, 1],
        shared_bytes: 0,
    };
    let args = [KernelArg::Buffer(0), KernelArg::Buffer(1)];
    let t = std::time::Instant::now();
    PtxRunner::new(backend, true)
        .launch(m, entry, &cfg, &args, bufs, &ExecOptions::default())
        .unwrap_or_else(|e| panic!("{backend:?}: {e}"));
    // The first GPU launch of a shape includes the shader compile.
    eprintln!(
        "{entry} block {block} grid {grid} on {backend:?}: {:.2} s",
        t.elapsed().as_secs_f64()
    );
}

fn no_adapter() -> bool {
    if let Err(e) = vgpu::gpu::GpuContext::get() {
        assert!(
            std::env::var("VGPU_REQUIRE_GPU").as_deref() != Ok("1"),
            "VGPU_REQUIRE_GPU=1 but there is no GPU adapter: {e}"
        );
        eprintln!("no GPU adapter ({e}): skipped");
        return true;
    }
    false
}

/// One `shfl.sync.bfly` in a loop of five (a butterfly sum): the smallest
/// kernel with a warp operation in a loop (its shader compile time is in
/// docs/PTX_GPU.md).
const SUM: &str = r#"
.version 8.0
.target sm_90
.address_size 64
.visible .entry wsum(.param .u64 px, .param .u64 po)
{
    .reg .pred %p<2>;
    .reg .b32 %r<8>;
    .reg .b64 %rd<8>;
    ld.param.u64 %rd1, [px];
    ld.param.u64 %rd2, [po];
    mov.u32 %r1, %ctaid.x;
    mov.u32 %r2, %ntid.x;
    mov.u32 %r3, %tid.x;
    mad.lo.s32 %r4, %r1, %r2, %r3;
    mul.wide.u32 %rd3, %r4, 4;
    add.s64 %rd4, %rd1, %rd3;
    ld.global.u32 %r5, [%rd4];
    mov.u32 %r6, 16;
LOOP:
    shfl.sync.bfly.b32 %r7, %r5, %r6, 31, -1;
    add.u32 %r5, %r5, %r7;
    shr.u32 %r6, %r6, 1;
    setp.ne.u32 %p1, %r6, 0;
    @%p1 bra LOOP;
    add.s64 %rd5, %rd2, %rd3;
    st.global.u32 [%rd5], %r5;
    ret;
}
"#;

#[test]
fn a_butterfly_sum_matches_the_interpreter() {
    if no_adapter() {
        return;
    }
    let m = Module::parse(SUM, "wsum.ptx").unwrap();
    for shape in [(64u32, 2u32), (40, 1)] {
        let n = (shape.0 * shape.1) as usize;
        let x = inputs(n);
        let xb: Vec<u8> = x.iter().flat_map(|v| v.to_le_bytes()).collect();
        let fresh = || vec![xb.clone(), vec![0u8; 4 * n]];
        let mut cpu = fresh();
        let mut gpu = fresh();
        run(BackendChoice::Cpu, &m, "wsum", shape, &mut cpu);
        run(BackendChoice::Gpu, &m, "wsum", shape, &mut gpu);
        assert_eq!(cpu[1], gpu[1], "block {shape:?}");
        // Every lane of a full warp holds the warp's sum.
        let word = |i: usize| u32::from_le_bytes(cpu[1][4 * i..4 * i + 4].try_into().unwrap());
        let sum = x[..32].iter().fold(0u32, |s, v| s.wrapping_add(*v));
        assert_eq!(word(0), sum);
        assert_eq!(word(31), sum);
    }
}

#[test]
fn warp_operations_match_the_interpreter() {
    if no_adapter() {
        return;
    }
    let m = Module::parse(PTX, "warps.ptx").unwrap();
    // Each shape is a shader compile of its own (8-12 s on lavapipe): two
    // shapes cover full and partial warps and several warps per block.
    for (block, grid) in [(80u32, 3u32), (7, 2)] {
        let n = (block * grid) as usize;
        let x = inputs(n);
        let xb: Vec<u8> = x.iter().flat_map(|v| v.to_le_bytes()).collect();
        let fresh = || vec![xb.clone(), vec![0u8; 4 * WORDS * n]];
        let mut cpu = fresh();
        let mut gpu = fresh();
        run(BackendChoice::Cpu, &m, "warps", (block, grid), &mut cpu);
        run(BackendChoice::Gpu, &m, "warps", (block, grid), &mut gpu);
        let word = |v: &[u8], i: usize| u32::from_le_bytes(v[4 * i..4 * i + 4].try_into().unwrap());
        let mut bad = Vec::new();
        for (t, xt) in x.iter().enumerate() {
            for (j, name) in NAMES.iter().enumerate() {
                let (c, g) = (word(&cpu[1], WORDS * t + j), word(&gpu[1], WORDS * t + j));
                if c != g {
                    bad.push(format!(
                        "block {block}: thread {t} (x = {xt:#x}) {name}: cpu {c:#x}, gpu {g:#x}"
                    ));
                }
            }
        }
        assert!(
            bad.is_empty(),
            "{} results differ:\n{}",
            bad.len(),
            bad.iter().take(30).cloned().collect::<Vec<_>>().join("\n")
        );
        // The test would pass vacuously if every result were the same.
        let distinct = |j: usize| {
            let mut v: Vec<u32> = (0..n).map(|t| word(&cpu[1], WORDS * t + j)).collect();
            v.sort_unstable();
            v.dedup();
            v.len()
        };
        if block >= 32 && n > 32 {
            for j in [0, 3, 5, 11, 13, 15, 16] {
                assert!(distinct(j) > 1, "{} is constant", NAMES[j]);
            }
        }
    }
}

/// The special registers of the warp and the launch (`%nwarpid`,
/// `%lanemask_*`, `%dynamic_smem_size`, `%total_smem_size`, `%smid`, `%nsmid`,
/// `%gridid`), per thread.
const SPECIALS: &str = r#"
.version 8.0
.target sm_90
.address_size 64
.visible .entry specials(.param .u64 px, .param .u64 po)
{
    .reg .pred %p<2>;
    .reg .b32 %r<16>;
    .reg .b64 %rd<8>;
    .shared .align 4 .b8 buf[100];
    ld.param.u64 %rd2, [po];
    mov.u32 %r1, %ctaid.x;
    mov.u32 %r2, %ntid.x;
    mov.u32 %r3, %tid.x;
    mad.lo.s32 %r4, %r1, %r2, %r3;
    mul.wide.u32 %rd5, %r4, 48;
    add.s64 %rd6, %rd2, %rd5;
    mov.u32 %r5, %nwarpid;
    mov.u32 %r6, %lanemask_eq;
    mov.u32 %r7, %lanemask_lt;
    mov.u32 %r8, %lanemask_le;
    mov.u32 %r9, %lanemask_gt;
    mov.u32 %r10, %lanemask_ge;
    mov.u32 %r11, %dynamic_smem_size;
    mov.u32 %r12, %total_smem_size;
    mov.u32 %r13, %smid;
    mov.u32 %r14, %nsmid;
    mov.u64 %rd7, %gridid;
    setp.eq.u32 %p1, %r3, 0;
    @%p1 st.shared.u32 [buf], %r4;
    st.global.v4.u32 [%rd6], {%r5, %r6, %r7, %r8};
    st.global.v4.u32 [%rd6+16], {%r9, %r10, %r11, %r12};
    st.global.v2.u32 [%rd6+32], {%r13, %r14};
    st.global.u64 [%rd6+40], %rd7;
    ret;
}
"#;

#[test]
fn special_registers_match_the_interpreter() {
    if no_adapter() {
        return;
    }
    let m = Module::parse(SPECIALS, "specials.ptx").unwrap();
    let (block, grid, dyn_shared) = (80u32, 2u32, 60u32);
    let n = (block * grid) as usize;
    let go = |backend: BackendChoice| {
        let mut bufs = vec![vec![0u8; 4], vec![0u8; 48 * n]];
        let cfg = LaunchConfig {
            grid: [grid, 1, 1],
            block: [block, 1, 1],
            shared_bytes: dyn_shared,
        };
        let args = [KernelArg::Buffer(0), KernelArg::Buffer(1)];
        PtxRunner::new(backend, true)
            .launch(
                &m,
                "specials",
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
    for t in 0..n {
        for j in 0..12 {
            assert_eq!(
                word(&cpu, 12 * t + j),
                word(&gpu, 12 * t + j),
                "thread {t} word {j}"
            );
        }
    }
    // Lane 33 of a block is lane 1 of warp 1; 80 threads are 3 warps; the
    // 100 static and 60 dynamic bytes round up to 256.
    let t = 33;
    let w: Vec<u32> = (0..8).map(|j| word(&cpu, 12 * t + j)).collect();
    assert_eq!(w, [3, 2, 1, 3, !3, !1, 60, 256]);
}
