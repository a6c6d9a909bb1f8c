//! The watchdog of a counted loop through barriers (vgpu-ir's
//! wgsl/cfg/watchdog.rs, `fits_code`): on an entry where no thread's count
//! can pass the limit within the loop's bound on its visits, the workgroup
//! skips the header's test. That must never change an outcome: for the
//! loops of `tests/kernels/counted.ptx` (the latch testing before its step,
//! so that the bound is met exactly, and after it), the smallest watchdog
//! limit at which the checked GPU kernel runs to the end is the same as for
//! its WGSL with the test always made (`wdok` held at 0; the full kernel,
//! with the loop's checked copy, that a launch falls back to), found by
//! bisection over `vgpu ptx run --watchdog`; at that limit every thread's
//! sum is the loop's. Skipped without an adapter unless `VGPU_REQUIRE_GPU=1`.

mod common;

use common::ptx_gpu::no_adapter;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A run of `entry` of counted.ptx on the GPU (one block of 64 threads,
/// bound `n`) under watchdog `limit`, with `env` (a variable and a folder:
/// `VGPU_LOAD_WGSL`'s WGSL, `VGPU_DUMP_WGSL`'s dump) where given: whether it
/// ran to the end, and its output file.
fn runs(
    tmp: &Path,
    entry: &str,
    n: u32,
    limit: u64,
    env: Option<(&str, &Path)>,
) -> (bool, PathBuf) {
    let ptx = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/kernels/counted.ptx");
    let out = tmp.join("o");
    std::fs::create_dir_all(&out).unwrap();
    let input = tmp.join("out.bin");
    std::fs::write(&input, [0u8; 256]).unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_vgpu"));
    cmd.args(["ptx", "run"])
        .arg(&ptx)
        .args([
            "--entry", entry, "--grid", "1,1,1", "--block", "64,1,1", "--arg",
        ])
        .arg(&input)
        .arg("--arg")
        .arg(format!("s32:{n}"))
        .args([
            "--backend",
            "gpu",
            "--watchdog",
            &limit.to_string(),
            "--out-dir",
        ])
        .arg(&out);
    if let Some((var, dir)) = env {
        cmd.env(var, dir);
    }
    let o = cmd.output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    if !o.status.success() {
        assert!(
            err.contains("watchdog"),
            "{entry} n={n} limit={limit}: not a watchdog fault: {err}"
        );
    }
    (o.status.success(), out.join("out.bin"))
}

/// The smallest limit in `1..=hi` at which `entry` runs to the end
/// (an outcome monotone in the limit), bisected.
fn threshold(tmp: &Path, entry: &str, n: u32, hi: u64, load: Option<&Path>) -> u64 {
    let load = load.map(|d| ("VGPU_LOAD_WGSL", d));
    assert!(
        runs(tmp, entry, n, hi, load).0,
        "{entry} n={n}: faults at {hi}"
    );
    let (mut lo, mut hi) = (0u64, hi);
    while hi - lo > 1 {
        let mid = (lo + hi) / 2;
        if runs(tmp, entry, n, mid, load).0 {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    hi
}

#[test]
fn skipping_the_test_of_a_counted_loop_changes_no_outcome() {
    if no_adapter() {
        return;
    }
    let tmp = std::env::temp_dir().join(format!("vgpu-wd-fits-{}", std::process::id()));
    for entry in ["test_first", "step_first"] {
        // The generated WGSL, and the same with the test always made. The
        // loop is versioned (versioned.rs): the first run holds its copy
        // without checks alone, and under a limit the fits test fails the
        // launch runs again with the full kernel (dumped as `.full`), whose
        // checked copy tests the header.
        let dump = tmp.join(format!("dump-{entry}"));
        std::fs::create_dir_all(&dump).unwrap();
        let (ok, _) = runs(&tmp, entry, 1, 1, Some(("VGPU_DUMP_WGSL", &dump)));
        assert!(!ok, "{entry}: the dumping run faults");
        let first = std::fs::read_to_string(dump.join(format!("{entry}.wgsl"))).unwrap();
        let wgsl = std::fs::read_to_string(dump.join(format!("{entry}.full.wgsl"))).unwrap();
        let verdict = "wdok1 = workgroupUniformLoad(&wg_wdfast);";
        assert!(first.contains(verdict), "{entry}: no fits test:\n{first}");
        assert!(!first.contains("if (wdok1 == 0u) {"), "{entry}:\n{first}");
        assert!(wgsl.contains(verdict), "{entry}: no fits test:\n{wgsl}");
        assert!(wgsl.contains("if (wdok1 == 0u) {"), "{entry}:\n{wgsl}");
        let always = tmp.join(format!("always-{entry}"));
        std::fs::create_dir_all(&always).unwrap();
        std::fs::write(
            always.join(format!("{entry}.wgsl")),
            wgsl.replace(verdict, "wdok1 = 0u * workgroupUniformLoad(&wg_wdfast);"),
        )
        .unwrap();
        for n in [0u32, 1, 6] {
            let fits = threshold(&tmp, entry, n, 512, None);
            let always_tested = threshold(&tmp, entry, n, 512, Some(&always));
            assert_eq!(
                fits, always_tested,
                "{entry} n={n}: the smallest limit that runs to the end"
            );
            // At that limit: the sum of the counter's values.
            let (ok, out) = runs(&tmp, entry, n, fits, None);
            assert!(ok);
            let gpu = std::fs::read(&out).unwrap();
            let iters = if entry == "test_first" {
                n + 1
            } else {
                n.max(1)
            };
            let sum: u32 = (0..iters).sum();
            for t in 0..64 {
                let w = u32::from_le_bytes(gpu[4 * t..4 * t + 4].try_into().unwrap());
                assert_eq!(w, sum, "{entry} n={n}: thread {t}'s sum");
            }
        }
    }
    let _ = std::fs::remove_dir_all(&tmp);
}
