"""The hand-written CUDA Lorenz kernel (`lorenz_rk4` from ptx-cases/, the PTX nvcc
emitted) on the H200 through CuPy: kernel time (CUDA events per launch: shortest and mean) and end to end (host ρ in,
host endpoints out), the DiffEqGPU configuration. Prints one JSON object per N; with
--compare N:FILE.npy also the max |difference| against VGPU's endpoints at that N."""
import argparse, json, time
import numpy as np
import cupy as cp

p = argparse.ArgumentParser()
p.add_argument("--ptx", required=True)
p.add_argument("--n", type=int, nargs="+", required=True)
p.add_argument("--reps", type=int, default=10)
p.add_argument("--compare", action="append", default=[])
a = p.parse_args()

mod = cp.RawModule(path=a.ptx)
k = mod.get_function("lorenz_rk4")
dt, steps, block = np.float32(0.001), np.int32(1000), 256
compare = dict(c.split(":", 1) for c in a.compare)

for n in a.n:
    rho_h = np.linspace(0, 21, n, dtype=np.float32)
    u0 = np.zeros((n, 3), np.float32); u0[:, 0] = 1
    grid = ((n + block - 1) // block,)
    def end_to_end():
        rho = cp.asarray(rho_h); st = cp.asarray(u0)
        k(grid, (block,), (st, rho, dt, steps, np.int32(n)))
        return cp.asnumpy(st)
    end_to_end(); cp.cuda.Device().synchronize()
    t0 = time.perf_counter(); out = end_to_end(); e2e = time.perf_counter() - t0
    rho = cp.asarray(rho_h); st = cp.asarray(u0)
    # One event pair per launch: the shortest (what VGPU's --kernel-time reports
    # for its own dispatches) and the mean of back-to-back launches.
    evs = [(cp.cuda.Event(), cp.cuda.Event()) for _ in range(a.reps)]
    for s, e in evs:
        s.record()
        k(grid, (block,), (st, rho, dt, steps, np.int32(n)))
        e.record()
    evs[-1][1].synchronize()
    each = [cp.cuda.get_elapsed_time(s, e) / 1e3 for s, e in evs]
    r = {"n": n, "cuda_kernel_s": min(each), "cuda_kernel_mean_s": sum(each) / len(each),
         "cuda_end_to_end_s": e2e}
    if str(n) in compare:
        v = np.load(compare[str(n)]).astype(np.float32)
        d = np.abs(v - out)
        r["max_abs_diff_vs_vgpu"] = float(d.max())
        r["max_rel_diff_vs_vgpu"] = float((d / np.maximum(np.abs(out), 1e-30)).max())
        r["bit_identical_fraction"] = float((v.view(np.uint32) == out.view(np.uint32)).mean())
    print(json.dumps(r), flush=True)
