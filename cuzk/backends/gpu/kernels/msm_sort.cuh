// MSM stage 1: scalars -> signed digits -> a counting sort of (point index, sign) into buckets.
//
//   classify    per scalar: from Montgomery, classify (0 / 1 / other), count and max bit length
//   count       signed-digit recoding of the "other" scalars, atomic histogram of (window, bucket)
//   (host)      exclusive scan of the histogram -> bucket offsets
//   scatter     recode again, scatter point index | sign << 31 into its bucket's slot
//   make_items  (the "items" accumulation only) work items of <= S entries per bucket
// Scalars are canonical Fr values of CUZK_FR_LIMBS limbs after from_mont; windows are c <= 31 bits.
#pragma once
#include "fields.cuh"

#define SIGN_BIT 0x80000000u

__device__ __forceinline__ bool fr_is_canonical_one(const Fr& s) {
    u32 acc = s.v[0] ^ 1u;
#pragma unroll
    for (int i = 1; i < FrTag::N; i++) acc |= s.v[i];
    return acc == 0;
}

// c-bit window of a canonical scalar starting at bit `pos` (c <= 31)
__device__ __forceinline__ u32 window_bits(const Fr& s, int pos, int c) {
    int limb = pos >> 5, off = pos & 31;
    u32 lo = 0, hi = 0;
#pragma unroll
    for (int k = 0; k < FrTag::N; k++) {
        lo = (k == limb) ? s.v[k] : lo;
        hi = (k == limb + 1) ? s.v[k] : hi;
    }
    u64 w = ((u64)hi << 32) | lo;
    return (u32)(w >> off) & ((1u << c) - 1u);
}

__device__ __forceinline__ u32 fr_bitlen(const Fr& s) {
    u32 bits = 0;
#pragma unroll
    for (int k = 0; k < FrTag::N; k++)
        if (s.v[k]) bits = 32 * k + 32 - __clz(s.v[k]);
    return bits;
}

// flags[i]: 0 zero scalar, 1 scalar one (only when ones_path), 2 other; stats[0] = number of "other"
// scalars, stats[1] = their largest bit length (chooses the window and the window count)
__device__ __forceinline__ void classify(const Fr* __restrict__ scalars, u32 n, int ones_path, unsigned char* __restrict__ flags,
                                         u32* __restrict__ stats) {
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    u32 other = 0, bits = 0;
    if (i < n) {
        Fr s = from_mont<FrTag>(load<FrTag>(scalars + i));
        unsigned char f = 2;
        if (s.is_zero())
            f = 0;
        else if (ones_path && fr_is_canonical_one(s))
            f = 1;
        flags[i] = f;
        if (f == 2) {
            other = 1;
            bits = fr_bitlen(s);
        }
    }
    // warp-aggregated atomics: one per warp instead of one per thread
    other = __reduce_add_sync(0xffffffffu, other);
    bits = __reduce_max_sync(0xffffffffu, bits);
    if ((threadIdx.x & 31) == 0) {
        if (other) atomicAdd(&stats[0], other);
        if (bits) atomicMax(&stats[1], bits);
    }
}

// Signed-digit recoding of a canonical scalar: calls f(window, magnitude, negative) for each non-zero
// digit; digits are in [-2^(c-1), 2^(c-1)], a window above 2^(c-1) borrows from the next one.
template <class Fn>
__device__ __forceinline__ void for_each_digit(const Fr& s, int c, int nwin, Fn f) {
    const u32 half = 1u << (c - 1);
    u32 carry = 0;
    for (int w = 0; w < nwin; w++) {
        u32 v = window_bits(s, w * c, c) + carry;
        carry = v > half;
        if (carry) v = (1u << c) - v;
        if (v) f(w, v, carry != 0);
    }
}

__device__ __forceinline__ void count_digits(const Fr* __restrict__ scalars, const unsigned char* __restrict__ flags, u32 n, int c,
                                             int nwin, u32* __restrict__ counts) {
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n || flags[i] != 2) return;
    const u64 nb = 1u << (c - 1);
    for_each_digit(from_mont<FrTag>(load<FrTag>(scalars + i)), c, nwin,
                   [&](int w, u32 v, bool) { atomicAdd(&counts[w * nb + (v - 1)], 1u); });
}

__device__ __forceinline__ void scatter_digits(const Fr* __restrict__ scalars, const unsigned char* __restrict__ flags, u32 n,
                                               int c, int nwin, u32* __restrict__ cursor, u32* __restrict__ entries) {
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n || flags[i] != 2) return;
    const u64 nb = 1u << (c - 1);
    for_each_digit(from_mont<FrTag>(load<FrTag>(scalars + i)), c, nwin, [&](int w, u32 v, bool negative) {
        u32 pos = atomicAdd(&cursor[w * nb + (v - 1)], 1u);
        entries[pos] = i | (negative ? SIGN_BIT : 0u);
    });
}

// Work items: bucket b with cnt entries gets ceil(cnt / S) items of <= S entries.
__device__ __forceinline__ void make_items(const u32* __restrict__ counts, const u32* __restrict__ offsets,
                                           const u32* __restrict__ item_offsets, u32 nbuckets, u32 S,
                                           u32* __restrict__ item_start, u32* __restrict__ item_len) {
    u32 b = blockIdx.x * blockDim.x + threadIdx.x;
    if (b >= nbuckets) return;
    u32 cnt = counts[b], off = offsets[b], it = item_offsets[b];
    for (u32 k = 0; k * S < cnt; k++) {
        item_start[it + k] = off + k * S;
        item_len[it + k] = umin(S, cnt - k * S);
    }
}
