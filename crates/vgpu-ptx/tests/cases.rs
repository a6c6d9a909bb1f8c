//! Runs every case folder of the repository's ptx-cases/ (real nvcc PTX, outputs from an
//! H200), of ptx-cases/corpus/<suite>/ (public CUDA code: cuda-samples, CUB primitives) and
//! of tests/cases (planted bugs that the checker must report).
//!
//! A corpus case whose case.json has a `"known_failure": "<reason>"` key is a bug VGPU has
//! not fixed yet: it must still fail, so that the list stays honest (when one passes, the
//! test says to remove the key).

use std::path::{Path, PathBuf};

use vgpu_ptx::{run_case, run_case_on, CaseOptions, ExecOptions};

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
    run_all_with(root, min_cases, &ExecOptions::default());
}

fn run_all_with(root: &Path, min_cases: usize, opts: &ExecOptions) {
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
        let r = run_case(d, opts).unwrap_or_else(|e| panic!("{}: {e}", d.display()));
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
        8,
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
    corpus_passes(&ExecOptions::default());
}

/// The global-memory initcheck finds nothing in the real programs. The
/// host wrote every buffer of theirs (inputs, and outputs the generator
/// poisoned with NaN or all-ones so that an unwritten element shows), so for
/// the corpus the poisoned outputs count as uninitialised here: a program
/// that read one before writing it would be reported.
#[test]
fn corpus_and_nvcc_cases_pass_with_the_initcheck() {
    let opts = ExecOptions {
        initcheck: true,
        ..ExecOptions::default()
    };
    run_all_with(&shared_cases_root(), 8, &opts);
    corpus_passes_with(&opts, true);
}

/// Whether `b` is all one poison value: all-ones bytes (-1, an unsigned
/// maximum), or every f32 or every f64 numpy's NaN.
fn poisoned(b: &[u8]) -> bool {
    let all = |n: usize, w: &[u8]| b.len() % n == 0 && b.chunks(n).all(|c| c == w);
    !b.is_empty()
        && (b.iter().all(|&x| x == 0xff)
            || all(4, &0x7fc0_0000u32.to_le_bytes())
            || all(8, &0x7ff8_0000_0000_0000u64.to_le_bytes()))
}

/// The indices (in the case's buffer order) of its buffers with `expect`.
fn expected_buffers(dir: &Path) -> Vec<usize> {
    let text = std::fs::read_to_string(dir.join("case.json")).unwrap_or_default();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
    let Some(bufs) = v.get("buffers").and_then(|b| b.as_object()) else {
        return Vec::new();
    };
    // The case runner orders buffers by name (a BTreeMap).
    let mut names: Vec<(&String, bool)> = bufs
        .iter()
        .map(|(n, b)| (n, b.get("expect").is_some()))
        .collect();
    names.sort();
    names
        .iter()
        .enumerate()
        .filter(|(_, (_, e))| *e)
        .map(|(i, _)| i)
        .collect()
}

fn corpus_passes(opts: &ExecOptions) {
    corpus_passes_with(opts, false);
}

/// Runs the corpus with `opts`; `poison_uninit`: poisoned output buffers count
/// as uninitialised for the initcheck.
fn corpus_passes_with(opts: &ExecOptions, poison_uninit: bool) {
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
            let outputs = expected_buffers(&d);
            let r = run_case_on(
                &d,
                opts,
                &CaseOptions::default(),
                &mut |m, e, g, a, b, o| {
                    let mut o = o.clone();
                    if poison_uninit {
                        o.uninitialised_buffers = outputs
                            .iter()
                            .copied()
                            .filter(|&i| poisoned(&b[i]))
                            .collect();
                    }
                    m.launch(e, g, a, b, &o)
                },
            );
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
