//! The driver: batches of inputs run in child processes (this binary's
//! `batch` command), so that an abort or a stack overflow kills a child and
//! not the run. A child announces each input before running it; when it dies
//! (or an input runs past the hang limit) the announced input is run alone in
//! a fresh child to confirm it, and the batch goes on after it. Findings are
//! saved as `regressions/<target>/<hash>.<ext>` with a `<hash>.txt` note;
//! a finding whose signature a note in `known/` (crashes not fixed yet)
//! holds, or one this run already saved, is not new. The notes of
//! `regressions/` are fixed bugs: the same signature again is a new finding.

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::{check, generate, Corpus, Finding, FindingKind, FuzzError, Outcome, Runner, Target};

/// What to run.
#[derive(Debug, Clone)]
pub struct RunConfig {
    /// The target.
    pub target: Target,
    /// The run's seed: input `i` is `generate(corpus, seed, i)`.
    pub seed: u64,
    /// Stop after this many inputs (`None`: only the time limit).
    pub iterations: Option<u64>,
    /// Stop after this long (`None`: only the iteration limit).
    pub seconds: Option<f64>,
    /// Child processes running at once.
    pub jobs: usize,
    /// Inputs per child process.
    pub batch: u64,
    /// The repository root the seeds are read from.
    pub root: PathBuf,
    /// The folder holding `regressions/` and `known/` (this crate's).
    pub out: PathBuf,
    /// Stack of the thread that runs the inputs, in KiB.
    pub stack_kib: usize,
    /// An input running longer than this is a hang.
    pub hang_secs: f64,
    /// The program to start as a child (this binary).
    pub exe: PathBuf,
}

/// A finding of a run, saved (or already known).
#[derive(Debug, Clone)]
pub struct Saved {
    /// The iteration that produced it.
    pub iteration: u64,
    /// The finding.
    pub finding: Finding,
    /// Where the input was saved; `None` when its signature was known.
    pub path: Option<PathBuf>,
}

/// The result of a run.
#[derive(Debug, Clone, Default)]
pub struct Summary {
    /// Inputs executed.
    pub executions: u64,
    /// Inputs that went through every stage.
    pub accepted: u64,
    /// Inputs refused with a clean error.
    pub rejected: u64,
    /// Every finding (new or known).
    pub findings: Vec<Saved>,
    /// Wall-clock time.
    pub elapsed: Duration,
}

impl Summary {
    /// Findings saved by this run (signatures not seen before).
    pub fn new_findings(&self) -> usize {
        self.findings.iter().filter(|s| s.path.is_some()).count()
    }
}

fn io(path: &Path, source: std::io::Error) -> FuzzError {
    FuzzError::Io {
        path: path.display().to_string(),
        source,
    }
}

/// Milliseconds since the epoch (a deadline a child can check).
fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// Escapes a message onto one protocol line.
fn one_line(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('\n', "\\n")
        .replace('\t', " ")
}

/// The child side: runs inputs `start..start + count` (stopping at
/// `deadline_ms`, milliseconds since the epoch, 0 for none) on a thread with a
/// `stack_kib` stack, writing the protocol to `out`: `S <i>` before input
/// `i`, `F <i> <kind>\t<signature>\t<message>` for a finding, and
/// `D <executed> <accepted> <rejected>` at the end.
pub fn run_batch(
    corpus: &Corpus,
    seed: u64,
    start: u64,
    count: u64,
    deadline_ms: u64,
    stack_kib: usize,
    out: &mut (dyn Write + Send),
) -> Result<(), FuzzError> {
    crate::install_quiet_panic_hook();
    let mut runner = Runner::new(corpus)?;
    let corpus = corpus.clone();
    std::thread::scope(|s| {
        std::thread::Builder::new()
            .name("fuzz".into())
            .stack_size(stack_kib << 10)
            .spawn_scoped(s, move || -> std::io::Result<()> {
                let (mut acc, mut rej, mut done) = (0u64, 0u64, 0u64);
                for i in start..start.saturating_add(count) {
                    if deadline_ms != 0 && now_ms() >= deadline_ms {
                        break;
                    }
                    // Announced before it is generated: a slow generation
                    // is blamed on the right input too.
                    writeln!(out, "S {i}")?;
                    out.flush()?;
                    let input = generate(&corpus, seed, i);
                    match check(&mut runner, &input) {
                        Ok(Outcome::Accepted) => acc += 1,
                        Ok(Outcome::Rejected) => rej += 1,
                        Err(f) => writeln!(
                            out,
                            "F {i} {}\t{}\t{}",
                            f.kind.name(),
                            one_line(&f.signature),
                            one_line(&f.message)
                        )?,
                    }
                    done += 1;
                }
                writeln!(out, "D {done} {acc} {rej}")?;
                out.flush()
            })
            .map_err(|e| FuzzError::Child(format!("cannot start the fuzz thread: {e}")))?
            .join()
            .map_err(|_| FuzzError::Child("the fuzz thread panicked outside a target".into()))?
            .map_err(|e| FuzzError::Child(format!("writing the protocol: {e}")))
    })
}

/// What one child process reported.
#[derive(Debug, Default)]
struct ChildReport {
    /// The last input announced.
    last_started: Option<u64>,
    /// `D` line: executed, accepted, rejected.
    done: Option<(u64, u64, u64)>,
    /// In-process findings.
    findings: Vec<(u64, Finding)>,
    /// It ran past the hang limit and was killed.
    hung: bool,
    /// Exit status and the end of its stderr when it did not finish.
    death: Option<String>,
}

/// Starts a child on `start..start + count` and follows it to its end.
fn run_child(
    cfg: &RunConfig,
    start: u64,
    count: u64,
    deadline_ms: u64,
) -> Result<ChildReport, FuzzError> {
    let mut child: Child = Command::new(&cfg.exe)
        .args(["batch", "--target", cfg.target.name()])
        .args(["--seed", &cfg.seed.to_string()])
        .args(["--start", &start.to_string(), "--count", &count.to_string()])
        .args(["--deadline-ms", &deadline_ms.to_string()])
        .args(["--stack-kib", &cfg.stack_kib.to_string()])
        .arg("--root")
        .arg(&cfg.root)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| FuzzError::Child(format!("{}: {e}", cfg.exe.display())))?;
    let stdout = child.stdout.take().expect("piped");
    let mut stderr = child.stderr.take().expect("piped");
    let err_thread = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = stderr.read_to_end(&mut s);
        s
    });
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut rep = ChildReport::default();
    let hang = Duration::from_secs_f64(cfg.hang_secs);
    loop {
        match rx.recv_timeout(hang) {
            Ok(line) => parse_line(&line, &mut rep),
            Err(mpsc::RecvTimeoutError::Timeout) => {
                let _ = child.kill();
                rep.hung = true;
                break;
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
    }
    let status = child
        .wait()
        .map_err(|e| FuzzError::Child(format!("waiting for a child: {e}")))?;
    let err = err_thread.join().unwrap_or_default();
    if !rep.hung && (rep.done.is_none() || !status.success()) {
        let text = String::from_utf8_lossy(&err);
        let tail: Vec<&str> = text.lines().rev().take(3).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        rep.death = Some(format!("{status}: {}", tail.join(" | ")));
    }
    Ok(rep)
}

/// Undoes [`one_line`].
fn unescape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut cs = s.chars();
    while let Some(c) = cs.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match cs.next() {
            Some('n') => out.push('\n'),
            Some(o) => out.push(o),
            None => out.push('\\'),
        }
    }
    out
}

fn parse_line(line: &str, rep: &mut ChildReport) {
    if let Some(i) = line.strip_prefix("S ") {
        rep.last_started = i.trim().parse().ok();
    } else if let Some(d) = line.strip_prefix("D ") {
        let v: Vec<u64> = d.split(' ').filter_map(|x| x.parse().ok()).collect();
        if v.len() == 3 {
            rep.done = Some((v[0], v[1], v[2]));
        }
    } else if let Some(f) = line.strip_prefix("F ") {
        let mut parts = f.splitn(3, '\t');
        let head = parts.next().unwrap_or("");
        let (i, kind) = head.split_once(' ').unwrap_or((head, ""));
        if let (Ok(i), Some(kind)) = (i.parse(), FindingKind::parse(kind)) {
            rep.findings.push((
                i,
                Finding {
                    kind,
                    signature: unescape(parts.next().unwrap_or("")),
                    message: unescape(parts.next().unwrap_or("")),
                },
            ));
        }
    }
}

/// The findings' store: the signatures not to save (those of `known/` and
/// those this run saved), and the folder new ones go to.
struct Store {
    target: Target,
    dir: PathBuf,
    known: BTreeSet<String>,
    summary: Summary,
}

/// The signatures of the notes (`*.txt`, first line `signature: …`) in `dir`.
fn signatures(dir: &Path) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.extension().is_some_and(|x| x == "txt") {
            if let Ok(t) = std::fs::read_to_string(&p) {
                if let Some(s) = t.lines().next().and_then(|l| l.strip_prefix("signature: ")) {
                    out.insert(s.to_string());
                }
            }
        }
    }
    out
}

impl Store {
    fn record(
        &mut self,
        corpus: &Corpus,
        seed: u64,
        iteration: u64,
        finding: Finding,
    ) -> Result<(), FuzzError> {
        let mut path = None;
        if self.known.insert(finding.signature.clone()) {
            let input = generate(corpus, seed, iteration);
            let hash = format!("{:016x}", crate::rng::fnv1a(&input));
            std::fs::create_dir_all(&self.dir).map_err(|e| io(&self.dir, e))?;
            let p = self.dir.join(format!("{hash}.{}", self.target.ext()));
            std::fs::write(&p, &input).map_err(|e| io(&p, e))?;
            let note = self.dir.join(format!("{hash}.txt"));
            let text = format!(
                "signature: {}\nkind: {}\ntarget: {}\nseed: {seed}\niteration: {iteration}\nmessage: {}\n",
                finding.signature,
                finding.kind.name(),
                self.target.name(),
                finding.message
            );
            std::fs::write(&note, text).map_err(|e| io(&note, e))?;
            eprintln!(
                "NEW {} at iteration {iteration}: {}\n    saved {}",
                finding.kind.name(),
                finding.message.lines().next().unwrap_or(""),
                p.display()
            );
            path = Some(p);
        }
        self.summary.findings.push(Saved {
            iteration,
            finding,
            path,
        });
        Ok(())
    }
}

/// Runs `cfg`: `jobs` workers each take batches of inputs and run them in
/// child processes until the iteration or time limit; prints the rate every
/// 10 seconds. Returns the summary; new findings are saved.
pub fn run(cfg: &RunConfig) -> Result<Summary, FuzzError> {
    let corpus = Corpus::load(cfg.target, &cfg.root)?;
    let regressions = cfg.out.join("regressions").join(cfg.target.name());
    let known = signatures(&cfg.out.join("known").join(cfg.target.name()));
    let store = Arc::new(Mutex::new(Store {
        target: cfg.target,
        dir: regressions,
        known,
        summary: Summary::default(),
    }));
    let t0 = Instant::now();
    let deadline_ms = cfg
        .seconds
        .map_or(0, |s| now_ms() + (s * 1000.0).max(1.0) as u64);
    let limit = cfg.iterations.unwrap_or(u64::MAX);
    let next = AtomicU64::new(0);
    let executed = AtomicU64::new(0);
    let time_up = || deadline_ms != 0 && now_ms() >= deadline_ms;
    let worker = || -> Result<(), FuzzError> {
        loop {
            let start = next.fetch_add(cfg.batch, Ordering::Relaxed);
            if start >= limit || time_up() {
                return Ok(());
            }
            let end = start.saturating_add(cfg.batch).min(limit);
            let mut from = start;
            while from < end && !time_up() {
                let rep = run_child(cfg, from, end - from, deadline_ms)?;
                let mut st = store
                    .lock()
                    .map_err(|_| FuzzError::Child("store poisoned".into()))?;
                for (i, f) in rep.findings {
                    st.record(&corpus, cfg.seed, i, f)?;
                }
                if let Some((d, a, r)) = rep.done {
                    st.summary.executions += d;
                    st.summary.accepted += a;
                    st.summary.rejected += r;
                    executed.fetch_add(d, Ordering::Relaxed);
                    break;
                }
                // It died or hung: the announced input is the suspect.
                let Some(bad) = rep.last_started else {
                    return Err(FuzzError::Child(format!(
                        "a child died before its first input: {}",
                        rep.death.unwrap_or_default()
                    )));
                };
                let ran = bad + 1 - from;
                st.summary.executions += ran;
                executed.fetch_add(ran, Ordering::Relaxed);
                drop(st);
                // Confirm it alone, without a deadline.
                let alone = run_child(cfg, bad, 1, 0)?;
                let finding = if alone.hung || rep.hung {
                    Finding {
                        kind: FindingKind::Hang,
                        signature: "hang".into(),
                        message: format!(
                            "ran past {} s (alone: {})",
                            cfg.hang_secs,
                            if alone.hung { "hangs too" } else { "finishes" }
                        ),
                    }
                } else {
                    let death = alone
                        .death
                        .clone()
                        .or(rep.death.clone())
                        .unwrap_or_default();
                    let note = if alone.death.is_some() {
                        ""
                    } else {
                        " (not reproduced alone)"
                    };
                    Finding {
                        kind: FindingKind::Crash,
                        signature: format!("crash: {}", crate::without_numbers(&death)),
                        message: format!("{death}{note}"),
                    }
                };
                store
                    .lock()
                    .map_err(|_| FuzzError::Child("store poisoned".into()))?
                    .record(&corpus, cfg.seed, bad, finding)?;
                from = bad + 1;
            }
        }
    };
    let result: Result<(), FuzzError> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..cfg.jobs.max(1)).map(|_| s.spawn(worker)).collect();
        let done = || handles.iter().all(|h| h.is_finished());
        let mut last = Instant::now();
        while !done() {
            std::thread::sleep(Duration::from_millis(100));
            if last.elapsed() >= Duration::from_secs(10) {
                last = Instant::now();
                let n = executed.load(Ordering::Relaxed);
                let secs = t0.elapsed().as_secs_f64();
                eprintln!("  {n} executions, {:.0}/s, {:.0} s", n as f64 / secs, secs);
            }
        }
        handles.into_iter().try_for_each(|h| {
            h.join()
                .unwrap_or_else(|_| Err(FuzzError::Child("a worker panicked".into())))
        })
    });
    result?;
    let mut summary = std::mem::take(
        &mut store
            .lock()
            .map_err(|_| FuzzError::Child("store poisoned".into()))?
            .summary,
    );
    summary.elapsed = t0.elapsed();
    Ok(summary)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_speaks_the_protocol_the_driver_reads() {
        let corpus = Corpus::load(Target::Npy, &crate::corpus::default_root()).unwrap();
        let mut out = Vec::new();
        run_batch(&corpus, 3, 10, 5, 0, 2048, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        let mut rep = ChildReport::default();
        for l in text.lines() {
            parse_line(l, &mut rep);
        }
        assert_eq!(rep.last_started, Some(14), "{text}");
        let (d, a, r) = rep.done.expect("a D line");
        assert_eq!(d, 5);
        assert_eq!(a + r + rep.findings.len() as u64, 5);
    }

    #[test]
    fn findings_round_trip_through_one_line() {
        let mut rep = ChildReport::default();
        let line = format!(
            "F 7 panic\t{}\t{}",
            one_line("panic at a.rs:1"),
            one_line("x\ny\\n")
        );
        parse_line(&line, &mut rep);
        assert_eq!(
            rep.findings,
            vec![(
                7,
                Finding {
                    kind: FindingKind::Panic,
                    signature: "panic at a.rs:1".into(),
                    message: "x\ny\\n".into()
                }
            )]
        );
    }
}
