#!/usr/bin/env bash
# Which f32 fma results differ from the interpreter on this GPU, per form and
# per input class, for the exact f64 emulation (`VGPU_PTX_EXACT_FMA=emulate`)
# and the device's own fma (`native`; guarded where the device has SHADER_F64),
# over 65536 adversarial triples (benchmarks/device/fma_check.py); then
# `benchmarks/device/ptx_gpu.sh` with the device's fma forced, for the speed
# the probe's verdict stands between. The interpreter (--backend cpu) is the
# reference. Run from the repository root, carrying [".gl", "target/release/vgpu"].
# Results: $OUT/fma_cmp.txt, $OUT/native/ptx_gpu.*.
set -euo pipefail
source benchmarks/device/env.sh
V=./target/release/vgpu
W=$(mktemp -d)
python3 benchmarks/device/fma_check.py gen "$W"
K=crates/vgpu/tests/kernels/fma.ptx
for m in cpu emulate native; do
  mkdir -p "$W/$m"
  be=gpu; [ "$m" = cpu ] && be=cpu
  VGPU_PTX_EXACT_FMA=$m "$V" ptx run "$K" --entry fma --grid 512 --block 128 --backend "$be" \
    --arg "$W/a.bin" --arg "$W/b.bin" --arg "$W/c.bin" --arg "$W/o.bin" --arg u32:65536 \
    --out-dir "$W/$m" > "$OUT/fma_run_$m.txt" 2>&1
done
python3 benchmarks/device/fma_check.py cmp "$W" emulate native > "$OUT/fma_cmp.txt"
mkdir -p "$OUT/native"
VGPU_PTX_EXACT_FMA=native OUT="$OUT/native" bash benchmarks/device/ptx_gpu.sh
