#!/usr/bin/env bash
# WGSL variants (mask_variants.py: session 27's, and session 29's of the
# checks: nowd, noinit, noepi, nogaddr, nochk) timed on the GPU: for
# matmul_tiled (MM x MM, default 4096, unchecked and checked),
# reduce_sum_atomic (2^24, checked and unchecked) and lorenz_rk4 (N = LN,
# default 2^23, unchecked) — MASK_SPECS, as entry:mode, chooses — the kernel
# as generated (`cur`, its WGSL kept as $OUT/<entry>-<mode>.wgsl) and the
# variants loaded with VGPU_LOAD_WGSL (MASK_ONLY chooses), each run twice in
# alternation; kernel time per dispatch (the shortest of `--kernel-time 5`)
# and the output's md5. `gsplit_ni` is `gsplit` run with
# VGPU_SPV_NOINLINE=gaddr_slow, which only session 27's knob build (not in
# the tree) reads: elsewhere it repeats `gsplit`. Run through the device tool
# from the repository root, carrying [".gl", "target/release/vgpu"].
# Results: $OUT/mask.jsonl, $OUT/mask.log.
set -uo pipefail
source benchmarks/device/env.sh
variant_setup "$OUT/mask"
for spec in ${MASK_SPECS:-matmul_tiled:unchecked matmul_tiled:checked reduce_sum_atomic:checked reduce_sum_atomic:unchecked lorenz_rk4:unchecked}; do
  e=${spec%:*} md=${spec#*:}
  case_args "$e"
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
