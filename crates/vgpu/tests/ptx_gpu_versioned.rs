//! Loop versioning of checked kernels (vgpu-ir's wgsl/cfg/versioned.rs): a
//! counted loop through barriers whose global loads move with its
//! iterations is written twice, and the workgroup takes the copy without
//! checks only where each thread's loads stay in their regions at every
//! iteration. For both loops of `tests/kernels/versioned.ptx` (the steps
//! after the loads and before them): the checked WGSL holds the copy
//! without region tests; in bounds the GPU writes the interpreter's bytes;
//! where a buffer is one element short, so that only the last iteration
//! (or the first) strays, or an index steps down below its buffer, the GPU
//! faults with the interpreter's class, line, block and thread. Skipped
//! without an adapter unless `VGPU_REQUIRE_GPU=1`. The GPU path runs such a
//! kernel first without the checked copy (a workgroup that needs it returns
//! and the launch runs again with it), so the faults here also test that
//! second run.

mod common;

use common::ptx_gpu::no_adapter;
use std::path::Path;
use vgpu::ptx::{ExecOptions, Fault, KernelArg, LaunchConfig, Module, PtxError};
use vgpu::ptx_gpu::PtxRunner;
use vgpu::BackendChoice;
use vgpu_ir::wgsl::cfg::{emit_cfg_wgsl_with, fault, CfgChecks, CfgWgslOptions};

/// `tests/kernels/versioned.ptx`, or `None` without an adapter (skipped).
fn module() -> Option<Module> {
    if no_adapter() {
        return None;
    }
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/kernels/versioned.ptx");
    let text = std::fs::read_to_string(&path).expect("tests/kernels/versioned.ptx");
    Some(Module::parse(&text, "versioned.ptx").expect("versioned.ptx parses"))
}

/// Two blocks of 64 threads (the kernels index by `ctaid.x * 64 + tid.x`).
const GRID: u32 = 2;

/// `entry` (checked) on `backend` over `a` and `b` (f32 arrays of `la` and
/// `lb` elements) for `n` iterations with stride `stride`: `out` or the
/// launch's error.
fn run(
    m: &Module,
    backend: BackendChoice,
    entry: &str,
    (la, lb): (usize, usize),
    n: i32,
    stride: i32,
) -> Result<Vec<u8>, PtxError> {
    let floats = |len: usize, scale: f32| -> Vec<u8> {
        (0..len)
            .flat_map(|i| (i as f32 * scale + 1.0).to_le_bytes())
            .collect()
    };
    let mut bufs = vec![
        floats(la, 1.0),
        floats(lb, 0.5),
        vec![0u8; 4 * 64 * GRID as usize],
    ];
    let args = [
        KernelArg::Buffer(0),
        KernelArg::Buffer(1),
        KernelArg::Buffer(2),
        KernelArg::S32(n),
        KernelArg::S32(stride),
    ];
    let cfg = LaunchConfig {
        grid: [GRID, 1, 1].into(),
        block: [64, 1, 1].into(),
        shared_bytes: 0,
    };
    let opts = ExecOptions::default();
    PtxRunner::new(backend, true).launch(m, entry, &cfg, &args, &mut bufs, &opts)?;
    Ok(bufs.swap_remove(2))
}

/// The elements `a` and `b` need for `n` iterations at `stride`.
fn lengths(n: usize, stride: usize) -> (usize, usize) {
    let threads = 64 * GRID as usize;
    let last = n.saturating_sub(1);
    (threads + 64 * last, threads + 2 * stride * last)
}

/// The fault of a launch that must fault.
fn fault(r: Result<Vec<u8>, PtxError>, what: &str) -> Fault {
    match r {
        Err(PtxError::Fault(f)) => *f,
        Err(e) => panic!("{what}: expected a fault, got {e}"),
        Ok(_) => panic!("{what}: expected a fault, the kernel ran to completion"),
    }
}

/// The loop of `entry`, checked (as `vgpu ptx run` checks: without the
/// race check, whose barriers check), is written twice: a copy entered
/// where `wdok` holds, without a region test (`gaddr`) or fault gate,
/// before the checked one.
#[test]
fn the_checked_wgsl_holds_a_copy_without_region_tests() {
    let Some(m) = module() else { return };
    for entry in ["walk", "walk_pre"] {
        let (_, ck) = vgpu::ptx::lower::lower_entry(&m, entry).expect("the kernel lowers");
        let o = CfgWgslOptions::plain([64, 1, 1], true);
        let no_race = CfgChecks {
            initcheck: false,
            race: false,
        };
        let w = emit_cfg_wgsl_with(&ck, &o, no_race).expect("WGSL");
        let at = w
            .find("if (wdok1 != 0u) {")
            .unwrap_or_else(|| panic!("{entry}: no versioned loop in\n{w}"));
        let clean = &w[at..];
        let clean = &clean[..clean.find("} else {").expect("the checked copy")];
        assert!(clean.contains("loop {"), "{entry}: {clean}");
        assert!(!clean.contains("gaddr("), "{entry}: {clean}");
        assert!(!clean.contains("g_fcls"), "{entry}: {clean}");
        assert!(w[at + clean.len()..].contains("gaddr("), "{entry}");
        // As the GPU path runs it first: the checked copy left out, a
        // workgroup that needs it returning with the record's fallback set
        // (the launch then runs again with the full kernel).
        let first = CfgWgslOptions {
            speculative_loops: true,
            ..o
        };
        let e = vgpu_ir::wgsl::cfg::emit_cfg_kernel(&ck, &first, no_race).expect("WGSL");
        let rest = &e.text[e.text.find("if (wdok1 != 0u) {").expect("versioned")..];
        let fallback = format!("atomicStore(&flt[{}], 1u); return;", fault::FALLBACK);
        let end = rest.find(&fallback);
        assert!(e.speculative && end.is_some(), "{entry}: {}", e.text);
        let both = &rest[..end.unwrap_or(0)];
        assert!(!both.contains("gaddr("), "{entry}: {both}");
    }
}

/// In bounds, for no, one and several iterations and two strides, the GPU
/// writes the interpreter's bytes.
#[test]
fn in_bounds_the_gpu_writes_the_interpreters_bytes() {
    let Some(m) = module() else { return };
    for entry in ["walk", "walk_pre"] {
        for (n, stride) in [(0, 3), (1, 3), (5, 3), (7, 0)] {
            let len = lengths(n as usize, stride as usize);
            let cpu = run(&m, BackendChoice::Cpu, entry, len, n, stride)
                .unwrap_or_else(|e| panic!("{entry} n={n} on the CPU: {e}"));
            let gpu = run(&m, BackendChoice::Gpu, entry, len, n, stride)
                .unwrap_or_else(|e| panic!("{entry} n={n} on the GPU: {e}"));
            assert_eq!(gpu, cpu, "{entry} n={n} stride={stride}");
        }
    }
}

/// A buffer one element short (so that the last thread's last iteration
/// strays), one too short for the first iteration, and an index stepping
/// down below its buffer: the GPU's fault is the interpreter's.
#[test]
fn loads_that_stray_at_any_iteration_fault_as_in_the_interpreter() {
    let Some(m) = module() else { return };
    let (n, stride) = (5, 3);
    let (la, lb) = lengths(n as usize, stride as usize);
    let key = |f: &Fault| (f.class, f.line, f.block, f.thread);
    for entry in ["walk", "walk_pre"] {
        for (what, len, s, thread) in [
            ("a short by one", (la - 1, lb), stride, Some([63, 0, 0])),
            ("b short by one", (la, lb - 1), stride, Some([63, 0, 0])),
            ("a short for the first iteration", (100, lb), stride, None),
            ("an index stepping down", (la, lb), -1, None),
        ] {
            let what = format!("{entry}: {what}");
            let cpu = fault(run(&m, BackendChoice::Cpu, entry, len, n, s), &what);
            let gpu = fault(run(&m, BackendChoice::Gpu, entry, len, n, s), &what);
            eprintln!("{what}: cpu {cpu}\n{what}: gpu {gpu}");
            assert_eq!(key(&gpu), key(&cpu), "{what}");
            if let Some(t) = thread {
                assert_eq!(cpu.thread, t, "{what}");
                assert_eq!(cpu.block, [1, 0, 0], "{what}");
            }
        }
    }
}
