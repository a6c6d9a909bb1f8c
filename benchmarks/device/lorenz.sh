#!/usr/bin/env bash
# Lorenz ensemble on the H200 (DiffEqGPU configuration: f32, sigma=10, beta=8/3,
# rho=linspace(0,21,N), u0=(1,0,0), dt=0.001, 1000 RK4 steps, endpoint only):
# VGPU's WGSL generated from examples/lorenz.field (vgpu ensemble --backend gpu)
# beside the hand-written CUDA kernel `lorenz_rk4` (ptx-cases/kernels.ptx,
# launched with CuPy), same N, same call. N = 8 ... 2^23 by powers of 4.
#
# Run through the device tool from the repository root, carrying
#   [".gl", "target/release/vgpu"]
# (build with `cargo build --release -p vgpu` and fetch the loaders with
# scripts/gl-loaders.sh first; the working tree, ptx-cases/ included, travels as it is).
# Results: $OUT/lorenz.json (one object per N and implementation) and $OUT/lorenz.log.
set -euo pipefail
source benchmarks/device/env.sh
PTX=${PTX:-ptx-cases/kernels.ptx}
VGPU=./target/release/vgpu
: > "$OUT/lorenz.jsonl"
for e in 3 5 7 9 11 13 15 17 19 21 23; do
  n=$((1 << e))
  # 2^3, 2^5, ..., 2^23: N = 8 * 4^j.
  "$VGPU" ensemble examples/lorenz.field --n "$n" --t 0:1 --dt 0.001 --method rk4 \
      --param rho=linspace:0:21 --backend gpu --kernel-time 5 --json \
      | python3 -c "import json,sys; d=json.load(sys.stdin); d['impl']='vgpu-wgsl'; print(json.dumps(d))" \
      >> "$OUT/lorenz.jsonl" 2>> "$OUT/lorenz.log"
done
python3 - "$PTX" "$OUT" <<'PY' >> "$OUT/lorenz.log" 2>&1
import json, sys, time
import cupy as cp
import numpy as np
ptx, out = sys.argv[1], sys.argv[2]
mod = cp.RawModule(path=ptx)
k = mod.get_function("lorenz_rk4")
rows = []
for e in [3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23]:
    n = 1 << e
    rho = cp.asarray(np.linspace(0, 21, n).astype(np.float32))
    u0 = cp.asarray(np.tile(np.array([1, 0, 0], np.float32), n))
    block = 256
    grid = (n + block - 1) // block
    def launch():
        st = u0.copy()
        k((grid,), (block,), (st, rho, np.float32(0.001), np.int32(1000), np.int32(n)))
        return st
    launch(); cp.cuda.Device().synchronize()
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    reps = 5
    times = []
    for _ in range(reps):
        st = u0.copy()
        start.record()
        k((grid,), (block,), (st, rho, np.float32(0.001), np.int32(1000), np.int32(n)))
        stop.record(); stop.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, stop) / 1e3)
    t0 = time.perf_counter()
    host = cp.asnumpy(launch())
    e2e = time.perf_counter() - t0
    rows.append({"impl": "cuda-lorenz_rk4", "n": n, "kernel_seconds": min(times), "seconds": e2e,
                 "checksum": float(host.astype(np.float64).sum())})
with open(f"{out}/lorenz.jsonl", "a") as f:
    for r in rows:
        f.write(json.dumps(r) + "\n")
PY
python3 - "$OUT" <<'PY'
import json, sys
out = sys.argv[1]
rows = [json.loads(l) for l in open(f"{out}/lorenz.jsonl") if l.strip()]
by = {}
for r in rows:
    by.setdefault(r["n"], {})[r["impl"]] = r
summary = []
for n in sorted(by):
    v, c = by[n].get("vgpu-wgsl"), by[n].get("cuda-lorenz_rk4")
    if v and c and v.get("kernel_seconds") and c.get("kernel_seconds"):
        summary.append({"n": n, "vgpu_kernel_s": v["kernel_seconds"], "cuda_kernel_s": c["kernel_seconds"],
                        "ratio_kernel": v["kernel_seconds"] / c["kernel_seconds"],
                        "vgpu_end_to_end_s": v["seconds"], "cuda_end_to_end_s": c["seconds"]})
json.dump({"rows": rows, "summary": summary}, open(f"{out}/lorenz.json", "w"), indent=1)
for s in summary:
    print(f"N={s['n']:>8}  vgpu {s['vgpu_kernel_s']*1e3:9.3f} ms  cuda {s['cuda_kernel_s']*1e3:9.3f} ms  ratio {s['ratio_kernel']:.3f}")
PY
