"""VGPU: the equivalence demos from Python."""

import pytest

import vgpu

DEMOS = ["scale", "matmul", "relax", "reverse", "tree-sum", "histogram"]
KEYS = {"name", "passed", "max_error", "tolerance", "trajectories", "steps", "seconds", "note"}


def test_demos_all_pass():
    reports = vgpu.VGPU().demos(n=4096)
    assert [r["name"] for r in reports] == DEMOS
    for r in reports:
        assert set(r) == KEYS
        assert r["passed"], r
        assert r["max_error"] <= r["tolerance"], r
        assert r["trajectories"] >= 1 and r["steps"] >= 0
        assert r["seconds"] >= 0.0


def test_bit_exact_demos_have_zero_error():
    reports = {r["name"]: r for r in vgpu.VGPU().demos(n=1000, mat=(5, 7, 3), block=64, threads=1)}
    for name in ("scale", "matmul", "reverse", "tree-sum", "histogram"):
        assert reports[name]["tolerance"] == 0.0
        assert reports[name]["max_error"] == 0.0
    # One trajectory per C[i, j] (plus guard lanes), K unit steps of dt = 1.
    assert reports["matmul"]["trajectories"] >= 5 * 3
    assert reports["matmul"]["steps"] == 7


def test_demos_are_deterministic_across_thread_counts():
    one = vgpu.VGPU().demos(n=3000, threads=1, seed=42)
    two = vgpu.VGPU().demos(n=3000, threads=2, seed=42)
    assert [(r["name"], r["max_error"], r["steps"]) for r in one] == [
        (r["name"], r["max_error"], r["steps"]) for r in two
    ]


def test_demos_bad_input():
    with pytest.raises(ValueError, match="method"):
        vgpu.VGPU().demos(method="midpoint")
    with pytest.raises(vgpu.VGPUError, match="n must be at least 1"):
        vgpu.VGPU().demos(n=0)
    with pytest.raises(vgpu.VGPUError):
        vgpu.VGPU().demos(block=4096)


def test_repr():
    assert repr(vgpu.VGPU()) == "VGPU()"
