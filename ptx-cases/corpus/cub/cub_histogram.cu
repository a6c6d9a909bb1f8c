// cub::BlockHistogram of byte samples into 256 bins (shared-memory atomics and sort-based).
#include "common.cuh"

template <int BLOCK, int ITEMS, cub::BlockHistogramAlgorithm ALGO>
__device__ __forceinline__ void block_histogram(const unsigned char *in, unsigned int *out)
{
    using BH = cub::BlockHistogram<unsigned char, BLOCK, ITEMS, 256, ALGO>;
    __shared__ typename BH::TempStorage tmp;
    __shared__ unsigned int hist[256];
    unsigned char samples[ITEMS];
    cub::LoadDirectStriped<BLOCK>(threadIdx.x, in + blockIdx.x * BLOCK * ITEMS, samples);
    BH(tmp).Histogram(samples, hist);
    __syncthreads();
    for (int i = threadIdx.x; i < 256; i += BLOCK) out[blockIdx.x * 256 + i] = hist[i];
}

extern "C" __global__ void __launch_bounds__(128) cub_block_histogram_atomic(const unsigned char *in, unsigned int *out)
{
    block_histogram<128, 8, cub::BLOCK_HISTO_ATOMIC>(in, out);
}
extern "C" __global__ void __launch_bounds__(128) cub_block_histogram_sort(const unsigned char *in, unsigned int *out)
{
    block_histogram<128, 4, cub::BLOCK_HISTO_SORT>(in, out);
}
