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

mod common;

use common::ptx_gpu::{bitwise, in_out, line, word, Kernel, Rng, Words, IN_OUT};

/// Words each thread writes.
const WORDS: usize = 20;

/// What the [`WORDS`] words of a thread hold, in the order `warps.ptx` stores them.
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
    let mut r = Rng(0x2545_f491_4f6c_dd1d);
    (0..n)
        .map(|i| {
            let v = r.next32();
            // Some equal values, so that match and vote.uni see both outcomes.
            if i % 7 == 3 {
                5
            } else {
                v
            }
        })
        .collect()
}

/// `tests/kernels/wsum.ptx`: one `shfl.sync.bfly` in a loop of five (a butterfly sum): the smallest
/// kernel with a warp operation in a loop (its shader compile time is in
/// docs/PTX_GPU.md).
#[test]
fn a_butterfly_sum_matches_the_interpreter() {
    let Some(kernel) = Kernel::load("wsum") else {
        return;
    };
    for shape in [(64u32, 2u32), (40, 1)] {
        let n = (shape.0 * shape.1) as usize;
        let x = inputs(n);
        let bufs = in_out(&x, u32::to_le_bytes, 4 * n);
        let (cpu, gpu) = kernel.on_both(&line(shape.1, shape.0, 0), &IN_OUT, &bufs, 1);
        assert_eq!(cpu, gpu, "block {shape:?}");
        // Every lane of a full warp holds the warp's sum.
        let sum = x[..32].iter().fold(0u32, |s, v| s.wrapping_add(*v));
        assert_eq!(word(&cpu, 0), sum);
        assert_eq!(word(&cpu, 31), sum);
    }
}

/// `tests/kernels/warps.ptx`: the warp operations of the module's header, 20
/// words per thread ([`NAMES`]).
#[test]
fn warp_operations_match_the_interpreter() {
    let Some(kernel) = Kernel::load("warps") else {
        return;
    };
    // Each shape is a shader compile of its own (8-12 s on lavapipe): two
    // shapes cover full and partial warps and several warps per block.
    for (block, grid) in [(80u32, 3u32), (7, 2)] {
        let n = (block * grid) as usize;
        let x = inputs(n);
        let bufs = in_out(&x, u32::to_le_bytes, 4 * WORDS * n);
        let (cpu, gpu) = kernel.on_both(&line(grid, block, 0), &IN_OUT, &bufs, 1);
        Words {
            stride: WORDS,
            names: &NAMES,
        }
        .assert_same(
            &cpu,
            &gpu,
            |t| format!("block {block}: thread {t} (x = {:#x})", x[t]),
            bitwise,
        );
        // The test would pass vacuously if every result were the same.
        let distinct = |j: usize| {
            let mut v: Vec<u32> = (0..n).map(|t| word(&cpu, WORDS * t + j)).collect();
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

/// `tests/kernels/specials.ptx`: the special registers of the warp and the launch (`%nwarpid`,
/// `%lanemask_*`, `%dynamic_smem_size`, `%total_smem_size`, `%smid`, `%nsmid`,
/// `%gridid`), per thread.
#[test]
fn special_registers_match_the_interpreter() {
    let Some(kernel) = Kernel::load("specials") else {
        return;
    };
    let (block, grid, dyn_shared) = (80u32, 2u32, 60u32);
    let n = (block * grid) as usize;
    let bufs = [vec![0u8; 4], vec![0u8; 48 * n]];
    let (cpu, gpu) = kernel.on_both(&line(grid, block, dyn_shared), &IN_OUT, &bufs, 1);
    let names = [
        "%nwarpid",
        "%lanemask_eq",
        "%lanemask_lt",
        "%lanemask_le",
        "%lanemask_gt",
        "%lanemask_ge",
        "%dynamic_smem_size",
        "%total_smem_size",
        "%smid",
        "%nsmid",
        "%gridid, low word",
        "%gridid, high word",
    ];
    Words {
        stride: 12,
        names: &names,
    }
    .assert_same(&cpu, &gpu, |t| format!("thread {t}"), bitwise);
    // Lane 33 of a block is lane 1 of warp 1; 80 threads are 3 warps; the
    // 100 static and 60 dynamic bytes round up to 256.
    let t = 33;
    let w: Vec<u32> = (0..8).map(|j| word(&cpu, 12 * t + j)).collect();
    assert_eq!(w, [3, 2, 1, 3, !3, !1, 60, 256]);
}
