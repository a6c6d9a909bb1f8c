//! The bad-input campaign of issue 15, one case per class, run as a user runs
//! the `vgpu` command: every input ends with a clear error (exit status 2, the
//! place or the limit and the option named), never a panic, an abort, a hang, a
//! read outside the case or a wrong success.
//!
//! Classes covered elsewhere, by the test that holds them:
//! `--n 4294967296`, 10¹² steps, memory beyond `--max-memory`:
//! `cli_ensemble::sizes_from_input_are_refused_before_allocation`; a `.npy`
//! header claiming 2⁴⁰ elements, `/dev/zero` as a `.npy`, a 2-D parameter:
//! `cli_ensemble::npy_files_are_read_no_further_than_their_header_declares`;
//! `--threads 100000`: `cli_ensemble::threads_are_capped_at_the_machine_with_a_note`;
//! an interrupted or failed write: `cli_ensemble::an_interrupted_run_leaves_no_output_file`,
//! `::a_failed_write_leaves_no_partial_file`; `zeros:f32:10000000000`, 2⁶² × 4
//! bytes, a huge grid: `cli_ptx::hostile_sizes_are_refused_naming_the_limit_and_the_option`;
//! a device as a buffer file: `cli_ptx::a_device_as_a_buffer_file_is_not_read`;
//! `vgpu ptx trace --thread 999`: `cli_ptx::trace_of_a_thread_outside_the_launch_is_an_error`;
//! `"ptx": "/etc/hostname"`: `cli_ptx::a_case_naming_a_file_outside_it_is_refused_without_its_contents`;
//! Python's 2-D parameter arrays and huge matmuls: `python/tests/test_ensemble.py`.

use std::path::PathBuf;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("vgpu-cli-hostile-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d.join(name)
}

/// Runs `vgpu ARGS…` with a deadline: a run past `secs` is a hang and fails.
fn vgpu_within(args: &[&str], secs: u64) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_vgpu"))
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            return child.wait_with_output().unwrap();
        }
        if start.elapsed() > Duration::from_secs(secs) {
            let _ = child.kill();
            panic!("vgpu {args:?} ran past {secs} s (a hang)");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Asserts a clean refusal: exit status 2 (never a signal or a panic), and
/// every `want` in the message.
fn refused(o: &Output, want: &[&str]) -> String {
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        !err.contains("panicked") && !err.contains("RUST_BACKTRACE"),
        "{err}"
    );
    for w in want {
        assert!(err.contains(w), "missing {w:?} in: {err}");
    }
    err
}

/// `vgpu ensemble SRC --n 64 --block 64 EXTRA…` on a `.field` source written to a file.
fn field(name: &str, src: &str, extra: &[&str]) -> Output {
    let f = tmp(name);
    std::fs::write(&f, src).unwrap();
    let f = f.display().to_string();
    let mut args = vec![
        "ensemble", &f, "--n", "64", "--block", "64", "--dt", "1", "--method", "euler",
    ];
    args.extend_from_slice(extra);
    vgpu_within(&args, 60)
}

#[test]
fn a_negated_literal_as_an_index_is_a_type_error_not_a_panic() {
    let o = field(
        "neg_flux.field",
        "field f(x: f32[]) {\n  flux o: f32[4];\n  state y = x[i];\n  phase p {\n    emit o[-1] += y;\n  }\n}\n",
        &["--t", "0:1", "--param", "x=linspace:0:1"],
    );
    refused(&o, &["neg_flux.field:5:"]);
    let o = field(
        "neg_shared.field",
        "field f(x: f32[]) {\n  shared s: f32[4] = 0.0;\n  state y = x[i];\n  phase p {\n    d(s[-1])/dt += y;\n  }\n}\n",
        &["--t", "0:1", "--param", "x=linspace:0:1"],
    );
    refused(&o, &["neg_shared.field:5:"]);
}

#[test]
fn an_integer_expression_as_a_float_initial_value_is_a_type_error() {
    let o = field(
        "and_init.field",
        "field f() {\n  state x = 0 & 0;\n  d(x)/dt = x;\n}\n",
        &["--t", "0:1"],
    );
    refused(&o, &["and_init.field:2:"]);
}

#[test]
fn a_long_left_nested_chain_is_refused_without_a_stack_overflow() {
    let chain = vec!["x"; 12_000].join(" + ");
    let o = field(
        "chain.field",
        &format!("field f() {{\n  state x = 1.0;\n  d(x)/dt = {chain};\n}}\n"),
        &["--t", "0:1"],
    );
    refused(&o, &["chain.field:3:", "256"]);
}

#[test]
fn a_phase_of_twelve_thousand_drives_runs_on_the_cpu_without_a_hang() {
    // The fuzzer's field hang: `tree_sum` with one drive repeated 12,001
    // times. On the CPU it runs in well under a second; the GPU's shader for it
    // (31 MB) is refused by `--max-wgsl-bytes` before naga would spend minutes.
    let src = include_str!("../../../examples/tree_sum.field");
    let line = "        d(s[tid])/dt += x[i];\n";
    let big = src.replacen(line, &line.repeat(12_001), 1);
    let out = tmp("drives_out.npy").display().to_string();
    let o = field(
        "drives.field",
        &big,
        &[
            "--backend",
            "cpu",
            "--param",
            "x=linspace:0:1",
            "--param",
            "steps=6",
            "--out",
            &out,
        ],
    );
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(0), "{err}");
}

#[test]
fn a_ptx_operand_nested_seventy_thousand_deep_is_a_parse_error() {
    // The fuzzer's PTX stack overflow: `{` 70,000 deep in an operand.
    let f = tmp("deep.ptx");
    let src = format!(
        ".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry k(.param .u64 out)\n{{\n.reg .b32 %r<4>;\nbfi.b32 %r1, %r2, {}\nret;\n}}\n",
        "{ ".repeat(70_000)
    );
    std::fs::write(&f, src).unwrap();
    let out = tmp("deep_out.npy").display().to_string();
    let zeros = format!("zeros:f32:4:{out}");
    let o = vgpu_within(
        &[
            "ptx",
            "run",
            f.to_str().unwrap(),
            "--entry",
            "k",
            "--grid",
            "1",
            "--block",
            "1",
            "--arg",
            &zeros,
        ],
        60,
    );
    refused(
        &o,
        &[
            "deep.ptx:7:531:",
            "nested deeper than 256 levels",
            "MAX_NESTING",
        ],
    );
}

#[test]
fn huge_shared_and_flux_arrays_are_refused_before_allocation() {
    let o = field(
        "huge_shared.field",
        "field f(x: f32[]) {\n  shared s: f32[4294967295u] = 0.0;\n  state y = x[i];\n  phase p {\n    d(s[tid])/dt += y;\n  }\n}\n",
        &["--t", "0:1", "--param", "x=linspace:0:1"],
    );
    refused(&o, &["huge_shared.field:2:", "--max-shared-bytes"]);
    let o = field(
        "huge_flux.field",
        "field f(x: f32[]) {\n  flux o: f32[4000000000u];\n  state y = x[i];\n  phase p {\n    emit o[0] += y;\n  }\n}\n",
        &["--t", "0:1", "--param", "x=linspace:0:1"],
    );
    refused(&o, &["huge_flux.field:2:", "--max-flux-elements"]);
}

#[test]
fn a_shared_size_from_a_parameter_is_checked_against_the_limit() {
    let src = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/histogram.field"
    ))
    .unwrap();
    let o = field(
        "histogram.field",
        &src,
        &[
            "--t",
            "0:1",
            "--param",
            "x=linspace:0:100",
            "--param",
            "bins=1000000000",
        ],
    );
    refused(&o, &["--max-shared-bytes"]);
}

#[test]
fn a_repetition_count_from_a_parameter_is_refused_not_compiled() {
    let src = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/tree_sum.field"
    ))
    .unwrap();
    let o = field(
        "tree_sum.field",
        &src,
        &[
            "--t",
            "0:0",
            "--param",
            "x=linspace:0:1",
            "--param",
            "steps=4000000000",
        ],
    );
    refused(&o, &["--max-phase-repetitions"]);
}

/// A case folder holding `case.json` with `json`, and the repository's saxpy
/// inputs beside it.
fn case(name: &str, json: &str) -> PathBuf {
    let d = tmp(name);
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(d.join("case.json"), json).unwrap();
    let ptx = concat!(env!("CARGO_MANIFEST_DIR"), "/../../ptx-cases/kernels.ptx");
    std::fs::copy(ptx, d.join("kernels.ptx")).unwrap();
    d
}

#[test]
fn a_case_buffer_of_ten_billion_elements_is_refused_before_allocation() {
    let d = case(
        "huge_case",
        r#"{"ptx": "kernels.ptx", "entry": "scale", "grid": [1,1,1], "block": [32,1,1],
            "args": [{"kind": "buffer", "name": "x"}, {"kind": "scalar", "type": "f32", "value": 2.0},
                     {"kind": "scalar", "type": "s32", "value": 32}],
            "buffers": {"x": {"dtype": "f32", "len": 10000000000}}, "exact": true}"#,
    );
    let c = d.join("case.json").display().to_string();
    let o = vgpu_within(&["ptx", "run", &c], 60);
    let err = String::from_utf8_lossy(&o.stderr).into_owned() + &String::from_utf8_lossy(&o.stdout);
    assert_ne!(o.status.code(), Some(0), "{err}");
    assert!(o.status.code().is_some(), "killed by a signal: {err}");
    assert!(err.contains("--max-memory"), "{err}");
}

#[test]
fn a_case_json_that_is_a_device_is_not_read() {
    let d = tmp("device_case");
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    std::os::unix::fs::symlink("/dev/zero", d.join("case.json")).unwrap();
    let c = d.join("case.json").display().to_string();
    let o = vgpu_within(&["ptx", "run", &c], 60);
    let err = String::from_utf8_lossy(&o.stderr).into_owned() + &String::from_utf8_lossy(&o.stdout);
    assert_ne!(o.status.code(), Some(0), "{err}");
    assert!(o.status.code().is_some(), "killed by a signal: {err}");
    assert!(err.contains("not a regular file"), "{err}");
}

#[test]
fn a_grid_past_cudas_limit_is_refused_before_allocation() {
    let ptx = concat!(env!("CARGO_MANIFEST_DIR"), "/../../ptx-cases/kernels.ptx");
    let out = tmp("grid_out.npy").display().to_string();
    let zeros = format!("zeros:f32:4:{out}");
    let o = vgpu_within(
        &[
            "ptx",
            "run",
            ptx,
            "--entry",
            "scale",
            "--grid",
            "2147483648",
            "--block",
            "1",
            "--arg",
            &zeros,
            "--arg",
            "f32:1",
            "--arg",
            "s32:4",
        ],
        60,
    );
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_ne!(o.status.code(), Some(0), "{err}");
    assert!(o.status.code().is_some(), "killed by a signal: {err}");
    assert!(err.contains("2147483648"), "{err}");
}
