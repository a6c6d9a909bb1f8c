// cub::BlockLoad / BlockStore (vectorized float4 loads, warp-transpose, guarded partial tiles),
// cub::BlockExchange, cub::BlockDiscontinuity, cub::BlockAdjacentDifference.
#include "common.cuh"

extern "C" __global__ void __launch_bounds__(128) cub_load_vectorize_f32(const float *in, float *out, float a)
{
    using L = cub::BlockLoad<float, 128, 4, cub::BLOCK_LOAD_VECTORIZE>;
    using S = cub::BlockStore<float, 128, 4, cub::BLOCK_STORE_VECTORIZE>;
    float v[4];
    const int base = blockIdx.x * 512;
    L().Load(in + base, v);
    for (int i = 0; i < 4; i++) v[i] = v[i] * a + 1.0f;
    S().Store(out + base, v);
}

extern "C" __global__ void __launch_bounds__(128) cub_load_warp_transpose_i32(const int *in, int *out, int num_valid)
{
    using L = cub::BlockLoad<int, 128, 4, cub::BLOCK_LOAD_WARP_TRANSPOSE>;
    using S = cub::BlockStore<int, 128, 4, cub::BLOCK_STORE_WARP_TRANSPOSE>;
    __shared__ union {
        typename L::TempStorage load;
        typename S::TempStorage store;
    } tmp;
    int v[4];
    const int base = blockIdx.x * 512;
    int valid = num_valid - base;
    L(tmp.load).Load(in + base, v, valid, -7);
    for (int i = 0; i < 4; i++) v[i] = v[i] * 3 + (int)threadIdx.x;
    __syncthreads();
    S(tmp.store).Store(out + base, v, valid);
}

extern "C" __global__ void __launch_bounds__(64) cub_exchange_striped_to_blocked_f64(const double *in, double *out)
{
    using X = cub::BlockExchange<double, 64, 4>;
    __shared__ typename X::TempStorage tmp;
    double v[4];
    const int base = blockIdx.x * 256;
    cub::LoadDirectStriped<64>(threadIdx.x, in + base, v);
    X(tmp).StripedToBlocked(v);
    for (int i = 0; i < 4; i++) v[i] = v[i] * (double)(i + 1);
    cub::StoreDirectBlocked(threadIdx.x, out + base, v);
}

extern "C" __global__ void __launch_bounds__(128) cub_discontinuity_heads_i32(const int *in, int *flags_out)
{
    using D = cub::BlockDiscontinuity<int, 128>;
    __shared__ typename D::TempStorage tmp;
    int v[4];
    int f[4];
    const int base = blockIdx.x * 512;
    cub::LoadDirectBlocked(threadIdx.x, in + base, v);
    D(tmp).FlagHeads(f, v, NotEqual());
    cub::StoreDirectBlocked(threadIdx.x, flags_out + base, f);
}

extern "C" __global__ void __launch_bounds__(128) cub_adjacent_difference_f32(const float *in, float *out)
{
    using A = cub::BlockAdjacentDifference<float, 128>;
    __shared__ typename A::TempStorage tmp;
    float v[4];
    float r[4];
    const int base = blockIdx.x * 512;
    cub::LoadDirectBlocked(threadIdx.x, in + base, v);
    A(tmp).SubtractLeft(v, r, Diff());
    cub::StoreDirectBlocked(threadIdx.x, out + base, r);
}
