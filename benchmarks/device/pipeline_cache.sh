#!/usr/bin/env bash
# The on-disk pipeline cache (issue 16 item 3) on the GPU machine: the same
# `vgpu ensemble examples/lorenz.field … --backend gpu --json` process run
# three times with the cache off, then cold (an empty cache directory), then
# warm (the directory the cold run wrote), each three times, with the driver's
# own shader disk cache switched off (__GL_SHADER_DISK_CACHE=0) so that only
# VGPU's cache differs. Reports each process's pipeline compile time
# (phases.compile_seconds), host-in/host-out seconds, set-up and wall time.
#
# Run through the device tool from the repository root, carrying
#   [".gl", "target/release/vgpu"].
# Results: $OUT/pipeline_cache.jsonl and a summary on stdout.
set -euo pipefail
source benchmarks/device/env.sh
VGPU=./target/release/vgpu
N=${N:-8388608}
export __GL_SHADER_DISK_CACHE=0
PC=$(mktemp -d)
: > "$OUT/pipeline_cache.jsonl"
row() { # mode cache-dir run
  local t0 t1
  t0=$(date +%s.%N)
  VGPU_PIPELINE_CACHE="$2" "$VGPU" ensemble examples/lorenz.field --n "$N" --t 0:1 --dt 0.001 \
      --method rk4 --param rho=linspace:0:21 --backend gpu --json --out "$OUT/pc.npy" \
      > "$OUT/pc_row.json" 2>> "$OUT/pipeline_cache.log"
  t1=$(date +%s.%N)
  python3 -c "import json,sys; d=json.load(open(sys.argv[1])); d.update(mode=sys.argv[2], run=int(sys.argv[3]), process_wall_s=float(sys.argv[5])-float(sys.argv[4])); print(json.dumps(d))" \
      "$OUT/pc_row.json" "$1" "$3" "$t0" "$t1" >> "$OUT/pipeline_cache.jsonl"
}
for r in 1 2 3; do row off off "$r"; done
row cold "$PC" 1
ls -l "$PC" >> "$OUT/pipeline_cache.log"
for r in 1 2 3; do row warm "$PC" "$r"; done
rm -f "$OUT/pc.npy" "$OUT/pc_row.json"
python3 - "$OUT" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(f"{sys.argv[1]}/pipeline_cache.jsonl") if l.strip()]
for r in rows:
    ph = r.get("phases", {})
    pc = r.get("pipeline_cache", {})
    print(f"{r['mode']:>4} run {r['run']}: compile {ph.get('compile_seconds', 0)*1e3:8.2f} ms"
          f"  host in/out {r['seconds']*1e3:8.2f} ms  set-up {r.get('setup_seconds', 0)*1e3:7.1f} ms"
          f"  wall {r['process_wall_s']*1e3:7.0f} ms  loaded {pc.get('loaded_bytes', '-')} B")
PY
