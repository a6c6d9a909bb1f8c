//! Runs every case folder of the repository's ptx-cases/ (real nvcc PTX, outputs from an
//! H200), of ptx-cases/corpus/<suite>/ (public CUDA code: cuda-samples, CUB primitives) and
//! of tests/cases (planted bugs that the checker must report).
//!
//! A corpus case whose case.json has a `"known_failure": "<reason>"` key is a bug VGPU has
//! not fixed yet: it must still fail, so that the list stays honest (when one passes, the
//! test says to remove the key).

use std::path::{Path, PathBuf};

use vgpu_ptx::{run_case, ExecOptions};

fn case_dirs(root: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(root)
        .unwrap_or_else(|e| panic!("{}: {e}", root.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("case.json").is_file())
        .collect();
    v.sort();
    v
}

fn shared_cases_root() -> PathBuf {
    match std::env::var_os("VGPU_PTX_CASES") {
        Some(p) => PathBuf::from(p),
        None => PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../ptx-cases")),
    }
}

fn run_all(root: &Path, min_cases: usize) {
    assert!(
        root.is_dir(),
        "case folder {} is missing (set VGPU_PTX_CASES to point elsewhere)",
        root.display()
    );
    let dirs = case_dirs(root);
    assert!(
        dirs.len() >= min_cases,
        "{}: {} cases, expected at least {min_cases}",
        root.display(),
        dirs.len()
    );
    let mut failed = Vec::new();
    for d in &dirs {
        let r =
            run_case(d, &ExecOptions::default()).unwrap_or_else(|e| panic!("{}: {e}", d.display()));
        if !r.passed() {
            failed.push(format!(
                "{}: error {:?}, expect {:?}, buffers {:?}",
                d.display(),
                r.error.map(|e| e.to_string()),
                r.expect_error,
                r.buffers
            ));
        }
    }
    assert!(failed.is_empty(), "failed cases:\n{}", failed.join("\n"));
}

#[test]
fn shared_nvcc_cases_pass() {
    run_all(&shared_cases_root(), 8);
}

#[test]
fn planted_bug_cases_are_reported() {
    run_all(
        Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/cases")),
        6,
    );
}

fn corpus_root() -> PathBuf {
    shared_cases_root().join("corpus")
}

fn known_failure(dir: &Path) -> Option<String> {
    let text = std::fs::read_to_string(dir.join("case.json")).ok()?;
    let v: serde_json::Value = serde_json::from_str(&text).ok()?;
    v.get("known_failure")?.as_str().map(str::to_owned)
}

#[test]
fn corpus_cases_pass_except_known_failures() {
    let root = corpus_root();
    assert!(root.is_dir(), "{} is missing", root.display());
    let mut suites: Vec<PathBuf> = std::fs::read_dir(&root)
        .unwrap_or_else(|e| panic!("{}: {e}", root.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir())
        .collect();
    suites.sort();
    let (mut total, mut known) = (0usize, 0usize);
    let mut failed = Vec::new();
    let mut fixed = Vec::new();
    for s in &suites {
        for d in case_dirs(s) {
            total += 1;
            let kf = known_failure(&d);
            let r = run_case(&d, &ExecOptions::default());
            let passed = matches!(&r, Ok(r) if r.passed());
            match (&kf, passed) {
                (None, true) => {}
                (None, false) => failed.push(match r {
                    Err(e) => format!("{}: {e}", d.display()),
                    Ok(r) => format!(
                        "{}: error {:?}, buffers {:?}",
                        d.display(),
                        r.error.map(|e| e.to_string()),
                        r.buffers
                    ),
                }),
                (Some(_), false) => known += 1,
                (Some(why), true) => fixed.push(format!(
                    "{} passes now: remove its \"known_failure\" ({why}) from case.json and from ptx-cases/corpus/README.md",
                    d.display()
                )),
            }
        }
    }
    assert!(
        total >= 60,
        "{}: {total} corpus cases, expected at least 60",
        root.display()
    );
    assert!(
        failed.is_empty(),
        "failed corpus cases:\n{}",
        failed.join("\n")
    );
    assert!(fixed.is_empty(), "{}", fixed.join("\n"));
    eprintln!(
        "corpus: {total} cases, {} pass, {known} known failures",
        total - known
    );
}
