#!/usr/bin/env python3
"""The table of spec_variants.sh: each variant's kernel time and its ratio to
CUDA's (ptx_gpu.sh's ptx_gpu.jsonl in the same folder, where there is one).
Usage: spec_variants_report.py OUT"""
import json
import os
import sys

out = sys.argv[1]
pg = os.path.join(out, "ptx_gpu.jsonl")
rows = [json.loads(l) for l in open(pg) if l.strip()] if os.path.exists(pg) else []
cuda = {r["case"]: r["kernel_seconds"] for r in rows if r["impl"] == "cuda-native"}
for entry, seconds in sorted(cuda.items()):
    print(f"{entry:14} cuda-native  {seconds * 1e3:9.3f} ms")
for line in open(os.path.join(out, "variants.jsonl")):
    r = json.loads(line)
    ks, c = r["kernel_seconds"], cuda.get(r["entry"])
    ms = f"{ks * 1e3:9.3f} ms" if ks else "        -   "
    ratio = f"{ks / c:6.2f}x" if ks and c else ""
    print(f"{r['entry']:14} {r['mode']:10} {r['variant']:12} {ms} {ratio:8} {r['md5']}")
