"""VGPU.ensemble(..., shard=(i, r)): one slice of a run, the whole run's rows
bit for bit (fixed-step and adaptive with saveat, u0, tspan, statuses), and
ValueErrors for a bad shard; vgpu.merge of shard files; comm= (over threads
always, under mpirun with mpi4py where it is installed)."""

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


def _write_shard(d, stem, index, count, lo, hi, rows, total, run_hash="00ff"):
    """A shard as `vgpu ensemble --shard` writes it: STEM.npy and the sidecar
    STEM.shard.json (docs/SCALING.md)."""
    import json
    np.save(d / f"{stem}.npy", rows)
    meta = {"format": "vgpu-shard-1", "version": vgpu.__version__, "run_hash": run_hash,
            "field": "f", "backend": "cpu", "shard": [index, count], "range": [lo, hi],
            "total": total, "outputs": [{"role": "out", "file": f"{stem}.npy",
                                         "dtype": "'<f4'", "shape": [total, rows.shape[1]]}]}
    (d / f"{stem}.shard.json").write_text(json.dumps(meta))
    return d / f"{stem}.npy"


def test_merge_joins_shards_into_the_whole_array(tmp_path):
    whole = np.arange(30, dtype=np.float32).reshape(10, 3) / 7
    cuts = [(0, 4), (4, 8), (8, 10)]
    shards = [_write_shard(tmp_path, f"s{i}", i, 3, lo, hi, whole[lo:hi], 10)
              for i, (lo, hi) in enumerate(cuts)]
    r = vgpu.merge(reversed(shards), tmp_path / "merged.npy")
    assert r["trajectories"] == 10 and r["shards"] == 3
    merged = np.load(tmp_path / "merged.npy")
    assert merged.dtype == np.float32
    np.testing.assert_array_equal(merged, whole)
    # A missing shard and a shard of another run are refused; nothing is written.
    out = tmp_path / "refused.npy"
    with pytest.raises(ValueError, match="missing"):
        vgpu.merge(shards[:2], out)
    other = _write_shard(tmp_path, "x2", 2, 3, 8, 10, whole[8:10], 10, run_hash="0001")
    with pytest.raises(ValueError, match="another run"):
        vgpu.merge([shards[0], shards[1], other], out)
    assert not out.exists()


class _ThreadComm:
    """An mpi4py-like communicator over threads (Get_rank, Get_size, gather,
    bcast), to test comm= without MPI."""

    def __init__(self, rank, box):
        self.rank, self.box = rank, box

    def Get_rank(self):
        return self.rank

    def Get_size(self):
        return self.box["size"]

    def _exchange(self, value):
        self.box["slots"][self.rank] = value
        self.box["barrier"].wait()
        got = list(self.box["slots"])
        self.box["barrier"].wait()
        return got

    def gather(self, value, root=0):
        got = self._exchange(value)
        return got if self.rank == root else None

    def bcast(self, value, root=0):
        return self._exchange(value)[root]


def _over_threads(size, body):
    import threading
    box = {"size": size, "slots": [None] * size, "barrier": threading.Barrier(size)}
    results = [None] * size

    def run(r):
        try:
            results[r] = ("ok", body(_ThreadComm(r, box)))
        except Exception as e:  # noqa: BLE001 - the test inspects it
            results[r] = ("err", e)

    threads = [threading.Thread(target=run, args=(r,)) for r in range(size)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=120)
    return results


def test_comm_gathers_the_whole_run_on_rank_0():
    n = 1000
    p = {"p": -np.arange(n, dtype=np.float32) / 700}
    kw = dict(n=n, t=(0, 0.5), dt=0.01, block=64, params=p, backend="cpu")
    whole = vgpu.VGPU().ensemble(INDEXED, **kw)
    results = _over_threads(3, lambda c: vgpu.VGPU().ensemble(INDEXED, comm=c, **kw))
    assert [k for k, _ in results] == ["ok"] * 3, results
    np.testing.assert_array_equal(results[0][1], whole)
    assert results[1][1] is None and results[2][1] is None
    # A rank that fails makes every rank raise, naming it (no rank hangs).
    bad = dict(kw, n=100)  # 2 blocks of 64 for 3 ranks: every rank refuses
    results = _over_threads(3, lambda c: vgpu.VGPU().ensemble(INDEXED, comm=c, **bad))
    assert all(k == "err" for k, _ in results), results
    assert "at most 2 shards" in str(results[0][1])
    with pytest.raises(ValueError, match="not both"):
        vgpu.VGPU().ensemble(INDEXED, comm=object(), shard=(0, 2), **kw)
    with pytest.raises(ValueError, match="mpi4py communicator"):
        vgpu.VGPU().ensemble(INDEXED, comm=object(), **kw)


MPI_SCRIPT = """
import sys
import numpy as np
from mpi4py import MPI
import vgpu
src, out = sys.argv[1], sys.argv[2]
n = 1000
p = {"p": -np.arange(n, dtype=np.float32) / 700}
r = vgpu.VGPU().ensemble(src, n=n, t=(0, 0.5), dt=0.01, block=64, params=p,
                         backend="cpu", comm=MPI.COMM_WORLD)
if MPI.COMM_WORLD.Get_rank() == 0:
    np.save(out, r)
else:
    assert r is None
"""


def test_comm_under_mpirun_with_mpi4py(tmp_path):
    pytest.importorskip("mpi4py")
    import shutil
    import subprocess
    import sys
    if shutil.which("mpirun") is None:
        pytest.skip("no mpirun (scripts/install-deps.sh installs openmpi-bin)")
    src = tmp_path / "indexed.field"
    src.write_text(INDEXED)
    script = tmp_path / "run.py"
    script.write_text(MPI_SCRIPT)
    out = tmp_path / "mpi.npy"
    cmd = ["mpirun", "--allow-run-as-root", "--oversubscribe", "--bind-to", "none", "-n", "2",
           sys.executable, str(script), str(src), str(out)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    n = 1000
    p = {"p": -np.arange(n, dtype=np.float32) / 700}
    whole = vgpu.VGPU().ensemble(INDEXED, n=n, t=(0, 0.5), dt=0.01, block=64, params=p, backend="cpu")
    np.testing.assert_array_equal(np.load(out), whole)
