//! f32 `add`, `mul`, `sub` and `setp.lt` on subnormal operands and results
//! (PTX without `.ftz` keeps them): the interpreter computes them as the
//! host does, and the GPU path equals it bit for bit where the kernel is
//! compiled declaring `DenormPreserve` and vgpu-gpu's subnormal probe finds
//! the device honouring it (lavapipe does; NVIDIA's Vulkan driver flushes
//! them without it). Skipped without an adapter unless `VGPU_REQUIRE_GPU=1`.

mod common;

use common::ptx_gpu::{line, word, Kernel};
use vgpu::gpu::{f32_subnormal_pairs, f32_subnormals_kept, probe_f32_subnormals, GpuContext};
use vgpu::ptx::KernelArg;

#[test]
fn subnormal_arithmetic_matches_the_interpreter_where_the_device_keeps_subnormals() {
    let Some(k) = Kernel::load("f32_subnormal") else {
        return;
    };
    let ctx = GpuContext::get().unwrap();
    // The probe's pairs (subnormals beside subnormals and powers of two).
    let p = f32_subnormal_pairs();
    let n = p.len();
    let col = |j: usize| {
        p.iter()
            .flat_map(|x| x[j].to_le_bytes())
            .collect::<Vec<u8>>()
    };
    let bufs = [col(0), col(1), vec![0u8; 16 * n]];
    let args = [
        KernelArg::Buffer(0),
        KernelArg::Buffer(1),
        KernelArg::Buffer(2),
        KernelArg::U32(n as u32),
    ];
    let (cpu, gpu) = k.on_both(&line(n.div_ceil(256) as u32, 256, 0), &args, &bufs, 2);
    let mut flushed = 0;
    for (i, [a, b]) in p.iter().enumerate() {
        let want = [
            (a + b).to_bits(),
            (a * b).to_bits(),
            (a - b).to_bits(),
            (a < b) as u32,
        ];
        for (j, w) in want.iter().enumerate() {
            assert_eq!(
                word(&cpu, 4 * i + j),
                *w,
                "interpreter, pair {i} word {j}: {a:e} {b:e}"
            );
            flushed += (word(&gpu, 4 * i + j) != *w) as usize;
        }
    }
    let kept = f32_subnormals_kept(ctx).unwrap().plain;
    if kept {
        assert_eq!(flushed, 0, "the device was found to keep f32 subnormals");
    } else {
        eprintln!("this device does not keep f32 subnormals: {flushed} words differ");
    }
    if ctx.adapter().name.contains("llvmpipe") {
        // lavapipe keeps them, with and without the declaration.
        assert!(ctx.declares_f32_subnormals() && kept);
        let p = probe_f32_subnormals(ctx).unwrap();
        assert!(p.plain && p.fma, "{p:?}");
        assert_eq!(flushed, 0);
    }
}
