//! Which lowered kernels' loops end themselves (vgpu-ir's
//! wgsl/cfg/bounded.rs, `CfgWgsl::loops_end`), so that their unchecked
//! WGSL need not be bounded by the GPU compiler: nvcc's loops of the
//! benchmark kernels (`lorenz_rk4` counts `n − (n & 1)` down by 2,
//! `matmul_tiled` counts tiles up by 1, `reduce_sum_atomic` halves), and
//! small loops, each beside a near miss that may not end.

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

/// A kernel `t` of one parameter `n` whose loop (`body`, entered with
/// `%r1`, the count, set by `init`) adds `%r1` into `%r9`, stored to
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
fn the_benchmark_kernels_loops_end_themselves() {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../ptx-cases/kernels.ptx");
    let text = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    // matmul_naive's main loop counts `n − r` down by 4, `r = n & 3` the
    // remainder loop's count afterwards; and one kernel without loops.
    for entry in [
        "lorenz_rk4",
        "matmul_tiled",
        "reduce_sum_atomic",
        "matmul_naive",
        "saxpy",
    ] {
        assert!(loops_end(&text, entry), "{entry}");
    }
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
}

#[test]
fn a_loop_counted_up_by_one_to_a_bound_ends() {
    let up = |cmp: &str| {
        ends(
            "\tmov.u32 %r1, 0;",
            &format!("\tadd.s32 %r1, %r1, 1;\n\tsetp.{cmp}.s32 %p1, %r1, %r8;\n\t@%p1 bra $L_top;"),
        )
    };
    assert!(up("lt"));
    assert!(up("ne"));
    // `i <= n` never fails for n = INT_MAX.
    assert!(!up("le"));
    // `i >= n` holds forever for n = INT_MIN.
    assert!(!up("ge"));
    // The test negated at the branch: the loop goes on while `!(i >= n)`.
    assert!(ends(
        "\tmov.u32 %r1, 0;",
        "\tadd.s32 %r1, %r1, 1;\n\tsetp.ge.u32 %p1, %r1, %r8;\n\t@!%p1 bra $L_top;"
    ));
    // Down by one while above the bound, with the bound on the left.
    assert!(ends(
        "\tmov.u32 %r1, %r8;",
        "\tsub.s32 %r1, %r1, 1;\n\tsetp.lt.s32 %p1, %r8, %r1;\n\t@%p1 bra $L_top;"
    ));
}

#[test]
fn a_loop_stepping_by_more_than_one_ends_only_where_it_meets_its_bound() {
    // Up by 2 while below n: may wrap past INT_MAX.
    assert!(!ends(
        "\tmov.u32 %r1, 0;",
        "\tadd.s32 %r1, %r1, 2;\n\tsetp.lt.s32 %p1, %r1, %r8;\n\t@%p1 bra $L_top;"
    ));
    let down2 = |init: &str| {
        ends(
            init,
            "\tadd.s32 %r1, %r1, -2;\n\tsetp.ne.s32 %p1, %r1, 0;\n\t@%p1 bra $L_top;",
        )
    };
    // nvcc's unrolled count, n − (n & 1): even, so counting down by 2 meets 0.
    assert!(down2("\tand.b32 %r2, %r8, 1;\n\tsub.s32 %r1, %r8, %r2;"));
    // n itself may be odd.
    assert!(!down2("\tmov.u32 %r1, %r8;"));
    // The low bit of another register.
    assert!(!down2("\tand.b32 %r2, %r9, 1;\n\tsub.s32 %r1, %r8, %r2;"));
    // The mask taken after the subtraction reads a register not yet set.
    assert!(!down2("\tsub.s32 %r1, %r8, %r2;\n\tand.b32 %r2, %r8, 1;"));
    // The mask's register written again between the mask and the subtraction.
    assert!(!down2(
        "\tand.b32 %r2, %r8, 1;\n\tadd.s32 %r2, %r2, 1;\n\tsub.s32 %r1, %r8, %r2;"
    ));
    // ... or after the subtraction only: the mask still holds there.
    assert!(down2(
        "\tand.b32 %r2, %r8, 1;\n\tsub.s32 %r1, %r8, %r2;\n\tadd.s32 %r2, %r2, 1;"
    ));
    // n shifted left, and a multiple of 2 masked.
    assert!(down2("\tshl.b32 %r1, %r8, 1;"));
    assert!(down2("\tand.b32 %r1, %r8, -2;"));
    assert!(!down2("\tand.b32 %r1, %r8, -3;"));
    // Down by 4 from a multiple of 2 only.
    assert!(!ends(
        "\tand.b32 %r1, %r8, -2;",
        "\tadd.s32 %r1, %r1, -4;\n\tsetp.ne.s32 %p1, %r1, 0;\n\t@%p1 bra $L_top;"
    ));
}

#[test]
fn a_loop_whose_count_or_bound_changes_elsewhere_is_not_proven() {
    // The bound moves with the count.
    assert!(!ends(
        "\tmov.u32 %r1, 0;",
        "\tadd.s32 %r8, %r8, 1;\n\tadd.s32 %r1, %r1, 1;\n\tsetp.lt.s32 %p1, %r1, %r8;\n\t@%p1 bra $L_top;"
    ));
    // The count is written twice.
    assert!(!ends(
        "\tmov.u32 %r1, 0;",
        "\tadd.s32 %r1, %r1, 1;\n\tadd.s32 %r1, %r1, 1;\n\tsetp.lt.s32 %p1, %r1, %r8;\n\t@%p1 bra $L_top;"
    ));
    // The step only on some iterations.
    assert!(!ends(
        "\tmov.u32 %r1, 0;",
        "\tsetp.eq.s32 %p2, %r9, 7;\n\t@%p2 add.s32 %r1, %r1, 1;\n\tsetp.lt.s32 %p1, %r1, %r8;\n\t@%p1 bra $L_top;"
    ));
}

#[test]
fn nested_loops_end_where_each_does() {
    let nested = |inner_cmp: &str| {
        let text = kernel(
            "\tmov.u32 %r1, 64;",
            &format!(
                "\tmov.u32 %r3, 0;\n$L_in:\n\tadd.s32 %r9, %r9, %r3;\n\tadd.s32 %r3, %r3, 1;\n\
                 \tsetp.{inner_cmp}.u32 %p2, %r3, %r1;\n\t@%p2 bra $L_in;\n\
                 \tshr.u32 %r1, %r1, 1;\n\tsetp.ne.u32 %p1, %r1, 0;\n\t@%p1 bra $L_top;"
            ),
        );
        loops_end(&text, "t")
    };
    assert!(nested("lt"));
    assert!(!nested("le"));
}
