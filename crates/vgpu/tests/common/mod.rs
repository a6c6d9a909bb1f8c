//! What the CLI tests share: running the `vgpu` binary as a user runs it,
//! example paths, fresh temporary folders, `.npy` inputs and byte reads; and
//! in [`ptx_gpu`] what the PTX GPU tests share.
// Each test binary uses its own subset of these helpers.
#![allow(dead_code)]

pub(crate) mod ptx_gpu;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Runs `vgpu ARGS…` with `env` added to the environment; returns the exit
/// code (-1 when killed by a signal), stdout and stderr.
pub(crate) fn vgpu_env(args: &[&str], env: &[(&str, &str)]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_vgpu"))
        .args(args)
        .envs(env.iter().copied())
        .output()
        .expect("run vgpu");
    triple(&out)
}

/// Runs `vgpu ARGS…`; returns the exit code, stdout and stderr.
pub(crate) fn vgpu(args: &[&str]) -> (i32, String, String) {
    vgpu_env(args, &[])
}

/// Runs `vgpu ARGS…` (owned arguments) and panics with its output unless it
/// exits 0; returns stdout.
pub(crate) fn vgpu_ok(args: &[String]) -> String {
    let (code, out, err) = vgpu(&strs(args));
    assert_eq!(code, 0, "vgpu {args:?}\n{out}\n{err}");
    out
}

/// Borrows owned arguments as `&str`s.
pub(crate) fn strs(args: &[String]) -> Vec<&str> {
    args.iter().map(String::as_str).collect()
}

/// Exit code (-1 when killed by a signal), stdout and stderr of a finished process.
pub(crate) fn triple(out: &Output) -> (i32, String, String) {
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The path of `examples/NAME` as a string argument.
pub(crate) fn example(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples")
        .join(name)
        .display()
        .to_string()
}

/// A fresh (emptied) folder `vgpu-PREFIX-PID-NAME` under the temporary
/// directory.
pub(crate) fn fresh_dir(prefix: &str, name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("vgpu-{prefix}-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A path as a string argument.
pub(crate) fn s(p: &Path) -> String {
    p.display().to_string()
}

/// The bytes of a file; panics naming it when unreadable.
pub(crate) fn bytes(p: &Path) -> Vec<u8> {
    std::fs::read(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// `STEM.WHAT.npy` beside an output `STEM.npy` (statuses, step counts).
pub(crate) fn beside(p: &Path, what: &str) -> PathBuf {
    PathBuf::from(format!("{}.{what}.npy", p.with_extension("").display()))
}

/// Writes a `(rows, cols)` f64 `.npy` from row-major `data`.
pub(crate) fn write_rows(p: &Path, rows: usize, cols: usize, data: Vec<f64>) {
    ndarray_npy::write_npy(
        p,
        &ndarray::Array2::from_shape_vec((rows, cols), data).unwrap(),
    )
    .unwrap();
}

/// Names of the files in `d` that contain `partial` (temporary outputs a
/// finished or failed run must not leave).
pub(crate) fn partial_files(d: &Path) -> Vec<String> {
    std::fs::read_dir(d)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("partial"))
        .collect()
}

/// `vgpu merge SHARD… --out OUT`.
pub(crate) fn merge(shards: &[PathBuf], out: &Path) -> (i32, String, String) {
    let mut a = vec!["merge".to_string()];
    a.extend(shards.iter().map(|p| s(p)));
    a.extend(["--out".to_string(), s(out)]);
    vgpu(&strs(&a))
}

/// Whether a `--backend gpu` run succeeded; without an adapter (and without
/// `VGPU_REQUIRE_GPU=1`) it must have failed naming the adapter, and the
/// caller skips with the message printed.
pub(crate) fn gpu_ran(code: i32, err: &str) -> bool {
    if code == 0 {
        return true;
    }
    assert!(
        err.contains("adapter") && std::env::var("VGPU_REQUIRE_GPU").as_deref() != Ok("1"),
        "the GPU run failed: {err}"
    );
    println!("skipped: no GPU adapter ({err})");
    false
}
