// cub::WarpReduce and cub::WarpScan, full and logical (sub-)warps; f32, f64, i32 and __half.
#include "common.cuh"

template <typename T, int BLOCK, int LOGICAL>
__device__ __forceinline__ void warp_reduce_sum(const T *in, T *out)
{
    using WR = cub::WarpReduce<T, LOGICAL>;
    __shared__ typename WR::TempStorage tmp[BLOCK / LOGICAL];
    const int gid = blockIdx.x * BLOCK + threadIdx.x;
    const int w = threadIdx.x / LOGICAL;
    T s = WR(tmp[w]).Sum(in[gid]);
    if (threadIdx.x % LOGICAL == 0) out[gid / LOGICAL] = s;
}

#define WRED(name, T, B, L) \
    extern "C" __global__ void __launch_bounds__(B) name(const T *in, T *out) { warp_reduce_sum<T, B, L>(in, out); }

WRED(cub_warp_reduce_sum_i32, int, 128, 32)
WRED(cub_warp_reduce_sum_f32, float, 128, 32)
WRED(cub_warp_reduce_sum_f64, double, 64, 32)
WRED(cub_warp_reduce_sum_f32_sub16, float, 128, 16)
WRED(cub_warp_reduce_sum_i32_sub8, int, 64, 8)
WRED(cub_warp_reduce_sum_f16, __half, 128, 32)

// Segmented (head-flagged) warp reduction.
extern "C" __global__ void __launch_bounds__(64) cub_warp_reduce_head_segmented_i32(const int *in, const int *flags, int *out)
{
    using WR = cub::WarpReduce<int>;
    __shared__ typename WR::TempStorage tmp[2];
    const int gid = blockIdx.x * 64 + threadIdx.x;
    int s = WR(tmp[threadIdx.x / 32]).HeadSegmentedSum(in[gid], flags[gid]);
    if (flags[gid] || threadIdx.x % 32 == 0) out[gid] = s; // valid in each segment's head lane only
}

extern "C" __global__ void __launch_bounds__(128) cub_warp_scan_incl_i32(const int *in, int *out, int *aggs)
{
    using WS = cub::WarpScan<int>;
    __shared__ typename WS::TempStorage tmp[4];
    const int gid = blockIdx.x * 128 + threadIdx.x;
    int r, agg;
    WS(tmp[threadIdx.x / 32]).InclusiveSum(in[gid], r, agg);
    out[gid] = r;
    if (threadIdx.x % 32 == 0) aggs[gid / 32] = agg;
}

extern "C" __global__ void __launch_bounds__(128) cub_warp_scan_excl_max_f32(const float *in, float *out)
{
    using WS = cub::WarpScan<float>;
    __shared__ typename WS::TempStorage tmp[4];
    const int gid = blockIdx.x * 128 + threadIdx.x;
    float r;
    WS(tmp[threadIdx.x / 32]).ExclusiveScan(in[gid], r, -1.0e30f, MaxOp());
    out[gid] = r;
}

extern "C" __global__ void __launch_bounds__(128) cub_warp_scan_excl_sum_f64_sub16(const double *in, double *out)
{
    using WS = cub::WarpScan<double, 16>;
    __shared__ typename WS::TempStorage tmp[8];
    const int gid = blockIdx.x * 128 + threadIdx.x;
    double r;
    WS(tmp[threadIdx.x / 16]).ExclusiveSum(in[gid], r);
    out[gid] = r;
}
