#!/usr/bin/env bash
# Session 18 call 1: SPIR-V float-controls variants for NVIDIA's fma (VGPU_SPIRV_EXP).
set -uo pipefail
source benchmarks/device/env.sh
export VGPU_PIPELINE_CACHE=off
R=$OUT/r; mkdir -p $R
date -u > $R/when.txt; nvidia-smi > $R/smi.txt 2>&1
W2=$(mktemp -d); python3 benchmarks/device/fma_check.py gen "$W2" > /dev/null
mkdir -p $W2/cpu
timeout 60 ./target/release/vgpu ptx run crates/vgpu/tests/kernels/fma.ptx --entry fma --grid 512 --block 128 --backend cpu \
    --arg "$W2/a.bin" --arg "$W2/b.bin" --arg "$W2/c.bin" --arg "$W2/o.bin" --arg u32:65536 --out-dir "$W2/cpu" > $R/fma_cpu.txt 2>&1
NAT=""
for v in none nofmanc rte szinp fc2 fc2def fc2def,rte,szinp fc2,nofmanc fc2def,nofmanc,rte,szinp; do
  m=native_$(echo $v | tr ',' '_'); mkdir -p "$W2/$m"
  VGPU_SPIRV_EXP=$v timeout 60 ./target/release/vgpu ptx run crates/vgpu/tests/kernels/fma.ptx --entry fma --grid 512 --block 128 --backend gpu \
    --arg "$W2/a.bin" --arg "$W2/b.bin" --arg "$W2/c.bin" --arg "$W2/o.bin" --arg u32:65536 --out-dir "$W2/$m" > "$R/fma_run_$m.txt" 2>&1
  echo "== $v rc=$?: $(grep -E 'fma_f32|subnormals|rror' $R/fma_run_$m.txt | tr '\n' ' ') probe-fma-wrong=$(grep -c 'EXP probe' $R/fma_run_$m.txt)" >> $R/variants.txt
  python3 benchmarks/device/fma_check.py cmp "$W2" $m >> $R/variants.txt 2>&1
  grep -q "EXP probe" $R/fma_run_$m.txt || NAT="$NAT $v"
done
echo "native under: $NAT" >> $R/variants.txt
for v in none fc2def fc2def,rte,szinp; do
  ( export VGPU_SPIRV_EXP=$v PTX_GPU_SKIP="matmul_tiled:on matmul_tiled:off reduce_sum_atomic:on reduce_sum_atomic:off"; OUT=$R/lz_$v timeout 120 bash benchmarks/device/ptx_gpu.sh ) > $R/lz_$v.log 2>&1
done
for v in $NAT; do
  ( export VGPU_SPIRV_EXP=$v; OUT=$R/ptx_$v timeout 120 bash benchmarks/device/ptx_gpu.sh ) > $R/ptx_$v.log 2>&1
  for a in "" --unchecked; do echo "== $v ptx-cases $a"; VGPU_SPIRV_EXP=$v timeout 60 ./target/release/vgpu ptx run ptx-cases --backend gpu $a 2>&1 | grep -E "FAIL|MISMATCH|cases:|rror|subnormals|fma_f32" | sort | uniq -c; done >> $R/corpus.txt 2>&1
  break
done
tar czf $OUT/r.tgz -C $OUT r && rm -rf $R
