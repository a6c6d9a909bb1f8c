//! The `vgpu demo`, `vgpu bench lorenz` and `vgpu bench adaptive` commands,
//! run as a user runs them.

mod common;
use common::vgpu;

#[test]
fn demo_prints_a_passing_table() {
    let (code, out, err) = vgpu(&["demo", "--n", "3000", "--threads", "2"]);
    assert_eq!(code, 0, "{out}\n{err}");
    let header = out.lines().next().unwrap();
    for col in [
        "demo",
        "trajectories",
        "steps",
        "max error",
        "verdict",
        "time",
    ] {
        assert!(header.contains(col), "{header}");
    }
    for demo in [
        "scale",
        "matmul",
        "relax",
        "reverse",
        "tree-sum",
        "histogram",
    ] {
        let row = out
            .lines()
            .find(|l| l.starts_with(demo))
            .unwrap_or_else(|| panic!("{demo} row in\n{out}"));
        assert!(row.contains("PASS"), "{row}");
    }
    assert!(out.contains("37x53 @ 53x29"), "{out}");
}

#[test]
fn demo_options_choose_integrator_dt_and_sizes() {
    let (code, out, err) = vgpu(&[
        "demo",
        "--n",
        "1000",
        "--method",
        "euler",
        "--dt",
        "0.002",
        "--t-end",
        "10",
        "--mat",
        "5,7,3",
        "--threads",
        "1",
    ]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("euler, T = 10"), "{out}");
    let relax = out.lines().find(|l| l.starts_with("relax")).unwrap();
    assert!(relax.contains(" 5000 "), "10 / 0.002 steps: {relax}");
}

#[test]
fn demo_fails_with_nonzero_status_when_a_demo_errs() {
    // 96 is a valid block but not a power of two: tree-sum refuses it, the others pass.
    let (code, out, _) = vgpu(&["demo", "--n", "500", "--block", "96"]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("ERROR") && out.contains("not a power of two"),
        "{out}"
    );
    assert!(out
        .lines()
        .find(|l| l.starts_with("scale"))
        .unwrap()
        .contains("PASS"));
}

#[test]
fn demo_rejects_bad_options() {
    let (code, _, err) = vgpu(&["demo", "--method", "rk45"]);
    assert_ne!(code, 0);
    assert!(err.contains("unknown integrator"), "{err}");
    let (code, out, _) = vgpu(&["demo", "--n", "100", "--block", "2048"]);
    assert_eq!(code, 1);
    assert!(
        out.contains("2048 trajectories, more than the limit of 1024"),
        "{out}"
    );
    let (code, out, _) = vgpu(&["demo", "--n", "100", "--dt", "0"]);
    assert_eq!(code, 1);
    assert!(out.contains("relax: demo relax: dt = 0"), "{out}");
}

#[test]
fn bench_lorenz_json_has_the_keys_and_the_library_checksum() {
    let (code, out, err) = vgpu(&[
        "bench",
        "lorenz",
        "--n",
        "512",
        "--json",
        "--repeats",
        "1",
        "--threads",
        "2",
    ]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(out.trim()).expect("one JSON object");
    assert_eq!(v["n"], 512);
    assert_eq!(v["steps"], 1000);
    assert!(v["seconds"].as_f64().unwrap() > 0.0);
    assert!(v["traj_steps_per_s"].as_f64().unwrap() > 0.0);
    let want = vgpu::demos::lorenz::checksum(
        &vgpu::demos::lorenz::lorenz_field(
            &vgpu::demos::lorenz::LorenzProblem::new(512),
            256,
            vgpu::field::Par::Seq,
        )
        .unwrap(),
    );
    assert_eq!(v["checksum"].as_f64().unwrap(), want);
    // Every variant computes the same bits, so the same checksum, in each type.
    for key in ["hand", "scalar", "field_api", "field_file"] {
        assert_eq!(v["f32"][key]["checksum"].as_f64().unwrap(), want, "{key}");
        let f = &v["f32"][key];
        assert!(f["whole_s"].as_f64().unwrap() >= f["kernel_s"].as_f64().unwrap());
    }
    let hand64 = v["f64"]["hand"]["checksum"].as_f64().unwrap();
    assert_ne!(hand64, want);
    for key in ["field_api", "field_file"] {
        assert_eq!(v["f64"][key]["checksum"].as_f64().unwrap(), hand64, "{key}");
    }
    for ty in ["f32", "f64"] {
        let r = &v[ty]["field_file_vs_hand"];
        assert!(r["kernel"].as_f64().unwrap() > 0.0 && r["whole"].as_f64().unwrap() > 0.0);
    }
}

/// `vgpu bench <args> --only <variant> --json --out <dir>/<variant>.npy`:
/// exits 0, prints one JSON object (returned) and writes an `.npy` file of
/// more than `bytes` bytes of data after its header.
fn run_only(
    args: &[&str],
    variant: &str,
    dir: &std::path::Path,
    bytes: usize,
) -> serde_json::Value {
    let out = dir.join(format!("{variant}.npy"));
    let mut cmd = vec!["bench"];
    cmd.extend_from_slice(args);
    cmd.extend(["--only", variant, "--json", "--out", out.to_str().unwrap()]);
    let (code, stdout, err) = vgpu(&cmd);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(stdout.trim()).expect("one JSON object");
    let written = std::fs::read(&out).unwrap();
    assert!(written.len() > bytes && written.starts_with(b"\x93NUMPY"));
    v
}

#[test]
fn bench_lorenz_only_runs_one_variant_and_writes_its_endpoints() {
    let dir = std::env::temp_dir().join(format!("vgpu-cli-bench-only-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut sums = vec![];
    for variant in ["hand", "field-file"] {
        let v = run_only(
            &[
                "lorenz",
                "--n",
                "100",
                "--threads",
                "1",
                "--precision",
                "f64",
            ],
            variant,
            &dir,
            300 * 8,
        );
        assert_eq!(v["precision"], "f64");
        assert!(v["whole_s"].as_f64().unwrap() >= v["kernel_s"].as_f64().unwrap());
        sums.push(v["checksum"].as_f64().unwrap());
    }
    assert_eq!(sums[0], sums[1]);
    let (code, _, err) = vgpu(&["bench", "lorenz", "--n", "10", "--only", "field-file"]);
    assert_eq!(code, 2);
    assert!(err.contains("one float type"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bench_lorenz_refuses_empty_ensembles() {
    let (code, _, err) = vgpu(&["bench", "lorenz", "--n", "0"]);
    assert_eq!(code, 2);
    assert!(err.contains("--n must be at least 1"), "{err}");
}

#[test]
fn bench_adaptive_compares_three_ways_with_the_same_endpoints() {
    let (code, out, err) = vgpu(&[
        "bench",
        "adaptive",
        "--n",
        "64",
        "--threads",
        "2",
        "--repeats",
        "2",
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(out.trim()).expect("one JSON object");
    assert_eq!(v["endpoints_equal"], true);
    assert_eq!(v["method"], "tsit5");
    assert_eq!(v["hand"]["hand_over_this_kernel"], 1.0);
    for variant in ["field", "closure", "hand"] {
        let k = v[variant]["kernel_s"].as_f64().unwrap();
        let w = v[variant]["whole_s"].as_f64().unwrap();
        assert!(k > 0.0 && w >= k, "{variant}: kernel {k}, whole {w}");
        let r = v[variant]["hand_over_this_whole"].as_f64().unwrap();
        assert!(r.is_finite() && r > 0.0, "{variant}: {r}");
    }
}

#[test]
fn bench_adaptive_only_writes_one_variants_endpoints() {
    let dir = std::env::temp_dir().join(format!("vgpu-cli-bench-adaptive-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut sums = vec![];
    for variant in ["hand", "field"] {
        let v = run_only(&["adaptive", "--n", "50"], variant, &dir, 150 * 4);
        assert_eq!(v["variant"], variant);
        sums.push(v["checksum"].as_f64().unwrap());
    }
    assert_eq!(sums[0].to_bits(), sums[1].to_bits());
    let (code, _, err) = vgpu(&["bench", "adaptive", "--n", "10", "--only", "gpu"]);
    assert_eq!(code, 2);
    assert!(err.contains("expected field, closure or hand"), "{err}");
    let (code, _, err) = vgpu(&["bench", "adaptive", "--n", "0"]);
    assert_eq!(code, 2);
    assert!(err.contains("--n must be at least 1"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}
