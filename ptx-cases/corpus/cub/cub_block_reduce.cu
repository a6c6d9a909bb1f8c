// cub::BlockReduce (sum and max) over ITEMS blocked items per thread, three algorithms.
#include "common.cuh"

template <typename T, int BLOCK, int ITEMS, cub::BlockReduceAlgorithm ALGO>
__device__ __forceinline__ void block_reduce_sum(const T *in, T *out)
{
    using BR = cub::BlockReduce<T, BLOCK, ALGO>;
    __shared__ typename BR::TempStorage tmp;
    T items[ITEMS];
    cub::LoadDirectBlocked(threadIdx.x, in + blockIdx.x * BLOCK * ITEMS, items);
    T agg = BR(tmp).Sum(items);
    if (threadIdx.x == 0) out[blockIdx.x] = agg;
}

template <typename T, int BLOCK, int ITEMS, cub::BlockReduceAlgorithm ALGO>
__device__ __forceinline__ void block_reduce_max(const T *in, T *out)
{
    using BR = cub::BlockReduce<T, BLOCK, ALGO>;
    __shared__ typename BR::TempStorage tmp;
    T items[ITEMS];
    cub::LoadDirectStriped<BLOCK>(threadIdx.x, in + blockIdx.x * BLOCK * ITEMS, items);
    T agg = BR(tmp).Reduce(items, MaxOp());
    if (threadIdx.x == 0) out[blockIdx.x] = agg;
}

// A partial tile: only num_valid threads contribute.
template <typename T, int BLOCK>
__device__ __forceinline__ void block_reduce_partial(const T *in, T *out, int num_valid)
{
    using BR = cub::BlockReduce<T, BLOCK>;
    __shared__ typename BR::TempStorage tmp;
    T v = threadIdx.x < num_valid ? in[blockIdx.x * BLOCK + threadIdx.x] : T(0);
    T agg = BR(tmp).Sum(v, num_valid);
    if (threadIdx.x == 0) out[blockIdx.x] = agg;
}

#define SUM(name, T, B, I, A) \
    extern "C" __global__ void __launch_bounds__(B) name(const T *in, T *out) { block_reduce_sum<T, B, I, A>(in, out); }
#define MAX(name, T, B, I, A) \
    extern "C" __global__ void __launch_bounds__(B) name(const T *in, T *out) { block_reduce_max<T, B, I, A>(in, out); }

SUM(cub_block_reduce_sum_i32_warp, int, 128, 4, cub::BLOCK_REDUCE_WARP_REDUCTIONS)
SUM(cub_block_reduce_sum_i32_raking, int, 256, 2, cub::BLOCK_REDUCE_RAKING)
SUM(cub_block_reduce_sum_f32_warp, float, 128, 4, cub::BLOCK_REDUCE_WARP_REDUCTIONS)
SUM(cub_block_reduce_sum_f32_raking_comm, float, 96, 3, cub::BLOCK_REDUCE_RAKING_COMMUTATIVE_ONLY)
SUM(cub_block_reduce_sum_f64_warp, double, 128, 2, cub::BLOCK_REDUCE_WARP_REDUCTIONS)
SUM(cub_block_reduce_sum_u64_raking, unsigned long long, 64, 4, cub::BLOCK_REDUCE_RAKING)
MAX(cub_block_reduce_max_f32_warp, float, 256, 4, cub::BLOCK_REDUCE_WARP_REDUCTIONS)
MAX(cub_block_reduce_max_i32_raking, int, 160, 2, cub::BLOCK_REDUCE_RAKING)

extern "C" __global__ void __launch_bounds__(128) cub_block_reduce_partial_f32(const float *in, float *out, int num_valid)
{
    block_reduce_partial<float, 128>(in, out, num_valid);
}
