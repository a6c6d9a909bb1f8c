//! The global-memory initcheck (`ExecOptions::initcheck`, `vgpu ptx run
//! --initcheck`, a case's `"initcheck": true`): a read of global memory that
//! neither the host initialised nor any thread wrote before, in the
//! interpreter's order (blocks one at a time in linear order, a block's warps
//! in its schedule), is an `uninitialized` fault naming the thread, block,
//! address, buffer and PTX line. Loads, sub-word and vector loads and atomics
//! (whose old value is read, and `red`, whose is not) are covered; inputs, what
//! an earlier block wrote, what another thread wrote before a barrier, and the
//! module's variables are not reported; off by default.

use vgpu_ptx::{ExecOptions, Fault, FaultClass, KernelArg, LaunchConfig, Module};

const HEAD: &str = ".version 8.0\n.target sm_90\n.address_size 64\n";

/// The kernel `k(out, inp)`: `%rd3 = &out[i]`, `%rd10 = &inp[i]` (u32
/// elements, `i` the global thread index `%r4`), `%r1 = %tid.x`,
/// `%r2 = %ctaid.x`, `%r3 = %ntid.x`; then `body`.
fn kernel(body: &str) -> String {
    format!(
        "{HEAD}.global .align 4 .u32 g[4] = {{1, 2, 3, 4}};\n\
.visible .entry k(.param .u64 out, .param .u64 inp)\n{{\n\
.reg .b16 %rs<8>;\n.reg .b32 %r<16>;\n.reg .b64 %rd<16>;\n.reg .pred %p<4>;\n\
ld.param.u64 %rd1, [out];\ncvta.to.global.u64 %rd1, %rd1;\n\
ld.param.u64 %rd9, [inp];\ncvta.to.global.u64 %rd9, %rd9;\n\
mov.u32 %r1, %tid.x;\nmov.u32 %r2, %ctaid.x;\nmov.u32 %r3, %ntid.x;\n\
mad.lo.s32 %r4, %r2, %r3, %r1;\nmul.wide.u32 %rd2, %r4, 4;\n\
add.s64 %rd3, %rd1, %rd2;\nadd.s64 %rd10, %rd9, %rd2;\n\
{body}\nret;\n}}\n"
    )
}

/// The 1-based line of the kernel text holding `pat`.
fn line_of(text: &str, pat: &str) -> u32 {
    text.lines()
        .position(|l| l.contains(pat))
        .unwrap_or_else(|| panic!("{pat} not in kernel")) as u32
        + 1
}

/// Runs `body` on `blocks` blocks of 32 threads: `out` (buffer 0, 2 u32 per
/// thread, all 7s) is uninitialised for the initcheck unless `out_init`;
/// `inp` (buffer 1, `i` at `i`) is initialised. The buffers, or the fault.
fn run(body: &str, blocks: u32, initcheck: bool, out_init: bool) -> Result<[Vec<u32>; 2], Fault> {
    let text = kernel(body);
    let m = Module::parse(&text, "k.ptx").unwrap_or_else(|e| panic!("{e}\n{text}"));
    let n = blocks as usize * 32;
    let out: Vec<u8> = (0..2 * n).flat_map(|_| 7u32.to_le_bytes()).collect();
    let inp: Vec<u8> = (0..2 * n as u32).flat_map(|i| i.to_le_bytes()).collect();
    let mut bufs = vec![out, inp];
    let cfg = LaunchConfig {
        grid: [blocks, 1, 1].into(),
        block: [32, 1, 1].into(),
        shared_bytes: 0,
    };
    let opts = ExecOptions {
        initcheck,
        uninitialised_buffers: if out_init { vec![] } else { vec![0] },
        buffer_names: vec!["out".into(), "inp".into()],
        ..ExecOptions::default()
    };
    let words = |b: &[u8]| -> Vec<u32> {
        b.chunks(4)
            .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
            .collect()
    };
    match m.launch(
        "k",
        &cfg,
        &[KernelArg::Buffer(0), KernelArg::Buffer(1)],
        &mut bufs,
        &opts,
    ) {
        Ok(_) => Ok([words(&bufs[0]), words(&bufs[1])]),
        Err(e) => Err(e
            .fault()
            .cloned()
            .unwrap_or_else(|| panic!("not a fault: {e}"))),
    }
}

fn uninit(body: &str, blocks: u32) -> Fault {
    let f = run(body, blocks, true, false).expect_err("initcheck must report");
    assert_eq!(f.class, FaultClass::Uninitialized, "{f}");
    f
}

#[test]
fn a_read_of_an_output_nothing_wrote_is_reported_with_its_place() {
    let body = "ld.global.u32 %r5, [%rd3];\nst.global.u32 [%rd10], %r5;";
    let f = uninit(body, 2);
    assert_eq!(f.line, line_of(&kernel(body), "ld.global.u32 %r5"));
    assert_eq!((f.block, f.thread), ([0, 0, 0], [0, 0, 0]), "{f}");
    let s = f.to_string();
    assert!(
        s.contains("0x100000000") && s.contains("buffer 0 (out)") && s.contains("initcheck"),
        "{s}"
    );
    // Off by default, and with `out` initialised by the host: it runs.
    let [_, inp] = run(body, 2, false, false).unwrap();
    assert!(inp[..64].iter().all(|&v| v == 7));
    let [_, inp] = run(body, 2, true, true).unwrap();
    assert!(inp[..64].iter().all(|&v| v == 7));
}

#[test]
fn reads_of_inputs_and_of_what_the_thread_wrote_are_not_reported() {
    let body = "ld.global.u32 %r5, [%rd10];\nst.global.u32 [%rd3], %r5;\n\
ld.global.u32 %r6, [%rd3];\nadd.s32 %r6, %r6, 1;\nst.global.u32 [%rd10], %r6;\n\
ld.global.u32 %r7, [g+4];\nst.global.u32 [%rd3], %r7;";
    let [out, inp] = run(body, 3, true, false).unwrap();
    for i in 0..96 {
        assert_eq!((out[i], inp[i]), (2, i as u32 + 1));
    }
}

#[test]
fn what_an_earlier_block_wrote_is_initialised_a_later_blocks_write_is_not() {
    // Every thread writes out[i]; block b > 0 then reads out[i - 32], which
    // block b - 1 wrote: blocks run in linear order, so it is not reported.
    let back = "st.global.u32 [%rd3], %r4;\nsetp.eq.u32 %p1, %r2, 0;\n@%p1 bra DONE;\n\
sub.s64 %rd4, %rd3, 128;\nld.global.u32 %r5, [%rd4];\nst.global.u32 [%rd10], %r5;\nDONE:";
    let [_, inp] = run(back, 4, true, false).unwrap();
    for (i, &v) in inp.iter().enumerate().take(128).skip(32) {
        assert_eq!(v, i as u32 - 32);
    }
    // Reading out[i + 32], which block b + 1 writes later, is reported in
    // block 0 (CUDA does not order blocks: that read may see nothing written).
    let fwd = "st.global.u32 [%rd3], %r4;\nadd.s32 %r6, %r2, 1;\nsetp.eq.u32 %p1, %r6, 4;\n\
@%p1 bra DONE;\nld.global.u32 %r5, [%rd3+128];\nst.global.u32 [%rd10], %r5;\nDONE:";
    let f = uninit(fwd, 4);
    assert_eq!((f.block, f.thread), ([0, 0, 0], [0, 0, 0]), "{f}");
    assert!(f.to_string().contains("0x100000080"), "{f}");
}

#[test]
fn what_another_thread_wrote_before_a_barrier_is_initialised() {
    let body = "st.global.u32 [%rd3], %r4;\nbar.sync 0;\nxor.b32 %r5, %r1, 1;\n\
mul.wide.u32 %rd4, %r5, 4;\nadd.s64 %rd5, %rd1, %rd4;\nld.global.u32 %r6, [%rd5];\n\
st.global.u32 [%rd10], %r6;";
    let [_, inp] = run(body, 1, true, false).unwrap();
    for (i, &v) in inp.iter().enumerate().take(32) {
        assert_eq!(v, i as u32 ^ 1);
    }
}

#[test]
fn sub_word_loads_see_each_byte() {
    // One byte written, two read: the second byte (address + 1) is reported.
    let body = "st.global.u8 [%rd3], %r1;\nld.global.u16 %rs1, [%rd3];\n\
cvt.u32.u16 %r5, %rs1;\nst.global.u32 [%rd10], %r5;";
    let f = uninit(body, 1);
    assert_eq!(f.line, line_of(&kernel(body), "ld.global.u16"));
    assert!(f.to_string().contains("0x100000001"), "{f}");
    // The byte itself was written: reading it is fine.
    let ok = "st.global.u8 [%rd3], %r1;\nld.global.u8 %rs1, [%rd3];\n\
cvt.u32.u16 %r5, %rs1;\nst.global.u32 [%rd10], %r5;";
    let [_, inp] = run(ok, 1, true, false).unwrap();
    assert_eq!(inp[5], 5);
}

#[test]
fn vector_loads_see_each_element() {
    // Thread i writes the first u32 of its 8-byte pair and loads both.
    let body = "mul.wide.u32 %rd5, %r4, 8;\nadd.s64 %rd6, %rd1, %rd5;\n\
st.global.u32 [%rd6], %r1;\nld.global.v2.u32 {%r6, %r7}, [%rd6];\n\
add.s32 %r8, %r6, %r7;\nst.global.u32 [%rd10], %r8;";
    let f = uninit(body, 1);
    assert_eq!(f.line, line_of(&kernel(body), "ld.global.v2"));
    assert!(f.to_string().contains("0x100000004"), "{f}");
    let both = "mul.wide.u32 %rd5, %r4, 8;\nadd.s64 %rd6, %rd1, %rd5;\n\
st.global.v2.u32 [%rd6], {%r1, %r1};\nld.global.v2.u32 {%r6, %r7}, [%rd6];\n\
add.s32 %r8, %r6, %r7;\nst.global.u32 [%rd10], %r8;";
    let [_, inp] = run(both, 1, true, false).unwrap();
    assert_eq!(inp[3], 6);
}

#[test]
fn atomics_read_what_they_update() {
    // An atomic whose old value is used, and a `red` (old value unused,
    // applied after the launch), on bytes nothing wrote: both reported.
    let atom = "atom.global.add.u32 %r5, [%rd3], 1;\nst.global.u32 [%rd10], %r5;";
    let f = uninit(atom, 2);
    assert_eq!(f.line, line_of(&kernel(atom), "atom.global"));
    assert!(f.to_string().contains("atomic on global byte"), "{f}");
    let red = "red.global.add.u32 [%rd3], 1;";
    let f = uninit(red, 2);
    assert_eq!(f.line, line_of(&kernel(red), "red.global"));
    // After the thread's own store they are fine, and so is what they wrote.
    let ok = "st.global.u32 [%rd3], %r1;\natom.global.add.u32 %r5, [%rd3], 1;\n\
red.global.add.u32 [%rd3], 10;\nst.global.u32 [%rd10], %r5;";
    let [out, inp] = run(ok, 2, true, false).unwrap();
    for i in 0..64 {
        assert_eq!((out[i], inp[i]), (i as u32 % 32 + 11, i as u32 % 32));
    }
}
