#!/usr/bin/env bash
# The Lorenz ensemble on the H200: VGPU's WGSL (generated from examples/lorenz.field)
# beside the hand-written CUDA kernel `lorenz_rk4` (nvcc's PTX, run with CuPy), in one
# device call, N = 8 … 2^23 by powers of 4. DiffEqGPU configuration: f32, σ=10,
# β=8/3, ρ=linspace(0,21,N), u0=(1,0,0), dt=0.001, 1000 RK4 steps, endpoints only.
#
# From the repository root, after `cargo build --release`, ../shared/tools/gl-loaders.sh
# and `cp ../shared/ptx-cases/kernels.ptx .gl/`, call the device tool's `run` with
#   carry: [".gl", "target/release/vgpu"]   command: bash benchmarks/device/lorenz.sh
set -uo pipefail
OUT=${OUT:-/tmp/vgpu-lorenz-out}
mkdir -p "$OUT"
exec > >(tee "$OUT/lorenz.log") 2>&1
for f in .gl/*.deb; do dpkg -x "$f" /; done
ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export WGPU_BACKEND=vulkan
VGPU=./target/release/vgpu
NS="8 32 128 512 2048 8192 32768 131072 524288 2097152 8388608"

echo "== vgpu ensemble (generated WGSL), kernel time over 10 dispatches and end to end"
for n in $NS; do
  out=/tmp/vgpu_lorenz_$n.npy
  $VGPU ensemble examples/lorenz.field --n $n --t 0:1 --dt 0.001 --method rk4 \
    --param rho=linspace:0:21 --backend gpu --kernel-time 10 --json --out $out
done | tee "$OUT/vgpu_lorenz.jsonl"

echo "== CUDA lorenz_rk4 (CuPy)"
python3 benchmarks/device/lorenz_cupy.py --ptx .gl/kernels.ptx --n $NS --reps 10 \
  --compare 8388608:/tmp/vgpu_lorenz_8388608.npy --compare 512:/tmp/vgpu_lorenz_512.npy \
  | tee "$OUT/cuda_lorenz.jsonl"

echo "== matmul N=4096 with the default tile (device-side)"
$VGPU bench matmul --n 4096 --backend gpu --json --seconds 1 --device-side --iters 20 \
  | tee "$OUT/vgpu_matmul_4096.json"

echo "== summary"
python3 - "$OUT" <<'PY' | tee "$OUT/lorenz_summary.json"
import json, sys, os
out = sys.argv[1]
rows = lambda f: [json.loads(l) for l in open(os.path.join(out, f)) if l.startswith("{")]
v = {r["n"]: r for r in rows("vgpu_lorenz.jsonl")}
c = {r["n"]: r for r in rows("cuda_lorenz.jsonl")}
s = []
for n in sorted(v):
    r = {"n": n, "vgpu_kernel_s": v[n].get("kernel_seconds"), "vgpu_end_to_end_s": v[n]["seconds"],
         "cuda_kernel_s": c.get(n, {}).get("cuda_kernel_s"), "cuda_end_to_end_s": c.get(n, {}).get("cuda_end_to_end_s")}
    if r["vgpu_kernel_s"] and r["cuda_kernel_s"]:
        r["kernel_ratio_vgpu_over_cuda"] = r["vgpu_kernel_s"] / r["cuda_kernel_s"]
    for key in ("max_abs_diff_vs_vgpu", "max_rel_diff_vs_vgpu", "bit_identical_fraction"):
        if key in c.get(n, {}): r[key] = c[n][key]
    s.append(r)
print(json.dumps(s, indent=1))
PY
