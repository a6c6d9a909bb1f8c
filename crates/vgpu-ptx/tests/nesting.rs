//! Every kind of nesting in PTX is bounded (issue 15): braces, parentheses and
//! `!` in operands, braces in initialisers and `{ }` scopes in bodies by
//! `limits::MAX_NESTING`, chains of calls by `limits::MAX_CALL_DEPTH`, and the
//! code inlined calls produce by `limits::MAX_KERNEL_INSTRUCTIONS`. Input at a
//! limit parses; one level more is a clean error naming the place and the
//! limit. Everything runs on a 2 MiB stack, the fuzz driver's.

use vgpu_ptx::limits::{MAX_CALL_DEPTH, MAX_KERNEL_INSTRUCTIONS, MAX_NESTING};
use vgpu_ptx::{Module, PtxError};

const HEAD: &str = ".version 8.0\n.target sm_90\n.address_size 64\n";

/// Runs `f` on a thread with a 2 MiB stack.
fn on_small_stack<T: Send>(f: impl FnOnce() -> T + Send) -> T {
    std::thread::scope(|s| {
        std::thread::Builder::new()
            .stack_size(2 << 20)
            .spawn_scoped(s, f)
            .expect("a thread")
            .join()
            .expect("no panic, no overflow")
    })
}

/// A module whose entry `k` has `body` (line 7 on) after its register declarations.
fn entry(body: &str) -> String {
    format!("{HEAD}.visible .entry k(.param .u64 out)\n{{\n.reg .b32 %r<4>;\n{body}\nret;\n}}\n")
}

/// The parse error of `src`, checked to be at line `line`, column `col` and
/// to name `what` and the limit.
fn refused(src: &str, line: u32, col: u32, what: &str) {
    let e = on_small_stack(|| Module::parse(src, "deep.ptx").err());
    let Some(PtxError::Parse {
        line: l,
        col: c,
        msg,
        ..
    }) = e
    else {
        panic!("expected a parse error, got {e:?}");
    };
    assert_eq!((l, c), (line, col), "{msg}");
    assert!(msg.contains(what), "{msg}");
    assert!(
        msg.contains(&format!("deeper than {MAX_NESTING} levels")),
        "{msg}"
    );
    assert!(msg.contains("MAX_NESTING"), "{msg}");
}

fn parses(src: &str) {
    if let Err(e) = on_small_stack(|| Module::parse(src, "deep.ptx")) {
        panic!("at the limit: {e}");
    }
}

/// `depth` levels of `open` around `inner`, closed by `close`.
fn wrap(open: &str, inner: &str, close: &str, depth: usize) -> String {
    format!("{}{inner}{}", open.repeat(depth), close.repeat(depth))
}

#[test]
fn operand_braces_at_the_limit_parse_and_deeper_is_refused() {
    // `mov.b32 %r1, {{…{%r2}…}};` on line 7: the opening brace over the
    // limit is at column 14 + MAX_NESTING.
    let at = |d| entry(&format!("mov.b32 %r1, {};", wrap("{", "%r2", "}", d)));
    parses(&at(MAX_NESTING));
    refused(
        &at(MAX_NESTING + 1),
        7,
        14 + MAX_NESTING as u32,
        "braces in an operand",
    );
    // The fuzzer's input: 70,000 levels, unclosed.
    let src = entry(&format!("bfi.b32 %r1, %r2, {}", "{ ".repeat(70_000)));
    refused(&src, 7, 19 + 2 * MAX_NESTING as u32, "braces in an operand");
}

#[test]
fn operand_parentheses_and_negations_are_bounded() {
    let at = |d| entry(&format!("call.uni f, {};", wrap("(", "%r2", ")", d)));
    parses(&at(MAX_NESTING));
    refused(
        &at(MAX_NESTING + 1),
        7,
        13 + MAX_NESTING as u32,
        "parentheses in an operand",
    );
    let at = |d| entry(&format!("selp.b32 %r1, %r2, %r3, {}%p1;", "!".repeat(d)));
    parses(&at(MAX_NESTING));
    refused(
        &at(MAX_NESTING + 1),
        7,
        25 + MAX_NESTING as u32,
        "`!` before an operand",
    );
    // Both kinds count together: `{ ( ! … ) }`.
    let half = MAX_NESTING / 2;
    let mixed = |extra| {
        entry(&format!(
            "mov.b32 %r1, {};",
            wrap(
                "{",
                &wrap("(", &format!("{}%r2", "!".repeat(extra)), ")", half),
                "}",
                half
            )
        ))
    };
    parses(&mixed(MAX_NESTING - 2 * half));
    refused(
        &mixed(MAX_NESTING - 2 * half + 1),
        7,
        14 + MAX_NESTING as u32,
        "`!`",
    );
}

#[test]
fn initialiser_braces_are_bounded() {
    let at = |d| format!("{HEAD}.global .u32 g[1] = {};\n", wrap("{", "1", "}", d));
    parses(&at(MAX_NESTING));
    refused(
        &at(MAX_NESTING + 1),
        4,
        21 + MAX_NESTING as u32,
        "braces in an initialiser",
    );
}

#[test]
fn body_scopes_are_bounded_and_the_deepest_decodes() {
    let at = |d| {
        entry(&format!(
            "{}mov.u32 %r1, 1;\n{}",
            "{\n".repeat(d),
            "}\n".repeat(d)
        ))
    };
    let src = at(MAX_NESTING);
    let k = on_small_stack(|| Module::parse(&src, "deep.ptx").and_then(|m| m.kernel("k")));
    assert!(k.is_ok(), "{:?}", k.err());
    // Line 7 opens the first scope; the one over the limit opens line 7 + MAX_NESTING.
    refused(
        &at(MAX_NESTING + 1),
        7 + MAX_NESTING as u32,
        1,
        "`{ }` scopes in a function body",
    );
}

/// A module whose entry `k` calls `f{depth}`, which calls `f{depth-1}`
/// `fanout` times, … down to `f0`, which adds 1 to `out[0]`'s register.
fn call_chain(depth: usize, fanout: usize) -> String {
    let mut s = HEAD.to_string();
    s.push_str(".func f0()\n{\n.reg .b32 %t<2>;\nadd.u32 %t1, %t1, 1;\nret;\n}\n");
    for i in 1..=depth {
        s.push_str(&format!(
            ".func f{i}()\n{{\n{}ret;\n}}\n",
            format!("call.uni f{};\n", i - 1).repeat(fanout)
        ));
    }
    s.push_str(&format!(
        ".visible .entry k()\n{{\ncall.uni f{depth};\nret;\n}}\n"
    ));
    s
}

/// Parses and decodes entry `k` of `src`; the kernel's instruction count.
fn decode(src: &str) -> Result<usize, PtxError> {
    on_small_stack(|| {
        Module::parse(src, "calls.ptx")
            .and_then(|m| m.kernel("k"))
            .map(|k| k.len())
    })
}

#[test]
fn call_chains_are_bounded() {
    // The entry calls f{MAX_CALL_DEPTH - 1}: MAX_CALL_DEPTH calls deep.
    let k = decode(&call_chain(MAX_CALL_DEPTH - 1, 1));
    assert!(k.is_ok(), "{:?}", k.err());
    match decode(&call_chain(MAX_CALL_DEPTH, 1)) {
        Err(e @ PtxError::Unsupported { .. }) => {
            let m = e.to_string();
            assert!(
                m.contains(&format!("nested deeper than {MAX_CALL_DEPTH} calls"))
                    && m.contains("MAX_CALL_DEPTH")
                    && m.contains("call of `f0`"),
                "{m}"
            );
            assert!(m.starts_with("calls.ptx:"), "{m}");
        }
        other => panic!("expected the call depth limit, got {other:?}"),
    }
}

#[test]
fn exponential_inlining_is_bounded() {
    // Each level calls the next twice: 2^40 copies of f0, refused once the
    // inlined code passes the limit (in well under a second of decoding).
    let t = std::time::Instant::now();
    match decode(&call_chain(40, 2)) {
        Err(e @ PtxError::Unsupported { .. }) => {
            let m = e.to_string();
            assert!(
                m.contains(&format!(
                    "over the decoder's limit of {MAX_KERNEL_INSTRUCTIONS}"
                )) && m.contains("MAX_KERNEL_INSTRUCTIONS"),
                "{m}"
            );
        }
        other => panic!("expected the instruction limit, got {other:?}"),
    }
    assert!(t.elapsed().as_secs() < 60, "{:?}", t.elapsed());
    // Below the limit the same shape decodes: 2^10 copies.
    let k = decode(&call_chain(10, 2));
    assert!(k.as_ref().is_ok_and(|&n| n >= 1 << 10), "{k:?}");
}
