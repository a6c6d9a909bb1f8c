//! Fuzzing the whole `.field` pipeline: parse → check → run a few trajectories
//! on the CPU (Euler and RK4, a few steps, small limits) → emit WGSL and
//! validate it with naga. Seeds are the repository's `examples/*.field`;
//! mutations are grammar-aware (token insertion, deletion, duplication and
//! replacement, deep nesting, long operator chains, huge numbers, negative
//! literals in index positions). Every stage runs under
//! [`std::panic::catch_unwind`]: a panic fails the test, and so does an error
//! that stands for a bug (an ill-formed kernel from the checker, WGSL that naga
//! refuses, an error without a place). The inputs that once broke it are kept
//! below as named regressions.

use proptest::prelude::*;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::sync::OnceLock;
use vgpu_ir::wgsl::phased::{emit_wgsl_phased, PhasedLayout};
use vgpu_ir::{
    compile_all, emit_wgsl, run_cpu_with, validate_wgsl, Args, Buffer, Integration, IrError,
    Kernel, Limits, Method, Par, ScalarType, Value,
};

/// Small limits: a fuzzed kernel may ask for anything; the run stays tiny.
const LIMITS: Limits = Limits {
    max_shared_bytes: 16 * 1024,
    max_flux_elements: 1 << 12,
    max_phase_repetitions: 32,
    max_phase_steps: 64,
    max_wgsl_bytes: 1 << 20,
};

/// The examples' sources, by file name.
fn seeds() -> &'static [(String, String)] {
    static SEEDS: OnceLock<Vec<(String, String)>> = OnceLock::new();
    SEEDS.get_or_init(|| {
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples");
        let mut v: Vec<(String, String)> = std::fs::read_dir(&dir)
            .expect("examples/")
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "field"))
            .map(|p| {
                let name = p.file_name().unwrap().to_string_lossy().into_owned();
                (name, std::fs::read_to_string(&p).unwrap())
            })
            .collect();
        v.sort();
        assert!(v.len() >= 8, "expected the examples, found {}", v.len());
        v
    })
}

/// Arguments for every parameter: buffers of 16 small elements (negative ones
/// for `i32`, so indices go out of range), scalars 2 (or 1.5, true).
fn args_for(k: &Kernel) -> Args {
    let mut a = Args::new(k);
    for p in &k.params {
        let r = if p.buffer {
            let b: Buffer = match p.ty {
                ScalarType::F32 => (0..16).map(|i| i as f32 * 0.25).collect::<Vec<_>>().into(),
                ScalarType::F64 => (0..16).map(|i| i as f64 * 0.25).collect::<Vec<_>>().into(),
                ScalarType::I32 => (0..16).map(|i| i % 5 - 2).collect::<Vec<i32>>().into(),
                _ => (0..16).map(|i| i % 5).collect::<Vec<u32>>().into(),
            };
            a.buffer(&p.name, b)
        } else {
            let v = match p.ty {
                ScalarType::F32 => Value::F32(1.5),
                ScalarType::F64 => Value::F64(1.5),
                ScalarType::I32 => Value::I32(2),
                ScalarType::U32 => Value::U32(2),
                ScalarType::Bool => Value::Bool(true),
            };
            a.scalar(&p.name, v)
        };
        r.unwrap_or_else(|e| panic!("argument `{}`: {e}", p.name));
    }
    a
}

/// `Err` with a description when `e` stands for a bug rather than bad input.
fn input_error(stage: &str, e: IrError) -> Result<(), String> {
    match e {
        IrError::Parse { pos, .. } | IrError::Type { pos, .. } if pos.line >= 1 && pos.col >= 1 => {
            Ok(())
        }
        IrError::Limit { pos, .. } if pos.line >= 1 && pos.col >= 1 => Ok(()),
        IrError::OutOfBounds { .. }
        | IrError::NonFinite { .. }
        | IrError::Launch { .. }
        | IrError::Conflict { .. }
        | IrError::Unsupported { .. } => Ok(()),
        e => Err(format!("{stage}: {e:?}")),
    }
}

/// How far inputs got: compiled kernels, CPU runs that finished, WGSL that naga
/// validated (so that a test can check that it exercised every stage).
#[derive(Clone, Copy, Debug, Default)]
struct Reached {
    compiled: usize,
    ran: usize,
    validated: usize,
}

/// The whole pipeline on `src`; `Err` for a bug that is not a panic.
fn pipeline(src: &str, reached: &mut Reached) -> Result<(), String> {
    let kernels = match compile_all("fuzz.field", src) {
        Ok(ks) => ks,
        Err(e) => return input_error("compile", e),
    };
    for k in &kernels {
        reached.compiled += 1;
        let args = args_for(k);
        let integ = |m: Method| {
            Integration::new(8, 0.0, 2.0, 1.0)
                .method(m)
                .block(4)
                .par(Par::Seq)
        };
        for m in [Method::Euler, Method::Rk4] {
            match run_cpu_with(k, &args, &integ(m), &LIMITS) {
                Ok(_) => reached.ran += 1,
                Err(e) => input_error("run_cpu", e)?,
            }
        }
        let wgsl = if k.is_phased() {
            PhasedLayout::new_with(k, &args, &integ(Method::Rk4), &LIMITS)
                .and_then(|l| emit_wgsl_phased(k, Method::Rk4, &l))
                .map(|w| w.source)
        } else {
            emit_wgsl(k, &Method::Rk4.tableau(), 4)
        };
        match wgsl {
            Ok(w) => {
                validate_wgsl(&k.name, &w).map_err(|e| format!("naga: {e}\n{w}"))?;
                reached.validated += 1;
            }
            Err(e) => input_error("wgsl", e)?,
        }
    }
    Ok(())
}

/// Runs the pipeline under `catch_unwind`; panics (the test fails) on a panic
/// or a bug, naming the input. Returns how far it got.
fn check(src: &str) -> Reached {
    let mut reached = Reached::default();
    let shown = if src.len() > 2000 {
        let cut: String = src.chars().take(2000).collect();
        format!("{cut}… ({} bytes)", src.len())
    } else {
        src.to_string()
    };
    match catch_unwind(AssertUnwindSafe(|| pipeline(src, &mut reached))) {
        Ok(Ok(())) => reached,
        Ok(Err(bug)) => panic!("{bug}\n--- input ---\n{shown}"),
        Err(p) => {
            let msg = p
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            panic!("the pipeline panicked: {msg}\n--- input ---\n{shown}")
        }
    }
}

/// Splits `.field` text into tokens (comments dropped): names and numbers
/// (with their suffix), two-character operators, single characters.
fn tokens(src: &str) -> Vec<String> {
    let src: String = src
        .lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n");
    let cs: Vec<char> = src.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < cs.len() {
        let c = cs[i];
        if c.is_whitespace() {
            i += 1;
        } else if c.is_ascii_digit() {
            // A number: digits, fraction, exponent (with its sign), suffix.
            let start = i;
            while i < cs.len()
                && (cs[i].is_ascii_alphanumeric()
                    || (cs[i] == '.' && cs.get(i + 1) != Some(&'.'))
                    || (matches!(cs[i], '+' | '-') && matches!(cs[i - 1], 'e' | 'E')))
            {
                i += 1;
            }
            out.push(cs[start..i].iter().collect());
        } else if c.is_ascii_alphabetic() || c == '_' {
            let start = i;
            while i < cs.len() && (cs[i].is_ascii_alphanumeric() || cs[i] == '_') {
                i += 1;
            }
            out.push(cs[start..i].iter().collect());
        } else {
            let two: String = cs[i..(i + 2).min(cs.len())].iter().collect();
            let ops = [
                "<<", ">>", "<=", ">=", "==", "!=", "&&", "||", ":=", "+=", "..",
            ];
            if ops.contains(&two.as_str()) {
                out.push(two);
                i += 2;
            } else {
                out.push(c.to_string());
                i += 1;
            }
        }
    }
    out
}

/// Tokens a mutation may insert.
const VOCAB: &[&str] = &[
    "field", "state", "shared", "flux", "phase", "let", "emit", "for", "in", "over", "if", "d",
    "dt", "x", "i", "tid", "bid", "bdim", "gdim", "n", "t", "k", "init", "select", "fma", "min",
    "max", "pow", "sin", "sqrt", "log", "abs", "floor", "f32", "f64", "i32", "u32", "bool", "true",
    "false", "0", "1", "2", "1.0", "0.5", "-1", "3u", "7i", "(", ")", "{", "}", "[", "]", ",", ";",
    ":", "=", ":=", "+=", "..", "+", "-", "*", "/", "%", "<<", ">>", "&", "|", "^", "!", "&&",
    "||", "<", "<=", "==", "!=", ">", ">=",
];

/// Numbers at and past every type's edge.
const HUGE: &[&str] = &[
    "4294967295u",
    "4294967296",
    "4000000000u",
    "2147483648i",
    "2147483647i",
    "18446744073709551615",
    "99999999999999999999999",
    "1e39",
    "1e-46",
    "3.4028236e38",
    "0",
    "0u",
    "0.0",
];

/// A grammar-aware mutation of a token list.
#[derive(Clone, Debug)]
enum Mutation {
    Delete(usize),
    Duplicate(usize),
    Insert(usize, usize),
    Replace(usize, usize),
    /// Wraps the token in `depth` parentheses or unary operators.
    Nest(usize, usize, bool),
    /// Replaces the token with a chain of `len` copies joined by an operator.
    Chain(usize, usize, usize),
    /// Replaces a number with a huge or edge number.
    Huge(usize, usize),
    /// Puts a negative literal at the start of an index (after a `[`).
    NegativeIndex(usize, usize),
    /// Replaces the token with another of its class (operator, name, number,
    /// type, function): well-formed text that exercises the type checker and
    /// the later stages more than the parser.
    SameClass(usize, usize),
}

/// Token classes for [`Mutation::SameClass`]; names come from the input too.
const CLASSES: &[&[&str]] = &[
    &[
        "+", "-", "*", "/", "%", "&", "|", "^", "<<", ">>", "&&", "||", "<", "<=", "==", "!=", ">",
        ">=",
    ],
    &[
        "0",
        "1",
        "2",
        "1.0",
        "0.5",
        "3u",
        "7i",
        "0u",
        "1e30",
        "4294967295u",
        "2147483648i",
    ],
    &["f32", "f64", "i32", "u32", "bool"],
    &[
        "sin", "cos", "exp", "log", "sqrt", "tanh", "abs", "floor", "f32", "u32", "i32",
    ],
    &["min", "max", "pow"],
    &["i", "tid", "bid", "bdim", "gdim", "n", "t"],
];

/// Keywords and punctuation no mutation of a class touches.
fn is_name(t: &str) -> bool {
    t.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && !CLASSES[2..5].iter().any(|c| c.contains(&t))
        && ![
            "field", "state", "shared", "flux", "phase", "let", "emit", "for", "in", "over", "if",
            "d", "dt", "true", "false", "init", "select", "fma",
        ]
        .contains(&t)
}

/// The `i`-th (cyclically) operand of an expression: a name or number after
/// `=`, `:=`, `+=`, `(`, `,`, `[` or an operator (not a `d(x)` rate's state).
fn operand(toks: &[String], i: usize) -> Option<usize> {
    let starts = ["=", ":=", "+=", "(", ",", "["];
    let at: Vec<usize> = (1..toks.len())
        .filter(|&j| {
            let t = &toks[j];
            let prev = toks[j - 1].as_str();
            (is_name(t) || t.starts_with(|c: char| c.is_ascii_digit()))
                && (starts.contains(&prev) || CLASSES[0].contains(&prev))
                && !(prev == "(" && j >= 2 && toks[j - 2] == "d")
        })
        .collect();
    (!at.is_empty()).then(|| at[i % at.len()])
}

fn apply(toks: &mut Vec<String>, m: &Mutation) {
    if toks.is_empty() {
        return;
    }
    let at = |i: usize, toks: &Vec<String>| i % toks.len();
    match *m {
        Mutation::Delete(i) => {
            toks.remove(at(i, toks));
        }
        Mutation::Duplicate(i) => {
            let i = at(i, toks);
            toks.insert(i, toks[i].clone());
        }
        Mutation::Insert(i, v) => toks.insert(at(i, toks), VOCAB[v % VOCAB.len()].into()),
        Mutation::Replace(i, v) => {
            let i = at(i, toks);
            toks[i] = VOCAB[v % VOCAB.len()].into();
        }
        Mutation::Nest(i, depth, parens) => {
            let Some(i) = operand(toks, i) else { return };
            toks[i] = if parens {
                format!("{}{}{}", "(".repeat(depth), toks[i], ")".repeat(depth))
            } else {
                format!("{}{}", "-".repeat(depth), toks[i])
            };
        }
        Mutation::Chain(i, len, op) => {
            let ops = ["+", "-", "*", "/", "%", "&", "|", "^", "<<", "&&", "||"];
            let Some(i) = operand(toks, i) else { return };
            let sep = format!(" {} ", ops[op % ops.len()]);
            toks[i] = format!("({})", vec![toks[i].as_str(); len].join(&sep));
        }
        Mutation::Huge(i, h) => {
            let nums: Vec<usize> = (0..toks.len())
                .filter(|&j| toks[j].starts_with(|c: char| c.is_ascii_digit()))
                .collect();
            if !nums.is_empty() {
                let j = nums[i % nums.len()];
                toks[j] = HUGE[h % HUGE.len()].into();
            }
        }
        Mutation::NegativeIndex(i, v) => {
            let opens: Vec<usize> = (0..toks.len()).filter(|&j| toks[j] == "[").collect();
            if !opens.is_empty() {
                let j = opens[i % opens.len()];
                let neg = ["-1", "- 1 +", "-2147483648i", "0 - 1", "-1i", "-(3u) +"];
                toks.insert(j + 1, neg[v % neg.len()].into());
            }
        }
        Mutation::SameClass(i, v) => {
            let i = at(i, toks);
            let t = toks[i].as_str();
            let names: Vec<String>;
            let class: Vec<&str> = if is_name(t) {
                names = toks.iter().filter(|x| is_name(x)).cloned().collect();
                names
                    .iter()
                    .map(String::as_str)
                    .chain(CLASSES[5].iter().copied())
                    .collect()
            } else if t.starts_with(|c: char| c.is_ascii_digit()) {
                CLASSES[1].to_vec()
            } else {
                match CLASSES.iter().find(|c| c.contains(&t)) {
                    Some(c) => c.to_vec(),
                    None => return,
                }
            };
            toks[i] = class[v % class.len()].to_string();
        }
    }
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let i = 0usize..10_000;
    prop_oneof![
        3 => i.clone().prop_map(Mutation::Delete),
        2 => i.clone().prop_map(Mutation::Duplicate),
        3 => (i.clone(), 0..VOCAB.len()).prop_map(|(i, v)| Mutation::Insert(i, v)),
        3 => (i.clone(), 0..VOCAB.len()).prop_map(|(i, v)| Mutation::Replace(i, v)),
        2 => (i.clone(), prop::sample::select(vec![10usize, 255, 256, 300, 5000]), any::<bool>())
            .prop_map(|(i, d, p)| Mutation::Nest(i, d, p)),
        2 => (i.clone(), prop::sample::select(vec![3usize, 200, 255, 256, 12_000]), 0usize..11)
            .prop_map(|(i, l, o)| Mutation::Chain(i, l, o)),
        2 => (i.clone(), 0..HUGE.len()).prop_map(|(i, h)| Mutation::Huge(i, h)),
        2 => (i.clone(), 0usize..6).prop_map(|(i, v)| Mutation::NegativeIndex(i, v)),
        8 => (i, 0usize..64).prop_map(|(i, v)| Mutation::SameClass(i, v)),
    ]
}

/// Cases per property: 600, or `VGPU_FUZZ_CASES` for a longer campaign.
fn cases() -> u32 {
    std::env::var("VGPU_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(600)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases()))]

    #[test]
    fn mutated_examples_never_panic(seed in 0usize..64, ms in prop::collection::vec(mutation(), 1..4)) {
        let (_, src) = &seeds()[seed % seeds().len()];
        let mut toks = tokens(src);
        for m in &ms {
            apply(&mut toks, m);
        }
        check(&toks.join(" "));
    }

    #[test]
    fn random_text_never_panics(s in "[a-z0-9_ (){}\\[\\];:,.=+*/<>!&|^%-]{0,120}") {
        check(&s);
    }
}

#[test]
fn every_example_goes_through_the_pipeline() {
    for (name, src) in seeds() {
        let toks = tokens(src);
        // The tokenizer keeps the program: joined back, it compiles as written.
        let joined = toks.join(" ");
        let ks = compile_all(name, &joined).unwrap_or_else(|e| panic!("{name}: {e}\n{joined}"));
        let r = check(src);
        // f64 fields have no WGSL (refused by design, run on the CPU).
        let gpu = ks
            .iter()
            .all(|k| k.float_type() != vgpu_ir::ScalarType::F64);
        assert_eq!(
            (r.compiled, r.ran, r.validated),
            (1, 2, usize::from(gpu)),
            "{name}"
        );
    }
}

#[test]
fn every_single_token_deletion_duplication_and_replacement_of_the_examples() {
    let (mut inputs, mut total) = (0, Reached::default());
    for (_, src) in seeds() {
        let toks = tokens(src);
        for i in 0..toks.len() {
            let ms = [
                Mutation::Delete(i),
                Mutation::Duplicate(i),
                Mutation::SameClass(i, 1),
                Mutation::SameClass(i, 2 * i + 3),
                Mutation::SameClass(i, 5 * i + 7),
            ];
            for m in ms {
                let mut t = toks.clone();
                apply(&mut t, &m);
                let r = check(&t.join(" "));
                inputs += 1;
                total.compiled += r.compiled;
                total.ran += r.ran;
                total.validated += r.validated;
            }
        }
    }
    // Not vacuous: a good share of the mutants get through every stage.
    eprintln!("{inputs} mutants: {total:?}");
    assert!(inputs > 1000, "{inputs}");
    assert!(
        total.compiled * 10 > inputs && total.validated * 20 > inputs,
        "{inputs}: {total:?}"
    );
}

#[test]
fn regressions() {
    // Inputs that once panicked or misbehaved; each must now be a clean error.
    for src in [
        "field f() { state x = 1.0; d(x)/dt = -2147483648i * x; }",
        "field f() { state x = 1.0; d(x)/dt = ((((((((((((((((((((x)))))))))))))))))))); }",
        &format!(
            "field f() {{ state x = 1.0; d(x)/dt = {}x; }}",
            "-".repeat(5000)
        ),
        &format!(
            "field f() {{ state x = 1.0; d(x)/dt = {}x{}; }}",
            "(".repeat(5000),
            ")".repeat(5000)
        ),
        "field f(a: f32[]) { phase p for k in 1..3 { } }",
        "field f() { state x = 1.0; d(x)/dt = 1e999; }",
        "field f() { state x = 1.0; d(x)/dt = 99999999999999999999999 * x; }",
        "field f() { state x = 1.0; d(x)/dt = x << 1; }",
        "field f() { state x = 1.0; let i = 2; d(x)/dt = x; }",
        "field",
        "field f(",
        "field f() { state x = 1.0; d(x",
    ] {
        check(src);
    }
}

#[test]
fn nesting_just_under_the_limit_runs_on_a_small_stack() {
    // Parentheses, unary operators and chains one level under the limit go
    // through the whole pipeline on a 1 MiB stack (half a test thread's).
    let d = vgpu_ir::MAX_EXPR_DEPTH as usize - 8;
    let srcs = [
        format!(
            "field f() {{ state x = 1.0; d(x)/dt = {}x{}; }}",
            "(".repeat(d),
            ")".repeat(d)
        ),
        format!(
            "field f() {{ state x = 1.0; d(x)/dt = {}x; }}",
            "- ".repeat(d)
        ),
        format!(
            "field f() {{ state x = 1.0; d(x)/dt = {}; }}",
            vec!["x"; d].join(" * ")
        ),
        format!(
            "field f() {{ state x = 1.0; d(x)/dt = {}x{}; }}",
            "min(x, ".repeat(d / 2),
            ")".repeat(d / 2)
        ),
    ];
    std::thread::Builder::new()
        .stack_size(1 << 20)
        .spawn(move || {
            for s in &srcs {
                compile_all("deep.field", s).unwrap_or_else(|e| panic!("{e}"));
                check(s);
            }
        })
        .unwrap()
        .join()
        .unwrap();
}
