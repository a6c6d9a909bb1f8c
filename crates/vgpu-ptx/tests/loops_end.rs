//! Which lowered kernels' loops all end within a few iterations (vgpu-ir's
//! wgsl/cfg/bounded.rs, `CfgWgsl::loops_end`), so that their unchecked
//! WGSL is not bounded by the GPU compiler: `reduce_sum_atomic`'s halving
//! loop, not the counted loops of `lorenz_rk4` and `matmul_tiled`, and
//! small halving loops beside near misses that may not end.

use std::path::Path;
use vgpu_ir::wgsl::cfg::{emit_cfg_kernel, CfgChecks, CfgWgslOptions};
use vgpu_ptx::lower::lower_entry;
use vgpu_ptx::Module;

/// Whether entry `entry` of the PTX `text` ends all its loops, written
/// unchecked for blocks of 32 threads.
fn loops_end(text: &str, entry: &str) -> bool {
    let m = Module::parse(text, "loops.ptx").expect("the module parses");
    let k = lower_entry(&m, entry).expect("the kernel lowers").1;
    let mut o = CfgWgslOptions::plain([32, 1, 1], false);
    o.f64 = true;
    let c = CfgChecks {
        initcheck: false,
        race: false,
    };
    emit_cfg_kernel(&k, &o, c).expect("WGSL").loops_end
}

/// A kernel `t` of one parameter `n` (`%r8`) whose loop (`body`, entered
/// with `%r1`, the count, set by `init`) adds `%r1` into `%r9`, stored to
/// `p_x`.
fn kernel(init: &str, body: &str) -> String {
    format!(
        ".version 8.0\n.target sm_80\n.address_size 64\n\
         .visible .entry t(.param .u64 p_x, .param .u32 p_n)\n{{\n\
         \t.reg .pred %p<4>;\n\t.reg .b32 %r<12>;\n\t.reg .b64 %rd<3>;\n\
         \tld.param.u64 %rd1, [p_x];\n\tld.param.u32 %r8, [p_n];\n\
         \tcvta.to.global.u64 %rd2, %rd1;\n\tmov.u32 %r9, 0;\n\
         {init}\n$L_top:\n\tadd.s32 %r9, %r9, %r1;\n{body}\n\
         \tst.global.u32 [%rd2], %r9;\n\tret;\n}}\n"
    )
}

/// Whether the one-loop kernel of `init` and `body` ends its loops.
fn ends(init: &str, body: &str) -> bool {
    loops_end(&kernel(init, body), "t")
}

#[test]
fn the_benchmark_kernels_loops_end_where_they_halve() {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../ptx-cases/kernels.ptx");
    let text = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    assert!(loops_end(&text, "reduce_sum_atomic"));
    // Counted loops: they end, but are left to naga's bounds.
    assert!(!loops_end(&text, "lorenz_rk4"));
    assert!(!loops_end(&text, "matmul_tiled"));
    // No loop at all.
    assert!(loops_end(&text, "saxpy"));
}

#[test]
fn a_halving_loop_ends_and_its_near_misses_do_not() {
    let halving = |body: &str| ends("\tmov.u32 %r1, %r8;", body);
    assert!(halving(
        "\tshr.u32 %r1, %r1, 1;\n\tsetp.ne.u32 %p1, %r1, 0;\n\t@%p1 bra $L_top;"
    ));
    // The test negated at the branch: the loop goes on while `!(r1 == 0)`.
    assert!(halving(
        "\tshr.u32 %r1, %r1, 2;\n\tsetp.eq.u32 %p1, %r1, 0;\n\t@!%p1 bra $L_top;"
    ));
    // An arithmetic shift keeps a negative value's sign: -1 forever.
    assert!(!halving(
        "\tshr.s32 %r1, %r1, 1;\n\tsetp.ne.s32 %p1, %r1, 0;\n\t@%p1 bra $L_top;"
    ));
    // A shift by a register may be by 0.
    assert!(!halving(
        "\tshr.u32 %r1, %r1, %r9;\n\tsetp.ne.u32 %p1, %r1, 0;\n\t@%p1 bra $L_top;"
    ));
    // Written again in the loop.
    assert!(!halving(
        "\tshr.u32 %r1, %r1, 1;\n\tor.b32 %r1, %r1, %r8;\n\tsetp.ne.u32 %p1, %r1, 0;\n\t@%p1 bra $L_top;"
    ));
    // Halved only on some iterations.
    assert!(!halving(
        "\tsetp.eq.s32 %p2, %r9, 7;\n\t@%p2 shr.u32 %r1, %r1, 1;\n\tsetp.ne.u32 %p1, %r1, 0;\n\t@%p1 bra $L_top;"
    ));
    // A count up by one: it ends, but is not a halving loop.
    assert!(!ends(
        "\tmov.u32 %r1, 0;",
        "\tadd.s32 %r1, %r1, 1;\n\tsetp.lt.s32 %p1, %r1, %r8;\n\t@%p1 bra $L_top;"
    ));
}

#[test]
fn nested_loops_end_where_each_does() {
    let nested = |inner: &str| {
        let text = kernel(
            "\tmov.u32 %r1, 64;",
            &format!(
                "\tmov.u32 %r3, %r8;\n$L_in:\n\tadd.s32 %r9, %r9, %r3;\n{inner}\n\t@%p2 bra $L_in;\n\
                 \tshr.u32 %r1, %r1, 1;\n\tsetp.ne.u32 %p1, %r1, 0;\n\t@%p1 bra $L_top;"
            ),
        );
        loops_end(&text, "t")
    };
    assert!(nested("\tshr.u32 %r3, %r3, 1;\n\tsetp.ne.u32 %p2, %r3, 0;"));
    assert!(!nested(
        "\tshr.s32 %r3, %r3, 1;\n\tsetp.ne.u32 %p2, %r3, 0;"
    ));
}
