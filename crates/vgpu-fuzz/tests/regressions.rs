//! Every input the fuzzer saved under `regressions/<target>/` runs through its
//! target again and must be accepted or refused cleanly (no panic, no bug);
//! every seed of every target too, and some seeds must get through every
//! stage (so the targets exercise more than error paths). Inputs that still
//! crash VGPU live in `known/` (listed in docs/FUZZING.md) and are not run here.

use std::path::{Path, PathBuf};

use vgpu_fuzz::{check, corpus, Corpus, Outcome, Runner, Target};

/// Runs `f` on a thread with a 2 MiB stack (the fuzzer's default).
fn on_small_stack<T: Send>(f: impl FnOnce() -> T + Send) -> T {
    std::thread::scope(|s| {
        std::thread::Builder::new()
            .stack_size(2 << 20)
            .spawn_scoped(s, f)
            .expect("a thread")
            .join()
            .expect("no panic outside a target")
    })
}

fn saved(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_file() && p.extension().is_some_and(|e| e != "txt"))
        .collect();
    v.sort();
    v
}

#[test]
fn every_saved_regression_is_a_clean_outcome() {
    vgpu_fuzz::install_quiet_panic_hook();
    let base = Path::new(env!("CARGO_MANIFEST_DIR")).join("regressions");
    let mut ran = 0;
    for t in Target::ALL {
        let files = saved(&base.join(t.name()));
        if files.is_empty() {
            continue;
        }
        let corpus = Corpus::load(t, &corpus::default_root()).expect("seeds");
        let mut runner = Runner::new(&corpus).expect("a runner");
        for f in files {
            assert!(
                f.extension().is_some_and(|e| e == t.ext()),
                "{}",
                f.display()
            );
            let input = std::fs::read(&f).expect("readable");
            let r = on_small_stack(|| check(&mut runner, &input));
            assert!(r.is_ok(), "{}: {:?}", f.display(), r.err());
            ran += 1;
        }
    }
    eprintln!("{ran} saved regressions");
}

#[test]
fn every_known_crash_has_its_note() {
    // known/<target>/<hash>.<ext> with <hash>.txt: the signature that keeps
    // the driver from reporting it as new.
    let base = Path::new(env!("CARGO_MANIFEST_DIR")).join("known");
    for t in Target::ALL {
        for f in saved(&base.join(t.name())) {
            let note = f.with_extension("txt");
            let text = std::fs::read_to_string(&note)
                .unwrap_or_else(|e| panic!("{}: {e}", note.display()));
            assert!(text.starts_with("signature: "), "{}", note.display());
            let hash = format!(
                "{:016x}",
                vgpu_fuzz::rng::fnv1a(&std::fs::read(&f).unwrap())
            );
            assert_eq!(
                f.file_stem().unwrap().to_string_lossy(),
                hash,
                "{}",
                f.display()
            );
        }
    }
}

#[test]
fn every_seed_runs_and_some_get_through_every_stage() {
    vgpu_fuzz::install_quiet_panic_hook();
    for t in Target::ALL {
        let corpus = Corpus::load(t, &corpus::default_root()).expect("seeds");
        let mut runner = Runner::new(&corpus).expect("a runner");
        let mut accepted = 0;
        for (i, s) in corpus.seeds.iter().enumerate() {
            match on_small_stack(|| check(&mut runner, s)) {
                Ok(Outcome::Accepted) => accepted += 1,
                Ok(Outcome::Rejected) => {}
                Err(f) => panic!("{t} seed {i}: {f:?}"),
            }
        }
        eprintln!("{t}: {} seeds, {accepted} accepted", corpus.seeds.len());
        assert!(
            accepted * 3 >= corpus.seeds.len(),
            "{t}: only {accepted} of {} seeds get through",
            corpus.seeds.len()
        );
    }
}

#[test]
fn mutants_are_reproducible_and_reach_every_stage() {
    vgpu_fuzz::install_quiet_panic_hook();
    for t in Target::ALL {
        let corpus = Corpus::load(t, &corpus::default_root()).expect("seeds");
        let mut runner = Runner::new(&corpus).expect("a runner");
        let (mut accepted, mut rejected) = (0, 0);
        for i in 0..200 {
            let input = vgpu_fuzz::generate(&corpus, 9, i);
            assert_eq!(input, vgpu_fuzz::generate(&corpus, 9, i));
            match on_small_stack(|| check(&mut runner, &input)) {
                Ok(Outcome::Accepted) => accepted += 1,
                Ok(Outcome::Rejected) => rejected += 1,
                // A finding here is a real bug: the known ones are in known/.
                Err(_) => {}
            }
        }
        assert!(
            accepted > 0 && rejected > 0,
            "{t}: {accepted} accepted, {rejected} rejected"
        );
    }
}
