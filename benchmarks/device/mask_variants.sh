#!/usr/bin/env bash
# Session 27's WGSL variants (mask_variants.py) timed on the GPU: for
# matmul_tiled (MM x MM, default 4096, unchecked and checked) and lorenz_rk4
# (N = LN, default 2^23, unchecked), the kernel as generated (`cur`, its WGSL
# kept as $OUT/<entry>-<mode>.wgsl) and the variants loaded with
# VGPU_LOAD_WGSL, each run twice in alternation; kernel time per dispatch (the
# shortest of `--kernel-time 5`) and the output's md5. Run through the device
# tool from the repository root, carrying [".gl", "target/release/vgpu"].
# Results: $OUT/mask.jsonl, $OUT/mask.log.
set -uo pipefail
source benchmarks/device/env.sh
VGPU=${VGPU:-./target/release/vgpu}
LN=${LN:-8388608}
MM=${MM:-4096}
export LN MM
W=$(mktemp -d)
python3 benchmarks/device/ptx_inputs.py "$W"
mkdir -p "$W/o"
one() { # variant, WGSL dir (empty: as generated, dumped), mode, entry, grid, block, args...
  local tag=$1 mode=$3 entry=$4
  local log ks of=C.bin sum
  log=$(variant_run "$W" "$2" "$mode" "$entry" "${@:5}")
  { echo "== $tag $entry $mode"; echo "$log"; } >> "$OUT/mask.log"
  ks=$(echo "$log" | awk '$1=="kernel_seconds"{print $2}')
  [ "$entry" = lorenz_rk4 ] && of=state.bin
  [ "$entry" = reduce_sum_atomic ] && of=out.bin
  sum=$(md5sum "$W/o/$of" 2>/dev/null | cut -c1-12)
  echo "{\"entry\":\"$entry\",\"mode\":\"$mode\",\"variant\":\"$tag\",\"kernel_seconds\":${ks:-null},\"md5\":\"$sum\"}" | tee -a "$OUT/mask.jsonl"
}
LOR=($((LN / 256)),1,1 256,1,1 "$W/state.bin" "$W/rho.bin" f32:0.001 s32:1000 "s32:$LN")
RED=(65536,1,1 256,1,1 "$W/x.bin" "$W/out.bin" s32:16777216)
MMA=($((MM / 16)),$((MM / 16)),1 16,16,1 "$W/A.bin" "$W/B.bin" "$W/C.bin" "s32:$MM" "s32:$MM" "s32:$MM")
: > "$OUT/mask.jsonl"
for spec in ${MASK_SPECS:-matmul_tiled:unchecked matmul_tiled:checked reduce_sum_atomic:checked reduce_sum_atomic:unchecked lorenz_rk4:unchecked}; do
  e=${spec%:*} md=${spec#*:}
  case $e in lorenz_rk4) args=("${LOR[@]}");; reduce_sum_atomic) args=("${RED[@]}");; *) args=("${MMA[@]}");; esac
  one cur "" "$md" "$e" "${args[@]}"
  vs=$(python3 benchmarks/device/mask_variants.py "$W/dump-$e-$md/$e.wgsl" "$W/var-$e-$md" "$e")
  # MASK_ONLY: the variants to run (default: all generated).
  if [ -n "${MASK_ONLY:-}" ]; then
    vs=$(for v in $vs; do case " $MASK_ONLY " in *" $v "*) echo "$v";; esac; done)
  fi
  cp "$W/dump-$e-$md/$e.wgsl" "$OUT/$e-$md.wgsl"
  for rep in 1 2; do
    for v in $vs; do
      one "$v" "$W/var-$e-$md/$v" "$md" "$e" "${args[@]}"
      if [ "$v" = gsplit ]; then
        VGPU_SPV_NOINLINE=gaddr_slow one gsplit_ni "$W/var-$e-$md/$v" "$md" "$e" "${args[@]}"
      fi
    done
  done
done
