// Elementwise Fr vector kernels and the sparse matrix-vector product (a = A.w) of the constraint
// evaluator. All values are Montgomery form, n x CUZK_FR_LIMBS 32-bit limbs.
#include "fields.cuh"

#define ELEMENTWISE(name, expr)                                                                                 \
    extern "C" __global__ void name(const Fr* __restrict__ a, const Fr* __restrict__ b, Fr* __restrict__ out, u32 n) { \
        u32 i = blockIdx.x * blockDim.x + threadIdx.x;                                                          \
        if (i >= n) return;                                                                                     \
        Fr x = load<FrTag>(a + i), y = load<FrTag>(b + i);                                                      \
        store<FrTag>(out + i, expr);                                                                            \
    }

ELEMENTWISE(fr_mul, (mul<FrTag>(x, y)))
ELEMENTWISE(fr_add, (add<FrTag>(x, y)))
ELEMENTWISE(fr_sub, (sub<FrTag>(x, y)))

// out = a * b - c
extern "C" __global__ void fr_mul_sub(const Fr* __restrict__ a, const Fr* __restrict__ b, const Fr* __restrict__ c,
                                      Fr* __restrict__ out, u32 n) {
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    store<FrTag>(out + i, sub<FrTag>(mul<FrTag>(load<FrTag>(a + i), load<FrTag>(b + i)), load<FrTag>(c + i)));
}

// a[i] *= k (k: one Montgomery element in device memory)
extern "C" __global__ void fr_scale(Fr* __restrict__ a, const Fr* __restrict__ k, u32 n) {
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    store<FrTag>(a + i, mul<FrTag>(load<FrTag>(a + i), load<FrTag>(k)));
}

extern "C" __global__ void fr_from_mont(const Fr* __restrict__ a, Fr* __restrict__ out, u32 n) {
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    store<FrTag>(out + i, from_mont<FrTag>(load<FrTag>(a + i)));
}

extern "C" __global__ void fr_to_mont(const Fr* __restrict__ a, Fr* __restrict__ out, u32 n) {
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    store<FrTag>(out + i, to_mont<FrTag>(load<FrTag>(a + i)));
}

// out[r] = sum_j vals[j] * w[cols[j]], j in [row_ptr[r], row_ptr[r+1]); one thread per row.
// Coefficients equal to one (the common case) skip the multiplication.
extern "C" __global__ void spmv_csr(const long long* __restrict__ row_ptr, const u32* __restrict__ cols,
                                    const Fr* __restrict__ vals, const Fr* __restrict__ w, Fr* __restrict__ out, u32 rows) {
    u32 r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    Fr acc = Fr::zero();
    const Fr one = Fr::one();
    for (long long j = row_ptr[r]; j < row_ptr[r + 1]; j++) {
        Fr v = load<FrTag>(vals + j);
        Fr x = load<FrTag>(w + cols[j]);
        acc = add<FrTag>(acc, v == one ? x : mul<FrTag>(v, x));
    }
    store<FrTag>(out + r, acc);
}
