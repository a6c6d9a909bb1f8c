//! Mutators: byte level (bit flips, interesting bytes, cuts, chunk copies) and
//! grammar aware on a token list (insertion, deletion, duplication and
//! replacement from the language's token set, same-class replacement, deep
//! nesting, long chains, huge and edge numbers, negative literals in index
//! positions, line edits, splices from another seed, truncation). Text is
//! split into tokens that keep their whitespace, so an unmutated input joins
//! back to itself.

use crate::rng::Rng;

/// What the grammar-aware mutations of one language know about it.
#[derive(Debug, Clone, Copy)]
pub struct Lang {
    /// Tokens a mutation may insert or put in place of another.
    pub vocab: &'static [&'static str],
    /// Classes of interchangeable tokens (operators, types, functions, …).
    pub classes: &'static [&'static [&'static str]],
    /// Huge, edge and malformed numbers.
    pub numbers: &'static [&'static str],
    /// Wrappers for deep nesting: (open, close) pairs; an empty close is a
    /// unary prefix.
    pub nest: &'static [(&'static str, &'static str)],
    /// Separators of long chains (`x + x + …`).
    pub chain: &'static [&'static str],
    /// Negative and edge literals put at the start of an index (after `[`).
    pub negative: &'static [&'static str],
    /// Multi-character punctuation kept as one token.
    pub ops: &'static [&'static str],
    /// Characters (besides ASCII letters and digits) that continue a word.
    pub word: &'static str,
}

/// The `.field` language.
pub const FIELD: Lang = Lang {
    vocab: &[
        "field", "state", "shared", "flux", "phase", "let", "emit", "for", "in", "over", "if",
        "else", "d", "dt", "x", "i", "tid", "bid", "bdim", "gdim", "n", "t", "k", "init", "select",
        "fma", "min", "max", "pow", "sin", "sqrt", "log", "abs", "floor", "f32", "f64", "i32",
        "u32", "bool", "true", "false", "0", "1", "2", "1.0", "0.5", "-1", "3u", "7i", "(", ")",
        "{", "}", "[", "]", ",", ";", ":", "=", ":=", "+=", "..", "+", "-", "*", "/", "%", "<<",
        ">>", "&", "|", "^", "!", "&&", "||", "<", "<=", "==", "!=", ">", ">=", "//", "\n",
    ],
    classes: &[
        &[
            "+", "-", "*", "/", "%", "&", "|", "^", "<<", ">>", "&&", "||", "<", "<=", "==", "!=",
            ">", ">=",
        ],
        &["f32", "f64", "i32", "u32", "bool"],
        &[
            "sin", "cos", "exp", "log", "sqrt", "tanh", "abs", "floor", "f32", "u32", "i32",
        ],
        &["min", "max", "pow", "fma", "select"],
        &["i", "tid", "bid", "bdim", "gdim", "n", "t", "dt"],
        &["state", "shared", "flux", "let", "emit"],
    ],
    numbers: &[
        "4294967295u",
        "4294967296",
        "4000000000u",
        "2147483648i",
        "2147483647i",
        "18446744073709551615",
        "99999999999999999999999",
        "1e39",
        "1e-46",
        "1e999",
        "3.4028236e38",
        "0",
        "0u",
        "0.0",
        "0i",
        "1e",
        "0x10",
        "1.",
        "65536",
        "2097152",
    ],
    nest: &[
        ("(", ")"),
        ("-", ""),
        ("!", ""),
        ("abs(", ")"),
        ("min(x, ", ")"),
    ],
    chain: &[
        "+", "-", "*", "/", "%", "&", "|", "^", "<<", "&&", "||", "<",
    ],
    negative: &[
        "-1",
        "- 1 +",
        "-2147483648i",
        "0 - 1",
        "-1i",
        "-(3u) +",
        "4294967295u +",
    ],
    ops: &[
        "<<", ">>", "<=", ">=", "==", "!=", "&&", "||", ":=", "+=", "..", "//",
    ],
    word: "_.",
};

/// PTX.
pub const PTX: Lang = Lang {
    vocab: &[
        ".reg",
        ".pred",
        ".b32",
        ".b64",
        ".u32",
        ".s32",
        ".f32",
        ".f64",
        ".u64",
        ".s64",
        ".u16",
        ".b8",
        ".param",
        ".global",
        ".shared",
        ".local",
        ".const",
        ".entry",
        ".func",
        ".visible",
        ".align",
        "ld",
        "st",
        "mov",
        "add",
        "sub",
        "mul",
        "mad",
        "div",
        "rem",
        "setp",
        "selp",
        "bra",
        "ret",
        "bar.sync",
        "atom.global.add.u32",
        "shfl.sync.bfly.b32",
        "cvt",
        "@%p1",
        "@!%p1",
        "%r1",
        "%r2",
        "%rd1",
        "%f1",
        "%p1",
        "%tid.x",
        "%ntid.x",
        "%ctaid.x",
        "%laneid",
        "$L__BB0_1",
        "$L__BB0_1:",
        "{",
        "}",
        "[",
        "]",
        "(",
        ")",
        ",",
        ";",
        "+",
        "-",
        "0",
        "1",
        "32",
        "\n",
        "//",
        "/*",
        "*/",
        ".lo",
        ".wide",
        ".rn",
        ".ftz",
        ".approx",
        ".uni",
        ".ge",
        ".lt",
        ".eq",
    ],
    classes: &[
        &[
            ".b8", ".b16", ".b32", ".b64", ".u8", ".u16", ".u32", ".u64", ".s8", ".s16", ".s32",
            ".s64", ".f16", ".f32", ".f64", ".pred", ".b128",
        ],
        &[
            ".global", ".shared", ".local", ".param", ".const", ".generic",
        ],
        &[
            "add", "sub", "mul", "div", "rem", "min", "max", "and", "or", "xor", "shl", "shr",
            "mad", "fma", "neg", "abs", "not", "mov", "ld", "st", "cvt", "setp", "selp", "bra",
            "ret", "exit",
        ],
        &[
            "%tid.x",
            "%tid.y",
            "%ntid.x",
            "%ctaid.x",
            "%nctaid.x",
            "%laneid",
            "%warpid",
        ],
        &[
            ".eq", ".ne", ".lt", ".le", ".gt", ".ge", ".lo", ".hi", ".ls", ".hs",
        ],
    ],
    numbers: &[
        "0",
        "1",
        "-1",
        "31",
        "32",
        "33",
        "1024",
        "65536",
        "4294967295",
        "4294967296",
        "2147483648",
        "-2147483648",
        "0xffffffffffffffff",
        "0x10000000000000000",
        "99999999999999999999",
        "0f7F800000",
        "0f7FC00000",
        "0d7FF0000000000000",
        "0fZZ",
        "018",
    ],
    nest: &[("{ ", " }"), ("(", ")"), ("-", ""), ("!", "")],
    chain: &["+", ",", ";\n\tadd.s32 %r1, %r1, 1;", "\n$L__BB0_1:"],
    negative: &["-1", "-4294967296", "%r1+-8", "-0x7fffffff"],
    ops: &["//", "/*", "*/"],
    word: "_.$%:@",
};

/// JSON (case.json).
pub const JSON: Lang = Lang {
    vocab: &[
        "{",
        "}",
        "[",
        "]",
        ",",
        ":",
        "null",
        "true",
        "false",
        "0",
        "-1",
        "\"\"",
        "\"x\"",
        "\"kind\"",
        "\"buffer\"",
        "\"scalar\"",
        "\"type\"",
        "\"value\"",
        "\"name\"",
        "\"len\"",
        "\"dtype\"",
        "\"init\"",
        "\"expect\"",
        "\"f32\"",
        "\"s32\"",
        "\"u8\"",
        "\"f64\"",
        "\"s64\"",
        "\"u64\"",
        "\"b128\"",
        "\"grid\"",
        "\"block\"",
        "\"shared_bytes\"",
        "\"watchdog\"",
        "\"expect_error\"",
        "\"oob\"",
        "\"watchdog_timeout\"",
        "\"exact\"",
        "\"ptx\"",
        "\"entry\"",
        "\"args\"",
        "\"buffers\"",
    ],
    classes: &[
        &[
            "\"f32\"",
            "\"f64\"",
            "\"s32\"",
            "\"u32\"",
            "\"s64\"",
            "\"u64\"",
            "\"u8\"",
            "\"s8\"",
            "\"u16\"",
            "\"s16\"",
            "\"b32\"",
            "\"f16\"",
            "\"bogus\"",
        ],
        &["null", "true", "false", "[]", "{}", "\"\"", "0", "[0,0,0]"],
        &[
            "\"../kernels.ptx\"",
            "\"kernels.ptx\"",
            "\"case.json\"",
            "\"/dev/zero\"",
            "\"/etc/hostname\"",
            "\"../../../../etc/hostname\"",
            "\".\"",
            "\"..\"",
            "\"\"",
            "\"x.bin\"",
            "\"nonexistent.bin\"",
        ],
    ],
    numbers: &[
        "0",
        "1",
        "-1",
        "-0",
        "0.5",
        "32",
        "1024",
        "65535",
        "65536",
        "2147483647",
        "2147483648",
        "4294967295",
        "4294967296",
        "9223372036854775807",
        "18446744073709551615",
        "18446744073709551616",
        "1e308",
        "1e309",
        "-1e309",
        "1e-400",
        "100000000000",
    ],
    nest: &[("[", "]"), ("{\"a\":", "}")],
    chain: &[","],
    negative: &["-1", "-2147483649", "-9223372036854775809"],
    ops: &[],
    word: "_.-+\"/",
};

/// One token; whitespace runs are tokens of their own (kept when joining).
fn is_space(t: &str) -> bool {
    t.chars().all(char::is_whitespace)
}

/// Splits `text` into tokens: words (letters, digits and `lang.word`),
/// quoted strings (JSON), `lang.ops`, single characters and whitespace runs.
pub fn tokenize(text: &str, lang: &Lang) -> Vec<String> {
    let cs: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    let word = |c: char| c.is_alphanumeric() || lang.word.contains(c);
    while i < cs.len() {
        let start = i;
        let c = cs[i];
        if c.is_whitespace() {
            while i < cs.len() && cs[i].is_whitespace() {
                i += 1;
            }
        } else if c == '"' && lang.word.contains('"') {
            i += 1;
            while i < cs.len() && cs[i] != '"' {
                i += if cs[i] == '\\' { 2 } else { 1 };
            }
            i = (i + 1).min(cs.len());
        } else if let Some(op) = lang
            .ops
            .iter()
            .find(|op| cs[i..].iter().take(op.len()).copied().eq(op.chars()))
        {
            i += op.chars().count();
        } else if word(c) && !(c == '.' && cs.get(i + 1) == Some(&'.')) {
            // A sign continues a number only in its exponent (1e-5).
            let exp_sign = |i: usize| {
                matches!(cs[i], '+' | '-')
                    && matches!(cs[i - 1], 'e' | 'E')
                    && cs[start].is_ascii_digit()
            };
            while i < cs.len()
                && (word(cs[i]) || exp_sign(i))
                && !(cs[i] == '.' && cs.get(i + 1) == Some(&'.'))
            {
                i += 1;
            }
        } else {
            i += 1;
        }
        out.push(cs[start..i].iter().collect());
    }
    out
}

fn is_number(t: &str) -> bool {
    let t = t.trim_start_matches('-');
    t.starts_with(|c: char| c.is_ascii_digit())
}

/// Indices of the tokens that are not whitespace.
fn solid(toks: &[String]) -> Vec<usize> {
    (0..toks.len()).filter(|&i| !is_space(&toks[i])).collect()
}

/// A depth or a length for nesting and chains: small, at the parser's
/// limits, past them, and far past them.
const SIZES: &[usize] = &[
    2, 3, 10, 64, 127, 128, 129, 200, 255, 256, 257, 300, 1000, 5000, 12_000, 70_000,
];

/// Applies one grammar-aware mutation, chosen by `rng`, to `toks`.
/// `other` is another seed's tokens, for splices.
pub fn mutate_tokens(toks: &mut Vec<String>, lang: &Lang, other: &[String], rng: &mut Rng) {
    let s = solid(toks);
    if s.is_empty() {
        toks.push(rng.pick(lang.vocab).to_string());
        return;
    }
    let at = s[rng.below(s.len())];
    match rng.below(16) {
        0 => {
            let n = 1 + rng.below(3);
            let end = (at + 2 * n).min(toks.len());
            toks.drain(at..end);
        }
        1 => {
            let t = toks[at].clone();
            toks.insert(at, t);
        }
        2 | 3 => {
            let v = rng.pick(lang.vocab).to_string();
            toks.insert(at, format!(" {v} "));
        }
        4 => toks[at] = rng.pick(lang.vocab).to_string(),
        5 | 6 => {
            // Same class: mostly well-formed, reaches the later stages.
            let t = toks[at].clone();
            if let Some(c) = lang.classes.iter().find(|c| c.contains(&t.as_str())) {
                toks[at] = rng.pick(c).to_string();
            } else if is_number(&t) {
                toks[at] = rng.pick(lang.numbers).to_string();
            } else {
                let names: Vec<usize> = s
                    .iter()
                    .copied()
                    .filter(|&j| toks[j].starts_with(|c: char| c.is_alphabetic() || c == '%'))
                    .collect();
                if !names.is_empty() && t.starts_with(|c: char| c.is_alphabetic() || c == '%') {
                    toks[at] = toks[*rng.pick(&names)].clone();
                } else {
                    let c = rng.pick(lang.classes);
                    toks[at] = rng.pick(c).to_string();
                }
            }
        }
        7 => {
            let nums: Vec<usize> = s.iter().copied().filter(|&j| is_number(&toks[j])).collect();
            let j = if nums.is_empty() {
                at
            } else {
                *rng.pick(&nums)
            };
            toks[j] = rng.pick(lang.numbers).to_string();
        }
        8 => {
            let (open, close) = *rng.pick(lang.nest);
            let d = (*rng.pick(SIZES)).min(MAX_INPUT_BYTES / (open.len() + close.len()).max(1));
            toks[at] = format!("{}{}{}", open.repeat(d), toks[at], close.repeat(d));
        }
        9 => {
            let sep = format!(" {} ", rng.pick(lang.chain));
            let n = (*rng.pick(SIZES)).min(MAX_INPUT_BYTES / (toks[at].len() + sep.len()));
            toks[at] = format!("({})", vec![toks[at].as_str(); n].join(&sep));
        }
        10 => {
            let opens: Vec<usize> = s.iter().copied().filter(|&j| toks[j] == "[").collect();
            let neg = rng.pick(lang.negative).to_string();
            match opens.is_empty() {
                true => toks.insert(at, neg),
                false => toks.insert(*rng.pick(&opens) + 1, neg),
            }
        }
        11 => {
            // Line edits: delete, duplicate (many times) or swap lines.
            let text = toks.concat();
            let mut lines: Vec<&str> = text.split('\n').collect();
            let (a, b) = (rng.below(lines.len()), rng.below(lines.len()));
            match rng.below(4) {
                0 => {
                    lines.remove(a);
                }
                1 => lines.insert(a, lines[a]),
                2 => {
                    let l = lines[a];
                    let n = (*rng.pick(SIZES)).min(MAX_INPUT_BYTES / (l.len() + 1));
                    lines.splice(a..a, std::iter::repeat_n(l, n));
                }
                _ => lines.swap(a, b),
            }
            *toks = tokenize(&lines.join("\n"), lang);
        }
        12 => {
            // Splice: a run of another seed's tokens.
            if !other.is_empty() {
                let a = rng.below(other.len());
                let n = 1 + rng.below(64);
                let run: Vec<String> = other[a..(a + n).min(other.len())].to_vec();
                toks.splice(at..at, run);
            }
        }
        13 => {
            // Truncation.
            let cut = rng.below(toks.len() + 1);
            toks.truncate(cut);
        }
        14 => {
            let b = s[rng.below(s.len())];
            toks.swap(at, b);
        }
        _ => {
            // Characters inside a token.
            let mut cs: Vec<char> = toks[at].chars().collect();
            let i = rng.below(cs.len() + 1);
            let c = *rng.pick(&[
                '\0', '"', '\\', '\n', '\u{feff}', 'é', '{', '}', '[', ']', '-', '.', '0', '9',
                'e', '%', '$', '@',
            ]);
            match rng.below(3) {
                0 if i < cs.len() => cs[i] = c,
                1 if i < cs.len() => {
                    cs.remove(i);
                }
                _ => cs.insert(i, c),
            }
            toks[at] = cs.into_iter().collect();
        }
    }
}

/// Applies one byte-level mutation: bit flip, interesting byte, insertion,
/// deletion, chunk duplication or cut.
pub fn mutate_bytes(b: &mut Vec<u8>, rng: &mut Rng) {
    const INTERESTING: &[u8] = &[
        0, 1, 0x7f, 0x80, 0xff, b'\n', b'"', b'\\', b'(', b'{', b'[', b'9',
    ];
    if b.is_empty() {
        b.push(*rng.pick(INTERESTING));
        return;
    }
    let i = rng.below(b.len());
    match rng.below(6) {
        0 => b[i] ^= 1 << rng.below(8),
        1 => b[i] = *rng.pick(INTERESTING),
        2 => b.insert(i, *rng.pick(INTERESTING)),
        3 => {
            b.remove(i);
        }
        4 => {
            let n = (1 + rng.below(64)).min(b.len() - i);
            let chunk = b[i..i + n].to_vec();
            let j = rng.below(b.len());
            b.splice(j..j, chunk);
        }
        _ => b.truncate(i),
    }
}

/// The largest mutant: a mutation that would make the input larger is
/// dropped (chains of nested chains would otherwise reach gigabytes).
pub const MAX_INPUT_BYTES: usize = 1 << 20;

/// A mutant of the text `seed`: 1 to 4 mutations, mostly grammar aware, now
/// and then a byte-level one (which may leave invalid UTF-8).
pub fn mutate_text(seed: &str, other: &str, lang: &Lang, rng: &mut Rng) -> Vec<u8> {
    let mut toks = tokenize(seed, lang);
    let other = tokenize(other, lang);
    let n = 1 + rng.below(2) + rng.below(3) * usize::from(rng.one_in(2));
    for _ in 0..n {
        let before = toks.clone();
        mutate_tokens(&mut toks, lang, &other, rng);
        if toks.iter().map(String::len).sum::<usize>() > MAX_INPUT_BYTES {
            toks = before;
        }
    }
    let mut bytes = toks.concat().into_bytes();
    if rng.one_in(10) {
        mutate_bytes(&mut bytes, rng);
    }
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_join_back_to_the_text() {
        let srcs = [
            (FIELD, "field f(a: f32[]) {\n  state x = 1.0e-3; // c\n  d(x)/dt = -a[i] * x;\n for k in 1..3 { } }"),
            (PTX, ".visible .entry k(.param .u64 p) {\n\tld.param.u64 %rd1, [p];\n@%p1 bra $L__BB0_1;\n}"),
            (JSON, "{\"a\": [1, -2.5e-3, \"x \\\" y\"], \"b\": null}"),
        ];
        for (lang, s) in srcs {
            assert_eq!(tokenize(s, &lang).concat(), s);
        }
        let t = tokenize("x<<1..3 1e-5-2", &FIELD);
        assert!(
            t.contains(&"<<".to_string()) && t.contains(&"..".to_string()),
            "{t:?}"
        );
        assert!(t.contains(&"1e-5".to_string()), "{t:?}");
        let j = tokenize("{\"len\": -1}", &JSON);
        assert!(
            j.contains(&"\"len\"".to_string()) && j.contains(&"-1".to_string()),
            "{j:?}"
        );
    }

    #[test]
    fn mutations_change_the_text_and_are_deterministic() {
        let s = "field f() { state x = 1.0; d(x)/dt = -x * 2.0; }";
        let (mut changed, mut big) = (0, 0);
        for it in 0..500 {
            let a = mutate_text(s, s, &FIELD, &mut Rng::for_input(1, it));
            let b = mutate_text(s, s, &FIELD, &mut Rng::for_input(1, it));
            assert_eq!(a, b);
            assert!(a.len() <= MAX_INPUT_BYTES + 64, "{}", a.len());
            changed += usize::from(a != s.as_bytes());
            big += usize::from(a.len() > 10 * s.len());
        }
        assert!(changed > 400 && big > 10, "{changed} changed, {big} large");
    }
}
