//! Large fields stay linear up to naga (issue 15): a phase with 12,001 drives
//! of a shared element (the fuzzer's hang), 12,001 flux emits, and 12,001
//! states compile, run on the CPU and emit WGSL in time linear in their size;
//! the shader is then held against `Limits::max_wgsl_bytes` before naga
//! (whose time is quadratic in a function's expressions) sees it, with an
//! error naming the field's place and the limit.

use std::time::{Duration, Instant};

use vgpu_ir::wgsl::phased::{emit_wgsl_phased, PhasedLayout};
use vgpu_ir::{
    compile, emit_wgsl, run_cpu_with, validate_wgsl, Args, Integration, IrError, Kernel, LimitKind,
    Limits, Method, Par, Value,
};

const TREE_SUM: &str = include_str!("../../../examples/tree_sum.field");

/// `examples/tree_sum.field` with its `load` phase's drive (or its emit)
/// repeated `n` times.
fn tree_sum_with(line: &str, n: usize) -> String {
    let l = format!("        {line}\n");
    assert!(TREE_SUM.contains(&l));
    TREE_SUM.replacen(&l, &l.repeat(n), 1)
}

/// An unphased field with `n` states, each with its own rate.
fn many_states(n: usize) -> String {
    let states: Vec<String> = (0..n).map(|j| format!("y{j} = 0.0")).collect();
    let rates: String = (0..n)
        .map(|j| format!("    d(y{j})/dt = a * x[i];\n"))
        .collect();
    format!(
        "field many(a: f32, x: f32[]) {{\n    state {};\n{rates}}}\n",
        states.join(", ")
    )
}

fn args(k: &Kernel) -> Args {
    let mut a = Args::new(k);
    for p in &k.params {
        let r = match (p.name.as_str(), p.buffer) {
            (_, true) => a.buffer(&p.name, vec![0.5f32; 16]),
            ("steps", false) => a.scalar(&p.name, Value::U32(2)),
            _ => a.scalar(&p.name, Value::F32(1.5)),
        };
        r.unwrap();
    }
    a
}

/// Compiles `src`, runs it on the CPU (8 trajectories, 2 RK4 steps, block 4)
/// and emits its RK4 WGSL: the time taken and the WGSL.
fn through_the_emitter(src: &str) -> (Kernel, Duration, String) {
    let t = Instant::now();
    let k = compile("big.field", src).expect("compiles");
    let a = args(&k);
    let integ = Integration::new(8, 0.0, 2.0, 1.0)
        .method(Method::Rk4)
        .block(4)
        .par(Par::Seq);
    let unlimited = Limits {
        max_wgsl_bytes: u64::MAX,
        ..Limits::default()
    };
    run_cpu_with(&k, &a, &integ, &unlimited).expect("runs on the CPU");
    let w = if k.is_phased() {
        let l = PhasedLayout::new_with(&k, &a, &integ, &unlimited).expect("a layout");
        emit_wgsl_phased(&k, Method::Rk4, &l).expect("WGSL").source
    } else {
        emit_wgsl(&k, &Method::Rk4.tableau(), 64).expect("WGSL")
    };
    (k, t.elapsed(), w)
}

/// The error for `w`, checked to be the WGSL limit at `line`.
fn refused(k: &Kernel, w: &str, line: u32) -> String {
    match Limits::default().check_wgsl(k, w) {
        Err(
            e @ IrError::Limit {
                kind: LimitKind::WgslBytes,
                ..
            },
        ) => {
            let m = e.to_string();
            assert!(m.starts_with(&format!("big.field:{line}:")), "{m}");
            assert!(
                m.contains(&format!("{} bytes", w.len()))
                    && m.contains("over the limit of 1048576 bytes")
                    && m.contains("Limits::max_wgsl_bytes"),
                "{m}"
            );
            m
        }
        other => panic!("expected the WGSL limit, got {other:?}"),
    }
}

/// Sizes `n` and `4n` of a shape: the WGSL grows linearly, and so (within a
/// generous factor, for a loaded machine) does the time to get there.
fn linear(shape: impl Fn(usize) -> String, n: usize) -> (Kernel, String) {
    let (_, t1, w1) = through_the_emitter(&shape(n));
    let (k4, t4, w4) = through_the_emitter(&shape(4 * n));
    let per = |w: &str, m: usize| w.len() as f64 / m as f64;
    assert!(
        per(&w4, 4 * n) < 1.1 * per(&w1, n),
        "{} then {} bytes",
        w1.len(),
        w4.len()
    );
    assert!(
        t4 < 16 * t1 + Duration::from_millis(500),
        "{n}: {t1:?}, {}: {t4:?}",
        4 * n
    );
    (k4, w4)
}

#[test]
fn twelve_thousand_drives_of_one_element_are_refused_before_naga() {
    let (k, w) = linear(|n| tree_sum_with("d(s[tid])/dt += x[i];", n), 3000);
    // The first phase, `load`, is on line 8 of the example.
    refused(&k, &w, 8);
    // The fuzzer's input itself: compiled, run and emitted in seconds.
    let (k, t, w) = through_the_emitter(&tree_sum_with("d(s[tid])/dt += x[i];", 12_001));
    assert!(t < Duration::from_secs(20), "{t:?}");
    refused(&k, &w, 8);
}

#[test]
fn many_emits_and_many_states_are_linear_and_refused_before_naga() {
    let (k, w) = linear(
        |n| tree_sum_with("emit total[0] += s[0] if tid == 0;", n),
        3000,
    );
    refused(&k, &w, 8);
    // An unphased field: its body's place is the field's declaration.
    let (k, w) = linear(many_states, 3000);
    let m = refused(&k, &w, 1);
    assert!(m.contains("12000 state(s)"), "{m}");
}

#[test]
fn the_examples_are_far_under_the_limit_and_validate() {
    for line in [
        "d(s[tid])/dt += x[i];",
        "emit total[0] += s[0] if tid == 0;",
    ] {
        let (k, _, w) = through_the_emitter(&tree_sum_with(line, 4));
        assert!(w.len() < 32 << 10, "{}", w.len());
        Limits::default().check_wgsl(&k, &w).unwrap();
        validate_wgsl(&k.name, &w).unwrap();
    }
    let (k, _, w) = through_the_emitter(&many_states(40));
    Limits::default().check_wgsl(&k, &w).unwrap();
    validate_wgsl(&k.name, &w).unwrap();
}
