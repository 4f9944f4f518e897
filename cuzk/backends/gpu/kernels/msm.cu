// Pippenger multi-scalar multiplication on the GPU, G1 and G2: the module's entry points.
//
// Pipeline (one MSM, window c bits, W windows, B = 2^(c-1) buckets per window, signed digits):
//   msm_classify  per scalar: from Montgomery, classify (0 / 1 / other), count and max bit length
//   msm_count     signed-digit recoding of the "other" scalars, atomic histogram of (window, bucket)
//   (host)        exclusive scan of the histogram -> bucket offsets; work items of <= S entries each
//   msm_scatter   recode again, scatter point index | sign<<31 into its bucket's slot (counting sort)
//   *_accumulate  one thread per work item: mixed additions of its affine points into an XYZZ partial
//                 (*_accumulate_even: S consecutive entries per thread across bucket boundaries)
//   *_bucket_sum  one thread per bucket: add its partials
//   *_segments    one thread per (window, segment of L buckets): running sums -> (T_s, A_s)
//   *_window_*    per window: W_w = sum_s T_s + L * sum_s s * A_s (partials over many blocks, then one)
//   (host)        sum_w 2^(c w) W_w as a small CPU MSM, plus the sum of the 1-scalar points
//   *_masked_sum, *_reduce  bases whose scalar is exactly 1 summed apart (the 0/1 fast path's "masked"
//                 form; "compact" runs *_accumulate_even over their indices as one bucket)
// The stages live in msm_sort.cuh, msm_accumulate.cuh and msm_reduce.cuh.
//
// The curve code's field multiplies are calls to one out-of-line Fq multiply (CUZK_FQ_OUTLINE,
// fields.cuh): this module's form since 2026-12-03 (G1 2^26 966 -> 767 ms, G2 2^24 1068 -> 740 ms, 0/1
// 2^26 40.7 -> 30.6 ms on the H200, run s4-2). Must be set before the first include.
#define CUZK_FQ_OUTLINE 1
#include "msm_reduce.cuh"

// Minimum resident blocks per SM for the accumulation kernels (a register cap: more warps in flight
// to hide the latency of the multiply chains, at the risk of spills). 0 = let ptxas decide. A user
// switch at compile time: GpuConfig.acc_minb / acc2_minb (config.py) pass it as a #define when they
// differ from these defaults, which the config's defaults must equal (tests/test_gpu_config.py).
// Measured on the H200 (G1 MSM 2^22): 0 -> 129 ms, 3 -> 94.5 ms, 4 -> 97.3 ms; 3 is the default.
#ifndef CUZK_ACC_MINB
#define CUZK_ACC_MINB 3
#endif
#if CUZK_ACC_MINB
#define ACC_BOUNDS_G1 __launch_bounds__(128, CUZK_ACC_MINB)
#else
#define ACC_BOUNDS_G1
#endif
// G2's accumulator is twice as large: its own knob. 2 (up to 255 registers, fewer spills, 8 warps per
// SM): G2 2^24 736 -> 662 ms against 3 (run s5-3, one process); G1 keeps 3 (4: G1 -1.6%, G2 +3.5%).
#ifndef CUZK_ACC2_MINB
#define CUZK_ACC2_MINB 2
#endif
#if CUZK_ACC2_MINB
#define ACC_BOUNDS_G2 __launch_bounds__(128, CUZK_ACC2_MINB)
#else
#define ACC_BOUNDS_G2
#endif

extern "C" __global__ void msm_classify(const Fr* __restrict__ scalars, u32 n, int ones_path,
                                        unsigned char* __restrict__ flags, u32* __restrict__ stats) {
    classify(scalars, n, ones_path, flags, stats);
}
extern "C" __global__ void msm_count(const Fr* __restrict__ scalars, const unsigned char* __restrict__ flags, u32 n,
                                     int c, int nwin, u32* __restrict__ counts) {
    count_digits(scalars, flags, n, c, nwin, counts);
}
extern "C" __global__ void msm_scatter(const Fr* __restrict__ scalars, const unsigned char* __restrict__ flags, u32 n,
                                       int c, int nwin, u32* __restrict__ cursor, u32* __restrict__ entries) {
    scatter_digits(scalars, flags, n, c, nwin, cursor, entries);
}
extern "C" __global__ void msm_make_items(const u32* __restrict__ counts, const u32* __restrict__ offsets,
                                          const u32* __restrict__ item_offsets, u32 nbuckets, u32 S,
                                          u32* __restrict__ item_start, u32* __restrict__ item_len) {
    make_items(counts, offsets, item_offsets, nbuckets, S, item_start, item_len);
}

// ------------------------------------------------------------------------------------------------
// entry points, one set per group; G2 uses smaller blocks for its 2x larger points in shared memory

#define MSM_ENTRY_POINTS(G, F, RBLOCK, BOUNDS)                                                                          \
    extern "C" __global__ void BOUNDS G##_accumulate(const Affine<F>* bases, const u32* entries, const u32* item_start, \
                                                     const u32* item_len, u32 nitems, XYZZ<F>* partials) {            \
        accumulate<F>(bases, entries, item_start, item_len, nitems, partials);                                         \
    }                                                                                                                   \
    extern "C" __global__ void G##_bucket_sum(const XYZZ<F>* partials, const u32* item_offsets, u32 nbuckets,          \
                                              XYZZ<F>* buckets) {                                                      \
        bucket_sum<F>(partials, item_offsets, nbuckets, buckets);                                                       \
    }                                                                                                                   \
    extern "C" __global__ void BOUNDS G##_accumulate_even(const Affine<F>* bases, const u32* entries, const u32* bounds, \
                                                          u32 total, u32 n_entries, u32 S, XYZZ<F>* partials,         \
                                                          u32* first_bucket) {                                        \
        accumulate_even<F>(bases, entries, bounds, total, n_entries, S, partials, first_bucket);                       \
    }                                                                                                                   \
    extern "C" __global__ void G##_combine_pieces(XYZZ<F>* partials, const u32* bounds, const u32* first_bucket,        \
                                                  u32 nthreads, u32 S, u32 step) {                                     \
        combine_pieces<F>(partials, bounds, first_bucket, nthreads, S, step);                                          \
    }                                                                                                                   \
    extern "C" __global__ void G##_segments(const XYZZ<F>* buckets, u32 nb, u32 L, u32 nseg, u32 nwin, XYZZ<F>* segT,  \
                                            XYZZ<F>* segA) {                                                           \
        segments<F>(buckets, nb, L, nseg, nwin, segT, segA);                                                            \
    }                                                                                                                   \
    extern "C" __global__ void G##_segments_even(const XYZZ<F>* partials, const u32* bounds, u32 S, u32 nb, u32 L,     \
                                                 u32 nseg, u32 nwin, XYZZ<F>* segT, XYZZ<F>* segA) {                  \
        segments_even<F>(partials, bounds, S, nb, L, nseg, nwin, segT, segA);                                           \
    }                                                                                                                   \
    extern "C" __global__ void G##_window_partial(const XYZZ<F>* segT, const XYZZ<F>* segA, u32 nseg, u32 K, u32 G_,   \
                                                  XYZZ<F>* partX, XYZZ<F>* partY) {                                    \
        window_partial<F, RBLOCK>(segT, segA, nseg, K, G_, partX, partY);                                               \
    }                                                                                                                   \
    extern "C" __global__ void G##_window_final(const XYZZ<F>* partX, const XYZZ<F>* partY, u32 G_, int logL,          \
                                                XYZZ<F>* out) {                                                        \
        window_final<F, RBLOCK>(partX, partY, G_, logL, out);                                                           \
    }                                                                                                                   \
    extern "C" __global__ void BOUNDS G##_masked_sum(const Affine<F>* bases, const unsigned char* flags, u32 n,         \
                                                     unsigned char want, XYZZ<F>* partials) {                         \
        masked_sum<F, RBLOCK>(bases, flags, n, want, partials);                                                         \
    }                                                                                                                   \
    extern "C" __global__ void G##_reduce(const XYZZ<F>* in, u32 n, XYZZ<F>* out) { reduce_points<F, RBLOCK>(in, n, out); }

MSM_ENTRY_POINTS(g1, Fq, 128, ACC_BOUNDS_G1)
MSM_ENTRY_POINTS(g2, Fq2, 64, ACC_BOUNDS_G2)
