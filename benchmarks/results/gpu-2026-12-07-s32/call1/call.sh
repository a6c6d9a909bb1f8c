#!/usr/bin/env bash
# session 32 call 1: the tree (carry .gl + target/vgpu-fin.gz: strip + gzip of target/release/vgpu):
# ptx_gpu.sh (CUDA same run), corpus checked/unchecked, lorenz second-run forms per mode,
# matmul/reduce checked: where the checks' time goes on the current tree
export OUT
source benchmarks/device/env.sh
gunzip -c target/vgpu-fin.gz > /tmp/vgpu-fin; chmod +x /tmp/vgpu-fin
nvidia-smi -L > $OUT/gpu.txt 2>&1
nvidia-smi --query-gpu=driver_version --format=csv,noheader >> $OUT/gpu.txt
VGPU=/tmp/vgpu-fin OUT=$OUT/fin timeout 150 bash benchmarks/device/ptx_gpu.sh > $OUT/fin.log 2>&1
echo "== fin"; cat $OUT/fin/ptx_gpu.jsonl
for c in ptx-cases ptx-cases/corpus/cuda-samples ptx-cases/corpus/cub; do
  for m in "" --unchecked; do
    timeout 20 /tmp/vgpu-fin ptx run $c --backend gpu $m --out-dir /tmp/co > /tmp/co.txt 2>&1
    echo "$c $m: $(tail -1 /tmp/co.txt)" | tee -a $OUT/corpus.txt
  done
done
OUT=$OUT/v1 VGPU=/tmp/vgpu-fin MASK_SPECS="lorenz_rk4:checked lorenz_rk4:unchecked" MASK_ONLY="same reloop vloop vreloop devslow" timeout 150 bash benchmarks/device/mask_variants.sh > /dev/null 2>&1
rm -f $OUT/v1/*.wgsl
echo "== v1"; cat $OUT/v1/mask.jsonl
OUT=$OUT/v2 VGPU=/tmp/vgpu-fin MASK_SPECS="matmul_tiled:checked reduce_sum_atomic:checked" MASK_ONLY="same nochk nowd noepi nogaddr noit norec bare noslow epibar" timeout 170 bash benchmarks/device/mask_variants.sh > /dev/null 2>&1
rm -f $OUT/v2/*.wgsl
echo "== v2"; cat $OUT/v2/mask.jsonl
