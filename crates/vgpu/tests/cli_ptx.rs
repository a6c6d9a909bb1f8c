//! `vgpu ptx run` and `vgpu ptx trace`, run as a user runs them.

use std::path::PathBuf;
mod common;
use common::{fresh_dir, vgpu};

fn cases() -> PathBuf {
    match std::env::var_os("VGPU_PTX_CASES") {
        Some(p) => PathBuf::from(p),
        None => PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../ptx-cases")),
    }
}

fn tmp(name: &str) -> PathBuf {
    fresh_dir("cli-ptx", name)
}

#[test]
fn run_case_passes_with_exit_zero() {
    let c = cases().join("saxpy/case.json");
    let (code, out, err) = vgpu(&["ptx", "run", c.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(
        out.contains("y") && out.contains("match") && out.contains("PASS"),
        "{out}"
    );
}

#[test]
fn run_all_cases_in_a_folder() {
    let (code, out, err) = vgpu(&["ptx", "run", cases().to_str().unwrap()]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("8 cases: all pass"), "{out}");
}

#[test]
fn mismatching_case_exits_one_and_names_the_index() {
    // A copy of the scale case whose expected output is changed at index 7.
    let src = cases().join("scale");
    let d = tmp("mismatch");
    std::fs::copy(cases().join("kernels.ptx"), d.join("kernels.ptx")).unwrap();
    let case = d.join("scale");
    std::fs::create_dir_all(&case).unwrap();
    for f in ["case.json", "x.bin"] {
        std::fs::copy(src.join(f), case.join(f)).unwrap();
    }
    let mut want = std::fs::read(src.join("x.expect.bin")).unwrap();
    want[7 * 4] ^= 1;
    std::fs::write(case.join("x.expect.bin"), want).unwrap();
    let (code, out, _) = vgpu(&["ptx", "run", case.to_str().unwrap()]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("MISMATCH") && out.contains("first at index 7") && out.contains("max ulp 1"),
        "{out}"
    );
}

#[test]
fn planted_race_is_reported_as_expected_error() {
    let c = PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../vgpu-ptx/tests/cases/shared_race"
    ));
    let (code, out, err) = vgpu(&["ptx", "run", c.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(
        out.contains("race") && out.contains("entry `shared_race`") && out.contains("PTX line"),
        "{out}"
    );
}

/// The GPU kernel's race check is asked for with `--racecheck` (as
/// compute-sanitizer's racecheck): with it the planted race is reported on
/// the GPU too; without it the GPU runs the kernel to completion and the
/// case, which expects the race, fails. On the interpreter, which always
/// checks races, the flag is a usage error.
#[test]
fn racecheck_asks_the_gpu_kernel_for_the_race_check() {
    let c = PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../vgpu-ptx/tests/cases/shared_race"
    ));
    let c = c.to_str().unwrap();
    let (code, out, err) = vgpu(&["ptx", "run", c, "--racecheck"]);
    assert_eq!(code, 2, "{out}\n{err}");
    assert!(err.contains("--racecheck adds the race check"), "{err}");
    if common::ptx_gpu::no_adapter() {
        return;
    }
    let (code, out, err) = vgpu(&["ptx", "run", c, "--backend", "gpu", "--racecheck"]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(
        out.contains("race") && out.contains("hazard on shared byte"),
        "{out}"
    );
    let (code, out, err) = vgpu(&["ptx", "run", c, "--backend", "gpu"]);
    assert_eq!(code, 1, "{out}\n{err}");
}

#[test]
fn run_ptx_file_with_bin_and_npy_buffers() {
    let d = tmp("file");
    let n = 1000usize;
    let x: Vec<u8> = (0..n)
        .flat_map(|i| (i as f32 * 0.5).to_le_bytes())
        .collect();
    std::fs::write(d.join("x.bin"), &x).unwrap();
    let ptx = cases().join("kernels.ptx");
    let xb = d.join("x.bin");
    let (code, out, err) = run_scale(
        ["4", "256,1,1"],
        [xb.to_str().unwrap(), "f32:-1.75", "s32:1000"],
        &[],
    );
    assert_eq!(code, 0, "{out}\n{err}");
    let got = std::fs::read(&xb).unwrap();
    for i in [0usize, 1, 999] {
        let v = f32::from_le_bytes(got[4 * i..4 * i + 4].try_into().unwrap());
        assert_eq!(v, i as f32 * 0.5 * -1.75, "element {i}");
    }
    // saxpy into a new .npy output: y = a*x + y with y = 0.
    let y = d.join("y.npy");
    let spec = format!("zeros:f32:1000:{}", y.display());
    let (code, out, err) = vgpu(&[
        "ptx",
        "run",
        ptx.to_str().unwrap(),
        "--entry",
        "saxpy",
        "--grid",
        "4,1,1",
        "--block",
        "256",
        "--arg",
        "s32:1000",
        "--arg",
        "f32:2",
        "--arg",
        xb.to_str().unwrap(),
        "--arg",
        &spec,
    ]);
    assert_eq!(code, 0, "{out}\n{err}");
    let bytes = std::fs::read(&y).unwrap();
    assert!(bytes.starts_with(b"\x93NUMPY"), "not a .npy file");
    let last = f32::from_le_bytes(bytes[bytes.len() - 4..].try_into().unwrap());
    assert_eq!(last, 999.0 * 0.5 * -1.75 * 2.0);
}

#[test]
fn bad_launches_are_errors_not_panics() {
    let ptx = cases().join("kernels.ptx");
    let p = ptx.to_str().unwrap();
    let (code, _, err) = vgpu(&[
        "ptx", "run", p, "--entry", "nope", "--grid", "1", "--block", "1",
    ]);
    assert_eq!(code, 2);
    assert!(
        err.contains("no such .entry") && err.contains("saxpy"),
        "{err}"
    );
    let (code, _, err) = vgpu(&[
        "ptx", "run", p, "--entry", "scale", "--grid", "1", "--block", "32", "--arg", "s32:1",
    ]);
    assert_eq!(code, 2);
    assert!(
        err.contains("1 arguments given, the kernel has 3 parameters"),
        "{err}"
    );
    // A buffer too small for what the kernel touches.
    let d = tmp("small");
    let xb = d.join("x.bin");
    std::fs::write(&xb, [0u8; 16]).unwrap();
    let (code, _, err) = run_scale(["1", "32"], [xb.to_str().unwrap(), "f32:1", "s32:32"], &[]);
    assert_eq!(code, 2);
    assert!(
        err.contains("out-of-bounds")
            && err.contains("entry `scale`")
            && err.contains("thread (4,0,0)"),
        "{err}"
    );
    // Garbled PTX.
    let g = d.join("bad.ptx");
    std::fs::write(&g, ".version 9.0\n.target sm_90\n.visible .entry k( {\n").unwrap();
    let (code, _, err) = vgpu(&[
        "ptx",
        "run",
        g.to_str().unwrap(),
        "--entry",
        "k",
        "--grid",
        "1",
        "--block",
        "1",
    ]);
    assert_eq!(code, 2);
    assert!(err.contains("bad.ptx:3:"), "{err}");
}

/// `vgpu ptx trace` of the repository's case `case` for thread `thread`.
fn trace(case: &str, thread: &str) -> (i32, String, String) {
    let c = cases().join(case);
    vgpu(&["ptx", "trace", c.to_str().unwrap(), "--thread", thread])
}

#[test]
fn trace_prints_the_thread_registers() {
    let (code, out, err) = trace("saxpy", "5,0,0");
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("%r5 = 5"), "{out}");
    assert!(
        out.contains("fma.rn.f32") && out.contains("%f4 = "),
        "{out}"
    );
}

#[test]
fn folder_run_reports_every_case_and_continues_past_failures() {
    // a_broken: its PTX is cut off mid-module (does not parse); b_good: a copy of
    // saxpy; c_mismatch: saxpy with one expected element changed.
    let d = tmp("folder");
    let kernels = std::fs::read_to_string(cases().join("kernels.ptx")).unwrap();
    std::fs::write(d.join("kernels.ptx"), &kernels).unwrap();
    let cut = kernels.find(".entry").expect("an entry") + 40;
    std::fs::write(d.join("broken.ptx"), &kernels[..cut]).unwrap();
    let saxpy = cases().join("saxpy");
    for name in ["a_broken", "b_good", "c_mismatch"] {
        let c = d.join(name);
        std::fs::create_dir_all(&c).unwrap();
        for f in ["case.json", "x.bin", "y.bin", "y.expect.bin"] {
            std::fs::copy(saxpy.join(f), c.join(f)).unwrap();
        }
    }
    let json = std::fs::read_to_string(saxpy.join("case.json")).unwrap();
    std::fs::write(
        d.join("a_broken/case.json"),
        json.replace("../kernels.ptx", "../broken.ptx"),
    )
    .unwrap();
    let mut want = std::fs::read(saxpy.join("y.expect.bin")).unwrap();
    want[3 * 4] ^= 1;
    std::fs::write(d.join("c_mismatch/y.expect.bin"), want).unwrap();

    let (code, out, err) = vgpu(&["ptx", "run", d.to_str().unwrap()]);
    assert_eq!(code, 1, "{out}\n{err}");
    let at = |s: &str| {
        out.find(s)
            .unwrap_or_else(|| panic!("`{s}` missing:\n{out}"))
    };
    // Each case is reported, in order, with its outcome and reason.
    assert!(
        at("a_broken") < at("ERROR: ") && at("ERROR: ") < at("b_good"),
        "{out}"
    );
    assert!(
        out.contains("broken.ptx:"),
        "the parse error names file:line: {out}"
    );
    assert!(
        at("b_good") < at("PASS") && at("PASS") < at("c_mismatch"),
        "{out}"
    );
    assert!(
        at("c_mismatch") < at("MISMATCH") && at("MISMATCH") < at("FAIL"),
        "{out}"
    );
    assert!(out.contains("3 cases: 1 pass, 1 fail, 1 error"), "{out}");
}

/// `vgpu ptx run kernels.ptx --entry scale --grid G --block B --arg X --arg A
/// --arg N` for `[G, B]` and `[X, A, N]` (the buffer, the factor, the
/// element count), with `extra` options.
fn run_scale(launch: [&str; 2], args: [&str; 3], extra: &[&str]) -> (i32, String, String) {
    let ptx = cases().join("kernels.ptx");
    let [grid, block] = launch;
    let mut a = vec![
        "ptx",
        "run",
        ptx.to_str().unwrap(),
        "--entry",
        "scale",
        "--grid",
        grid,
        "--block",
        block,
    ];
    for arg in args {
        a.extend(["--arg", arg]);
    }
    a.extend_from_slice(extra);
    vgpu(&a)
}

/// The arguments of `scale` over `X`: factor 1, 4 elements.
fn scale_4(x: &str) -> [&str; 3] {
    [x, "f32:1", "s32:4"]
}

#[test]
fn buffers_of_every_element_type_read_and_write_as_npy() {
    // `zeros:` and `.npy` buffers take the one vocabulary's element types
    // (`vgpu_field::Dtype`), narrow integers and the `i16` spelling included:
    // 8 × i16 is the 4 f32 words `scale` reads and writes.
    let d = tmp("dtypes");
    let a = d.join("a.npy");
    let spec = format!("zeros:i16:8:{}", a.display());
    let (code, out, err) = run_scale(["1", "4,1,1"], scale_4(&spec), &[]);
    assert_eq!(code, 0, "{out}\n{err}");
    let got: ndarray::Array1<i16> = ndarray_npy::read_npy(&a).unwrap();
    assert_eq!(got.to_vec(), vec![0i16; 8]);
    // Back in as an input: 1.5f32 is 0x3fc00000, two i16 halves (low first).
    let x = ndarray::Array1::from(vec![0i16, 0x3fc0, 0, 0x3fc0, 0, 0x3fc0, 0, 0x3fc0]);
    ndarray_npy::write_npy(&a, &x).unwrap();
    let (code, out, err) = run_scale(["1", "4,1,1"], [a.to_str().unwrap(), "f32:2", "i32:4"], &[]);
    assert_eq!(code, 0, "{out}\n{err}");
    let got: ndarray::Array1<i16> = ndarray_npy::read_npy(&a).unwrap();
    // 1.5 × 2 = 3.0f32 = 0x40400000.
    assert_eq!(got.to_vec(), [0i16, 0x4040].repeat(4));
    // An unknown element type names the ones there are.
    let bad = format!("zeros:q16:8:{}", a.display());
    let (code, out, err) = run_scale(["1", "4,1,1"], scale_4(&bad), &[]);
    assert_eq!(code, 2, "{out}\n{err}");
    assert!(
        err.contains("unknown dtype `q16`") && err.contains("s16, s32"),
        "{err}"
    );
}

#[test]
fn hostile_sizes_are_refused_naming_the_limit_and_the_option() {
    // A result slot per block used to be allocated for 2^31 blocks: an abort.
    let z = scale_4("zeros:f32:4:z.npy");
    let (code, _, err) = run_scale(["2147483648", "1"], z, &[]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("2147483647"), "{err}");
    let (code, _, err) = run_scale(["2147483647", "1"], z, &["--max-memory", "64M"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("result slot") && err.contains("64.0 MiB") && err.contains("--max-memory"),
        "{err}"
    );
    let (code, _, err) = run_scale(["65536,65535,2", "1"], z, &[]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--max-threads"), "{err}");
    // 10^10 zeros, and 2^62 × 4 bytes (wraps to 0 unchecked).
    let d = tmp("hostile-sizes");
    let out = d.join("out.bin");
    let zeros = format!("zeros:f32:10000000000:{}", out.display());
    let (code, _, err) = run_scale(["1", "32"], scale_4(&zeros), &["--max-memory", "1G"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("zeros:f32:10000000000") && err.contains("--max-memory"),
        "{err}"
    );
    let zeros = format!("zeros:f32:4611686018427387904:{}", out.display());
    let (code, _, err) = run_scale(["1", "32"], scale_4(&zeros), &[]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("2^64"), "{err}");
    assert!(!out.exists());
}

#[test]
fn a_device_as_a_buffer_file_is_not_read() {
    let d = tmp("device");
    let z = d.join("zero.bin");
    let _ = std::fs::remove_file(&z);
    std::os::unix::fs::symlink("/dev/zero", &z).unwrap();
    let (code, _, err) = run_scale(["1", "32"], scale_4(z.to_str().unwrap()), &[]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("not a regular file"), "{err}");
}

#[test]
fn trace_of_a_thread_outside_the_launch_is_an_error() {
    let (code, out, err) = trace("scale", "999");
    assert_ne!(code, 0, "{out}");
    assert!(
        err.contains("(999,0,0)") && err.contains("256 threads per block"),
        "{out}\n{err}"
    );
}

#[test]
fn a_case_naming_a_file_outside_it_is_refused_without_its_contents() {
    let d = tmp("outside");
    let secret = d.join("secret.txt");
    std::fs::write(&secret, "TOPSECRET-token\n").unwrap();
    let case = d.join("cases/c");
    std::fs::create_dir_all(&case).unwrap();
    let json = std::fs::read_to_string(cases().join("scale/case.json"))
        .unwrap()
        .replace("../kernels.ptx", secret.to_str().unwrap());
    std::fs::write(case.join("case.json"), json).unwrap();
    std::fs::copy(cases().join("scale/x.bin"), case.join("x.bin")).unwrap();
    let (code, out, err) = vgpu(&["ptx", "run", case.to_str().unwrap()]);
    assert_eq!(code, 2, "{out}");
    assert!(
        err.contains("outside the case's folder") && err.contains("--allow-outside"),
        "{err}"
    );
    let (code, out, err) = vgpu(&["ptx", "run", case.to_str().unwrap(), "--allow-outside"]);
    assert_eq!(code, 2, "{out}");
    assert!(err.contains("not a PTX module"), "{err}");
    assert!(
        !err.contains("TOPSECRET") && !out.contains("TOPSECRET"),
        "{out}\n{err}"
    );
    // /etc/hostname, the campaign's example.
    if let Ok(host) = std::fs::read_to_string("/etc/hostname") {
        let json = std::fs::read_to_string(cases().join("scale/case.json"))
            .unwrap()
            .replace("../kernels.ptx", "/etc/hostname");
        std::fs::write(case.join("case.json"), json).unwrap();
        for extra in [&[][..], &["--allow-outside"][..]] {
            let mut a = vec!["ptx", "run", case.to_str().unwrap()];
            a.extend_from_slice(extra);
            let (code, out, err) = vgpu(&a);
            assert_eq!(code, 2, "{out}");
            let h = host.trim();
            assert!(h.is_empty() || !err.contains(h), "{err}");
        }
    }
    // A case under a memory limit too small for its buffer: the flag raises it.
    let (code, _, err) = vgpu(&[
        "ptx",
        "run",
        cases().join("scale").to_str().unwrap(),
        "--max-memory",
        "1K",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("buffer `x`") && err.contains("--max-memory"),
        "{err}"
    );
}

#[test]
fn initcheck_reports_a_zeros_buffer_read_before_it_is_written() {
    // The planted case's kernel adds into its second buffer: given as
    // `zeros:` (allocated, not written by the host), --initcheck reports the
    // read; without it the kernel runs.
    let c = PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../vgpu-ptx/tests/cases/uninitialized_global"
    ));
    let d = tmp("initcheck");
    let x = d.join("x.bin");
    std::fs::copy(c.join("x.bin"), &x).unwrap();
    let sum = format!("zeros:u32:32:{}", d.join("sum.bin").display());
    let ptx = c.join("kernel.ptx");
    let run = |extra: &[&str]| {
        let mut a = vec![
            "ptx",
            "run",
            ptx.to_str().unwrap(),
            "--entry",
            "uninitialized_global",
            "--grid",
            "1",
            "--block",
            "32",
            "--arg",
            x.to_str().unwrap(),
            "--arg",
            &sum,
        ];
        a.extend_from_slice(extra);
        vgpu(&a)
    };
    // The read reported (by `check`, the checker that names itself).
    let reported = |extra: &[&str], check: &str| {
        let (code, out, err) = run(extra);
        assert_ne!(code, 0, "{out}\n{err}");
        let all = format!("{out}{err}");
        assert!(
            all.contains("uninitialized")
                && all.contains("buffer 1")
                && all.contains("PTX line 21")
                && all.contains(check),
            "{all}"
        );
    };
    reported(&["--initcheck"], "initcheck");
    let (code, out, err) = run(&[]);
    assert_eq!(code, 0, "{out}\n{err}");
    let (code, _, err) = run(&["--initcheck", "--backend", "gpu", "--unchecked"]);
    assert_eq!(code, 2);
    assert!(err.contains("drop --unchecked"), "{err}");
    if common::ptx_gpu::no_adapter() {
        return;
    }
    // The checked GPU kernel reports the same read.
    reported(&["--initcheck", "--backend", "gpu"], "GPU kernel check");
}

#[test]
fn the_report_says_when_the_devices_fma_ran_guarded() {
    // Over the model of a flushing fma (as NVIDIA's is), lorenz_rk4 passes
    // with its fmas guarded, and the report says so.
    if common::ptx_gpu::no_adapter() || !vgpu::gpu::GpuContext::get().unwrap().has_f64() {
        return;
    }
    let c = cases().join("lorenz_rk4");
    let (code, out, err) = common::vgpu_env(
        &["ptx", "run", c.to_str().unwrap(), "--backend", "gpu"],
        &[("VGPU_PTX_EXACT_FMA", "flush-model")],
    );
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(
        out.contains("PASS") && out.contains("fma_f32 native, guarded"),
        "{out}"
    );
}
