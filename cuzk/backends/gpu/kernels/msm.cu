// Pippenger multi-scalar multiplication on the GPU, G1 and G2.
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
//   (host)        sum_w 2^(c w) W_w as a small arkworks MSM, plus the sum of the 1-scalar points
//   *_ones        bases whose scalar is exactly 1 summed by a parallel reduction (the 0/1 fast path)
// The curve code's field multiplies as calls to one out-of-line Fq multiply (field.cuh, CUZK_FQ_CALL):
// the default for this module since 2026-12-03 (G1 2^26 966 -> 767 ms, G2 2^24 1068 -> 740 ms, 0/1 2^26
// 40.7 -> 30.6 ms on the H200, run s4-2); CUZK_FQ_CALL=0 builds the fully inlined form.
#ifndef CUZK_FQ_CALL
#define CUZK_FQ_CALL 2
#endif
#include "curve.cuh"

#define SIGN_BIT 0x80000000u

// Minimum resident blocks per SM for the accumulation kernels (a register cap: more warps in flight
// to hide the latency of the multiply chains, at the risk of spills). 0 = let ptxas decide.
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

__device__ __forceinline__ bool fr_is_canonical_one(const Fr& s) {
    u32 acc = s.v[0] ^ 1u;
#pragma unroll
    for (int i = 1; i < 8; i++) acc |= s.v[i];
    return acc == 0;
}

// c-bit window of a canonical scalar starting at bit `pos` (c <= 31)
__device__ __forceinline__ u32 window_bits(const Fr& s, int pos, int c) {
    int limb = pos >> 5, off = pos & 31;
    u32 lo = 0, hi = 0;
#pragma unroll
    for (int k = 0; k < 8; k++) {
        lo = (k == limb) ? s.v[k] : lo;
        hi = (k == limb + 1) ? s.v[k] : hi;
    }
    u64 w = ((u64)hi << 32) | lo;
    return (u32)(w >> off) & ((1u << c) - 1u);
}

__device__ __forceinline__ u32 fr_bitlen(const Fr& s) {
    u32 bits = 0;
#pragma unroll
    for (int k = 0; k < 8; k++)
        if (s.v[k]) bits = 32 * k + 32 - __clz(s.v[k]);
    return bits;
}

// flags[i]: 0 zero scalar, 1 scalar one (only when ones_path), 2 other; stats[0] = number of "other"
// scalars, stats[1] = their largest bit length (chooses the window and the window count)
extern "C" __global__ void msm_classify(const Fr* __restrict__ scalars, u32 n, int ones_path,
                                        unsigned char* __restrict__ flags, u32* __restrict__ stats) {
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

extern "C" __global__ void msm_count(const Fr* __restrict__ scalars, const unsigned char* __restrict__ flags, u32 n,
                                     int c, int nwin, u32* __restrict__ counts) {
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n || flags[i] != 2) return;
    const u64 nb = 1u << (c - 1);
    for_each_digit(from_mont<FrTag>(load<FrTag>(scalars + i)), c, nwin,
                   [&](int w, u32 v, bool) { atomicAdd(&counts[w * nb + (v - 1)], 1u); });
}

extern "C" __global__ void msm_scatter(const Fr* __restrict__ scalars, const unsigned char* __restrict__ flags, u32 n,
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
extern "C" __global__ void msm_make_items(const u32* __restrict__ counts, const u32* __restrict__ offsets,
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

// Balanced accumulation ("even"): thread t adds the entries [t*S, (t+1)*S) of the bucket-sorted list
// whatever buckets they belong to, so every thread of a warp does the same number of additions. (One
// thread per bucket, above, keeps a warp waiting for its most crowded bucket: with Poisson(32) bucket
// sizes the busiest of 32 holds ~44 entries, so ~73% of the lanes do useful work.)
// The piece of bucket b that thread t covers goes to partials[b + t]: walking the entries in order, each
// new piece starts at a bucket boundary (b + 1) or a thread boundary (t + 1), so the slots of different
// pieces never collide, and bucket b's pieces are t in [bounds[b] / S, (bounds[b+1] - 1) / S].
// bounds: the bucket start offsets with the entry count appended (total + 1 values).
// CUZK_ACC_PREFETCH=1 loads the next entry's point before adding the current one (latency hiding, at
// the cost of 24 more live registers).
#ifndef CUZK_ACC_PREFETCH
#define CUZK_ACC_PREFETCH 0
#endif
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

#ifndef CUZK_ACC_ILP
#define CUZK_ACC_ILP 1
#endif

#if CUZK_ACC_ILP == 1
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
#if CUZK_ACC_PREFETCH
    u32 e = entries[lo];
    Affine<F> p = bases[e & ~SIGN_BIT];
#endif
    for (u32 j = lo; j < hi; j++) {
#if CUZK_ACC_PREFETCH
        u32 e_next = entries[umin(j + 1, hi - 1)];
        Affine<F> p_next = bases[e_next & ~SIGN_BIT];
#else
        u32 e = entries[j];
        Affine<F> p = bases[e & ~SIGN_BIT];
#endif
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
#if CUZK_ACC_PREFETCH
        e = e_next;
        p = p_next;
#endif
    }
    partials[(u64)b + t] = acc;
}
#else
// CUZK_ACC_ILP=2: each thread runs the ranges of two virtual threads v = 2t and 2t + 1 side by side (the
// same slots and first_bucket entries as two threads of the one-range kernel; the host launches half
// as many threads), so the scheduler can interleave two independent addition chains. This helps if
// the multiply's carry chains are latency-bound at the occupancy the register cap allows.
template <class F>
struct EvenRange {
    u32 j, hi, b, end, v;
    XYZZ<F> acc;
    __device__ __forceinline__ void open(const u32* __restrict__ bounds, u32 total, u32 n_entries, u32 S, u32 virt,
                                         u32* __restrict__ first_bucket) {
        u64 lo64 = (u64)virt * S;
        v = virt;
        j = lo64 < n_entries ? (u32)lo64 : n_entries;
        hi = lo64 + S < n_entries ? (u32)(lo64 + S) : n_entries;
        acc = XYZZ<F>::inf();
        if (j < hi) {
            b = bucket_of(bounds, total, j);
            end = bounds[b + 1];
            first_bucket[v] = b;
        }
    }
    // before adding entry j: close the bucket that ends here (storing its piece) and skip empty ones
    __device__ __forceinline__ void boundary(const u32* __restrict__ bounds, XYZZ<F>* __restrict__ partials) {
        if (j == end) {
            partials[(u64)b + v] = acc;
            acc = XYZZ<F>::inf();
            do {
                b++;
                end = bounds[b + 1];
            } while (end <= j);
        }
    }
    __device__ __forceinline__ void add(const Affine<F>* __restrict__ bases, const u32* __restrict__ entries) {
        u32 e = entries[j];
        Affine<F> p = bases[e & ~SIGN_BIT];
        F y = (e & SIGN_BIT) ? fneg(p.y) : p.y;
        madd_inl(acc, p.x, y);
        j++;
    }
};

template <class F>
__device__ __forceinline__ void accumulate_even(const Affine<F>* __restrict__ bases, const u32* __restrict__ entries,
                                                const u32* __restrict__ bounds, u32 total, u32 n_entries, u32 S,
                                                XYZZ<F>* __restrict__ partials, u32* __restrict__ first_bucket) {
    u32 t = blockIdx.x * blockDim.x + threadIdx.x;
    if ((u64)2 * t * S >= n_entries) return;
    EvenRange<F> r0, r1;
    r0.open(bounds, total, n_entries, S, 2 * t, first_bucket);
    r1.open(bounds, total, n_entries, S, 2 * t + 1, first_bucket);
    // r1's range is never longer than r0's: both full, or r1 the shorter (possibly empty) last one
    u32 both = r1.hi - r1.j;
    for (u32 k = 0; k < both; k++) {
        r0.boundary(bounds, partials);
        r1.boundary(bounds, partials);
        r0.add(bases, entries);  // two independent chains in one basic block
        r1.add(bases, entries);
    }
    while (r0.j < r0.hi) {
        r0.boundary(bounds, partials);
        r0.add(bases, entries);
    }
    partials[(u64)r0.b + r0.v] = r0.acc;
    if (both) partials[(u64)r1.b + r1.v] = r1.acc;
}
#endif

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

// ------------------------------------------------------------------------------------------------
// Batch-affine rounds (CUZK_MSM_ACC=affine): before the even accumulation, each round adds the entries
// of every bucket in consecutive pairs as affine points, so a bucket of n entries becomes ceil(n / 2)
// points. An affine addition needs 1 / (x2 - x1); a thread's K additions share one inversion
// (Montgomery's trick: prefix products forward, one inversion, unwind backward), which makes an
// addition 5M + 1S plus 1/K of an inversion, against the XYZZ mixed addition's 8M + 2S.
// Thread t produces the output points [t*K, (t+1)*K) of the round; output o of bucket b (outputs
// out_bounds[b]..) adds its inputs i = in_bounds[b] + 2 (o - out_bounds[b]) and i + 1 (when i + 1 is still
// in the bucket; otherwise it copies i). Round 0 reads bases[entries[i]] with the entry's sign, later
// rounds the previous round's points. The point at infinity stays (0, 0) throughout.
#ifndef CUZK_AFFINE_KMAX
#define CUZK_AFFINE_KMAX 128
#endif
#ifndef CUZK_AFFINE_BACK_PREFETCH
#define CUZK_AFFINE_BACK_PREFETCH 0
#endif

// a^(p-2) with 4-bit windows and the dedicated square: ~381 S + 110 M (the generic inverse() above
// spends ~381 + 190 M); its cost is shared by the K additions of a thread, so it matters at small K.
template <class T>
__device__ __noinline__ Elem<T> inverse_windowed(OUTLINE_ARG(Elem<T>) a) {
    Elem<T> table[16];
    table[0] = Elem<T>::one();
    table[1] = a;
#pragma unroll 1
    for (int i = 2; i < 16; i++) table[i] = mul<T>(table[i - 1], a);
    Elem<T> r = Elem<T>::one();
#pragma unroll 1
    for (int i = T::N - 1; i >= 0; i--) {
        u32 e = 0;
#pragma unroll
        for (int k = 0; k < T::N; k++) e = (k == i) ? T::PM2(k) : e;
#pragma unroll 1
        for (int k = 28; k >= 0; k -= 4) {
            r = sqr<T>(sqr<T>(sqr<T>(sqr<T>(r))));
            u32 nib = (e >> k) & 15u;
            if (nib) r = mul<T>(r, table[nib]);
        }
    }
    return r;
}

__device__ __forceinline__ Fq batch_inverse(const Fq& a) { return inverse_windowed<FqTag>(a); }
template <class E>  // Fq2 or Fq2i: (a0 + a1 u)^-1 = (a0 - a1 u) / (a0^2 + a1^2)
__device__ __forceinline__ E batch_inverse(const E& a) {
    Fq t = inverse_windowed<FqTag>(add<FqTag>(sqr<FqTag>(a.c0), sqr<FqTag>(a.c1)));
    return {mul<FqTag>(a.c0, t), neg<FqTag>(mul<FqTag>(a.c1, t))};
}

// Input point i of a round
template <class F, bool GATHER>
__device__ __forceinline__ Affine<F> round_input(const Affine<F>* __restrict__ src, const u32* __restrict__ entries, u32 i) {
    if (GATHER) {
        u32 e = entries[i];
        Affine<F> p = src[e & ~SIGN_BIT];
        if (e & SIGN_BIT) p.y = fneg(p.y);  // -(0, 0) stays (0, 0)
        return p;
    }
    return src[i];
}

// How output (p + q) is made: copy p (no partner, or q at infinity), copy q (p at infinity), infinity
// (q = -p, or p of order 2), an addition or a doubling through the batch (den = the inverted term).
enum PairKind { PAIR_COPY_P, PAIR_COPY_Q, PAIR_INF, PAIR_ADD, PAIR_DBL };

template <class F>
__device__ __forceinline__ int pair_kind(const Affine<F>& p, const Affine<F>& q, bool paired, F& den) {
    if (!paired || q.is_inf()) return PAIR_COPY_P;
    if (p.is_inf()) return PAIR_COPY_Q;
    if (p.x == q.x) {
        if (!(p.y == q.y) || p.y.is_zero()) return PAIR_INF;
        den = fadd(p.y, p.y);
        return PAIR_DBL;
    }
    den = fsub(q.x, p.x);
    return PAIR_ADD;
}

// Walks the buckets of a thread's outputs (forward or backward); o must stay inside [0, m_out).
struct RoundCursor {
    u32 b, ob, oe, ib, ie;
    __device__ __forceinline__ void load(const u32* __restrict__ in_bounds, const u32* __restrict__ out_bounds, u32 bucket) {
        b = bucket;
        ob = out_bounds[b];
        oe = out_bounds[b + 1];
        ib = in_bounds[b];
        ie = in_bounds[b + 1];
    }
    __device__ __forceinline__ void seek(const u32* __restrict__ in_bounds, const u32* __restrict__ out_bounds, u32 o) {
        while (o >= oe) load(in_bounds, out_bounds, b + 1);
        while (o < ob) load(in_bounds, out_bounds, b - 1);
    }
    __device__ __forceinline__ u32 input(u32 o) const { return ib + 2 * (o - ob); }
};

// x of input point i (the forward pass needs only the x coordinates, except in the rare cases below)
template <class F, bool GATHER>
__device__ __forceinline__ F round_input_x(const Affine<F>* __restrict__ src, const u32* __restrict__ entries, u32 i) {
    return GATHER ? src[entries[i] & ~SIGN_BIT].x : src[i].x;
}

// The forward pass's term for output o: den as in pair_kind, from the x coordinates alone unless an x is
// 0 (a point at infinity has x = 0) or the two are equal (doubling or p = -q), which load the points.
template <class F, bool GATHER>
__device__ __forceinline__ bool forward_term(const Affine<F>* __restrict__ src, const u32* __restrict__ entries, u32 i,
                                             bool paired, const F& px, const F& qx, F& den) {
    if (!paired) return false;
    if (px.is_zero() || qx.is_zero() || px == qx) {
        Affine<F> p = round_input<F, GATHER>(src, entries, i), q = round_input<F, GATHER>(src, entries, i + 1);
        return pair_kind(p, q, true, den) >= PAIR_ADD;
    }
    den = fsub(qx, px);
    return true;
}

template <class F, bool GATHER>
__device__ __forceinline__ void affine_round(const Affine<F>* __restrict__ src, const u32* __restrict__ entries,
                                             const u32* __restrict__ in_bounds, const u32* __restrict__ out_bounds,
                                             u32 total, u32 m_out, u32 K, Affine<F>* __restrict__ dst) {
    u32 t = blockIdx.x * blockDim.x + threadIdx.x;
    u64 lo64 = (u64)t * K;
    if (lo64 >= m_out) return;
    u32 lo = (u32)lo64, hi = lo64 + K < m_out ? (u32)(lo64 + K) : m_out;
    F prefix[CUZK_AFFINE_KMAX];  // prefix[j]: product of the batched terms before output lo + j
    RoundCursor c;
    c.load(in_bounds, out_bounds, bucket_of(out_bounds, total, lo));
    F acc = fone(F());
    // Forward pass, one output ahead: the x coordinates of output o + 1 are loaded before o's multiply, so
    // the loads overlap it (one multiply per output is too little work to hide a load's latency).
    u32 i = c.input(lo);
    bool paired = i + 1 < c.ie;
    F px = round_input_x<F, GATHER>(src, entries, i);
    F qx = paired ? round_input_x<F, GATHER>(src, entries, i + 1) : px;
    for (u32 o = lo; o < hi; o++) {
        u32 i_next = 0;
        bool paired_next = false;
        F px_next = px, qx_next = qx;
        if (o + 1 < hi) {
            c.seek(in_bounds, out_bounds, o + 1);
            i_next = c.input(o + 1);
            paired_next = i_next + 1 < c.ie;
            px_next = round_input_x<F, GATHER>(src, entries, i_next);
            if (paired_next) qx_next = round_input_x<F, GATHER>(src, entries, i_next + 1);
        }
        F den;
        prefix[o - lo] = acc;
        if (forward_term<F, GATHER>(src, entries, i, paired, px, qx, den)) acc = fmul(acc, den);
        i = i_next;
        paired = paired_next;
        px = px_next;
        qx = qx_next;
    }
    F inv = batch_inverse(acc);  // 1 / (product of all the batched terms)
    // Backward pass: unwind the batch, output by output from the last. CUZK_AFFINE_BACK_PREFETCH=1 loads
    // output o - 1's points before o's arithmetic (48 more live registers for G1).
#if CUZK_AFFINE_BACK_PREFETCH
    c.seek(in_bounds, out_bounds, hi - 1);
    i = c.input(hi - 1);
    paired = i + 1 < c.ie;
    Affine<F> p = round_input<F, GATHER>(src, entries, i);
    Affine<F> q = paired ? round_input<F, GATHER>(src, entries, i + 1) : p;
#endif
    for (u32 o = hi; o-- > lo;) {
#if CUZK_AFFINE_BACK_PREFETCH
        bool paired_cur = paired;
        Affine<F> p_next = p, q_next = q;
        if (o > lo) {
            c.seek(in_bounds, out_bounds, o - 1);
            i = c.input(o - 1);
            paired = i + 1 < c.ie;
            p_next = round_input<F, GATHER>(src, entries, i);
            if (paired) q_next = round_input<F, GATHER>(src, entries, i + 1);
        }
#else
        c.seek(in_bounds, out_bounds, o);
        i = c.input(o);
        bool paired_cur = i + 1 < c.ie;
        Affine<F> p = round_input<F, GATHER>(src, entries, i);
        Affine<F> q = paired_cur ? round_input<F, GATHER>(src, entries, i + 1) : p;
#endif
        F den;
        int kind = pair_kind(p, q, paired_cur, den);
        Affine<F> r;
        if (kind == PAIR_COPY_P) {
            r = p;
        } else if (kind == PAIR_COPY_Q) {
            r = q;
        } else if (kind == PAIR_INF) {
            r = {fzero(F()), fzero(F())};
        } else {
            F d_inv = fmul(inv, prefix[o - lo]);  // 1 / den
            inv = fmul(inv, den);                 // drop den from the running inverse
            F num;
            if (kind == PAIR_ADD) {
                num = fsub(q.y, p.y);
            } else {
                F xx = fsqr(p.x);
                num = fadd(fadd(xx, xx), xx);
            }
            F lambda = fmul(num, d_inv);
            F x3 = fsub(fsub(fsqr(lambda), p.x), q.x);
            r.y = fsub(fmul(lambda, fsub(p.x, x3)), p.y);
            r.x = x3;
        }
        dst[o] = r;
#if CUZK_AFFINE_BACK_PREFETCH
        p = p_next;
        q = q_next;
#endif
    }
}

#ifndef CUZK_MSM_CHECK_INDEX
#define CUZK_MSM_CHECK_INDEX 0
#endif
#if CUZK_MSM_CHECK_INDEX
// combine_pieces with every index it relies on checked first; a violated one traps (the launch fails with
// an illegal-instruction error instead of an illegal address), telling a wrong index apart from a fault
// inside the addition. For the fault that two code-shape changes (lazy Fq2, out-of-line Fq multiply)
// bring into this kernel; the host uses it when the msm module is built with CUZK_MSM_CHECK_INDEX=1.
template <class F>
__device__ __forceinline__ void combine_pieces_checked(XYZZ<F>* __restrict__ partials, const u32* __restrict__ bounds,
                                                       const u32* __restrict__ first_bucket, u32 nthreads, u32 S,
                                                       u32 step, u32 total) {
    u32 t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= nthreads) return;
    u32 b = first_bucket[t];
    if (b >= total) __trap();
    u64 lo = (u64)t * S;
    if (!(bounds[b] <= lo && lo < bounds[b + 1])) __trap();  // b is the bucket of thread t's first entry
    u32 t0 = bounds[b] / S;
    if (t == t0 || (t - t0) % (2 * step) != step) return;
    if (t - step < t0 || (u64)(t - step + 1) * S <= bounds[b]) __trap();  // thread t - step holds a piece of b
    if ((u64)b + t >= (u64)total + nthreads) __trap();
    XYZZ<F> left = partials[(u64)b + t - step];
    add(left, partials[(u64)b + t]);
    partials[(u64)b + t - step] = left;
}
#define CHECKED_COMBINE_ENTRY(G, F)                                                                            \
    extern "C" __global__ void G##_combine_pieces_checked(XYZZ<F>* partials, const u32* bounds, const u32* first_bucket, \
                                                          u32 nthreads, u32 S, u32 step, u32 total) {            \
        combine_pieces_checked<F>(partials, bounds, first_bucket, nthreads, S, step, total);                     \
    }
CHECKED_COMBINE_ENTRY(g1, Fq)
CHECKED_COMBINE_ENTRY(g2, Fq2)
#endif

// the bucket's value after combine_pieces (infinity for an empty bucket)
template <class F>
__device__ __forceinline__ XYZZ<F> bucket_value(const XYZZ<F>* __restrict__ partials, const u32* __restrict__ bounds,
                                                u64 b, u32 S) {
    u32 e0 = bounds[b], e1 = bounds[b + 1];
    return e1 > e0 ? partials[b + e0 / S] : XYZZ<F>::inf();
}

template <class F>
__device__ __forceinline__ void bucket_sum_even(const XYZZ<F>* __restrict__ partials, const u32* __restrict__ bounds,
                                                u32 total, u32 S, XYZZ<F>* __restrict__ buckets) {
    u32 b = blockIdx.x * blockDim.x + threadIdx.x;
    if (b >= total) return;
    buckets[b] = bucket_value(partials, bounds, b, S);
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

// Throughput probe for the field multiply: 4 independent chains per thread (bench/gpu_kernels.py)
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

// ------------------------------------------------------------------------------------------------
// entry points, one set per group; G2 uses smaller blocks for its 2x larger points in shared memory

// HOT_F: the field type of the two hot loops (same layout as F; for G2 optionally the inlined Fq2i)
#define MSM_ENTRY_POINTS(G, F, HOT_F, RBLOCK, BOUNDS)                                                                               \
    extern "C" __global__ void BOUNDS G##_accumulate(const Affine<F>* bases, const u32* entries, const u32* item_start,          \
                                               const u32* item_len, u32 nitems, XYZZ<F>* partials) {                    \
        accumulate<HOT_F>(reinterpret_cast<const Affine<HOT_F>*>(bases), entries, item_start, item_len, nitems,          \
                          reinterpret_cast<XYZZ<HOT_F>*>(partials));                                                      \
    }                                                                                                                    \
    extern "C" __global__ void G##_bucket_sum(const XYZZ<F>* partials, const u32* item_offsets, u32 nbuckets,           \
                                               XYZZ<F>* buckets) {                                                       \
        bucket_sum<F>(partials, item_offsets, nbuckets, buckets);                                                        \
    }                                                                                                                    \
    extern "C" __global__ void BOUNDS G##_accumulate_even(const Affine<F>* bases, const u32* entries, const u32* bounds,      \
                                                    u32 total, u32 n_entries, u32 S, XYZZ<F>* partials,                 \
                                                    u32* first_bucket) {                                                \
        accumulate_even<HOT_F>(reinterpret_cast<const Affine<HOT_F>*>(bases), entries, bounds, total, n_entries, S,    \
                               reinterpret_cast<XYZZ<HOT_F>*>(partials), first_bucket);                                   \
    }                                                                                                                    \
    extern "C" __global__ void BOUNDS G##_affine_round_gather(const Affine<F>* bases, const u32* entries,                \
                                                        const u32* in_bounds, const u32* out_bounds, u32 total,        \
                                                        u32 m_out, u32 K, Affine<F>* dst) {                            \
        affine_round<HOT_F, true>(reinterpret_cast<const Affine<HOT_F>*>(bases), entries, in_bounds, out_bounds, total,  \
                                  m_out, K, reinterpret_cast<Affine<HOT_F>*>(dst));                                      \
    }                                                                                                                    \
    extern "C" __global__ void BOUNDS G##_affine_round(const Affine<F>* src, const u32* in_bounds, const u32* out_bounds,   \
                                                 u32 total, u32 m_out, u32 K, Affine<F>* dst) {                          \
        affine_round<HOT_F, false>(reinterpret_cast<const Affine<HOT_F>*>(src), nullptr, in_bounds, out_bounds, total,   \
                                   m_out, K, reinterpret_cast<Affine<HOT_F>*>(dst));                                     \
    }                                                                                                                    \
    extern "C" __global__ void G##_combine_pieces(XYZZ<F>* partials, const u32* bounds, const u32* first_bucket,         \
                                                   u32 nthreads, u32 S, u32 step) {                                      \
        combine_pieces<F>(partials, bounds, first_bucket, nthreads, S, step);                                           \
    }                                                                                                                    \
    extern "C" __global__ void G##_bucket_sum_even(const XYZZ<F>* partials, const u32* bounds, u32 total, u32 S,       \
                                                    XYZZ<F>* buckets) {                                                  \
        bucket_sum_even<F>(partials, bounds, total, S, buckets);                                                         \
    }                                                                                                                    \
    extern "C" __global__ void G##_segments(const XYZZ<F>* buckets, u32 nb, u32 L, u32 nseg, u32 nwin, XYZZ<F>* segT,   \
                                             XYZZ<F>* segA) {                                                            \
        segments<F>(buckets, nb, L, nseg, nwin, segT, segA);                                                             \
    }                                                                                                                    \
    extern "C" __global__ void G##_segments_even(const XYZZ<F>* partials, const u32* bounds, u32 S, u32 nb, u32 L,      \
                                                  u32 nseg, u32 nwin, XYZZ<F>* segT, XYZZ<F>* segA) {                   \
        segments_even<F>(partials, bounds, S, nb, L, nseg, nwin, segT, segA);                                            \
    }                                                                                                                    \
    extern "C" __global__ void G##_window_partial(const XYZZ<F>* segT, const XYZZ<F>* segA, u32 nseg, u32 K, u32 G_,    \
                                                   XYZZ<F>* partX, XYZZ<F>* partY) {                                     \
        window_partial<F, RBLOCK>(segT, segA, nseg, K, G_, partX, partY);                                                \
    }                                                                                                                    \
    extern "C" __global__ void G##_window_final(const XYZZ<F>* partX, const XYZZ<F>* partY, u32 G_, int logL,           \
                                                 XYZZ<F>* out) {                                                         \
        window_final<F, RBLOCK>(partX, partY, G_, logL, out);                                                            \
    }                                                                                                                    \
    extern "C" __global__ void BOUNDS G##_masked_sum(const Affine<F>* bases, const unsigned char* flags, u32 n,                \
                                               unsigned char want, XYZZ<F>* partials) {                                  \
        masked_sum<HOT_F, RBLOCK>(reinterpret_cast<const Affine<HOT_F>*>(bases), flags, n, want,                        \
                                  reinterpret_cast<XYZZ<HOT_F>*>(partials));                                              \
    }                                                                                                                    \
    extern "C" __global__ void G##_reduce(const XYZZ<F>* in, u32 n, XYZZ<F>* out) { reduce_points<F, RBLOCK>(in, n, out); } \
    extern "C" __global__ void G##_add_tables(const Affine<F>* P, u32 m, const Affine<F>* Qt, u32 n, Affine<F>* out) {     \
        add_tables<F>(P, m, Qt, n, out);                                                                                 \
    }

#ifndef CUZK_G2_INLINE
#define CUZK_G2_INLINE 0
#endif
#if CUZK_G2_INLINE
#define G2_HOT_FIELD Fq2i
#else
#define G2_HOT_FIELD Fq2
#endif

MSM_ENTRY_POINTS(g1, Fq, Fq, 128, ACC_BOUNDS_G1)
MSM_ENTRY_POINTS(g2, Fq2, G2_HOT_FIELD, 64, ACC_BOUNDS_G2)
