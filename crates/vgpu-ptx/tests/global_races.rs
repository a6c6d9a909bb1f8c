//! The checker's global-memory races: accesses by different threads of one
//! block to the same global bytes, at least one a write, in one barrier
//! interval and not ordered by a `bar.warp.sync` of both lanes, reported in
//! every order (read-after-write, write-after-read, write-after-write) naming
//! both threads and both PTX lines; disjoint accesses, accesses separated by
//! `bar.sync` or a warp sync, atomics and different blocks do not race.

use vgpu_ptx::{ExecOptions, Fault, FaultClass, KernelArg, LaunchConfig, Module};

const HEAD: &str = ".version 8.0\n.target sm_90\n.address_size 64\n";

/// Runs entry `k` of `HEAD + src` on `blocks` blocks of `threads` threads with
/// one buffer of `words` u32 (initially 7) and a second of `words` u32 that
/// the kernel only reads; the first buffer after it, or the fault.
fn run(src: &str, blocks: u32, threads: u32, words: usize) -> Result<Vec<u32>, Fault> {
    let text = format!("{HEAD}{src}");
    let m = Module::parse(&text, "k.ptx").unwrap_or_else(|e| panic!("{e}\n{text}"));
    let init: Vec<u8> = (0..words).flat_map(|_| 7u32.to_le_bytes()).collect();
    let mut bufs = vec![init.clone(), init];
    let cfg = LaunchConfig {
        grid: [blocks, 1, 1].into(),
        block: [threads, 1, 1].into(),
        shared_bytes: 0,
    };
    match m.launch(
        "k",
        &cfg,
        &[KernelArg::Buffer(0), KernelArg::Buffer(1)],
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
            .unwrap_or_else(|| panic!("not a fault: {e}"))),
    }
}

/// The 1-based line of the first line of `src` (after HEAD) containing `pat`.
fn line_of(src: &str, pat: &str) -> u32 {
    let i = src
        .lines()
        .position(|l| l.contains(pat))
        .unwrap_or_else(|| panic!("{pat} not in kernel"));
    (HEAD.lines().count() + i + 1) as u32
}

const PROLOGUE: &str = ".visible .entry k(.param .u64 out, .param .u64 inp)\n{\n\
.reg .b32 %r<16>;\n.reg .b64 %rd<16>;\n.reg .pred %p<4>;\n\
ld.param.u64 %rd1, [out];\ncvta.to.global.u64 %rd1, %rd1;\n\
ld.param.u64 %rd9, [inp];\ncvta.to.global.u64 %rd9, %rd9;\nmov.u32 %r1, %tid.x;\n";

/// Threads `reader` read (or, with `reader_writes`, write) `out[tid + 37]`,
/// then `between`, then threads `writer` write (or, with `writer_reads`,
/// read) `out[tid]`.
fn cross(
    reader: &str,
    writer: &str,
    between: &str,
    reader_writes: bool,
    writer_reads: bool,
) -> String {
    let first = if reader_writes {
        "st.global.u32 [%rd4], %r1;"
    } else {
        "ld.global.u32 %r8, [%rd4];"
    };
    let second = if writer_reads {
        "ld.global.u32 %r9, [%rd6];"
    } else {
        "st.global.u32 [%rd6], %r1;"
    };
    format!(
        "{PROLOGUE}setp.{reader};\n@!%p1 bra SKIP;\nadd.s32 %r5, %r1, 37;\n\
         mul.wide.u32 %rd3, %r5, 4;\nadd.s64 %rd4, %rd1, %rd3;\n{first}\nSKIP:\n{between}\n\
         setp.{writer};\n@!%p2 bra DONE;\nmul.wide.u32 %rd5, %r1, 4;\nadd.s64 %rd6, %rd1, %rd5;\n\
         {second}\nDONE:\nret;\n}}\n"
    )
}

/// Asserts `f` is a race of `kind` by thread (37,0,0) at the line of `here`,
/// against thread (0,0,0) at the line of `there`.
fn assert_race(f: &Fault, src: &str, kind: &str, here: &str, there: &str) {
    assert_eq!(f.class, FaultClass::Race, "{f}");
    assert_eq!((f.thread, f.line), ([37, 0, 0], line_of(src, here)), "{f}");
    assert!(f.detail.contains(kind), "{f}");
    assert!(f.detail.contains("global byte"), "{f}");
    assert!(
        f.detail.contains(&format!(
            "thread (0,0,0) at PTX line {}",
            line_of(src, there)
        )),
        "{f}"
    );
}

#[test]
fn write_after_read_in_global_memory_is_a_race() {
    let src = cross(
        "lt.u32 %p1, %r1, 27",
        "ge.u32 %p2, %r1, 37",
        "",
        false,
        false,
    );
    let f = run(&src, 1, 64, 64).unwrap_err();
    assert_race(
        &f,
        &src,
        "write-after-read",
        "st.global.u32 [%rd6]",
        "ld.global.u32 %r8",
    );
}

#[test]
fn read_after_write_in_global_memory_is_a_race() {
    let src = cross("lt.u32 %p1, %r1, 27", "ge.u32 %p2, %r1, 37", "", true, true);
    let f = run(&src, 1, 64, 64).unwrap_err();
    assert_race(
        &f,
        &src,
        "read-after-write",
        "ld.global.u32 %r9",
        "st.global.u32 [%rd4]",
    );
}

#[test]
fn write_after_write_in_global_memory_is_a_race() {
    let src = cross(
        "lt.u32 %p1, %r1, 27",
        "ge.u32 %p2, %r1, 37",
        "",
        true,
        false,
    );
    let f = run(&src, 1, 64, 64).unwrap_err();
    assert_race(
        &f,
        &src,
        "write-after-write",
        "st.global.u32 [%rd6]",
        "st.global.u32 [%rd4]",
    );
}

#[test]
fn disjoint_or_barrier_separated_global_accesses_do_not_race() {
    // Writers of words no reader touches.
    let src = cross(
        "lt.u32 %p1, %r1, 27",
        "ge.u32 %p2, %r1, 64",
        "",
        true,
        false,
    );
    let out = run(&src, 1, 64, 64).unwrap_or_else(|f| panic!("{f}"));
    assert_eq!(out[37], 0);
    assert_eq!(out[36], 7);
    // Every order, with a block barrier between.
    for (rw, wr) in [(false, false), (true, true), (true, false)] {
        let src = cross(
            "lt.u32 %p1, %r1, 27",
            "ge.u32 %p2, %r1, 37",
            "bar.sync 0;",
            rw,
            wr,
        );
        run(&src, 1, 64, 64).unwrap_or_else(|f| panic!("{f}"));
    }
    // The same bytes from different blocks: CUDA orders nothing between blocks,
    // and the checker compares threads of one block only.
    let src = format!(
        "{PROLOGUE}mov.u32 %r2, %ctaid.x;\nmul.wide.u32 %rd3, %r1, 4;\nadd.s64 %rd4, %rd1, %rd3;\n\
         setp.eq.u32 %p1, %r2, 0;\n@%p1 st.global.u32 [%rd4], %r1;\n@!%p1 ld.global.u32 %r3, [%rd4];\nret;\n}}\n"
    );
    run(&src, 2, 32, 32).unwrap_or_else(|f| panic!("{f}"));
}

#[test]
fn atomics_and_a_read_only_buffer_do_not_race() {
    // Every thread adds to out[0] atomically and reads inp[0], which nothing
    // writes.
    let src = format!(
        "{PROLOGUE}ld.global.u32 %r2, [%rd9];\natom.global.add.u32 %r3, [%rd1], %r2;\n\
         red.global.add.u32 [%rd1+4], 1;\nret;\n}}\n"
    );
    let out = run(&src, 1, 64, 4).unwrap_or_else(|f| panic!("{f}"));
    assert_eq!((out[0], out[1]), (7 + 64 * 7, 7 + 64));
}

#[test]
fn a_warp_sync_of_both_lanes_orders_global_accesses() {
    // Lane t writes out[t], then reads out[(t + 1) % 32].
    let neighbour = |sync: &str| {
        format!(
            "{PROLOGUE}mul.wide.u32 %rd3, %r1, 4;\nadd.s64 %rd4, %rd1, %rd3;\nst.global.u32 [%rd4], %r1;\n\
             {sync}\nadd.s32 %r5, %r1, 1;\nand.b32 %r5, %r5, 31;\nmul.wide.u32 %rd5, %r5, 4;\n\
             add.s64 %rd6, %rd1, %rd5;\nld.global.u32 %r8, [%rd6];\nret;\n}}\n"
        )
    };
    run(&neighbour("bar.warp.sync -1;"), 1, 32, 32).unwrap_or_else(|f| panic!("{f}"));
    for sync in ["", "bar.warp.sync 0x55555555;"] {
        let src = neighbour(sync);
        let f = run(&src, 1, 32, 32).unwrap_err();
        assert_eq!(f.class, FaultClass::Race, "{f}");
        assert_eq!(f.line, line_of(&src, "ld.global.u32 %r8"), "{f}");
        assert!(f.detail.contains("read-after-write"), "{f}");
    }
}

#[test]
fn without_the_checker_a_global_race_runs() {
    let src = cross(
        "lt.u32 %p1, %r1, 27",
        "ge.u32 %p2, %r1, 37",
        "",
        true,
        false,
    );
    let text = format!("{HEAD}{src}");
    let m = Module::parse(&text, "k.ptx").unwrap();
    let mut bufs = vec![vec![0u8; 256], vec![0u8; 256]];
    let cfg = LaunchConfig {
        grid: [1, 1, 1].into(),
        block: [64, 1, 1].into(),
        shared_bytes: 0,
    };
    let opts = ExecOptions {
        check: false,
        ..ExecOptions::default()
    };
    m.launch(
        "k",
        &cfg,
        &[KernelArg::Buffer(0), KernelArg::Buffer(1)],
        &mut bufs,
        &opts,
    )
    .unwrap();
}
