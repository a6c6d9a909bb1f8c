//! The checked WGSL of lowered PTX kernels skips `saddr`, the bounds and
//! alignment test of shared, local and parameter accesses, exactly where
//! vgpu-ir's value ranges (wgsl/cfg/ranges.rs) prove the address inside the
//! space's own bytes and aligned for the launch's block shape: nvcc's
//! `matmul_tiled` tile loads and stores for 16 × 16 blocks, not for 32 × 32
//! ones whose threads would reach past the tiles, and never the planted
//! out-of-bounds store of the `oob_shared_dynamic` case. And the checked
//! barriers' release: skipped once all shared memory is written.

use std::path::Path;
use vgpu_ir::cfg::{CfgKernel, Inst, Space};
use vgpu_ir::wgsl::cfg::{emit_cfg_wgsl, emit_cfg_wgsl_with, CfgChecks, CfgWgslOptions};
use vgpu_ptx::lower::lower_entry;
use vgpu_ptx::Module;

/// `entry` of the PTX file at `path` (from this crate), lowered.
fn lowered(path: &str, entry: &str) -> CfgKernel {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
    let text = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    let m = Module::parse(&text, path).expect("the module parses");
    lower_entry(&m, entry).expect("the kernel lowers").1
}

/// How many of `k`'s statements access `space` (an element each).
fn accesses(k: &CfgKernel, space: Space) -> usize {
    k.blocks
        .iter()
        .flat_map(|b| &b.stmts)
        .map(|s| match &s.inst {
            Inst::Load { space: sp, d, .. } if *sp == space => d.len(),
            Inst::Store { space: sp, src, .. } if *sp == space => src.len(),
            Inst::Atom { space: sp, .. } if *sp == space => 1,
            _ => 0,
        })
        .sum()
}

/// Options for blocks of `block` on an adapter with `SHADER_F64` (the f32
/// fma's emulation needs it).
fn options(block: [u32; 3], checked: bool) -> CfgWgslOptions {
    let mut o = CfgWgslOptions::plain(block, checked);
    o.f64 = true;
    o
}

/// The checked WGSL of `k` for blocks of `block` with `dyn_shared` dynamic
/// bytes: its `saddr` tests of shared memory, and of parameters.
fn saddr_tests(k: &CfgKernel, block: [u32; 3], dyn_shared: u32) -> (usize, usize) {
    let mut o = options(block, true);
    o.dyn_shared = dyn_shared;
    let w = emit_cfg_wgsl(k, &o).expect("WGSL");
    let count = |limit: &str| {
        w.lines()
            .filter(|l| l.contains("= saddr(") && l.contains(limit))
            .count()
    };
    (count("SHARED_BYTES"), count("PARAM_BYTES"))
}

/// The checked WGSL of `k` in structured form for blocks of `block`, with
/// the checks `vgpu ptx run` asks for by default (no race check, no global
/// initcheck).
fn structured_checked(k: &CfgKernel, block: [u32; 3]) -> String {
    let mut o = options(block, true);
    o.structured = true;
    let none = CfgChecks {
        initcheck: false,
        race: false,
    };
    emit_cfg_wgsl_with(k, &o, none).expect("WGSL")
}

#[test]
fn matmul_tiled_tile_accesses_skip_the_check_for_16_by_16_blocks() {
    let k = lowered("../../ptx-cases/kernels.ptx", "matmul_tiled");
    // Two tile stores and 32 tile loads per iteration; six parameters.
    assert_eq!(accesses(&k, Space::Shared), 34);
    assert_eq!(accesses(&k, Space::Param), 6);
    // Each address is 1024·{0,1} + 64·tid.y (or a constant) + 4·tid.x +
    // a constant, under 2048 bytes for 16 × 16 threads: no test left.
    assert_eq!(saddr_tests(&k, [16, 16, 1], 0), (0, 0));
    // For 32 × 32 threads the stores (64·ty + 4·tx up to 2108, and 1024
    // past that) and the load of `Bs[15][tx]` (1024 + 960 + 4·tx up to
    // 2108) may reach past the 2048 bytes and keep their test; the loads of
    // `As[ty][k]` (64·ty + 4·k, at most 2044) and of `Bs[k][tx]` for k < 15
    // stay inside. The parameters, at constant offsets, never need it.
    assert_eq!(saddr_tests(&k, [32, 32, 1], 0), (3, 0));
    // Where faults do not end the thread (the structured form, barriers), a
    // load that may fault is guarded by its offset's validity; a proven one
    // is not, as it cannot fault.
    let w = structured_checked(&k, [16, 16, 1]);
    let loads: Vec<&str> = w
        .lines()
        .filter(|l| l.contains("ld_s(t") || l.contains("ld_p(t"))
        .collect();
    // The 32 tile loads, once in each copy of the versioned loop
    // (versioned.rs) but not twice more on `sh_full` (the tile stores write
    // all of shared memory before the first barrier, written.rs), and the
    // six parameters.
    assert!(w.contains("if (wdok"), "{w}");
    assert_eq!(loads.len(), 2 * 32 + 6, "{w}");
    assert!(
        loads.iter().all(|l| !l.contains("!= 0xffffffffu")),
        "{loads:?}"
    );
    // Unchecked, no test at all.
    let o = options([16, 16, 1], false);
    assert!(!emit_cfg_wgsl(&k, &o).expect("WGSL").contains("= saddr("));
}

#[test]
fn a_planted_out_of_bounds_shared_store_keeps_its_check() {
    let k = lowered(
        "tests/cases/oob_shared_dynamic/kernel.ptx",
        "oob_shared_dynamic",
    );
    assert_eq!(accesses(&k, Space::Shared), 1);
    // The case's launch: 32 threads store at 8·tid.x in 64 dynamic bytes.
    assert_eq!(saddr_tests(&k, [32, 1, 1], 64).0, 1);
    // Eight threads stay inside them (8·7 + 4 <= 64); nine would not.
    assert_eq!(saddr_tests(&k, [8, 1, 1], 64).0, 0);
    assert_eq!(saddr_tests(&k, [9, 1, 1], 64).0, 1);
    // Without dynamic bytes every address is outside.
    assert_eq!(saddr_tests(&k, [1, 1, 1], 0).0, 1);
}

/// Where a checked kernel's barriers judge its initialisation check (without
/// the race check), each barrier is one `workgroupBarrier()` followed by the
/// judgement in each thread while shared memory is not all written
/// (checks.rs, `shadow_release`: the interval's slot of pending reads, then
/// the count of written words), no uniform load and no second barrier:
/// `reduce_sum_atomic`'s two barrier sites (after the first store, in the
/// halving loop) and the one after the thread's run (the block's earliest
/// fault taken, then where there is none the last interval's judgement), at
/// 255 threads, which leave a word of shared memory unwritten. At 256, where
/// all of it is proven written by the first barrier (wgsl/cfg/written.rs)
/// and nothing reads it before, there is no initialisation check at all:
/// no release, no shadow bits.
#[test]
fn checked_barriers_release_only_while_shared_memory_is_not_all_written() {
    let k = lowered("../../ptx-cases/kernels.ptx", "reduce_sum_atomic");
    let release =
        "workgroupBarrier();\n  if (!sh_full) {\n    let u = atomicLoad(&wg_uninit[sh_rp & 1u]);";
    let w = structured_checked(&k, [256, 1, 1]);
    assert_eq!(w.split(release).count() - 1, 0, "{w}");
    assert!(!w.contains("wg_init"), "{w}");
    assert_eq!(w.matches("workgroupBarrier();").count(), 3, "{w}");
    let w = structured_checked(&k, [255, 1, 1]);
    let sites: Vec<&str> = w.split(release).skip(1).collect();
    assert_eq!(sites.len(), 2, "{w}");
    for site in &sites {
        let judged = &site[..site
            .find("sh_full = atomicLoad(&wg_nfull) >= SH_WORDS;")
            .expect("the count read")];
        assert!(judged.contains("sh_rp = sh_rp ^ 1u;"), "{judged}");
        assert!(!judged.contains("workgroupBarrier"), "{judged}");
    }
    assert!(!w.contains("workgroupUniformLoad"), "{w}");
    assert_eq!(w.matches("workgroupBarrier();").count(), 3, "{w}");
}

/// The initialisation check's notes of proven shared loads wait and are
/// written once per run of loads under one `if (!sh_full)`
/// (wgsl/cfg/shadow_reads.rs): `matmul_tiled`'s 32 tile loads at 16 × 8
/// (whose threads store half of each tile: shared memory is not proven all
/// written, written.rs) make one group of 32 notes, none left beside its
/// load; for 32 × 4 the load that keeps its bounds test notes at once, the
/// others still wait.
#[test]
fn proven_shared_loads_note_their_reads_once_per_run() {
    let k = lowered("../../ptx-cases/kernels.ptx", "matmul_tiled");
    let groups = |w: &str| -> Vec<usize> {
        w.split("if (!sh_full) {")
            .skip(1)
            .map(|g| {
                g[..g.find('}').expect("group end")]
                    .matches("sh_rd(")
                    .count()
            })
            // The barriers' releases open with the same test.
            .filter(|&n| n > 0)
            .collect()
    };
    let w = structured_checked(&k, [16, 8, 1]);
    // The block is written twice, its copy for once all of shared memory
    // is written without notes (structured.rs, `unswitched`).
    assert!(w.contains("  if (sh_full) {"), "{w}");
    assert_eq!(groups(&w), vec![32], "{w}");
    assert_eq!(w.matches("sh_rd(t").count(), 32, "{w}");
    let w = structured_checked(&k, [32, 4, 1]);
    let grouped: usize = groups(&w).iter().sum();
    // The load of `Bs[15][tx]` may fault and notes beside itself.
    assert_eq!(grouped, 31, "{w}");
    assert_eq!(w.matches("sh_rd(t").count(), 32, "{w}");
}

/// Shared memory indexed once per base (wgsl/cfg/padded_smem.rs):
/// `matmul_tiled`'s tile accesses, unchecked, or checked where proven
/// (16 × 16), read `smem[((base >> 2) & CAP) + k]` on an array padded to
/// `CAP + kmax + 1` words, `CAP + 1` a power of two (the base's alignment
/// kept); where the launch allows less padding than that,
/// `smem[min(base >> 2, CAP) + k]` on an array padded by the spread of the
/// constant word offsets `k`; where it allows less than that, every index
/// is computed as before.
#[test]
fn shared_words_are_indexed_once_per_base_where_the_launch_allows_padding() {
    let k = lowered("../../ptx-cases/kernels.ptx", "matmul_tiled");
    let padded = |checked: bool, block: [u32; 3], words: u32| {
        let mut o = options(block, checked);
        o.smem_pad_words = words;
        emit_cfg_wgsl(&k, &o).expect("WGSL")
    };
    let decl = |w: &str| -> u64 {
        let d = w.split("var<workgroup> smem: array<").nth(1).expect("smem");
        let n = d.split(", ").nth(1).expect("length");
        n[..n.find('>').unwrap()].parse().unwrap()
    };
    // The masks written: each `& CAPu)` after a base's shift.
    let masks = |w: &str| -> Vec<u64> {
        w.split(" >> 2u) & ")
            .skip(1)
            .map(|t| t[..t.find('u').unwrap()].parse().unwrap())
            .collect()
    };
    let plain = padded(false, [16, 16, 1], 0);
    assert_eq!(plain.matches("rd_s_in(").count(), 1, "only its definition");
    let base = decl(&plain);
    for checked in [false, true] {
        let w = padded(checked, [16, 16, 1], 4096);
        // The 32 tile loads and the 2 tile stores, through the readers and
        // writers that do not clamp (the index is below the padded length),
        // from a base masked by one less than a power of two.
        assert_eq!(w.matches("rd_s_in(((").count(), 32, "{w}");
        assert_eq!(w.matches("wr_s_in(((").count(), 2, "{w}");
        let m = masks(&w);
        assert_eq!(m.len(), 34, "{w}");
        assert!(m
            .iter()
            .all(|&c| c == m[0] && (c + 1).is_power_of_two() && c >= base - 1));
        let words = decl(&w);
        assert_eq!(words, m[0] + 1 + 240, "the mask, then the tiles' largest k");
        // Room for the spread of k but not the mask: `min`.
        let spread = padded(checked, [16, 16, 1], (words - base - 1) as u32);
        assert_eq!(spread.matches("rd_s_in(min(").count(), 32, "{spread}");
        assert_eq!(spread.matches("wr_s_in(min(").count(), 2);
        let spread_words = decl(&spread);
        assert!(spread_words > base && spread_words < words);
        // Too little room even for that: as computed.
        let tight = padded(checked, [16, 16, 1], (spread_words - base - 1) as u32);
        assert_eq!(tight.matches("rd_s_in(").count(), 1);
        assert_eq!(decl(&tight), base);
    }
    // Checked with 32 × 32 threads: the three accesses that may pass the
    // tiles keep their test and their computed index.
    let w = padded(true, [32, 32, 1], 4096);
    assert_eq!(
        w.matches("rd_s_in(((").count() + w.matches("wr_s_in(((").count(),
        31
    );
}

/// Shared memory proven all written by the first barrier (wgsl/cfg/
/// written.rs): each thread's tile stores, unguarded before the barrier,
/// cover both tiles of `matmul_tiled` at 16 × 16 and the 1 KiB of
/// `reduce_sum_atomic` at 256 threads, so no load after the barrier notes
/// its read and no block is written twice on `sh_full`; with fewer threads
/// (16 × 15, 255) a word stays unwritten and the notes stay.
#[test]
fn shared_memory_written_before_the_first_barrier_needs_no_notes_after_it() {
    let notes = |w: &str| w.matches("sh_rd(t").count();
    let mm = lowered("../../ptx-cases/kernels.ptx", "matmul_tiled");
    let w = structured_checked(&mm, [16, 16, 1]);
    assert_eq!(notes(&w), 0, "{w}");
    assert!(!w.contains("if (sh_full) {"), "{w}");
    let w = structured_checked(&mm, [16, 15, 1]);
    assert_eq!(notes(&w), 32, "{w}");
    let red = lowered("../../ptx-cases/kernels.ptx", "reduce_sum_atomic");
    let w = structured_checked(&red, [256, 1, 1]);
    assert_eq!(notes(&w), 0, "{w}");
    let w = structured_checked(&red, [255, 1, 1]);
    assert!(notes(&w) > 0, "{w}");
}

/// The region caches' first guess (wgsl/cfg/seeds.rs): `reduce_sum_atomic`'s
/// load of `x[i]` derives from parameter 0 and its atomic on `*out` from
/// parameter 1 (8 bytes on), so each thread starts their caches from those
/// parameters' launch words, the load's from the region words and the
/// atomic's from the writable-region words; `matmul_tiled`'s loop-carried
/// pointers into `A` and `B` (parameters 0 and 1) likewise.
#[test]
fn global_access_caches_start_from_their_parameters_region() {
    let red = lowered("../../ptx-cases/kernels.ptx", "reduce_sum_atomic");
    let w = structured_checked(&red, [256, 1, 1]);
    let seeds = &w[w.find("fn seed_caches() {").expect("seed_caches")..];
    let seeds = &seeds[..seeds.find("\n}").expect("its end")];
    assert!(w.contains("  seed_caches();\n"), "{w}");
    assert!(
        seeds.contains("gc0 = vec2<u32>(words[s + 0u], cache_len(words[s + 1u], 4u));"),
        "{seeds}"
    );
    assert!(
        seeds.contains("gc1 = vec2<u32>(words[s + 6u], cache_len(words[s + 7u], 4u));"),
        "{seeds}"
    );
    let mm = lowered("../../ptx-cases/kernels.ptx", "matmul_tiled");
    let w = structured_checked(&mm, [16, 16, 1]);
    let seeds = &w[w.find("fn seed_caches() {").expect("seed_caches")..];
    let seeds = &seeds[..seeds.find("\n}").expect("its end")];
    assert!(
        seeds.contains("(words[s + 0u], cache_len(words[s + 1u], 4u))"),
        "{seeds}"
    );
    assert!(
        seeds.contains("(words[s + 4u], cache_len(words[s + 5u], 4u))"),
        "{seeds}"
    );
}
