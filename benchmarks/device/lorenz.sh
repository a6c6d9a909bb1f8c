#!/usr/bin/env bash
# Lorenz ensemble on the H200 (DiffEqGPU configuration: f32, sigma=10, beta=8/3,
# rho=linspace(0,21,N), u0=(1,0,0), dt=0.001, 1000 RK4 steps, endpoint only):
# VGPU's WGSL generated from examples/lorenz.field (`vgpu ensemble --backend gpu`,
# the whole command a user runs, --json with its phases) beside the hand-written
# CUDA kernel `lorenz_rk4` (ptx-cases/kernels.ptx, launched with CuPy), same N,
# same call.
#
# VGPU, per N and block (64, 256): kernel time on the GPU's clock (shortest of 20
# passes, timestamp queries), `seconds` (host in, host out: prepare + compile +
# device + check), set-up (adapter + device) apart, the .npy output, and the
# process's wall time. At 2^23 the command runs three times in a row (fresh
# processes: the driver's own shader cache warms). CUDA: kernel time (CUDA events,
# shortest and mean of 20 launches, an event pair each) and host in/out with the
# module loaded.
#
# Run through the device tool from the repository root, carrying
#   [".gl", "target/release/vgpu"]
# (build with `cargo build --release -p vgpu`; fetch the loaders with
# scripts/gl-loaders.sh first). Results: $OUT/lorenz.jsonl, $OUT/lorenz.json
# (rows + summary) and $OUT/lorenz.log.
set -euo pipefail
source benchmarks/device/env.sh
PTX=${PTX:-ptx-cases/kernels.ptx}
VGPU=./target/release/vgpu
NS=${NS:-"1024 8192 32768 131072 524288 2097152 8388608"}
: > "$OUT/lorenz.jsonl"
vgpu_row() { # n block run
  local t0 t1
  t0=$(date +%s.%N)
  "$VGPU" ensemble examples/lorenz.field --n "$1" --t 0:1 --dt 0.001 --method rk4 \
      --param rho=linspace:0:21 --backend gpu --block "$2" --kernel-time 20 --json \
      --out "$OUT/vgpu_$1.npy" > "$OUT/row.json" 2>> "$OUT/lorenz.log"
  t1=$(date +%s.%N)
  python3 -c "import json,sys; d=json.load(open(sys.argv[1])); d.update(impl='vgpu-wgsl', block=int(sys.argv[2]), run=int(sys.argv[3]), process_wall_s=float(sys.argv[5])-float(sys.argv[4])); print(json.dumps(d))" \
      "$OUT/row.json" "$2" "$3" "$t0" "$t1" >> "$OUT/lorenz.jsonl"
}
for n in $NS; do
  for b in 64 256; do vgpu_row "$n" "$b" 1; done
done
for r in 2 3; do vgpu_row 8388608 256 "$r"; done
compare=""
for n in $NS; do compare="$compare --compare $n:$OUT/vgpu_$n.npy"; done
python3 benchmarks/device/lorenz_cupy.py --ptx "$PTX" --n $NS --reps 20 $compare \
  | python3 -c "import json,sys; [print(json.dumps(dict(json.loads(l), impl='cuda-lorenz_rk4'))) for l in sys.stdin if l.strip()]" \
  >> "$OUT/lorenz.jsonl" 2>> "$OUT/lorenz.log"
rm -f "$OUT"/vgpu_*.npy "$OUT/row.json"
python3 - "$OUT" <<'PY'
import json, sys
out = sys.argv[1]
rows = [json.loads(l) for l in open(f"{out}/lorenz.jsonl") if l.strip()]
cuda = {r["n"]: r for r in rows if r["impl"] == "cuda-lorenz_rk4"}
summary = []
for r in rows:
    c = cuda.get(r["n"])
    if r["impl"] != "vgpu-wgsl" or not c or not r.get("kernel_seconds"):
        continue
    ph = r.get("phases", {})
    summary.append({"n": r["n"], "block": r["block"], "run": r["run"],
                    "vgpu_kernel_s": r["kernel_seconds"], "cuda_kernel_s": c["cuda_kernel_s"],
                    "ratio_kernel": r["kernel_seconds"] / c["cuda_kernel_s"],
                    "vgpu_host_in_out_s": r["seconds"], "cuda_host_in_out_s": c["cuda_end_to_end_s"],
                    "ratio_host_in_out": r["seconds"] / c["cuda_end_to_end_s"],
                    "vgpu_host_in_out_without_compile_s": r["seconds"] - ph.get("compile_seconds", 0.0),
                    "phases": ph, "setup_s": r.get("setup_seconds"), "output_s": r.get("output_seconds"),
                    "process_wall_s": r["process_wall_s"]})
json.dump({"rows": rows, "summary": summary}, open(f"{out}/lorenz.json", "w"), indent=1)
for s in summary:
    ph = s["phases"]
    print(f"N={s['n']:>8} b={s['block']:>3} run {s['run']}  kernel {s['vgpu_kernel_s']*1e3:8.3f} / {s['cuda_kernel_s']*1e3:8.3f} ms = {s['ratio_kernel']:.3f}"
          f"  in/out {s['vgpu_host_in_out_s']*1e3:8.2f} / {s['cuda_host_in_out_s']*1e3:7.2f} ms"
          f"  [prep {ph.get('prepare_seconds',0)*1e3:.1f} comp {ph.get('compile_seconds',0)*1e3:.1f} dev {ph.get('device_seconds',0)*1e3:.1f} chk {ph.get('check_seconds',0)*1e3:.1f}]"
          f"  setup {s['setup_s']*1e3:.1f} out {s['output_s']*1e3:.1f} wall {s['process_wall_s']*1e3:.0f} ms")
PY
