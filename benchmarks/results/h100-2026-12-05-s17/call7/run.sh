#!/usr/bin/env bash
# Session 17 device call 7: faults of the checked structured form recorded at barriers (not at each access): ptx_gpu.sh, checks.ptx soft kernels, corpus.
set -uo pipefail
source benchmarks/device/env.sh
R=$OUT/r; mkdir -p $R
date -u > $R/when.txt; nvidia-smi -L > $R/gpu.txt 2>&1
( OUT=$R/auto timeout 200 bash benchmarks/device/ptx_gpu.sh ) > $R/auto.log 2>&1
K=crates/vgpu/tests/kernels/checks.ptx
for e in soft_oob soft_spin soft_bar_spin soft_bar_skip; do
  g=1; [ $e = soft_oob ] && g=2
  echo "== $e: $(timeout 60 ./target/release/vgpu ptx run $K --entry $e --grid $g --block 64 --backend gpu --watchdog 20000 --arg zeros:u32:1024:/tmp/x.bin 2>&1 | tr '\n' ' ')"
done > $R/soft.txt 2>&1
W2=$(mktemp -d); python3 benchmarks/device/fma_check.py gen "$W2"
for m in cpu native; do
  mkdir -p "$W2/$m"; be=gpu; [ "$m" = cpu ] && be=cpu
  VGPU_PTX_EXACT_FMA=$m timeout 60 ./target/release/vgpu ptx run crates/vgpu/tests/kernels/fma.ptx --entry fma --grid 512 --block 128 --backend "$be" \
    --arg "$W2/a.bin" --arg "$W2/b.bin" --arg "$W2/c.bin" --arg "$W2/o.bin" --arg u32:65536 --out-dir "$W2/$m" > "$R/fma_run_$m.txt" 2>&1
done
python3 benchmarks/device/fma_check.py cmp "$W2" native > "$R/fma_cmp.txt" 2>&1
for a in "" --unchecked; do echo "== ptx-cases $a"; timeout 90 ./target/release/vgpu ptx run ptx-cases --backend gpu $a 2>&1 | grep -E "FAIL|MISMATCH|cases:|rror|subnormals|fma_f32" | sort | uniq -c; done > $R/corpus.txt 2>&1
for c in cuda-samples cub; do echo "== $c"; timeout 120 ./target/release/vgpu ptx run ptx-cases/corpus/$c --backend gpu 2>&1 | grep -E "FAIL|cases:|rror" | sort | uniq -c; done >> $R/corpus.txt 2>&1
tar czf $OUT/r.tgz -C $OUT r && rm -rf $R
