//! `vgpu ensemble`: runs .field files, writes (N, state) .npy files that read back
//! with the values the library computes, and fails clearly on bad input.

mod common;

use ndarray::{Array1, Array2};
use ndarray_npy::{read_npy, write_npy};
use std::path::PathBuf;
use std::process::Command;

fn vgpu() -> Command {
    Command::new(env!("CARGO_BIN_EXE_vgpu"))
}

fn example(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples")
        .join(name)
        .display()
        .to_string()
}

/// `vgpu ensemble examples/lorenz.field --n N --t SPAN --param rho=linspace:0:21`,
/// to which each test adds its own options.
fn lorenz(n: &str, span: &str) -> Command {
    let mut c = vgpu();
    c.args(["ensemble", &example("lorenz.field"), "--n", n, "--t", span])
        .args(["--param", "rho=linspace:0:21"]);
    c
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("vgpu-cli-ensemble-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d.join(name)
}

#[test]
fn lorenz_cpu_writes_the_library_result() {
    let out = tmp("lorenz.npy");
    let o = lorenz("100", "0:0.1")
        .args([
            "--dt",
            "0.001",
            "--method",
            "rk4",
            "--backend",
            "cpu",
            "--out",
        ])
        .arg(&out)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        stdout.contains("backend: cpu") && stdout.contains("time:"),
        "{stdout}"
    );
    let got: Array2<f32> = read_npy(&out).unwrap();
    assert_eq!(got.dim(), (100, 3));
    let k = vgpu::compile_file(std::path::Path::new(&example("lorenz.field"))).unwrap();
    let mut args = vgpu::Args::new(&k);
    let rho: Vec<f32> = (0..100).map(|i| (i as f64 * 21.0 / 99.0) as f32).collect();
    args.buffer("rho", rho).unwrap();
    let want = vgpu::run_cpu(&k, &args, &vgpu::Integration::new(100, 0.0, 0.1, 0.001)).unwrap();
    let want: Vec<f64> = want.states_f64();
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        assert_eq!(*g as f64, *w, "component {i}");
    }
    // The endpoint moved away from u0 = (1, 0, 0) for rho > 1.
    assert!((got[[99, 2]] - 0.0).abs() > 1e-3);
}

#[test]
fn scale_reads_npy_params_and_json() {
    let x = tmp("x.npy");
    write_npy(&x, &Array1::from(vec![1.0f32, -2.0, 3.5, 8.0])).unwrap();
    let out = tmp("y.npy");
    let o = vgpu()
        .args([
            "ensemble",
            &example("scale.field"),
            "--n",
            "4",
            "--t",
            "0:1",
            "--dt",
            "1",
            "--method",
            "euler",
        ])
        .args(["--param", "a=2.5", "--param"])
        .arg(format!("x={}", x.display()))
        .args(["--backend", "cpu", "--json", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(j["backend"], "cpu");
    assert_eq!(j["steps"], 1);
    let y: Array2<f32> = read_npy(&out).unwrap();
    assert_eq!(y.into_raw_vec_and_offset().0, vec![2.5, -5.0, 8.75, 20.0]);
}

#[test]
fn tree_sum_writes_its_flux_output() {
    let out = tmp("tree.npy");
    let o = vgpu()
        .args([
            "ensemble",
            &example("tree_sum.field"),
            "--n",
            "1024",
            "--block",
            "256",
            "--dt",
            "1",
            "--method",
            "euler",
        ])
        .args([
            "--param",
            "x=linspace:0:1023",
            "--param",
            "steps=8",
            "--out",
        ])
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let total: Array1<f32> = read_npy(tmp("tree.total.npy")).unwrap();
    assert_eq!(total[0], (0..1024).sum::<i32>() as f32);
}

/// `lorenz("256", "0:0.2") --dt 0.001 --backend gpu EXTRA… --out OUT`: its
/// output, or `None` when there is no GPU adapter (see `common::gpu_ran`).
fn lorenz_gpu(extra: &[&str], out: &std::path::Path) -> Option<std::process::Output> {
    let o = lorenz("256", "0:0.2")
        .args(["--dt", "0.001", "--backend", "gpu"])
        .args(extra)
        .arg("--out")
        .arg(out)
        .output()
        .unwrap();
    common::gpu_ran(
        o.status.code().unwrap_or(-1),
        &String::from_utf8_lossy(&o.stderr),
    )
    .then_some(o)
}

#[test]
fn gpu_backend_agrees_with_cpu() {
    let out = tmp("lorenz_gpu.npy");
    let Some(o) = lorenz_gpu(&["--kernel-time", "2"], &out) else {
        return;
    };
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        stdout.contains("backend: gpu") && stdout.contains("kernel"),
        "{stdout}"
    );
    let gpu: Array2<f32> = read_npy(&out).unwrap();
    let cpu_out = tmp("lorenz_cpu.npy");
    let o = lorenz("256", "0:0.2")
        .args(["--dt", "0.001", "--backend", "cpu", "--out"])
        .arg(&cpu_out)
        .output()
        .unwrap();
    assert!(o.status.success());
    let cpu: Array2<f32> = read_npy(&cpu_out).unwrap();
    // See vgpu-gpu/tests/ir_gpu.rs for the tolerance's reasoning.
    for (g, c) in gpu.iter().zip(cpu.iter()) {
        assert!((g - c).abs() <= 1e-4 * c.abs().max(1.0), "{g} vs {c}");
    }
}

/// `--json` on the GPU says where the time went: the device's set-up apart,
/// the run's prepare/compile/device/check phases adding up to `seconds`, the
/// `.npy` output and the whole command's wall time.
#[test]
fn gpu_json_reports_where_the_time_went() {
    let out = tmp("lorenz_gpu_phases.npy");
    let Some(o) = lorenz_gpu(&["--json"], &out) else {
        return;
    };
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let f = |v: &serde_json::Value| v.as_f64().unwrap_or_else(|| panic!("not a number in {j}"));
    let seconds = f(&j["seconds"]);
    let p = &j["phases"];
    let parts: f64 = [
        "prepare_seconds",
        "compile_seconds",
        "device_seconds",
        "check_seconds",
    ]
    .iter()
    .map(|k| f(&p[*k]))
    .sum();
    assert!((parts - seconds).abs() <= 1e-3 * seconds.max(1e-3), "{j}");
    assert!(f(&p["device_seconds"]) > 0.0, "{j}");
    let inside: f64 = ["upload_seconds", "gpu_seconds", "download_seconds"]
        .iter()
        .map(|k| f(&p[*k]))
        .sum();
    assert!(inside <= f(&p["device_seconds"]) + 1e-6, "{j}");
    assert!(f(&j["setup_seconds"]) > 0.0, "{j}");
    let wall = f(&j["wall_seconds"]);
    assert!(wall >= seconds + f(&j["output_seconds"]), "{j}");
    let back: Array2<f32> = read_npy(&out).unwrap();
    assert_eq!(back.dim(), (256, 3));
}

#[test]
fn bad_input_is_reported_not_panicked() {
    let bad = tmp("bad.field");
    std::fs::write(&bad, "field f() {\n  state x = 1.0\n  d(x)/dt = -x;\n}\n").unwrap();
    let o = vgpu()
        .args(["ensemble"])
        .arg(&bad)
        .args(["--n", "4"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2));
    assert!(err.contains("bad.field:3:3: expected `;`"), "{err}");
    let o = vgpu()
        .args([
            "ensemble",
            &example("lorenz.field"),
            "--n",
            "4",
            "--param",
            "sigma=3",
            "--backend",
            "cpu",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("no parameter `sigma`"), "{err}");
    let o = vgpu()
        .args([
            "ensemble",
            &example("lorenz.field"),
            "--n",
            "4",
            "--backend",
            "cpu",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("parameter `rho` (f32[]) was not given"),
        "{err}"
    );
    let o = vgpu()
        .args([
            "ensemble",
            &example("lorenz.field"),
            "--n",
            "8",
            "--param",
            "rho=linspace:0:1",
            "--backend",
            "cpu",
            "--method",
            "rk5",
        ])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&o.stderr).contains("expected euler or rk4"));
}

#[test]
fn no_progress_bar_is_drawn_when_stderr_is_not_a_terminal() {
    // `--progress always` asks for the bar; captured stderr is not a terminal.
    let o = lorenz("64", "0:0.05")
        .args(["--backend", "cpu", "--progress", "always"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(
        !err.contains("trajectory-steps") && !err.contains('\r') && !err.contains('\u{1b}'),
        "{err:?}"
    );
    let o = vgpu()
        .args(["ensemble", &example("lorenz.field"), "--n", "64"])
        .args(["--param", "rho=linspace:0:21", "--backend", "cpu"])
        .args(["--progress", "sometimes"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("expected auto, always or never"));
}

/// Under `--backend auto`, a field the GPU cannot hold (its shared sub-field
/// needs more workgroup memory than any GPU has) runs on the CPU, with a note
/// saying why; `--backend gpu` refuses it with the same reason.
#[test]
fn auto_runs_on_the_cpu_what_the_gpu_cannot_hold() {
    let file = tmp("big_shared.field");
    std::fs::write(
        &file,
        "field big(x: f32[]) {
            shared s: f32[100000] = 0.0;
            state y = x[i];
            phase fill {
                d(s[tid])/dt += y;
                d(y)/dt = -y;
            }
        }",
    )
    .unwrap();
    let run = |backend: &str, out: &PathBuf| {
        vgpu()
            .args(["ensemble"])
            .arg(&file)
            .args(["--n", "512", "--t", "0:1", "--dt", "0.25", "--json"])
            .args(["--param", "x=linspace:0:1", "--backend", backend])
            // 400,000 bytes of shared memory: over CUDA's 48 KiB default limit.
            .args(["--max-shared-bytes", "400000", "--out"])
            .arg(out)
            .output()
            .unwrap()
    };
    // Without the option the limit is named, with the option that raises it.
    let o = vgpu()
        .args(["ensemble"])
        .arg(&file)
        .args([
            "--n",
            "512",
            "--t",
            "0:1",
            "--dt",
            "0.25",
            "--backend",
            "cpu",
        ])
        .args(["--param", "x=linspace:0:1"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("over the limit of 49152 bytes per block")
            && err.contains("--max-shared-bytes"),
        "{err}"
    );
    let (auto_out, cpu_out) = (tmp("big_auto.npy"), tmp("big_cpu.npy"));
    let o = run("auto", &auto_out);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(j["backend"], "cpu", "{j}");
    let note = j["note"].as_str().unwrap();
    let no_gpu = note.contains("no GPU");
    assert!(
        !no_gpu || std::env::var("VGPU_REQUIRE_GPU").as_deref() != Ok("1"),
        "{note}"
    );
    if !no_gpu {
        assert!(note.contains("workgroup memory"), "{note}");
        let o = run("gpu", &tmp("big_gpu.npy"));
        assert!(!o.status.success());
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains("workgroup memory"), "{err}");
    }
    let o = run("cpu", &cpu_out);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let (a, c): (Array2<f32>, Array2<f32>) =
        (read_npy(&auto_out).unwrap(), read_npy(&cpu_out).unwrap());
    assert_eq!(a.shape(), &[512, 1]);
    assert_eq!(a, c);
    // y' = −y from x, four RK4 steps to t = 1.
    assert!(
        (a[[511, 0]] - (-1.0f32).exp()).abs() < 1e-3,
        "{}",
        a[[511, 0]]
    );
}

#[test]
fn a_successful_headless_run_prints_no_error_line() {
    // On a machine without a display session (no XDG_RUNTIME_DIR) adapter
    // probing once printed `error: XDG_RUNTIME_DIR is invalid…` from a Vulkan
    // layer and from EGL even though the run succeeded.
    for backend in ["auto", "cpu"] {
        let o = lorenz("64", "0:0.01")
            .args(["--backend", backend])
            .env_remove("XDG_RUNTIME_DIR")
            .env_remove("WAYLAND_DISPLAY")
            .env_remove("DISPLAY")
            .env_remove("NODEVICE_SELECT")
            .env_remove("WGPU_BACKEND")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert!(o.status.success(), "{backend}: {stderr}");
        assert!(!stderr.contains("error"), "{backend}: {stderr}");
    }
}

#[test]
fn the_environment_chooses_the_backend_when_no_option_does() {
    let o = lorenz("8", "0:0.01")
        .arg("--json")
        .env("VGPU_BACKEND", "cpu")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(stdout.contains("\"backend\":\"cpu\""), "{stdout}");
    let o = lorenz("8", "0:0.01")
        .env("VGPU_BACKEND", "abacus")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("VGPU_BACKEND \"abacus\": expected cpu, gpu or auto"),
        "{stderr}"
    );
}

/// Runs `vgpu ensemble ARGS…` and returns (exit code, stderr).
fn ensemble_err(args: &[&str]) -> (Option<i32>, String) {
    let o = vgpu().arg("ensemble").args(args).output().unwrap();
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn sizes_from_input_are_refused_before_allocation() {
    let lorenz = example("lorenz.field");
    let rho = "rho=linspace:0:21";
    // Each case: arguments, and what the message must name.
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec![&lorenz, "--n", "4294967296", "--param", rho],
            "at most 2^32 - 1 trajectories",
        ),
        (
            vec![
                &lorenz,
                "--n",
                "4000000000",
                "--param",
                rho,
                "--max-memory",
                "1G",
            ],
            "raise it with --max-memory",
        ),
        (
            vec![
                &lorenz, "--n", "4", "--t", "0:1e10", "--dt", "0.01", "--param", rho,
            ],
            "raise it with --max-steps",
        ),
        (
            vec![&lorenz, "--n", "4", "--param", rho, "--max-memory", "12Q"],
            "unknown unit",
        ),
    ];
    for (args, want) in cases {
        let (code, stderr) = ensemble_err(&args);
        assert_eq!(code, Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(want), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
}

#[test]
fn npy_files_are_read_no_further_than_their_header_declares() {
    // A 128-byte file whose header claims 2^40 elements.
    let huge = tmp("huge.npy");
    let mut h = b"{'descr': '<f4', 'fortran_order': False, 'shape': (1099511627776,), }".to_vec();
    h.resize(117, b' ');
    h.push(b'\n');
    let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
    bytes.extend_from_slice(&(h.len() as u16).to_le_bytes());
    bytes.extend_from_slice(&h);
    std::fs::write(&huge, &bytes).unwrap();
    let lorenz = example("lorenz.field");
    let p = format!("rho={}", huge.display());
    let (code, stderr) = ensemble_err(&[&lorenz, "--n", "4", "--param", &p]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("but the file holds 0 B of data"),
        "{stderr}"
    );
    // A device posing as a .npy file is never read.
    let zero = tmp("zero.npy");
    let _ = std::fs::remove_file(&zero);
    std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
    let p = format!("rho={}", zero.display());
    let (code, stderr) = ensemble_err(&[&lorenz, "--n", "4", "--param", &p]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("not a regular file"), "{stderr}");
    // A 2-D parameter array is refused with its shape.
    let two_d = tmp("two_d.npy");
    write_npy(&two_d, &Array2::<f32>::zeros((2, 2))).unwrap();
    let p = format!("rho={}", two_d.display());
    let (code, stderr) = ensemble_err(&[&lorenz, "--n", "4", "--param", &p]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("must be 1-D") && stderr.contains("[2, 2]"),
        "{stderr}"
    );
}

#[test]
fn threads_are_capped_at_the_machine_with_a_note() {
    let o = lorenz("8", "0:0.01")
        .args(["--backend", "cpu", "--threads", "100000"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    assert!(stderr.contains("--threads 100000 capped at"), "{stderr}");
}

#[test]
fn an_interrupted_run_leaves_no_output_file() {
    let dir = tmp("interrupt");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join("end.npy");
    // Long enough (several seconds on two cores) to be interrupted mid-run.
    let mut child = lorenz("262144", "0:20")
        .args(["--backend", "cpu", "--out"])
        .arg(&out)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(700));
    let killed = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130), "{status:?}");
    let left: Vec<_> = std::fs::read_dir(&dir).unwrap().collect();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn a_failed_write_leaves_no_partial_file() {
    let dir = tmp("failed-write");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    // The states go to dir/end.npy; the flux output `total` to
    // dir/end.total.npy, which is a directory here, so its write fails.
    std::fs::create_dir_all(dir.join("end.total.npy")).unwrap();
    let out = dir.join("end.npy");
    let o = vgpu()
        .args([
            "ensemble",
            &example("tree_sum.field"),
            "--n",
            "256",
            "--t",
            "0:0",
        ])
        .args(["--dt", "1", "--method", "euler", "--block", "128"])
        .args(["--param", "x=linspace:0:1", "--param", "steps=7"])
        .args(["--backend", "cpu", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("end.total.npy"), "{stderr}");
    assert!(
        !out.exists(),
        "the states were renamed although the set failed"
    );
    let names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["end.total.npy"], "{names:?}");
}
