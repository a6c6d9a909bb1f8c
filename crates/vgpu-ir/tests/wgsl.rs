//! The generated WGSL validates with naga for every example that can run on a GPU,
//! and the refusals are clear.

use std::path::PathBuf;
use vgpu_ir::{compile, compile_file, emit_wgsl, validate_wgsl, IrError, Method};

#[test]
fn generated_wgsl_validates_with_naga() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let mut validated = 0;
    for name in ["lorenz.field", "scale.field", "relax_sin.field"] {
        let k = compile_file(&dir.join(name)).unwrap();
        for m in [Method::Euler, Method::Rk4] {
            for wg in [64, 256] {
                let src = emit_wgsl(&k, &m.tableau(), wg).unwrap();
                validate_wgsl(&k.name, &src).unwrap_or_else(|e| panic!("{name}: {e}\n{src}"));
                validated += 1;
            }
        }
    }
    assert_eq!(validated, 12);
}

#[test]
fn every_operation_emits_valid_wgsl() {
    let k = compile(
        "ops.field",
        "field ops(a: f32[], b: i32[], c: u32[], s: f32, m: u32, q: i32, flag: bool) {
            state x = a[i], y = f32(b[i % 3u]);
            let j = i32(i) - 3;
            let u = c[(i * m) % 4u] >> 2u;
            let w = select(flag && x > 0.0, exp(-x * x), tanh(y) + pow(abs(x), 1.5));
            d(x)/dt = sin(x) * cos(y) + log(1.0 + abs(w)) - sqrt(abs(s)) + floor(t) + min(x, y) - max(x, 0.5)
                      + f32(j / q) + f32(j % q) + f32(u / (m + 1u)) + f32(u % 7u) + fma(x, y, 1.0) + f32((u << 3u) ^ (u & 5u) | 1u)
                      + f32(-j) + f32(!u) + x % 2.0 + init(x) - f32(tid + bid + bdim + gdim + n);
            d(y)/dt = -y + select(!(i == 2u) || y <= x, 1.0, -2.5e-3) / 7.0;
        }",
    )
    .unwrap();
    let src = emit_wgsl(&k, &Method::Rk4.tableau(), 128).unwrap();
    validate_wgsl("ops", &src).unwrap_or_else(|e| panic!("{e}\n{src}"));
}

#[test]
fn f64_and_phased_fields_are_refused_on_the_gpu() {
    let k = compile("d.field", "field d() { state x: f64 = 1.0; d(x)/dt = -x; }").unwrap();
    let e = emit_wgsl(&k, &Method::Rk4.tableau(), 64).unwrap_err();
    assert!(
        matches!(e, IrError::Unsupported { .. }) && e.to_string().contains("no portable f64"),
        "{e}"
    );
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let k = compile_file(&dir.join("tree_sum.field")).unwrap();
    let e = emit_wgsl(&k, &Method::Euler.tableau(), 64).unwrap_err();
    assert!(e.to_string().contains("emit_wgsl_phased"), "{e}");
}

#[test]
fn constants_are_exact_bit_patterns() {
    // 8/3 in f32 is not a short decimal: it is written as its bits.
    let k = compile(
        "c.field",
        "field c() { state z = 1.0; d(z)/dt = -8.0 / 3.0 * z; }",
    )
    .unwrap();
    let src = emit_wgsl(&k, &Method::Euler.tableau(), 64).unwrap();
    let bits = format!("{:#010x}u", (-8.0f32 / 3.0).to_bits());
    assert!(src.contains(&bits), "{src}");
}
