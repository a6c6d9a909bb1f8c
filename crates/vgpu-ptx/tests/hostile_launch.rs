//! Hostile launch geometry and trace targets (issue 15): sizes taken from input
//! are checked with overflow-checked arithmetic against CUDA's limits and the
//! launch's [`Limits`] before anything is allocated; the error names the
//! quantity, the limit and the option that raises it.

use vgpu_ptx::{ExecOptions, KernelArg, LaunchConfig, Limits, Module, PtxError, TraceTarget};

/// `out[gid] = gid` for `gid < n`.
const IOTA: &str = ".version 8.0\n.target sm_90\n.address_size 64\n\
.visible .entry iota(.param .u64 pout, .param .u32 pn)\n{\n\
.reg .b32 %r<8>;\n.reg .b64 %rd<4>;\n.reg .pred %p;\n\
ld.param.u64 %rd1, [pout];\nld.param.u32 %r5, [pn];\n\
mov.u32 %r1, %tid.x;\nmov.u32 %r2, %ctaid.x;\nmov.u32 %r3, %ntid.x;\n\
mad.lo.s32 %r4, %r2, %r3, %r1;\nsetp.ge.u32 %p, %r4, %r5;\n@%p ret;\n\
mul.wide.u32 %rd2, %r4, 4;\nadd.s64 %rd3, %rd1, %rd2;\nst.global.u32 [%rd3], %r4;\nret;\n}\n";

fn launch(grid: [u32; 3], block: [u32; 3], opts: &ExecOptions) -> Result<Vec<u8>, PtxError> {
    let m = Module::parse(IOTA, "iota.ptx").expect("parses");
    let mut bufs = vec![vec![0u8; 64 * 4]];
    let cfg = LaunchConfig {
        grid: grid.into(),
        block: block.into(),
        shared_bytes: 0,
    };
    let args = [KernelArg::Buffer(0), KernelArg::U32(64)];
    m.launch("iota", &cfg, &args, &mut bufs, opts)?;
    Ok(bufs.remove(0))
}

fn small_limits() -> ExecOptions {
    ExecOptions {
        limits: Limits {
            max_memory: 64 << 20,
            max_threads: 1 << 32,
        },
        ..ExecOptions::default()
    }
}

#[test]
fn a_small_launch_still_runs() {
    let out = launch([2, 1, 1], [32, 1, 1], &small_limits()).unwrap();
    let words: Vec<u32> = out
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    assert_eq!(words, (0..64).collect::<Vec<u32>>());
}

#[test]
fn a_grid_beyond_cuda_limits_is_a_launch_error() {
    // `--grid 2147483648` used to allocate a result slot per block and abort.
    let e = launch([1 << 31, 1, 1], [1, 1, 1], &ExecOptions::default()).unwrap_err();
    let s = e.to_string();
    assert!(matches!(e, PtxError::Launch { .. }), "{s}");
    assert!(s.contains("2147483648") && s.contains("2147483647"), "{s}");
    let e = launch([1, 65536, 1], [1, 1, 1], &ExecOptions::default()).unwrap_err();
    assert!(e.to_string().contains("65535"), "{e}");
}

#[test]
fn per_block_result_slots_beyond_memory_are_refused() {
    let e = launch([i32::MAX as u32, 1, 1], [1, 1, 1], &small_limits()).unwrap_err();
    let s = e.to_string();
    assert!(matches!(e, PtxError::Limit { .. }), "{s}");
    assert!(
        s.contains("result slot") && s.contains("64.0 MiB") && s.contains("--max-memory"),
        "{s}"
    );
}

#[test]
fn a_three_dimensional_grid_beyond_the_thread_limit_is_refused() {
    // 2^31-1 × 65535 × 65535 blocks of 1024 threads: more than 2^64 threads.
    let e = launch(
        [i32::MAX as u32, 65535, 65535],
        [1024, 1, 1],
        &ExecOptions::default(),
    )
    .unwrap_err();
    let s = e.to_string();
    assert!(
        matches!(e, PtxError::Limit { .. }) && s.contains("--max-threads"),
        "{s}"
    );
    // One block more than 2^32 threads (the default limit).
    let e = launch([65536, 256, 1], [257, 1, 1], &ExecOptions::default()).unwrap_err();
    let s = e.to_string();
    assert!(
        s.contains("4311744512 threads") && s.contains("--max-threads"),
        "{s}"
    );
}

#[test]
fn a_trace_of_a_thread_outside_the_launch_is_an_error() {
    let opts = |block, thread| ExecOptions {
        trace: Some(TraceTarget { block, thread }),
        ..ExecOptions::default()
    };
    let e = launch([2, 1, 1], [256, 1, 1], &opts([0, 0, 0], [999, 0, 0])).unwrap_err();
    let s = e.to_string();
    assert!(
        s.contains("(999,0,0)") && s.contains("256 threads per block"),
        "{s}"
    );
    let e = launch([2, 1, 1], [256, 1, 1], &opts([2, 0, 0], [0, 0, 0])).unwrap_err();
    assert!(e.to_string().contains("outside the grid"), "{e}");
    let e = launch([2, 1, 1], [256, 1, 1], &opts([0, 0, 0], [0, 1, 0])).unwrap_err();
    assert!(e.to_string().contains("(0,1,0)"), "{e}");
    // A thread inside the launch is traced.
    let m = Module::parse(IOTA, "iota.ptx").unwrap();
    let mut bufs = vec![vec![0u8; 64 * 4]];
    let cfg = LaunchConfig {
        grid: [2, 1, 1].into(),
        block: [32, 1, 1].into(),
        shared_bytes: 0,
    };
    let s = m
        .launch(
            "iota",
            &cfg,
            &[KernelArg::Buffer(0), KernelArg::U32(64)],
            &mut bufs,
            &opts([1, 0, 0], [31, 0, 0]),
        )
        .unwrap();
    assert!(!s.trace.is_empty());
}
