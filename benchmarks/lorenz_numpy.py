#!/usr/bin/env python3
"""Lorenz ensemble, numpy vectorised RK4: the reference of `vgpu bench lorenz`.

Same problem as the Rust benchmark (DiffEqGPU paper): f32, sigma = 10,
beta = 8/3, rho = linspace(0, 21, N), u0 = (1, 0, 0), dt = 0.001, 1000 RK4
steps, endpoints only. The N trajectories are advanced together, each state
component one float32 array of N values; every RK4 stage is a few whole-array
operations. Same operations in the same order as the Rust versions
(`u + (dt/2)*k`, `u + ((dt/6)*k1 + (dt/3)*k2 + (dt/3)*k3 + (dt/6)*k4)`, f32
throughout), so the endpoints agree with them.

Usage: python3 benchmarks/lorenz_numpy.py [--n N] [--steps S] [--repeats R] [--json]
Prints trajectory-steps per second (best of R runs) and the checksum (f64 sum
of all endpoint components).
"""
import argparse
import json
import time

import numpy as np


def rhs(x, y, z, rho, sigma, beta):
    return sigma * (y - x), x * (rho - z) - y, x * y - beta * z


def integrate(n, steps):
    f32 = np.float32
    sigma, beta, dt = f32(10.0), f32(8.0 / 3.0), f32(0.001)
    # Step weights as the Rust versions compute them: dt/2, dt, dt/6, dt/3, each rounded once.
    half, full = dt * f32(0.5), dt * f32(1.0)
    w0, w1 = dt * (f32(1.0) / f32(6.0)), dt * (f32(1.0) / f32(3.0))
    rho = np.linspace(0.0, 21.0, n).astype(f32)
    x = np.ones(n, dtype=f32)
    y = np.zeros(n, dtype=f32)
    z = np.zeros(n, dtype=f32)
    for _ in range(steps):
        k1 = rhs(x, y, z, rho, sigma, beta)
        k2 = rhs(x + half * k1[0], y + half * k1[1], z + half * k1[2], rho, sigma, beta)
        k3 = rhs(x + half * k2[0], y + half * k2[1], z + half * k2[2], rho, sigma, beta)
        k4 = rhs(x + full * k3[0], y + full * k3[1], z + full * k3[2], rho, sigma, beta)
        x = x + (w0 * k1[0] + w1 * k2[0] + w1 * k3[0] + w0 * k4[0])
        y = y + (w0 * k1[1] + w1 * k2[1] + w1 * k3[1] + w0 * k4[1])
        z = z + (w0 * k1[2] + w1 * k2[2] + w1 * k3[2] + w0 * k4[2])
    return x, y, z


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=262144)
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    best, checksum = float("inf"), None
    for _ in range(max(1, a.repeats)):
        t = time.perf_counter()
        x, y, z = integrate(a.n, a.steps)
        best = min(best, time.perf_counter() - t)
        checksum = float(x.astype(np.float64).sum() + y.astype(np.float64).sum() + z.astype(np.float64).sum())
    rate = a.n * a.steps / best
    if a.json:
        print(json.dumps({"n": a.n, "steps": a.steps, "seconds": best, "traj_steps_per_s": rate,
                          "checksum": checksum, "numpy": np.__version__}))
    else:
        print(f"numpy {np.__version__}: N = {a.n}, {a.steps} RK4 steps: {best:.3f} s, "
              f"{rate:.3e} trajectory-steps/s, checksum {checksum:.10f}")


if __name__ == "__main__":
    main()
