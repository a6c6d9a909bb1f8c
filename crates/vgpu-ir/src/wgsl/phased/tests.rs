//! Unit tests of the phased WGSL emitter: every phased example validates with
//! naga, layouts and launch words, refusals.

use super::*;
use crate::args::Args;
use crate::run::Integration;
use crate::{compile, compile_file, validate_wgsl};
use std::path::PathBuf;

fn example(name: &str) -> Kernel {
    compile_file(
        &PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../examples")
            .join(name),
    )
    .unwrap()
}

fn layout_for(k: &Kernel, args: &Args, n: usize, block: u32) -> PhasedLayout {
    let integ = Integration::new(n, 0.0, 1.0, 1.0)
        .method(Method::Euler)
        .block(block);
    PhasedLayout::new(k, args, &integ).unwrap()
}

/// Emits with Euler and RK4, validates both; returns the Euler shader.
fn emit_and_validate(k: &Kernel, layout: &PhasedLayout) -> PhasedWgsl {
    let rk4 = emit_wgsl_phased(k, Method::Rk4, layout).unwrap();
    validate_wgsl(&k.name, &rk4.source).unwrap_or_else(|e| panic!("{e}\n{}", rk4.source));
    let w = emit_wgsl_phased(k, Method::Euler, layout).unwrap();
    validate_wgsl(&k.name, &w.source).unwrap_or_else(|e| panic!("{e}\n{}", w.source));
    assert!(rk4.workgroup_bytes >= w.workgroup_bytes);
    w
}

#[test]
fn every_phased_example_validates_with_naga() {
    let mut checked = 0;
    for block in [32u32, 64, 256] {
        let k = example("barrier_reverse.field");
        let mut a = Args::new(&k);
        a.buffer("x", vec![1.0f32; 1024]).unwrap();
        let l = layout_for(&k, &a, 1024, block);
        assert_eq!(l.shared_lens, vec![block]);
        assert_eq!(l.schedule, vec![vec![1], vec![1]]);
        let w = emit_and_validate(&k, &l);
        // Own-lane drives need no contribution arrays.
        assert_eq!(w.workgroup_bytes, 4 * block as u64);

        let k = example("tree_sum.field");
        let mut a = Args::new(&k);
        a.buffer("x", vec![1.0f32; 1024]).unwrap();
        a.scalar("steps", Value::U32(block.trailing_zeros()))
            .unwrap();
        let l = layout_for(&k, &a, 1024, block);
        assert_eq!(l.schedule[1].len(), block.trailing_zeros() as usize);
        assert_eq!(l.flux_lens, vec![1]);
        emit_and_validate(&k, &l);

        let k = example("histogram.field");
        let mut a = Args::new(&k);
        a.buffer("x", vec![3u32; 1024]).unwrap();
        a.scalar("bins", Value::U32(16)).unwrap();
        let l = layout_for(&k, &a, 1024, block);
        assert_eq!(l.shared_lens, vec![16]);
        let w = emit_and_validate(&k, &l);
        // The histogram's integer drives gather through 16 workgroup atomics.
        assert_eq!(w.workgroup_bytes, 64 + 64);
        assert!(w.source.contains("atomicAdd(&ia0[x], 1u)"));
        assert!(w.source.contains("atomicAdd(&fx0[i], v)"));

        for name in ["matmul.field", "matmul_fma.field"] {
            let k = example(name);
            let mut a = Args::new(&k);
            a.buffer("a", vec![1.0f32; 64]).unwrap();
            a.buffer("b", vec![1.0f32; 64]).unwrap();
            a.scalar("k", Value::U32(8)).unwrap();
            a.scalar("cols", Value::U32(8)).unwrap();
            let l = layout_for(&k, &a, 64, block.min(64));
            assert_eq!(l.schedule, vec![vec![8]]);
            let w = emit_and_validate(&k, &l);
            // No shared sub-field: no barrier at all.
            assert!(!w.source.contains("workgroupBarrier"));
        }
        checked += 1;
    }
    assert_eq!(checked, 3);
}

#[test]
fn float_flux_adds_by_compare_exchange_and_types_mix() {
    let k = compile(
        "mix.field",
        "field mix(x: f32[], m: u32) {
            shared a: f32[bdim] = 1.5;
            shared c: i32[4] = -2;
            shared u: u32[m] = 0;
            shared flag: bool[2] = true;
            flux total: f32[2];
            flux cnt: i32[3];
            state y = x[i], z = 0.0;
            phase one for k in 0..3 {
                d(a[tid])/dt += y * f32(k);
                d(c[tid % 4])/dt += i32(tid) - 1 if flag[1];
                d(c[(tid + 1) % 4])/dt += 2;
                d(u[tid % m])/dt += 1;
                emit total[tid % 2] += a[(tid + 1) % bdim];
                emit cnt[u32(c[tid % 4]) % 3] += c[0] if tid < 3;
                d(y)/dt = a[tid] - y;
                z := z + f32(u[0]);
            }
            phase two over 2.0 {
                d(y)/dt = -y * t;
            }
        }",
    )
    .unwrap();
    let mut a = Args::new(&k);
    a.buffer("x", vec![0.5f32; 128]).unwrap();
    a.scalar("m", Value::U32(5)).unwrap();
    let l = layout_for(&k, &a, 128, 64);
    assert_eq!(l.shared_lens, vec![64, 4, 5, 2]);
    assert_eq!(l.schedule, vec![vec![1, 1, 1], vec![2]]);
    assert_eq!(l.steps, 5);
    let w = emit_and_validate(&k, &l);
    assert!(w.source.contains("atomicCompareExchangeWeak(&fx0[i]"));
    assert!(w.source.contains("atomic<i32>"));
    // c and u (integers) gather through workgroup atomics; a is driven by
    // its own lanes; no contribution arrays are needed.
    assert!(w
        .source
        .contains("var<workgroup> ia1: array<atomic<i32>, 4>"));
    assert!(w
        .source
        .contains("var<workgroup> ia2: array<atomic<u32>, 5>"));
    assert!(!w.source.contains("var<workgroup> di"));
    let words = l.launch_words(&k, &a).unwrap();
    // header, 1 buffer length, 1 scalar, 2 flux lengths, schedule [3, 1, 1, 1, 1, 2].
    assert_eq!(words.len(), META_HEADER + 1 + 1 + 2 + 6);
    assert_eq!(&words[META_HEADER + 2..], &[2, 3, 3, 1, 1, 1, 1, 2]);
}

#[test]
fn refusals_name_what_is_unsupported() {
    let k = example("lorenz.field");
    let e = check_phased_wgsl(&k).unwrap_err();
    assert!(e.to_string().contains("no phases"), "{e}");
    let k = compile(
        "d.field",
        "field d() { state x: f64 = 1.0; phase p { d(x)/dt = -x; } }",
    )
    .unwrap();
    let e = check_phased_wgsl(&k).unwrap_err();
    assert!(e.to_string().contains("f64"), "{e}");
    let k = compile(
        "b.field",
        "field b() { shared s: bool[4] = false; state x = 0.0; phase p { d(s[tid])/dt += true; d(x)/dt = 1.0; } }",
    );
    let e = check_phased_wgsl(&k.unwrap()).unwrap_err();
    assert!(e.to_string().contains("bool shared"), "{e}");
}

#[test]
fn launches_are_checked_like_the_cpu() {
    let k = example("barrier_reverse.field");
    let mut a = Args::new(&k);
    a.buffer("x", vec![1.0f32; 100]).unwrap();
    let integ = Integration::new(100, 0.0, 1.0, 1.0)
        .method(Method::Euler)
        .block(64);
    let e = PhasedLayout::new(&k, &a, &integ).unwrap_err();
    assert!(
        e.to_string()
            .contains("not a multiple of the block size 64"),
        "{e}"
    );
    let k = example("histogram.field");
    let mut a = Args::new(&k);
    a.buffer("x", vec![1u32; 64]).unwrap();
    a.scalar("bins", Value::U32(4)).unwrap();
    let integ = Integration::new(64, 0.0, 1.0, 0.5)
        .method(Method::Euler)
        .block(64);
    let e = PhasedLayout::new(&k, &a, &integ).unwrap_err();
    assert!(e.to_string().contains("need dt = 1"), "{e}");
    let k = example("matmul.field");
    let mut a = Args::new(&k);
    a.buffer("a", vec![1.0f32; 64]).unwrap();
    a.buffer("b", vec![1.0f32; 64]).unwrap();
    a.scalar("k", Value::U32(8)).unwrap();
    a.scalar("cols", Value::U32(8)).unwrap();
    let integ = Integration::new(64, 0.0, 1.0, 3.0)
        .method(Method::Euler)
        .block(64);
    let e = PhasedLayout::new(&k, &a, &integ).unwrap_err();
    assert!(e.to_string().contains("span of phase `accumulate`"), "{e}");
}
