//! `vgpu ensemble --method tsit5|dp5|bs3|vern7`: adaptive ensembles of `.field`
//! kernels on the CPU: accuracy against a tight reference, save times from the
//! dense output, per-trajectory statuses and step counts written beside the
//! output, a blow-up that fails alone, and clear refusals naming the option.

mod common;

use common::{example, fresh_dir, triple};
use ndarray::{Array1, Array2, Array3, ArrayD};
use ndarray_npy::{read_npy, write_npy};
use std::path::PathBuf;
use std::process::{Command, Output};
use std::sync::OnceLock;

fn vgpu() -> Command {
    Command::new(env!("CARGO_BIN_EXE_vgpu"))
}

/// `NAME` in this process's one fresh folder.
fn tmp(name: &str) -> PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| fresh_dir("cli-adaptive", "files"))
        .join(name)
}

/// `vgpu ensemble FILE --n N --t 0:1 --param rho=linspace:0:21 --backend cpu` + `extra`.
fn lorenz(file: &str, n: usize, extra: &[&str]) -> Output {
    vgpu()
        .args([
            "ensemble",
            &example(file),
            "--n",
            &n.to_string(),
            "--t",
            "0:1",
        ])
        .args(["--param", "rho=linspace:0:21", "--backend", "cpu"])
        .args(extra)
        .output()
        .unwrap()
}

fn ok(o: &Output) -> String {
    let (code, out, err) = triple(o);
    assert_eq!(code, 0, "{out}{err}");
    out
}

fn max_abs_diff(a: impl IntoIterator<Item = f64>, b: impl IntoIterator<Item = f64>) -> f64 {
    a.into_iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f64::max)
}

/// Lorenz endpoints at `t = 1`: Vern7 at 1e-12 in f64 is the reference;
/// Tsit5 f32 at 1e-6 and f64 at 1e-8, and DP5 f64 at 1e-12, land within
/// their tolerances of it.
#[test]
fn lorenz_tsit5_matches_a_tight_reference() {
    let n = 64;
    let reference = tmp("ref.npy");
    let r = ref_run(n, &reference);
    ok(&r);
    let want: Array2<f64> = read_npy(&reference).unwrap();
    assert_eq!(want.shape(), [n, 3]);
    let dp5 = tmp("dp5.npy");
    ok(&lorenz(
        "lorenz_f64.field",
        n,
        &[
            "--method",
            "dp5",
            "--rtol",
            "1e-12",
            "--atol",
            "1e-12",
            "--out",
            dp5.to_str().unwrap(),
        ],
    ));
    let got: Array2<f64> = read_npy(&dp5).unwrap();
    let e = max_abs_diff(got.iter().copied(), want.iter().copied());
    assert!(e < 1e-8, "dp5 1e-12 vs vern7 1e-12: {e}");

    let f64_out = tmp("tsit5_f64.npy");
    ok(&lorenz(
        "lorenz_f64.field",
        n,
        &[
            "--method",
            "tsit5",
            "--rtol",
            "1e-8",
            "--atol",
            "1e-8",
            "--out",
            f64_out.to_str().unwrap(),
        ],
    ));
    let got: Array2<f64> = read_npy(&f64_out).unwrap();
    let e = max_abs_diff(got.iter().copied(), want.iter().copied());
    assert!(e < 1e-5, "tsit5 f64 1e-8: {e}");

    let f32_out = tmp("tsit5_f32.npy");
    let o = lorenz(
        "lorenz.field",
        n,
        &[
            "--method",
            "tsit5",
            "--rtol",
            "1e-6",
            "--atol",
            "1e-6",
            "--out",
            f32_out.to_str().unwrap(),
        ],
    );
    let stdout = ok(&o);
    assert!(stdout.contains(&format!("status: {n} success")), "{stdout}");
    let got: Array2<f32> = read_npy(&f32_out).unwrap();
    assert_eq!(got.shape(), [n, 3]);
    let e = max_abs_diff(got.iter().map(|&v| v as f64), want.iter().copied());
    assert!(e < 1e-3, "tsit5 f32 1e-6: {e}");
}

fn ref_run(n: usize, out: &std::path::Path) -> Output {
    lorenz(
        "lorenz_f64.field",
        n,
        &[
            "--method",
            "vern7",
            "--rtol",
            "1e-12",
            "--atol",
            "1e-12",
            "--out",
            out.to_str().unwrap(),
        ],
    )
}

/// `--saveat 0:1:5` writes (N, 5, D): the first slice is the initial state,
/// the last the endpoint of the same run without save times (bit for bit:
/// save times never move the steps), and the middle ones the reference's
/// values within tolerance.
#[test]
fn saveat_gives_n_k_d_from_the_dense_output() {
    let n = 16;
    let (end, saved) = (tmp("end.npy"), tmp("saved.npy"));
    for m in ["tsit5", "vern7", "bs3", "dp5"] {
        ok(&lorenz(
            "lorenz_f64.field",
            n,
            &[
                "--method",
                m,
                "--rtol",
                "1e-9",
                "--atol",
                "1e-9",
                "--out",
                end.to_str().unwrap(),
            ],
        ));
        let stdout = ok(&lorenz(
            "lorenz_f64.field",
            n,
            &[
                "--method",
                m,
                "--rtol",
                "1e-9",
                "--atol",
                "1e-9",
                "--saveat",
                "0:1:5",
                "--out",
                saved.to_str().unwrap(),
            ],
        ));
        assert!(stdout.contains(&format!("{n} × 5 × 3")), "{stdout}");
        let e: Array2<f64> = read_npy(&end).unwrap();
        let s: Array3<f64> = read_npy(&saved).unwrap();
        assert_eq!(s.shape(), [n, 5, 3], "{m}");
        for i in 0..n {
            assert_eq!(s[[i, 0, 0]], 1.0);
            assert_eq!(s[[i, 0, 1]], 0.0);
            for d in 0..3 {
                assert_eq!(s[[i, 4, d]].to_bits(), e[[i, d]].to_bits(), "{m} {i} {d}");
            }
        }
        // The middle save time (t = 0.5) against a run that ends there.
        let half = tmp("half.npy");
        ok(&vgpu()
            .args([
                "ensemble",
                &example("lorenz_f64.field"),
                "--n",
                &n.to_string(),
            ])
            .args([
                "--t",
                "0:0.5",
                "--param",
                "rho=linspace:0:21",
                "--backend",
                "cpu",
            ])
            .args([
                "--method", "vern7", "--rtol", "1e-12", "--atol", "1e-12", "--out",
            ])
            .arg(&half)
            .output()
            .unwrap());
        let h: Array2<f64> = read_npy(&half).unwrap();
        let err = max_abs_diff(
            (0..n)
                .flat_map(|i| (0..3).map(move |d| (i, d)))
                .map(|(i, d)| s[[i, 2, d]]),
            h.iter().copied(),
        );
        assert!(err < 1e-5, "{m}: dense output at 0.5 is {err} off");
    }
}

/// `y' = p·y²` with `p = 2` blows up at `t = 0.5` while its neighbours reach
/// `t = 1`: the run still succeeds (exit 0), the summary and the JSON count the
/// statuses, and STEM.status.npy / STEM.steps.npy say which trajectory failed.
#[test]
fn a_blow_up_fails_alone_and_is_counted() {
    let p = tmp("p.npy");
    write_npy(&p, &Array1::from(vec![0.5f64, 2.0, -1.0, 0.25])).unwrap();
    let out = tmp("blowup.npy");
    let run = |extra: &[&str]| {
        vgpu()
            .args([
                "ensemble",
                &example("blowup.field"),
                "--n",
                "4",
                "--t",
                "0:1",
            ])
            .args(["--method", "tsit5", "--rtol", "1e-8", "--atol", "1e-10"])
            .arg("--param")
            .arg(format!("p={}", p.display()))
            .arg("--out")
            .arg(&out)
            .args(extra)
            .output()
            .unwrap()
    };
    let o = run(&["--backend", "cpu"]);
    let stdout = ok(&o);
    assert!(stdout.contains("status: 3 success, 1 "), "{stdout}");
    let status: Array1<u8> = read_npy(tmp("blowup.status.npy")).unwrap();
    assert_eq!(status[0], 0);
    assert!(status[1] == 2 || status[1] == 3, "{status}");
    assert_eq!((status[2], status[3]), (0, 0));
    let steps: Array2<u64> = read_npy(tmp("blowup.steps.npy")).unwrap();
    assert_eq!(steps.shape(), [4, 2]);
    assert!(steps.column(0).iter().all(|&a| a > 0), "{steps}");
    let end: Array2<f64> = read_npy(&out).unwrap();
    // y(1) = 1 / (1 − p).
    for (i, p) in [(0, 0.5), (2, -1.0), (3, 0.25)] {
        assert!(
            (end[[i, 0]] - 1.0 / (1.0 - p)).abs() < 1e-6,
            "{i}: {}",
            end[[i, 0]]
        );
    }
    // auto runs on the GPU, or on the CPU saying why; --json counts statuses
    // and steps.
    let o = run(&["--backend", "auto", "--json"]);
    let j: serde_json::Value = serde_json::from_str(ok(&o).trim()).unwrap();
    assert!(
        j["backend"] == "gpu" || !j["note"].as_str().unwrap().is_empty(),
        "{j}"
    );
    assert_eq!(j["status_counts"]["success"], 3);
    let failed = j["status_counts"]["dtmin"].as_u64().unwrap()
        + j["status_counts"]["nonfinite"].as_u64().unwrap();
    assert_eq!(failed, 1);
    if j["backend"] == "cpu" {
        assert_eq!(j["accepted_steps"].as_u64().unwrap(), steps.column(0).sum());
        assert_eq!(j["rejected_steps"].as_u64().unwrap(), steps.column(1).sum());
    }
}

/// Initial states and spans per trajectory from `.npy` files:
/// `y(t1) = y0 / (1 − p·y0·(t1 − t0))`.
#[test]
fn u0_and_tspan_per_trajectory() {
    let (p, u0, ts, out) = (
        tmp("pp.npy"),
        tmp("u0.npy"),
        tmp("ts.npy"),
        tmp("u0out.npy"),
    );
    write_npy(&p, &Array1::from(vec![-1.0f64, -0.5, 0.3])).unwrap();
    write_npy(
        &u0,
        &Array2::from_shape_vec((3, 1), vec![1.0f64, 2.0, 0.5]).unwrap(),
    )
    .unwrap();
    write_npy(
        &ts,
        &Array2::from_shape_vec((3, 2), vec![0.0f64, 1.0, 1.0, 3.0, -1.0, 0.5]).unwrap(),
    )
    .unwrap();
    let o = vgpu()
        .args([
            "ensemble",
            &example("blowup.field"),
            "--n",
            "3",
            "--method",
            "vern7",
        ])
        .args(["--rtol", "1e-10", "--atol", "1e-12", "--backend", "cpu"])
        .arg("--param")
        .arg(format!("p={}", p.display()))
        .arg("--u0")
        .arg(&u0)
        .arg("--tspan")
        .arg(&ts)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    ok(&o);
    let end: ArrayD<f64> = read_npy(&out).unwrap();
    assert_eq!(end.shape(), [3, 1]);
    for (i, (p, y0, t0, t1)) in [
        (-1.0, 1.0, 0.0, 1.0),
        (-0.5, 2.0, 1.0, 3.0),
        (0.3, 0.5, -1.0, 0.5),
    ]
    .into_iter()
    .enumerate()
    {
        let want = y0 / (1.0 - p * y0 * (t1 - t0));
        assert!(
            (end[[i, 0]] - want).abs() < 1e-8,
            "{i}: {} vs {want}",
            end[[i, 0]]
        );
    }
}

/// Each bad option: exit 2 and a message naming it.
#[test]
fn bad_options_exit_2_naming_the_option() {
    let bad_u0 = tmp("bad_u0.npy");
    write_npy(
        &bad_u0,
        &Array2::from_shape_vec((4, 2), vec![0.0f64; 8]).unwrap(),
    )
    .unwrap();
    let bad_ts = tmp("bad_ts.npy");
    write_npy(&bad_ts, &Array1::from(vec![0.0f64, 1.0])).unwrap();
    let cases: Vec<(Vec<String>, &str)> = vec![
        (
            vec![
                "--method".into(),
                "tsit5".into(),
                "--rtol".into(),
                "0".into(),
            ],
            "--rtol",
        ),
        (
            vec![
                "--method".into(),
                "tsit5".into(),
                "--rtol".into(),
                "nan".into(),
            ],
            "--rtol",
        ),
        (
            vec!["--method".into(), "tsit5".into(), "--atol=-1e-6".into()],
            "--atol",
        ),
        (
            vec![
                "--method".into(),
                "tsit5".into(),
                "--atol".into(),
                "1e-6,1e-8".into(),
            ],
            "--atol",
        ),
        (
            vec![
                "--method".into(),
                "tsit5".into(),
                "--saveat".into(),
                "0:2:3".into(),
            ],
            "--saveat",
        ),
        (
            vec![
                "--method".into(),
                "tsit5".into(),
                "--saveat".into(),
                "0:1".into(),
            ],
            "--saveat",
        ),
        (vec!["--method".into(), "rk5".into()], "--method"),
        (
            vec![
                "--method".into(),
                "dp5".into(),
                "--dtmin".into(),
                "1".into(),
                "--dtmax".into(),
                "0.1".into(),
            ],
            "--dtmin",
        ),
        (
            vec!["--method".into(), "bs3".into(), "--dt0=-1".into()],
            "--dt0",
        ),
        (
            vec![
                "--method".into(),
                "bs3".into(),
                "--maxiters".into(),
                "0".into(),
            ],
            "--maxiters",
        ),
        (
            vec![
                "--method".into(),
                "tsit5".into(),
                "--u0".into(),
                bad_u0.display().to_string(),
            ],
            "--u0",
        ),
        (
            vec![
                "--method".into(),
                "tsit5".into(),
                "--tspan".into(),
                bad_ts.display().to_string(),
            ],
            "--tspan",
        ),
        (
            vec![
                "--method".into(),
                "tsit5".into(),
                "--dt".into(),
                "0.01".into(),
            ],
            "--dt",
        ),
        (
            vec![
                "--method".into(),
                "rk4".into(),
                "--rtol".into(),
                "1e-6".into(),
            ],
            "--rtol",
        ),
    ];
    for (extra, needle) in cases {
        let o = vgpu()
            .args([
                "ensemble",
                &example("lorenz.field"),
                "--n",
                "4",
                "--t",
                "0:1",
            ])
            .args(["--param", "rho=linspace:0:21"])
            .args(if extra.iter().any(|e| e == "--backend") {
                vec![]
            } else {
                vec!["--backend", "cpu"]
            })
            .args(&extra)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{extra:?}: {stderr}");
        assert!(stderr.contains(needle), "{extra:?}: {stderr}");
    }
    // A phased kernel with an adaptive method.
    let o = vgpu()
        .args([
            "ensemble",
            &example("barrier_reverse.field"),
            "--n",
            "4",
            "--block",
            "4",
        ])
        .args([
            "--param",
            "x=linspace:0:3",
            "--method",
            "tsit5",
            "--backend",
            "cpu",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("phases") && stderr.contains("tsit5"),
        "{stderr}"
    );
}
