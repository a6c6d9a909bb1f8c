//! Fuzzing the whole path, not only the parser: mutated PTX modules of the
//! corpus are parsed, decoded and LAUNCHED (one block of 32 threads, small
//! zeroed buffers for pointer parameters, a small watchdog and memory limit);
//! and mutated case.json texts (huge numbers, wrong types, cut off) are read.
//! Errors of every kind are fine; a panic is not.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use proptest::prelude::*;
use vgpu_ptx::{ExecOptions, KernelArg, LaunchConfig, Limits, Module};

/// Every .ptx module of ptx-cases/ and of this crate's tests/, walked.
fn corpus() -> &'static [String] {
    static CORPUS: OnceLock<Vec<String>> = OnceLock::new();
    CORPUS.get_or_init(|| {
        let shared = match std::env::var_os("VGPU_PTX_CASES") {
            Some(p) => PathBuf::from(p),
            None => PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../ptx-cases")),
        };
        let mut files = Vec::new();
        for root in [
            shared,
            PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/tests")),
        ] {
            walk(&root, "ptx", &mut files);
        }
        files.sort();
        let v: Vec<String> = files
            .iter()
            .map(|p| std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display())))
            .collect();
        assert!(v.len() >= 9, "the corpus has {} modules", v.len());
        v
    })
}

/// Every case.json of ptx-cases/ and of this crate's tests/cases/.
fn case_corpus() -> &'static [String] {
    static CASES: OnceLock<Vec<String>> = OnceLock::new();
    CASES.get_or_init(|| {
        let mut files = Vec::new();
        for root in [
            concat!(env!("CARGO_MANIFEST_DIR"), "/../../ptx-cases"),
            concat!(env!("CARGO_MANIFEST_DIR"), "/tests/cases"),
        ] {
            walk(Path::new(root), "json", &mut files);
        }
        files.sort();
        let v: Vec<String> = files
            .iter()
            .filter(|p| p.file_name().is_some_and(|n| n == "case.json"))
            .map(|p| std::fs::read_to_string(p).unwrap())
            .collect();
        assert!(v.len() >= 8, "{} case.json files", v.len());
        v
    })
}

fn walk(dir: &Path, ext: &str, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.filter_map(|e| e.ok()) {
        let p = e.path();
        if p.is_dir() {
            walk(&p, ext, out);
        } else if p.extension().is_some_and(|x| x == ext) {
            out.push(p);
        }
    }
}

/// Parse, decode and launch every entry of `text` on one block of 32
/// threads: pointer-sized parameters get a zeroed 4 KiB buffer, 4-byte ones a
/// small scalar. Returns whether some entry ran to completion. Panics (the
/// test fails) only if the front end panics.
fn run_text(text: &str, scalar: u32) -> bool {
    let r = catch_unwind(AssertUnwindSafe(|| {
        let Ok(m) = Module::parse(text, "fuzz.ptx") else {
            return false;
        };
        let opts = ExecOptions {
            watchdog: 20_000,
            parallel: false,
            limits: Limits {
                max_memory: 256 << 20,
                max_threads: 1 << 16,
            },
            ..ExecOptions::default()
        };
        let mut ran = false;
        for e in m.entries() {
            let Ok(k) = m.kernel(e) else { continue };
            let mut bufs = Vec::new();
            let args: Vec<KernelArg> = k
                .params
                .iter()
                .map(|p| match (p.size, p.ty.as_str()) {
                    (8, "f64") => KernelArg::F64(scalar as f64),
                    (8, _) => {
                        bufs.push(vec![0u8; 4096]);
                        KernelArg::Buffer(bufs.len() - 1)
                    }
                    (_, "f32") => KernelArg::F32(scalar as f32),
                    _ => KernelArg::U32(scalar),
                })
                .collect();
            let cfg = LaunchConfig {
                grid: [1, 1, 1].into(),
                block: [32, 1, 1].into(),
                shared_bytes: 256,
            };
            ran |= vgpu_ptx::launch(&k, &cfg, &args, &mut bufs, &opts).is_ok();
        }
        ran
    }));
    match r {
        Ok(ran) => ran,
        Err(p) => {
            let msg = p
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            panic!("the front end panicked ({msg}) on:\n{text}");
        }
    }
}

/// Numbers a mutation puts in place of one in the text.
const NUMBERS: [&str; 10] = [
    "0",
    "1",
    "-1",
    "31",
    "32",
    "4294967295",
    "2147483648",
    "0xffffffffffffffff",
    "99999999999999999999",
    "0f7F800000",
];

/// `text` with its `nth` number (a run of digits) replaced by `with`.
fn replace_number(text: &str, nth: usize, with: &str) -> String {
    let b = text.as_bytes();
    let mut runs = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i].is_ascii_digit() && (i == 0 || !b[i - 1].is_ascii_alphanumeric()) {
            let s = i;
            while i < b.len() && b[i].is_ascii_alphanumeric() {
                i += 1;
            }
            runs.push((s, i));
        } else {
            i += 1;
        }
    }
    if runs.is_empty() {
        return text.to_string();
    }
    let (s, e) = runs[nth % runs.len()];
    format!("{}{with}{}", &text[..s], &text[e..])
}

/// `text` with line `a` deleted, duplicated, or swapped with line `b`.
fn edit_lines(text: &str, how: u8, a: usize, b: usize) -> String {
    let mut lines: Vec<&str> = text.lines().collect();
    let n = lines.len().max(1);
    let (a, b) = (a % n, b % n);
    match (how % 3, lines.is_empty()) {
        (_, true) => {}
        (0, _) => {
            lines.remove(a);
        }
        (1, _) => lines.insert(a, lines[a]),
        _ => lines.swap(a, b),
    }
    lines.join("\n")
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn mutated_modules_run_without_panics(
        which in 0usize..1000,
        nth in 0usize..100_000,
        num in 0usize..NUMBERS.len(),
        how in 0u8..3,
        a in 0usize..10_000,
        b in 0usize..10_000,
        scalar in prop_oneof![Just(0u32), Just(1), Just(32), Just(1000), Just(u32::MAX)],
    ) {
        let c = corpus();
        let text = &c[which % c.len()];
        let t = replace_number(text, nth, NUMBERS[num]);
        run_text(&t, scalar);
        run_text(&edit_lines(&t, how, a, b), scalar);
    }

    #[test]
    fn mutated_case_json_is_read_without_panics(
        which in 0usize..1000,
        nth in 0usize..10_000,
        num in 0usize..NUMBERS.len(),
        cut in 0usize..100_000,
        big in prop_oneof![Just("1e308"), Just("-1"), Just("18446744073709551616"), Just("\"x\""), Just("[]"), Just("null")],
    ) {
        let c = case_corpus();
        let text = &c[which % c.len()];
        let t = replace_number(text, nth, NUMBERS[num]);
        let t2 = replace_number(text, nth, big);
        let t3: String = text.chars().take(cut % (text.len() + 1)).collect();
        for s in [t, t2, t3] {
            let r = catch_unwind(|| vgpu_ptx::case::parse_case(s.as_bytes()).map(|c| c.entry));
            prop_assert!(r.is_ok(), "case.json reader panicked on:\n{}", s);
        }
    }
}

#[test]
fn every_corpus_module_runs_without_panics() {
    // Unmutated: some entry of the corpus runs to completion on one block, so
    // the fuzz above exercises execution and not only errors.
    let mut ran = 0;
    for text in corpus() {
        for scalar in [0, 32] {
            ran += run_text(text, scalar) as usize;
        }
    }
    assert!(ran >= 4, "only {ran} corpus launches completed");
}

#[test]
fn regressions() {
    // Shapes the launch fuzz once reached: kept so they stay errors.
    let head = ".version 8.0\n.target sm_90\n.address_size 64\n";
    for body in [
        ".visible .entry k(.param .b8 p[4294967295]) { ret; }",
        ".visible .entry k(.param .b8 p[99999999999]) { ret; }",
        ".visible .entry k() { .local .b8 l[268435455]; ret; }",
        ".visible .entry k() { .shared .b8 s[268435455]; ret; }",
    ] {
        run_text(&format!("{head}{body}\n"), 1);
    }
}
