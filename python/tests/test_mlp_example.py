"""examples/mlp.py: the MLP trains to >= 95% with every matmul (and the fused
hidden layer and softmax) through VGPUCache."""

import importlib.util
import os
import pathlib
import sys

import numpy as np
import pytest

import vgpu

EXAMPLE = pathlib.Path(__file__).resolve().parents[2] / "examples" / "mlp.py"


@pytest.fixture(scope="module")
def mlp():
    spec = importlib.util.spec_from_file_location("vgpu_mlp_example", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


class CountingCache:
    """Wraps a VGPUCache and records each call: (method, input shapes)."""

    def __init__(self, cache):
        self.cache = cache
        self.calls = []

    def _call(self, name, *args):
        self.calls.append((name, tuple(np.shape(a) for a in args)))
        return getattr(self.cache, name)(*args)

    def matmul(self, a, b):
        return self._call("matmul", a, b)

    def matmul_bias_relu(self, a, w, bias):
        return self._call("matmul_bias_relu", a, w, bias)

    def softmax(self, x):
        return self._call("softmax", x)


def test_spirals(mlp):
    x, y = mlp.make_spirals()
    assert x.shape == (1000, 2) and x.dtype == np.float32
    assert np.bincount(y).tolist() == [500, 500]
    assert np.abs(x).max() < 1.0 + 5 * mlp.NOISE
    # Same seed, same data; another seed, other data.
    assert np.array_equal(mlp.make_spirals()[0], x)
    assert not np.array_equal(mlp.make_spirals(seed=1)[0], x)


def test_training_reaches_95_percent_with_every_matmul_cached(mlp, require_gpu):
    cache = vgpu.VGPUCache()
    counting = CountingCache(cache)
    x, y = mlp.make_spirals()
    epochs = 150
    run = mlp.train(counting, x, y, epochs=epochs)
    assert run.accuracy >= 0.95, run.accuracy
    assert len(run.losses) == epochs and run.losses[-1] < run.losses[0] / 4
    # Every product went through the cache: per SGD step one matmul_bias_relu
    # (x W1 + b1, relu), four matmuls (h W2; h^T d2, d2 W2^T, x^T dz) and one
    # softmax; for the accuracy, one matmul_bias_relu and one matmul.
    steps = epochs * (1000 // mlp.BATCH)
    kinds = [name for name, _ in counting.calls]
    assert kinds.count("matmul_bias_relu") == steps + 1
    assert kinds.count("matmul") == 4 * steps + 1
    assert kinds.count("softmax") == steps
    # Kernels: one per distinct matmul shape (fused and plain apart), and the
    # softmax's two (row scan and normalisation) for every shape.
    distinct = len({c for c in counting.calls if c[0] != "softmax"})
    assert distinct == 7
    kernels = distinct + 2
    dispatches = len(counting.calls) + steps  # a softmax is two dispatches
    s = cache.stats
    if cache.backend == "gpu":
        assert (s.compiles, s.cache_hits, s.gpu_dispatches) == (
            kernels, dispatches - kernels, dispatches)
    else:
        assert s.cpu_fallbacks == len(counting.calls)
    if require_gpu:
        assert cache.backend == "gpu"


def test_png_without_matplotlib(mlp, tmp_path):
    x, y = mlp.make_spirals(200, seed=2)
    cache = vgpu.VGPUCache()
    run = mlp.train(cache, x, y, epochs=3)
    grid = mlp.decision_grid(cache, run.net, size=40)
    assert grid.shape == (40, 40) and set(np.unique(grid)) <= {0, 1}
    img = mlp.draw_numpy(run.losses, grid, x, y)
    assert img.dtype == np.uint8 and img.shape[2] == 3
    data = mlp.png_bytes(img)
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    # Decode it back (IDAT is one zlib stream of filter-0 rows) and compare.
    import struct
    import zlib

    pos, idat = 8, b""
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        kind = data[pos + 4:pos + 8]
        body = data[pos + 8:pos + 8 + length]
        (crc,) = struct.unpack(">I", data[pos + 8 + length:pos + 12 + length])
        assert crc == zlib.crc32(kind + body) & 0xFFFFFFFF
        if kind == b"IHDR":
            w, h = struct.unpack(">II", body[:8])
            assert (h, w) == img.shape[:2]
        if kind == b"IDAT":
            idat += body
        pos += 12 + length
    rows = np.frombuffer(zlib.decompress(idat), np.uint8).reshape(img.shape[0], -1)
    assert (rows[:, 0] == 0).all()
    assert np.array_equal(rows[:, 1:].reshape(img.shape), img)


def test_main_writes_the_png_and_fails_under_95_percent(mlp, tmp_path, capsys):
    # 5 epochs are far too few for the spirals: main reports it with exit status 1,
    # and still prints the stats and writes the picture.
    out = tmp_path / "mlp.png"
    code = mlp.main(["--epochs", "5", "--out", str(out)])
    text = capsys.readouterr().out
    assert code == 1, text
    assert "VGPUCache: " in text and "training accuracy" in text
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert os.path.getsize(out) > 1000
