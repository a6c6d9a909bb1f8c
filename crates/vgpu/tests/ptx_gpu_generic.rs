//! Generic addresses on the GPU path: `ld`, `st`, `atom` and `red` without a
//! state space go to shared, local or global memory by the interpreter's
//! windows (`cvta.shared` adds `1 << 44`, `cvta.local` `2 << 44`; anything
//! else is global), with the same results and the same faults as the
//! interpreter; a thread spinning on a strong load lets the other warp of its
//! block run to the store it waits for. Skipped without an adapter unless
//! `VGPU_REQUIRE_GPU=1`.

mod common;

use common::ptx_gpu::{assert_same_bytes, line, word, Kernel};
use std::path::Path;
use vgpu::ptx::{ExecOptions, KernelArg, Module, PtxError};
use vgpu::ptx_gpu::PtxRunner;
use vgpu::BackendChoice;

const BLOCKS: usize = 3;
const THREADS: usize = 64;

/// The output of `generic`: 64 bytes per thread and the global counter word.
fn out_buffer() -> [Vec<u8>; 1] {
    [vec![0u8; 64 * BLOCKS * THREADS + 4]]
}

/// Every word `generic` writes is the interpreter's on the GPU, and a few are
/// what the kernel means them to be.
#[test]
fn generic_accesses_match_the_interpreter() {
    let Some(kernel) = Kernel::load("generic") else {
        return;
    };
    let cfg = line(BLOCKS as u32, THREADS as u32, 0);
    let (cpu, gpu) = kernel.on_both(&cfg, &[KernelArg::Buffer(0)], &out_buffer(), 0);
    let n = BLOCKS * THREADS;
    let names: Vec<u64> = (0..n as u64).collect();
    assert_same_bytes(&cpu[..64 * n], &gpu[..64 * n], 64, &names, 1);
    assert_eq!(word(&gpu, 16 * n), n as u32, "the global red.add count");
    assert_eq!(word(&cpu, 16 * n), n as u32, "the global red.add count");
    for b in 0..BLOCKS as u32 {
        let t = b as usize * THREADS;
        let sum: u32 = (0..THREADS as u32).map(|i| b * 1000 + i).sum();
        assert_eq!(word(&gpu, 16 * t), b * 1000 + 1, "block {b}: neighbour");
        assert_eq!(word(&gpu, 16 * t + 1), sum, "block {b}: shared red.add");
        assert_eq!(word(&gpu, 16 * t + 2), u32::MAX, "block {b}: shared red.or");
        assert_eq!(word(&gpu, 16 * t + 4), 0xffff_ff81, "block {b}: ld.s8");
        assert_eq!(word(&gpu, 16 * t + 10), 77, "block {b}: cas");
        assert_eq!(
            word(&gpu, 16 * t + 12),
            b * 1000 + 32 + 12345,
            "block {b}: spin"
        );
    }
}

/// The GPU without its checks (offsets computed, not looked up) writes the
/// same words.
#[test]
fn unchecked_generic_accesses_match_the_interpreter() {
    if Kernel::load("generic").is_none() {
        return;
    }
    let m = module();
    let cfg = line(BLOCKS as u32, THREADS as u32, 0);
    let run = |backend, checked| {
        let mut bufs = out_buffer();
        PtxRunner::new(backend, checked)
            .launch(
                &m,
                "generic",
                &cfg,
                &[KernelArg::Buffer(0)],
                &mut bufs,
                &ExecOptions::default(),
            )
            .unwrap_or_else(|e| panic!("{backend:?}: {e}"));
        bufs[0].clone()
    };
    let (cpu, gpu) = (
        run(BackendChoice::Cpu, true),
        run(BackendChoice::Gpu, false),
    );
    let n = BLOCKS * THREADS;
    let names: Vec<u64> = (0..n as u64).collect();
    assert_same_bytes(&cpu[..64 * n], &gpu[..64 * n], 64, &names, 1);
    assert_eq!(word(&gpu, 16 * n), word(&cpu, 16 * n), "the global count");
}

fn module() -> Module {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/kernels/generic.ptx");
    let text = std::fs::read_to_string(&path).expect("generic.ptx");
    Module::parse(&text, "generic.ptx").expect("parses")
}

/// `gpoke`'s (sel, raw address, mode).
type Poke = (u32, u64, u32);

/// A fault's (class, line, block, thread).
type FaultAt = (String, u32, [u32; 3], [u32; 3]);

/// `gpoke` with `(sel, raw, mode)` on `backend`: its fault, or `None` when
/// it ran.
fn poke(m: &Module, backend: BackendChoice, (sel, raw, mode): Poke) -> Option<FaultAt> {
    let mut bufs = [vec![0u8; 8192]];
    let args = [
        KernelArg::Buffer(0),
        KernelArg::U64(raw),
        KernelArg::U32(sel),
        KernelArg::U32(mode),
    ];
    let r = PtxRunner::new(backend, true).launch(
        m,
        "gpoke",
        &line(2, 32, 0),
        &args,
        &mut bufs,
        &ExecOptions::default(),
    );
    match r {
        Ok(_) => None,
        Err(PtxError::Fault(f)) => Some((format!("{:?}", f.class), f.line, f.block, f.thread)),
        Err(e) => panic!("{backend:?}: {e}"),
    }
}

/// In bounds, out of bounds and misaligned in each window, atomics on local
/// memory, and addresses just outside the windows (global, so out of
/// bounds): the same outcome on both backends, and the one expected.
#[test]
fn generic_faults_match_the_interpreter() {
    if Kernel::load("generic").is_none() {
        return;
    }
    let m = module();
    let (ld, st, atom, ld16, red) = (0, 1, 2, 3, 4);
    let shared = 1u64 << 44;
    let local = 2u64 << 44;
    let oob = Some("OutOfBounds");
    let mis = Some("Misaligned");
    let cases: [(Poke, Option<&str>); 26] = [
        // Global: the buffer through its own (generic) pointer.
        ((0, 0, st), None),
        ((0, 8188, ld), None),
        ((0, 4, atom), None),
        ((0, 8, red), None),
        ((0, 8192, ld), oob),
        ((0, 2, st), mis),
        // Shared: 64 bytes, padding to 128, then the reserved region.
        ((1, 0, ld), None),
        ((1, 60, st), None),
        ((1, 8, red), None),
        ((1, 128, atom), None),
        ((1, 64, ld), oob),
        ((1, 128 + 288, ld), oob),
        ((1, 2, ld), mis),
        ((1, 1, ld16), mis),
        // Local: 16 bytes, and no atomics.
        ((2, 0, ld), None),
        ((2, 12, st), None),
        ((2, 14, ld16), None),
        ((2, 16, ld), oob),
        ((2, 1, st), mis),
        ((2, 0, atom), oob),
        ((2, 2, atom), mis),
        ((2, 8, red), oob),
        // Raw addresses: in the windows, and just outside them.
        ((3, shared + 4, ld), None),
        ((3, local + 8, st), None),
        ((3, shared - 4, ld), oob),
        ((3, shared + (1 << 32), ld), oob),
    ];
    for (case, want) in cases {
        let cpu = poke(&m, BackendChoice::Cpu, case);
        assert_eq!(
            cpu.as_ref().map(|f| f.0.as_str()),
            want,
            "{case:?}: {cpu:?}"
        );
        if let Some(f) = &cpu {
            assert_eq!((f.2, f.3), ([1, 0, 0], [3, 0, 0]), "{case:?}");
        }
        assert_eq!(poke(&m, BackendChoice::Gpu, case), cpu, "{case:?}");
    }
}
