// Field-arithmetic throughput probes for the kernel benchmark (bench/gpu_kernels.py), kept out of the
// msm module so that adding one does not rebuild it.
//
// fq_mul_chains_K: K independent Montgomery-multiply chains per thread. If the rate grows with K at a
// fixed grid, the multiply is bound by the latency of its carry chains rather than by the IMAD pipe,
// and the accumulation kernels would gain from interleaving independent work per thread.
// fq_sqr_chains_4: the same with squares (sqr(): the SOS square unless built with CUZK_SQR_SOS=0).
#include "field.cuh"

template <int K, bool SQUARE>
__device__ __forceinline__ void chains(Fq* __restrict__ data, int iters) {
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    Fq x[K];
#pragma unroll
    for (int k = 0; k < K; k++) x[k] = data[(u64)K * i + k];
    const Fq b = data[(u64)K * i];
    for (int it = 0; it < iters; it++) {
#pragma unroll
        for (int k = 0; k < K; k++) x[k] = SQUARE ? sqr<FqTag>(x[k]) : mul<FqTag>(x[k], b);
    }
#pragma unroll
    for (int k = 0; k < K; k++) data[(u64)K * i + k] = x[k];
}

extern "C" __global__ void fq_mul_chains_1(Fq* data, int iters) { chains<1, false>(data, iters); }
extern "C" __global__ void fq_mul_chains_2(Fq* data, int iters) { chains<2, false>(data, iters); }
extern "C" __global__ void fq_mul_chains_4(Fq* data, int iters) { chains<4, false>(data, iters); }
extern "C" __global__ void fq_mul_chains_8(Fq* data, int iters) { chains<8, false>(data, iters); }
extern "C" __global__ void fq_sqr_chains_4(Fq* data, int iters) { chains<4, true>(data, iters); }
