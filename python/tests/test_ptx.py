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
def test_gpu_backend_runs_the_compiled_kernel(require_gpu):
    # The same case on the interpreter and compiled for the GPU: both pass
    # against nvcc's outputs, with the same buffers; "gpu" never falls back.
    if vgpu.VGPUCache().backend != "gpu":
        assert not require_gpu
        pytest.skip("no GPU adapter")
    v = vgpu.VGPU()
    cpu = v.ptx_case(CASES / "scale")
    gpu = v.ptx_case(CASES / "scale", backend="gpu")
    assert cpu["backend"] == "cpu" and cpu["gpu_launches"] == 0
    assert gpu["backend"] == "gpu" and gpu["gpu_launches"] == 1 and gpu["fallbacks"] == []
    assert gpu["passed"], gpu
    assert gpu["buffers"] == cpu["buffers"]
    auto = v.ptx_case(CASES / "scale", backend="auto")
    assert auto["passed"] and auto["gpu_launches"] == 1 and auto["fallbacks"] == []


def test_gpu_race_check_is_asked_for(require_gpu):
    # vgpu-ptx's planted race: the interpreter reports it; the GPU kernel
    # only with racecheck=True (as compute-sanitizer's racecheck, a tool of
    # its own). Without it the case, which expects the race, does not pass:
    # nothing is reported as a race (here the uninitialised-shared check
    # sees the read that the later write makes a race).
    if vgpu.VGPUCache().backend != "gpu":
        assert not require_gpu
        pytest.skip("no GPU adapter")
    case = CASES.parent / "crates" / "vgpu-ptx" / "tests" / "cases" / "shared_race"
    v = vgpu.VGPU()
    assert v.ptx_case(case)["passed"]
    on = v.ptx_case(case, backend="gpu", racecheck=True)
    assert on["passed"] and "race" in on["error"], on
    off = v.ptx_case(case, backend="gpu")
    assert not off["passed"] and not (off["error"] or "").startswith("race"), off


def test_ptx_backend_errors(tmp_path):
    with pytest.raises(ValueError, match="expected cpu, gpu or auto"):
        vgpu.VGPU().ptx_case(tmp_path, backend="tpu")


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
    # (A case's files must lie in its folder or that folder's parent: copies.)
    src = CASES / "saxpy"
    case = json.loads((src / "case.json").read_text())
    (tmp_path / "kernels.ptx").write_bytes((src / case["ptx"]).read_bytes())
    case["ptx"] = "kernels.ptx"
    for buf in case["buffers"].values():
        for key in ("init", "expect"):
            if buf.get(key):
                (tmp_path / buf[key]).write_bytes((src / buf[key]).read_bytes())
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


def hostile_case(folder, grid=(1, 1, 1), length=4, ptx="bad.ptx"):
    write_case(folder, "  ret;")
    case = json.loads((folder / "case.json").read_text())
    case.update(grid=list(grid), ptx=ptx,
                args=[{"kind": "buffer", "name": "b"}],
                buffers={"b": {"dtype": "f32", "len": length}})
    (folder / "case.json").write_text(json.dumps(case))
    return folder / "case.json"


def test_hostile_sizes_raise_not_abort(tmp_path):
    # Sizes are checked before anything is allocated: the interpreter survives.
    assert vgpu.VGPU().ptx_case(hostile_case(tmp_path))["passed"]
    with pytest.raises(ValueError, match="2147483647"):
        vgpu.VGPU().ptx_case(hostile_case(tmp_path, grid=(2**31, 1, 1)))
    with pytest.raises(ValueError, match="threads"):
        vgpu.VGPU().ptx_case(hostile_case(tmp_path, grid=(2**31 - 1, 65535, 65535)))
    with pytest.raises(MemoryError, match="result slot"):
        vgpu.VGPU().ptx_case(hostile_case(tmp_path, grid=(2**31 - 1, 1, 1)))
    with pytest.raises(MemoryError, match="buffer `b`"):
        vgpu.VGPU().ptx_case(hostile_case(tmp_path, length=10**15))
    with pytest.raises(MemoryError, match=r"2\^64"):
        vgpu.VGPU().ptx_case(hostile_case(tmp_path, length=2**62))


def test_files_outside_the_case_are_refused(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("TOPSECRET\n")
    case = tmp_path / "cases" / "c"
    case.mkdir(parents=True)
    with pytest.raises(vgpu.VGPUError, match="outside the case's folder") as e:
        vgpu.VGPU().ptx_case(hostile_case(case, ptx=str(secret)))
    assert "TOPSECRET" not in str(e.value)


def test_initcheck_reports_an_output_read_before_anything_wrote_it(tmp_path):
    # A kernel adds into `sum`, a buffer the case gives no `init` (allocated,
    # not written by the host): with initcheck=True that read is reported.
    (tmp_path / "k.ptx").write_text(
        ".version 8.0\n.target sm_80\n.address_size 64\n"
        ".visible .entry k(.param .u64 p)\n{\n"
        ".reg .b32 %r<4>;\n.reg .b64 %rd<4>;\n"
        "ld.param.u64 %rd1, [p];\ncvta.to.global.u64 %rd1, %rd1;\n"
        "ld.global.u32 %r1, [%rd1];\nadd.s32 %r1, %r1, 1;\nst.global.u32 [%rd1], %r1;\n"
        "ret;\n}\n"
    )
    case = {"ptx": "k.ptx", "entry": "k", "grid": [1, 1, 1], "block": [1, 1, 1],
            "args": [{"kind": "buffer", "name": "sum"}],
            "buffers": {"sum": {"dtype": "u32", "len": 1}}}
    (tmp_path / "case.json").write_text(json.dumps(case))
    r = vgpu.VGPU().ptx_case(tmp_path, initcheck=True)
    assert not r["passed"]
    assert "uninitialized" in r["error"] and "PTX line 10" in r["error"], r["error"]
    assert "buffer 0 (sum)" in r["error"], r["error"]
    # Off by default: the kernel runs.
    assert vgpu.VGPU().ptx_case(tmp_path)["error"] is None
    # The GPU's checked kernel reports the same read.
    if vgpu.VGPUCache().backend == "gpu":
        g = vgpu.VGPU().ptx_case(tmp_path, initcheck=True, backend="gpu")
        assert not g["passed"], g
        assert "uninitialized" in g["error"] and "PTX line 10" in g["error"], g["error"]
        assert "buffer 0 (sum)" in g["error"], g["error"]
