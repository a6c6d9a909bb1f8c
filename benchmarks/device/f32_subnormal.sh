#!/usr/bin/env bash
# Whether the device keeps f32 subnormals in plain arithmetic: add.f32,
# mul.f32, sub.f32 and setp.lt.f32 (PTX without .ftz keeps them; the
# interpreter does) on 4096 pairs of a subnormal and a subnormal or a power of
# two, run by the interpreter and by the GPU path, compared word for word.
# NVIDIA's Vulkan driver flushes subnormals in f32 <-> f64 conversions (session
# 15's fma check); this says whether its f32 arithmetic does too.
# Run from the repository root, carrying [".gl", "target/release/vgpu"].
# Results: $OUT/f32_subnormal.txt (per operation: how many words differ, the
# first few as (a, b, interpreter, GPU) bits).
set -euo pipefail
source benchmarks/device/env.sh
V=./target/release/vgpu
W=$(mktemp -d)
python3 - "$W" <<'PY'
import sys, numpy as np
w = sys.argv[1]
rng = np.random.default_rng(3)
n = 4096
def sub(k):
    return rng.integers(1, 1 << 23, k, dtype=np.uint32) | (rng.integers(0, 2, k, dtype=np.uint32) << 31)
a = sub(n)
p2 = (np.float32(2.0) ** rng.integers(-20, 40, n)).astype(np.float32).view(np.uint32)
b = np.where(np.arange(n) % 2 == 0, sub(n), p2)
a.astype(np.uint32).tofile(f"{w}/a.bin"); b.astype(np.uint32).tofile(f"{w}/b.bin")
PY
for be in cpu gpu; do
  mkdir -p "$W/$be"
  "$V" ptx run crates/vgpu/tests/kernels/f32_subnormal.ptx --entry f32_subnormal --grid 16 --block 256 --backend $be \
    --arg "$W/a.bin" --arg "$W/b.bin" --arg "zeros:u32:16384:$W/$be/o.bin" --arg u32:4096 \
    --out-dir "$W/$be" >> "$OUT/f32_subnormal.txt" 2>&1
done
python3 - "$W" >> "$OUT/f32_subnormal.txt" <<'PY'
import sys, numpy as np
w = sys.argv[1]
c = np.fromfile(f"{w}/cpu/o.bin", np.uint32).reshape(-1, 4)
g = np.fromfile(f"{w}/gpu/o.bin", np.uint32).reshape(-1, 4)
a = np.fromfile(f"{w}/a.bin", np.uint32); b = np.fromfile(f"{w}/b.bin", np.uint32)
for j, name in enumerate(["add", "mul", "sub", "setp.lt"]):
    bad = np.nonzero(c[:, j] != g[:, j])[0]
    print(name, "differ:", len(bad), "of", len(c),
          [(hex(a[i]), hex(b[i]), hex(c[i, j]), hex(g[i, j])) for i in bad[:4]])
PY
