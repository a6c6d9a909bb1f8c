//! Fuzzing the parser and decoder: random bytes and mutated real PTX must give
//! a value or an error, never a panic. Inputs that once failed are kept below.

use proptest::prelude::*;
use vgpu_ptx::Module;

fn real_ptx() -> String {
    let dir = match std::env::var_os("VGPU_PTX_CASES") {
        Some(p) => std::path::PathBuf::from(p),
        None => std::path::PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../ptx-cases")),
    };
    std::fs::read_to_string(dir.join("kernels.ptx")).expect("kernels.ptx")
}

/// Parse, then decode every entry: both must return, not panic.
fn exercise(text: &str) {
    if let Ok(m) = Module::parse(text, "fuzz.ptx") {
        for e in m.entries() {
            let _ = m.kernel(e);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
        exercise(&String::from_utf8_lossy(&bytes));
    }

    #[test]
    fn mutated_real_ptx_never_panics(cut in 0usize..30_000, len in 0usize..64, junk in "[ -~\n]{0,12}") {
        let src = real_ptx();
        let mut chars: Vec<char> = src.chars().collect();
        let at = cut % chars.len();
        let end = (at + len).min(chars.len());
        chars.splice(at..end, junk.chars());
        exercise(&chars.into_iter().collect::<String>());
    }

    #[test]
    fn truncated_real_ptx_never_panics(cut in 0usize..30_000) {
        let src = real_ptx();
        let chars: Vec<char> = src.chars().collect();
        exercise(&chars[..cut % chars.len()].iter().collect::<String>());
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
