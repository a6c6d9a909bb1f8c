//! The on-disk pipeline cache across processes: the first process compiles a
//! kernel and saves the cache's data; the second loads it and gives the same
//! results; `VGPU_PIPELINE_CACHE=off` writes nothing; a damaged file is
//! discarded and the run still succeeds.
//!
//! Each "process" is this test binary run again with `VGPU_PC_CHILD` set (the
//! device reads the environment once per process).

mod common;
use common::*;
use std::path::Path;
use std::process::Command;
use vgpu_gpu::pipeline_cache::PIPELINE_CACHE_ENV;
use vgpu_gpu::{Binding, KernelSpec};

const TEST: &str = "a_second_process_loads_what_the_first_saved";

const SCALE: &str = "
@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    if (id.x < arrayLength(&x)) { y[id.x] = 2.0 * x[id.x] + 1.0; }
}";

/// The child: one compile and dispatch, the cache dropped, then `PC loaded saved error`
/// (or `PC none` without an adapter or a pipeline cache), after the test
/// harness's own text on that line.
fn child() {
    let Some(mut cache) = kernel_cache(TEST) else {
        println!("PC none");
        return;
    };
    let x: Vec<f32> = (0..1000).map(|i| i as f32 * 0.5).collect();
    let mut y = vec![0f32; x.len()];
    let spec = KernelSpec::new("pc_scale", SCALE, "main").workgroup_size([64, 1, 1]);
    cache
        .dispatch(
            &spec,
            &mut [Binding::read(&x), Binding::read_write(&mut y)],
            [16, 1, 1],
        )
        .unwrap();
    for (a, b) in x.iter().zip(&y) {
        assert_eq!(*b, 2.0 * a + 1.0);
    }
    // Dropping the cache saves what it compiled.
    let ctx = cache.context();
    drop(cache);
    match ctx.pipeline_cache() {
        None => println!("PC none"),
        Some(info) => println!(
            "PC {} {} {}",
            info.loaded_bytes,
            info.saved_bytes,
            info.save_error.is_some()
        ),
    }
}

/// Runs the child with the cache in `dir`; `(loaded, saved, save failed)` or
/// `None` when the child has no pipeline cache.
fn run_child(dir: &str) -> Option<(usize, usize, bool)> {
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", TEST, "--nocapture", "--test-threads", "1"])
        .env("VGPU_PC_CHILD", "1")
        .env(PIPELINE_CACHE_ENV, dir)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "child failed:\n{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line = text
        .lines()
        .find_map(|l| l.split_once("PC ").map(|(_, rest)| rest))
        .unwrap_or_else(|| panic!("no PC line in:\n{text}"));
    if line == "none" {
        return None;
    }
    let f: Vec<&str> = line.split(' ').collect();
    Some((f[0].parse().unwrap(), f[1].parse().unwrap(), f[2] == "true"))
}

fn files_in(dir: &Path) -> Vec<std::path::PathBuf> {
    std::fs::read_dir(dir)
        .map(|d| d.map(|e| e.unwrap().path()).collect())
        .unwrap_or_default()
}

#[test]
fn a_second_process_loads_what_the_first_saved() {
    if std::env::var_os("VGPU_PC_CHILD").is_some() {
        child();
        return;
    }
    let dir = std::env::temp_dir().join(format!("vgpu-pipeline-cache-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let d = dir.to_str().unwrap();

    // Switched off: no file, no cache.
    assert_eq!(
        run_child("off"),
        None,
        "VGPU_PIPELINE_CACHE=off must disable the cache"
    );

    let Some((loaded, saved, failed)) = run_child(d) else {
        println!("{TEST}: skipped, the adapter has no pipeline cache (PIPELINE_CACHE)");
        return;
    };
    assert_eq!(loaded, 0, "a cold start loads nothing");
    assert!(
        saved > 0 && !failed,
        "the first process saves ({saved} bytes, failed {failed})"
    );
    let files = files_in(&dir);
    assert_eq!(files.len(), 1, "one cache file, no temporaries: {files:?}");
    let bytes = std::fs::read(&files[0]).unwrap();
    assert_eq!(bytes.len(), saved + 24, "the frame holds what was saved");

    let (loaded2, _, failed2) = run_child(d).unwrap();
    assert_eq!(
        loaded2, saved,
        "the second process loads what the first saved"
    );
    assert!(!failed2);

    // A damaged file is discarded (a cold start) and the run still succeeds.
    let mut damaged = bytes.clone();
    let mid = damaged.len() / 2;
    damaged[mid] ^= 0x5a;
    std::fs::write(&files[0], &damaged).unwrap();
    let (loaded3, saved3, _) = run_child(d).unwrap();
    assert_eq!(loaded3, 0, "a damaged file must not be loaded");
    assert!(saved3 > 0, "and is replaced by a good one");
    std::fs::write(&files[0], &bytes[..10]).unwrap();
    assert_eq!(
        run_child(d).unwrap().0,
        0,
        "a truncated file must not be loaded"
    );

    std::fs::remove_dir_all(&dir).unwrap();
}
