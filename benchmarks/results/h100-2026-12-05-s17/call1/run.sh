#!/usr/bin/env bash
# Session 17 device call 1: NoContraction build (ffce14b): corpus, bare fma per class, ptx_gpu.sh.
set -uo pipefail
source benchmarks/device/env.sh
R=$OUT/r; mkdir -p $R
date -u > $R/when.txt; nvidia-smi -L > $R/gpu.txt 2>&1
mkdir -p $R/dump
for a in "" --unchecked; do echo "== ptx-cases $a"; VGPU_DUMP_WGSL=$R/dump timeout 90 ./target/release/vgpu ptx run ptx-cases --backend gpu $a 2>&1 | grep -E "FAIL|MISMATCH|cases:|rror|subnormals|fma_f32" | sort | uniq -c; done > $R/corpus.txt 2>&1
grep -l "fma_spec" $R/dump/* > $R/dump_spec.txt 2>&1; grep -c "= bitcast<u32>(fma(" $R/dump/* > $R/dump_bare.txt 2>&1
W=$(mktemp -d)
python3 benchmarks/device/fma_check.py gen "$W"
for m in cpu emulate native bare; do
  mkdir -p "$W/$m"; be=gpu; [ "$m" = cpu ] && be=cpu
  e=$m; L=""; [ $m = bare ] && { e=native; L=bench-hack/v17/fma_bare; }
  VGPU_LOAD_WGSL=$L VGPU_PTX_EXACT_FMA=$e timeout 60 ./target/release/vgpu ptx run crates/vgpu/tests/kernels/fma.ptx --entry fma --grid 512 --block 128 --backend "$be" \
    --arg "$W/a.bin" --arg "$W/b.bin" --arg "$W/c.bin" --arg "$W/o.bin" --arg u32:65536 --out-dir "$W/$m" > "$R/fma_run_$m.txt" 2>&1
done
python3 benchmarks/device/fma_check.py cmp "$W" emulate native bare > "$R/fma_cmp.txt" 2>&1
( PTX_GPU_SKIP="matmul_tiled:on" OUT=$R/auto timeout 150 bash benchmarks/device/ptx_gpu.sh ) > $R/auto.log 2>&1
tar czf $OUT/r.tgz -C $OUT r && rm -rf $R
