#!/usr/bin/env bash
# EXPERIMENT (not committed): what naga's bounds checks and loop bounding cost.
set -uo pipefail
source benchmarks/device/env.sh
VGPU=${VGPU:-./target/release/vgpu}
W=$(mktemp -d)
python3 benchmarks/device/ptx_inputs.py "$W"
mkdir -p "$W/o"
one() { # off, mode, entry, grid, block, args...
  local off=$1 mode=$2 entry=$3 grid=$4 block=$5; shift 5
  local a=()
  for x in "$@"; do a+=(--arg "$x"); done
  [ "$mode" = unchecked ] && a+=(--unchecked)
  local log ks
  log=$(VGPU_NAGA_OFF="$off" timeout 120 "$VGPU" ptx run ptx-cases/kernels.ptx --entry "$entry" \
    --grid "$grid" --block "$block" --backend gpu --kernel-time 5 --out-dir "$W/o" "${a[@]}" 2>&1)
  ks=$(echo "$log" | awk '$1=="kernel_seconds"{print $2}')
  printf '%-18s %-10s off=%-18s %s\n' "$entry" "$mode" "${off:-none}" "${ks:-FAIL}" | tee -a "$OUT/naga.txt"
}
LOR=(32768,1,1 256,1,1 "$W/state.bin" "$W/rho.bin" f32:0.001 s32:1000 s32:8388608)
MMA=(256,256,1 16,16,1 "$W/A.bin" "$W/B.bin" "$W/C.bin" s32:4096 s32:4096 s32:4096)
RED=(65536,1,1 256,1,1 "$W/x.bin" "$W/out.bin" s32:16777216)
for off in "" index buffer loop index,buffer,loop; do
  one "$off" unchecked reduce_sum_atomic "${RED[@]}"
  one "$off" checked reduce_sum_atomic "${RED[@]}"
  one "$off" unchecked matmul_tiled "${MMA[@]}"
  one "$off" checked matmul_tiled "${MMA[@]}"
done
one "" unchecked lorenz_rk4 "${LOR[@]}"
one "index,buffer,loop" unchecked lorenz_rk4 "${LOR[@]}"
