#!/usr/bin/env bash
# The SPIR-V that VGPU gives the driver for each WGSL variant of
# mask_variants.py, made on this machine (any Vulkan adapter with SPIR-V
# passthrough, lavapipe included) so that a GPU call only compiles them:
# for each of SPV_SPECS (entry:mode, default matmul_tiled, reduce_sum_atomic
# and lorenz_rk4, checked and unchecked) the kernel's WGSL is dumped from a
# small launch (LN = 2048 threads, MM = 64), the variants made, and each
# launched once with VGPU_LOAD_WGSL and VGPU_DUMP_SPV into
# $SPV_OUT/<entry>-<mode>-<variant>/ (default spvstats/). On the GPU machine,
# the pipeline_stats example then prints the driver's statistics of each
# (`pipeline_stats $(find spvstats -name '*.spv')`: on NVIDIA the register
# count). naga's options follow the local adapter (robust buffers, int64),
# which may differ from the GPU's in its buffer clamps: compare with the
# SPIR-V the GPU's own run dumps (VGPU_DUMP_SPV) for the generated kernel.
set -u
export VGPU_NO_LOADERS=1 OUT=${OUT:-/tmp/spv_variants} LN=2048 MM=64
export VGPU_PTX_EXACT_FMA=${VGPU_PTX_EXACT_FMA:-flush-model}
source benchmarks/device/env.sh
variant_setup "$OUT/rows"
R=$(realpath -m "${SPV_OUT:-spvstats}")
mkdir -p "$R"
for spec in ${SPV_SPECS:-matmul_tiled:checked matmul_tiled:unchecked reduce_sum_atomic:checked reduce_sum_atomic:unchecked lorenz_rk4:checked lorenz_rk4:unchecked}; do
  e=${spec%:*} md=${spec#*:}
  case_args "$e"
  variant_run "$W" "" "$md" "$e" "${args[@]}" > /dev/null
  for v in $(python3 benchmarks/device/mask_variants.py "$W/dump-$e-$md/$e.wgsl" "$W/var-$e-$md" "$e"); do
    d=$R/$e-$md-$v
    mkdir -p "$d"
    a=()
    for x in "${args[@]:2}"; do a+=(--arg "$x"); done
    [ "$md" = unchecked ] && a+=(--unchecked)
    VGPU_LOAD_WGSL=$W/var-$e-$md/$v VGPU_DUMP_SPV=$d timeout 60 "$VGPU" ptx run ptx-cases/kernels.ptx \
      --entry "$e" --grid "${args[0]}" --block "${args[1]}" --backend gpu --out-dir "$W/o" "${a[@]}" \
      > "$d/log.txt" 2>&1 || echo "spv_variants: $e $md $v failed (see $d/log.txt)"
    # Only the kernel's own module.
    find "$d" -name '*.spv' ! -name 'cfg_*' -delete
  done
done
