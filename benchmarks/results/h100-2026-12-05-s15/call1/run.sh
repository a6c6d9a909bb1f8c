#!/usr/bin/env bash
# Session 15 device call 1.
set -uo pipefail
source benchmarks/device/env.sh
R=$OUT/r; mkdir -p $R
nvidia-smi -L > $R/gpu.txt 2>&1; nvidia-smi --query-gpu=driver_version --format=csv >> $R/gpu.txt
date -u > $R/when.txt
OUT=$R bash benchmarks/device/fma_check.sh > $R/fma_check.log 2>&1
mkdir -p $R/auto; OUT=$R/auto bash benchmarks/device/ptx_gpu.sh > $R/auto/run.log 2>&1
timeout 120 ./target/release/vgpu ptx run ptx-cases --backend gpu > $R/corpus_repo.txt 2>&1
for c in cuda-samples cub; do timeout 100 ./target/release/vgpu ptx run ptx-cases/corpus/$c --backend gpu > $R/corpus_$c.txt 2>&1; done
date -u >> $R/when.txt
tar czf $OUT/r.tgz -C $OUT r && rm -rf $R
