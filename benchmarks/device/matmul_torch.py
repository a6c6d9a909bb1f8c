#!/usr/bin/env python3
"""torch (cuBLAS) references for `vgpu bench matmul` on the H200.

* --roundtrip N...: host arrays in and out, as `vgpu bench matmul` measures a
  cached call: numpy A, B -> GPU, C = A @ B, C -> numpy; median of the calls made
  within --seconds (after 20 warm-up calls).
* --device N...: device-side throughput with TF32 off (full f32): A, B resident on
  the GPU, --iters matmuls timed two ways: CUDA events around the loop, and the
  wall time of the loop followed by torch.cuda.synchronize() (the method VGPU's
  --device-side uses: one submission of many dispatches, then wait).

Prints one JSON object.
"""
import argparse
import json
import statistics
import time

import numpy as np
import torch


def roundtrip(n, seconds):
    rng = np.random.default_rng(1)
    a = rng.uniform(-1, 1, (n, n)).astype(np.float32)
    b = rng.uniform(-1, 1, (n, n)).astype(np.float32)
    dev = torch.device("cuda")

    def call():
        ad = torch.from_numpy(a).to(dev)
        bd = torch.from_numpy(b).to(dev)
        return (ad @ bd).cpu().numpy()

    t = time.perf_counter()
    call()
    first = time.perf_counter() - t
    for _ in range(20):
        call()
    times = []
    start = time.perf_counter()
    while len(times) < 20 or (time.perf_counter() - start < seconds and len(times) < 100000):
        t = time.perf_counter()
        call()
        times.append(time.perf_counter() - t)
    per_call = statistics.median(times)
    return {
        "n": n,
        "kind": "roundtrip",
        "first_call_s": first,
        "per_call_s": per_call,
        "gflops": 2.0 * n**3 / per_call / 1e9,
        "calls": len(times),
    }


def device(n, iters):
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    g = torch.Generator(device="cuda").manual_seed(1)
    a = torch.rand((n, n), device="cuda", generator=g, dtype=torch.float32) * 2 - 1
    b = torch.rand((n, n), device="cuda", generator=g, dtype=torch.float32) * 2 - 1
    c = torch.empty((n, n), device="cuda", dtype=torch.float32)
    for _ in range(5):
        torch.matmul(a, b, out=c)
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(iters):
        torch.matmul(a, b, out=c)
    end.record()
    torch.cuda.synchronize()
    event_s = start.elapsed_time(end) / 1e3 / iters
    t = time.perf_counter()
    for _ in range(iters):
        torch.matmul(a, b, out=c)
    torch.cuda.synchronize()
    wall_s = (time.perf_counter() - t) / iters
    flop = 2.0 * n**3
    return {
        "n": n,
        "kind": "device_tf32_off",
        "iters": iters,
        "event_s": event_s,
        "event_tflops": flop / event_s / 1e12,
        "wall_s": wall_s,
        "wall_tflops": flop / wall_s / 1e12,
    }


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--roundtrip", type=int, nargs="*", default=[16, 64])
    p.add_argument("--device", type=int, nargs="*", default=[4096])
    p.add_argument("--seconds", type=float, default=2.0)
    p.add_argument("--iters", type=int, default=20)
    args = p.parse_args()
    out = {
        "torch": torch.__version__,
        "gpu": torch.cuda.get_device_name(0),
        "roundtrip": [roundtrip(n, args.seconds) for n in args.roundtrip],
        "device": [device(n, args.iters) for n in args.device],
    }
    print(json.dumps(out))


if __name__ == "__main__":
    main()
