#!/usr/bin/env bash
# Session 16 device call 2: structured form + DenormPreserve.
set -uo pipefail
source benchmarks/device/env.sh
R=$OUT/r; mkdir -p $R
date -u > $R/when.txt; nvidia-smi -L > $R/gpu.txt 2>&1
( OUT=$R/sub timeout 60 bash benchmarks/device/f32_subnormal.sh ) > $R/sub.log 2>&1
( OUT=$R/auto timeout 150 bash benchmarks/device/ptx_gpu.sh ) > $R/auto.log 2>&1
( VGPU_PTX_CONTROL=switch OUT=$R/switch timeout 150 bash benchmarks/device/ptx_gpu.sh ) > $R/switch.log 2>&1
W=$(mktemp -d)
python3 benchmarks/device/fma_check.py gen "$W"
for m in cpu emulate native; do
  mkdir -p "$W/$m"; be=gpu; [ "$m" = cpu ] && be=cpu
  VGPU_PTX_EXACT_FMA=$m timeout 60 ./target/release/vgpu ptx run crates/vgpu/tests/kernels/fma.ptx --entry fma --grid 512 --block 128 --backend "$be" \
    --arg "$W/a.bin" --arg "$W/b.bin" --arg "$W/c.bin" --arg "$W/o.bin" --arg u32:65536 --out-dir "$W/$m" > "$R/fma_run_$m.txt" 2>&1
done
python3 benchmarks/device/fma_check.py cmp "$W" emulate native > "$R/fma_cmp.txt" 2>&1
for d in ptx-cases ptx-cases/corpus/cub ptx-cases/corpus/cuda-samples; do for a in "" --unchecked; do echo "== $d $a"; timeout 100 ./target/release/vgpu ptx run $d --backend gpu $a 2>&1 | grep -E "FAIL|MISMATCH|cases:|rror|subnormals|fma_f32" | sort | uniq -c | head -20; done; done > $R/corpus.txt 2>&1
tar czf $OUT/r.tgz -C $OUT r && rm -rf $R
