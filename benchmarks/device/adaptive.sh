#!/usr/bin/env bash
# Adaptive Tsit5 Lorenz ensembles on the H200, side by side in one run (issue 13):
# the hand-written CUDA kernel (benchmarks/adaptive/tsit5_lorenz.cu, CuPy), diffrax
# (Tsit5 + PIDController under jax.vmap), torchdiffeq for context, and VGPU's WGSL
# from examples/lorenz.field / lorenz_f64.field
#   vgpu ensemble … --method tsit5 --rtol R --atol R --dt0 1e-3 --controller i|pi --backend gpu
# at N = 2^20 and 2^23, (a) f32 1e-6 and (c) f64 1e-8, both controllers (I: the
# anchors' headline, PI: their variant; VGPU's i/pi are the same formulas).
# Kernel times (CUDA events / --kernel-time), step counts, errors against the
# tight f64 reference, VGPU's end to end and whole command apart.
#
# From the repository root, with target/release/vgpu built (cargo build --release -p vgpu):
#   bash benchmarks/device/adaptive.sh
# Through the device tool carry [".gl", "target/release/vgpu"] as lorenz.sh does.
# Results: $OUT/adaptive.jsonl (one JSON object per line), $OUT/adaptive.log,
# $OUT/adaptive_work_precision.png.
set -euo pipefail
source benchmarks/device/env.sh
VGPU=${VGPU:-./target/release/vgpu}
# Hand CUDA kernel, references, diffrax, torchdiffeq (writes $OUT/adaptive.jsonl afresh).
python3 benchmarks/adaptive/bench_adaptive.py 2>> "$OUT/adaptive.log" | tail -n 3
# VGPU beside them (appends; reads the references bench_adaptive.py saved).
python3 benchmarks/adaptive/vgpu_rows.py "$VGPU" 2>> "$OUT/adaptive.log"
python3 benchmarks/adaptive/plot.py "$OUT/adaptive.jsonl" "$OUT/adaptive_work_precision.png" \
  >> "$OUT/adaptive.log" 2>&1 || echo "plot failed (see adaptive.log)"
