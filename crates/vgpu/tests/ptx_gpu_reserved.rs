//! The shared memory reserved for system software on the GPU path, laid out
//! as the interpreter lays it out (vgpu-ir `cfg::reserved_smem`): the kernel's
//! static and dynamic bytes, padding to the 128-byte allocation unit, then 288
//! usable bytes, zeroed at each block's start. `%reserved_smem_offset_*`,
//! `%aggr_smem_size` and `%total_smem_size` have the interpreter's values, the
//! region holds stores, loads and atomics across a barrier, and an access in
//! the padding or past the usable bytes faults on both backends alike.
//! Skipped without an adapter unless `VGPU_REQUIRE_GPU=1`.

mod common;

use common::ptx_gpu::{assert_same_bytes, line, word, Kernel};
use std::path::Path;
use vgpu::ptx::{ExecOptions, KernelArg, Module, PtxError};
use vgpu::ptx_gpu::PtxRunner;
use vgpu::BackendChoice;

/// `reserved` over 3 blocks of 96 threads with `dyn` bytes of dynamic shared
/// memory (after the kernel's 96 static ones): the same words on both
/// backends, and the region where the layout puts it.
fn run(kernel: &Kernel, dyn_bytes: u32) {
    let (blocks, threads) = (3usize, 96usize);
    let cfg = line(blocks as u32, threads as u32, dyn_bytes);
    let bufs = [vec![0u8; 64 * blocks * threads]];
    let (cpu, gpu) = kernel.on_both(&cfg, &[KernelArg::Buffer(0)], &bufs, 0);
    let names: Vec<u64> = (0..(blocks * threads) as u64).collect();
    assert_same_bytes(&cpu, &gpu, 64, &names, 1);
    let begin = (96 + dyn_bytes).div_ceil(128) * 128;
    let first: Vec<u32> = (0..8).map(|i| word(&gpu, i)).collect();
    assert_eq!(
        first,
        [
            begin,
            begin + 288,
            begin + 1024,
            begin,
            begin,
            begin + 1024,
            begin,
            dyn_bytes
        ],
        "dynamic {dyn_bytes}"
    );
    for b in 0..blocks as u32 {
        let t = b as usize * threads + 5;
        assert_eq!(word(&gpu, 16 * t + 8), 0, "block {b}: a zeroed region");
        assert_eq!(word(&gpu, 16 * t + 9), b * 1000 + 6, "block {b}: neighbour");
        let sum: u32 = (0..threads as u32).map(|i| b * 1000 + i).sum();
        assert_eq!(word(&gpu, 16 * t + 10), sum, "block {b}: atomic sum");
    }
}

/// The region behind no dynamic memory, behind dynamic memory that ends on
/// the allocation unit (region right behind it), one byte past it, and more.
#[test]
fn reserved_region_matches_the_interpreter() {
    let Some(kernel) = Kernel::load("reserved") else {
        return;
    };
    for dyn_bytes in [0, 32, 33, 1000] {
        run(&kernel, dyn_bytes);
    }
}

/// `poke` at `begin + off` on `backend`: its fault's (class, line, block,
/// thread), or `None` when it ran.
fn poke(m: &Module, backend: BackendChoice, off: i32) -> Option<(String, u32, [u32; 3], [u32; 3])> {
    let r = PtxRunner::new(backend, true).launch(
        m,
        "poke",
        &line(2, 32, 0),
        &[KernelArg::U32(off as u32)],
        &mut [],
        &ExecOptions::default(),
    );
    match r {
        Ok(_) => None,
        Err(PtxError::Fault(f)) => Some((format!("{:?}", f.class), f.line, f.block, f.thread)),
        Err(e) => panic!("{backend:?}: {e}"),
    }
}

/// The usable bytes are in bounds, the padding between the kernel's 96 bytes
/// and the region (at 128) and the bytes from the usable end are not: the
/// same outcome on both backends.
#[test]
fn only_the_usable_reserved_bytes_are_in_bounds() {
    if Kernel::load("reserved").is_none() {
        return;
    }
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/kernels/reserved.ptx");
    let text = std::fs::read_to_string(&path).expect("reserved.ptx");
    let m = Module::parse(&text, "reserved.ptx").expect("parses");
    for (off, ok) in [
        (0, true),
        (284, true),
        (-4, false),
        (-32, false),
        (288, false),
        (896, false),
    ] {
        let cpu = poke(&m, BackendChoice::Cpu, off);
        assert_eq!(cpu.is_none(), ok, "offset {off}: {cpu:?}");
        if let Some(f) = &cpu {
            assert!(f.0.contains("OutOfBounds"), "offset {off}: {f:?}");
        }
        assert_eq!(poke(&m, BackendChoice::Gpu, off), cpu, "offset {off}");
    }
}
