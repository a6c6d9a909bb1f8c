//! Global loads and stores of a whole warp: the fast path (every lane inside one
//! allocation) gives the same values as lane-by-lane access, and when some lane
//! is out of bounds or misaligned the fault still names the first such thread
//! and the PTX line.

use vgpu_ptx::{ExecOptions, FaultClass, KernelArg, LaunchConfig, Module, PtxError};

const HEAD: &str = ".version 8.0\n.target sm_90\n.address_size 64\n";

/// `out[tid] = in[tid * stride]`, read `skew_bytes` further for thread
/// `skew_tid`; with `guard_odd` only odd threads load and store.
fn gather(stride: u32, skew_tid: u32, skew_bytes: u32, guard_odd: bool) -> String {
    let g = if guard_odd { "@%p " } else { "" };
    format!(
        "{HEAD}.visible .entry g(.param .u64 pin, .param .u64 pout)\n{{\n\
         .reg .b32 %r<8>;\n.reg .b64 %rd<8>;\n.reg .pred %p, %q;\n\
         ld.param.u64 %rd1, [pin];\nld.param.u64 %rd2, [pout];\n\
         mov.u32 %r1, %tid.x;\nmul.lo.s32 %r2, %r1, {stride};\n\
         setp.eq.s32 %q, %r1, {skew_tid};\nselp.b32 %r3, {skew_bytes}, 0, %q;\n\
         and.b32 %r4, %r1, 1;\nsetp.eq.s32 %p, %r4, 1;\n\
         mul.wide.s32 %rd3, %r2, 4;\ncvt.u64.u32 %rd4, %r3;\nadd.s64 %rd5, %rd3, %rd4;\n\
         add.s64 %rd5, %rd1, %rd5;\nmul.wide.s32 %rd6, %r1, 4;\nadd.s64 %rd6, %rd2, %rd6;\n\
         {g}ld.global.u32 %r5, [%rd5];\n\
         {g}st.global.u32 [%rd6], %r5;\nret;\n}}\n"
    )
}

fn run(src: &str, threads: u32, in_words: usize) -> (Result<(), PtxError>, Vec<u32>) {
    let m = Module::parse(src, "g.ptx").unwrap_or_else(|e| panic!("{e}\n{src}"));
    let input: Vec<u8> = (0..in_words as u32)
        .flat_map(|i| (1000 + i).to_le_bytes())
        .collect();
    let mut bufs = vec![input, vec![0xffu8; threads as usize * 4]];
    let cfg = LaunchConfig {
        grid: [1, 1, 1].into(),
        block: [threads, 1, 1].into(),
        shared_bytes: 0,
    };
    let args = [KernelArg::Buffer(0), KernelArg::Buffer(1)];
    let r = m
        .launch("g", &cfg, &args, &mut bufs, &ExecOptions::default())
        .map(|_| ());
    let out = bufs[1]
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    (r, out)
}

fn line_of(src: &str, needle: &str) -> u32 {
    src.lines().position(|l| l.contains(needle)).unwrap() as u32 + 1
}

#[test]
fn whole_warp_and_guarded_lanes_load_and_store_the_right_words() {
    let src = gather(3, 0, 0, false);
    let (r, out) = run(&src, 64, 3 * 64);
    r.unwrap();
    assert_eq!(out, (0..64).map(|t| 1000 + 3 * t).collect::<Vec<u32>>());
    let src = gather(2, 0, 0, true);
    let (r, out) = run(&src, 40, 2 * 40);
    r.unwrap();
    let want: Vec<u32> = (0..40)
        .map(|t| if t % 2 == 1 { 1000 + 2 * t } else { u32::MAX })
        .collect();
    assert_eq!(out, want);
}

#[test]
fn out_of_bounds_lane_is_named() {
    // 32 threads read words 0..32 of a 5-word buffer: thread 5 is the first past it.
    let src = gather(1, 0, 0, false);
    let (r, _) = run(&src, 32, 5);
    let e = r.unwrap_err();
    let f = e.fault().unwrap_or_else(|| panic!("not a fault: {e}"));
    assert_eq!(f.class, FaultClass::OutOfBounds, "{e}");
    assert_eq!(f.thread, [5, 0, 0], "{e}");
    assert_eq!(f.line, line_of(&src, "ld.global.u32"), "{e}");
}

#[test]
fn misaligned_lane_is_named() {
    // Thread 7 reads 2 bytes past its word.
    let src = gather(1, 7, 2, false);
    let (r, _) = run(&src, 32, 64);
    let e = r.unwrap_err();
    let f = e.fault().unwrap_or_else(|| panic!("not a fault: {e}"));
    assert_eq!(f.class, FaultClass::Misaligned, "{e}");
    assert_eq!(f.thread, [7, 0, 0], "{e}");
    assert_eq!(f.line, line_of(&src, "ld.global.u32"), "{e}");
}

#[test]
fn read_only_global_variable_store_is_refused() {
    let src = format!(
        "{HEAD}.const .align 4 .u32 k[4] = {{1, 2, 3, 4}};\n\
         .visible .entry g(.param .u64 pin, .param .u64 pout)\n{{\n\
         .reg .b32 %r<4>;\n.reg .b64 %rd<4>;\n\
         mov.u64 %rd1, k;\nmov.u32 %r1, %tid.x;\nmul.wide.u32 %rd2, %r1, 4;\nadd.s64 %rd3, %rd1, %rd2;\n\
         st.global.u32 [%rd3], %r1;\nret;\n}}\n"
    );
    let (r, _) = run(&src, 4, 4);
    let e = r.unwrap_err();
    let f = e.fault().unwrap_or_else(|| panic!("not a fault: {e}"));
    assert_eq!(f.class, FaultClass::OutOfBounds, "{e}");
    assert_eq!(f.thread, [0, 0, 0], "{e}");
    assert!(f.detail.contains("read-only"), "{e}");
}
