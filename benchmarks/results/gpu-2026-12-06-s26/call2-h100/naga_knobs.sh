#!/usr/bin/env bash
# Experiment knobs of a build not in the tree, each beside the build as is
# (`base`), all through ptx_gpu.sh: naga's index clamps off
# (VGPU_NAGA_INDEX_OFF=1, `index`), its loop bounding off
# (VGPU_NAGA_LOOP_OFF=1, `loop`), and the fma emulation's function kept out
# of line (SPIR-V DontInline on fma_f32, VGPU_NOINLINE=fma_f32, `noinl`).
# Rows (tag, case, implementation, kernel ms, first compile s): $OUT/knobs.txt.
set -uo pipefail
source benchmarks/device/env.sh
: > "$OUT/knobs.txt"
for k in base noinl index loop base2 noinl2; do
  unset VGPU_NAGA_INDEX_OFF VGPU_NAGA_LOOP_OFF VGPU_NOINLINE
  case $k in
    index) export VGPU_NAGA_INDEX_OFF=1 ;;
    loop) export VGPU_NAGA_LOOP_OFF=1 ;;
    noinl*) export VGPU_NOINLINE=fma_f32 ;;
  esac
  OUT=$OUT/$k bash benchmarks/device/ptx_gpu.sh > /dev/null 2>&1
  python3 - "$k" "$OUT/$k/ptx_gpu.jsonl" >> "$OUT/knobs.txt" <<'PY'
import json, sys
tag, path = sys.argv[1:3]
for l in open(path):
    d = json.loads(l)
    print(f"{tag:7} {d['case']:18} {d['impl']:20} {d.get('kernel_seconds', 0) * 1e3:9.4f} {d.get('compile_seconds', 0):6.2f}")
PY
done
cat "$OUT/knobs.txt"
