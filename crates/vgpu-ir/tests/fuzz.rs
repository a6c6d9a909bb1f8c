//! Fuzzing the `.field` front end with proptest: random text and mutations of the
//! examples never panic (they compile or return an error with a position); the
//! inputs that once broke it are kept below as regressions.

use proptest::prelude::*;
use vgpu_ir::{compile_all, IrError};

const SEED: &str = "field lorenz(rho: f32[], k: u32) {
    state x = 1.0, y = 0.0, z = 0.0;
    shared s: f32[bdim] = 0.0;
    flux f: f32[1];
    let q = select(i < 3u, 1.0, -2.5e-3);
    phase p for j in 0..k over f32(k) {
        d(x)/dt = 10.0 * (y - x) + q;
        d(s[tid])/dt += x if tid < 4u;
        emit f[0] += s[min(tid, bdim - 1)];
        z := fma(x, y, z);
    }
}";

fn check(src: &str) {
    match compile_all("fuzz.field", src) {
        Ok(_) => {}
        Err(IrError::Parse { pos, .. }) | Err(IrError::Type { pos, .. }) => {
            assert!(pos.line >= 1 && pos.col >= 1)
        }
        Err(e) => panic!("unexpected error kind: {e}"),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn random_text_never_panics(s in "[a-z0-9_ (){}\\[\\];:,.=+*/<>!&|^%-]{0,120}") {
        check(&s);
    }

    #[test]
    fn mutated_examples_never_panic(pos in 0usize..SEED.len(), len in 0usize..12, ins in "[a-z0-9(){}\\[\\];:=+.<>-]{0,6}") {
        let mut s = SEED.to_string();
        let start = pos.min(s.len());
        let end = (start + len).min(s.len());
        if s.is_char_boundary(start) && s.is_char_boundary(end) {
            s.replace_range(start..end, &ins);
        }
        check(&s);
    }
}

#[test]
fn regressions() {
    // Inputs that once panicked or misbehaved; each must now be a clean error.
    for src in [
        "field f() { state x = 1.0; d(x)/dt = -2147483648i * x; }",
        "field f() { state x = 1.0; d(x)/dt = ((((((((((((((((((((x)))))))))))))))))))); }",
        &format!(
            "field f() {{ state x = 1.0; d(x)/dt = {}x; }}",
            "-".repeat(5000)
        ),
        &format!(
            "field f() {{ state x = 1.0; d(x)/dt = {}x{}; }}",
            "(".repeat(5000),
            ")".repeat(5000)
        ),
        "field f(a: f32[]) { phase p for k in 1..3 { } }",
        "field f() { state x = 1.0; d(x)/dt = 1e999; }",
        "field f() { state x = 1.0; d(x)/dt = 99999999999999999999999 * x; }",
        "field f() { state x = 1.0; d(x)/dt = x << 1; }",
        "field f() { state x = 1.0; let i = 2; d(x)/dt = x; }",
        "field",
        "field f(",
        "field f() { state x = 1.0; d(x",
    ] {
        check(src);
    }
}
