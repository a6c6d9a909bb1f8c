//! Issue 13's "Bad input" list through `vgpu ensemble --method …`, one case
//! each: tolerances ≤ 0 or NaN (`--rtol` and `--atol`, one value and one per
//! state), save times outside the span, malformed or decreasing (`T0:T1:K`
//! and `.npy`), step limits (`--dtmin`, `--dtmax`), and an event condition of
//! the wrong type. Each exits 2 with a message naming the option (or, for the
//! kernel, the event and its file:line:col). The cases already covered
//! elsewhere: `cli_adaptive.rs` (`--rtol 0`, `--rtol nan`, `--atol -1e-6`, a
//! saveat past `t1`, `--method rk5`, `--dtmin` > `--dtmax`, `--maxiters 0`),
//! `cli_events.rs` (a 17-state system for `rosenbrock23`).

mod common;

use common::{example, fresh_dir, s, strs, vgpu};
use ndarray::{Array1, Array2};
use ndarray_npy::write_npy;

/// `vgpu ensemble lorenz.field --n 4 --t 0:1 --param rho=linspace:0:21
/// --backend cpu --method tsit5` + `extra`: exit code and stderr.
fn lorenz(extra: &[String]) -> (i32, String) {
    let mut a: Vec<String> = [
        "ensemble",
        &example("lorenz.field"),
        "--n",
        "4",
        "--t",
        "0:1",
        "--param",
        "rho=linspace:0:21",
        "--backend",
        "cpu",
        "--method",
        "tsit5",
    ]
    .iter()
    .map(|x| x.to_string())
    .collect();
    a.extend(extra.iter().cloned());
    let (code, _, err) = vgpu(&strs(&a));
    (code, err)
}

fn owned(v: &[&str]) -> Vec<String> {
    v.iter().map(|x| x.to_string()).collect()
}

#[test]
fn bad_tolerances_name_the_option() {
    let cases: [(&[&str], &str); 8] = [
        (&["--rtol=-1e-6"], "--rtol"),
        (&["--atol", "nan"], "--atol"),
        (&["--atol", "0"], "--atol"),
        (&["--rtol", "inf"], "--rtol"),
        // Per state: one bad component of three.
        (&["--rtol", "1e-6,0,1e-6"], "--rtol"),
        (&["--atol", "1e-8,nan,1e-8"], "--atol"),
        (&["--atol", "1e-8,1e-8,-1"], "--atol"),
        // Two values for three states.
        (&["--rtol", "1e-6,1e-6"], "--rtol"),
    ];
    for (extra, flag) in cases {
        let (code, err) = lorenz(&owned(extra));
        assert_eq!(code, 2, "{extra:?}: {err}");
        assert!(err.contains(flag), "{extra:?} does not name {flag}: {err}");
        assert!(!err.contains("panicked"), "{extra:?}: {err}");
    }
    // A tolerance that rounds to zero in f32 is refused too (the kernel is f32).
    let (code, err) = lorenz(&owned(&["--atol", "1e-50"]));
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("--atol") && err.contains("state type"),
        "{err}"
    );
}

#[test]
fn bad_save_times_name_the_option() {
    let d = fresh_dir("adaptive-bad", "saveat");
    let npy = |name: &str, v: Vec<f64>| {
        let p = d.join(name);
        write_npy(&p, &Array1::from(v)).unwrap();
        s(&p)
    };
    let decreasing = npy("decreasing.npy", vec![0.5, 0.2]);
    let nan = npy("nan.npy", vec![0.1, f64::NAN]);
    let before = npy("before.npy", vec![-0.5, 0.5]);
    let two_d = d.join("two_d.npy");
    write_npy(
        &two_d,
        &Array2::from_shape_vec((2, 2), vec![0.1, 0.2, 0.3, 0.4]).unwrap(),
    )
    .unwrap();
    let missing = s(&d.join("missing.npy"));
    let cases: Vec<(String, &str)> = vec![
        ("-0.5:1:3".into(), "outside the span"),
        ("0:1:0".into(), "K"),
        ("0:x:3".into(), "not a number"),
        ("0:1:3:4".into(), "T0:T1:K"),
        (decreasing, "non-decreasing"),
        (nan, "not finite"),
        (before, "outside the span"),
        (s(&two_d), "1-D"),
        (missing, "no such file"),
    ];
    for (v, why) in cases {
        // `--saveat=V`: a value starting with `-` is not taken for a flag.
        let (code, err) = lorenz(&[format!("--saveat={v}")]);
        assert_eq!(code, 2, "--saveat {v}: {err}");
        assert!(
            err.contains("--saveat") && err.contains(why),
            "--saveat {v}: expected {why:?}: {err}"
        );
    }
}

#[test]
fn bad_step_limits_name_the_option() {
    let cases: [(&[&str], &str); 5] = [
        (&["--dtmax", "0"], "--dtmax"),
        (&["--dtmax", "nan"], "--dtmax"),
        (&["--dtmin=-1"], "--dtmin"),
        (&["--dtmin", "inf"], "--dtmin"),
        (&["--dt0", "0"], "--dt0"),
    ];
    for (extra, flag) in cases {
        let (code, err) = lorenz(&owned(extra));
        assert_eq!(code, 2, "{extra:?}: {err}");
        assert!(err.contains(flag), "{extra:?} does not name {flag}: {err}");
    }
}

/// An event condition must be a float expression of the field's type: a
/// comparison or an integer is refused where the kernel is checked, naming
/// the event and its place in the file.
#[test]
fn an_event_condition_of_the_wrong_type_is_refused() {
    let d = fresh_dir("adaptive-bad", "events");
    let cases = [("y > 0.0", "bool"), ("i", "u32"), ("i32(i) - 3", "i32")];
    for (g, ty) in cases {
        let src = format!(
            "field ball(e: f64) {{\n    state y: f64 = 1.0, v: f64 = 0.0;\n    \
             d(y)/dt = v;\n    d(v)/dt = -9.81;\n    event floor: {g} falling {{ v := -e * v; }}\n}}\n"
        );
        let path = d.join("ball.field");
        std::fs::write(&path, src).unwrap();
        let (code, _, err) = vgpu(&[
            "ensemble",
            &s(&path),
            "--n",
            "2",
            "--t",
            "0:3",
            "--param",
            "e=0.9",
            "--method",
            "tsit5",
            "--backend",
            "cpu",
        ]);
        assert_eq!(code, 2, "{g}: {err}");
        assert!(
            err.contains("ball.field:5:") && err.contains("floor") && err.contains(ty),
            "{g}: {err}"
        );
    }
}
