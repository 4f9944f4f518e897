// Bench-only kernels (module "probe", registered by cuzk/bench/kernels/__init__.py; never loaded by the
// prover): field-arithmetic throughput probes for the kernel benchmark (cuzk/bench/gpu_kernels.py), and
// the test and benchmark bases. Kept out of the production modules so that adding one rebuilds nothing
// there. Headers come from cuzk/backends/gpu/kernels; built with the inlined field arithmetic (no
// CUZK_FQ_OUTLINE), the form the probes have always measured.
//
// fq_mul_probe / fr_mul_probe: Montgomery multiplies per second, 4 dependent chains per thread.
// fq_mul_chains_K: K independent Montgomery-multiply chains per thread. If the rate grows with K at a
// fixed grid, the multiply is bound by the latency of its carry chains rather than by the IMAD pipe.
// fq_sqr_chains_4: the same with the (SOS) square.
// g1_add_tables / g2_add_tables: many distinct affine points from two short tables.
#include "ec.cuh"

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

template <class T>
__device__ __forceinline__ void mul_probe(Elem<T>* __restrict__ data, int iters) {
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    Elem<T> a = data[4 * i], b = data[4 * i + 1], c = data[4 * i + 2], d = data[4 * i + 3];
    for (int k = 0; k < iters; k++) {
        a = mul<T>(a, b);
        b = mul<T>(b, c);
        c = mul<T>(c, d);
        d = mul<T>(d, a);
    }
    data[4 * i] = a;
    data[4 * i + 1] = b;
    data[4 * i + 2] = c;
    data[4 * i + 3] = d;
}

extern "C" __global__ void fq_mul_probe(Fq* data, int iters) { mul_probe<FqTag>(data, iters); }
extern "C" __global__ void fr_mul_probe(Fr* data, int iters) { mul_probe<FrTag>(data, iters); }

// out[i] = P[i % m] + Q[i / m], affine (test and benchmark bases: many distinct points from two short
// tables, without a scalar multiplication per point)
template <class F>
__device__ __forceinline__ void add_tables(const Affine<F>* __restrict__ P, u32 m, const Affine<F>* __restrict__ Qt, u32 n,
                                           Affine<F>* __restrict__ out) {
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    XYZZ<F> acc = from_affine(P[i % m]);
    madd(acc, Qt[i / m]);
    out[i] = to_affine(acc);
}

extern "C" __global__ void g1_add_tables(const Affine<Fq>* P, u32 m, const Affine<Fq>* Qt, u32 n, Affine<Fq>* out) {
    add_tables<Fq>(P, m, Qt, n, out);
}
extern "C" __global__ void g2_add_tables(const Affine<Fq2>* P, u32 m, const Affine<Fq2>* Qt, u32 n, Affine<Fq2>* out) {
    add_tables<Fq2>(P, m, Qt, n, out);
}
