#!/usr/bin/env python3
"""Inputs of the PTX-on-the-GPU benchmarks (ptx_gpu.sh, spec_variants.sh), as raw
little-endian files in DIR: lorenz_rk4's rho.bin and state.bin (N = LN, default
2^23), matmul_tiled's A.bin, B.bin, C.bin (MM x MM, default 4096),
reduce_sum_atomic's x.bin and out.bin (2^24). Usage: ptx_inputs.py DIR"""
import os
import sys

import numpy as np

w = sys.argv[1]
rng = np.random.default_rng(1)
n = int(os.environ.get("LN", 1 << 23))
np.linspace(0, 21, n).astype(np.float32).tofile(f"{w}/rho.bin")
np.tile(np.array([1, 0, 0], np.float32), n).tofile(f"{w}/state.bin")
m = int(os.environ.get("MM", 4096))
rng.standard_normal((m, m), dtype=np.float32).tofile(f"{w}/A.bin")
rng.standard_normal((m, m), dtype=np.float32).tofile(f"{w}/B.bin")
np.zeros(m * m, np.float32).tofile(f"{w}/C.bin")
r = 1 << 24
rng.standard_normal(r, dtype=np.float32).tofile(f"{w}/x.bin")
np.zeros(1, np.float32).tofile(f"{w}/out.bin")
