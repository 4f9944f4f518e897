// MSM stage 2: bucket accumulation, mixed additions of the bucket-sorted affine points (msm_sort.cuh)
// into XYZZ partials. Two forms (host switch GpuConfig.msm_acc):
//   even   (default) thread t adds the S consecutive entries [t*S, (t+1)*S) of the sorted list across
//          bucket boundaries; a bucket's pieces are then combined by a parallel tree (combine_pieces)
//   items  one thread per work item of <= S entries of one bucket; bucket_sum adds a bucket's items
#pragma once
#include "ec.cuh"
#include "msm_sort.cuh"

template <class F>
__device__ __forceinline__ void accumulate(const Affine<F>* __restrict__ bases, const u32* __restrict__ entries,
                                           const u32* __restrict__ item_start, const u32* __restrict__ item_len,
                                           u32 nitems, XYZZ<F>* __restrict__ partials) {
    u32 t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= nitems) return;
    u32 start = item_start[t], len = item_len[t];
    XYZZ<F> acc = XYZZ<F>::inf();
    for (u32 k = 0; k < len; k++) {
        u32 e = entries[start + k];
        Affine<F> p = bases[e & ~SIGN_BIT];
        F y = (e & SIGN_BIT) ? fneg(p.y) : p.y;
        madd_inl(acc, p.x, y);
    }
    partials[t] = acc;
}

template <class F>
__device__ __forceinline__ void bucket_sum(const XYZZ<F>* __restrict__ partials, const u32* __restrict__ item_offsets,
                                           u32 nbuckets, XYZZ<F>* __restrict__ buckets) {
    u32 b = blockIdx.x * blockDim.x + threadIdx.x;
    if (b >= nbuckets) return;
    u32 lo = item_offsets[b], hi = item_offsets[b + 1];
    XYZZ<F> acc = XYZZ<F>::inf();
    if (hi > lo) acc = partials[lo];
    for (u32 t = lo + 1; t < hi; t++) add(acc, partials[t]);
    buckets[b] = acc;
}

// Balanced accumulation ("even"): thread t adds the entries [t*S, (t+1)*S) of the bucket-sorted list
// whatever buckets they belong to, so every thread of a warp does the same number of additions. (One
// thread per bucket, above, keeps a warp waiting for its most crowded bucket: with Poisson(32) bucket
// sizes the busiest of 32 holds ~44 entries, so ~73% of the lanes do useful work.)
// The piece of bucket b that thread t covers goes to partials[b + t]: walking the entries in order, each
// new piece starts at a bucket boundary (b + 1) or a thread boundary (t + 1), so the slots of different
// pieces never collide, and bucket b's pieces are t in [bounds[b] / S, (bounds[b+1] - 1) / S].
// bounds: the bucket start offsets with the entry count appended (total + 1 values).

// The bucket holding entry lo: bounds[a] <= lo < bounds[z] throughout (bounds[total] = n_entries > lo)
__device__ __forceinline__ u32 bucket_of(const u32* __restrict__ bounds, u32 total, u32 lo) {
    u32 a = 0, z = total;
    while (z - a > 1) {
        u32 m = (a + z) >> 1;
        if (bounds[m] <= lo)
            a = m;
        else
            z = m;
    }
    return a;
}

template <class F>
__device__ __forceinline__ void accumulate_even(const Affine<F>* __restrict__ bases, const u32* __restrict__ entries,
                                                const u32* __restrict__ bounds, u32 total, u32 n_entries, u32 S,
                                                XYZZ<F>* __restrict__ partials, u32* __restrict__ first_bucket) {
    u32 t = blockIdx.x * blockDim.x + threadIdx.x;
    u64 lo64 = (u64)t * S;
    if (lo64 >= n_entries) return;
    u32 lo = (u32)lo64, hi = lo64 + S < n_entries ? (u32)(lo64 + S) : n_entries;
    u32 b = bucket_of(bounds, total, lo), end = bounds[b + 1];
    first_bucket[t] = b;
    XYZZ<F> acc = XYZZ<F>::inf();
    for (u32 j = lo; j < hi; j++) {
        u32 e = entries[j];
        Affine<F> p = bases[e & ~SIGN_BIT];
        if (j == end) {  // the previous bucket ends here: store its piece, skip empty buckets
            partials[(u64)b + t] = acc;
            acc = XYZZ<F>::inf();
            do {
                b++;
                end = bounds[b + 1];
            } while (end <= j);
        }
        F y = (e & SIGN_BIT) ? fneg(p.y) : p.y;
        madd_inl(acc, p.x, y);
    }
    partials[(u64)b + t] = acc;
}

// Pieces of one bucket combined by a tree over rounds step = 1, 2, 4, ... (a crowded bucket, e.g. in a
// short top window, has thousands of pieces: summing them in one thread took seconds). Bucket b's pieces
// are the slots b + t, t in [t0, t1]; thread t (t > t0, so first_bucket[t] = b) is the right element of
// the pair (t - step, t) when (t - t0) = step mod 2 step and adds its slot into the left one. After the
// rounds, slot b + t0 holds the bucket.
template <class F>
__device__ __forceinline__ void combine_pieces(XYZZ<F>* __restrict__ partials, const u32* __restrict__ bounds,
                                               const u32* __restrict__ first_bucket, u32 nthreads, u32 S, u32 step) {
    u32 t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= nthreads) return;
    u32 b = first_bucket[t];
    u32 t0 = bounds[b] / S;
    if (t == t0 || (t - t0) % (2 * step) != step) return;
    XYZZ<F> left = partials[(u64)b + t - step];
    add(left, partials[(u64)b + t]);
    partials[(u64)b + t - step] = left;
}

// the bucket's value after combine_pieces (infinity for an empty bucket)
template <class F>
__device__ __forceinline__ XYZZ<F> bucket_value(const XYZZ<F>* __restrict__ partials, const u32* __restrict__ bounds,
                                                u64 b, u32 S) {
    u32 e0 = bounds[b], e1 = bounds[b + 1];
    return e1 > e0 ? partials[b + e0 / S] : XYZZ<F>::inf();
}
