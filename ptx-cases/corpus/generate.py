#!/usr/bin/env python3
"""Rebuild VGPU's PTX corpus on a machine with nvcc and an NVIDIA GPU.

Compiles every ``<suite>/*.cu`` with ``nvcc -arch=sm_90 -O3 -ptx`` into ``<suite>/<module>.ptx``,
launches each case below from that very PTX through CuPy (``cp.RawModule(path=...)``),
and writes one case folder per launch (ptx-cases/README.md's format): ``case.json``,
inputs ``*.bin`` and the outputs the GPU produced, ``*.expect.bin``. Inputs come from
numpy with fixed seeds, so a rebuild gives the same inputs.

    python3 ptx-cases/corpus/generate.py --out /tmp/corpus   # writes /tmp/corpus/<suite>/...
    python3 ptx-cases/corpus/generate.py --out DIR --tar OUT.tar.gz

Known failures of VGPU (not of the GPU) are listed in KNOWN_FAILURES.json beside this
script; their reasons are copied into case.json as "known_failure" (the expected bytes are
still what the GPU computed).
"""
import argparse
import concurrent.futures as cf
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
NVCC_FLAGS = ["-arch=sm_90", "-O3", "-ptx"]
SAMPLES = "NVIDIA/cuda-samples @ c94ff366aed18c797b8a85dfaac7817b0228b420"
SAMPLES_LIC = "BSD-3-Clause (NVIDIA CORPORATION)"

DT = {np.float32: "f32", np.float64: "f64", np.int32: "s32", np.uint32: "u32", np.uint8: "u8",
      np.int64: "s64", np.uint64: "u64", np.float16: "f16"}
SCALAR = {"s32": np.int32, "u32": np.uint32, "f32": np.float32, "s64": np.int64, "u64": np.uint64,
          "f64": np.float64}


def dtname(a):
    return DT[a.dtype.type]


class In:
    """An input buffer the kernel reads."""

    def __init__(self, arr):
        self.arr = np.ascontiguousarray(arr)


class Out:
    """An output buffer: poisoned (NaN / all ones) unless init is given; its result is expected."""

    def __init__(self, dtype, n=None, init=None):
        if init is None:
            dt = np.dtype(dtype)
            init = np.full(n, np.nan, dt) if dt.kind == "f" else np.full(n, -1 if dt.kind == "i" else np.iinfo(dt).max, dt)
        self.arr = np.ascontiguousarray(init)


class Scratch:
    """A buffer the kernel writes whose contents are not compared (GPU order dependent)."""

    def __init__(self, arr):
        self.arr = np.ascontiguousarray(arr)


CASES = []


def case(suite, name, src, entry, grid, block, args, bufs, note, exact=True, rtol=0.0, atol=0.0, shared=0):
    CASES.append(dict(suite=suite, name=name, src=src, entry=entry, grid=grid, block=block, args=args,
                      bufs=bufs, note=note, exact=exact, rtol=rtol, atol=atol, shared=shared))


def rng(seed):
    return np.random.default_rng(seed)


# ----------------------------------------------------------------------------- cuda-samples
def samples_cases():
    S = "cuda-samples"
    red_note = ("Samples/2_Concepts_and_Techniques/reduction/reduction_kernel.cu from " + SAMPLES + ", " + SAMPLES_LIC +
                "; explicit instantiations added (reduction.cu)")
    types = [("i32", "int", np.int32), ("f32", "float", np.float32), ("f64", "double", np.float64)]
    for tn, ct, npt in types:
        r = rng(100 + len(tn) + int(tn[1:]))
        def data(n):
            if npt is np.int32:
                return r.integers(-100, 100, n).astype(np.int32)
            return r.uniform(-1, 1, n).astype(npt)
        sz = np.dtype(npt).itemsize
        specs = [
            # name, pattern, n, grid, block
            ("reduce0", f"reduce0<{ct}>(", 4096, 16, 256),
            ("reduce1", f"reduce1<{ct}>(", 4096, 16, 256),
            ("reduce2", f"reduce2<{ct}>(", 4000, 16, 256),
            ("reduce3", f"reduce3<{ct}>(", 4000, 8, 256),
            ("reduce4_b128", f"reduce4<{ct},128>(", 4096, 16, 128),
            ("reduce5_b256", f"reduce5<{ct},256>(", 4096, 8, 256),
            ("reduce6_b128_pow2", f"reduce6<{ct},128,true>(", 4096, 4, 128),
            ("reduce6_b64_npow2", f"reduce6<{ct},64,false>(", 3000, 5, 64),
            ("reduce7_b256_pow2", f"reduce7<{ct},256,true>(", 4096, 4, 256),
            ("reduce7_b64_npow2", f"reduce7<{ct},64,false>(", 3001, 6, 64),
            ("cg_reduce", f"cg_reduce<{ct}>(", 5000, 4, 256),
            ("multi_warp_cg_reduce", f"multi_warp_cg_reduce<{ct},256,64>(", 4096, 4, 256),
        ]
        for name, pat, n, g, b in specs:
            case(S, f"{name}_{tn}", "reduction", pat, [g, 1, 1], [b, 1, 1],
                 [("buf", "g_idata"), ("buf", "g_odata"), ("u32", n)],
                 {"g_idata": In(data(n)), "g_odata": Out(npt, g)}, red_note,
                 shared=max(b, 64) * sz)

    scan_note = "Samples/2_Concepts_and_Techniques/shfl_scan/shfl_scan.cu from " + SAMPLES + ", " + SAMPLES_LIC
    r = rng(7)
    d = r.integers(0, 50, 2048).astype(np.int32)
    case(S, "shfl_scan_test", "shfl_scan", "shfl_scan_test(", [8, 1, 1], [256, 1, 1],
         [("buf", "data"), ("s32", 32), ("buf", "partial_sums")],
         {"data": Out(np.int32, init=d), "partial_sums": Out(np.int32, 8)}, scan_note, shared=32)
    case(S, "shfl_scan_test_width16", "shfl_scan", "shfl_scan_test(", [4, 1, 1], [128, 1, 1],
         [("buf", "data"), ("s32", 16), ("buf", "partial_sums")],
         {"data": Out(np.int32, init=d[:512].copy()), "partial_sums": Out(np.int32, 4)}, scan_note, shared=16)
    case(S, "uniform_add", "shfl_scan", "uniform_add(", [8, 1, 1], [256, 1, 1],
         [("buf", "data"), ("buf", "partial_sums"), ("s32", 2047)],
         {"data": Out(np.int32, init=d.copy()), "partial_sums": In(r.integers(0, 10000, 8).astype(np.int32))}, scan_note)

    h_note = "Samples/2_Concepts_and_Techniques/histogram/histogram256.cu (+histogram_common.h) from " + SAMPLES + ", " + SAMPLES_LIC
    r = rng(11)
    words = r.integers(0, 2**32, 4096, dtype=np.uint64).astype(np.uint32)
    words[:256] &= 0x0F0F0F0F  # some skew
    case(S, "histogram256", "histogram256", "histogram256Kernel(", [4, 1, 1], [192, 1, 1],
         [("buf", "d_PartialHistograms"), ("buf", "d_Data"), ("u32", 4096)],
         {"d_PartialHistograms": Out(np.uint32, 4 * 256), "d_Data": In(words)}, h_note)
    part = r.integers(0, 1000, 4 * 256).astype(np.uint32)
    case(S, "merge_histogram256", "histogram256", "mergeHistogram256Kernel(", [256, 1, 1], [256, 1, 1],
         [("buf", "d_Histogram"), ("buf", "d_PartialHistograms"), ("u32", 4)],
         {"d_Histogram": Out(np.uint32, 256), "d_PartialHistograms": In(part)}, h_note)

    v_note = "Samples/0_Introduction/simpleVoteIntrinsics/simpleVote_kernel.cuh from " + SAMPLES + ", " + SAMPLES_LIC
    vin = np.zeros(128, np.uint32)
    vin[40] = 5
    vin[64:96] = 1
    vin[96:128] = r.integers(0, 2, 32)
    vin[96] = 1
    vin[100] = 0
    for k in ["VoteAnyKernel1", "VoteAllKernel2"]:
        case(S, k, "vote", k + "(", [1, 1, 1], [128, 1, 1], [("buf", "input"), ("buf", "result"), ("s32", 128)],
             {"input": In(vin), "result": Out(np.uint32, 128)}, v_note)
    case(S, "VoteAnyKernel3", "vote", "VoteAnyKernel3(", [1, 1, 1], [96, 1, 1], [("buf", "info"), ("s32", 32)],
         {"info": Out(np.uint8, init=np.zeros(96 * 3, np.uint8))}, v_note)

    w_note = "Samples/3_CUDA_Features/warpAggregatedAtomicsCG/warpAggregatedAtomicsCG.cu from " + SAMPLES + ", " + SAMPLES_LIC
    src = r.integers(-50, 50, 200).astype(np.int32)
    case(S, "filter_arr_one_warp", "warp_aggregated", "filter_arr(", [1, 1, 1], [32, 1, 1],
         [("buf", "dst"), ("buf", "nres"), ("buf", "src"), ("s32", 200)],
         {"dst": Out(np.int32, 200), "nres": Out(np.int32, init=np.zeros(1, np.int32)), "src": In(src)},
         w_note + "; one warp, so the atomic order (and dst) is deterministic")
    src2 = r.integers(-50, 50, 4096).astype(np.int32)
    case(S, "filter_arr_count", "warp_aggregated", "filter_arr(", [4, 1, 1], [128, 1, 1],
         [("buf", "dst"), ("buf", "nres"), ("buf", "src"), ("s32", 4096)],
         {"dst": Scratch(np.full(4096, -1, np.int32)), "nres": Out(np.int32, init=np.zeros(1, np.int32)), "src": In(src2)},
         w_note + "; 16 warps: only the count is compared (dst's order is the GPU's)")
    bk = r.integers(0, 10, 256).astype(np.int32)
    case(S, "mapToBuckets_one_warp", "warp_aggregated", "mapToBuckets(", [1, 1, 1], [32, 1, 1],
         [("buf", "srcArr"), ("buf", "indicesBuckets"), ("buf", "bucketCounters"), ("s32", 256), ("s32", 8)],
         {"srcArr": In(bk), "indicesBuckets": Out(np.int32, 8 * 256),
          "bucketCounters": Out(np.int32, init=(np.arange(8) * 256).astype(np.int32))},
         w_note + "; labeled_partition (match.any); one warp, so deterministic")

    f_note = "Samples/0_Introduction/fp16ScalarProduct/fp16ScalarProduct.cu from " + SAMPLES + ", " + SAMPLES_LIC
    a = r.uniform(-1, 1, 4096).astype(np.float16)
    b = r.uniform(-1, 1, 4096).astype(np.float16)
    for k in ["scalarProductKernel_intrinsics", "scalarProductKernel_native"]:
        case(S, k, "fp16_scalar_product", k + "(", [4, 1, 1], [128, 1, 1],
             [("buf", "a"), ("buf", "b"), ("buf", "results"), ("u64", 2048)],
             {"a": In(a), "b": In(b), "results": Out(np.float32, 4)}, f_note + "; half2 buffers as f16 pairs")

    bs_note = ("Samples/5_Domain_Specific/BlackScholes/BlackScholes_kernel.cuh from " + SAMPLES + ", " + SAMPLES_LIC +
               "; __expf/__logf/__fdividef/rsqrtf are .approx instructions, so tolerance, not bits")
    n = 1000
    case(S, "BlackScholesGPU", "black_scholes", "BlackScholesGPU(", [4, 1, 1], [128, 1, 1],
         [("buf", "d_CallResult"), ("buf", "d_PutResult"), ("buf", "d_StockPrice"), ("buf", "d_OptionStrike"),
          ("buf", "d_OptionYears"), ("f32", 0.02), ("f32", 0.30), ("s32", n)],
         {"d_CallResult": Out(np.float32, n), "d_PutResult": Out(np.float32, n),
          "d_StockPrice": In(r.uniform(5, 30, n).astype(np.float32)),
          "d_OptionStrike": In(r.uniform(1, 100, n).astype(np.float32)),
          "d_OptionYears": In(r.uniform(0.25, 10, n).astype(np.float32))}, bs_note, exact=False, rtol=1e-5, atol=1e-4)


# ----------------------------------------------------------------------------- CUB
def cub_cases():
    S = "cub"
    note = ("wrapper written for this corpus (ptx-cases/corpus/cub/{src}.cu) around {what} from the CUB headers "
            "(NVIDIA/cccl) that ship with nvcc; CCCL licence Apache-2.0 WITH LLVM-exception")
    r = rng(2024)

    def ints(n, lo=-1000, hi=1000, t=np.int32):
        return r.integers(lo, hi, n).astype(t)

    def flts(n, t=np.float32):
        return r.uniform(-1, 1, n).astype(t)

    def two(name, src, what, grid, block, n_in, n_out, ain, t_out, **kw):
        case(S, name, src, name, [grid, 1, 1], [block, 1, 1], [("buf", "in"), ("buf", "out")],
             {"in": In(ain), "out": Out(t_out, n_out)}, note.format(src=src, what=what), **kw)

    br = "cub_block_reduce"
    two("cub_block_reduce_sum_i32_warp", br, "cub::BlockReduce", 4, 128, 2048, 4, ints(2048), np.int32)
    two("cub_block_reduce_sum_i32_raking", br, "cub::BlockReduce", 4, 256, 2048, 4, ints(2048), np.int32)
    two("cub_block_reduce_sum_f32_warp", br, "cub::BlockReduce", 4, 128, 2048, 4, flts(2048), np.float32)
    two("cub_block_reduce_sum_f32_raking_comm", br, "cub::BlockReduce", 4, 96, 1152, 4, flts(1152), np.float32)
    two("cub_block_reduce_sum_f64_warp", br, "cub::BlockReduce", 4, 128, 1024, 4, flts(1024, np.float64), np.float64)
    two("cub_block_reduce_sum_u64_raking", br, "cub::BlockReduce", 4, 64, 1024, 4,
        r.integers(0, 2**40, 1024, dtype=np.uint64), np.uint64)
    two("cub_block_reduce_max_f32_warp", br, "cub::BlockReduce", 4, 256, 4096, 4, flts(4096), np.float32)
    two("cub_block_reduce_max_i32_raking", br, "cub::BlockReduce", 4, 160, 1280, 4, ints(1280, -10**6, 10**6), np.int32)
    case(S, "cub_block_reduce_partial_f32", br, "cub_block_reduce_partial_f32", [3, 1, 1], [128, 1, 1],
         [("buf", "in"), ("buf", "out"), ("s32", 100)], {"in": In(flts(384)), "out": Out(np.float32, 3)},
         note.format(src=br, what="cub::BlockReduce (partial tile)"))

    bs = "cub_block_scan"
    for name, t, B, I in [("cub_block_scan_incl_i32_raking", np.int32, 128, 4), ("cub_block_scan_excl_i32_warpscans", np.int32, 256, 2),
                          ("cub_block_scan_incl_f32_memoize", np.float32, 128, 2), ("cub_block_scan_excl_f64_warpscans", np.float64, 64, 4),
                          ("cub_block_scan_incl_u32_warpscans", np.uint32, 96, 3)]:
        n = 3 * B * I
        ain = ints(n, 0, 1000, t) if t in (np.int32, np.uint32) else flts(n, t)
        case(S, name, bs, name, [3, 1, 1], [B, 1, 1], [("buf", "in"), ("buf", "out"), ("buf", "totals")],
             {"in": In(ain), "out": Out(t, n), "totals": Out(t, 3)}, note.format(src=bs, what="cub::BlockScan"))
    two("cub_block_scan_excl_max_i32", bs, "cub::BlockScan", 4, 128, 512, 512, ints(512), np.int32)

    w = "cub_warp"
    two("cub_warp_reduce_sum_i32", w, "cub::WarpReduce", 4, 128, 512, 16, ints(512), np.int32)
    two("cub_warp_reduce_sum_f32", w, "cub::WarpReduce", 4, 128, 512, 16, flts(512), np.float32)
    two("cub_warp_reduce_sum_f64", w, "cub::WarpReduce", 4, 64, 256, 8, flts(256, np.float64), np.float64)
    two("cub_warp_reduce_sum_f32_sub16", w, "cub::WarpReduce (16-lane logical warps)", 4, 128, 512, 32, flts(512), np.float32)
    two("cub_warp_reduce_sum_i32_sub8", w, "cub::WarpReduce (8-lane logical warps)", 4, 64, 256, 32, ints(256), np.int32)
    two("cub_warp_reduce_sum_f16", w, "cub::WarpReduce<__half>", 4, 128, 512, 16, flts(512, np.float16) * np.float16(0.25), np.float16)
    flags = (r.uniform(0, 1, 128) < 0.2).astype(np.int32)
    case(S, "cub_warp_reduce_head_segmented_i32", w, "cub_warp_reduce_head_segmented_i32", [2, 1, 1], [64, 1, 1],
         [("buf", "in"), ("buf", "flags"), ("buf", "out")],
         {"in": In(ints(128)), "flags": In(flags), "out": Out(np.int32, 128)},
         note.format(src=w, what="cub::WarpReduce::HeadSegmentedSum"))
    case(S, "cub_warp_scan_incl_i32", w, "cub_warp_scan_incl_i32", [2, 1, 1], [128, 1, 1],
         [("buf", "in"), ("buf", "out"), ("buf", "aggs")],
         {"in": In(ints(256)), "out": Out(np.int32, 256), "aggs": Out(np.int32, 8)}, note.format(src=w, what="cub::WarpScan"))
    two("cub_warp_scan_excl_max_f32", w, "cub::WarpScan", 2, 128, 256, 256, flts(256), np.float32)
    two("cub_warp_scan_excl_sum_f64_sub16", w, "cub::WarpScan (16-lane logical warps)", 2, 128, 256, 256, flts(256, np.float64), np.float64)

    rs = "cub_radix_sort"
    two("cub_radix_sort_u32", rs, "cub::BlockRadixSort", 3, 128, 1536, 1536, r.integers(0, 2**32, 1536, dtype=np.uint64).astype(np.uint32), np.uint32)
    two("cub_radix_sort_i32_desc", rs, "cub::BlockRadixSort", 3, 64, 1536, 1536, ints(1536, -10**9, 10**9), np.int32)
    fk = (r.standard_normal(768) * 100).astype(np.float32)
    fk[:4] = [0.0, -0.0, 1e-40, -1e-40]
    two("cub_radix_sort_f32", rs, "cub::BlockRadixSort", 3, 128, 768, 768, fk, np.float32)
    keys = r.integers(0, 64, 1024).astype(np.uint32)  # many equal keys: the sort is stable
    case(S, "cub_radix_sort_pairs_u32_i32", rs, "cub_radix_sort_pairs_u32_i32", [2, 1, 1], [128, 1, 1],
         [("buf", "kin"), ("buf", "vin"), ("buf", "kout"), ("buf", "vout")],
         {"kin": In(keys), "vin": In(np.arange(1024, dtype=np.int32)), "kout": Out(np.uint32, 1024), "vout": Out(np.int32, 1024)},
         note.format(src=rs, what="cub::BlockRadixSort (pairs)"))
    two("cub_radix_sort_bits_striped_u32", rs, "cub::BlockRadixSort::SortBlockedToStriped", 2, 128, 1024, 1024,
        r.integers(0, 2**32, 1024, dtype=np.uint64).astype(np.uint32), np.uint32)

    h = "cub_histogram"
    smp = np.minimum(r.exponential(40, 128 * 8 * 3), 255).astype(np.uint8)
    two("cub_block_histogram_atomic", h, "cub::BlockHistogram (BLOCK_HISTO_ATOMIC)", 3, 128, 3072, 768, smp, np.uint32)
    two("cub_block_histogram_sort", h, "cub::BlockHistogram (BLOCK_HISTO_SORT)", 3, 128, 1536, 768, smp[:1536].copy(), np.uint32)

    ls = "cub_load_store"
    case(S, "cub_load_vectorize_f32", ls, "cub_load_vectorize_f32", [3, 1, 1], [128, 1, 1],
         [("buf", "in"), ("buf", "out"), ("f32", 0.75)], {"in": In(flts(1536)), "out": Out(np.float32, 1536)},
         note.format(src=ls, what="cub::BlockLoad/BlockStore (BLOCK_LOAD_VECTORIZE: float4)"))
    case(S, "cub_load_warp_transpose_i32", ls, "cub_load_warp_transpose_i32", [3, 1, 1], [128, 1, 1],
         [("buf", "in"), ("buf", "out"), ("s32", 1300)], {"in": In(ints(1536)), "out": Out(np.int32, 1536)},
         note.format(src=ls, what="cub::BlockLoad/BlockStore (WARP_TRANSPOSE, guarded partial tile)"))
    two("cub_exchange_striped_to_blocked_f64", ls, "cub::BlockExchange", 2, 64, 512, 512, flts(512, np.float64), np.float64)
    two("cub_discontinuity_heads_i32", ls, "cub::BlockDiscontinuity", 2, 128, 1024, 1024, np.sort(ints(1024, 0, 200)), np.int32)
    two("cub_adjacent_difference_f32", ls, "cub::BlockAdjacentDifference", 2, 128, 1024, 1024, flts(1024), np.float32)


# ----------------------------------------------------------------------------- driver
def compile_one(cu, ptx):
    p = subprocess.run(["nvcc", *NVCC_FLAGS, "-I", os.path.dirname(cu), cu, "-o", ptx], capture_output=True, text=True)
    return cu, p.returncode, p.stderr[-4000:]


def norm(s):
    s = s.replace(" ", "")
    s = s.replace("(bool)1", "true").replace("(bool)0", "false")  # cu++filt's spelling of template arguments
    s = re.sub(r"\((unsigned)?(int|long|longlong|char|short)\)(?=\d)", "", s)
    s = re.sub(r"(\d+)(ull|ul|u|l)\b", r"\1", s)
    s = re.sub(r"(\d+)(ull|ul|u|l)(?=[,>])", r"\1", s)
    return s[4:] if s.startswith("void") else s


def entries(ptx_text):
    names = re.findall(r"\.entry\s+([A-Za-z_$][\w$]*)\s*\(", ptx_text)
    out = subprocess.run(["cu++filt"], input="\n".join(names), capture_output=True, text=True).stdout.split("\n")
    return {n: norm(d) for n, d in zip(names, out)}


def find_entry(ents, pat):
    if pat in ents:
        return pat
    hits = [n for n, d in ents.items() if d.startswith(norm(pat))]
    if len(hits) != 1:
        raise RuntimeError(f"entry pattern {pat!r}: {len(hits)} matches {hits} among {sorted(ents.values())}")
    return hits[0]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--tar")
    ap.add_argument("--only")
    a = ap.parse_args()
    import cupy as cp

    samples_cases()
    cub_cases()
    cases = [c for c in CASES if not a.only or c["suite"] == a.only]
    out = os.path.abspath(a.out)
    os.makedirs(out, exist_ok=True)
    ver = subprocess.run(["nvcc", "--version"], capture_output=True, text=True).stdout.strip().splitlines()[-2:]
    mods = sorted({(c["suite"], c["src"]) for c in cases})
    jobs = []
    with cf.ThreadPoolExecutor(16) as ex:
        for s, m in mods:
            os.makedirs(os.path.join(out, s), exist_ok=True)
            jobs.append(ex.submit(compile_one, os.path.join(HERE, s, m + ".cu"), os.path.join(out, s, m + ".ptx")))
        ok_mods = set()
        for j in jobs:
            cu, rc, err = j.result()
            s, m = os.path.basename(os.path.dirname(cu)), os.path.basename(cu)[:-3]
            print(f"nvcc {s}/{m}.cu: rc={rc}", flush=True)
            if rc:
                print(err, flush=True)
            else:
                ok_mods.add((s, m))
    loaded = {}
    KNOWN = json.load(open(os.path.join(HERE, "KNOWN_FAILURES.json")))
    summary = {"nvcc": ver, "gpu": cp.cuda.runtime.getDeviceProperties(0)["name"].decode(), "ok": [], "failed": {}}
    for c in cases:
        key = (c["suite"], c["src"])
        cname = f'{c["suite"]}/{c["name"]}'
        if key not in ok_mods:
            summary["failed"][cname] = "module did not compile"
            continue
        try:
            ptxp = os.path.join(out, c["suite"], c["src"] + ".ptx")
            if key not in loaded:
                loaded[key] = (cp.RawModule(path=ptxp), entries(open(ptxp).read()))
            mod, ents = loaded[key]
            ename = find_entry(ents, c["entry"])
            fn = mod.get_function(ename)
            dev = {k: cp.asarray(b.arr) for k, b in c["bufs"].items()}
            args = []
            for kind, v in c["args"]:
                args.append(dev[v] if kind == "buf" else SCALAR[kind](v))
            fn(tuple(c["grid"]), tuple(c["block"]), tuple(args), shared_mem=c["shared"])
            cp.cuda.Device(0).synchronize()
            d = os.path.join(out, c["suite"], c["name"])
            os.makedirs(d, exist_ok=True)
            jb = {}
            for k, b in c["bufs"].items():
                jb[k] = {"dtype": dtname(b.arr), "len": int(b.arr.size), "init": k + ".bin"}
                b.arr.tofile(os.path.join(d, k + ".bin"))
                if isinstance(b, Out):
                    cp.asnumpy(dev[k]).tofile(os.path.join(d, k + ".expect.bin"))
                    jb[k]["expect"] = k + ".expect.bin"
            jargs = [{"kind": "buffer", "name": v} if kind == "buf" else {"kind": "scalar", "type": kind, "value": v}
                     for kind, v in c["args"]]
            cj = {"ptx": f'../{c["src"]}.ptx', "entry": ename, "grid": c["grid"], "block": c["block"], "args": jargs,
                  "buffers": jb, "exact": c["exact"], "rtol": c["rtol"], "atol": c["atol"]}
            if c["shared"]:
                cj["shared_bytes"] = c["shared"]
            if cname in KNOWN:  # a VGPU bug, kept in KNOWN_FAILURES.json (tests/cases.rs checks it still fails)
                cj["known_failure"] = KNOWN[cname]
            cj["note"] = c["note"] + f'; expected outputs from {summary["gpu"]}, {ver[-1] if ver else "nvcc"}'
            with open(os.path.join(d, "case.json"), "w") as f:
                json.dump(cj, f, indent=1)
                f.write("\n")
            summary["ok"].append(cname)
        except Exception as e:  # keep going: one bad case must not cost the rest
            summary["failed"][cname] = f"{type(e).__name__}: {e}"[:2000]
            print("FAILED", cname, summary["failed"][cname], flush=True)
    with open(os.path.join(out, "generate-summary.json"), "w") as f:
        json.dump(summary, f, indent=1)
    print(f'{len(summary["ok"])} cases written, {len(summary["failed"])} failed', flush=True)
    if a.tar:
        with tarfile.open(a.tar, "w:gz") as t:
            t.add(out, arcname="corpus")


if __name__ == "__main__":
    main()
