//! What the CLI tests share: running the `vgpu` binary as a user runs it.
// Each test binary uses its own subset of these helpers.
#![allow(dead_code)]

use std::process::Command;

/// Runs `vgpu ARGS…` with `env` added to the environment; returns the exit
/// code (-1 when killed by a signal), stdout and stderr.
pub(crate) fn vgpu_env(args: &[&str], env: &[(&str, &str)]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_vgpu"))
        .args(args)
        .envs(env.iter().copied())
        .output()
        .expect("run vgpu");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Runs `vgpu ARGS…`; returns the exit code, stdout and stderr.
pub(crate) fn vgpu(args: &[&str]) -> (i32, String, String) {
    vgpu_env(args, &[])
}
