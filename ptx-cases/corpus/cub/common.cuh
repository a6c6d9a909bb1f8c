// Thin __global__ wrappers around CUB block- and warp-level primitives (NVIDIA/cccl, the
// CUB headers that ship with nvcc 13.0). The wrappers are written for this corpus
// (VGPU, same licence as the repository); the PTX that matters is what nvcc emits for
// the CUB templates they instantiate (CCCL: Apache-2.0 WITH LLVM-exception / BSD-3).
#pragma once
#include <cub/cub.cuh>
#include <cuda_fp16.h>

struct MaxOp {
    template <class T> __device__ __forceinline__ T operator()(const T &a, const T &b) const { return a < b ? b : a; }
};
struct MinOp {
    template <class T> __device__ __forceinline__ T operator()(const T &a, const T &b) const { return b < a ? b : a; }
};
struct NotEqual {
    template <class T> __device__ __forceinline__ bool operator()(const T &a, const T &b) const { return a != b; }
};
struct Diff {
    template <class T> __device__ __forceinline__ T operator()(const T &a, const T &b) const { return a - b; }
};
