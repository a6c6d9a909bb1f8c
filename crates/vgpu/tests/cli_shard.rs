//! `vgpu ensemble --shard I/R` and `vgpu merge` (issue 14): the shards of a
//! run joined give the bytes of one run (fixed-step; adaptive with save
//! times, statuses and step counts); mismatched, duplicate and missing shards,
//! malformed `--shard` and impossible splits are refused, and a refused merge
//! leaves an existing output untouched.

mod common;
use common::{bytes, example, merge, partial_files, s, strs, vgpu, vgpu_ok, write_rows};
use std::path::{Path, PathBuf};

fn dir(name: &str) -> PathBuf {
    common::fresh_dir("cli-shard", name)
}

fn fixed(out: &Path, extra: &[&str]) -> Vec<String> {
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
        &s(out),
    ]
    .iter()
    .map(|x| x.to_string())
    .collect();
    v.extend(extra.iter().map(|x| x.to_string()));
    v
}

fn adaptive(d: &Path, out: &Path, extra: &[&str]) -> Vec<String> {
    // Per-trajectory spans and initial states, read globally by every shard.
    let n = 300;
    let spans: Vec<f64> = (0..n).flat_map(|j| [0.0, 0.5 + j as f64 / 300.0]).collect();
    let u0: Vec<f64> = (0..n)
        .flat_map(|j| [1.0 + j as f64 / 100.0, 0.0, 0.0])
        .collect();
    let tspan = d.join("tspan.npy");
    let u0p = d.join("u0.npy");
    write_rows(&tspan, n, 2, spans);
    write_rows(&u0p, n, 3, u0);
    let mut v: Vec<String> = [
        "ensemble",
        &example("lorenz.field"),
        "--n",
        "300",
        "--method",
        "tsit5",
        "--rtol",
        "1e-5",
        "--maxiters",
        "400",
        "--saveat",
        "0:0.5:5",
        "--tspan",
        &s(&tspan),
        "--u0",
        &s(&u0p),
        "--param",
        "rho=linspace:0:60",
        "--backend",
        "cpu",
        "--out",
        &s(out),
    ]
    .iter()
    .map(|x| x.to_string())
    .collect();
    v.extend(extra.iter().map(|x| x.to_string()));
    v
}

#[test]
fn fixed_step_shards_merge_to_the_bytes_of_one_run() {
    let d = dir("fixed");
    vgpu_ok(&fixed(&d.join("whole.npy"), &[]));
    for r in [1, 3, 4] {
        let shards: Vec<PathBuf> = (0..r).map(|i| d.join(format!("s{i}of{r}.npy"))).collect();
        for (i, p) in shards.iter().enumerate() {
            vgpu_ok(&fixed(p, &["--shard", &format!("{i}/{r}")]));
        }
        // Any order of the shards on the command line.
        let mut given = shards.clone();
        given.reverse();
        let out = d.join(format!("merged{r}.npy"));
        let (code, o, e) = merge(&given, &out);
        assert_eq!(code, 0, "{o}{e}");
        assert_eq!(bytes(&out), bytes(&d.join("whole.npy")), "{r} shards");
    }
    // A shard is the rows of the whole run, and its sidecar says which.
    let whole: ndarray::Array2<f32> = ndarray_npy::read_npy(d.join("whole.npy")).unwrap();
    let s1: ndarray::Array2<f32> = ndarray_npy::read_npy(d.join("s1of3.npy")).unwrap();
    assert_eq!(s1.nrows(), 320);
    assert_eq!(s1, whole.slice(ndarray::s![320..640, ..]));
    let meta = std::fs::read_to_string(d.join("s1of3.shard.json")).unwrap();
    for key in [
        "\"run_hash\"",
        "\"range\"",
        "\"total\": 1000",
        "\"version\"",
    ] {
        assert!(meta.contains(key), "{key} in {meta}");
    }
}

#[test]
fn adaptive_shards_merge_with_saveat_status_and_steps() {
    let d = dir("adaptive");
    vgpu_ok(&adaptive(&d, &d.join("whole.npy"), &[]));
    let shards: Vec<PathBuf> = (0..3).map(|i| d.join(format!("a{i}.npy"))).collect();
    for (i, p) in shards.iter().enumerate() {
        vgpu_ok(&adaptive(&d, p, &["--shard", &format!("{i}/3")]));
    }
    let out = d.join("merged.npy");
    let (code, o, e) = merge(&shards, &out);
    assert_eq!(code, 0, "{o}{e}");
    for what in ["merged.npy", "merged.status.npy", "merged.steps.npy"] {
        let want = what.replace("merged", "whole");
        assert_eq!(bytes(&d.join(what)), bytes(&d.join(&want)), "{what}");
    }
    // The statuses are real codes, read back as written.
    let status: ndarray::Array1<u8> = ndarray_npy::read_npy(d.join("whole.status.npy")).unwrap();
    assert!(status.iter().any(|&c| c == 0), "{status:?}");
}

#[test]
fn mismatched_duplicate_and_missing_shards_are_refused_and_nothing_is_overwritten() {
    let d = dir("refuse");
    let a: Vec<PathBuf> = (0..2).map(|i| d.join(format!("a{i}.npy"))).collect();
    for (i, p) in a.iter().enumerate() {
        vgpu_ok(&fixed(p, &["--shard", &format!("{i}/2")]));
    }
    // The same shard 1 of another run (another rho range).
    let other = d.join("other1.npy");
    let mut args = fixed(&other, &["--shard", "1/2"]);
    let rho = args.iter().position(|x| x == "rho=linspace:0:21").unwrap();
    args[rho] = "rho=linspace:0:28".into();
    vgpu_ok(&args);
    let out = d.join("merged.npy");
    std::fs::write(&out, b"keep me").unwrap();
    let (code, _, e) = merge(&[a[0].clone(), other.clone()], &out);
    assert_eq!(code, 2, "{e}");
    assert!(
        e.contains("other1.shard.json") && e.contains("another run"),
        "{e}"
    );
    let (code, _, e) = merge(&[a[0].clone()], &out);
    assert_eq!(code, 2);
    assert!(e.contains("missing") && e.contains("1/2"), "{e}");
    let (code, _, e) = merge(&[a[0].clone(), a[0].clone(), a[1].clone()], &out);
    assert_eq!(code, 2);
    assert!(e.contains("given twice"), "{e}");
    // A shard whose data was cut short.
    let cut = d.join("cut");
    std::fs::create_dir_all(&cut).unwrap();
    for f in ["a0.npy", "a0.shard.json", "a1.shard.json"] {
        std::fs::copy(d.join(f), cut.join(f)).unwrap();
    }
    let b = bytes(&a[1]);
    std::fs::write(cut.join("a1.npy"), &b[..b.len() - 4]).unwrap();
    let (code, _, e) = merge(&[cut.join("a0.npy"), cut.join("a1.npy")], &out);
    assert_eq!(code, 2);
    assert!(e.contains("a1.npy"), "{e}");
    // No metadata beside a file.
    let (code, _, e) = merge(&[d.join("nothing.npy")], &out);
    assert_eq!(code, 2);
    assert!(e.contains("nothing.shard.json"), "{e}");
    assert_eq!(bytes(&out), b"keep me");
    let left = partial_files(&d);
    assert!(left.is_empty(), "temporary files left: {left:?}");
}

#[test]
fn bad_shard_options_are_refused() {
    let d = dir("bad");
    let out = d.join("x.npy");
    for (spec, want) in [
        ("1", "expected I/R"),
        ("a/2", "not a whole number"),
        ("2/2", "0-based"),
        ("0/0", "R = 0"),
        ("0/17", "at most 16 shards"),
    ] {
        let args = fixed(&out, &["--shard", spec]);
        let (code, _, e) = vgpu(&strs(&args));
        assert_eq!(code, 2, "--shard {spec}: {e}");
        assert!(e.contains(want), "--shard {spec}: {e}");
    }
    // A slice needs --out; flux outputs (sums over all trajectories) are refused.
    let (code, _, e) = vgpu(&[
        "ensemble",
        &example("lorenz.field"),
        "--n",
        "100",
        "--param",
        "rho=linspace:0:21",
        "--shard",
        "0/2",
        "--block",
        "10",
    ]);
    assert_eq!(code, 2);
    assert!(e.contains("needs --out"), "{e}");
    let (code, _, e) = vgpu(&[
        "ensemble",
        &example("tree_sum.field"),
        "--n",
        "512",
        "--block",
        "64",
        "--dt",
        "1",
        "--method",
        "euler",
        "--param",
        "x=linspace:0:1",
        "--param",
        "steps=6",
        "--shard",
        "0/2",
        "--out",
        &s(&out),
    ]);
    assert_eq!(code, 2);
    assert!(e.contains("flux outputs"), "{e}");
    // The phased launch has no index offset: a slice of a field with phases
    // is refused on the GPU (before any adapter is looked for); `auto` runs it
    // on the CPU.
    let phased = |backend: &str| -> Vec<String> {
        [
            "ensemble",
            &example("barrier_reverse.field"),
            "--n",
            "1024",
            "--dt",
            "1",
            "--method",
            "euler",
            "--param",
            "x=linspace:0:1023",
            "--shard",
            "1/2",
            "--backend",
            backend,
            "--json",
            "--out",
            &s(&out),
        ]
        .iter()
        .map(|x| x.to_string())
        .collect()
    };
    let (code, _, e) = vgpu(&strs(&phased("gpu")));
    assert_eq!(code, 2, "{e}");
    assert!(
        e.contains("field with phases runs on the CPU so far") && e.contains("512..1024 of 1024"),
        "{e}"
    );
    assert!(!out.exists());
    let o = vgpu_ok(&phased("auto"));
    assert!(o.contains("\"backend\":\"cpu\""), "{o}");
    let y: ndarray::Array2<f32> = ndarray_npy::read_npy(&out).unwrap();
    // Block 2 of 4 (trajectories 512..768) reversed: y[512] = x[767].
    assert_eq!(y[[0, 0]], 767.0);
}

/// A field whose every value depends on where its trajectory sits in the
/// whole launch: its global index `i`, lane `tid`, block `bid`, `gdim`, `n`
/// and a parameter read at `i`.
const PROBE: &str = "field probe(rho: f32[], c: f32) {
    state x = f32(tid) * 0.125 + 0.5, y = f32(bid) * 0.25 + f32(gdim) * 0.01, z = f32(n) * 0.001 + rho[i];
    d(x)/dt = c * (y - x) + rho[i];
    d(y)/dt = x * 0.1 - f32(i) * 0.001;
    d(z)/dt = -0.5 * z + sin(x);
}
";

/// GPU slices (the fixed-step WGSL launch's offset): shards run with
/// `--backend gpu` and merged are the bytes of one GPU run at the same
/// `--block` (one workgroup per block, so `tid` and `bid` are the CPU's), and
/// within rounding of the CPU.
#[test]
fn gpu_shards_merge_to_the_bytes_of_one_gpu_run() {
    let d = dir("gpu");
    let field = d.join("probe.field");
    std::fs::write(&field, PROBE).unwrap();
    let args = |out: &Path, backend: &str, block: &str, extra: &[&str]| -> Vec<String> {
        let mut v: Vec<String> = [
            "ensemble",
            &s(&field),
            "--n",
            "1000",
            "--block",
            block,
            "--t",
            "0:0.5",
            "--dt",
            "0.01",
            "--param",
            "rho=linspace:0:2",
            "--param",
            "c=1.5",
            "--backend",
            backend,
            "--out",
            &s(out),
        ]
        .iter()
        .map(|x| x.to_string())
        .collect();
        v.extend(extra.iter().map(|x| x.to_string()));
        v
    };
    let whole = d.join("whole.npy");
    let (code, _, e) = vgpu(&strs(&args(&whole, "gpu", "64", &[])));
    if !common::gpu_ran(code, &e) {
        return;
    }
    for (r, block) in [(3, "64"), (4, "100")] {
        let whole = d.join(format!("whole{block}.npy"));
        vgpu_ok(&args(&whole, "gpu", block, &[]));
        let shards: Vec<PathBuf> = (0..r).map(|i| d.join(format!("g{i}of{r}.npy"))).collect();
        for (i, p) in shards.iter().enumerate() {
            let o = vgpu_ok(&args(
                p,
                "gpu",
                block,
                &["--shard", &format!("{i}/{r}"), "--json"],
            ));
            assert!(o.contains("\"backend\":\"gpu\""), "{o}");
        }
        let out = d.join(format!("merged{r}.npy"));
        let (code, o, e) = merge(&shards, &out);
        assert_eq!(code, 0, "{o}{e}");
        assert_eq!(
            bytes(&out),
            bytes(&whole),
            "{r} GPU shards, --block {block}"
        );
    }
    let whole = d.join("whole.npy");
    let meta = std::fs::read_to_string(d.join("g1of3.shard.json")).unwrap();
    assert!(meta.contains("\"backend\": \"gpu\""), "{meta}");
    // The CPU computes the same trajectories to rounding.
    let cpu = d.join("cpu.npy");
    vgpu_ok(&args(&cpu, "cpu", "64", &[]));
    let g: ndarray::Array2<f32> = ndarray_npy::read_npy(&whole).unwrap();
    let c: ndarray::Array2<f32> = ndarray_npy::read_npy(&cpu).unwrap();
    let worst = g
        .iter()
        .zip(c.iter())
        .map(|(a, b)| (a - b).abs() / b.abs().max(1.0))
        .fold(0.0f32, f32::max);
    assert!(worst < 1e-4, "GPU vs CPU: {worst}");
    // Rows differ by position (tid, bid, i): a slice run at the wrong offset
    // would not match.
    assert_ne!(g.row(0), g.row(64));
    assert_ne!(g.row(1), g.row(65));
}

/// A shard that fails names its slice, exits non-zero and leaves no output;
/// rerunning only that shard and merging completes the run.
#[test]
fn a_failed_shard_is_rerun_alone_and_merged() {
    let d = dir("rerun");
    vgpu_ok(&fixed(&d.join("whole.npy"), &[]));
    vgpu_ok(&fixed(&d.join("s0.npy"), &["--shard", "0/2"]));
    // Shard 1's output folder is missing (a node's scratch disk, say).
    let lost = d.join("gone").join("s1.npy");
    let (code, _, e) = vgpu(&strs(&fixed(&lost, &["--shard", "1/2"])));
    assert_ne!(code, 0, "{e}");
    assert!(
        e.contains("--shard 1/2 (trajectories 512..1000 of 1000)") && e.contains("gone"),
        "{e}"
    );
    assert!(!d.join("gone").exists());
    let left = partial_files(&d);
    assert!(left.is_empty(), "{left:?}");
    let (code, _, e) = merge(&[d.join("s0.npy")], &d.join("merged.npy"));
    assert_eq!(code, 2);
    assert!(e.contains("shard 1/2 not given"), "{e}");
    // The rerun of shard 1 alone, then the merge.
    vgpu_ok(&fixed(&d.join("s1.npy"), &["--shard", "1/2"]));
    let (code, o, e) = merge(&[d.join("s0.npy"), d.join("s1.npy")], &d.join("merged.npy"));
    assert_eq!(code, 0, "{o}{e}");
    assert_eq!(bytes(&d.join("merged.npy")), bytes(&d.join("whole.npy")));
}
