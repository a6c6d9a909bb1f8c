"""VGPU.ptx_case: real nvcc PTX cases run on VGPU's SIMT field executor."""

import json
import pathlib

import pytest

import vgpu

CASES = pathlib.Path(__file__).resolve().parents[2] / "ptx-cases"
NAMES = sorted(p.name for p in CASES.iterdir() if (p / "case.json").is_file()) if CASES.is_dir() else []

needs_cases = pytest.mark.skipif(not NAMES, reason=f"no PTX cases at {CASES}")


def test_cases_are_present():
    # The corpus lives in the repository (ptx-cases/): it must be found there.
    assert NAMES, f"no PTX cases at {CASES}"


@needs_cases
@pytest.mark.parametrize("name", NAMES)
def test_case_passes(name):
    r = vgpu.VGPU().ptx_case(CASES / name)
    assert r["passed"], r
    assert r["error"] is None
    assert r["entry"]
    assert r["buffers"] and all(b["passed"] and b["mismatches"] == 0 for b in r["buffers"])
    assert r["thread_instructions"] > 0


@needs_cases
def test_case_json_path_and_options():
    name = NAMES[0]
    a = vgpu.VGPU().ptx_case(CASES / name / "case.json", check=False, parallel=False)
    b = vgpu.VGPU().ptx_case(str(CASES / name))
    assert a["passed"] and b["passed"]
    assert a["buffers"] == b["buffers"]


@needs_cases
def test_wrong_expectation_is_reported_not_raised(tmp_path):
    # A copy of the saxpy case whose expected output is the input: it runs and fails.
    src = CASES / "saxpy"
    case = json.loads((src / "case.json").read_text())
    case["ptx"] = str((src / case["ptx"]).resolve())
    for buf in case["buffers"].values():
        for key in ("init", "expect"):
            if buf.get(key):
                buf[key] = str((src / buf[key]).resolve())
    case["buffers"]["y"]["expect"] = case["buffers"]["y"]["init"]
    (tmp_path / "case.json").write_text(json.dumps(case))
    r = vgpu.VGPU().ptx_case(tmp_path)
    assert not r["passed"]
    (y,) = [b for b in r["buffers"] if b["name"] == "y"]
    assert y["mismatches"] > 0 and y["first_mismatch"] is not None


def write_case(folder, body):
    (folder / "bad.ptx").write_text(
        ".version 7.0\n.target sm_80\n.address_size 64\n\n.visible .entry k(\n"
        "  .param .u64 p\n)\n{\n" + body + "\n}\n"
    )
    case = {"ptx": "bad.ptx", "entry": "k", "grid": [1, 1, 1], "block": [1, 1, 1],
            "args": [{"kind": "scalar", "type": "u64", "value": 0}], "buffers": {}}
    (folder / "case.json").write_text(json.dumps(case))
    return folder / "case.json"


def test_garbage_ptx_names_file_line_col(tmp_path):
    # A syntax error: file:line:col.
    with pytest.raises(vgpu.VGPUError, match=r"bad\.ptx:9:16: expected an operand"):
        vgpu.VGPU().ptx_case(write_case(tmp_path, "  add.f32 %f1, , 3;"))
    # An instruction VGPU does not know: file:line.
    with pytest.raises(vgpu.VGPUError, match=r"bad\.ptx:9\b.*frobnicate"):
        vgpu.VGPU().ptx_case(write_case(tmp_path, "  frobnicate.f32 %f1, %f2;"))


def test_missing_case_is_vgpu_error(tmp_path):
    with pytest.raises(vgpu.VGPUError):
        vgpu.VGPU().ptx_case(tmp_path / "nothing" / "case.json")
