#!/usr/bin/env bash
# The f32 .ftz/.sat operations (crates/vgpu/tests/kernels/f32mods.ptx) on the
# GPU beside the interpreter, bit for bit, on 65536 threads of random and
# edge inputs (with the device's own fma path: on NVIDIA the guarded one).
# Run through the device tool from the repository root, carrying
# [".gl", "target/release/vgpu"]. Results: $OUT/ftz_check.txt.
set -euo pipefail
source benchmarks/device/env.sh
VGPU=${VGPU:-./target/release/vgpu}
W=$(mktemp -d)
python3 - "$W/x.bin" <<'PY'
import random, struct, sys
random.seed(7)
edges = [0, 0x80000000, 0x7f800000, 0xff800000, 0x7fc00000, 1, 0x80000001, 0x7fffff,
         0x807fffff, 0x800000, 0x80800000, 0x3f800000, 0x3f800001, 0x1f800000, 0x20000000]
def pick():
    k = random.randrange(4)
    if k == 0: return random.choice(edges)
    if k == 1: return (0x1f800000 + random.randrange(1 << 24)) ^ (random.getrandbits(1) << 31)
    return random.getrandbits(32)
with open(sys.argv[1], "wb") as f:
    for _ in range(65536 * 3):
        f.write(struct.pack("<I", pick()))
PY
K=crates/vgpu/tests/kernels/f32mods.ptx
for b in cpu gpu; do
  mkdir -p "$W/$b"
  "$VGPU" ptx run "$K" --entry f32mods --grid 512,1,1 --block 128,1,1 --backend $b \
    --arg "$W/x.bin" --arg "zeros:u8:$((65536 * 124)):$W/$b/o.bin" --out-dir "$W/$b" > "$W/$b.log" 2>&1 || true
done
python3 - "$W/cpu/o.bin" "$W/gpu/o.bin" <<'PY' | tee "$OUT/ftz_check.txt"
import sys
a, b = open(sys.argv[1], "rb").read(), open(sys.argv[2], "rb").read()
n = len(a) // 4
bad = [i for i in range(n) if a[4*i:4*i+4] != b[4*i:4*i+4]]
print(f"f32mods: {len(bad)} of {n} words differ (cpu {len(a)} bytes, gpu {len(b)} bytes)")
for i in bad[:10]:
    print(f"  word {i % 31} of thread {i // 31}: cpu {a[4*i:4*i+4][::-1].hex()} gpu {b[4*i:4*i+4][::-1].hex()}")
PY
cat "$W/gpu.log" >> "$OUT/ftz_check.txt"
