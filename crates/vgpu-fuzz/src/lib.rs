//! VGPU's fuzzing on stable Rust: targets for the `.field` front end, PTX, the
//! case.json reader and the `.npy` reader, grammar-aware mutators seeded from
//! the repository, and a driver that runs batches of inputs in child processes
//! so that aborts and stack overflows are caught too (docs/FUZZING.md).
//!
//! Every input is a function of `(seed, iteration)` ([`generate`]), so a
//! finding can be regenerated; each is saved under
//! `crates/vgpu-fuzz/regressions/<target>/<hash>.<ext>` and the test
//! `tests/regressions.rs` runs every saved input again. Errors are fine;
//! panics, aborts, hangs and errors that stand for a bug are not.
#![deny(missing_docs)]

pub mod corpus;
pub mod driver;
pub mod mutate;
pub mod npy;
pub mod rng;
pub mod targets;

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Mutex;

pub use corpus::Corpus;
pub use driver::{run, RunConfig, Summary};
pub use targets::{Outcome, Runner};

/// A fuzz target.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Target {
    /// `.field` text: compile, run a few trajectories on the CPU, emit WGSL
    /// and validate it with naga.
    Field,
    /// PTX text: parse, decode every entry, launch a few threads under the
    /// watchdog.
    Ptx,
    /// case.json text, run by the case runner in a sandbox with small files.
    CaseJson,
    /// `.npy` bytes: the CLI's header check, then its reads.
    Npy,
}

impl Target {
    /// Every target.
    pub const ALL: [Target; 4] = [Target::Field, Target::Ptx, Target::CaseJson, Target::Npy];

    /// The name on the command line and of the regressions folder.
    pub fn name(self) -> &'static str {
        match self {
            Target::Field => "field",
            Target::Ptx => "ptx",
            Target::CaseJson => "case-json",
            Target::Npy => "npy",
        }
    }

    /// The extension of saved inputs.
    pub fn ext(self) -> &'static str {
        match self {
            Target::Field => "field",
            Target::Ptx => "ptx",
            Target::CaseJson => "json",
            Target::Npy => "npy",
        }
    }
}

impl std::str::FromStr for Target {
    type Err = FuzzError;
    fn from_str(s: &str) -> Result<Target, FuzzError> {
        Target::ALL
            .into_iter()
            .find(|t| t.name() == s)
            .ok_or_else(|| FuzzError::UnknownTarget(s.to_string()))
    }
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The driver's own errors (a target's errors are [`Outcome::Rejected`]).
#[derive(Debug, thiserror::Error)]
pub enum FuzzError {
    /// No such target.
    #[error("unknown target `{0}` (field, ptx, case-json or npy)")]
    UnknownTarget(String),
    /// A file or folder could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The path.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
    /// The repository holds no seeds for a target.
    #[error("no seeds for target {target} under {root}")]
    NoSeeds {
        /// The target.
        target: &'static str,
        /// The repository root searched.
        root: String,
    },
    /// No repository root (with `examples/` and `crates/vgpu-fuzz/`) at or
    /// above the current directory or the executable.
    #[error("no VGPU repository at or above {cwd} or the executable: run from the repository root or pass --root")]
    NoRoot {
        /// The current directory.
        cwd: String,
    },
    /// A child process could not be started or spoke out of protocol.
    #[error("child process: {0}")]
    Child(String),
}

/// How an input broke a target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FindingKind {
    /// The target panicked.
    Panic,
    /// The target returned an error that stands for a bug (an error without a
    /// place, an ill-formed kernel, WGSL that naga refuses).
    Bug,
    /// The process died (abort, stack overflow, signal).
    Crash,
    /// The input ran past the hang limit.
    Hang,
}

impl FindingKind {
    /// The kind's name in reports and the child protocol.
    pub fn name(self) -> &'static str {
        match self {
            FindingKind::Panic => "panic",
            FindingKind::Bug => "bug",
            FindingKind::Crash => "crash",
            FindingKind::Hang => "hang",
        }
    }

    /// The kind of a name written by [`FindingKind::name`].
    pub fn parse(s: &str) -> Option<FindingKind> {
        [
            FindingKind::Panic,
            FindingKind::Bug,
            FindingKind::Crash,
            FindingKind::Hang,
        ]
        .into_iter()
        .find(|k| k.name() == s)
    }
}

/// An input that broke a target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// How.
    pub kind: FindingKind,
    /// What distinguishes this failure from others (the panic's source
    /// location, the bug's message without numbers); findings with the same
    /// signature are one.
    pub signature: String,
    /// The message.
    pub message: String,
}

/// The message and place of the last panic of this process.
static LAST_PANIC: Mutex<Option<(String, String)>> = Mutex::new(None);

/// Replaces the panic hook with one that records the message and location
/// for [`check`] and prints nothing (a fuzzer's panics are its findings).
pub fn install_quiet_panic_hook() {
    std::panic::set_hook(Box::new(|info| {
        let msg = info
            .payload()
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| info.payload().downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default();
        let loc = info
            .location()
            .map(|l| format!("{}:{}", portable_path(l.file()), l.line()))
            .unwrap_or_default();
        if let Ok(mut g) = LAST_PANIC.lock() {
            *g = Some((msg, loc));
        }
    }));
}

/// A source path without the machine's part: a dependency's path from its
/// crate folder on (`ndarray-npy-0.10.0/src/…`), not the cargo home it
/// lies in, so that a signature is the same on every machine.
pub fn portable_path(file: &str) -> &str {
    match file.find("/registry/src/") {
        Some(i) => {
            let rest = &file[i + "/registry/src/".len()..];
            rest.find('/').map_or(rest, |j| &rest[j + 1..])
        }
        None => file,
    }
}

/// `s` without digits (so that findings differing only in numbers are one),
/// cut at 100 characters.
pub fn without_numbers(s: &str) -> String {
    s.chars()
        .filter(|c| !c.is_ascii_digit())
        .take(100)
        .collect()
}

/// Runs `input` through `runner`'s target, catching a panic. `Ok` for an
/// input the target accepted or refused cleanly; `Err` for a finding. (An
/// abort or stack overflow ends the process: the driver runs inputs in child
/// processes for that.)
pub fn check(runner: &mut Runner, input: &[u8]) -> Result<Outcome, Finding> {
    if let Ok(mut g) = LAST_PANIC.lock() {
        *g = None;
    }
    match catch_unwind(AssertUnwindSafe(|| runner.run(input))) {
        Ok(Ok(o)) => Ok(o),
        Ok(Err(bug)) => Err(Finding {
            kind: FindingKind::Bug,
            signature: format!("bug: {}", without_numbers(&bug)),
            message: bug,
        }),
        Err(p) => {
            let (msg, loc) = LAST_PANIC
                .lock()
                .ok()
                .and_then(|mut g| g.take())
                .unwrap_or_else(|| {
                    let m = p
                        .downcast_ref::<String>()
                        .cloned()
                        .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                        .unwrap_or_default();
                    (m, String::new())
                });
            Err(Finding {
                kind: FindingKind::Panic,
                signature: format!("panic at {loc}"),
                message: format!("{msg} (at {loc})"),
            })
        }
    }
}

/// Input `iteration` of the run with `seed`: a seed of `corpus` mutated by the
/// target's mutators (never a seed as it is: `tests/regressions.rs` runs
/// every seed, and a long run would repeat them thousands of times). A pure
/// function of its arguments.
pub fn generate(corpus: &Corpus, seed: u64, iteration: u64) -> Vec<u8> {
    let mut rng = rng::Rng::for_input(seed, iteration);
    let s = &corpus.seeds[rng.below(corpus.seeds.len())];
    // Drawn for the inputs' sake: dropping the draw would change every input
    // of every seed (and the iterations the notes of regressions/ give).
    let _formerly_plain = rng.one_in(64);
    let other = &corpus.seeds[rng.below(corpus.seeds.len())];
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    match corpus.target {
        Target::Field => mutate::mutate_text(&text(s), &text(other), &mutate::FIELD, &mut rng),
        Target::Ptx => mutate::mutate_text(&text(s), &text(other), &mutate::PTX, &mut rng),
        Target::CaseJson => mutate::mutate_text(&text(s), &text(other), &mutate::JSON, &mut rng),
        Target::Npy => npy::mutate(s, &mut rng),
    }
}

/// Runs each of `files` through `target` in this process, on a thread with a
/// `stack_kib` stack, printing each outcome; returns how many panicked or
/// hit a bug. (An abort or stack overflow ends the process.) The seeds are
/// read from the repository [`corpus::find_root`] finds.
pub fn exec_files(
    target: Target,
    files: &[std::path::PathBuf],
    stack_kib: usize,
) -> Result<usize, FuzzError> {
    install_quiet_panic_hook();
    let corpus = Corpus::load(target, &corpus::find_root()?)?;
    let mut runner = Runner::new(&corpus)?;
    let mut inputs = Vec::new();
    for f in files {
        let b = std::fs::read(f).map_err(|source| FuzzError::Io {
            path: f.display().to_string(),
            source,
        })?;
        inputs.push((f.display().to_string(), b));
    }
    std::thread::scope(|s| {
        std::thread::Builder::new()
            .stack_size(stack_kib << 10)
            .spawn_scoped(s, move || {
                let mut bad = 0;
                for (name, b) in &inputs {
                    match check(&mut runner, b) {
                        Ok(o) => println!("{name}: {o:?}"),
                        Err(f) => {
                            bad += 1;
                            println!("{name}: {} {}", f.kind.name(), f.message);
                        }
                    }
                }
                bad
            })
            .map_err(|e| FuzzError::Child(format!("cannot start a thread: {e}")))?
            .join()
            .map_err(|_| FuzzError::Child("the input thread panicked".into()))
    })
}
