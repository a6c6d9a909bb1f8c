"""VGPU.ensemble with method="rosenbrock23" (Robertson against Hairer's values,
Van der Pol mu = 1000 against a tight Rosenbrock23 run), events from a .field
source (a bouncing ball's bounce times against the closed form), the
status / steps arrays of a terminating event, and backend="auto" (the GPU
where there is one, events included) agreeing with the CPU."""

import math

import numpy as np
import pytest

import vgpu

ROBER = """field rober() {
    state y1: f64 = 1.0, y2: f64 = 0.0, y3: f64 = 0.0;
    d(y1)/dt = -0.04 * y1 + 1.0e4 * y2 * y3;
    d(y2)/dt = 0.04 * y1 - 1.0e4 * y2 * y3 - 3.0e7 * y2 * y2;
    d(y3)/dt = 3.0e7 * y2 * y2;
}"""

VDP = """field vdp(mu: f64) {
    state x: f64 = 2.0, v: f64 = 0.0;
    d(x)/dt = v;
    d(v)/dt = mu * (1.0 - x * x) * v - x;
}"""

BALL = """field ball(h0: f64[], e: f64) {
    state y: f64 = h0[i], v: f64 = 0.0;
    d(y)/dt = v;
    d(v)/dt = -9.81;
    event floor: y falling { v := -e * v; }
    event top: y - 10.0 rising terminate;
}"""


@pytest.fixture(scope="module")
def v() -> vgpu.VGPU:
    return vgpu.VGPU()


def test_rosenbrock23_robertson(v):
    y, status, steps = v.ensemble(ROBER, n=2, t=(0, 40), method="rosenbrock23", rtol=1e-8,
                                  atol=[1e-10, 1e-14, 1e-10], backend="cpu", return_status=True)
    want = np.array([0.7158270687, 9.185534764e-6, 0.2841637457])
    assert y.shape == (2, 3) and y.dtype == np.float64
    assert np.all(np.abs(y - want) <= 1e-5 * want)
    assert (status == 0).all() and steps.shape == (2, 2) and (steps[:, 0] > 0).all()


def test_rosenbrock23_stiff_van_der_pol(v):
    ref = v.ensemble(VDP, n=1, t=(0, 3000), method="rosenbrock23", rtol=1e-10, atol=1e-10,
                     params={"mu": 1000.0}, backend="cpu")
    y, status, steps = v.ensemble(VDP, n=1, t=(0, 3000), method="rosenbrock23", rtol=1e-6,
                                  atol=1e-6, params={"mu": 1000.0}, backend="cpu",
                                  return_status=True)
    assert status[0] == 0 and steps[0, 0] < 5000
    assert np.max(np.abs(y - ref)) < 1e-2


def test_bouncing_ball_events_and_a_terminating_event(v):
    # Heights 1 and 5: bounce times t_k of y = h0 - g t^2 / 2 with restitution e.
    g, e = 9.81, 0.9
    h0 = np.array([1.0, 5.0])
    saveat = np.linspace(0.0, 2.0, 201)
    y, status, steps = v.ensemble(BALL, n=2, t=(0, 2), method="tsit5", rtol=1e-10, atol=1e-10,
                                  params={"h0": h0, "e": e}, saveat=saveat, backend="cpu",
                                  return_status=True)
    assert y.shape == (2, 201, 2) and (status == 0).all()
    for r, h in enumerate(h0):
        t1 = math.sqrt(2 * h / g)  # the first bounce
        v1 = e * g * t1            # speed after it
        j = int(np.searchsorted(saveat, t1))
        # Before the bounce: free fall; just after: rising with speed v1.
        assert abs(y[r, j - 1, 0] - (h - g * saveat[j - 1] ** 2 / 2)) < 1e-7
        if j < 201 and saveat[j] < t1 + 2 * v1 / g:
            dt = saveat[j] - t1
            assert abs(y[r, j, 0] - (v1 * dt - g * dt * dt / 2)) < 1e-6
    # A ball thrown from 12 m falls through y = 10: 'top' is rising only, so it never
    # fires; from y = 10 - 1e-3 with an upward kick it would. The terminating event
    # is status 4 (terminated by event) with its time in the steps' count.
    BALL_UP = BALL.replace("state y: f64 = h0[i], v: f64 = 0.0;",
                           "state y: f64 = h0[i], v: f64 = 20.0;")
    y, status, steps = v.ensemble(BALL_UP, n=2, t=(0, 3), method="tsit5", rtol=1e-9, atol=1e-9,
                                  params={"h0": np.array([1.0, 11.0]), "e": e}, backend="cpu",
                                  return_status=True)
    assert status[0] == 4            # reaches y = 10 on the way up, stops there
    assert abs(y[0, 0] - 10.0) < 1e-6
    assert status[1] == 0            # starts above 10: never crosses it rising


def test_events_on_auto_agree_with_the_cpu(v):
    # auto runs events on the GPU where there is an adapter (the CPU otherwise):
    # same bounce count, the last bounce at the CPU's time to 1e-10.
    src = BALL.replace("state y: f64 = h0[i], v: f64 = 0.0;",
                       "state y: f64 = h0[i], v: f64 = 0.0, tb: f64 = 0.0, nb: f64 = 0.0;")
    src = src.replace("d(v)/dt = -9.81;", "d(v)/dt = -9.81;\n    d(tb)/dt = 0.0;\n    d(nb)/dt = 0.0;")
    # e as a buffer: a scalar f64 parameter keeps a launch on the CPU.
    src = src.replace("{ v := -e * v; }", "{ v := -e[i] * v; tb := t; nb := nb + 1.0; }")
    src = src.replace("e: f64)", "e: f64[])")
    h0 = np.linspace(1.0, 4.0, 8)
    runs = {}
    for backend in ("cpu", "auto"):
        runs[backend] = v.ensemble(src, n=8, t=(0, 3), method="dp5", rtol=1e-8, atol=1e-10,
                                   params={"h0": h0, "e": np.full(8, 0.8)}, backend=backend,
                                   return_status=True)
    (yc, sc, _), (ya, sa, _) = runs["cpu"], runs["auto"]
    assert (sc == 0).all() and (sa == 0).all()
    assert (yc[:, 3] >= 2).all() and (ya[:, 3] == yc[:, 3]).all()
    assert np.all(np.abs(ya[:, 2] - yc[:, 2]) <= 1e-10 * yc[:, 2])
