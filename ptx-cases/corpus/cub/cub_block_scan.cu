// cub::BlockScan: inclusive/exclusive sums and scans with a user operator, three algorithms.
#include "common.cuh"

template <typename T, int BLOCK, int ITEMS, cub::BlockScanAlgorithm ALGO, bool INCLUSIVE>
__device__ __forceinline__ void block_scan_sum(const T *in, T *out, T *totals)
{
    using BS = cub::BlockScan<T, BLOCK, ALGO>;
    __shared__ typename BS::TempStorage tmp;
    T items[ITEMS];
    const int base = blockIdx.x * BLOCK * ITEMS;
    cub::LoadDirectBlocked(threadIdx.x, in + base, items);
    T total;
    if (INCLUSIVE)
        BS(tmp).InclusiveSum(items, items, total);
    else
        BS(tmp).ExclusiveSum(items, items, total);
    cub::StoreDirectBlocked(threadIdx.x, out + base, items);
    if (threadIdx.x == 0) totals[blockIdx.x] = total;
}

#define SCAN(name, T, B, I, A, INC) \
    extern "C" __global__ void __launch_bounds__(B) name(const T *in, T *out, T *totals) \
    { block_scan_sum<T, B, I, A, INC>(in, out, totals); }

SCAN(cub_block_scan_incl_i32_raking, int, 128, 4, cub::BLOCK_SCAN_RAKING, true)
SCAN(cub_block_scan_excl_i32_warpscans, int, 256, 2, cub::BLOCK_SCAN_WARP_SCANS, false)
SCAN(cub_block_scan_incl_f32_memoize, float, 128, 2, cub::BLOCK_SCAN_RAKING_MEMOIZE, true)
SCAN(cub_block_scan_excl_f64_warpscans, double, 64, 4, cub::BLOCK_SCAN_WARP_SCANS, false)
SCAN(cub_block_scan_incl_u32_warpscans, unsigned int, 96, 3, cub::BLOCK_SCAN_WARP_SCANS, true)

// Running maximum with a seed, one item per thread.
extern "C" __global__ void __launch_bounds__(128) cub_block_scan_excl_max_i32(const int *in, int *out)
{
    using BS = cub::BlockScan<int, 128>;
    __shared__ typename BS::TempStorage tmp;
    int v = in[blockIdx.x * 128 + threadIdx.x];
    int r;
    BS(tmp).ExclusiveScan(v, r, -1000000, MaxOp());
    out[blockIdx.x * 128 + threadIdx.x] = r;
}
