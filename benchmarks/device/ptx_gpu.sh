#!/usr/bin/env bash
# PTX on the GPU (issue 12): nvcc's own PTX run natively (CuPy RawModule) beside
# the same PTX compiled by VGPU into WGSL and run through wgpu/Vulkan
# (`vgpu ptx run FILE.ptx --backend gpu --kernel-time 5`), for
#   lorenz_rk4         N = 2^23 (1000 RK4 steps, dt 0.001),
#   matmul_tiled       4096 x 4096 x 4096,
#   reduce_sum_atomic  N = 2^24,
# with the GPU kernel's checks on and off (--unchecked). Kernel time per
# dispatch (best of CuPy events; VGPU: the kernel cache's timed dispatches),
# VGPU's first-call compile time apart.
#
# Run through the device tool from the repository root, carrying
#   [".gl", "target/release/vgpu"]
# (build with `cargo build --release -p vgpu`, fetch the loaders with
# scripts/gl-loaders.sh; VGPU= names another binary). Results: $OUT/ptx_gpu.jsonl (one object per case,
# implementation and check mode) and $OUT/ptx_gpu.log.
set -euo pipefail
source benchmarks/device/env.sh
PTX=${PTX:-ptx-cases/kernels.ptx}
VGPU=${VGPU:-./target/release/vgpu}
W=$(mktemp -d)
: > "$OUT/ptx_gpu.jsonl"
# Inputs, shared by both implementations (raw little-endian files).
python3 benchmarks/device/ptx_inputs.py "$W"
vgpu_case() { # name, check flag, entry, grid, block, shared, args...
  local name=$1 check=$2 entry=$3 grid=$4 block=$5 shared=$6; shift 6
  # PTX_GPU_SKIP: cases to leave out, as name:on|off (e.g. "matmul_tiled:on").
  case " ${PTX_GPU_SKIP:-} " in *" $name:$check "*) return;; esac
  local a=() mode=checked
  for x in "$@"; do a+=(--arg "$x"); done
  [ "$check" = off ] && a+=(--unchecked) && mode=unchecked
  local log
  log=$("$VGPU" ptx run "$PTX" --entry "$entry" --grid "$grid" --block "$block" \
        --shared-bytes "$shared" --backend gpu --kernel-time 5 --out-dir "$W/out" "${a[@]}" 2>>"$OUT/ptx_gpu.log") || true
  echo "$log" >> "$OUT/ptx_gpu.log"
  python3 - "$name" "$mode" "$log" >> "$OUT/ptx_gpu.jsonl" <<'PY'
import json, sys
name, mode, log = sys.argv[1:4]
d = {"case": name, "impl": f"vgpu-wgsl-{mode}"}
for line in log.splitlines():
    k, _, v = line.partition(" ")
    if k in ("kernel_seconds", "compile_seconds"):
        d[k] = float(v)
print(json.dumps(d))
PY
}
mkdir -p "$W/out"
for check in on off; do
  vgpu_case lorenz_rk4 $check lorenz_rk4 32768,1,1 256,1,1 0 \
    "$W/state.bin" "$W/rho.bin" f32:0.001 s32:1000 s32:8388608
  vgpu_case matmul_tiled $check matmul_tiled 256,256,1 16,16,1 0 \
    "$W/A.bin" "$W/B.bin" "$W/C.bin" s32:4096 s32:4096 s32:4096
  vgpu_case reduce_sum_atomic $check reduce_sum_atomic 65536,1,1 256,1,1 0 \
    "$W/x.bin" "$W/out.bin" s32:16777216
done
python3 - "$PTX" "$W" >> "$OUT/ptx_gpu.jsonl" 2>> "$OUT/ptx_gpu.log" <<'PY'
import json, sys
import cupy as cp
import numpy as np
ptx, w = sys.argv[1], sys.argv[2]
mod = cp.RawModule(path=ptx)
def bench(name, grid, block, args):
    k = mod.get_function(name)
    k(grid, block, args); cp.cuda.Device().synchronize()
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    times = []
    for _ in range(5):
        start.record(); k(grid, block, args); stop.record(); stop.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, stop) / 1e3)
    print(json.dumps({"case": name, "impl": "cuda-native", "kernel_seconds": min(times)}))
n = 1 << 23
st = cp.asarray(np.fromfile(f"{w}/state.bin", np.float32)); rho = cp.asarray(np.fromfile(f"{w}/rho.bin", np.float32))
bench("lorenz_rk4", (32768,), (256,), (st, rho, np.float32(0.001), np.int32(1000), np.int32(n)))
m = 4096
A = cp.asarray(np.fromfile(f"{w}/A.bin", np.float32)); B = cp.asarray(np.fromfile(f"{w}/B.bin", np.float32)); C = cp.zeros(m * m, cp.float32)
bench("matmul_tiled", (256, 256), (16, 16), (A, B, C, np.int32(m), np.int32(m), np.int32(m)))
x = cp.asarray(np.fromfile(f"{w}/x.bin", np.float32)); out = cp.zeros(1, cp.float32)
bench("reduce_sum_atomic", (65536,), (256,), (x, out, np.int32(1 << 24)))
PY
python3 - "$OUT" <<'PY'
import json, sys
out = sys.argv[1]
rows = [json.loads(l) for l in open(f"{out}/ptx_gpu.jsonl") if l.strip()]
by = {}
for r in rows:
    by.setdefault(r["case"], {})[r["impl"]] = r
for case, d in sorted(by.items()):
    c = d.get("cuda-native", {}).get("kernel_seconds")
    for mode in ("checked", "unchecked"):
        v = d.get(f"vgpu-wgsl-{mode}", {}).get("kernel_seconds")
        if c and v:
            print(json.dumps({"case": case, "mode": mode, "ratio_kernel": v / c, "vgpu_s": v, "cuda_s": c,
                              "compile_s": d[f"vgpu-wgsl-{mode}"].get("compile_seconds")}))
PY
