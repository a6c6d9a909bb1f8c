//! `vgpu ptx run` and `vgpu ptx trace`, run as a user runs them.

use std::path::PathBuf;
mod common;
use common::vgpu;

fn cases() -> PathBuf {
    match std::env::var_os("VGPU_PTX_CASES") {
        Some(p) => PathBuf::from(p),
        None => PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../ptx-cases")),
    }
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("vgpu-cli-ptx-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
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
    let (code, out, err) = vgpu(&[
        "ptx",
        "run",
        ptx.to_str().unwrap(),
        "--entry",
        "scale",
        "--grid",
        "4",
        "--block",
        "256,1,1",
        "--arg",
        xb.to_str().unwrap(),
        "--arg",
        "f32:-1.75",
        "--arg",
        "s32:1000",
    ]);
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
    let (code, _, err) = vgpu(&[
        "ptx",
        "run",
        p,
        "--entry",
        "scale",
        "--grid",
        "1",
        "--block",
        "32",
        "--arg",
        xb.to_str().unwrap(),
        "--arg",
        "f32:1",
        "--arg",
        "s32:32",
    ]);
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

#[test]
fn trace_prints_the_thread_registers() {
    let c = cases().join("saxpy");
    let (code, out, err) = vgpu(&["ptx", "trace", c.to_str().unwrap(), "--thread", "5,0,0"]);
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
