#!/usr/bin/env bash
# Session 17 device call 5 (was 4, rerun after the min fix): the float suspect test (fma_suspect compares floats); speculative (re-run)
# against inline (fma_native_f32: suspect lanes emulate in place) against bare (inexact; for the figure).
set -uo pipefail
source benchmarks/device/env.sh
R=$OUT/r; mkdir -p $R
date -u > $R/when.txt; nvidia-smi -L > $R/gpu.txt 2>&1
( OUT=$R/auto timeout 200 bash benchmarks/device/ptx_gpu.sh ) > $R/auto.log 2>&1
W=$(mktemp -d)
python3 - "$W" <<'PY'
import sys, numpy as np
w = sys.argv[1]
rng = np.random.default_rng(1)
n = 1 << 23
np.linspace(0, 21, n).astype(np.float32).tofile(f"{w}/rho.bin")
np.tile(np.array([1, 0, 0], np.float32), n).tofile(f"{w}/state.bin")
m = 4096
rng.standard_normal((m, m), dtype=np.float32).tofile(f"{w}/A.bin")
rng.standard_normal((m, m), dtype=np.float32).tofile(f"{w}/B.bin")
np.zeros(m * m, np.float32).tofile(f"{w}/C.bin")
PY
mkdir -p $W/o
LA="ptx run ptx-cases/kernels.ptx --entry lorenz_rk4 --grid 32768,1,1 --block 256,1,1 --arg $W/state.bin --arg $W/rho.bin --arg f32:0.001 --arg s32:1000 --arg s32:8388608 --backend gpu --kernel-time 3 --out-dir $W/o"
MA="ptx run ptx-cases/kernels.ptx --entry matmul_tiled --grid 256,256,1 --block 16,16,1 --arg $W/A.bin --arg $W/B.bin --arg $W/C.bin --arg s32:4096 --arg s32:4096 --arg s32:4096 --backend gpu --kernel-time 3 --out-dir $W/o"
for c in "" --unchecked; do
  for k in L M; do
    A=$LA; e=lorenz_rk4; [ $k = M ] && { A=$MA; e=matmul_tiled; }
    d=$W/d$k$c; i=$W/i$k$c; b=$W/b$k$c; mkdir -p $d $i $b
    VGPU_PTX_EXACT_FMA=native VGPU_DUMP_WGSL=$d timeout 120 ./target/release/vgpu $A $c > $d/run.txt 2>&1
    sed 's/= fma_spec(/= fma_native_f32(/g' $d/$e.wgsl > $i/$e.wgsl
    { sed 's/= fma_spec(/= fma_bare(/g' $d/$e.wgsl; echo 'fn fma_bare(a: u32, b: u32, c: u32) -> u32 { return bitcast<u32>(fma(f(a), f(b), f(c))); }'; } > $b/$e.wgsl
    VGPU_PTX_EXACT_FMA=native VGPU_LOAD_WGSL=$i timeout 120 ./target/release/vgpu $A $c > $i/run.txt 2>&1
    VGPU_PTX_EXACT_FMA=native VGPU_LOAD_WGSL=$b timeout 120 ./target/release/vgpu $A $c > $b/run.txt 2>&1
    f() { grep -E 'kernel_seconds|rror|fma_f32|MISMATCH' $1/run.txt | tr '\n' ' '; }
    echo "== $e ${c:-checked}"; echo "  spec: $(f $d)"; echo "  inline: $(f $i)"; echo "  bare: $(f $b)"
  done
done > $R/fma_forms.txt 2>&1
cp $W/dL/lorenz_rk4.wgsl $R/ 2>/dev/null
for a in "" --unchecked; do echo "== ptx-cases $a"; timeout 90 ./target/release/vgpu ptx run ptx-cases --backend gpu $a 2>&1 | grep -E "FAIL|MISMATCH|cases:|rror|subnormals|fma_f32" | sort | uniq -c; done > $R/corpus.txt 2>&1
W2=$(mktemp -d); python3 benchmarks/device/fma_check.py gen "$W2"
for m in cpu native; do
  mkdir -p "$W2/$m"; be=gpu; [ "$m" = cpu ] && be=cpu
  VGPU_PTX_EXACT_FMA=$m timeout 60 ./target/release/vgpu ptx run crates/vgpu/tests/kernels/fma.ptx --entry fma --grid 512 --block 128 --backend "$be" \
    --arg "$W2/a.bin" --arg "$W2/b.bin" --arg "$W2/c.bin" --arg "$W2/o.bin" --arg u32:65536 --out-dir "$W2/$m" > "$R/fma_run_$m.txt" 2>&1
done
mkdir -p $W2/dump $W2/inl $W2/inline
VGPU_DUMP_WGSL=$W2/dump VGPU_PTX_EXACT_FMA=native timeout 60 ./target/release/vgpu ptx run crates/vgpu/tests/kernels/fma.ptx --entry fma --grid 512 --block 128 --backend gpu \
    --arg "$W2/a.bin" --arg "$W2/b.bin" --arg "$W2/c.bin" --arg "$W2/o.bin" --arg u32:65536 --out-dir "$W2/dump" > /dev/null 2>&1
sed 's/= fma_spec(/= fma_native_f32(/g' $W2/dump/fma.wgsl > $W2/inl/fma.wgsl; grep -c fma_native_f32 $W2/inl/fma.wgsl > $R/inline_count.txt
VGPU_LOAD_WGSL=$W2/inl VGPU_PTX_EXACT_FMA=native timeout 60 ./target/release/vgpu ptx run crates/vgpu/tests/kernels/fma.ptx --entry fma --grid 512 --block 128 --backend gpu \
    --arg "$W2/a.bin" --arg "$W2/b.bin" --arg "$W2/c.bin" --arg "$W2/o.bin" --arg u32:65536 --out-dir "$W2/inline" > "$R/fma_run_inline.txt" 2>&1
python3 benchmarks/device/fma_check.py cmp "$W2" native inline > "$R/fma_cmp.txt" 2>&1
tar czf $OUT/r.tgz -C $OUT r && rm -rf $R
