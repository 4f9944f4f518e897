// Precomputed multiples of fixed MSM bases (the resident SRS), G1: the table and its sort.
//
// A table of k copies for window c holds copy j = 2^(c j) P_i in rows j n .. j n + n - 1 (copy 0 = the
// bases themselves). Window w of a scalar's signed digits then adds +-copy (w mod k) of P_i into bucket
// set (w div k): ceil(W / k) bucket sets instead of W, so the bucket reduction runs ceil(W / k) times
// instead of W, and a larger window (fewer windows, fewer additions per point) pays off. The rest of the
// pipeline is the msm module's (accumulate_even, combine_pieces, segments_even, window_*), reading the
// table's rows through the sorted entries: the index of an entry is (w mod k) n + offset + i.
//
//   table_count     signed digits, histogram over (bucket set, bucket)
//   table_scatter   the counting sort's scatter of (row | sign << 31)
//   g1_table_double one thread per point: 2^c P as XYZZ (c doublings from the affine point)
//   g1_table_affine one thread per run of TABLE_RUN points: XYZZ -> affine with one inversion per run
//                   (Montgomery's trick over the runs' ZZZ: 1/ZZZ, and 1/ZZ = (ZZ / ZZZ)^2)
#define CUZK_FQ_OUTLINE 1
#include "ec.cuh"
#include "msm_sort.cuh"

#define TABLE_RUN 16

extern "C" __global__ void table_count(const Fr* __restrict__ scalars, const unsigned char* __restrict__ flags, u32 n,
                                       int c, int nwin, int k, u32* __restrict__ counts) {
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n || flags[i] != 2) return;
    const u64 nb = 1u << (c - 1);
    for_each_digit(from_mont<FrTag>(load<FrTag>(scalars + i)), c, nwin,
                   [&](int w, u32 v, bool) { atomicAdd(&counts[(w / k) * nb + (v - 1)], 1u); });
}

extern "C" __global__ void table_scatter(const Fr* __restrict__ scalars, const unsigned char* __restrict__ flags, u32 n,
                                         int c, int nwin, int k, u32 stride, u32 offset, u32* __restrict__ cursor,
                                         u32* __restrict__ entries) {
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n || flags[i] != 2) return;
    const u64 nb = 1u << (c - 1);
    for_each_digit(from_mont<FrTag>(load<FrTag>(scalars + i)), c, nwin, [&](int w, u32 v, bool negative) {
        u32 pos = atomicAdd(&cursor[(w / k) * nb + (v - 1)], 1u);
        entries[pos] = ((u32)(w % k) * stride + offset + i) | (negative ? SIGN_BIT : 0u);
    });
}

// out[i] = 2^c src[i] (c >= 1); infinity stays infinity (no point of a prime-order group of odd order
// doubles into it otherwise)
extern "C" __global__ void g1_table_double(const G1Affine* __restrict__ src, u32 n, int c, G1XYZZ* __restrict__ out) {
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    G1Affine a = src[i];
    if (a.is_inf()) {
        out[i] = G1XYZZ::inf();
        return;
    }
    G1XYZZ p = dbl_affine(a.x, a.y);
    for (int d = 1; d < c; d++) dbl(p);
    out[i] = p;
}

// dst[i] = affine(in[i]) for the run [t TABLE_RUN, (t + 1) TABLE_RUN): prefix products of the finite
// points' ZZZ, one inversion, then back to front
extern "C" __global__ void g1_table_affine(const G1XYZZ* __restrict__ in, u32 n, G1Affine* __restrict__ dst) {
    u32 t = blockIdx.x * blockDim.x + threadIdx.x;
    u64 lo = (u64)t * TABLE_RUN;
    if (lo >= n) return;
    u32 hi = lo + TABLE_RUN < n ? (u32)(lo + TABLE_RUN) : n;
    Fq pref[TABLE_RUN];
    Fq acc = Fq::one();
    for (u32 j = (u32)lo; j < hi; j++) {
        pref[j - lo] = acc;
        if (!in[j].is_inf()) acc = fmul(acc, in[j].ZZZ);
    }
    Fq inv = finv(acc);  // 1 / (product of the run's finite ZZZ)
    for (u32 j = hi; j-- > (u32)lo;) {
        G1XYZZ p = in[j];
        if (p.is_inf()) {
            dst[j] = {Fq::zero(), Fq::zero()};
            continue;
        }
        Fq izzz = fmul(inv, pref[j - lo]);  // 1 / ZZZ_j
        inv = fmul(inv, p.ZZZ);
        Fq iz = fmul(p.ZZ, izzz);  // 1 / Z
        dst[j] = {fmul(p.X, fsqr(iz)), fmul(p.Y, izzz)};
    }
}
