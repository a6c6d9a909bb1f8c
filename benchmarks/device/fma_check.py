"""Inputs and verdicts for benchmarks/device/fma_check.sh.

`fma_check.py gen DIR`: 65536 f32 triples (a, b, c) in DIR/{a,b,c}.bin, eight
classes of 8192 (random normals; ties decided by a 2^-30 addend; c = -RN(ab);
subnormal c; tiny products; results near the normal/subnormal boundary; large
products; random bits), the class of each in DIR/cls.txt, and a zeroed output
DIR/o.bin for crates/vgpu/tests/kernels/fma.ptx (4 forms per thread: fma.rn,
mad.rn, a contracted mul+sub, sub-mul).

`fma_check.py cmp DIR MODE...`: compares DIR/MODE/o.bin with the interpreter's
DIR/cpu/o.bin bit for bit (NaN as NaN) and prints, per MODE, how many threads
differ, per form and per class, with the first three of each class in hex.
"""
import collections
import sys

import numpy as np


def gen(w):
    rng = np.random.default_rng(7)
    n = 1 << 16
    k = n // 8

    def f(bits):
        return np.asarray(bits, np.uint32).view(np.float32)

    def rnd_normal(m, emin=-20, emax=20):
        mant = rng.integers(0, 1 << 23, m, dtype=np.uint64)
        e = rng.integers(emin + 127, emax + 128, m, dtype=np.uint64)
        s = rng.integers(0, 2, m, dtype=np.uint64)
        return f((s << 31) | (e << 23) | mant)

    cls, A, B, C = [], [], [], []

    def add(name, a, b, c):
        A.append(a.astype(np.float32))
        B.append(b.astype(np.float32))
        C.append(c.astype(np.float32))
        cls.extend([name] * len(a))

    def short(m, bits=12):
        v = rng.integers(1 << (bits - 1), 1 << bits, m).astype(np.float64)
        return (v / (1 << (bits - 1))).astype(np.float32)

    with np.errstate(all="ignore"):
        add("normal", rnd_normal(k), rnd_normal(k), rnd_normal(k))
        a, b = short(k), short(k)
        p = a.astype(np.float64) * b.astype(np.float64)
        add("tie", a, b, (p * 2.0**-30 * rng.choice([-1, 1], k)).astype(np.float32))
        a, b = rnd_normal(k), rnd_normal(k)
        add("cancel", a, b, -(a * b))
        sub = rng.integers(1, 1 << 23, k, dtype=np.uint64) | (rng.integers(0, 2, k, dtype=np.uint64) << 31)
        add("sub_c", rnd_normal(k, -70, -60), rnd_normal(k, -70, -60), f(sub))
        add("tiny", rnd_normal(k, -70, -60), rnd_normal(k, -70, -60), rnd_normal(k, -126, -120))
        a, b = rnd_normal(k, -64, -62), rnd_normal(k, -64, -62)
        add("edge", a, b, (-(a.astype(np.float64) * b) * (1 - 2.0**-20)).astype(np.float32))
        add("big", rnd_normal(k, 60, 70), rnd_normal(k, 60, 70), rnd_normal(k, 120, 127))
        bits = [f(rng.integers(0, 1 << 32, k, dtype=np.uint64)) for _ in range(3)]
        add("bits", *bits)
    for name, v in (("a", A), ("b", B), ("c", C)):
        np.concatenate(v).tofile(f"{w}/{name}.bin")
    np.zeros(4 * n, np.float32).tofile(f"{w}/o.bin")
    with open(f"{w}/cls.txt", "w") as fh:
        fh.write("\n".join(cls))


def cmp(w, modes):
    with open(f"{w}/cls.txt") as fh:
        cls = fh.read().split("\n")
    a, b, c = (np.fromfile(f"{w}/{x}.bin", np.uint32) for x in "abc")
    ref = np.fromfile(f"{w}/cpu/o.bin", np.uint32).reshape(-1, 4)

    def isnan(x):
        return ((x & 0x7F800000) == 0x7F800000) & ((x & 0x7FFFFF) != 0)

    for mode in modes:
        g = np.fromfile(f"{w}/{mode}/o.bin", np.uint32).reshape(-1, 4)
        bad = (g != ref) & ~(isnan(g) & isnan(ref))
        rows = np.nonzero(bad.any(axis=1))[0]
        print(f"== {mode}: {len(rows)} of {len(g)} threads differ; per form {bad.sum(axis=0).tolist()}")
        print("   by class:", dict(collections.Counter(cls[i] for i in rows)))
        shown = collections.Counter()
        for i in rows:
            if shown[cls[i]] >= 3:
                continue
            shown[cls[i]] += 1
            j = int(np.argmax(bad[i]))
            print(f"   {cls[i]} form{j} a={a[i]:08x} b={b[i]:08x} c={c[i]:08x} got={g[i, j]:08x} want={ref[i, j]:08x}")


if __name__ == "__main__":
    if sys.argv[1] == "gen":
        gen(sys.argv[2])
    else:
        cmp(sys.argv[2], sys.argv[3:])
