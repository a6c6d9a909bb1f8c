"""Issue 16's warm-process figure: the Lorenz ensemble (DiffEqGPU configuration: f32,
rho = linspace(0, 21, N), u0 = (1, 0, 0), dt = 0.001, 1000 RK4 steps) called from
Python through the `vgpu` package on the GPU, several times in one process, beside the
hand-written CUDA kernel `lorenz_rk4` (ptx-cases/kernels.ptx) through CuPy, host in and
host out, module loaded. The first VGPU call pays for the adapter, the device and the
pipeline; the later ones are what a notebook or a parameter sweep waits for.

Prints one JSON object per N and implementation: every call's seconds, the first apart,
the best and the median of the warm calls, and the largest difference between the two
implementations' endpoints.

    python3 benchmarks/device/lorenz_python.py --ptx ptx-cases/kernels.ptx --n 1048576 8388608
"""
import argparse
import json
import statistics
import time

import numpy as np

import vgpu

p = argparse.ArgumentParser()
p.add_argument("--ptx", required=True)
p.add_argument("--field", default="examples/lorenz.field")
p.add_argument("--n", type=int, nargs="+", required=True)
p.add_argument("--calls", type=int, default=6)
a = p.parse_args()


def row(impl, n, times, **extra):
    warm = times[1:]
    r = {"impl": impl, "n": n, "calls_s": times, "first_s": times[0],
         "warm_best_s": min(warm), "warm_median_s": statistics.median(warm)}
    r.update(extra)
    print(json.dumps(r), flush=True)


v = vgpu.VGPU()
ends = {}
for n in a.n:
    rho = np.linspace(0, 21, n, dtype=np.float32)
    times = []
    for _ in range(a.calls):
        t0 = time.perf_counter()
        out = v.ensemble(a.field, n=n, t=(0.0, 1.0), dt=0.001, method="rk4",
                         params={"rho": rho}, backend="gpu")
        times.append(time.perf_counter() - t0)
    ends[n] = out
    row("vgpu-python-gpu", n, times, shape=list(out.shape), dtype=str(out.dtype))

try:
    import cupy as cp
except ImportError:
    cp = None
if cp is not None:
    k = cp.RawModule(path=a.ptx).get_function("lorenz_rk4")
    block = 256
    for n in a.n:
        rho_h = np.linspace(0, 21, n, dtype=np.float32)
        u0 = np.zeros((n, 3), np.float32)
        u0[:, 0] = 1
        grid = ((n + block - 1) // block,)
        times = []
        for _ in range(a.calls):
            t0 = time.perf_counter()
            rho = cp.asarray(rho_h)
            st = cp.asarray(u0)
            k(grid, (block,), (st, rho, np.float32(0.001), np.int32(1000), np.int32(n)))
            out = cp.asnumpy(st)
            times.append(time.perf_counter() - t0)
        d = np.abs(ends[n].astype(np.float32) - out)
        row("cuda-lorenz_rk4-cupy", n, times, max_abs_diff_vs_vgpu=float(d.max()),
            max_rel_diff_vs_vgpu=float((d / np.maximum(np.abs(out), 1e-30)).max()))
