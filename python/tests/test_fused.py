"""VGPUCache's fused kernels (relu, bias_add, softmax, matmul_bias_relu):
values against numpy, compile counting, shape and dtype errors, layouts."""

import numpy as np
import pytest

import vgpu


def rand(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


def softmax_ref(x):
    """The textbook formula in float64 (NaN and inf as numpy gives them)."""
    x = x.astype(np.float64)
    with np.errstate(invalid="ignore"):
        e = np.exp(x - x.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)


def test_relu_matches_numpy_and_keeps_nan(cache):
    rng = np.random.default_rng(1)
    x = rand(rng, 4, 5, 6)
    x[0, 0, 0], x[1, 1, 1], x[2, 2, 2] = np.nan, -np.inf, np.inf
    y = cache.relu(x)
    assert y.shape == x.shape and y.dtype == np.float32
    np.testing.assert_array_equal(y, np.where(x < 0, 0, x))  # exact; NaN == NaN here


def test_bias_add_is_exact(cache):
    rng = np.random.default_rng(2)
    x, b = rand(rng, 7, 9), rand(rng, 9)
    np.testing.assert_array_equal(cache.bias_add(x, b), x + b)


def test_softmax_matches_numpy(cache):
    rng = np.random.default_rng(3)
    x = rand(rng, 6, 11) * 10
    x[1] += 1000.0  # would overflow a plain exp
    x[2, [0, 4]] = -np.inf
    x[3] = -np.inf  # a row of only -inf: NaN, as in numpy
    x[4, 5] = np.nan  # NaN poisons its row
    y = cache.softmax(x)
    assert y.shape == x.shape and y.dtype == np.float32
    np.testing.assert_allclose(y, softmax_ref(x), rtol=1e-5, atol=1e-12)
    assert np.isnan(y[3]).all() and np.isnan(y[4]).all()
    np.testing.assert_allclose(y[[0, 1, 2, 5]].sum(axis=1), 1.0, rtol=1e-5)


@pytest.mark.parametrize("m,k,n", [(1, 1, 1), (37, 53, 29), (130, 64, 132)])
def test_matmul_bias_relu_matches_numpy(cache, m, k, n):
    rng = np.random.default_rng(m + k + n)
    a, w, b = rand(rng, m, k), rand(rng, k, n), rand(rng, n)
    ref = np.maximum(a.astype(np.float64) @ w.astype(np.float64) + b, 0)
    tol = 4 * k * np.finfo(np.float32).eps * ((np.abs(a) @ np.abs(w)).max() + np.abs(b).max())
    y = cache.matmul_bias_relu(a, w, b)
    assert y.shape == (m, n) and y.dtype == np.float32
    np.testing.assert_allclose(y, ref, rtol=0, atol=tol)


def test_stats_count_one_compile_per_kernel_and_shape():
    cache = vgpu.VGPUCache()
    rng = np.random.default_rng(4)
    x, w, b = rand(rng, 8, 4), rand(rng, 4, 3), rand(rng, 3)
    for _ in range(3):
        cache.matmul_bias_relu(x, w, b)  # one kernel for this shape
    cache.matmul_bias_relu(x[:5], w, b)  # another shape: another kernel
    cache.relu(x)
    cache.relu(x[:3])  # relu compiles once for every shape
    cache.softmax(x)  # two kernels: the row scan and the normalisation
    cache.softmax(x)
    s = cache.stats
    if cache.backend == "gpu":
        assert (s.compiles, s.cache_hits, s.gpu_dispatches, s.cpu_fallbacks) == (5, 5, 10, 0)
        assert s.bytes_uploaded > 0 and s.bytes_downloaded > 0
    else:
        assert (s.compiles, s.gpu_dispatches, s.cpu_fallbacks) == (0, 0, 8)


def test_cpu_backend_agrees_with_the_default_backend(cache):
    cpu = vgpu.VGPUCache(backend="cpu")
    rng = np.random.default_rng(5)
    a, w, b = rand(rng, 20, 16), rand(rng, 16, 12), rand(rng, 12)
    np.testing.assert_allclose(
        cpu.matmul_bias_relu(a, w, b), cache.matmul_bias_relu(a, w, b), rtol=0, atol=1e-5
    )
    np.testing.assert_allclose(cpu.softmax(a), cache.softmax(a), rtol=1e-5, atol=1e-12)
    assert cpu.stats.cpu_fallbacks == 2


def test_shape_mismatches_raise_value_error_naming_the_shapes(cache):
    x = np.ones((4, 3), np.float32)
    with pytest.raises(ValueError, match="bias has 2 elements but the matrix has 3 columns"):
        cache.bias_add(x, np.ones(2, np.float32))
    with pytest.raises(ValueError, match=r"A is 4×3 but B is 4×3"):
        cache.matmul_bias_relu(x, x, np.ones(3, np.float32))
    with pytest.raises(ValueError, match="bias has 5 elements but the matrix has 2 columns"):
        cache.matmul_bias_relu(x, np.ones((3, 2), np.float32), np.ones(5, np.float32))
    with pytest.raises(ValueError, match="bias must be a 1-D vector"):
        cache.bias_add(x, np.ones((1, 3), np.float32))
    with pytest.raises(ValueError, match="softmax: x must be a 2-D matrix"):
        cache.softmax(np.ones(3, np.float32))
    with pytest.raises(ValueError, match=r"empty \(0×3\)"):
        cache.softmax(np.ones((0, 3), np.float32))
    with pytest.raises(ValueError, match="relu: x is empty"):
        cache.relu(np.ones(0, np.float32))


def test_dtypes_are_converted_or_rejected(cache):
    xi = np.arange(-6, 6).reshape(3, 4)  # int64: converted
    np.testing.assert_array_equal(cache.relu(xi), np.maximum(xi, 0).astype(np.float32))
    np.testing.assert_array_equal(
        cache.bias_add(xi, np.array([1, 2, 3, 4], np.int32)), (xi + [1, 2, 3, 4]).astype(np.float32)
    )
    x64 = np.linspace(-1, 1, 12).reshape(3, 4)  # float64: converted
    np.testing.assert_allclose(cache.softmax(x64), softmax_ref(x64), rtol=1e-5)
    with pytest.raises(ValueError, match="has dtype complex128"):
        cache.relu(np.ones(3, np.complex128))
    with pytest.raises(ValueError, match="has dtype <U1"):
        cache.softmax(np.array([["a", "b"]]))


def test_non_contiguous_inputs_are_converted(cache):
    rng = np.random.default_rng(6)
    big = rand(rng, 10, 12)
    x = big[::2, 1::2]  # strided view
    b = rand(rng, 12)[::2]
    assert not x.flags.c_contiguous and not b.flags.c_contiguous
    np.testing.assert_array_equal(cache.bias_add(x, b), x + b)
    np.testing.assert_array_equal(cache.relu(x.T), np.where(x.T < 0, 0, x.T))
    np.testing.assert_allclose(cache.softmax(x.T), softmax_ref(x.T), rtol=1e-5)
    a = big.T  # Fortran order
    w, bias = rand(rng, 10, 7), rand(rng, 7)
    ref = np.maximum(a.astype(np.float64) @ w + bias, 0)
    np.testing.assert_allclose(cache.matmul_bias_relu(a, w, bias), ref, rtol=0, atol=1e-4)


def test_extension_rejects_what_the_wrapper_would_convert(cache):
    ext = cache._cache
    with pytest.raises(ValueError, match="not C-contiguous"):
        ext.relu(np.ones((4, 4), np.float32)[:, ::2])
    with pytest.raises(ValueError, match="must be a float32"):
        ext.relu(np.ones(4, np.float64))
    with pytest.raises(ValueError, match="bias must be 1-D"):
        ext.bias_add(np.ones((2, 2), np.float32), np.ones((2, 1), np.float32))
