//! One test body, two backends: every PTX case of the repository (ptx-cases/,
//! its corpus, and vgpu-ptx's planted-bug cases) runs on the interpreter and
//! on the GPU path (PTX lowered into the IR's control-flow form, emitted as
//! WGSL, run through wgpu; lavapipe in CI).
//!
//! On the interpreter every case passes. On the GPU a case passes too unless
//! ptx-cases/GPU_KNOWN_FAILURES.json lists it, with the exact reason it does
//! not: such a case must still fail with that reason, so the list can only
//! shrink (when one passes, the test says to remove it). Set
//! `VGPU_GPU_KNOWN_WRITE=1` to rewrite the list from what the GPU does now.
//!
//! Without an adapter the GPU half is skipped, unless `VGPU_REQUIRE_GPU=1`.

mod common;

use common::ptx_gpu::no_adapter;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use vgpu::ptx::{self, CaseOptions, ExecOptions};
use vgpu::ptx_gpu::PtxRunner;
use vgpu::BackendChoice;

fn repo() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
        .canonicalize()
        .unwrap()
}

fn case_dirs(root: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(root)
        .unwrap_or_else(|e| panic!("{}: {e}", root.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("case.json").is_file())
        .collect();
    v.sort();
    v
}

fn all_cases() -> Vec<PathBuf> {
    let r = repo();
    let mut v = case_dirs(&r.join("ptx-cases"));
    v.extend(case_dirs(&r.join("ptx-cases/corpus/cub")));
    v.extend(case_dirs(&r.join("ptx-cases/corpus/cuda-samples")));
    v.extend(case_dirs(&r.join("crates/vgpu-ptx/tests/cases")));
    v
}

fn rel(p: &Path) -> String {
    p.strip_prefix(repo()).unwrap().display().to_string()
}

/// Runs one case on `runner`: `Ok(())` when it passes, else why not (paths
/// relative to the repository).
fn run(runner: &mut PtxRunner, dir: &Path) -> Result<(), String> {
    let opts = ExecOptions::default();
    let r = ptx::run_case_on(
        dir,
        &opts,
        &CaseOptions::default(),
        &mut |m, e, g, a, b, o| runner.launch(m, e, g, a, b, o),
    );
    let root = format!("{}/", repo().display());
    let clean = |s: String| s.replace(&root, "");
    match r {
        Err(e) => Err(clean(e.to_string())),
        Ok(r) if r.passed() => Ok(()),
        Ok(r) => Err(clean(match (&r.expect_error, &r.error) {
            (Some(c), None) => format!("expected a `{c}` error; the kernel ran to completion"),
            (Some(c), Some(e)) => format!("expected a `{c}` error, got: {e}"),
            (None, Some(e)) => e.to_string(),
            (None, None) => {
                let bad: Vec<String> = r
                    .buffers
                    .iter()
                    .filter(|b| !b.passed())
                    .map(|b| format!("buffer `{}` differs", b.name))
                    .collect();
                format!("wrong result: {}", bad.join(", "))
            }
        })),
    }
}

fn known_path() -> PathBuf {
    repo().join("ptx-cases/GPU_KNOWN_FAILURES.json")
}

/// Whether the GPU's reason `e` is the listed `k`, block, thread and address
/// aside: where several threads fault, which one claims the fault record first
/// (and so its block, thread and address) depends on the adapter's schedule,
/// while the class, the entry and the PTX line do not.
fn same_reason(k: &str, e: &str) -> bool {
    fn mask(s: &str) -> String {
        let mut out = String::new();
        let mut rest = s;
        while let Some((i, end)) = [("block (", ')'), ("thread (", ')'), ("address 0x", ' ')]
            .iter()
            .filter_map(|&(w, end)| rest.find(w).map(|i| (i + w.len(), end)))
            .min()
        {
            out.push_str(&rest[..i]);
            rest = &rest[i..];
            let j = rest.find(end).unwrap_or(rest.len());
            out.push('*');
            rest = &rest[j..];
        }
        out.push_str(rest);
        out
    }
    mask(k) == mask(e)
}

#[test]
fn every_case_on_both_backends() {
    let cases = all_cases();
    assert!(cases.len() >= 8 + 7, "only {} cases found", cases.len());
    let mut cpu = PtxRunner::new(BackendChoice::Cpu, true);
    let mut failed = Vec::new();
    for d in &cases {
        if let Err(e) = run(&mut cpu, d) {
            failed.push(format!("cpu {}: {e}", rel(d)));
        }
    }
    assert!(failed.is_empty(), "interpreter:\n{}", failed.join("\n"));

    // Without an adapter the GPU half is skipped.
    if no_adapter() {
        return;
    }
    let known: BTreeMap<String, String> = match std::fs::read_to_string(known_path()) {
        Ok(t) => serde_json::from_str(&t).expect("GPU_KNOWN_FAILURES.json parses"),
        Err(_) => BTreeMap::new(),
    };
    let mut gpu = PtxRunner::new(BackendChoice::Gpu, true);
    // The planted race (vgpu-ptx's shared_race) is the race check's.
    gpu.racecheck = true;
    let mut now = BTreeMap::new();
    let mut passed = 0;
    for d in &cases {
        let name = rel(d);
        match (run(&mut gpu, d), known.get(&name)) {
            (Ok(()), None) => passed += 1,
            (Ok(()), Some(_)) => failed.push(format!(
                "{name} passes on the GPU now: remove it from GPU_KNOWN_FAILURES.json"
            )),
            (Err(e), Some(k)) if same_reason(k, &e) => {
                now.insert(name, e);
            }
            (Err(e), _) => {
                failed.push(format!("gpu {name}: {e}"));
                now.insert(name, e);
            }
        }
    }
    for k in known.keys() {
        if !cases.iter().any(|d| rel(d) == *k) {
            failed.push(format!(
                "GPU_KNOWN_FAILURES.json lists {k}, which is no case"
            ));
        }
    }
    eprintln!(
        "GPU path: {passed} of {} cases pass, {} known failures",
        cases.len(),
        now.len()
    );
    if std::env::var("VGPU_GPU_KNOWN_WRITE").as_deref() == Ok("1") {
        let text = serde_json::to_string_pretty(&now).unwrap();
        std::fs::write(known_path(), text + "\n").unwrap();
        return;
    }
    assert!(failed.is_empty(), "GPU path:\n{}", failed.join("\n"));
}
