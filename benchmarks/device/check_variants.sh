#!/usr/bin/env bash
# What each family of a checked PTX kernel's checks costs on the GPU: for
# matmul_tiled (MM x MM, default 4096) and reduce_sum_atomic (RN, default
# 2^24), the checked kernel as
# generated (`cur`, its WGSL kept as $OUT/<entry>-checked.wgsl) beside the
# variants of check_variants.py loaded with VGPU_LOAD_WGSL (each drops one
# family: the initialisation notes of shared loads, the barriers' release,
# the whole initialisation check, the watchdog, the global-address table
# search, or all of them), and the unchecked kernel; kernel time per dispatch
# (the shortest of `--kernel-time 5`). The variants measure a cost: their
# checks are gone, so a faulting launch would not be reported. Run through the
# device tool from the repository root, carrying [".gl", "target/release/vgpu"].
# Results: $OUT/cv.txt (one line per run), $OUT/cv.log.
set -uo pipefail
source benchmarks/device/env.sh
VGPU=${VGPU:-./target/release/vgpu}
MM=${MM:-4096}
RN=${RN:-16777216}
export MM
W=$(mktemp -d)
python3 benchmarks/device/ptx_inputs.py "$W"
mkdir -p "$W/o"
one() { # tag, WGSL dir (empty: generated, dumped), mode, entry, grid, block, args...
  local tag=$1 mode=$3 entry=$4
  local log ks
  log=$(variant_run "$W" "$2" "$mode" "$entry" "${@:5}")
  { echo "== $tag $entry $mode"; echo "$log"; } >> "$OUT/cv.log"
  ks=$(echo "$log" | awk '$1=="kernel_seconds"{print $2}')
  printf '%-18s %-10s %-8s %s\n' "$entry" "$mode" "$tag" "${ks:-FAIL}" | tee -a "$OUT/cv.txt"
}
MMA=($((MM / 16)),$((MM / 16)),1 16,16,1 "$W/A.bin" "$W/B.bin" "$W/C.bin" "s32:$MM" "s32:$MM" "s32:$MM")
RED=($((RN / 256)),1,1 256,1,1 "$W/x.bin" "$W/out.bin" "s32:$RN")
: > "$OUT/cv.txt"
for e in matmul_tiled reduce_sum_atomic; do
  if [ $e = matmul_tiled ]; then args=("${MMA[@]}"); else args=("${RED[@]}"); fi
  one cur "" checked $e "${args[@]}"
  python3 benchmarks/device/check_variants.py "$W/dump-$e-checked/$e.wgsl" "$W/cv" $e
  cp "$W/dump-$e-checked/$e.wgsl" "$OUT/$e-checked.wgsl"
  for v in ${CV_VARIANTS:-noshrd nouni noinit nosteps nogaddr none bare1 bare2 bare3 fbar fst}; do
    one $v "$W/cv/$v" checked $e "${args[@]}"
  done
  one cur "" unchecked $e "${args[@]}"
done
