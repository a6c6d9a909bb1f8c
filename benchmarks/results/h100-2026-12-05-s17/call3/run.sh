#!/usr/bin/env bash
# Session 17 device call 3: ptx_gpu.sh after 13d07b5 (checked = no race check); what the FTZ fma costs
# (fma_spec replaced by the bare fma in the dumped WGSL: inexact on subnormals, for the figure only).
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
    d=$W/d$k$c; b=$W/b$k$c; mkdir -p $d $b
    VGPU_PTX_EXACT_FMA=native VGPU_DUMP_WGSL=$d timeout 120 ./target/release/vgpu $A $c > $d/spec.txt 2>&1
    { sed 's/fma_spec(/fma_bare(/g' $d/$e.wgsl; echo 'fn fma_bare(a: u32, b: u32, c: u32) -> u32 { return bitcast<u32>(fma(f(a), f(b), f(c))); }'; } > $b/$e.wgsl
    VGPU_PTX_EXACT_FMA=native VGPU_LOAD_WGSL=$b timeout 120 ./target/release/vgpu $A $c > $b/bare.txt 2>&1
    echo "== $e ${c:-checked} spec(native, no re-run counted): $(grep -E 'kernel_seconds|rror' $d/spec.txt | tr '\n' ' ') bare: $(grep -E 'kernel_seconds|rror' $b/bare.txt | tr '\n' ' ')"
  done
done > $R/fma_cost.txt 2>&1
tar czf $OUT/r.tgz -C $OUT r && rm -rf $R
