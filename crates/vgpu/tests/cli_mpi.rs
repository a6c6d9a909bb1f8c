//! `mpirun -n R vgpu ensemble …` with the `mpi` feature (issue 14): ranks
//! integrate contiguous slices and write one `.npy` collectively (MPI-IO),
//! the same bytes as one process (fixed-step on the CPU and the GPU, and
//! adaptive with save times, statuses and step counts); `--json` on rank 0
//! has every rank's figures. Compiled only with `--features mpi`; skipped
//! with a message when `mpirun` is absent (scripts/install-deps.sh installs
//! it).
#![cfg(feature = "mpi")]

mod common;
use common::{bytes, example, gpu_ran, partial_files, strs, triple, vgpu, vgpu_ok};
use std::path::{Path, PathBuf};
use std::process::Command;

fn dir(name: &str) -> PathBuf {
    common::fresh_dir("cli-mpi", name)
}

fn have_mpirun() -> bool {
    let ok = Command::new("mpirun")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        eprintln!("skipped: no mpirun (install openmpi-bin: scripts/install-deps.sh)");
    }
    ok
}

/// `mpirun --allow-run-as-root --oversubscribe --bind-to none -n R vgpu ARGS…`.
fn mpirun(r: usize, args: &[String]) -> (i32, String, String) {
    let out = Command::new("mpirun")
        .args([
            "--allow-run-as-root",
            "--oversubscribe",
            "--bind-to",
            "none",
            "-n",
        ])
        .arg(r.to_string())
        .arg(env!("CARGO_BIN_EXE_vgpu"))
        .args(args)
        .env("RAYON_NUM_THREADS", "1")
        .output()
        .expect("run mpirun");
    triple(&out)
}

fn lorenz(out: &Path, extra: &[&str]) -> Vec<String> {
    let mut v: Vec<String> = [
        "ensemble",
        &example("lorenz.field"),
        "--n",
        "1000",
        "--block",
        "64",
        "--t",
        "0:0.5",
        "--param",
        "rho=linspace:0:21",
        "--backend",
        "cpu",
        "--out",
        &out.display().to_string(),
    ]
    .iter()
    .map(|x| x.to_string())
    .collect();
    v.extend(extra.iter().map(|x| x.to_string()));
    v
}

#[test]
fn ranks_write_the_bytes_of_one_process() {
    if !have_mpirun() {
        return;
    }
    let d = dir("fixed");
    vgpu_ok(&lorenz(&d.join("one.npy"), &[]));
    for r in [2, 3] {
        let out = d.join(format!("mpi{r}.npy"));
        let (code, o, e) = mpirun(r, &lorenz(&out, &["--json"]));
        assert_eq!(code, 0, "-n {r}: {o}{e}");
        assert_eq!(bytes(&out), bytes(&d.join("one.npy")), "-n {r}");
        // One summary, from rank 0, with every rank's figures.
        let j: serde_json::Value = serde_json::from_str(o.trim()).expect(&o);
        assert_eq!(j["mpi_ranks"], r, "{o}");
        assert_eq!(j["trajectories_total"], 1000, "{o}");
        assert_eq!(j["ranks"].as_array().unwrap().len(), r);
    }
    let left = partial_files(&d);
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn adaptive_ranks_write_saveat_status_and_steps() {
    if !have_mpirun() {
        return;
    }
    let d = dir("adaptive");
    let args = |out: &Path| -> Vec<String> {
        [
            "ensemble",
            &example("lorenz.field"),
            "--n",
            "200",
            "--method",
            "tsit5",
            "--rtol",
            "1e-5",
            "--saveat",
            "0:0.5:4",
            "--t",
            "0:0.5",
            "--param",
            "rho=linspace:0:40",
            "--backend",
            "cpu",
            "--out",
            &out.display().to_string(),
        ]
        .iter()
        .map(|x| x.to_string())
        .collect()
    };
    vgpu_ok(&args(&d.join("one.npy")));
    let (code, o, e) = mpirun(3, &args(&d.join("mpi.npy")));
    assert_eq!(code, 0, "{o}{e}");
    for (a, b) in [
        ("mpi.npy", "one.npy"),
        ("mpi.status.npy", "one.status.npy"),
        ("mpi.steps.npy", "one.steps.npy"),
    ] {
        assert_eq!(bytes(&d.join(a)), bytes(&d.join(b)), "{a}");
    }
}

#[test]
fn a_failing_rank_names_its_slice_and_nothing_is_written() {
    if !have_mpirun() {
        return;
    }
    let d = dir("fail");
    let out = d.join("x.npy");
    // More ranks than blocks: every rank refuses, naming its slice.
    let mut a = lorenz(&out, &[]);
    let b = a.iter().position(|x| x == "64").unwrap();
    a[b] = "512".into();
    let (code, _, e) = mpirun(3, &a);
    assert_ne!(code, 0);
    assert!(e.contains("at most 2 shards"), "{e}");
    // A rank whose buffer is short: the out-of-bounds read is its error.
    let mut a = lorenz(&out, &[]);
    let p = a.iter().position(|x| x == "rho=linspace:0:21").unwrap();
    let short = d.join("rho.npy");
    ndarray_npy::write_npy(&short, &ndarray::Array1::<f32>::zeros(900)).unwrap();
    a[p] = format!("rho={}", short.display());
    let (code, _, e) = mpirun(2, &a);
    assert_ne!(code, 0);
    assert!(
        e.contains("rank 1 of 2 (trajectories 512..1000 of 1000)"),
        "{e}"
    );
    assert!(!out.exists());
}

/// Ranks on the GPU (each rank's slice through the fixed-step WGSL launch's
/// offset): the bytes one GPU process writes.
#[test]
fn gpu_ranks_write_the_bytes_of_one_gpu_process() {
    if !have_mpirun() {
        return;
    }
    let d = dir("gpu");
    let on_gpu = |out: &Path| {
        let mut a = lorenz(out, &[]);
        let b = a.iter().position(|x| x == "--backend").unwrap();
        a[b + 1] = "gpu".into();
        a
    };
    let (code, _, e) = vgpu(&strs(&on_gpu(&d.join("one.npy"))));
    if !gpu_ran(code, &e) {
        return;
    }
    let out = d.join("mpi.npy");
    let (code, o, e) = mpirun(2, &on_gpu(&out));
    assert_eq!(code, 0, "{o}{e}");
    assert_eq!(bytes(&out), bytes(&d.join("one.npy")));
}
