#!/usr/bin/env bash
# Matmul on the H200: `vgpu bench matmul` beside torch (cuBLAS), in one device call.
#
# From the repository root, after `cargo build --release` and
# scripts/gl-loaders.sh, call the device tool's `run` with
#   carry: [".gl", "target/release/vgpu"]
#   command: bash benchmarks/device/matmul.sh
# Results come back under $OUT: one JSON file per run and summary.json (the
# figures of docs/BENCHMARKS.md "Matmul, H200"); the log in $OUT/matmul.log.
set -uo pipefail
OUT=${OUT:-/tmp/vgpu-matmul-out}
source benchmarks/device/env.sh
exec > >(tee "$OUT/matmul.log") 2>&1
VGPU=./target/release/vgpu

nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > "$OUT/nvidia-smi.csv" 2>&1

echo "== cache demo"
$VGPU cache-demo | tee "$OUT/cache_demo.txt"

echo "== vgpu, host arrays in and out: N=16, 64"
for n in 16 64; do
  $VGPU bench matmul --n $n --backend gpu --json --seconds 2 | tee "$OUT/vgpu_n$n.json"
done

echo "== vgpu, N=4096: host to host, and device-side (20 dispatches in one submission)"
$VGPU bench matmul --n 4096 --backend gpu --json --seconds 3 --device-side --iters 20 \
  | tee "$OUT/vgpu_n4096.json"
# Other register-blocked tiles, device-side only matters here (short host phase).
i=0
for tile in 128x128x16x8x8 64x128x16x4x8 128x64x16x8x4 64x64x16x4x4; do
  $VGPU bench matmul --n 4096 --backend gpu --json --seconds 0.5 --device-side --iters 20 \
    --tile $tile | tee "$OUT/vgpu_n4096_tile$i.json"
  i=$((i + 1))
done

echo "== torch (cuBLAS) references"
python3 benchmarks/device/matmul_torch.py --roundtrip 16 64 --device 4096 --iters 20 --seconds 2 \
  | tee "$OUT/torch.json"

echo "== summary"
python3 - "$OUT" <<'PY' | tee "$OUT/summary.json"
import json, sys, glob, os
out = sys.argv[1]
load = lambda p: json.loads(open(p).read().strip().splitlines()[-1])
torch = load(os.path.join(out, "torch.json"))
rt = {r["n"]: r for r in torch["roundtrip"]}
dev = {r["n"]: r for r in torch["device"]}
s = {"gpu": torch["gpu"], "torch": torch["torch"], "rows": []}
for n in (16, 64):
    v = load(os.path.join(out, f"vgpu_n{n}.json"))
    s["rows"].append({"n": n, "what": "cached call, host to host",
        "vgpu_first_call_s": v["first_call_s"], "vgpu_per_call_s": v["per_call_s"],
        "torch_per_call_s": rt[n]["per_call_s"], "torch_first_call_s": rt[n]["first_call_s"],
        "ratio_torch_time_over_vgpu_time": rt[n]["per_call_s"] / v["per_call_s"],
        "adapter": v["adapter"], "rel_err_vs_cpu": v["rel_err_vs_cpu"]})
runs = [load(p) for p in sorted(glob.glob(os.path.join(out, "vgpu_n4096*.json")))]
best = max(runs, key=lambda r: r.get("device_tflops", 0))
s["rows"].append({"n": 4096, "what": "device-side, TF32 off",
    "vgpu_device_tflops_default_tile": runs[0].get("device_tflops"),
    "vgpu_device_tflops_best": best.get("device_tflops"), "best_tile": best.get("tile", "default"),
    "all_tiles": {r.get("tile", "default"): r.get("device_tflops") for r in runs},
    "torch_event_tflops": dev[4096]["event_tflops"], "torch_wall_tflops": dev[4096]["wall_tflops"],
    "ratio_vgpu_over_torch_wall": runs[0].get("device_tflops") / dev[4096]["wall_tflops"],
    "vgpu_first_call_s": runs[0]["first_call_s"], "vgpu_host_per_call_s": runs[0]["per_call_s"],
    "rel_err_vs_cpu": runs[0]["rel_err_vs_cpu"]})
print(json.dumps(s, indent=1))
PY
