"""VGPUCache: matmul against numpy, the cache counters, bad input."""

import threading

import numpy as np
import pytest

import vgpu


def rand(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


def close_to_numpy(c, a, b):
    """float32 GEMM orders may differ from numpy's: compare with a tolerance
    scaled by k (the number of products summed)."""
    ref = a.astype(np.float64) @ b.astype(np.float64)
    k = a.shape[1]
    tol = 4 * k * np.finfo(np.float32).eps * (np.abs(a) @ np.abs(b)).max()
    np.testing.assert_allclose(c, ref, rtol=0, atol=tol)


@pytest.mark.parametrize("m,k,n", [(1, 1, 1), (3, 5, 7), (64, 32, 16), (100, 2, 64), (130, 129, 131)])
def test_matmul_matches_numpy(cache, m, k, n):
    rng = np.random.default_rng(m * 1000 + k * 10 + n)
    a, b = rand(rng, m, k), rand(rng, k, n)
    c = cache.matmul(a, b)
    assert isinstance(c, np.ndarray)
    assert c.dtype == np.float32
    assert c.shape == (m, n)
    assert c.flags.c_contiguous
    close_to_numpy(c, a, b)


def test_matmul_exact_on_small_integers(cache):
    # Products and sums of small integers are exact in float32: any order gives the same bits.
    rng = np.random.default_rng(7)
    a = rng.integers(-8, 8, (33, 17)).astype(np.float32)
    b = rng.integers(-8, 8, (17, 9)).astype(np.float32)
    assert np.array_equal(cache.matmul(a, b), a @ b)


def test_stats_count_one_compile_per_shape():
    cache = vgpu.VGPUCache()
    rng = np.random.default_rng(1)
    shapes = [(8, 4, 2), (8, 4, 2), (8, 4, 2), (5, 3, 6), (5, 3, 6)]
    for m, k, n in shapes:
        cache.matmul(rand(rng, m, k), rand(rng, k, n))
    s = cache.stats
    assert isinstance(s, vgpu.CacheStats)
    if cache.backend == "gpu":
        assert s.compiles == 2
        assert s.cache_hits == 3
        assert s.gpu_dispatches == 5
        assert s.cpu_fallbacks == 0
        assert s.bytes_uploaded > 0 and s.bytes_downloaded > 0
        assert s.compile_seconds > 0
    else:
        assert s.cpu_fallbacks == 5
        assert s.gpu_dispatches == 0
    d = s.to_dict()
    assert set(d) == {
        "compiles", "cache_hits", "gpu_dispatches", "cpu_fallbacks",
        "bytes_uploaded", "bytes_downloaded", "compile_seconds",
    }
    assert d["cpu_fallbacks"] == s.cpu_fallbacks
    assert str(s).startswith("VGPUCache: ")
    assert "compiles=" in repr(s)


def test_backend_and_adapter(cache, require_gpu):
    assert cache.backend in ("gpu", "cpu")
    if require_gpu:
        assert cache.backend == "gpu", cache.fallback_reason
    if cache.backend == "gpu":
        a = cache.adapter
        assert set(a) == {"name", "backend", "device_type", "driver"}
        assert a["name"]
        assert cache.fallback_reason is None
    else:
        assert cache.adapter is None
        assert cache.fallback_reason
    assert "VGPUCache(" in repr(cache)


def test_cpu_backend_counts_fallbacks():
    cache = vgpu.VGPUCache(backend="cpu")
    assert cache.backend == "cpu"
    assert cache.adapter is None
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.arange(12, dtype=np.float32).reshape(3, 4)
    assert np.array_equal(cache.matmul(a, b), a @ b)
    assert cache.stats.cpu_fallbacks == 1
    assert cache.stats.compiles == 0


def test_bad_backend_name():
    with pytest.raises(ValueError, match="backend='tpu'|backend=\"tpu\""):
        vgpu.VGPUCache(backend="tpu")


def test_shape_mismatch_names_the_shapes(cache):
    a = np.ones((3, 4), np.float32)
    b = np.ones((5, 2), np.float32)
    with pytest.raises(ValueError) as e:
        cache.matmul(a, b)
    msg = str(e.value)
    assert "3×4" in msg and "5×2" in msg


def test_empty_matrix_is_value_error(cache):
    with pytest.raises(ValueError, match="empty"):
        cache.matmul(np.ones((0, 3), np.float32), np.ones((3, 2), np.float32))


def test_not_2d_is_value_error(cache):
    with pytest.raises(ValueError, match=r"2-D.*\(4,\)"):
        cache.matmul(np.ones(4, np.float32), np.ones((4, 2), np.float32))
    with pytest.raises(ValueError, match="2-D"):
        cache.matmul(np.ones((2, 2, 2), np.float32), np.ones((2, 2), np.float32))


def test_non_contiguous_inputs_are_converted(cache):
    rng = np.random.default_rng(3)
    big = rand(rng, 20, 30)
    a = big[::2, ::3]  # strided view, 10x10
    b = big.T[:10, :7]  # transposed view (Fortran order), 10x7
    assert not a.flags.c_contiguous and not b.flags.c_contiguous
    close_to_numpy(cache.matmul(a, b), np.ascontiguousarray(a), np.ascontiguousarray(b))


def test_other_real_dtypes_are_converted(cache):
    a = np.arange(12, dtype=np.float64).reshape(3, 4)
    b = np.arange(8, dtype=np.int64).reshape(4, 2)
    c = cache.matmul(a, b)
    assert c.dtype == np.float32
    assert np.array_equal(c, (a @ b).astype(np.float32))
    # Nested lists are array-likes too.
    assert np.array_equal(cache.matmul([[1, 2]], [[3], [4]]), np.array([[11]], np.float32))


@pytest.mark.parametrize("bad", [
    np.ones((2, 2), np.complex64),
    np.array([["a", "b"], ["c", "d"]]),
    np.array([[object(), 1], [2, 3]], dtype=object),
])
def test_non_real_dtypes_are_rejected(cache, bad):
    with pytest.raises(ValueError, match="dtype"):
        cache.matmul(bad, np.ones((2, 2), np.float32))


def test_extension_checks_its_own_input(cache):
    # The compiled layer refuses what the Python wrapper would have converted.
    raw = vgpu._vgpu.VgpuCache("cpu")
    f32 = np.ones((4, 4), np.float32)
    with pytest.raises(ValueError, match="float32"):
        raw.matmul(np.ones((4, 4), np.float64), f32)
    with pytest.raises(ValueError, match="C-contiguous"):
        raw.matmul(np.ones((4, 8), np.float32)[:, ::2], f32)
    with pytest.raises(TypeError, match="numpy array"):
        raw.matmul([[1.0]], f32)


def test_inputs_are_not_modified(cache):
    rng = np.random.default_rng(5)
    a, b = rand(rng, 9, 7), rand(rng, 7, 5)
    a0, b0 = a.copy(), b.copy()
    cache.matmul(a, b)
    assert np.array_equal(a, a0) and np.array_equal(b, b0)


def test_threads_share_one_cache(cache):
    rng = np.random.default_rng(11)
    pairs = [(rand(rng, 16, 8), rand(rng, 8, 4)) for _ in range(8)]
    results = [None] * len(pairs)
    errors = []

    def work(i):
        try:
            for _ in range(5):
                results[i] = cache.matmul(*pairs[i])
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(pairs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for (a, b), c in zip(pairs, results):
        close_to_numpy(c, a, b)


def test_vgpu_error_is_an_exception_class():
    assert issubclass(vgpu.VGPUError, Exception)
    assert not issubclass(vgpu.VGPUError, ValueError)
    assert vgpu.VGPUError.__module__ == "vgpu"
