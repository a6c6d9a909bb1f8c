#!/usr/bin/env bash
# Re-measures the CPU figures of docs/BENCHMARKS.md in one run on this machine
# (issue 11: behaviour unchanged, the figures within noise), each command's
# ratios against its reference measured in the same command:
#   - `vgpu bench lorenz` (field API ÷ hand-written loops, fixed-step RK4),
#   - `benchmarks/lorenz_numpy.py` (the numpy reference of the same problem),
#   - `benchmarks/matmul_numpy.py` (VGPU's CPU matmul against numpy),
#   - `vgpu bench ptx` (the PTX interpreter's throughput beside the same field),
#   - `vgpu bench adaptive` (Tsit5: `.field` and closure ÷ hand-written loop),
#   - `benchmarks/device/cpu_field.sh` (whole `vgpu ensemble` commands against
#     the hand-written loop, processes alternating).
# Usage: OUT=DIR bash benchmarks/cpu/remeasure.sh   (after cargo build --release -p vgpu)
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/remeasure}
mkdir -p "$OUT"
V=./target/release/vgpu
{ date -u; uname -m; nproc; cat /proc/loadavg; git rev-parse --short HEAD; } > "$OUT/machine.txt"
run() { # name, command...
  local name=$1; shift
  echo "== $name $(date -u +%T)" >> "$OUT/log.txt"
  "$@" > "$OUT/$name.out" 2>> "$OUT/log.txt" || echo "FAILED $name" >> "$OUT/log.txt"
}
run lorenz "$V" bench lorenz --n 262144 --json
run lorenz_numpy python3 benchmarks/lorenz_numpy.py --n 262144
run matmul python3 benchmarks/matmul_numpy.py --n 16 256 1024 --vgpu "$V" --rounds 3 --seconds 1 --json
run ptx "$V" bench ptx --json
run adaptive "$V" bench adaptive --n 65536 --repeats 3 --json
run cpu_field env VGPU_NO_LOADERS=1 OUT="$OUT/ensemble" PAIRS="${PAIRS:-5}" bash benchmarks/device/cpu_field.sh
cat /proc/loadavg >> "$OUT/machine.txt"
