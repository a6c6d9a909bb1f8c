#!/usr/bin/env bash
# Session 34 device call: variants of the versioned build's checked matmul,
# their register counts, then the corpora on the versioned build.
set -u
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json WGPU_BACKEND=vulkan VGPU_NO_LOADERS=1
gunzip -c target/vgpu-w.gz > /tmp/vgpu-w; chmod +x /tmp/vgpu-w
gunzip -c target/pstats.gz > /tmp/pstats; chmod +x /tmp/pstats
T0=$(date +%s)
TOP=$OUT
t() { echo "$1 $(( $(date +%s) - T0 ))" >> $TOP/times.txt; }
export VGPU=/tmp/vgpu-w
OUT=/tmp/pg timeout 150 bash benchmarks/device/ptx_gpu.sh > $TOP/w.txt 2>&1; cp /tmp/pg/ptx_gpu.jsonl $TOP/w.jsonl; t ptx_gpu
(
  export OUT=/tmp/o3 SPV_DIR=/tmp/spv3
  source benchmarks/device/env.sh
  variant_setup /tmp/o3/rows
  one cur "" checked matmul_tiled "${MMA[@]}"
  one cur "" unchecked matmul_tiled "${MMA[@]}"
  python3 v_variants.py $W/dump-matmul_tiled-checked/matmul_tiled.wgsl $W/var matmul_tiled > /dev/null
  for rep in 1 2; do
    for v in same noslow nosteps nonbar all; do one $v $W/var/$v checked matmul_tiled "${MMA[@]}"; done
    one cur "" unchecked matmul_tiled "${MMA[@]}"
  done
  cp /tmp/o3/rows.jsonl /tmp/o3/rows.log $TOP/
)
t variants
find /tmp/spv3 -name 'cfg_*.spv' | sort > $TOP/pstats_files.txt
timeout 40 /tmp/pstats $(cat $TOP/pstats_files.txt) > $TOP/pstats.jsonl 2> $TOP/pstats.err
t pstats
left=$(( 220 - ($(date +%s) - T0) ))
[ $left -gt 20 ] && OUT=/tmp/corpus CORPUS_TIMEOUT=100 timeout $left bash benchmarks/device/corpus.sh > $TOP/corpus.txt 2>&1
t corpus
