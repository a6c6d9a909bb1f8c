//! The checker on small hand-written kernels in the shapes nvcc emits: 32-bit
//! shared and local address arithmetic that wraps, `bar.warp.sync` ordering a
//! warp's shared accesses, and races in every order (read-after-write,
//! write-after-read, write-after-write), each naming both threads and lines.

use vgpu_ptx::{ExecOptions, Fault, FaultClass, KernelArg, LaunchConfig, Module};

const HEAD: &str = ".version 8.0\n.target sm_90\n.address_size 64\n";

/// Runs entry `k` of `HEAD + src` with `threads` threads and one output buffer
/// of `words` u32; the output, or the fault.
fn run(src: &str, threads: u32, words: usize) -> Result<Vec<u32>, Fault> {
    let text = format!("{HEAD}{src}");
    let m = Module::parse(&text, "k.ptx").unwrap_or_else(|e| panic!("{e}\n{text}"));
    launch(&m, "k", threads, words)
}

/// Runs `entry` of `m` in one block of `threads` threads with one output
/// buffer of `words` u32; the output, or the fault (any other error panics).
fn launch(m: &Module, entry: &str, threads: u32, words: usize) -> Result<Vec<u32>, Fault> {
    let mut bufs = vec![vec![0u8; 4 * words]];
    let cfg = LaunchConfig {
        grid: [1, 1, 1].into(),
        block: [threads, 1, 1].into(),
        shared_bytes: 0,
    };
    match m.launch(
        entry,
        &cfg,
        &[KernelArg::Buffer(0)],
        &mut bufs,
        &ExecOptions::default(),
    ) {
        Ok(_) => Ok(bufs[0]
            .chunks(4)
            .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
            .collect()),
        Err(e) => Err(e
            .fault()
            .cloned()
            .unwrap_or_else(|| panic!("{entry}: not a fault: {e}"))),
    }
}

/// Asserts that `src`, run by 64 threads, stops at a race of kind `hazard`
/// found by thread 37 at the line containing `line`, whose earlier access was
/// thread 0's at the line containing `earlier`.
fn assert_race(src: &str, hazard: &str, line: &str, earlier: &str) {
    let f = run(src, 64, 64).unwrap_err();
    assert_eq!(f.class, FaultClass::Race, "{f}");
    assert_eq!((f.thread, f.line), ([37, 0, 0], line_of(src, line)), "{f}");
    assert!(f.detail.contains(hazard), "{f}");
    let other = format!("thread (0,0,0) at PTX line {}", line_of(src, earlier));
    assert!(f.detail.contains(&other), "{f}");
}

/// The 1-based line of the first line of `src` (after HEAD) containing `pat`.
fn line_of(src: &str, pat: &str) -> u32 {
    let i = src
        .lines()
        .position(|l| l.contains(pat))
        .unwrap_or_else(|| panic!("{pat} not in kernel"));
    (HEAD.lines().count() + i + 1) as u32
}

const PROLOGUE: &str =
    ".visible .entry k(.param .u64 out)\n{\n.reg .b32 %r<16>;\n.reg .b64 %rd<16>;\n\
.reg .pred %p<4>;\n.shared .align 4 .b32 s[64];\n.local .align 4 .b8 buf[16];\n\
ld.param.u64 %rd1, [out];\ncvta.to.global.u64 %rd1, %rd1;\nmov.u32 %r1, %tid.x;\n\
mul.wide.u32 %rd2, %r1, 4;\nadd.s64 %rd3, %rd1, %rd2;\n";

#[test]
fn shared_and_local_addresses_are_32_bits_and_wrap() {
    // nvcc's shape: a base below the symbol in a 32-bit register (it wraps below
    // zero), then an access at a positive offset that brings it back.
    let src = format!(
        "{PROLOGUE}mov.u32 %r2, s;\nshl.b32 %r3, %r1, 2;\nadd.s32 %r4, %r2, %r3;\n\
         sub.s32 %r4, %r4, 68;\nst.shared.u32 [%r4+68], %r1;\n\
         mov.u32 %r7, buf;\nsub.s32 %r8, %r7, 64;\nmul.lo.u32 %r9, %r1, 1000;\n\
         st.local.u32 [%r8+68], %r9;\nbar.sync 0;\n\
         ld.shared.u32 %r5, [%r4+68];\nld.local.u32 %r10, [%r8+68];\n\
         mov.u64 %rd4, s;\ncvta.shared.u64 %rd5, %rd4;\nadd.s64 %rd5, %rd5, %rd2;\n\
         ld.u32 %r11, [%rd5];\ncvta.to.shared.u64 %rd6, %rd5;\nld.shared.u32 %r12, [%rd6];\n\
         add.s32 %r5, %r5, %r10;\nadd.s32 %r5, %r5, %r11;\nadd.s32 %r5, %r5, %r12;\n\
         st.global.u32 [%rd3], %r5;\nret;\n}}\n"
    );
    let out = run(&src, 64, 64).unwrap_or_else(|f| panic!("{f}"));
    for (t, v) in out.iter().enumerate() {
        assert_eq!(*v, 3 * t as u32 + 1000 * t as u32, "thread {t}");
    }
}

#[test]
fn an_access_past_the_32_bit_shared_space_is_still_out_of_bounds() {
    let src = format!(
        "{PROLOGUE}mov.u32 %r2, s;\nsub.s32 %r4, %r2, 68;\nst.shared.u32 [%r4+60], %r1;\nret;\n}}\n"
    );
    let f = run(&src, 1, 1).unwrap_err();
    assert_eq!(f.class, FaultClass::OutOfBounds, "{f}");
    assert!(f.detail.contains("0xfffffff8"), "{f}");
}

/// Each lane writes its word, then (after `sync`) reads its neighbour's.
fn neighbour_kernel(sync: &str) -> String {
    format!(
        "{PROLOGUE}shl.b32 %r2, %r1, 2;\nmov.u32 %r3, s;\nadd.s32 %r4, %r3, %r2;\n\
         st.shared.u32 [%r4], %r1;\n{sync}\nadd.s32 %r5, %r1, 1;\nand.b32 %r5, %r5, 31;\n\
         shl.b32 %r6, %r5, 2;\nadd.s32 %r7, %r3, %r6;\nld.shared.u32 %r8, [%r7];\n\
         st.global.u32 [%rd3], %r8;\nret;\n}}\n"
    )
}

#[test]
fn bar_warp_sync_orders_the_warps_shared_accesses() {
    let out = run(&neighbour_kernel("bar.warp.sync -1;"), 32, 32).unwrap_or_else(|f| panic!("{f}"));
    assert_eq!(out, (0..32).map(|t| (t + 1) % 32).collect::<Vec<u32>>());
    // Two warps, each syncing itself: still no race (each reads its own warp).
    let src = neighbour_kernel("bar.warp.sync -1;").replace(
        "and.b32 %r5, %r5, 31;",
        "and.b32 %r5, %r5, 31;\nand.b32 %r9, %r1, 32;\nor.b32 %r5, %r5, %r9;",
    );
    run(&src, 64, 64).unwrap_or_else(|f| panic!("{f}"));
}

#[test]
fn without_bar_warp_sync_the_neighbour_read_is_a_race() {
    let src = neighbour_kernel("");
    let f = run(&src, 32, 32).unwrap_err();
    assert_eq!(f.class, FaultClass::Race, "{f}");
    assert_eq!(f.line, line_of(&src, "ld.shared.u32 %r8"));
    assert!(f.detail.contains("read-after-write"), "{f}");
    assert!(
        f.detail.contains(&format!(
            "at PTX line {}",
            line_of(&src, "st.shared.u32 [%r4]")
        )),
        "{f}"
    );
    // A mask that leaves out the writer does not order the read either.
    let f = run(&neighbour_kernel("bar.warp.sync 0x55555555;"), 32, 32).unwrap_err();
    assert_eq!(f.class, FaultClass::Race, "{f}");
}

/// Threads `reader` read `s[tid + 37]` and threads `writer` write `s[tid]`,
/// in that program order, in one barrier interval (after an optional
/// initialisation of `s` and a barrier).
fn cross_kernel(init: bool, reader: &str, writer: &str, reader_writes: bool) -> String {
    let init = if init {
        "shl.b32 %r2, %r1, 2;\nmov.u32 %r3, s;\nadd.s32 %r4, %r3, %r2;\nst.shared.u32 [%r4], 7;\nbar.sync 0;\n"
    } else {
        ""
    };
    let access = if reader_writes {
        "st.shared.u32 [%r7], %r1;"
    } else {
        "ld.shared.u32 %r8, [%r7];"
    };
    format!(
        "{PROLOGUE}{init}mov.u32 %r3, s;\nmov.u32 %r8, 0;\n\
         setp.{reader};\n@!%p1 bra SKIP;\nadd.s32 %r5, %r1, 37;\nshl.b32 %r6, %r5, 2;\n\
         add.s32 %r7, %r3, %r6;\n{access}\nSKIP:\n\
         setp.{writer};\n@!%p2 bra DONE;\nshl.b32 %r9, %r1, 2;\nadd.s32 %r10, %r3, %r9;\n\
         st.shared.u32 [%r10], %r1;\nDONE:\nst.global.u32 [%rd3], %r8;\nret;\n}}\n"
    )
}

#[test]
fn write_after_read_is_a_race_with_or_without_initialised_shared_memory() {
    // Thread t reads the word thread t+37 writes later in the same interval:
    // compute-sanitizer's write-after-read hazard, not (when `s` was never
    // written) an uninitialised read.
    for init in [false, true] {
        let src = cross_kernel(init, "lt.u32 %p1, %r1, 27", "ge.u32 %p2, %r1, 37", false);
        assert_race(
            &src,
            "write-after-read",
            "st.shared.u32 [%r10]",
            "ld.shared.u32 %r8",
        );
    }
}

#[test]
fn read_after_write_is_a_race() {
    // Thread t < 27 writes s[t + 37]; threads >= 37 then read s[t].
    let src = cross_kernel(true, "lt.u32 %p1, %r1, 27", "ge.u32 %p2, %r1, 37", true)
        .replace("st.shared.u32 [%r10], %r1;", "ld.shared.u32 %r8, [%r10];");
    assert_race(
        &src,
        "read-after-write",
        "ld.shared.u32 %r8, [%r10]",
        "st.shared.u32 [%r7]",
    );
}

#[test]
fn write_after_write_is_a_race() {
    let src = cross_kernel(true, "lt.u32 %p1, %r1, 27", "ge.u32 %p2, %r1, 37", true);
    assert_race(
        &src,
        "write-after-write",
        "st.shared.u32 [%r10]",
        "st.shared.u32 [%r7]",
    );
}

#[test]
fn disjoint_or_barrier_separated_accesses_do_not_race() {
    // Readers of words nobody writes in the interval, after initialisation.
    let src = cross_kernel(true, "lt.u32 %p1, %r1, 27", "ge.u32 %p2, %r1, 64", false);
    let out = run(&src, 64, 64).unwrap_or_else(|f| panic!("{f}"));
    assert_eq!(out[0], 7);
    assert_eq!(out[30], 0);
}

#[test]
fn a_read_nothing_writes_is_still_uninitialised() {
    let src = cross_kernel(false, "lt.u32 %p1, %r1, 27", "ge.u32 %p2, %r1, 64", false);
    let f = run(&src, 64, 64).unwrap_err();
    assert_eq!(f.class, FaultClass::Uninitialized, "{f}");
    assert_eq!(
        (f.thread, f.line),
        ([0, 0, 0], line_of(&src, "ld.shared.u32 %r8"))
    );
}

#[test]
fn the_corpus_module_of_nvcc_shapes_runs_clean() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/corpus/nvcc_shapes.ptx");
    let m = Module::from_file(path.as_ref()).unwrap_or_else(|e| panic!("{e}"));
    for entry in ["bits", "shapes"] {
        let out = launch(&m, entry, 64, 64).unwrap_or_else(|f| panic!("{entry}: {f}"));
        if entry == "shapes" {
            for (t, v) in out.iter().enumerate() {
                assert_eq!(*v, (t as u32 ^ 1) + t as u32, "thread {t}");
            }
        }
    }
}

#[test]
fn bytes_a_used_bytes_mask_leaves_out_are_not_read() {
    // Thread 0 writes s[0..3] and reads s[0..4] as one v4 load, of which the
    // pragma says only the first 12 bytes are used.
    let kernel = |pragma: &str| {
        format!(
            "{PROLOGUE}setp.ne.u32 %p1, %r1, 0;\n@%p1 bra DONE;\nst.shared.u32 [s], 1;\n\
             st.shared.u32 [s+4], 2;\nst.shared.u32 [s+8], 3;\n{pragma}\n\
             ld.shared.v4.u32 {{%r2, %r3, %r4, %r5}}, [s];\nadd.s32 %r6, %r2, %r4;\n\
             st.global.u32 [%rd3], %r6;\nDONE:\nret;\n}}\n"
        )
    };
    let out =
        run(&kernel(".pragma \"used_bytes_mask 4095\";"), 32, 32).unwrap_or_else(|f| panic!("{f}"));
    assert_eq!(out[0], 4);
    let src = kernel("");
    let f = run(&src, 32, 32).unwrap_err();
    assert_eq!(f.class, FaultClass::Uninitialized, "{f}");
    assert_eq!(f.line, line_of(&src, "ld.shared.v4.u32"));
}
