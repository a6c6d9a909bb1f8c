"""VGPU.ensemble: .field kernels integrated over ensembles, numpy in and out."""

import pathlib

import numpy as np
import pytest

import vgpu

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples"

RELAX = """
field relax(x0: f32[]) {
    state h = x0[i];
    d(h)/dt = sin(init(h)) - h;
}
"""


def lorenz_rk4_f64(rho, steps, dt):
    """The Lorenz system (sigma 10, beta 8/3, u0 (1, 0, 0)) by RK4 in float64."""
    u = np.zeros((len(rho), 3))
    u[:, 0] = 1.0

    def f(u):
        x, y, z = u[:, 0], u[:, 1], u[:, 2]
        return np.stack([10.0 * (y - x), x * (rho - z) - y, x * y - 8.0 / 3.0 * z], axis=1)

    for _ in range(steps):
        k1 = f(u)
        k2 = f(u + dt / 2 * k1)
        k3 = f(u + dt / 2 * k2)
        k4 = f(u + dt * k3)
        u = u + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    return u


def test_lorenz_file_matches_float64_rk4():
    n = 512
    rho = np.linspace(0.0, 21.0, n)
    out = vgpu.VGPU().ensemble(
        EXAMPLES / "lorenz.field", n=n, t=(0.0, 0.2), dt=0.001, method="rk4",
        params={"rho": rho}, backend="cpu",
    )
    assert out.shape == (n, 3) and out.dtype == np.float32
    ref = lorenz_rk4_f64(rho, 200, 0.001)
    # f32 rounding over 200 RK4 steps of a system with |u| <= ~20: well under 1e-3.
    np.testing.assert_allclose(out, ref, rtol=0, atol=1e-3)
    # The path may also be given as a str.
    again = vgpu.VGPU().ensemble(
        str(EXAMPLES / "lorenz.field"), n=n, t=(0.0, 0.2), dt=0.001, params={"rho": rho},
        backend="cpu",
    )
    assert np.array_equal(again, out)


def test_relax_source_reaches_its_attractor():
    x0 = np.linspace(-3, 3, 1000, dtype=np.float32)
    h = vgpu.VGPU().ensemble(RELAX, n=1000, t=(0, 20), dt=0.01, params={"x0": x0})
    assert h.shape == (1000, 1)
    # |h - sin x0| = e^-20 |x0 - sin x0| + RK4 and f32 rounding.
    np.testing.assert_allclose(h[:, 0], np.sin(x0), rtol=0, atol=1e-5)


def test_euler_and_rk4_differ_as_their_orders_say():
    x0 = np.linspace(0.5, 2.0, 64)
    exact = np.sin(x0) + (x0 - np.sin(x0)) * np.exp(-1.0)
    errs = {}
    for m in ("euler", "rk4"):
        h = vgpu.VGPU().ensemble(RELAX, n=64, t=(0, 1), dt=0.1, method=m, params={"x0": x0})
        errs[m] = np.abs(h[:, 0] - exact).max()
    # Euler's global error ~ dt (1e-2 here), RK4's ~ dt^4 (down to f32 rounding).
    assert errs["euler"] > 1e-3
    assert errs["rk4"] < 1e-5


def test_scale_is_bit_exact():
    x = (np.sin(np.arange(1000) * 0.37) * 1e3).astype(np.float32)
    y = vgpu.VGPU().ensemble(
        EXAMPLES / "scale.field", n=1000, t=(0, 1), dt=1, method="euler",
        params={"a": -1.75, "x": x}, backend="cpu",
    )
    assert np.array_equal(y[:, 0], np.float32(-1.75) * x)


def test_results_are_numpy_owned_memory_without_a_copy():
    """The endpoints become the array's memory as computed (no copy): the array
    views memory owned by its base object, stays valid after everything else of
    the run is gone, and is an ordinary writable array."""
    import gc

    x = np.arange(6000, dtype=np.float32)

    def run():
        return vgpu.VGPU().ensemble(
            EXAMPLES / "scale.field", n=6000, t=(0, 1), dt=1, method="euler",
            params={"a": 2.0, "x": x}, backend="cpu",
        )

    y = run()
    assert type(y.base).__name__ == "ResultMemory"
    assert y.shape == (6000, 1) and y.dtype == np.float32 and y.flags.c_contiguous
    assert y.flags.writeable and y.flags.owndata is False
    gc.collect()
    z = run()  # a second run must not reuse or free the first one's memory
    del z
    gc.collect()
    assert np.array_equal(y[:, 0], 2.0 * x)
    y[0, 0] = -1.0
    view = y[1:]
    del y
    gc.collect()
    assert np.array_equal(view[:, 0], 2.0 * x[1:])  # the view keeps the memory alive


def test_matmul_field_equals_the_sequential_loop():
    rng = np.random.default_rng(0)
    m, k, cols = 6, 9, 5
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, cols)).astype(np.float32)
    c = vgpu.VGPU().ensemble(
        EXAMPLES / "matmul.field", n=m * cols, t=(0, k), dt=1, method="euler",
        # Buffers are 1-D (the kernel indexes a[row * k + kk]): matrices are
        # passed flattened in C order, as `vgpu ensemble` takes them from a 1-D .npy.
        params={"a": a.ravel(), "b": b.ravel(), "k": k, "cols": cols}, backend="cpu",
    )
    acc = np.zeros((m, cols), np.float32)
    for kk in range(k):
        acc = acc + np.outer(a[:, kk], b[kk, :])  # one f32 multiply, one f32 add
    assert np.array_equal(c[:, 0].reshape(m, cols), acc)


def test_fluxes_tree_sum_and_histogram():
    x = np.linspace(0, 1, 1024, dtype=np.float32)
    states, fluxes = vgpu.VGPU().ensemble(
        EXAMPLES / "tree_sum.field", n=1024, t=(0, 0), dt=1, method="euler", block=128,
        params={"x": x, "steps": 7}, return_fluxes=True,
    )
    assert states.shape == (1024, 0)
    assert set(fluxes) == {"total"}
    assert fluxes["total"].shape == (1,)
    assert abs(float(fluxes["total"][0]) - float(x.astype(np.float64).sum())) < 1e-3

    rng = np.random.default_rng(4)
    data = rng.integers(0, 1000, 4096).astype(np.uint32)
    _, fl = vgpu.VGPU().ensemble(
        EXAMPLES / "histogram.field", n=4096, t=(0, 0), dt=1, method="euler", block=256,
        params={"x": data, "bins": 16}, return_fluxes=True,
    )
    assert np.array_equal(fl["hist"], np.bincount(data % 16, minlength=16).astype(np.uint32))


def test_same_bits_for_any_thread_count():
    rho = np.linspace(0, 21, 300)
    runs = [
        vgpu.VGPU().ensemble(EXAMPLES / "lorenz.field", n=300, t=(0, 0.05), dt=0.001,
                             params={"rho": rho}, threads=t, block=64, backend="cpu")
        for t in (1, 2, 3)
    ]
    assert np.array_equal(runs[0], runs[1]) and np.array_equal(runs[0], runs[2])


def test_params_are_converted():
    v = vgpu.VGPU()
    x_f64 = np.linspace(-1, 1, 10)
    x_int = np.arange(10)
    x_list = list(range(10))
    outs = [v.ensemble(EXAMPLES / "scale.field", n=10, t=(0, 1), dt=1, method="euler",
                       params={"a": 2, "x": x}) for x in (x_f64, x_int, x_list)]
    assert np.array_equal(outs[0][:, 0], 2 * x_f64.astype(np.float32))
    assert np.array_equal(outs[1][:, 0], 2 * x_int.astype(np.float32))
    assert np.array_equal(outs[1], outs[2])
    # A non-contiguous 1-D view is read element by element.
    strided = np.arange(24, dtype=np.float32)[::2]
    out = v.ensemble(EXAMPLES / "scale.field", n=12, t=(0, 1), dt=1, method="euler",
                     params={"a": 1.0, "x": strided})
    assert np.array_equal(out[:, 0], strided)
    # A 2-D array is refused with its shape, as `vgpu ensemble` refuses a 2-D .npy
    # (it was once flattened silently).
    grid = np.arange(20, dtype=np.float32).reshape(4, 5)
    with pytest.raises(ValueError, match=r"`x` must be a 1-D array, got shape \(4, 5\)"):
        v.ensemble(EXAMPLES / "scale.field", n=20, t=(0, 1), dt=1, method="euler",
                   params={"a": 1.0, "x": grid})


def test_hostile_sizes_are_refused_before_allocation():
    v = vgpu.VGPU()
    with pytest.raises(ValueError, match="at most 2\\^32 - 1"):
        v.ensemble(EXAMPLES / "lorenz.field", n=2**32, dt=0.1, params={"rho": np.zeros(4)})
    with pytest.raises(MemoryError, match="trajectories"):
        v.ensemble(EXAMPLES / "lorenz.field", n=2**32 - 1, dt=0.1, params={"rho": np.zeros(4)})
    with pytest.raises(ValueError, match="steps per trajectory"):
        v.ensemble(EXAMPLES / "lorenz.field", n=4, t=(0, 1e10), dt=0.01,
                   params={"rho": np.zeros(4)})
    c = vgpu.VGPUCache(backend="cpu")
    with pytest.raises(MemoryError, match=r"matmul: the result \(100000 × 100000 float32\)"):
        c.matmul(np.ones((100000, 1), np.float32), np.ones((1, 100000), np.float32))


def test_checker_refusals_keep_the_interpreter_alive():
    # Issue 15's panics and stack overflow, through Python: a 12,000-term
    # left-nested chain (once a stack overflow that killed the interpreter), a
    # negated literal as an index, an integer expression as a float's initial
    # value. Each is a VGPUError naming its place.
    v = vgpu.VGPU()
    chain = " + ".join(["x"] * 12_000)
    with pytest.raises(vgpu.VGPUError, match=r"<string>:3:\d+: .*nested at most 256 deep"):
        v.ensemble(f"field f() {{\n  state x = 1.0;\n  d(x)/dt = {chain};\n}}", n=1,
                   t=(0, 1), dt=0.5)
    with pytest.raises(vgpu.VGPUError, match=r"<string>:3:15: `-` does not apply to u32"):
        v.ensemble("field f(x: f32[]) {\n  state y = 0.0;\n  d(y)/dt = x[-1];\n}", n=4,
                   t=(0, 1), dt=0.5, params={"x": np.zeros(4, np.float32)})
    with pytest.raises(vgpu.VGPUError, match=r"<string>:2:15: `&` does not apply to f32"):
        v.ensemble("field f() {\n  state x = 0 & 0;\n  d(x)/dt = 1.0;\n}", n=1, t=(0, 1),
                   dt=0.5)


def test_garbage_source_names_file_line_col(tmp_path):
    with pytest.raises(vgpu.VGPUError, match=r"<string>:2:\d+"):
        vgpu.VGPU().ensemble("field f() {\n  state = ;\n}", n=1, dt=0.1)
    bad = tmp_path / "bad.field"
    bad.write_text("// a comment\nfield g(x: f32[]) {\n    state h = x[i];\n    d(h)/dt = h +* 2;\n}\n")
    with pytest.raises(vgpu.VGPUError, match=r"bad\.field:4:\d+"):
        vgpu.VGPU().ensemble(bad, n=4, dt=0.1, params={"x": np.zeros(4)})


def test_parameter_errors():
    v = vgpu.VGPU()
    with pytest.raises(vgpu.VGPUError, match="`x0`.*not given"):
        v.ensemble(RELAX, n=4, dt=0.1)
    with pytest.raises(vgpu.VGPUError, match="no parameter `y`.*x0"):
        v.ensemble(RELAX, n=4, dt=0.1, params={"x0": np.zeros(4), "y": 1.0})
    with pytest.raises(ValueError, match="declared f32\\[\\].*complex"):
        v.ensemble(RELAX, n=4, dt=0.1, params={"x0": np.zeros(4, np.complex64)})
    with pytest.raises(ValueError, match="declared u32.*whole"):
        v.ensemble(EXAMPLES / "tree_sum.field", n=4, dt=1, params={"x": np.zeros(4), "steps": 1.5})
    with pytest.raises(ValueError, match="declared u32.*range"):
        v.ensemble(EXAMPLES / "tree_sum.field", n=4, dt=1, params={"x": np.zeros(4), "steps": -1})
    with pytest.raises(ValueError, match="declared u32\\[\\].*float"):
        v.ensemble(EXAMPLES / "histogram.field", n=4, dt=1,
                   params={"x": np.zeros(4), "bins": 2})
    with pytest.raises(ValueError, match="declared u32\\[\\].*span"):
        v.ensemble(EXAMPLES / "histogram.field", n=4, dt=1,
                   params={"x": np.array([-1, 0, 1, 2]), "bins": 2})


def test_runtime_errors():
    v = vgpu.VGPU()
    # Trajectory 7 reads x0[7] of a 4-element buffer: the message names buffer and trajectory.
    with pytest.raises(vgpu.VGPUError, match="`x0`.*trajectory"):
        v.ensemble(RELAX, n=8, dt=0.1, params={"x0": np.zeros(4)}, backend="cpu")
    # A span that is not a whole number of steps.
    with pytest.raises(vgpu.VGPUError, match="whole number"):
        v.ensemble(RELAX, n=4, t=(0, 1), dt=0.3, params={"x0": np.zeros(4)})
    # A state that blows up.
    blow = "field b(x0: f32[]) { state h = x0[i]; d(h)/dt = h * h; }"
    with pytest.raises(vgpu.VGPUError, match="`h`"):
        v.ensemble(blow, n=2, t=(0, 10), dt=0.5, params={"x0": np.full(2, 10.0)}, backend="cpu")


def test_argument_errors(tmp_path):
    v = vgpu.VGPU()
    with pytest.raises(ValueError, match="method"):
        v.ensemble(RELAX, n=4, dt=0.1, method="heun", params={"x0": np.zeros(4)})
    with pytest.raises(ValueError, match="backend"):
        v.ensemble(RELAX, n=4, dt=0.1, backend="tpu", params={"x0": np.zeros(4)})
    with pytest.raises(ValueError, match="n must be at least 1"):
        v.ensemble(RELAX, n=0, dt=0.1, params={"x0": np.zeros(4)})
    with pytest.raises(FileNotFoundError):
        v.ensemble(tmp_path / "missing.field", n=4, dt=0.1)
    with pytest.raises(TypeError):
        v.ensemble(42, n=4, dt=0.1)


def test_gpu_backend_agrees_with_cpu(require_gpu):
    if vgpu.VGPUCache().backend != "gpu":
        assert not require_gpu
        pytest.skip("no GPU adapter")
    n = 256
    rho = np.linspace(0.0, 21.0, n)
    v = vgpu.VGPU()
    kw = dict(n=n, t=(0.0, 0.1), dt=0.001, method="rk4", params={"rho": rho})
    gpu = v.ensemble(EXAMPLES / "lorenz.field", backend="gpu", **kw)
    cpu = v.ensemble(EXAMPLES / "lorenz.field", backend="cpu", **kw)
    assert gpu.shape == cpu.shape == (n, 3) and gpu.dtype == np.float32
    # The download is the array's memory (no copy on the way to numpy).
    assert type(gpu.base).__name__ == "ResultMemory"
    # Same arithmetic up to the GPU compiler's fma contraction: f32 rounding only.
    np.testing.assert_allclose(gpu, cpu, rtol=0, atol=1e-4)
    # Phased kernels run on the GPU too, with either integrator.
    x = np.linspace(0, 1, 256, dtype=np.float32)
    tree = dict(n=256, t=(0, 0), dt=1, block=128, params={"x": x, "steps": 7})
    for m in ("euler", "rk4"):
        _, fl = v.ensemble(EXAMPLES / "tree_sum.field", backend="gpu", method=m,
                           return_fluxes=True, **tree)
        assert abs(float(fl["total"][0]) - float(x.astype(np.float64).sum())) < 1e-3
    # What the GPU cannot run (f64) is refused there, and "auto" runs it on the CPU.
    f64 = "field d() { state x: f64 = 1.0; phase p { d(x)/dt = -x; } }"
    with pytest.raises(vgpu.VGPUError, match="cannot run on"):
        v.ensemble(f64, n=4, t=(0, 0), dt=0.5, method="euler", block=4, backend="gpu")
    out = v.ensemble(f64, n=4, t=(0, 0), dt=0.5, method="euler", block=4, backend="auto")
    assert out.dtype == np.float64 and np.all(out == 0.25)  # two Euler steps of a unit span


def _run(v, path, backend, **kw):
    """The low-level call: (states, fluxes, where it ran)."""
    return v._vgpu.ensemble(
        path.read_text(), str(path), kw["n"], (0.0, 0.0), 1.0, "euler", kw["params"],
        backend, kw["block"], None,
    )


def test_gpu_runs_phased_kernels_and_returns_fluxes(require_gpu):
    if vgpu.VGPUCache().backend != "gpu":
        assert not require_gpu
        pytest.skip("no GPU adapter")
    v = vgpu.VGPU()
    rng = np.random.default_rng(11)
    # Integer flux (shared-memory histogram, then one atomicAdd per bin): exact.
    data = rng.integers(0, 1000, 4096).astype(np.uint32)
    hist = dict(n=4096, block=256, params={"x": data, "bins": 16})
    _, fg, ran = _run(v, EXAMPLES / "histogram.field", "auto", **hist)
    assert ran == "gpu"
    _, fc, ran = _run(v, EXAMPLES / "histogram.field", "cpu", **hist)
    assert ran == "cpu"
    assert fg["hist"].dtype == np.uint32 and np.array_equal(fg["hist"], fc["hist"])
    assert np.array_equal(fg["hist"], np.bincount(data % 16, minlength=16))
    # Shared memory and barriers: the states are the CPU's bits.
    x = rng.standard_normal(1024).astype(np.float32)
    rev = dict(n=1024, block=128, params={"x": x})
    sg, fg, ran = _run(v, EXAMPLES / "barrier_reverse.field", "gpu", **rev)
    sc, _, _ = _run(v, EXAMPLES / "barrier_reverse.field", "cpu", **rev)
    assert ran == "gpu" and fg == {}
    assert np.array_equal(sg, sc)
    assert np.array_equal(sg[:, 0], x.reshape(8, 128)[:, ::-1].ravel())
    # Float flux: each block's tree sum is the CPU's bits; the blocks' atomic adds
    # land in the GPU's order, so the total agrees to rounding (8 blocks, |total| < 600).
    x = rng.random(1024).astype(np.float32)
    tree = dict(n=1024, block=128, params={"x": x, "steps": 7})
    sg, fg, ran = _run(v, EXAMPLES / "tree_sum.field", "gpu", **tree)
    _, fc, _ = _run(v, EXAMPLES / "tree_sum.field", "cpu", **tree)
    assert ran == "gpu" and sg.shape == (1024, 0)
    assert fg["total"].dtype == np.float32 and fg["total"].shape == (1,)
    np.testing.assert_allclose(fg["total"], fc["total"], rtol=8 * 2.0**-23, atol=0)
    # The public call returns them too.
    states, fluxes = v.ensemble(EXAMPLES / "tree_sum.field", n=1024, t=(0, 0), dt=1,
                                method="euler", block=128, params={"x": x, "steps": 7},
                                backend="gpu", return_fluxes=True)
    np.testing.assert_allclose(fluxes["total"], fc["total"], rtol=8 * 2.0**-23, atol=0)
