//! `vgpu ensemble … --backend auto` with events and Rosenbrock23: the GPU
//! runs them (lavapipe in CI) and agrees with `--backend cpu`; a run longer
//! than llvmpipe's loop limit falls back to the CPU naming why instead of
//! returning cut-short trajectories. Without an adapter `auto` runs on the
//! CPU and the GPU assertions are skipped (with `VGPU_REQUIRE_GPU=1` a
//! missing adapter fails).

mod common;

use common::{fresh_dir, vgpu_ok};
use ndarray::Array2;
use ndarray_npy::read_npy;
use std::path::{Path, PathBuf};

const BALL: &str = "field ball(h0: f64[], e: f64[]) {
    state y: f64 = h0[i], v: f64 = 0.0, tb: f64 = 0.0, nb: f64 = 0.0;
    d(y)/dt = v;
    d(v)/dt = -9.81;
    d(tb)/dt = 0.0;
    d(nb)/dt = 0.0;
    event floor: y falling { v := -e[i] * v; tb := t; nb := nb + 1.0; }
}";

const VDP: &str = "field vdp(mu: f64[]) {
    state x: f64 = 2.0, y: f64 = 0.0;
    d(x)/dt = y;
    d(y)/dt = mu[i] * (1.0 - x * x) * y - x;
}";

/// Writes `src` as `NAME.field` in this test's folder; returns (field, out).
fn files(name: &str, src: &str) -> (String, PathBuf) {
    let d = fresh_dir("cli-adaptive-gpu-events", name);
    let f = d.join(format!("{name}.field"));
    std::fs::write(&f, src).unwrap();
    (f.display().to_string(), d.join("out.npy"))
}

/// Runs `vgpu ensemble FIELD ARGS… --backend B --json --out OUT`; the JSON.
fn run(field: &str, out: &Path, backend: &str, args: &[&str]) -> serde_json::Value {
    let mut a: Vec<String> = vec!["ensemble".into(), field.into()];
    a.extend(args.iter().map(|s| s.to_string()));
    a.extend(["--backend", backend, "--json", "--out"].map(String::from));
    a.push(out.display().to_string());
    serde_json::from_str(vgpu_ok(&a).trim()).unwrap()
}

/// Whether `auto` ran on the GPU; without an adapter it must have said so
/// (and `VGPU_REQUIRE_GPU=1` must not be set).
fn on_gpu(j: &serde_json::Value) -> bool {
    if j["backend"] == "gpu" {
        return true;
    }
    let note = j["note"].as_str().unwrap_or_default();
    assert!(
        note.contains("no GPU") && std::env::var("VGPU_REQUIRE_GPU").as_deref() != Ok("1"),
        "auto ran on the CPU: {j}"
    );
    println!("skipped: {note}");
    false
}

#[test]
fn auto_runs_events_on_the_gpu_and_the_bounces_are_the_cpus() {
    let (f, out) = files("ball", BALL);
    let cpu_out = out.with_file_name("cpu.npy");
    let args = [
        "--n",
        "8",
        "--t",
        "0:3",
        "--method",
        "dp5",
        "--rtol",
        "1e-8",
        "--atol",
        "1e-10",
        "--param",
        "h0=linspace:1:4",
        "--param",
        "e=linspace:0.5:0.9",
    ];
    let j = run(&f, &out, "auto", &args);
    if !on_gpu(&j) {
        return;
    }
    assert_eq!(j["note"], "", "{j}");
    assert_eq!(j["status_counts"]["success"], 8, "{j}");
    run(&f, &cpu_out, "cpu", &args);
    let (g, c): (Array2<f64>, Array2<f64>) = (read_npy(&out).unwrap(), read_npy(&cpu_out).unwrap());
    for i in 0..8 {
        // Same bounces, the last at the CPU's time to 1e-10.
        assert_eq!(g[[i, 3]], c[[i, 3]], "trajectory {i}: bounces");
        assert!(g[[i, 3]] >= 2.0, "trajectory {i}: {}", g[[i, 3]]);
        assert!(
            (g[[i, 2]] - c[[i, 2]]).abs() <= 1e-10 * c[[i, 2]],
            "trajectory {i}: last bounce gpu {} cpu {}",
            g[[i, 2]],
            c[[i, 2]]
        );
    }
}

#[test]
fn auto_runs_rosenbrock23_on_the_gpu_and_a_run_past_the_loop_limit_on_the_cpu() {
    let (f, out) = files("vdp", VDP);
    let cpu_out = out.with_file_name("cpu.npy");
    let args = [
        "--n",
        "4",
        "--t",
        "0:1000",
        "--method",
        "rosenbrock23",
        "--rtol",
        "1e-6",
        "--atol",
        "1e-6",
        "--param",
        "mu=linspace:100:1000",
    ];
    let j = run(&f, &out, "auto", &args);
    if !on_gpu(&j) {
        return;
    }
    assert_eq!(j["note"], "", "{j}");
    assert_eq!(j["status_counts"]["success"], 4, "{j}");
    run(&f, &cpu_out, "cpu", &args);
    let (g, c): (Array2<f64>, Array2<f64>) = (read_npy(&out).unwrap(), read_npy(&cpu_out).unwrap());
    for (a, b) in g.iter().zip(c.iter()) {
        assert!((a - b).abs() <= 1e-5 * (1.0 + b.abs()), "gpu {a} cpu {b}");
    }
    // 40,000 steps (dtmax) in one invocation: llvmpipe stops the shader's loops
    // first, so auto runs it on the CPU and says why; other devices run it.
    let long = [
        "--n",
        "2",
        "--t",
        "0:1",
        "--method",
        "tsit5",
        "--dtmax",
        "0.000025",
        "--maxiters",
        "100000",
        "--param",
        "mu=linspace:1:2",
    ];
    let j = run(&f, &out, "auto", &long);
    assert_eq!(j["status_counts"]["success"], 2, "{j}");
    assert!(j["accepted_steps"].as_u64().unwrap() >= 80_000, "{j}");
    if j["backend"] == "cpu" {
        let note = j["note"].as_str().unwrap();
        assert!(note.contains("stopped the loops"), "{j}");
    }
}
