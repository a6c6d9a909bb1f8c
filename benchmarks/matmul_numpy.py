#!/usr/bin/env python3
"""Square f32 matmul in numpy (OpenBLAS): the CPU reference of `vgpu bench matmul`.

For each N, times `np.matmul(a, b, out=c)` on float32 N x N arrays (host arrays in
and out, the output preallocated, as `VgpuCache::matmul_into` does): the first call,
then the median of the calls made within --seconds, and GFLOP/s = 2 N^3 / median.

With --vgpu PATH it also runs `PATH bench matmul --n N --backend cpu --json` for
each N, alternating numpy and VGPU --rounds times (so both see the same machine
load), and prints the ratio VGPU GFLOP/s / numpy GFLOP/s per N from the medians
of the rounds.

Run it with OpenBLAS's tuning variables unset, in that command only:
    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE \\
        python3 benchmarks/matmul_numpy.py --n 16 256 1024 --vgpu target/release/vgpu
"""
import argparse
import json
import os
import statistics
import subprocess
import time

import numpy as np


def bench_numpy(n, seconds):
    rng = np.random.default_rng(1)
    a = rng.uniform(-1, 1, (n, n)).astype(np.float32)
    b = rng.uniform(-1, 1, (n, n)).astype(np.float32)
    c = np.empty((n, n), dtype=np.float32)
    t = time.perf_counter()
    np.matmul(a, b, out=c)
    first = time.perf_counter() - t
    times = []
    start = time.perf_counter()
    while len(times) < 5 or (time.perf_counter() - start < seconds and len(times) < 100000):
        t = time.perf_counter()
        np.matmul(a, b, out=c)
        times.append(time.perf_counter() - t)
    per_call = statistics.median(times)
    return {
        "n": n,
        "backend": "numpy",
        "first_call_s": first,
        "per_call_s": per_call,
        "gflops": 2.0 * n**3 / per_call / 1e9,
        "calls": len(times),
    }


def bench_vgpu(path, n, seconds, extra):
    out = subprocess.run(
        [path, "bench", "matmul", "--n", str(n), "--backend", "cpu", "--json", "--seconds", str(seconds)] + extra,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n", type=int, nargs="+", default=[16, 256, 1024])
    p.add_argument("--seconds", type=float, default=1.0)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--vgpu", help="path of the vgpu binary, to compare in the same run")
    p.add_argument("--vgpu-args", default="", help="extra arguments for vgpu bench matmul")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    args = p.parse_args()
    env_note = {k: os.environ.get(k) for k in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "OPENBLAS_NUM_THREADS")}
    results = []
    for n in args.n:
        rounds = []
        for _ in range(args.rounds if args.vgpu else 1):
            r = {"numpy": bench_numpy(n, args.seconds)}
            if args.vgpu:
                r["vgpu"] = bench_vgpu(args.vgpu, n, args.seconds, args.vgpu_args.split())
            rounds.append(r)
        row = {"n": n}
        for who in rounds[0]:
            row[who] = {
                "per_call_s": statistics.median(r[who]["per_call_s"] for r in rounds),
                "gflops": statistics.median(r[who]["gflops"] for r in rounds),
                "first_call_s": rounds[0][who]["first_call_s"],
            }
        if args.vgpu:
            row["ratio_gflops_vgpu_over_numpy"] = row["vgpu"]["gflops"] / row["numpy"]["gflops"]
        results.append(row)
        if not args.json:
            line = f"N={n:5d}  numpy {row['numpy']['gflops']:8.2f} GFLOP/s ({row['numpy']['per_call_s'] * 1e6:10.2f} us/call)"
            if args.vgpu:
                line += (
                    f"  vgpu-cpu {row['vgpu']['gflops']:8.2f} GFLOP/s ({row['vgpu']['per_call_s'] * 1e6:10.2f} us/call)"
                    f"  ratio {row['ratio_gflops_vgpu_over_numpy']:.3f}"
                )
            print(line, flush=True)
    if args.json:
        print(json.dumps({"numpy_version": np.__version__, "env": env_note, "results": results}))


if __name__ == "__main__":
    main()
