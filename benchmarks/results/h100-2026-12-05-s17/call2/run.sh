#!/usr/bin/env bash
# Session 17 device call 2: checked kernels with barriers in structured form (soft faults);
# what each check costs (WGSL variants made here from the dump); VK_KHR_shader_fma in the driver.
set -uo pipefail
source benchmarks/device/env.sh
R=$OUT/r; mkdir -p $R
date -u > $R/when.txt; nvidia-smi > $R/smi.txt 2>&1
cat "$VK_DRIVER_FILES" > $R/icd.json 2>&1
for f in $(find / -xdev \( -name 'libGLX_nvidia.so*' -o -name 'libnvidia-glcore.so*' -o -name 'libnvidia-gpucomp.so*' -o -name 'libnvidia-glvkspirv.so*' \) 2>/dev/null); do
  echo "== $f"; grep -a -o 'VK_KHR_shader_[a-z0-9_]*\|SPV_KHR_[a-z0-9_]*' "$f" | sort -u | tr '\n' ' '; echo
done > $R/ext.txt 2>&1
K=crates/vgpu/tests/kernels/checks.ptx
for e in soft_oob soft_spin soft_bar_spin soft_bar_skip; do
  g=1; [ $e = soft_oob ] && g=2
  echo "== $e: $(timeout 60 ./target/release/vgpu ptx run $K --entry $e --grid $g --block 64 --backend gpu --watchdog 20000 --arg zeros:u32:1024:/tmp/x.bin 2>&1 | tr '\n' ' ')"
done > $R/soft.txt 2>&1
W=$(mktemp -d)
python3 - "$W" <<'PY'
import sys, numpy as np
w = sys.argv[1]
rng = np.random.default_rng(1)
m = 4096
rng.standard_normal((m, m), dtype=np.float32).tofile(f"{w}/A.bin")
rng.standard_normal((m, m), dtype=np.float32).tofile(f"{w}/B.bin")
np.zeros(m * m, np.float32).tofile(f"{w}/C.bin")
PY
mkdir -p $W/o $W/d $W/v1 $W/v2 $W/v3
A="ptx run ptx-cases/kernels.ptx --entry matmul_tiled --grid 256,256,1 --block 16,16,1 --arg $W/A.bin --arg $W/B.bin --arg $W/C.bin --arg s32:4096 --arg s32:4096 --arg s32:4096 --backend gpu --kernel-time 3 --out-dir $W/o"
VGPU_DUMP_WGSL=$W/d timeout 120 ./target/release/vgpu $A > $R/mm_checked.txt 2>&1
f=$W/d/matmul_tiled.wgsl; cp $f $R/mm_checked.wgsl
sed -E 's/if \(rc\([^)]*\)\) \{  \}//' $f > $W/v1/matmul_tiled.wgsl
sed -E 's/if \(rc\([^)]*\)\) \{  \}//; s/sh_rd\([^)]*\);//; s/sh_wr\([^)]*\);//' $f > $W/v2/matmul_tiled.wgsl
sed -E 's/if \(rc\([^)]*\)\) \{  \}//; s/sh_rd\([^)]*\);//; s/sh_wr\([^)]*\);//; s/saddr\((w64\([^)]*\)|add64\(w64\([^)]*\), vec2<u32>\([^)]*\)\)), 4u, 4u, [0-9]+u, SHARED_BYTES, RSMEM_BEGIN, RSMEM_END\)/(\1).x/' $f > $W/v3/matmul_tiled.wgsl
for v in v1 v2 v3; do echo "== $v $(VGPU_LOAD_WGSL=$W/$v timeout 120 ./target/release/vgpu $A 2>&1 | grep -E 'kernel_seconds|rror' | tr '\n' ' ')"; done > $R/mm_variants.txt 2>&1
timeout 60 ./target/release/vgpu $A --unchecked > $R/mm_unchecked.txt 2>&1
for a in "" --unchecked; do echo "== ptx-cases $a"; timeout 90 ./target/release/vgpu ptx run ptx-cases --backend gpu $a 2>&1 | grep -E "FAIL|MISMATCH|cases:|rror|subnormals|fma_f32" | sort | uniq -c; done > $R/corpus.txt 2>&1
( OUT=$R/auto timeout 240 bash benchmarks/device/ptx_gpu.sh ) > $R/auto.log 2>&1
tar czf $OUT/r.tgz -C $OUT r && rm -rf $R
