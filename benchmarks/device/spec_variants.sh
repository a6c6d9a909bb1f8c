#!/usr/bin/env bash
# The speculative fma regions' test forms and the shared indexing, timed on the
# GPU: for lorenz_rk4 (N = LN, default 2^23, unchecked) and matmul_tiled (MM x MM,
# default 4096, unchecked and checked), the kernel as generated (`cur`, its WGSL
# kept as $OUT/<entry>-<mode>.wgsl) and the variants of spec_variants.py loaded
# with VGPU_LOAD_WGSL; kernel time per dispatch (the shortest of
# `--kernel-time 5`) and the output's md5 (to compare the exact forms with
# `cur`). Run through the device tool from the repository root, carrying
# [".gl", "target/release/vgpu"], after benchmarks/device/ptx_gpu.sh (CUDA's
# time for the ratios). Results: $OUT/variants.jsonl, $OUT/variants.log.
set -uo pipefail
source benchmarks/device/env.sh
variant_setup "$OUT/variants"
for spec in "lorenz_rk4 unchecked" "matmul_tiled unchecked" "matmul_tiled checked"; do
  set -- $spec
  e=$1 md=$2
  if [ "$e" = lorenz_rk4 ]; then args=("${LOR[@]}"); else args=("${MMA[@]}"); fi
  one cur "" "$md" "$e" "${args[@]}"
  python3 benchmarks/device/spec_variants.py "$W/dump-$e-$md/$e.wgsl" "$W/var-$e-$md" "$e" > /dev/null
  cp "$W/dump-$e-$md/$e.wgsl" "$OUT/$e-$md.wgsl"
  case "$e $md" in
    "lorenz_rk4 unchecked") vs="bare flt sat int mix noslow" ;;
    "matmul_tiled unchecked") vs="bare flt bare_pc cur_pc" ;;
    *) vs="noshchk flt" ;;
  esac
  for v in $vs; do one "$v" "$W/var-$e-$md/$v" "$md" "$e" "${args[@]}"; done
done
python3 benchmarks/device/spec_variants_report.py "$OUT"
