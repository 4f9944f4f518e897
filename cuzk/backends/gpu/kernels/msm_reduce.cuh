// MSM stage 3: the buckets reduced to one sum per window, and the sum of the one-scalar bases.
//
//   segments[_even]  one thread per (window, segment of L buckets): running sums -> (T_s, A_s); the
//                    _even form reads the buckets straight from the even accumulation's pieces
//   window_partial   per window: X_g = sum T_s, Y_g = sum s A_s over many blocks
//   window_final     per window: W_w = sum_g X_g + L * sum_g Y_g
//   (host)           sum_w 2^(c w) W_w as a small CPU MSM
//   masked_sum       the 0/1 path's "masked" form: the bases whose flag is 1, grid-stride, then reduce
#pragma once
#include "msm_accumulate.cuh"

// One thread per (window, segment): over buckets k in [sL, sL+L) (0-based; bucket k holds digit k+1)
// T_s = sum (k - sL + 1) B_k and A_s = sum B_k, by running sums from the top.
template <class F>
__device__ __forceinline__ void segments(const XYZZ<F>* __restrict__ buckets, u32 nb, u32 L, u32 nseg, u32 nwin,
                                         XYZZ<F>* __restrict__ segT, XYZZ<F>* __restrict__ segA) {
    u32 g = blockIdx.x * blockDim.x + threadIdx.x;
    if (g >= nseg * nwin) return;
    u32 w = g / nseg, s = g % nseg;
    const XYZZ<F>* B = buckets + (u64)w * nb;
    XYZZ<F> acc = XYZZ<F>::inf(), sum = XYZZ<F>::inf();
    u32 lo = s * L, hi = umin(nb, lo + L);
    for (u32 k = hi; k > lo; k--) {
        add(acc, B[k - 1]);
        add(sum, acc);
    }
    segT[g] = sum;
    segA[g] = acc;
}

// segments() reading the even accumulation's combined pieces directly (no bucket array): saves the
// bucket_sum pass, which wrote and re-read every bucket (4.8 GB at G1 2^26).
template <class F>
__device__ __forceinline__ void segments_even(const XYZZ<F>* __restrict__ partials, const u32* __restrict__ bounds, u32 S,
                                              u32 nb, u32 L, u32 nseg, u32 nwin, XYZZ<F>* __restrict__ segT,
                                              XYZZ<F>* __restrict__ segA) {
    u32 g = blockIdx.x * blockDim.x + threadIdx.x;
    if (g >= nseg * nwin) return;
    u32 w = g / nseg, s = g % nseg;
    XYZZ<F> acc = XYZZ<F>::inf(), sum = XYZZ<F>::inf();
    u32 lo = s * L, hi = umin(nb, lo + L);
    for (u32 k = hi; k > lo; k--) {
        add(acc, bucket_value(partials, bounds, (u64)w * nb + (k - 1), S));
        add(sum, acc);
    }
    segT[g] = sum;
    segA[g] = acc;
}

template <class F, int BLOCK>
__device__ __forceinline__ XYZZ<F> block_reduce(XYZZ<F> v, XYZZ<F>* sh) {
    sh[threadIdx.x] = v;
    __syncthreads();
    for (int stride = BLOCK / 2; stride > 0; stride >>= 1) {
        if (threadIdx.x < stride) {
            XYZZ<F> a = sh[threadIdx.x];
            add(a, sh[threadIdx.x + stride]);
            sh[threadIdx.x] = a;
        }
        __syncthreads();
    }
    XYZZ<F> r = sh[0];
    __syncthreads();
    return r;
}

// Window reduction, level 2. Grid nwin x G blocks; block g of window w covers segments
// [g*BLOCK*K, (g+1)*BLOCK*K), each thread K consecutive ones, and writes the block's
// X_g = sum T_s and Y_g = sum s A_s (absolute segment index s) to partX/partY[w*G + g].
template <class F, int BLOCK>
__device__ __forceinline__ void window_partial(const XYZZ<F>* __restrict__ segT, const XYZZ<F>* __restrict__ segA, u32 nseg,
                                               u32 K, u32 G, XYZZ<F>* __restrict__ partX, XYZZ<F>* __restrict__ partY) {
    __shared__ XYZZ<F> sh[BLOCK];
    u32 w = blockIdx.x / G, g = blockIdx.x % G;
    const XYZZ<F>* T = segT + (u64)w * nseg;
    const XYZZ<F>* A = segA + (u64)w * nseg;
    u32 lo = (g * BLOCK + threadIdx.x) * K, hi = umin(nseg, lo + K);
    XYZZ<F> x = XYZZ<F>::inf(), acc = XYZZ<F>::inf(), sum = XYZZ<F>::inf();
    for (u32 s = hi; s > lo; s--) {
        add(x, T[s - 1]);
        add(acc, A[s - 1]);
        add(sum, acc);
    }
    // sum = sum_s (s - lo + 1) A_s, so sum_s s A_s = sum + (lo - 1) acc
    XYZZ<F> y = sum;
    if (hi > lo) {
        if (lo == 0) {
            XYZZ<F> na = acc;
            negate(na);
            add(y, na);
        } else {
            add(y, mul_small(acc, lo - 1));
        }
    }
    x = block_reduce<F, BLOCK>(x, sh);
    y = block_reduce<F, BLOCK>(y, sh);
    if (threadIdx.x == 0) {
        partX[blockIdx.x] = x;
        partY[blockIdx.x] = y;
    }
}

// Level 3: one block per window: W_w = sum_g X_g + L * sum_g Y_g (L = 2^logL).
template <class F, int BLOCK>
__device__ __forceinline__ void window_final(const XYZZ<F>* __restrict__ partX, const XYZZ<F>* __restrict__ partY, u32 G,
                                             int logL, XYZZ<F>* __restrict__ out) {
    __shared__ XYZZ<F> sh[BLOCK];
    u32 w = blockIdx.x;
    XYZZ<F> x = XYZZ<F>::inf(), y = XYZZ<F>::inf();
    for (u32 g = threadIdx.x; g < G; g += BLOCK) {
        add(x, partX[(u64)w * G + g]);
        add(y, partY[(u64)w * G + g]);
    }
    x = block_reduce<F, BLOCK>(x, sh);
    y = block_reduce<F, BLOCK>(y, sh);
    if (threadIdx.x == 0) {
        for (int i = 0; i < logL; i++) dbl(y);
        add(x, y);
        out[w] = x;
    }
}

// Sum of bases[i] where flags[i] == want (grid-stride, one partial per block)
template <class F, int BLOCK>
__device__ __forceinline__ void masked_sum(const Affine<F>* __restrict__ bases, const unsigned char* __restrict__ flags,
                                           u32 n, unsigned char want, XYZZ<F>* __restrict__ partials) {
    __shared__ XYZZ<F> sh[BLOCK];
    XYZZ<F> acc = XYZZ<F>::inf();
    for (u32 i = blockIdx.x * BLOCK + threadIdx.x; i < n; i += gridDim.x * BLOCK) {
        if (flags[i] == want) madd_inl(acc, bases[i].x, bases[i].y);
    }
    acc = block_reduce<F, BLOCK>(acc, sh);
    if (threadIdx.x == 0) partials[blockIdx.x] = acc;
}

template <class F, int BLOCK>
__device__ __forceinline__ void reduce_points(const XYZZ<F>* __restrict__ in, u32 n, XYZZ<F>* __restrict__ out) {
    __shared__ XYZZ<F> sh[BLOCK];
    XYZZ<F> acc = XYZZ<F>::inf();
    for (u32 i = threadIdx.x; i < n; i += BLOCK) add(acc, in[i]);
    acc = block_reduce<F, BLOCK>(acc, sh);
    if (threadIdx.x == 0) out[blockIdx.x] = acc;
}
