"""VGPU.ensemble(..., shard=(i, r)): one slice of a run, the whole run's rows
bit for bit (fixed-step and adaptive with saveat, u0, tspan, statuses), and
ValueErrors for a bad shard."""

import pathlib

import numpy as np
import pytest

import vgpu

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples"

# Every launch value the kernel can read: a slice must see the whole run's.
INDEXED = """field indexed(p: f32[]) {
    state x = f32(i) + 0.5 * f32(n), y = f32(bid * 1000u + tid), z = f32(gdim);
    d(x)/dt = p[i] * x - f32(n) * 0.001;
    d(y)/dt = sin(y) + f32(bdim);
    d(z)/dt = z * 0.1 + f32(tid);
}"""


@pytest.fixture(scope="module")
def v() -> vgpu.VGPU:
    return vgpu.VGPU()


def test_fixed_step_shards_concatenate_to_the_whole_run(v):
    n = 1000
    p = {"p": -np.arange(n, dtype=np.float32) / 700}
    whole = v.ensemble(INDEXED, n=n, t=(0, 0.5), dt=0.01, block=64, params=p, backend="cpu")
    for r in (2, 3, 7):
        parts = [v.ensemble(INDEXED, n=n, t=(0, 0.5), dt=0.01, block=64, params=p,
                            backend="cpu", shard=(i, r)) for i in range(r)]
        assert all(len(s) % 64 == 0 for s in parts[:-1])
        np.testing.assert_array_equal(np.concatenate(parts), whole)


def test_adaptive_shards_concatenate_to_the_whole_run(v):
    n = 60
    rho = {"rho": np.linspace(0, 40, n)}
    u0 = np.stack([1 + np.arange(n) / 50, np.zeros(n), np.zeros(n)], axis=1)
    tspan = np.stack([np.zeros(n), 0.5 + np.arange(n) / 100], axis=1)
    kw = dict(n=n, method="tsit5", rtol=1e-5, saveat=[0.0, 0.25, 0.5], u0=u0, tspan=tspan,
              params=rho, backend="cpu", return_status=True)
    whole = v.ensemble(EXAMPLES / "lorenz.field", **kw)
    parts = [v.ensemble(EXAMPLES / "lorenz.field", shard=(i, 4), **kw) for i in range(4)]
    for j in range(3):
        np.testing.assert_array_equal(np.concatenate([s[j] for s in parts]), whole[j])


@pytest.mark.parametrize("shard, want", [((2, 2), "0 <= i < r"), ((0, 0), "0 <= i < r"),
                                         ("0/2", "expected (i, r)"), ((0, 17), "at most 16 shards")])
def test_bad_shards_are_value_errors(v, shard, want):
    with pytest.raises(ValueError, match=want.replace("(", r"\(").replace(")", r"\)")):
        v.ensemble(INDEXED, n=1000, t=(0, 0.5), dt=0.01, block=64,
                   params={"p": np.zeros(1000, np.float32)}, backend="cpu", shard=shard)
