//! Runs every case folder of the repository's ptx-cases/ (real nvcc PTX, outputs from an
//! H200) and of tests/cases (planted bugs that the checker must report).

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
