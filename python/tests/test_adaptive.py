"""VGPU.ensemble with adaptive methods (tsit5, dp5, bs3, vern7): per-trajectory
steps on the CPU, statuses and step counts, save times, per-trajectory initial
states and spans, and ValueErrors that name the option."""

import pathlib

import numpy as np
import pytest

import vgpu

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples"


@pytest.fixture(scope="module")
def v() -> vgpu.VGPU:
    return vgpu.VGPU()


def rho(n):
    return np.linspace(0.0, 21.0, n)


def test_lorenz_tsit5_matches_a_tight_reference(v):
    n = 32
    ref = v.ensemble(EXAMPLES / "lorenz_f64.field", n=n, t=(0, 1), method="vern7",
                     rtol=1e-12, atol=1e-12, params={"rho": rho(n)}, backend="cpu")
    assert ref.shape == (n, 3) and ref.dtype == np.float64
    f64 = v.ensemble(EXAMPLES / "lorenz_f64.field", n=n, t=(0, 1), method="tsit5",
                     rtol=1e-8, atol=1e-8, params={"rho": rho(n)}, backend="cpu")
    assert np.max(np.abs(f64 - ref)) < 1e-5
    f32, status, steps = v.ensemble(EXAMPLES / "lorenz.field", n=n, t=(0, 1), method="tsit5",
                                    rtol=1e-6, atol=[1e-6, 1e-6, 1e-6],
                                    params={"rho": rho(n)}, backend="cpu", return_status=True)
    assert f32.dtype == np.float32 and f32.shape == (n, 3)
    assert np.max(np.abs(f32.astype(np.float64) - ref)) < 1e-3
    assert status.shape == (n,) and status.dtype == np.uint8 and (status == 0).all()
    assert steps.shape == (n, 2) and steps.dtype == np.uint64 and (steps[:, 0] > 0).all()


def test_saveat_is_n_k_d_and_ends_on_the_endpoint(v):
    n = 8
    kw = dict(n=n, t=(0, 1), method="dp5", rtol=1e-9, atol=1e-9,
              params={"rho": rho(n)}, backend="cpu", threads=1)
    end = v.ensemble(EXAMPLES / "lorenz_f64.field", **kw)
    saved = v.ensemble(EXAMPLES / "lorenz_f64.field", saveat=np.linspace(0, 1, 5), **kw)
    assert saved.shape == (n, 5, 3)
    np.testing.assert_array_equal(saved[:, -1, :], end)
    np.testing.assert_array_equal(saved[:, 0, :], np.tile([1.0, 0.0, 0.0], (n, 1)))
    # Results are the same bits for any thread count.
    kw["threads"] = 2
    np.testing.assert_array_equal(v.ensemble(EXAMPLES / "lorenz_f64.field", **kw), end)


def test_a_blow_up_fails_alone(v):
    p = np.array([0.5, 2.0, -1.0, 0.25])
    y, status, steps = v.ensemble(EXAMPLES / "blowup.field", n=4, t=(0, 1), method="tsit5",
                                  rtol=1e-8, atol=1e-10, params={"p": p}, backend="cpu",
                                  return_status=True)
    assert status[0] == 0 and status[2] == 0 and status[3] == 0
    assert status[1] in (2, 3)
    ok = status == 0
    np.testing.assert_allclose(y[ok, 0], 1.0 / (1.0 - p[ok]), rtol=1e-6)
    assert steps.shape == (4, 2)


def test_u0_and_tspan_per_trajectory(v):
    p = np.array([-1.0, -0.5, 0.3])
    u0 = np.array([[1.0], [2.0], [0.5]])
    tspan = np.array([[0.0, 1.0], [1.0, 3.0], [-1.0, 0.5]])
    y = v.ensemble(EXAMPLES / "blowup.field", n=3, method="vern7", rtol=1e-10, atol=1e-12,
                   params={"p": p}, u0=u0, tspan=tspan, backend="cpu")
    want = u0[:, 0] / (1.0 - p * u0[:, 0] * (tspan[:, 1] - tspan[:, 0]))
    np.testing.assert_allclose(y[:, 0], want, rtol=1e-8)


def test_auto_and_gpu_agree_with_the_cpu(v):
    kw = dict(n=2, t=(0, 1), method="bs3", params={"p": np.array([-1.0, -2.0])})
    y = v.ensemble(EXAMPLES / "blowup.field", backend="auto", **kw)
    np.testing.assert_allclose(y[:, 0], [0.5, 1.0 / 3.0], rtol=1e-2)
    try:
        g = v.ensemble(EXAMPLES / "blowup.field", backend="gpu", **kw)
    except Exception as e:  # no adapter, or no SHADER_F64: a clear error
        assert "adapter" in str(e) or "SHADER_F64" in str(e), e
    else:
        np.testing.assert_allclose(g[:, 0], [0.5, 1.0 / 3.0], rtol=1e-2)


@pytest.mark.parametrize(
    "bad, match",
    [
        (dict(rtol=0.0), "rtol"),
        (dict(rtol=float("nan")), "rtol"),
        (dict(atol=-1e-6), "atol"),
        (dict(atol=[1e-6, 1e-8]), "atol"),
        (dict(saveat=[0.0, 2.0]), "saveat"),
        (dict(dtmin=1.0, dtmax=0.1), "dtmin"),
        (dict(dt0=-1.0), "dt0"),
        (dict(maxiters=0), "maxiters"),
        (dict(u0=np.zeros((4, 2))), "u0"),
        (dict(tspan=np.zeros((3, 2))), "tspan"),
        (dict(dt=0.01), "dt"),
        (dict(method="rk5"), "unknown method"),
        (dict(method="rk4", dt=0.01, rtol=1e-6, saveat=[0.5]), "saveat"),
    ],
)
def test_bad_options_are_value_errors_naming_the_option(v, bad, match):
    kw = dict(n=4, t=(0, 1), method="tsit5", params={"rho": rho(4)}, backend="cpu")
    kw.update(bad)
    with pytest.raises(ValueError, match=match):
        v.ensemble(EXAMPLES / "lorenz.field", **kw)


def test_phased_kernels_are_refused(v):
    with pytest.raises(ValueError, match="phases"):
        v.ensemble(EXAMPLES / "barrier_reverse.field", n=4, method="tsit5",
                   params={"x": np.arange(4.0)}, backend="cpu")
