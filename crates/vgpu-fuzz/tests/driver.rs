//! The driver as a long campaign uses it (docs/FUZZING.md): the binary run
//! from the repository, re-executing itself for its child processes, the
//! iterations split over several jobs (each input run once), inputs that
//! depend on the seed, and a summary that counts them.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use vgpu_fuzz::{corpus, generate, Corpus, Target};

fn root() -> PathBuf {
    std::fs::canonicalize(corpus::default_root()).unwrap()
}

#[test]
fn a_run_splits_its_iterations_over_jobs_and_counts_them() {
    let out = std::env::temp_dir().join(format!("vgpu-fuzz-driver-test-{}", std::process::id()));
    std::fs::create_dir_all(&out).unwrap();
    // From a folder inside the repository, without --root: the seeds are found
    // above the current directory. 130 inputs in batches of 20 over 3 jobs.
    let o = Command::new(env!("CARGO_BIN_EXE_vgpu-fuzz"))
        .current_dir(root().join("examples"))
        .args([
            "run",
            "--target",
            "npy",
            "--iterations",
            "130",
            "--jobs",
            "3",
        ])
        .args(["--batch", "20", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&out);
    let stdout = String::from_utf8_lossy(&o.stdout);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("target npy, seed 1, 3 job(s), 130 inputs"),
        "{stderr}"
    );
    let line = stdout.lines().next().unwrap_or("");
    assert!(line.starts_with("target npy: 130 executions in "), "{line}");
    assert!(line.ends_with("0 finding(s), 0 new"), "{line}");
    let counts: Vec<u64> = line
        .split(['(', ')', ';', ',', ' '])
        .filter_map(|w| w.parse().ok())
        .collect();
    // executions, [rate], accepted, rejected: accepted + rejected = 130.
    let n = counts.len();
    assert_eq!(counts[n - 4] + counts[n - 3], 130, "{line}");
}

#[test]
fn inputs_are_distinct_across_iterations_and_seeds() {
    for t in [Target::Field, Target::Ptx, Target::Npy] {
        let c = Corpus::load(t, &root()).unwrap();
        let one: HashSet<Vec<u8>> = (0..1000).map(|i| generate(&c, 1, i)).collect();
        // Mutations now and then coincide (the same token deleted) or give a
        // seed back (a token replaced by itself); no input is a seed by design.
        assert!(one.len() >= 950, "{t}: {} distinct of 1000", one.len());
        let plain = c.seeds.iter().filter(|s| one.contains(*s)).count();
        eprintln!("{t}: {} distinct, {plain} seeds", one.len());
        assert!(plain <= 30, "{t}: {plain} of 1000 inputs are seeds");
        // Another seed, another input at every iteration (a few coincide:
        // `.npy` header mutations have few outcomes).
        let same = (0..1000)
            .filter(|&i| generate(&c, 2, i) == generate(&c, 1, i))
            .count();
        assert!(
            same <= 20,
            "{t}: seeds 1 and 2 agree on {same} of 1000 inputs"
        );
    }
}

#[test]
fn the_repository_is_found_above_a_folder_or_the_executable() {
    let r = root();
    assert_eq!(
        corpus::root_above(&r.join("crates/vgpu-fuzz/src")),
        Some(r.clone())
    );
    assert_eq!(corpus::root_above(&r), Some(r.clone()));
    assert!(corpus::root_above(Path::new("/")).is_none());
    // The test binary lies in the repository's target/.
    let exe = std::env::current_exe().unwrap();
    if exe.starts_with(&r) {
        assert_eq!(corpus::root_above(&exe), Some(r));
    }
}
