#!/usr/bin/env bash
# session 31 call 1: unchecked kernels without naga's loop bounding where
# their loops end themselves: halv (10d6e81, halving loops only: the tree),
# cnt (3942d23, counted loops too), fin (e320dca, none) in alternation;
# ptx_gpu.sh (CUDA in the same run) on halv
export OUT
source benchmarks/device/env.sh
for b in fin cnt halv; do gunzip -c target/vgpu-$b.gz > /tmp/vgpu-$b; chmod +x /tmp/vgpu-$b; done
nvidia-smi -L > $OUT/gpu.txt 2>&1
nvidia-smi --query-gpu=driver_version --format=csv,noheader >> $OUT/gpu.txt
for rep in 1; do
  for b in fin cnt halv; do
    OUT=$OUT/lb-$b-$rep VGPU=/tmp/vgpu-$b MASK_SPECS="lorenz_rk4:unchecked matmul_tiled:unchecked reduce_sum_atomic:unchecked" MASK_ONLY="same" timeout 100 bash benchmarks/device/mask_variants.sh > /dev/null 2>&1
    rm -f $OUT/lb-$b-$rep/*.wgsl
    echo "== lb $b $rep"; cat $OUT/lb-$b-$rep/mask.jsonl
  done
done
VGPU=/tmp/vgpu-halv OUT=$OUT/halv timeout 150 bash benchmarks/device/ptx_gpu.sh > $OUT/halv.log 2>&1
echo "== halv"; cat $OUT/halv/ptx_gpu.jsonl
