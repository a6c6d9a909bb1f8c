#!/usr/bin/env bash
# Session 18 call 3: speculative fma regions on NVIDIA: fma check, corpus, ptx_gpu.sh.
set -uo pipefail
source benchmarks/device/env.sh
R=$OUT/r; mkdir -p $R
date -u > $R/when.txt; nvidia-smi -L > $R/gpu.txt 2>&1
( OUT=$R/auto timeout 200 bash benchmarks/device/ptx_gpu.sh ) > $R/auto.log 2>&1
W2=$(mktemp -d); python3 benchmarks/device/fma_check.py gen "$W2"
for m in cpu native; do
  mkdir -p "$W2/$m"; be=gpu; [ "$m" = cpu ] && be=cpu
  timeout 60 ./target/release/vgpu ptx run crates/vgpu/tests/kernels/fma.ptx --entry fma --grid 512 --block 128 --backend "$be" \
    --arg "$W2/a.bin" --arg "$W2/b.bin" --arg "$W2/c.bin" --arg "$W2/o.bin" --arg u32:65536 --out-dir "$W2/$m" > "$R/fma_run_$m.txt" 2>&1
done
python3 benchmarks/device/fma_check.py cmp "$W2" native > "$R/fma_cmp.txt" 2>&1
for a in "" --unchecked; do echo "== ptx-cases $a"; timeout 90 ./target/release/vgpu ptx run ptx-cases --backend gpu $a 2>&1 | grep -E "FAIL|MISMATCH|cases:|rror|subnormals|fma_f32" | sort | uniq -c; done > $R/corpus.txt 2>&1
for c in cuda-samples cub; do for a in "" --unchecked; do echo "== $c $a"; timeout 120 ./target/release/vgpu ptx run ptx-cases/corpus/$c --backend gpu $a 2>&1 | grep -E "FAIL|cases:|rror" | sort | uniq -c; done; done >> $R/corpus.txt 2>&1
mkdir -p $R/dump; VGPU_DUMP_WGSL=$R/dump timeout 60 ./target/release/vgpu ptx run ptx-cases/lorenz_rk4 --backend gpu --unchecked > $R/dump.txt 2>&1
tar czf $OUT/r.tgz -C $OUT r && rm -rf $R
