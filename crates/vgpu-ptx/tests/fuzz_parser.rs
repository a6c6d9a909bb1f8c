//! Fuzzing the parser and decoder: random bytes and mutated real PTX must give
//! a value or an error, never a panic. Inputs that once failed are kept below.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use proptest::prelude::*;
use vgpu_ptx::Module;

/// Every .ptx module of the repository's corpus: ptx-cases/ (nvcc's PTX) and
/// this crate's tests/ (planted-bug cases, tests/corpus/), found by walking the
/// folders, so a module added there is fuzzed too.
fn corpus() -> &'static [(String, String)] {
    static CORPUS: OnceLock<Vec<(String, String)>> = OnceLock::new();
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
            collect_ptx(&root, &mut files);
        }
        files.sort();
        let v: Vec<(String, String)> = files
            .into_iter()
            .map(|p| {
                let text =
                    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
                (p.display().to_string(), text)
            })
            .collect();
        assert!(v.len() >= 9, "the corpus has {} modules", v.len());
        v
    })
}

fn collect_ptx(dir: &Path, out: &mut Vec<PathBuf>) {
    let rd = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    for e in rd.filter_map(|e| e.ok()) {
        let p = e.path();
        if p.is_dir() {
            collect_ptx(&p, out);
        } else if p.extension().is_some_and(|x| x == "ptx") {
            out.push(p);
        }
    }
}

/// Parse, then decode every entry: both must return, not panic, and an error
/// must name the file and a line inside the text (`fuzz.ptx:LINE…`).
fn exercise(text: &str) {
    let lines = text.lines().count() as u32 + 1;
    let check = |e: vgpu_ptx::PtxError| {
        let s = e.to_string();
        let line = s
            .strip_prefix("fuzz.ptx:")
            .and_then(|r| r.split(':').next())
            .and_then(|l| l.parse::<u32>().ok())
            .unwrap_or_else(|| panic!("error without fuzz.ptx:LINE: {s}"));
        assert!((1..=lines).contains(&line), "line {line} of {lines}: {s}");
    };
    match Module::parse(text, "fuzz.ptx") {
        Ok(m) => {
            for e in m.entries() {
                if let Err(e) = m.kernel(e) {
                    check(e);
                }
            }
        }
        Err(e) => check(e),
    }
}

fn pick(which: usize) -> &'static str {
    let c = corpus();
    &c[which % c.len()].1
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
        exercise(&String::from_utf8_lossy(&bytes));
    }

    #[test]
    fn mutated_real_ptx_never_panics(which in 0usize..1000, cut in 0usize..30_000, len in 0usize..64, junk in "[ -~\n]{0,12}") {
        let src = pick(which);
        let mut chars: Vec<char> = src.chars().collect();
        let at = cut % chars.len();
        let end = (at + len).min(chars.len());
        chars.splice(at..end, junk.chars());
        exercise(&chars.into_iter().collect::<String>());
    }

    #[test]
    fn truncated_real_ptx_never_panics(which in 0usize..1000, cut in 0usize..30_000) {
        let src = pick(which);
        let chars: Vec<char> = src.chars().collect();
        exercise(&chars[..cut % chars.len()].iter().collect::<String>());
    }
}

#[test]
fn the_corpus_decodes_and_every_line_prefix_is_handled() {
    for (name, text) in corpus() {
        let m = Module::parse(text, name).unwrap_or_else(|e| panic!("{e}"));
        for e in m.entries() {
            m.kernel(e).unwrap_or_else(|e| panic!("{e}"));
        }
        // Truncations at line boundaries and inside the line: every line of a
        // small module; every k-th line of a large one (k = ⌈√n⌉, from an
        // offset that depends on the module, plus its last lines), so a module
        // of n lines costs O(n·√n) parsed bytes instead of O(n²).
        let lines: Vec<&str> = text.split_inclusive('\n').collect();
        let stride = prefix_stride(lines.len());
        let offset = name.len() % stride;
        let mut at = 0;
        for (i, l) in lines.iter().enumerate() {
            if i % stride == offset || i + 3 >= lines.len() {
                exercise(&text[..at]);
                let mid = (at + l.len() / 2..=at + l.len())
                    .find(|&i| text.is_char_boundary(i))
                    .unwrap_or(at);
                exercise(&text[..mid]);
            }
            at += l.len();
        }
    }
}

/// Modules up to this many lines have every line prefix parsed.
const EXHAUSTIVE_LINES: usize = 200;

/// The step between the line prefixes parsed for a module of `n` lines: 1 up to
/// [`EXHAUSTIVE_LINES`], then ⌈√n⌉.
fn prefix_stride(n: usize) -> usize {
    if n <= EXHAUSTIVE_LINES {
        1
    } else {
        (1..).find(|k| k * k >= n).unwrap_or(1)
    }
}

#[test]
fn regressions() {
    // Kept inputs: degenerate tokens and shapes that once reached unchecked paths.
    for s in [
        "",
        "@",
        ".version",
        ".version 9.0 .target sm_90 .entry k(",
        ".entry k() { @%p bra; }",
        ".entry k() { .reg .b32 %r<99999999999>; }",
        ".entry k() { ld.global.f32 %f1, [%rd1+-99999999999999999999999]; }",
        ".entry k() { mov.u32 %r1, 0f; }",
        ".entry k() { L: L: ret; }",
        ".entry k() { .reg .b32 %r<2>; mov.u32 %r1, {%r0}; }",
        ".global .b8 g[2] = {1, 2, 3};",
        ".entry k() { { { } ret; }",
        "/* unterminated",
        "\"unterminated",
        ".entry k() { . ; }",
        ".entry k() { bfi.b32 %r1; }",
        ".entry k() { .reg .b32 %r; call f; }",
        ".global .b8 g[99999999999];\n.entry k() { ret; }",
    ] {
        exercise(s);
    }
}
