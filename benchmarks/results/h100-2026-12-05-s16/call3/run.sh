#!/usr/bin/env bash
# Session 16 device call 3: branch-free speculative fma; fma check; lean.
set -uo pipefail
source benchmarks/device/env.sh
R=$OUT/r; mkdir -p $R
date -u > $R/when.txt; nvidia-smi -L > $R/gpu.txt 2>&1
( PTX_GPU_SKIP="matmul_tiled:on" OUT=$R/auto timeout 120 bash benchmarks/device/ptx_gpu.sh ) > $R/auto.log 2>&1
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
for d in bench-hack/v16/l_*/; do
  n=$(basename $d); e=lorenz_rk4; [[ $n == m_* ]] && e=matmul_tiled
  if [ $e = lorenz_rk4 ]; then a="--grid 32768,1,1 --block 256,1,1 --arg $W/state.bin --arg $W/rho.bin --arg f32:0.001 --arg s32:1000 --arg s32:8388608";
  else a="--grid 256,256,1 --block 16,16,1 --arg $W/A.bin --arg $W/B.bin --arg $W/C.bin --arg s32:4096 --arg s32:4096 --arg s32:4096"; fi
  echo "== $n $(VGPU_PTX_EXACT_FMA=native VGPU_LOAD_WGSL=$d timeout 60 ./target/release/vgpu ptx run ptx-cases/kernels.ptx --entry $e --backend gpu --unchecked $a --out-dir $W/o --kernel-time 3 2>&1 | grep -E 'kernel_seconds|rror' | tr '\n' ' ')" >> $R/variants.txt
done
python3 benchmarks/device/fma_check.py gen "$W"
for m in cpu emulate native; do
  mkdir -p "$W/$m"; be=gpu; [ "$m" = cpu ] && be=cpu
  VGPU_PTX_EXACT_FMA=$m timeout 60 ./target/release/vgpu ptx run crates/vgpu/tests/kernels/fma.ptx --entry fma --grid 512 --block 128 --backend "$be" \
    --arg "$W/a.bin" --arg "$W/b.bin" --arg "$W/c.bin" --arg "$W/o.bin" --arg u32:65536 --out-dir "$W/$m" > "$R/fma_run_$m.txt" 2>&1
done
python3 benchmarks/device/fma_check.py cmp "$W" emulate native > "$R/fma_cmp.txt" 2>&1
for a in "" --unchecked; do echo "== ptx-cases $a"; timeout 60 ./target/release/vgpu ptx run ptx-cases --backend gpu $a 2>&1 | grep -E "FAIL|MISMATCH|cases:|rror|subnormals|fma_f32" | sort | uniq -c; done > $R/corpus.txt 2>&1
tar czf $OUT/r.tgz -C $OUT r && rm -rf $R
