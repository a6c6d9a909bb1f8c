#!/usr/bin/env bash
# issue 16 item 1 on this machine: whole commands, .field vs hand loop, farm-bench alternating.
set -u
# from the repository root; V: a release build (cargo build --release -p vgpu)
V=$PWD/target/release/vgpu
W=$(mktemp -d)
for cfg in "262144 2 f32" "262144 1 f32" "1048576 2 f32" "1048576 1 f32" "262144 2 f64" "262144 1 f64" "1048576 2 f64" "1048576 1 f64"; do
  set -- $cfg; N=$1; T=$2; P=$3
  F=examples/lorenz.field; [ $P = f64 ] && F=examples/lorenz_f64.field
  echo "== N=$N threads=$T $P  load: $(cut -d' ' -f1-3 /proc/loadavg)"
  farm-bench -n 5 --timeout 300 \
    --vs "$V bench lorenz --only hand --precision $P --n $N --threads $T --out $W/h.npy" \
    -- $V ensemble $F --n $N --t 0:1 --dt 0.001 --method rk4 --param rho=linspace:0:21 --backend cpu --threads $T --out $W/f.npy --progress never 2>&1 | tail -15
  cmp $W/f.npy $W/h.npy && echo "same bytes"
done
