// cub::BlockRadixSort: keys (u32, i32, f32, ascending and descending) and key-value pairs.
#include "common.cuh"

template <typename K, int BLOCK, int ITEMS, bool DESC>
__device__ __forceinline__ void sort_keys(const K *in, K *out)
{
    using S = cub::BlockRadixSort<K, BLOCK, ITEMS>;
    __shared__ typename S::TempStorage tmp;
    K keys[ITEMS];
    const int base = blockIdx.x * BLOCK * ITEMS;
    cub::LoadDirectBlocked(threadIdx.x, in + base, keys);
    if (DESC)
        S(tmp).SortDescending(keys);
    else
        S(tmp).Sort(keys);
    cub::StoreDirectBlocked(threadIdx.x, out + base, keys);
}

#define SORT(name, K, B, I, D) \
    extern "C" __global__ void __launch_bounds__(B) name(const K *in, K *out) { sort_keys<K, B, I, D>(in, out); }

SORT(cub_radix_sort_u32, unsigned int, 128, 4, false)
SORT(cub_radix_sort_i32_desc, int, 64, 8, true)
SORT(cub_radix_sort_f32, float, 128, 2, false)

extern "C" __global__ void __launch_bounds__(128) cub_radix_sort_pairs_u32_i32(const unsigned int *kin, const int *vin,
                                                                               unsigned int *kout, int *vout)
{
    using S = cub::BlockRadixSort<unsigned int, 128, 4, int>;
    __shared__ typename S::TempStorage tmp;
    unsigned int keys[4];
    int vals[4];
    const int base = blockIdx.x * 512;
    cub::LoadDirectBlocked(threadIdx.x, kin + base, keys);
    cub::LoadDirectBlocked(threadIdx.x, vin + base, vals);
    S(tmp).Sort(keys, vals);
    cub::StoreDirectBlocked(threadIdx.x, kout + base, keys);
    cub::StoreDirectBlocked(threadIdx.x, vout + base, vals);
}

// Only bits [4, 12) of the key, blocked in, striped out.
extern "C" __global__ void __launch_bounds__(128) cub_radix_sort_bits_striped_u32(const unsigned int *in, unsigned int *out)
{
    using S = cub::BlockRadixSort<unsigned int, 128, 4>;
    __shared__ typename S::TempStorage tmp;
    unsigned int keys[4];
    const int base = blockIdx.x * 512;
    cub::LoadDirectBlocked(threadIdx.x, in + base, keys);
    S(tmp).SortBlockedToStriped(keys, 4, 12);
    cub::StoreDirectStriped<128>(threadIdx.x, out + base, keys);
}
