//! `vgpu ensemble … --method tsit5 --backend gpu`: adaptive ensembles on the
//! GPU from the command line (lavapipe in CI): the same outputs as the CPU to
//! the tolerance, statuses and step counts beside them, `--json` with the
//! kernel time, forced small chunks equal to one dispatch byte for byte.
//! Without an adapter the GPU runs must fail with a clear error; with
//! `VGPU_REQUIRE_GPU=1` a missing adapter fails the test.

mod common;

use common::{beside, example, fresh_dir, triple};
use ndarray::{Array1, Array2};
use ndarray_npy::read_npy;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

/// `NAME` in this process's one fresh folder.
fn tmp(name: &str) -> PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| fresh_dir("cli-adaptive-gpu", "files"))
        .join(name)
}

/// `vgpu ensemble lorenz.field --n N --t 0:1 --method tsit5 --rtol 1e-6
/// --atol 1e-6 --param rho=linspace:0:21 --out OUT` + `extra`.
fn lorenz(n: usize, out: &Path, extra: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_vgpu"))
        .args(["ensemble", &example("lorenz.field"), "--n", &n.to_string()])
        .args(["--t", "0:1", "--method", "tsit5", "--rtol", "1e-6"])
        .args(["--atol", "1e-6", "--param", "rho=linspace:0:21", "--out"])
        .arg(out)
        .args(extra)
        .output()
        .unwrap()
}

fn stdout(o: &Output) -> String {
    let (code, out, err) = triple(o);
    assert_eq!(code, 0, "{out}{err}");
    out
}

/// Whether the GPU run succeeded (see [`common::gpu_ran`]).
fn gpu_ran(o: &Output) -> bool {
    let (code, _, err) = triple(o);
    common::gpu_ran(code, &err)
}

#[test]
fn tsit5_on_the_gpu_agrees_with_the_cpu_and_chunks_change_nothing() {
    let n = 200;
    let (g, c, ch) = (tmp("gpu.npy"), tmp("cpu.npy"), tmp("chunked.npy"));
    let o = lorenz(n, &g, &["--backend", "gpu", "--json", "--kernel-time", "2"]);
    if !gpu_ran(&o) {
        return;
    }
    let j: serde_json::Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    assert_eq!(j["backend"], "gpu", "{j}");
    assert_eq!(j["status_counts"]["success"], n, "{j}");
    assert!(j["kernel_seconds"].as_f64().unwrap() > 0.0, "{j}");
    assert_eq!(j["gpu_chunks"], 1, "{j}");
    stdout(&lorenz(n, &c, &["--backend", "cpu"]));
    let (eg, ec): (Array2<f32>, Array2<f32>) = (read_npy(&g).unwrap(), read_npy(&c).unwrap());
    assert_eq!(eg.shape(), &[n, 3]);
    for (a, b) in eg.iter().zip(ec.iter()) {
        assert!((a - b).abs() <= 1e-3 * (1.0 + b.abs()), "gpu {a} cpu {b}");
    }
    let (sg, sc): (Array2<u64>, Array2<u64>) = (
        read_npy(beside(&g, "steps")).unwrap(),
        read_npy(beside(&c, "steps")).unwrap(),
    );
    let same = sg
        .rows()
        .into_iter()
        .zip(sc.rows())
        .filter(|(a, b)| a == b)
        .count();
    // f32 at 1e-6 is near f32's resolution, and the GPU's controller rounds
    // in f32 where the CPU's rounds in f64 (measured on lavapipe: 171 of 200).
    assert!(
        same * 4 >= n * 3,
        "{same} of {n} with the CPU's step counts"
    );
    let st: Array1<u8> = read_npy(beside(&g, "status")).unwrap();
    assert!(st.iter().all(|&s| s == 0));
    // Forced chunks of 7 trajectories: the same bytes.
    let o = lorenz(n, &ch, &["--backend", "gpu", "--gpu-chunk", "7", "--json"]);
    let j: serde_json::Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    assert_eq!(j["gpu_chunks"], n.div_ceil(7), "{j}");
    for what in ["", "steps", "status"] {
        let (a, b) = if what.is_empty() {
            (g.clone(), ch.clone())
        } else {
            (beside(&g, what), beside(&ch, what))
        };
        assert_eq!(
            std::fs::read(&a).unwrap(),
            std::fs::read(&b).unwrap(),
            "{what}"
        );
    }
}

#[test]
fn the_i_controller_and_bad_gpu_options() {
    let n = 16;
    let (pi, i) = (tmp("pi.npy"), tmp("i.npy"));
    let o = lorenz(n, &pi, &["--backend", "gpu", "--json"]);
    if !gpu_ran(&o) {
        return;
    }
    let jp: serde_json::Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    let o = lorenz(n, &i, &["--backend", "gpu", "--json", "--controller", "i"]);
    let ji: serde_json::Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    // The anchors' observation: PI is more cautious, it takes more steps.
    assert!(
        jp["accepted_steps"].as_u64().unwrap() > ji["accepted_steps"].as_u64().unwrap(),
        "{jp} {ji}"
    );
    for (extra, needle) in [
        (&["--controller", "pid"][..], "--controller"),
        (&["--gpu-chunk", "0"][..], "--gpu-chunk"),
    ] {
        let o = lorenz(
            n,
            &tmp("bad.npy"),
            &[&["--backend", "gpu"][..], extra].concat(),
        );
        assert_eq!(o.status.code(), Some(2), "{extra:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(needle), "{extra:?}: {err}");
    }
}
