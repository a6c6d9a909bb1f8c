//! Unit tests of the adaptive WGSL emitter ([`super`]): naga validation of
//! every method with events and Rosenbrock23 in f32 and f64, exact tableau
//! literals, the shared preconditions.

use super::*;
use crate::check::compile;

/// `examples/lorenz_f64.field`: the Lorenz field in `f64`.
const LORENZ64: &str = include_str!("../../../../examples/lorenz_f64.field");

#[test]
fn every_method_validates_in_f32_and_f64() {
    let k32 = compile(
        "lorenz.field",
        include_str!("../../../../examples/lorenz.field"),
    )
    .unwrap();
    let k64 = compile("lorenz64.field", LORENZ64).unwrap();
    for m in AdaptiveMethod::ALL {
        let md = MethodData::of(m).unwrap();
        let w = emit_wgsl_adaptive(&k32, &md).unwrap();
        validate_adaptive_wgsl("lorenz", &w, false).unwrap_or_else(|e| panic!("{m}: {e}\n{w}"));
        let w = emit_wgsl_adaptive(&k64, &md).unwrap();
        validate_adaptive_wgsl("lorenz64", &w, true)
            .unwrap_or_else(|e| panic!("{m} f64: {e}\n{w}"));
        // Without the capability an f64 shader is refused.
        assert!(validate_adaptive_wgsl("lorenz64", &w, false).is_err());
    }
}

#[test]
fn coefficients_are_the_cpu_tableau_rounded_exactly() {
    let k = compile(
        "lorenz.field",
        include_str!("../../../../examples/lorenz.field"),
    )
    .unwrap();
    let md = MethodData::of(AdaptiveMethod::Tsit5).unwrap();
    let w = emit_wgsl_adaptive(&k, &md).unwrap();
    // a[3][1] of tsit5, rounded to f32, as its bits.
    let a31 = tsit5().a[3][1] as f32;
    assert!(w.contains(&format!("bitcast<f32>({:#010x}u)", a31.to_bits())));
    let k64 = compile("lorenz64.field", LORENZ64).unwrap();
    let w = emit_wgsl_adaptive(&k64, &md).unwrap();
    assert!(w.contains(&format!("{:?}lf", tsit5().a[3][1])));
}

const BALL: &str = "field ball(h0: TY[], e: TY[]) {
    state y: TY = h0[i], v: TY = 0.0, nb: TY = 0.0;
    d(y)/dt = v;
    d(v)/dt = -9.81;
    d(nb)/dt = 0.0;
    event floor: y falling { v := -e[i] * v; nb := nb + 1.0; }
    event top: y - 10.0 * e[0] rising terminate;
}";

#[test]
fn events_and_rosenbrock23_validate_in_f32_and_f64() {
    for ty in ["f32", "f64"] {
        let k = compile("ball.field", &BALL.replace("TY", ty)).unwrap();
        let f64s = ty == "f64";
        check_adaptive_wgsl(&k).unwrap();
        for m in AdaptiveMethod::ALL {
            let w = emit_wgsl_method(&k, m).unwrap();
            validate_adaptive_wgsl("ball", &w, f64s)
                .unwrap_or_else(|e| panic!("{m} {ty}: {e}\n{w}"));
            assert!(w.contains("fn gcond(") && w.contains("fn jump0("), "{m}");
            // The terminating event has no jump function.
            assert!(!w.contains("fn jump1("), "{m}");
        }
        let k = compile("lorenz64.field", &LORENZ64.replace("f64", ty)).unwrap();
        let w = emit_wgsl_rosenbrock(&k).unwrap();
        validate_adaptive_wgsl("lorenz", &w, f64s).unwrap_or_else(|e| panic!("{e}\n{w}"));
        assert!(w.contains("fn jacf(") && w.contains("fn lu_factor("));
        assert!(!w.contains("gcond"), "no events, no scan");
    }
}

#[test]
fn shared_preconditions_name_the_adaptive_backend() {
    let k = compile(
        "tree_sum.field",
        include_str!("../../../../examples/tree_sum.field"),
    )
    .unwrap();
    let e = check_adaptive_wgsl(&k).unwrap_err().to_string();
    assert!(e.contains("phases") && e.contains("adaptive"), "{e}");
    let states: Vec<String> = (0..17).map(|j| format!("s{j} = 1.0")).collect();
    let rates: Vec<String> = (0..17).map(|j| format!("d(s{j})/dt = -s{j};")).collect();
    let src = format!(
        "field big() {{ state {}; {} }}",
        states.join(", "),
        rates.join(" ")
    );
    let k = compile("big.field", &src).unwrap();
    let e = check_adaptive_wgsl(&k).unwrap_err();
    assert!(
        matches!(e, IrError::Unsupported { ref backend, .. } if backend == BACKEND)
            && e.to_string().contains("17"),
        "{e}"
    );
}

#[test]
fn f64_transcendentals_are_refused() {
    let k = compile(
        "s.field",
        "field s() { state x: f64 = 1.0; d(x)/dt = sin(x); }",
    )
    .unwrap();
    let e = check_adaptive_wgsl(&k).unwrap_err();
    assert!(
        matches!(e, IrError::Unsupported { .. }) && e.to_string().contains("f64 sin"),
        "{e}"
    );
    let k = compile(
        "s.field",
        "field s() { state x: f64 = 1.0; d(x)/dt = sqrt(x); }",
    )
    .unwrap();
    check_adaptive_wgsl(&k).unwrap();
}
