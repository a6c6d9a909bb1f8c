//! Hostile input (issue 15): every finding of the bad-input campaign, as a named
//! regression. Each one once panicked, overflowed the stack or allocated
//! gigabytes; each must now be a clean error naming the place or the limit.

use vgpu_ir::{compile, run_cpu, Args, Integration, IrError, Kernel, Method, Value};

fn type_err(src: &str) -> String {
    match compile("k.field", src) {
        Ok(_) => panic!("accepted: {src}"),
        Err(e @ IrError::Type { .. }) | Err(e @ IrError::Parse { .. }) => e.to_string(),
        Err(e) => panic!("unexpected error kind: {e}"),
    }
}

/// One block of `block` trajectories, Euler, dt = 1, one unit of time.
fn unit(n: usize, block: u32) -> Integration {
    Integration::new(n, 0.0, 1.0, 1.0)
        .method(Method::Euler)
        .block(block)
}

fn run(k: &Kernel, args: &Args) -> Result<vgpu_ir::Output, IrError> {
    run_cpu(k, args, &unit(4, 4))
}

#[test]
fn negative_literal_as_flux_index_is_a_type_error() {
    let e = type_err(
        "field f() {\n    state x = 1.0;\n    flux o: f32[4];\n    phase p {\n        d(x)/dt = 1.0;\n        emit o[-1] += x;\n    }\n}",
    );
    assert!(e.starts_with("k.field:6:16:"), "{e}");
    assert!(e.contains("u32"), "{e}");
}

#[test]
fn negative_literal_as_shared_index_is_a_type_error() {
    let e = type_err(
        "field f() {\n    state x = 1.0;\n    shared s: f32[4] = 0.0;\n    phase p {\n        d(s[-1])/dt += x;\n    }\n}",
    );
    assert!(e.starts_with("k.field:5:13:"), "{e}");
    assert!(e.contains("u32"), "{e}");
}

#[test]
fn negative_literal_in_an_index_sum_or_length_is_a_type_error() {
    for (src, at) in [
        (
            "field f(a: f32[]) { state x = a[0 - -1]; d(x)/dt = x; }",
            "1:37",
        ),
        (
            "field f() { state x = 1.0; shared s: f32[-4] = 0.0; d(x)/dt = x; }",
            "1:42",
        ),
        (
            "field f() { state x = 1.0; phase p for k in 0..-2 { d(x)/dt = x; } }",
            "1:48",
        ),
        (
            "field f() { state x = 1.0; d(x)/dt = f32(3u << -1); }",
            "1:48",
        ),
    ] {
        let e = type_err(src);
        assert!(e.contains(at), "{src}: {e}");
    }
    // Written as i32, a negative index is a run-time bounds error, not a panic.
    let k = compile(
        "k.field",
        "field f() { state x = 1.0; flux o: f32[4]; phase p { d(x)/dt = 1.0; emit o[-1i] += x; } }",
    )
    .unwrap();
    let e = run(&k, &Args::new(&k)).unwrap_err();
    assert!(matches!(e, IrError::OutOfBounds { index: -1, .. }), "{e}");
}

#[test]
fn integer_operators_on_literals_are_not_float_values() {
    let e = type_err("field f() {\n    state x = 0 & 0;\n    d(x)/dt = x;\n}");
    assert!(e.starts_with("k.field:2:"), "{e}");
    assert!(e.contains("`&`") && e.contains("f32"), "{e}");
    for src in [
        "field f() { state x = 1 << 2; d(x)/dt = x; }",
        "field f() { state x = 1.0; d(x)/dt = x + (3 ^ 1); }",
        "field f() { state x = 1.0; d(x)/dt = !0; }",
        "field f() { state x: f64 = 2 | 1; d(x)/dt = x; }",
    ] {
        let e = type_err(src);
        assert!(e.contains("f32") || e.contains("f64"), "{src}: {e}");
    }
}

#[test]
fn long_left_nested_chain_is_a_depth_error() {
    let chain = vec!["x"; 12_000].join(" + ");
    let src = format!("field f() {{\n    state x = 1.0;\n    d(x)/dt = {chain};\n}}");
    let e = type_err(&src);
    assert!(e.starts_with("k.field:3:"), "{e}");
    assert!(e.contains(&vgpu_ir::MAX_EXPR_DEPTH.to_string()), "{e}");
    // Every other left-nested operator chain too.
    for op in ["*", "-", "/", "&&", "||", "<<", "&", "|", "^", "%"] {
        let chain = vec!["x"; 5_000].join(&format!(" {op} "));
        let src = format!("field f() {{ state x = 1.0; d(x)/dt = {chain}; }}");
        let e = type_err(&src);
        assert!(e.contains("nested"), "{op}: {e}");
    }
}

#[test]
fn chains_at_the_depth_limit_compile_and_run_on_a_small_stack() {
    // One level below the limit must compile, run, and drop on a 1 MiB stack.
    let terms = vgpu_ir::MAX_EXPR_DEPTH as usize - 4;
    let chain = vec!["x"; terms].join(" + ");
    let src = format!("field f() {{ state x = 1.0; d(x)/dt = 0.0 * ({chain}); }}");
    std::thread::Builder::new()
        .stack_size(1 << 20)
        .spawn(move || {
            let k = compile("k.field", &src).unwrap();
            let out = run(&k, &Args::new(&k)).unwrap();
            assert_eq!(out.states_f64(), vec![1.0; 4]);
        })
        .unwrap()
        .join()
        .unwrap();
}

fn limit_err(src: &str, args: impl FnOnce(&mut Args), n: usize, block: u32) -> IrError {
    let k = compile("k.field", src).unwrap();
    let mut a = Args::new(&k);
    args(&mut a);
    match run_cpu(&k, &a, &unit(n, block)) {
        Err(e @ IrError::Limit { .. }) => e,
        other => panic!("expected a limit error, got {other:?}"),
    }
}

#[test]
fn constant_shared_size_over_the_limit_is_refused_before_allocating() {
    let e = limit_err(
        "field f() {\n    state x = 1.0;\n    shared s: f32[4294967295u] = 0.0;\n    phase p { d(s[tid])/dt += x; }\n}",
        |_| {},
        4,
        4,
    );
    let m = e.to_string();
    assert!(m.starts_with("k.field:3:12:"), "{m}");
    assert!(
        m.contains("`s`") && m.contains("49152") && m.contains("max_shared_bytes"),
        "{m}"
    );
}

#[test]
fn shared_size_from_a_parameter_over_the_limit_is_refused() {
    let e = limit_err(
        "field histogram(x: u32[], bins: u32) {\n    shared local: u32[bins] = 0;\n    flux hist: u32[bins];\n    phase count { d(local[x[i] % bins])/dt += 1; }\n}",
        |a| {
            a.buffer("x", vec![1u32; 4]).unwrap();
            a.scalar("bins", Value::U32(1_000_000_000)).unwrap();
        },
        4,
        4,
    );
    let m = e.to_string();
    assert!(m.contains("`local`") && m.contains("4000000000"), "{m}");
    assert!(m.contains("max_shared_bytes"), "{m}");
}

#[test]
fn flux_size_over_the_limit_is_refused_before_allocating() {
    let e = limit_err(
        "field f() {\n    state x = 1.0;\n    flux o: f32[4000000000u];\n    phase p { emit o[0] += x; }\n}",
        |_| {},
        4,
        4,
    );
    let m = e.to_string();
    assert!(m.starts_with("k.field:3:10:"), "{m}");
    assert!(m.contains("`o`") && m.contains("max_flux_elements"), "{m}");
}

#[test]
fn repetition_count_from_a_parameter_over_the_limit_is_refused() {
    let e = limit_err(
        "field f(k: u32) {\n    state x = 1.0;\n    phase p for j in 0..k { d(x)/dt = 1.0; }\n}",
        |a| {
            a.scalar("k", Value::U32(4_000_000_000)).unwrap();
        },
        4,
        4,
    );
    let m = e.to_string();
    assert!(m.starts_with("k.field:3:5:"), "{m}");
    assert!(m.contains("`p`") && m.contains("4000000000"), "{m}");
    assert!(m.contains("max_phase_repetitions"), "{m}");
}

#[test]
fn raised_limits_let_a_larger_launch_through() {
    let src =
        "field f() { state x = 1.0; shared s: f32[16384] = 0.0; phase p { d(s[tid])/dt += x; } }";
    let k = compile("k.field", src).unwrap();
    let a = Args::new(&k);
    assert!(matches!(run(&k, &a), Err(IrError::Limit { .. })));
    let limits = vgpu_ir::Limits {
        max_shared_bytes: 64 * 1024,
        ..vgpu_ir::Limits::default()
    };
    vgpu_ir::run_cpu_with(&k, &a, &unit(4, 4), &limits).unwrap();
}

#[test]
fn phase_steps_over_the_limit_are_refused_before_running() {
    // 10^10 unit steps would run for hours: refused up front, naming the phase.
    let e = limit_err(
        "field f() {\n    state x = 1.0;\n    phase p over 1e10 { d(x)/dt = 0.0; }\n}",
        |_| {},
        4,
        4,
    );
    let m = e.to_string();
    assert!(m.starts_with("k.field:3:5:"), "{m}");
    assert!(m.contains("`p`") && m.contains("max_phase_steps"), "{m}");
}

#[test]
fn a_hand_built_ill_typed_kernel_is_refused_not_run() {
    // `-` on a u32, built with the IR's own builders: the evaluator would have
    // nothing to compute it with; run_cpu refuses the kernel instead.
    let mut k = compile("k.field", "field f() { state x = 1.0; d(x)/dt = x; }").unwrap();
    let tid = k.builtin(vgpu_ir::Builtin::Thread);
    let neg = k.unary(vgpu_ir::kernel::UnOp::Neg, tid);
    let idx = k.cast(vgpu_ir::ScalarType::F32, neg);
    k.phases[0].updates[0] = vgpu_ir::Update::Rate(idx);
    let e = run(&k, &Args::new(&k)).unwrap_err();
    assert!(
        matches!(e, IrError::Malformed { .. }) && e.to_string().contains("Neg"),
        "{e}"
    );
}
