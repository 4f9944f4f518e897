// Key generation on the GPU: fixed-base scalar multiplication (many scalars, one generator) with a
// table of byte-window multiples, and the Fr helpers the QAP evaluation needs.
#include "ec.cuh"

// out[i] = scalar_i * G, affine (LEM layout). table[k * 256 + j] = j * 256^k * G (affine; j = 0 unused).
// Scalars are Montgomery Fr; each is converted, then its bytes (32 for a scalar field of up to 256 bits)
// select at most one mixed addition each.
template <class F>
__device__ __forceinline__ void fixed_base(const Affine<F>* __restrict__ table, const Fr* __restrict__ scalars, u32 n,
                                           Affine<F>* __restrict__ out) {
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    Fr s = from_mont<FrTag>(load<FrTag>(scalars + i));
    XYZZ<F> acc = XYZZ<F>::inf();
#pragma unroll 1
    for (int k = 0; k < (CUZK_FR_BITS + 7) / 8; k++) {
        u32 byte = (s.v[k >> 2] >> (8 * (k & 3))) & 0xffu;
        if (byte) madd_inl(acc, table[k * 256 + byte].x, table[k * 256 + byte].y);
    }
    out[i] = to_affine(acc);
}

extern "C" __global__ void g1_fixed_base(const Affine<Fq>* table, const Fr* scalars, u32 n, Affine<Fq>* out) {
    fixed_base<Fq>(table, scalars, n, out);
}
extern "C" __global__ void g2_fixed_base(const Affine<Fq2>* table, const Fr* scalars, u32 n, Affine<Fq2>* out) {
    fixed_base<Fq2>(table, scalars, n, out);
}

// out[i] = 1 / a[i] (Fermat; 0 -> 0)
extern "C" __global__ void fr_inverse(const Fr* __restrict__ a, Fr* __restrict__ out, u32 n) {
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    store<FrTag>(out + i, inverse<FrTag>(load<FrTag>(a + i)));
}

// out[i] = k - a[i] (k: one element in device memory)
extern "C" __global__ void fr_rsub_scalar(const Fr* __restrict__ a, const Fr* __restrict__ k, Fr* __restrict__ out, u32 n) {
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    store<FrTag>(out + i, sub<FrTag>(load<FrTag>(k), load<FrTag>(a + i)));
}

// out[i] = x * a[i] + y * b[i] + c[i] (x, y: elements in device memory): beta u + alpha v + w
extern "C" __global__ void fr_lincomb3(const Fr* __restrict__ a, const Fr* __restrict__ b, const Fr* __restrict__ c,
                                       const Fr* __restrict__ xy, Fr* __restrict__ out, u32 n) {
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    Fr r = add<FrTag>(mul<FrTag>(load<FrTag>(xy), load<FrTag>(a + i)), mul<FrTag>(load<FrTag>(xy + 1), load<FrTag>(b + i)));
    store<FrTag>(out + i, add<FrTag>(r, load<FrTag>(c + i)));
}
