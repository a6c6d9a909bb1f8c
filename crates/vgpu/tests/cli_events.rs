//! `vgpu ensemble --method rosenbrock23` and `.field` events through the CLI:
//! Robertson at t = 40, a terminating event's status and time written beside
//! the output, and refusals naming the option.

use ndarray::{Array1, Array2};
use ndarray_npy::read_npy;
use std::path::PathBuf;
use std::process::{Command, Output};

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("vgpu-cli-events-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d.join(name)
}

fn ensemble(src: &str, name: &str, args: &[&str]) -> Output {
    let f = tmp(name);
    std::fs::write(&f, src).unwrap();
    Command::new(env!("CARGO_BIN_EXE_vgpu"))
        .arg("ensemble")
        .arg(&f)
        .args(["--backend", "cpu"])
        .args(args)
        .output()
        .unwrap()
}

fn ok(o: &Output) {
    assert!(
        o.status.success(),
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
}

const ROBER: &str = "field rober() {
    state y1: f64 = 1.0, y2: f64 = 0.0, y3: f64 = 0.0;
    d(y1)/dt = -0.04 * y1 + 1.0e4 * y2 * y3;
    d(y2)/dt = 0.04 * y1 - 1.0e4 * y2 * y3 - 3.0e7 * y2 * y2;
    d(y3)/dt = 3.0e7 * y2 * y2;
}";

#[test]
fn rosenbrock23_runs_robertson_from_the_cli() {
    let out = tmp("rober.npy");
    let o = ensemble(
        ROBER,
        "rober.field",
        &[
            "--n",
            "2",
            "--t",
            "0:40",
            "--method",
            "rosenbrock23",
            "--rtol",
            "1e-8",
            "--atol",
            "1e-10,1e-14,1e-10",
            "--out",
            out.to_str().unwrap(),
        ],
    );
    ok(&o);
    let y: Array2<f64> = read_npy(&out).unwrap();
    let want = [0.7158270687, 9.185534764e-6, 0.2841637457];
    for r in 0..2 {
        for i in 0..3 {
            assert!((y[[r, i]] - want[i]).abs() <= 1e-5 * want[i], "{y}");
        }
    }
}

#[test]
fn a_terminating_event_is_status_4_in_the_status_file() {
    let src = "field ball(e: f64) {
        state y: f64 = 1.0 + 7.0 * f64(i), v: f64 = 0.0;
        d(y)/dt = v;
        d(v)/dt = -9.81;
        event floor: y falling { v := -e * v; }
        event top: y - 0.5 rising terminate;
    }";
    let out = tmp("ball.npy");
    let o = ensemble(
        src,
        "ball.field",
        &[
            "--n",
            "2",
            "--t",
            "0:0.9",
            "--method",
            "tsit5",
            "--rtol",
            "1e-8",
            "--atol",
            "1e-10",
            "--param",
            "e=0.9",
            "--out",
            out.to_str().unwrap(),
        ],
    );
    ok(&o);
    let status: Array1<u8> = read_npy(tmp("ball.status.npy")).unwrap();
    // From 1.0 the ball bounces (t = 0.4515) and rises through 0.5 before
    // t = 0.9; from 8.0 it is still falling.
    assert_eq!(status.to_vec(), vec![4, 0]);
}

#[test]
fn stiff_refusals_name_the_option() {
    let states: Vec<String> = (0..17).map(|j| format!("s{j}: f64 = 1.0")).collect();
    let rates: Vec<String> = (0..17).map(|j| format!("d(s{j})/dt = -s{j};")).collect();
    let big = format!(
        "field big() {{ state {}; {} }}",
        states.join(", "),
        rates.join(" ")
    );
    let o = ensemble(&big, "big.field", &["--n", "1", "--method", "rosenbrock23"]);
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success() && e.contains("16"), "{e}");
    let o = ensemble(ROBER, "r.field", &["--n", "1", "--method", "rosenbrock24"]);
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success() && e.contains("rosenbrock23"), "{e}");
}
