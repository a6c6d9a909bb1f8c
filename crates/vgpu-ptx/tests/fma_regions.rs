//! The speculative fma regions of the guarded device fma (vgpu-ir's
//! wgsl/cfg/speculate.rs) and the tests they carry from one to the next
//! (coverage.rs): `lorenz_rk4`'s step loop tests its state and its step
//! sizes once, before the loop, and then takes them from the regions that
//! last tested them, each region starting from those regions' flags; and
//! values whose bounds keep them normal are not tested at all; a region's
//! second run is a loop over its fmas or a rerun until none is left to
//! emulate (second_run.rs).

use std::path::Path;
use vgpu_ir::wgsl::cfg::{emit_cfg_wgsl, CfgWgslOptions};
use vgpu_ptx::lower::lower_entry;
use vgpu_ptx::Module;

/// `lorenz_rk4`'s WGSL with the guarded device fma (the flushing model's
/// form, as on NVIDIA), checked or not.
fn lorenz(checked: bool) -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../ptx-cases/kernels.ptx");
    let text = std::fs::read_to_string(&p).expect("kernels.ptx");
    let m = Module::parse(&text, "kernels.ptx").expect("parses");
    let k = lower_entry(&m, "lorenz_rk4").expect("lowers").1;
    let mut o = CfgWgslOptions::plain([256, 1, 1], checked);
    o.f64 = true;
    o.native_fma_f32 = true;
    o.fma_flush_model = true;
    emit_cfg_wgsl(&k, &o).expect("WGSL")
}

#[test]
fn a_loops_regions_take_the_values_earlier_regions_tested() {
    for checked in [false, true] {
        let w = lorenz(checked);
        // The fast copies' tests: 123 before the tests were carried, 117
        // with the loop's region taking the state (3) and the step sizes
        // (3) from the pre-test and its own previous run, 53 with the
        // values that bounds (magnitude.rs) keep at 2^-126 or above left
        // untested (the state and step sizes tested against 2^-32), 45
        // with ρ − z tested through the loop-invariant ρ (in the pre-test).
        let tests: usize = w
            .lines()
            .filter(|l| l.trim_start().starts_with("sus") && l.contains(" | tiny("))
            .map(|l| l.matches("tiny(").count())
            .sum();
        assert!(tests <= 45, "checked {checked}: {tests} tests");
        assert!(
            w.contains("abs(f(x)) < 2.3283064e-10f"),
            "checked {checked}: the threshold"
        );
        // The pre-test before the loop and the loop region's flag, which
        // the loop region starts from.
        let flags = w.matches("var<private> cov").count();
        assert!(flags >= 2, "checked {checked}: {flags} flags");
        let pre = w
            .lines()
            .filter(|l| l.trim_start().starts_with("cov") && l.contains("= tiny("))
            .count();
        assert!(pre >= 1, "checked {checked}: no pre-test");
        let from_flags = w
            .lines()
            .filter(|l| l.trim_start().starts_with("var sus") && l.contains("= cov"))
            .count();
        assert!(from_flags >= 1, "checked {checked}: {from_flags} regions");
    }
}

/// A chain of fmas on one sum, its factors loaded first
/// (`crates/vgpu/tests/kernels/fma_chain.ptx`): the registers live at its
/// fmas together are those live at the first, so its second run is a loop
/// over the four fmas with one emulation (wgsl/cfg/second_run.rs); the
/// Lorenz step's, whose live values change from fma to fma, stays straight.
#[test]
fn a_chain_of_fmas_runs_again_as_a_loop() {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../vgpu/tests/kernels/fma_chain.ptx");
    let text = std::fs::read_to_string(&p).expect("fma_chain.ptx");
    let m = Module::parse(&text, "fma_chain.ptx").expect("parses");
    let k = lower_entry(&m, "fma_chain").expect("lowers").1;
    for checked in [false, true] {
        let mut o = CfgWgslOptions::plain([256, 1, 1], checked);
        o.f64 = true;
        o.native_fma_f32 = true;
        o.fma_flush_model = true;
        let w = emit_cfg_wgsl(&k, &o).expect("WGSL");
        assert_eq!(w.matches("switch fk").count(), 1, "{w}");
        assert_eq!(w.matches("= fma_native_f32(").count(), 1, "{w}");
        assert_eq!(lorenz(checked).matches("switch fk").count(), 0);
    }
}

/// The Lorenz step's regions, which the loop form does not fit, run again
/// until no fma is left to emulate (wgsl/cfg/second_run.rs, the rerun
/// form): each of its two regions (the step loop's and the remainder's)
/// emulates in one place, and no fma is the in-place guard with its own
/// emulation. (`crates/vgpu/tests/ptx_gpu_fma.rs` runs them on suspect
/// states against the interpreter.)
#[test]
fn straight_regions_run_again_until_no_fma_is_left_to_emulate() {
    for checked in [false, true] {
        let w = lorenz(checked);
        let regions = w.matches("if (sus").count();
        assert_eq!(regions, 2, "checked {checked}");
        assert_eq!(w.matches("var dn").count(), regions, "{w}");
        assert_eq!(w.matches("= fma_f32(pa").count(), regions, "{w}");
        assert_eq!(w.matches("fma_native_f32(r").count(), 0, "{w}");
    }
}
