#!/usr/bin/env bash
# session 30 call 4: ptx_gpu.sh (CUDA in the same run) and the corpus on the
# build whose loops through barriers raise the watchdog without a branch
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
