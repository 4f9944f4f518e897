// NTT over Fr in passes of up to 10 butterfly stages through shared memory (radix 4, or radix 2).
//
// Conventions (same as cuzk/field/ntt.py, checked bit for bit against it):
//   DIF (Gentleman-Sande): natural order in, bit-reversed order out.
//   DIT (Cooley-Tukey):    bit-reversed order in, natural order out.
// Butterfly at global bit p (half-size h = 2^p) uses omega^e, e = (i mod 2^p) << (log_n - 1 - p), from a
// table tw[e] = omega^e, e < n/2 (omega or omega^-1 for the inverse transform).
//
// A pass covers the bit positions [lo, lo + s): each block loads a tile of 2^s "group" elements (the
// indices that differ only in those bits) times 2^u consecutive low indices, so that warps read
// 2^u * 32 contiguous bytes even when lo is large; s + u <= 10 (32 KiB of shared memory). The passes
// are planned on the host (cuzk/backends/gpu/ntt.py, plan_passes).
// Batches (the prover's a, b, c) are vectors `stride` elements apart, one per blockIdx.y.
#include "fields.cuh"

#define NTT_MAX_TILE_LOG 10
// Minimum resident blocks per SM for the radix-4 pass (a register cap, as CUZK_ACC_MINB in msm.cu;
// GpuConfig.ntt_minb). 3:
// 80 registers and 32 B of stack, 24 warps per SM; 0 = ptxas decides (82 registers, 2 blocks, 16 warps).
// The passes are latency-bound at 16 warps (ncu): 3 measured 2^26 NTT 35.6 -> 33.4 ms, 2^27 72.6 -> 68.1,
// 2^26 x3 iNTT + coset NTT 209.0 -> 198.1 (run s5-3, one process); 4 (64 registers) less: 34.1 / 69.1.
#ifndef CUZK_NTT_MINB
#define CUZK_NTT_MINB 3
#endif
#if CUZK_NTT_MINB
#define NTT_R4_BOUNDS __launch_bounds__(1 << (NTT_MAX_TILE_LOG - 2), CUZK_NTT_MINB)
#else
#define NTT_R4_BOUNDS
#endif

// global index of tile element x = t * 2^u + l: base | (t << lo) | l
__device__ __forceinline__ u64 tile_global(u64 base, u32 x, u32 u, u32 lo) {
    return base | ((u64)(x >> u) << lo) | (x & ((1u << u) - 1));
}

// twiddle of the butterfly whose lower tile index is t, at tile bit q (global bit lo + q)
__device__ __forceinline__ Fr ntt_twiddle(const Fr* __restrict__ tw, u32 t, u32 q, u32 lo, u64 low_global, u32 log_n) {
    u64 imod = (((u64)(t & ((1u << q) - 1))) << lo) | low_global;
    return load<FrTag>(tw + (imod << (log_n - 1 - (lo + q))));
}

// one radix-2 butterfly on tile[x0], tile[x1]: DIT (a + wc, a - wc) or DIF (a + c, (a - c) w)
__device__ __forceinline__ void radix2_butterfly(Fr* tile, u32 x0, u32 x1, const Fr& w, u32 dit) {
    Fr a = tile[x0], c = tile[x1];
    if (dit) {
        Fr m = mul<FrTag>(c, w);
        tile[x0] = add<FrTag>(a, m);
        tile[x1] = sub<FrTag>(a, m);
    } else {
        tile[x0] = add<FrTag>(a, c);
        tile[x1] = mul<FrTag>(sub<FrTag>(a, c), w);
    }
}

// The tile a block works on: which run of 2^u consecutive low indices (low_chunk) and the global index
// of its element 0 (base); the block's other index bits sit above bit lo + s.
struct NttTile {
    u64 low_chunk, base;
};
__device__ __forceinline__ NttTile ntt_tile(u32 lo, u32 s, u32 u) {
    const u32 low_chunks_log = lo - u;
    const u64 b = blockIdx.x;
    const u64 low_chunk = b & ((1ull << low_chunks_log) - 1);
    return {low_chunk, ((b >> low_chunks_log) << (lo + s)) | (low_chunk << u)};
}

__device__ __forceinline__ u32 bitrev(u32 i, u32 log_n) { return log_n ? (__brev(i) >> (32 - log_n)) : 0; }

// A scaling folded into a pass's loads (GpuConfig.ntt_fused: the evals_to_coset's scale g^e / n between
// its DIF and its DIT, data in bit-reversed order): element i is multiplied by lo[e & mask] hi[e >> bits],
// e = bitrev(i), in the *_scaled entry points; saves the separate fr_scale_powers pass (a read and a
// write of every element). The plain entry points are the same template without it.
struct NttScale {
    const Fr* lo;
    const Fr* hi;
    u32 bits;
};

// shared tile <-> global data, PER elements per thread (x = k + h * nthreads)
template <int PER, bool SCALED>
__device__ __forceinline__ void ntt_load_tile(Fr* tile, const Fr* __restrict__ data, u32 k, u32 nthreads, u64 base, u32 u, u32 lo,
                                              const NttScale& sc, u32 log_n) {
#pragma unroll
    for (int h = 0; h < PER; h++) {
        u32 x = k + h * nthreads;
        const u64 i = tile_global(base, x, u, lo);
        Fr v = load<FrTag>(data + i);
        if (SCALED) {
            const u32 e = bitrev((u32)i, log_n);
            v = mul<FrTag>(v, mul<FrTag>(load<FrTag>(sc.lo + (e & ((1u << sc.bits) - 1))), load<FrTag>(sc.hi + (e >> sc.bits))));
        }
        tile[x] = v;
    }
}
template <int PER>
__device__ __forceinline__ void ntt_store_tile(const Fr* tile, Fr* __restrict__ data, u32 k, u32 nthreads, u64 base, u32 u, u32 lo) {
#pragma unroll
    for (int h = 0; h < PER; h++) {
        u32 x = k + h * nthreads;
        store<FrTag>(data + tile_global(base, x, u, lo), tile[x]);
    }
}

template <bool SCALED>
__device__ __forceinline__ void ntt_pass_r2(Fr* __restrict__ data, const Fr* __restrict__ tw, u32 log_n, u32 lo, u32 s, u32 u,
                                            u32 dit, u64 stride, const NttScale& sc) {
    __shared__ Fr tile[1 << NTT_MAX_TILE_LOG];
    data += blockIdx.y * stride;
    const u32 tile_log = s + u;
    const u32 nthreads = 1u << (tile_log - 1);
    const u32 k = threadIdx.x;
    if (k >= nthreads) return;  // block size is exactly nthreads; kept for safety
    const NttTile tp = ntt_tile(lo, s, u);
    ntt_load_tile<2, SCALED>(tile, data, k, nthreads, tp.base, u, lo, sc, log_n);
    __syncthreads();

    const u32 l = k & ((1u << u) - 1);
    const u32 j = k >> u;
    const u64 low_global = (tp.low_chunk << u) | l;
    for (u32 st = 0; st < s; st++) {
        u32 q = dit ? st : (s - 1 - st);  // bit inside the tile's t index
        u32 t0 = ((j >> q) << (q + 1)) | (j & ((1u << q) - 1));
        radix2_butterfly(tile, (t0 << u) | l, ((t0 | (1u << q)) << u) | l, ntt_twiddle(tw, t0, q, lo, low_global, log_n), dit);
        __syncthreads();
    }
    ntt_store_tile<2>(tile, data, k, nthreads, tp.base, u, lo);
}

// Radix-4 step (ntt_pass_r4): the thread's four elements whose tile index differs in bits q
// and q+1 (j = its index among the block's 2^(s-2) groups per low index l) go through two consecutive
// stages at once, so a pass needs half the barriers and half the shared-memory round trips of radix 2.
// Stage q uses one twiddle for both of its butterflies (their indices agree below bit q); stage q+1
// uses one for the pair without bit q and one for the pair with it.
__device__ __forceinline__ void radix4_step(Fr* tile, const Fr* __restrict__ tw, u32 j, u32 l, u32 u, u32 q, u32 lo,
                                            u64 low_global, u32 log_n, u32 dit) {
    u32 t0 = ((j >> q) << (q + 2)) | (j & ((1u << q) - 1));
    u32 x00 = (t0 << u) | l, x10 = ((t0 | (1u << q)) << u) | l;
    u32 x01 = ((t0 | (2u << q)) << u) | l, x11 = ((t0 | (3u << q)) << u) | l;
    Fr v00 = tile[x00], v10 = tile[x10], v01 = tile[x01], v11 = tile[x11];
    Fr wa = ntt_twiddle(tw, t0, q, lo, low_global, log_n);
    Fr wb = ntt_twiddle(tw, t0, q + 1, lo, low_global, log_n);
    Fr wc = ntt_twiddle(tw, t0 | (1u << q), q + 1, lo, low_global, log_n);
    if (dit) {  // stage q, then q + 1
        Fr m = mul<FrTag>(v10, wa);
        v10 = sub<FrTag>(v00, m);
        v00 = add<FrTag>(v00, m);
        m = mul<FrTag>(v11, wa);
        v11 = sub<FrTag>(v01, m);
        v01 = add<FrTag>(v01, m);
        m = mul<FrTag>(v01, wb);
        v01 = sub<FrTag>(v00, m);
        v00 = add<FrTag>(v00, m);
        m = mul<FrTag>(v11, wc);
        v11 = sub<FrTag>(v10, m);
        v10 = add<FrTag>(v10, m);
    } else {  // stage q + 1, then q
        Fr d = sub<FrTag>(v00, v01);
        v00 = add<FrTag>(v00, v01);
        v01 = mul<FrTag>(d, wb);
        d = sub<FrTag>(v10, v11);
        v10 = add<FrTag>(v10, v11);
        v11 = mul<FrTag>(d, wc);
        d = sub<FrTag>(v00, v10);
        v00 = add<FrTag>(v00, v10);
        v10 = mul<FrTag>(d, wa);
        d = sub<FrTag>(v01, v11);
        v01 = add<FrTag>(v01, v11);
        v11 = mul<FrTag>(d, wa);
    }
    tile[x00] = v00;
    tile[x10] = v10;
    tile[x01] = v01;
    tile[x11] = v11;
}

// Two radix-2 butterflies per thread at tile bit q (j and j + 2^(s-2)): the odd stage of an odd s.
__device__ __forceinline__ void radix2_pair_step(Fr* tile, const Fr* __restrict__ tw, u32 j, u32 l, u32 u, u32 q, u32 s,
                                                 u32 lo, u64 low_global, u32 log_n, u32 dit) {
#pragma unroll
    for (int h = 0; h < 2; h++) {
        u32 jb = j + h * (1u << (s - 2));
        u32 t0 = ((jb >> q) << (q + 1)) | (jb & ((1u << q) - 1));
        radix2_butterfly(tile, (t0 << u) | l, ((t0 | (1u << q)) << u) | l, ntt_twiddle(tw, t0, q, lo, low_global, log_n), dit);
    }
}

// All s stages of a tile (s >= 2), radix 4 with one radix-2 stage when s is odd: DIT from the low bit
// up, DIF from the high bit down. Starts and ends at a barrier.
__device__ __forceinline__ void tile_stages(Fr* tile, const Fr* __restrict__ tw, u32 j, u32 l, u32 u, u32 s, u32 lo,
                                            u64 low_global, u32 log_n, u32 dit) {
    if (dit) {
        for (u32 q = 0; q + 1 < s; q += 2) {
            radix4_step(tile, tw, j, l, u, q, lo, low_global, log_n, 1);
            __syncthreads();
        }
        if (s & 1) {
            radix2_pair_step(tile, tw, j, l, u, s - 1, s, lo, low_global, log_n, 1);
            __syncthreads();
        }
    } else {
        for (int q = (int)s - 2; q >= 0; q -= 2) {
            radix4_step(tile, tw, j, l, u, (u32)q, lo, low_global, log_n, 0);
            __syncthreads();
        }
        if (s & 1) {
            radix2_pair_step(tile, tw, j, l, u, 0, s, lo, low_global, log_n, 0);
            __syncthreads();
        }
    }
}

// Radix-4 form of ntt_pass (host switch CUZK_NTT_RADIX=4, passes with s >= 2). Block size 2^(s+u-2).
template <bool SCALED>
__device__ __forceinline__ void ntt_pass_4(Fr* __restrict__ data, const Fr* __restrict__ tw, u32 log_n, u32 lo, u32 s, u32 u,
                                           u32 dit, u64 stride, const NttScale& sc) {
    __shared__ Fr tile[1 << NTT_MAX_TILE_LOG];
    data += blockIdx.y * stride;
    const u32 tile_log = s + u;
    const u32 nthreads = 1u << (tile_log - 2);
    const u32 k = threadIdx.x;
    if (k >= nthreads) return;
    const NttTile tp = ntt_tile(lo, s, u);
    ntt_load_tile<4, SCALED>(tile, data, k, nthreads, tp.base, u, lo, sc, log_n);
    __syncthreads();
    const u32 l = k & ((1u << u) - 1);
    tile_stages(tile, tw, k >> u, l, u, s, lo, (tp.low_chunk << u) | l, log_n, dit);
    ntt_store_tile<4>(tile, data, k, nthreads, tp.base, u, lo);
}

#define NTT_PASS_ARGS Fr *__restrict__ data, const Fr *__restrict__ tw, u32 log_n, u32 lo, u32 s, u32 u, u32 dit, u64 stride
#define NTT_SCALE_ARGS const Fr *__restrict__ sc_lo, const Fr *__restrict__ sc_hi, u32 sc_bits
extern "C" __global__ void ntt_pass(NTT_PASS_ARGS) { ntt_pass_r2<false>(data, tw, log_n, lo, s, u, dit, stride, NttScale{}); }
extern "C" __global__ void ntt_pass_scaled(NTT_PASS_ARGS, NTT_SCALE_ARGS) {
    ntt_pass_r2<true>(data, tw, log_n, lo, s, u, dit, stride, NttScale{sc_lo, sc_hi, sc_bits});
}
extern "C" __global__ void NTT_R4_BOUNDS ntt_pass_r4(NTT_PASS_ARGS) { ntt_pass_4<false>(data, tw, log_n, lo, s, u, dit, stride, NttScale{}); }
extern "C" __global__ void NTT_R4_BOUNDS ntt_pass_r4_scaled(NTT_PASS_ARGS, NTT_SCALE_ARGS) {
    ntt_pass_4<true>(data, tw, log_n, lo, s, u, dit, stride, NttScale{sc_lo, sc_hi, sc_bits});
}

extern "C" __global__ void fr_bit_reverse(Fr* __restrict__ data, u32 log_n, u64 stride) {
    data += blockIdx.y * stride;
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (1u << log_n)) return;
    u32 r = bitrev(i, log_n);
    if (r > i) {
        Fr a = load<FrTag>(data + i), b = load<FrTag>(data + r);
        store<FrTag>(data + i, b);
        store<FrTag>(data + r, a);
    }
}

// Bit reversal by 16 x 16 tiles (log_n >= 8), scaling on the way when asked: out[j] = in[bitrev(j)] F(j),
// F(j) = lo_tbl[0] (scale_mode 1: a constant, the iNTT's 1/n), lo_tbl[j & mask] hi_tbl[j >> lo_bits]
// (scale_mode 2: the coset iNTT's scale g^j, scale folded into lo_tbl by the host) or 1 (scale_mode 0).
// An index is i = h 2^(log_n - 4) + m 2^4 + l with 4-bit h and l; bitrev(i) = rev(l) 2^(log_n - 4) +
// rev(m) 2^4 + rev(h). The block of middle m (m <= rev(m)) reads the 256 elements of m and the 256 of
// rev(m) as 16 runs of 16 consecutive elements (512 contiguous bytes each) and writes each set in the
// other's place, again in runs of 16: the scattered 32-byte swap of fr_bit_reverse, coalesced. Shared
// memory holds an element's four words in four planes with rows of 17, so that the row-wise fill and the
// column-wise read both touch 16 different 8-byte banks per half warp. The scaling rides on a pass
// that moves every element anyway (the separate fr_scale_powers pass cost 1.36 ms at 2^24 on the H100).
#define BR_BITS 4
#define BR_W (1 << BR_BITS)
#define BR_ROW (BR_W + 1)
#define BR_BOUNDS __launch_bounds__(BR_W * BR_W)
__device__ __forceinline__ u32 rev4(u32 x) { return __brev(x) >> (32 - BR_BITS); }

extern "C" __global__ void BR_BOUNDS fr_bit_reverse_tiled(Fr* __restrict__ data, u32 log_n, u32 scale_mode, const Fr* __restrict__ lo_tbl,
                                                       const Fr* __restrict__ hi_tbl, u32 lo_bits, u64 stride) {
    __shared__ u64 tile[2][4][BR_W * BR_ROW];
    data += blockIdx.y * stride;
    const u32 mid_bits = log_n - 2 * BR_BITS;
    const u32 m = blockIdx.x;
    const u32 mr = mid_bits ? (__brev(m) >> (32 - mid_bits)) : 0;
    if (mr < m) return;  // the block of rev(m) moves this pair
    const u32 sets = mr == m ? 1 : 2;
    const u32 k = threadIdx.x, hi = k >> BR_BITS, lo = k & (BR_W - 1);
    const u32 high_shift = log_n - BR_BITS;
    for (u32 t = 0; t < sets; t++) {  // thread (hi, lo) loads element (h, middle, l) = (hi, m or mr, lo)
        const u64 i = ((u64)hi << high_shift) | ((u64)(t ? mr : m) << BR_BITS) | lo;
        const Fr x = load<FrTag>(data + i);
#pragma unroll
        for (int q = 0; q < 4; q++) tile[t][q][hi * BR_ROW + lo] = (u64)x.v[2 * q] | ((u64)x.v[2 * q + 1] << 32);
    }
    __syncthreads();
    for (u32 t = 0; t < sets; t++) {  // thread (hi, lo) writes (r, rev(middle), c) = (hi, ., lo) from (rev(c), middle, rev(r))
        const u32 src = rev4(lo) * BR_ROW + rev4(hi);
        Fr y;
#pragma unroll
        for (int q = 0; q < 4; q++) {
            const u64 w = tile[t][q][src];
            y.v[2 * q] = (u32)w;
            y.v[2 * q + 1] = (u32)(w >> 32);
        }
        const u64 j = ((u64)hi << high_shift) | ((u64)(t ? m : mr) << BR_BITS) | lo;
        if (scale_mode == 1) {
            y = mul<FrTag>(y, load<FrTag>(lo_tbl));
        } else if (scale_mode == 2) {
            y = mul<FrTag>(y, mul<FrTag>(load<FrTag>(lo_tbl + (j & ((1u << lo_bits) - 1))), load<FrTag>(hi_tbl + (j >> lo_bits))));
        }
        store<FrTag>(data + j, y);
    }
}

// data[i] *= scale * g^idx, idx = bitrev(i) when `reversed` (data in bit-reversed order) else i.
// scale * g^idx = lo_tbl[idx & (2^lo_bits - 1)] * hi_tbl[idx >> lo_bits] (the host folds scale into lo_tbl).
extern "C" __global__ void fr_scale_powers(Fr* __restrict__ data, u32 n, u32 log_n, u32 reversed,
                                           const Fr* __restrict__ lo_tbl, const Fr* __restrict__ hi_tbl, u32 lo_bits,
                                           u64 stride) {
    data += blockIdx.y * stride;
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    u32 idx = reversed ? bitrev(i, log_n) : i;
    Fr g = mul<FrTag>(load<FrTag>(lo_tbl + (idx & ((1u << lo_bits) - 1))), load<FrTag>(hi_tbl + (idx >> lo_bits)));
    store<FrTag>(data + i, mul<FrTag>(load<FrTag>(data + i), g));
}

// out[e] = lo_tbl[e & mask] * hi_tbl[e >> lo_bits]: a power table (twiddles) from two short tables
extern "C" __global__ void fr_power_table(Fr* __restrict__ out, u32 n, const Fr* __restrict__ lo_tbl,
                                          const Fr* __restrict__ hi_tbl, u32 lo_bits) {
    u32 e = blockIdx.x * blockDim.x + threadIdx.x;
    if (e >= n) return;
    store<FrTag>(out + e, mul<FrTag>(load<FrTag>(lo_tbl + (e & ((1u << lo_bits) - 1))), load<FrTag>(hi_tbl + (e >> lo_bits))));
}
