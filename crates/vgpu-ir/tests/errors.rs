//! Bad input: parse errors name `file:line:col` and what was expected; type
//! errors name the variable; launch errors name the parameter, buffer,
//! trajectory or state.

use vgpu_ir::{
    compile, run_cpu, run_cpu_on, Args, Buffer, Engine, Integration, IrError, IrField, Limits,
    Method, Value,
};

fn err(src: &str) -> String {
    compile("k.field", src).unwrap_err().to_string()
}

#[test]
fn parse_errors_name_the_place_and_what_was_expected() {
    let e = err("field f(a: f32[]) {\n    state x = 1.0\n    d(x)/dt = x;\n}");
    assert!(e.starts_with("k.field:3:5: expected `;`"), "{e}");
    let e = err("field f() { state x = 1.0; d(x)/dt = (x + ; }");
    assert!(
        e.starts_with("k.field:1:43: expected an expression, found `;`"),
        "{e}"
    );
    let e = err("field f() { state x = 1.0; d(x)/dt = x $ 2.0; }");
    assert!(e.contains("1:40") && e.contains("`$`"), "{e}");
    let e = err("field f(a: f16) { }");
    assert!(e.contains("1:12: expected a type"), "{e}");
    let e = err("");
    assert!(e.contains("expected `field`"), "{e}");
    let e = err("field f() { state x = 1.0; d(x)/dt = a < b < c; }");
    assert!(e.contains("comparisons do not chain"), "{e}");
    let e = err("field f() { shared s: f32[4] = 0.0; state x = 0.0; d(s[0])/dt = 1.0; }");
    assert!(e.contains("expected `+=`"), "{e}");
    let e = err("field f() { state x = 1.0; /* unterminated");
    assert!(e.contains("`*/`"), "{e}");
}

#[test]
fn type_errors_name_the_variable() {
    let e = err("field f(n2: u32) { state x = 1.0; d(x)/dt = n2; }");
    assert!(
        e.contains("rate of state `x` must be f32, but `n2` is u32"),
        "{e}"
    );
    let e = err("field f() { state x = 1.0; d(y)/dt = x; }");
    assert!(e.contains("unknown state `y`"), "{e}");
    let e = err("field f() { state x = 1.0; d(x)/dt = q; }");
    assert!(e.contains("unknown name `q`"), "{e}");
    let e = err("field f(rho: f32[]) { state x = 1.0; d(x)/dt = rho; }");
    assert!(e.contains("`rho` is a buffer"), "{e}");
    let e = err("field f(rho: f32[]) { state x = 1.0; d(x)/dt = rho[1.5]; }");
    assert!(e.contains("index of `rho` must be an integer"), "{e}");
    let e = err("field f() { state x = 1.0, y: f64 = 0.0; d(x)/dt = x; }");
    assert!(e.contains("state `y` is f64 but state `x` is f32"), "{e}");
    let e = err("field f() { state x = 1.0; state x = 2.0; d(x)/dt = x; }");
    assert!(e.contains("state `x` is already a state"), "{e}");
    let e = err("field f() { state x = 1.0; d(x)/dt = x; d(x)/dt = 1.0; }");
    assert!(e.contains("state `x` already has a rate"), "{e}");
    let e = err("field f() { state x = t; d(x)/dt = x; }");
    assert!(e.contains("`t` cannot be used in an initial value"), "{e}");
    let e = err("field f() { state x = 1.0; d(x)/dt = sin(1u); }");
    assert!(e.contains("`sin` takes a float"), "{e}");
    let e = err("field f() { state x = 1.0; d(x)/dt = select(1.0, x, x); }");
    assert!(e.contains("condition of `select` must be bool"), "{e}");
    let e = err("field f() { state x = 1.0; d(x)/dt = x + 1u; }");
    assert!(e.contains("needs operands of one type"), "{e}");
    let e = err("field f() { state k: i32 = 1; d(k)/dt = k; }");
    assert!(e.contains("state `k` is i32"), "{e}");
    // An unphased field integrates rates only: its flux or drives would be lost.
    let e = err("field f() { state x = 0.0; flux tot: f32[1]; d(x)/dt = 1.0; emit tot[0] += x; }");
    assert!(e.contains("1:61: drives and emits need a phase"), "{e}");
    let e = err("field f() { shared s: f32[4] = 0.0; state x = 0.0; d(s[0])/dt += 1.0; }");
    assert!(e.contains("drives and emits need a phase"), "{e}");
    let e = err("field f() { state x = 1.0; let q: u32 = 4294967296; d(x)/dt = x; }");
    assert!(
        e.contains("1:41: integer `4294967296` does not fit in u32"),
        "{e}"
    );
}

fn lorenz() -> vgpu_ir::Kernel {
    compile(
        "lorenz.field",
        "field lorenz(rho: f32[]) { state x = 1.0, y = 0.0, z = 0.0;
         d(x)/dt = 10.0 * (y - x); d(y)/dt = x * (rho[i] - z) - y; d(z)/dt = x * y - 8.0 / 3.0 * z; }",
    )
    .unwrap()
}

#[test]
fn unknown_and_missing_parameters() {
    let k = lorenz();
    let mut a = Args::new(&k);
    let e = a.scalar("sigma", Value::F32(1.0)).unwrap_err();
    assert!(
        matches!(e, IrError::UnknownParam { .. }) && e.to_string().contains("`sigma`"),
        "{e}"
    );
    let e = run_cpu(&k, &a, &Integration::new(4, 0.0, 1.0, 0.1)).unwrap_err();
    assert!(
        e.to_string()
            .contains("parameter `rho` (f32[]) was not given"),
        "{e}"
    );
    let e = a.scalar("rho", Value::F32(1.0)).unwrap_err();
    assert!(e.to_string().contains("declared f32[]"), "{e}");
    let e = a.buffer("rho", vec![1u32, 2]).unwrap_err();
    assert!(e.to_string().contains("a u32[] buffer"), "{e}");
}

#[test]
fn short_buffers_name_buffer_trajectory_and_place() {
    let k = lorenz();
    let mut a = Args::new(&k);
    a.buffer("rho", vec![1.0f32; 10]).unwrap();
    let e = run_cpu(&k, &a, &Integration::new(16, 0.0, 0.01, 0.001)).unwrap_err();
    let s = e.to_string();
    assert!(
        matches!(
            e,
            IrError::OutOfBounds {
                trajectory: 10,
                len: 10,
                index: 10,
                ..
            }
        ),
        "{s}"
    );
    assert!(
        s.contains("buffer `rho` has 10 elements") && s.contains("lorenz.field:2:"),
        "{s}"
    );
}

#[test]
fn nan_states_are_reported_with_their_name() {
    let k = compile("blow.field", "field blow(a: f32[]) { state x = 1.0, y = 0.0; d(x)/dt = 0.0; d(y)/dt = log(a[i] - 1.0); }").unwrap();
    let mut args = Args::new(&k);
    args.buffer("a", vec![3.0f32, 3.0, 0.5, 3.0]).unwrap();
    let e = run_cpu(
        &k,
        &args,
        &Integration::new(4, 0.0, 1.0, 0.5).method(Method::Euler),
    )
    .unwrap_err();
    assert!(
        matches!(&e, IrError::NonFinite { trajectory: 2, state, .. } if state == "y"),
        "{e}"
    );
    assert!(e.to_string().contains("state `y` of trajectory 2"), "{e}");
}

/// A state that turns infinite is reported at that step even when the next
/// step would read out of bounds at an index computed from it: the read's
/// fault depends on the state, so the executor checks after every step (and
/// `faults_ignore_state` says so), where `rho[i]`-style reads let it check
/// once per stride.
#[test]
fn a_blow_up_is_reported_before_the_read_it_would_cause() {
    use vgpu_field::BlockField;
    let src = "field k(a: f32[]) { state x = 1.0, y = 0.0; d(x)/dt = x * x * 1e30; d(y)/dt = a[select(x < 1e38, 0u, 9u)]; }";
    let k = compile("k.field", src).unwrap();
    let mut args = Args::new(&k);
    args.buffer("a", vec![1.0f32; 8]).unwrap();
    let integ = Integration::new(4, 0.0, 1.0, 0.01).method(Method::Euler);
    for engine in [Engine::Eval, Engine::Jit] {
        let e = run_cpu_on(&k, &args, &integ, &Limits::default(), engine).unwrap_err();
        assert!(
            matches!(&e, IrError::NonFinite { state, .. } if state == "x"),
            "{engine:?}: {e}"
        );
    }
    let field = IrField::new(&k, &args, 4, 4, 1).unwrap();
    assert!(!BlockField::<f32>::faults_ignore_state(&field));
    let l = lorenz();
    let mut la = Args::new(&l);
    la.buffer("rho", vec![1.0f32; 4]).unwrap();
    let field = IrField::new(&l, &la, 4, 4, 1).unwrap();
    assert!(BlockField::<f32>::faults_ignore_state(&field));
}

#[test]
fn bad_launches_are_refused() {
    let k = lorenz();
    let mut a = Args::new(&k);
    a.buffer("rho", vec![1.0f32; 8]).unwrap();
    for (integ, needle) in [
        (Integration::new(8, 0.0, 1.0, 0.0), "dt = 0"),
        (
            Integration::new(8, 0.0, 1.0, 0.3),
            "not a whole number of steps",
        ),
        (Integration::new(0, 0.0, 1.0, 0.1), "n = 0"),
        (
            Integration::new(8, 1.0, 0.0, 0.1),
            "not a finite, non-negative span",
        ),
        (Integration::new(8, 0.0, 1.0, 0.1).block(2000), "block"),
    ] {
        let e = run_cpu(&k, &a, &integ).unwrap_err().to_string();
        assert!(e.contains(needle), "{needle}: {e}");
    }
    let k = compile("r.field", "field r(x: f32[]) { shared s: f32[bdim] = 0.0; state y = 0.0; phase a { d(s[tid])/dt += x[i]; } }").unwrap();
    let mut a = Args::new(&k);
    a.buffer("x", vec![1.0f32; 10]).unwrap();
    let e = run_cpu(
        &k,
        &a,
        &Integration::new(10, 0.0, 0.0, 1.0)
            .block(4)
            .method(Method::Euler),
    )
    .unwrap_err();
    assert!(
        e.to_string().contains("not a multiple of the block size"),
        "{e}"
    );
    // Unit-time segments (integer drives, jumps) need dt = 1, under any method.
    let k = compile("u.field", "field u() { shared s: u32[bdim] = 0; state y = 0.0; phase a over 1.0 { d(s[tid])/dt += 1; } }").unwrap();
    let e = run_cpu(
        &k,
        &Args::new(&k),
        &Integration::new(8, 0.0, 0.0, 0.5).block(4),
    )
    .unwrap_err();
    assert!(e.to_string().contains("need dt = 1"), "{e}");
    let _ = Buffer::F32(vec![].into());
}
