#!/usr/bin/env bash
# session 32 call 2: the rerun form (carry .gl + target/vgpu-re.gz): ptx_gpu.sh (CUDA same run),
# corpus checked/unchecked, firstrun variants (matmul/reduce checked)
export OUT
source benchmarks/device/env.sh
gunzip -c target/vgpu-re.gz > /tmp/vgpu-re; chmod +x /tmp/vgpu-re
nvidia-smi -L > $OUT/gpu.txt 2>&1
VGPU=/tmp/vgpu-re OUT=$OUT/re timeout 150 bash benchmarks/device/ptx_gpu.sh > $OUT/re.log 2>&1
echo "== re"; cat $OUT/re/ptx_gpu.jsonl
for c in ptx-cases ptx-cases/corpus/cuda-samples ptx-cases/corpus/cub; do
  for m in "" --unchecked; do
    timeout 100 /tmp/vgpu-re ptx run $c --backend gpu $m --out-dir /tmp/co > /tmp/co.txt 2>&1
    echo "$c $m: $(tail -1 /tmp/co.txt)" | tee -a $OUT/corpus.txt
  done
done
OUT=$OUT/v1 VGPU=/tmp/vgpu-re MASK_SPECS="matmul_tiled:checked reduce_sum_atomic:checked" MASK_ONLY="same firstrun frnowd frnog nochk" timeout 150 bash benchmarks/device/mask_variants.sh > /dev/null 2>&1
rm -f $OUT/v1/*.wgsl $OUT/v1/mask.log
echo "== v1"; cat $OUT/v1/mask.jsonl
