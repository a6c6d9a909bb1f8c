#!/usr/bin/env bash
# Issue 16 item 1 and issue 13 on a many-core host (the H200 machine's CPU):
# the `.field` CPU path against the hand-written loops, whole processes
# alternating (PAIRS pairs, default 5; medians), plus the in-process tables of
# `vgpu bench lorenz` and `vgpu bench adaptive`. Results under $OUT.
# Usage: [PAIRS=9] bash benchmarks/device/cpu_field.sh [THREADS]   (default: all cores)
set -euo pipefail
cd "$(dirname "$0")/../.."
source benchmarks/device/env.sh
V=${VGPU:-target/release/vgpu}
T=${1:-$(nproc)}
export PAIRS=${PAIRS:-5}
pairs() { # label, command A (.field), command B (hand)
  python3 - "$@" <<'PY'
import os, subprocess, sys, time, statistics, json
label, a, b = sys.argv[1], sys.argv[2], sys.argv[3]
ta, tb = [], []
for _ in range(int(os.environ['PAIRS'])):
    for cmd, acc in ((a, ta), (b, tb)):
        t = time.perf_counter(); subprocess.run(cmd, shell=True, check=True, stdout=subprocess.DEVNULL); acc.append(time.perf_counter() - t)
ra = statistics.median(x / y for x, y in zip(tb, ta))
print(json.dumps({"case": label, "field_s": ta, "hand_s": tb, "median_hand_over_field": ra}))
PY
}
for n in 262144 1048576; do
  for p in f32 f64; do
    f=examples/lorenz.field; [ $p = f64 ] && f=examples/lorenz_f64.field
    pairs "lorenz rk4 $p N=$n threads=$T" \
      "$V ensemble $f --n $n --t 0:1 --dt 0.001 --method rk4 --param rho=linspace:0:21 --backend cpu --threads $T --out $OUT/f.npy --progress never" \
      "$V bench lorenz --only hand --precision $p --n $n --threads $T --out $OUT/h.npy" | tee -a "$OUT/cpu_field.jsonl"
    python3 -c "import numpy as np,sys; a=np.load('$OUT/f.npy'); b=np.load('$OUT/h.npy'); print('same bits:', a.tobytes()==b.tobytes())"
  done
  $V bench lorenz --n $n --threads $T --repeats 3 --json >> "$OUT/bench_lorenz_cpu.jsonl"
done
$V bench adaptive --n 1048576 --threads $T --repeats 3 --json | tee "$OUT/bench_adaptive.json"
