#!/usr/bin/env bash
# Session 34 device call A: ptx_gpu for HEAD (f) and the versioned build (v),
# matmul/reduce checked variants with driver statistics.
set -u
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json WGPU_BACKEND=vulkan VGPU_NO_LOADERS=1
for b in f v; do gunzip -c target/vgpu-$b.gz > /tmp/vgpu-$b; chmod +x /tmp/vgpu-$b; done
gunzip -c target/pstats.gz > /tmp/pstats; chmod +x /tmp/pstats
nvidia-smi -L > $OUT/gpu.txt 2>&1
T0=$(date +%s)
t() { echo "$1 $(( $(date +%s) - T0 ))" >> $OUT/times.txt; }
VGPU=/tmp/vgpu-v OUT=$OUT/v timeout 150 bash benchmarks/device/ptx_gpu.sh > $OUT/v.txt 2>&1; t v
VGPU=/tmp/vgpu-f OUT=$OUT/f timeout 150 bash benchmarks/device/ptx_gpu.sh > $OUT/f.txt 2>&1; t f
VGPU=/tmp/vgpu-v OUT=$OUT/maskv SPV_DIR=$OUT/spvdev/v MASK_SPECS="matmul_tiled:checked" \
  MASK_ONLY="same nochk" timeout 100 bash benchmarks/device/mask_variants.sh > $OUT/maskv.txt 2>&1; t maskv
VGPU=/tmp/vgpu-f OUT=$OUT/mask SPV_DIR=$OUT/spvdev/f MASK_SPECS="matmul_tiled:checked reduce_sum_atomic:checked" \
  MASK_ONLY="same hoist wdga nochk nogaddr noepi" timeout 150 bash benchmarks/device/mask_variants.sh > $OUT/mask.txt 2>&1; t mask
timeout 40 /tmp/pstats $(find $OUT/spvdev -name '*.spv') > $OUT/pstats.jsonl 2> $OUT/pstats.err; t pstats
