//! Global `red.add.f32` and `atom.add.f32` on the GPU path: by a
//! compare-and-swap loop, and on the device's f32 atomics (an
//! `atomic<f32>` view of global memory, chosen where vgpu-gpu's probe finds
//! them PTX's, or forced). With integer-valued addends every order gives the
//! same sums, so each form must give the interpreter's accumulators; the old
//! values `atom` returns must be partial sums; an out-of-bounds atomic faults
//! as on the interpreter. Skipped without an adapter unless
//! `VGPU_REQUIRE_GPU=1`.

mod common;

use common::ptx_gpu::{line, word, Kernel};
use vgpu::gpu::{AtomicF32Path, GpuContext};
use vgpu::ptx::{ExecOptions, KernelArg, PtxError};
use vgpu::ptx_gpu::PtxRunner;
use vgpu::BackendChoice;

const N: usize = 3000;

/// The buffers: x (integer values), 6 accumulators (+ room), the old values.
fn buffers() -> Vec<Vec<u8>> {
    let x: Vec<u8> = (0..N)
        .flat_map(|i| (((i * 7919) % 201) as f32 - 100.0).to_le_bytes())
        .collect();
    vec![x, vec![0u8; 64], vec![0u8; 4 * N]]
}

fn args(extra: u64) -> [KernelArg; 5] {
    [
        KernelArg::Buffer(0),
        KernelArg::Buffer(1),
        KernelArg::Buffer(2),
        KernelArg::U32(N as u32),
        KernelArg::U64(extra),
    ]
}

/// A launch on `backend` with `path`: the buffers (or the fault) and how the
/// atomics ran.
fn run(
    k: &Kernel,
    backend: BackendChoice,
    path: AtomicF32Path,
    extra: u64,
) -> (Result<Vec<Vec<u8>>, PtxError>, Option<bool>) {
    let mut bufs = buffers();
    let mut r = PtxRunner::new(backend, true);
    r.atomic_f32 = path;
    let res = r.launch(
        &k.module,
        "atomf32",
        &line(N.div_ceil(256) as u32, 256, 0),
        &args(extra),
        &mut bufs,
        &ExecOptions::default(),
    );
    (res.map(|_| bufs), r.native_atomic_f32)
}

fn f(v: &[u8], i: usize) -> f32 {
    f32::from_bits(word(v, i))
}

#[test]
fn f32_atomic_adds_match_the_interpreter() {
    let Some(k) = Kernel::load("atomf32") else {
        return;
    };
    let ctx = GpuContext::get().unwrap();
    let (cpu, _) = run(&k, BackendChoice::Cpu, AtomicF32Path::Cas, 0);
    let cpu = cpu.unwrap();
    let total: f32 = (0..N).map(|i| ((i * 7919) % 201) as f32 - 100.0).sum();
    assert_eq!(f(&cpu[1], 4), total);
    assert_eq!(f(&cpu[1], 5), total, "the block totals");
    let mut paths = vec![(AtomicF32Path::Cas, false), (AtomicF32Path::Auto, false)];
    if ctx.has_f32_atomic_add() {
        paths.push((AtomicF32Path::Native, true));
    }
    for (path, forced) in paths {
        let (gpu, native) = run(&k, BackendChoice::Gpu, path, 0);
        let gpu = gpu.unwrap_or_else(|e| panic!("{path:?}: {e}"));
        if forced {
            assert_eq!(native, Some(true));
        }
        if path == AtomicF32Path::Cas {
            assert_eq!(native, Some(false));
        }
        assert_eq!(
            gpu[1], cpu[1],
            "{path:?} (native {native:?}): the accumulators"
        );
        // atom's old values: each a partial sum, all different orders of
        // the same addends (integers, so exact): within the sums' range.
        let mut olds: Vec<f32> = (0..N).map(|i| f(&gpu[2], i)).collect();
        olds.sort_by(f32::total_cmp);
        assert_eq!(olds.iter().filter(|&&o| o == 0.0).count().min(1), 1);
        let bound: f32 = (0..N)
            .map(|i| (((i * 7919) % 201) as f32 - 100.0).abs())
            .sum();
        assert!(olds.iter().all(|o| o.abs() <= bound && o.fract() == 0.0));
    }
}

#[test]
fn an_out_of_bounds_f32_atomic_faults_as_on_the_interpreter() {
    let Some(k) = Kernel::load("atomf32") else {
        return;
    };
    let ctx = GpuContext::get().unwrap();
    let fault = |r: Result<Vec<Vec<u8>>, PtxError>| match r {
        Err(PtxError::Fault(f)) => (format!("{:?}", f.class), f.line, f.block, f.thread),
        Err(e) => panic!("{e}"),
        Ok(_) => panic!("ran"),
    };
    let extra = 1 << 20;
    let cpu = fault(run(&k, BackendChoice::Cpu, AtomicF32Path::Cas, extra).0);
    assert_eq!(cpu.0, "OutOfBounds");
    let mut paths = vec![AtomicF32Path::Cas];
    if ctx.has_f32_atomic_add() {
        paths.push(AtomicF32Path::Native);
    }
    for path in paths {
        let gpu = fault(run(&k, BackendChoice::Gpu, path, extra).0);
        assert_eq!(gpu, cpu, "{path:?}");
    }
}
