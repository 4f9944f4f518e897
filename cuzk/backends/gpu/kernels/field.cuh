// Montgomery arithmetic over the BLS12-381 fields, 32-bit limbs, little-endian.
//
// Fr (8 limbs) and Fq (12 limbs) share one template. The moduli and Montgomery constants come from a
// preamble that the Python build step generates from cuzk/field/constants.py (one source of truth):
//   CUZK_FR_P, CUZK_FR_NP0, CUZK_FR_ONE, CUZK_FR_R2 and the same for FQ.
// Values are kept fully reduced (< p) after every operation. Memory layout of an element is its limbs,
// which is byte-identical to 64-bit little-endian limbs: the host's (n, 4) / (n, 6) uint64 arrays.
//
// The multiply is CIOS with 64-bit accumulators: each partial product is one 32x32->64 multiply-add
// (IMAD.WIDE) plus carries, the form the performance anchors measure at 32/clk/SM, rather than the
// separate low/high halves of mad.lo/mad.hi PTX.
#pragma once

typedef unsigned int u32;
typedef unsigned long long u64;

// CUZK_FQ_CALL (0, 1, 2; msm.cu defaults to 2): how much of the curve code's field arithmetic is out-of-line calls (below, at
// fmul). With it on, every remaining out-of-line function takes its operands by value (OUTLINE_ARG):
// ptxas (CUDA 13) addresses a by-reference operand that lives in the caller's stack frame through a
// uniform-register copy of the stack pointer, and another out-of-line function that uses the same
// uniform register as scratch clobbers it for the whole warp, so when the warp diverges (one lane adds,
// another doubles) the second path reads through a garbage pointer (compute-sanitizer: out-of-bounds
// __local__ read in dbl called from add; NOTES.md, 2026-12-03 fourth session). By-value operands travel
// in registers; scripts/check_sass.py finds the pattern in a built module.
#ifndef CUZK_FQ_CALL
#define CUZK_FQ_CALL 0
#endif
#if CUZK_FQ_CALL
#define OUTLINE_ARG(T) const T
#else
#define OUTLINE_ARG(T) const T&
#endif

__device__ __forceinline__ u32 umin(u32 a, u32 b) { return a < b ? a : b; }

// A field's constants as limb accessors; the indices are compile-time constants after unrolling, so
// the arrays fold into immediates. Name##Tag for the preamble's CUZK_<PREFIX>_* macros.
#define CUZK_FIELD_TAG(Name, LIMBS, PREFIX)                                                 \
    struct Name##Tag {                                                                    \
        static constexpr int N = LIMBS;                                                   \
        static constexpr u32 NP0 = CUZK_##PREFIX##_NP0;                                   \
        __device__ __forceinline__ static u32 P(int i) {                                  \
            const u32 c[LIMBS] = {CUZK_##PREFIX##_P};                                     \
            return c[i];                                                                  \
        }                                                                                 \
        __device__ __forceinline__ static u32 ONE(int i) {                                \
            const u32 c[LIMBS] = {CUZK_##PREFIX##_ONE};                                   \
            return c[i];                                                                  \
        }                                                                                 \
        __device__ __forceinline__ static u32 R2(int i) {                                 \
            const u32 c[LIMBS] = {CUZK_##PREFIX##_R2};                                    \
            return c[i];                                                                  \
        }                                                                                 \
        __device__ __forceinline__ static u32 PM2(int i) { /* p - 2, the Fermat exponent */ \
            const u32 c[LIMBS] = {CUZK_##PREFIX##_PM2};                                   \
            return c[i];                                                                  \
        }                                                                                 \
        __device__ __forceinline__ static u32 PSQ(int i) { /* p^2, 2 LIMBS limbs */         \
            const u32 c[2 * LIMBS] = {CUZK_##PREFIX##_PSQ};                               \
            return c[i];                                                                  \
        }                                                                                 \
    };

CUZK_FIELD_TAG(Fr, 8, FR)
CUZK_FIELD_TAG(Fq, 12, FQ)

template <class T>
struct Elem {
    static constexpr int N = T::N;
    u32 v[T::N];

    __device__ __forceinline__ static Elem zero() {
        Elem r;
#pragma unroll
        for (int i = 0; i < N; i++) r.v[i] = 0;
        return r;
    }
    __device__ __forceinline__ static Elem one() {
        Elem r;
#pragma unroll
        for (int i = 0; i < N; i++) r.v[i] = T::ONE(i);
        return r;
    }
    __device__ __forceinline__ bool is_zero() const {
        u32 acc = 0;
#pragma unroll
        for (int i = 0; i < N; i++) acc |= v[i];
        return acc == 0;
    }
    __device__ __forceinline__ bool operator==(const Elem& o) const {
        u32 acc = 0;
#pragma unroll
        for (int i = 0; i < N; i++) acc |= v[i] ^ o.v[i];
        return acc == 0;
    }
    __device__ __forceinline__ bool is_one() const { return *this == one(); }
};

// r = a - p if a >= p (a < 2p, with an extra top carry word `hi`)
template <class T>
__device__ __forceinline__ void reduce_once(Elem<T>& r, const u32* a, u32 hi) {
    u32 d[T::N];
    u32 borrow = 0;
#pragma unroll
    for (int i = 0; i < T::N; i++) {
        u64 s = (u64)a[i] - T::P(i) - borrow;
        d[i] = (u32)s;
        borrow = (u32)(s >> 63);
    }
    bool use_d = hi != 0 || borrow == 0;
#pragma unroll
    for (int i = 0; i < T::N; i++) r.v[i] = use_d ? d[i] : a[i];
}

// r = a + b over M limbs (r may be a or b); returns the carry out
template <int M>
__device__ __forceinline__ u32 limbs_add(const u32* a, const u32* b, u32* r) {
    u32 c = 0;
#pragma unroll
    for (int i = 0; i < M; i++) {
        u64 s = (u64)a[i] + b[i] + c;
        r[i] = (u32)s;
        c = (u32)(s >> 32);
    }
    return c;
}

// r = a - b over M limbs (r may be a or b); returns the borrow out
template <int M>
__device__ __forceinline__ u32 limbs_sub(const u32* a, const u32* b, u32* r) {
    u32 borrow = 0;
#pragma unroll
    for (int i = 0; i < M; i++) {
        u64 s = (u64)a[i] - b[i] - borrow;
        r[i] = (u32)s;
        borrow = (u32)(s >> 63);
    }
    return borrow;
}

template <class T>
__device__ __forceinline__ Elem<T> add(const Elem<T>& a, const Elem<T>& b) {
    u32 t[T::N];
    u32 c = limbs_add<T::N>(a.v, b.v, t);
    Elem<T> r;
    reduce_once<T>(r, t, c);
    return r;
}

template <class T>
__device__ __forceinline__ Elem<T> sub(const Elem<T>& a, const Elem<T>& b) {
    u32 t[T::N];
    u32 mask = 0u - limbs_sub<T::N>(a.v, b.v, t);
    u32 pm[T::N];  // add p back when it went negative
#pragma unroll
    for (int i = 0; i < T::N; i++) pm[i] = T::P(i) & mask;
    Elem<T> r;
    limbs_add<T::N>(t, pm, r.v);
    return r;
}

template <class T>
__device__ __forceinline__ Elem<T> neg(const Elem<T>& a) {
    return sub<T>(Elem<T>::zero(), a);
}

template <class T>
__device__ __forceinline__ Elem<T> dbl(const Elem<T>& a) {
    return add<T>(a, a);
}

#ifndef CUZK_MUL_PTX
#define CUZK_MUL_PTX 0
#endif
#ifndef CUZK_MUL_EO
#define CUZK_MUL_EO 0
#endif

#if CUZK_MUL_PTX
// Montgomery product a*b/2^(32N) mod p (CIOS) with PTX carry chains: per step one chain of
// mad.lo.cc/madc.lo.cc and one of mad.hi.cc/madc.hi.cc (the form measured in the performance anchors).
// The chains are consecutive asm statements with nothing in between that touches the carry flag.
template <class T>
__device__ __forceinline__ Elem<T> mul(const Elem<T>& a, const Elem<T>& b) {
    constexpr int N = T::N;
    u32 t[N + 2];
#pragma unroll
    for (int j = 0; j < N + 2; j++) t[j] = 0;
#pragma unroll
    for (int i = 0; i < N; i++) {
        const u32 ai = a.v[i];
        // t += ai * b
        asm volatile("mad.lo.cc.u32 %0, %1, %2, %0;" : "+r"(t[0]) : "r"(ai), "r"(b.v[0]));
#pragma unroll
        for (int j = 1; j < N; j++) asm volatile("madc.lo.cc.u32 %0, %1, %2, %0;" : "+r"(t[j]) : "r"(ai), "r"(b.v[j]));
        asm volatile("addc.cc.u32 %0, %0, 0;" : "+r"(t[N]));
        asm volatile("addc.u32 %0, %0, 0;" : "+r"(t[N + 1]));
        asm volatile("mad.hi.cc.u32 %0, %1, %2, %0;" : "+r"(t[1]) : "r"(ai), "r"(b.v[0]));
#pragma unroll
        for (int j = 1; j < N; j++) asm volatile("madc.hi.cc.u32 %0, %1, %2, %0;" : "+r"(t[j + 1]) : "r"(ai), "r"(b.v[j]));
        asm volatile("addc.u32 %0, %0, 0;" : "+r"(t[N + 1]));
        // t += m * p, then t >>= 32
        const u32 m = t[0] * T::NP0;
        asm volatile("mad.lo.cc.u32 %0, %1, %2, %0;" : "+r"(t[0]) : "r"(m), "r"(T::P(0)));
#pragma unroll
        for (int j = 1; j < N; j++) asm volatile("madc.lo.cc.u32 %0, %1, %2, %0;" : "+r"(t[j]) : "r"(m), "r"(T::P(j)));
        asm volatile("addc.cc.u32 %0, %0, 0;" : "+r"(t[N]));
        asm volatile("addc.u32 %0, %0, 0;" : "+r"(t[N + 1]));
        asm volatile("mad.hi.cc.u32 %0, %1, %2, %0;" : "+r"(t[1]) : "r"(m), "r"(T::P(0)));
#pragma unroll
        for (int j = 1; j < N; j++) asm volatile("madc.hi.cc.u32 %0, %1, %2, %0;" : "+r"(t[j + 1]) : "r"(m), "r"(T::P(j)));
        asm volatile("addc.u32 %0, %0, 0;" : "+r"(t[N + 1]));
#pragma unroll
        for (int j = 0; j < N + 1; j++) t[j] = t[j + 1];
        t[N + 1] = 0;
    }
    Elem<T> r;
    reduce_once<T>(r, t, t[N]);
    return r;
}
#elif CUZK_MUL_EO
// Montgomery product a*b/2^(32N) mod p (CIOS), "form A" of the performance anchors: every partial
// product is one full 32x32->64 multiply with no addend (IMAD.WIDE), and the adds go to the ALU pipe as
// two carry chains per row. The products of even j tile the words j, j+1 = 0..N-1 without overlap and
// the odd ones tile 1..N, so each half is one add.cc/addc.cc chain over contiguous words, and no
// product's halves need to be moved into a register pair that also holds an addend (the IMAD.MOVs of
// the default form). N is even for both fields.
template <int N>
__device__ __forceinline__ void row_products(u32 x, const u32* y, u32* lo, u32* hi) {
#pragma unroll
    for (int j = 0; j < N; j++) {
        u64 p = (u64)x * y[j];
        lo[j] = (u32)p;
        hi[j] = (u32)(p >> 32);
    }
}

// t[0..N+1] += the products of the even j (words 0..N-1), then those of the odd j (words 1..N)
template <int N>
__device__ __forceinline__ void add_row(u32* t, const u32* lo, const u32* hi) {
    asm volatile("add.cc.u32 %0, %0, %1;" : "+r"(t[0]) : "r"(lo[0]));
    asm volatile("addc.cc.u32 %0, %0, %1;" : "+r"(t[1]) : "r"(hi[0]));
#pragma unroll
    for (int j = 2; j < N; j += 2) {
        asm volatile("addc.cc.u32 %0, %0, %1;" : "+r"(t[j]) : "r"(lo[j]));
        asm volatile("addc.cc.u32 %0, %0, %1;" : "+r"(t[j + 1]) : "r"(hi[j]));
    }
    asm volatile("addc.cc.u32 %0, %0, 0;" : "+r"(t[N]));
    asm volatile("addc.u32 %0, %0, 0;" : "+r"(t[N + 1]));
    asm volatile("add.cc.u32 %0, %0, %1;" : "+r"(t[1]) : "r"(lo[1]));
    asm volatile("addc.cc.u32 %0, %0, %1;" : "+r"(t[2]) : "r"(hi[1]));
#pragma unroll
    for (int j = 3; j < N; j += 2) {
        asm volatile("addc.cc.u32 %0, %0, %1;" : "+r"(t[j]) : "r"(lo[j]));
        asm volatile("addc.cc.u32 %0, %0, %1;" : "+r"(t[j + 1]) : "r"(hi[j]));
    }
    asm volatile("addc.u32 %0, %0, 0;" : "+r"(t[N + 1]));
}

template <class T>
__device__ __forceinline__ Elem<T> mul(const Elem<T>& a, const Elem<T>& b) {
    constexpr int N = T::N;
    u32 t[N + 2], lo[N], hi[N], p[N];
#pragma unroll
    for (int j = 0; j < N; j++) p[j] = T::P(j);
#pragma unroll
    for (int i = 0; i < N; i++) {
        row_products<N>(a.v[i], b.v, lo, hi);
        if (i == 0) {  // t = 0: the even products are the words themselves, only the odd ones are added
#pragma unroll
            for (int j = 0; j < N; j += 2) {
                t[j] = lo[j];
                t[j + 1] = hi[j];
            }
            t[N] = 0;
            asm volatile("add.cc.u32 %0, %0, %1;" : "+r"(t[1]) : "r"(lo[1]));
            asm volatile("addc.cc.u32 %0, %0, %1;" : "+r"(t[2]) : "r"(hi[1]));
#pragma unroll
            for (int j = 3; j < N; j += 2) {
                asm volatile("addc.cc.u32 %0, %0, %1;" : "+r"(t[j]) : "r"(lo[j]));
                asm volatile("addc.cc.u32 %0, %0, %1;" : "+r"(t[j + 1]) : "r"(hi[j]));
            }
            asm volatile("addc.u32 %0, 0, 0;" : "=r"(t[N + 1]));
        } else {
            add_row<N>(t, lo, hi);
        }
        const u32 m = t[0] * T::NP0;
        row_products<N>(m, p, lo, hi);
        add_row<N>(t, lo, hi);  // t[0] becomes 0: the shift below drops it
#pragma unroll
        for (int j = 0; j < N + 1; j++) t[j] = t[j + 1];
        t[N + 1] = 0;
    }
    Elem<T> r;
    reduce_once<T>(r, t, t[N]);
    return r;
}
#else
// Montgomery product a*b/2^(32N) mod p (CIOS).
template <class T>
__device__ __forceinline__ Elem<T> mul(const Elem<T>& a, const Elem<T>& b) {
    constexpr int N = T::N;
    u32 t[N + 2];
#pragma unroll
    for (int j = 0; j < N + 2; j++) t[j] = 0;
#pragma unroll
    for (int i = 0; i < N; i++) {
        u32 c = 0;
#pragma unroll
        for (int j = 0; j < N; j++) {
            u64 s = (u64)a.v[i] * b.v[j] + t[j] + c;
            t[j] = (u32)s;
            c = (u32)(s >> 32);
        }
        u64 s = (u64)t[N] + c;
        t[N] = (u32)s;
        t[N + 1] = (u32)(s >> 32);
        u32 m = t[0] * T::NP0;
        s = (u64)m * T::P(0) + t[0];
        c = (u32)(s >> 32);
#pragma unroll
        for (int j = 1; j < N; j++) {
            s = (u64)m * T::P(j) + t[j] + c;
            t[j - 1] = (u32)s;
            c = (u32)(s >> 32);
        }
        s = (u64)t[N] + c;
        t[N - 1] = (u32)s;
        t[N] = t[N + 1] + (u32)(s >> 32);
    }
    Elem<T> r;
    reduce_once<T>(r, t, t[N]);
    return r;
}

#endif

// On by default: G1 MSM 2^26 980 -> 955 ms on the H200 (2026-12-03); CUZK_SQR_SOS=0 is the CIOS square.
#ifndef CUZK_SQR_SOS
#define CUZK_SQR_SOS 1
#endif

// Montgomery reduction of a 2N-limb value t < p R (SOS: N rows of m p added, then the high half):
// t R^-1 mod p, fully reduced. t is overwritten.
template <class T>
__device__ __forceinline__ Elem<T> redc_wide(u32* t) {
    constexpr int N = T::N;
    u32 top = 0;
#pragma unroll
    for (int i = 0; i < N; i++) {
        u32 m = t[i] * T::NP0;
        u32 cc = 0;
#pragma unroll
        for (int j = 0; j < N; j++) {
            u64 s = (u64)m * T::P(j) + t[i + j] + cc;
            t[i + j] = (u32)s;
            cc = (u32)(s >> 32);
        }
        u64 s = (u64)t[i + N] + cc + top;
        t[i + N] = (u32)s;
        top = (u32)(s >> 32);
    }
    Elem<T> r;
    reduce_once<T>(r, t + N, top);
    return r;
}

// t = a b as 2N limbs, no reduction (operand scanning); a, b may be unreduced N-limb values
template <int N>
__device__ __forceinline__ void mul_wide(const u32* a, const u32* b, u32* t) {
#pragma unroll
    for (int k = 0; k < 2 * N; k++) t[k] = 0;
#pragma unroll
    for (int i = 0; i < N; i++) {
        u32 c = 0;
#pragma unroll
        for (int j = 0; j < N; j++) {
            u64 s = (u64)a[i] * b[j] + t[i + j] + c;
            t[i + j] = (u32)s;
            c = (u32)(s >> 32);
        }
        t[i + N] = c;
    }
}

#if CUZK_SQR_SOS
// Montgomery square by SOS: the N(N-1)/2 cross products once, doubled, plus the N squares on the
// diagonal, then N rows of reduction: N(N+3)/2 + N^2 partial products instead of the multiply's 2 N^2
// (Fq: 234 instead of 288). Same result as mul(a, a), fully reduced. a < p < 2^(32N - 1), so the
// doubled cross sum cannot overflow 2N limbs.
template <class T>
__device__ __forceinline__ Elem<T> sqr(const Elem<T>& a) {
    constexpr int N = T::N;
    u32 t[2 * N];
#pragma unroll
    for (int k = 0; k < 2 * N; k++) t[k] = 0;
#pragma unroll
    for (int i = 0; i < N; i++) {
        u32 c = 0;
#pragma unroll
        for (int j = i + 1; j < N; j++) {
            u64 s = (u64)a.v[i] * a.v[j] + t[i + j] + c;
            t[i + j] = (u32)s;
            c = (u32)(s >> 32);
        }
        if (i + 1 < N) t[i + N] = c;
    }
#pragma unroll
    for (int k = 2 * N - 1; k > 0; k--) t[k] = (t[k] << 1) | (t[k - 1] >> 31);
    t[0] <<= 1;
    u32 c = 0;
#pragma unroll
    for (int i = 0; i < N; i++) {
        u64 s = (u64)a.v[i] * a.v[i] + t[2 * i] + c;
        t[2 * i] = (u32)s;
        u64 s2 = (u64)t[2 * i + 1] + (u32)(s >> 32);
        t[2 * i + 1] = (u32)s2;
        c = (u32)(s2 >> 32);
    }
    return redc_wide<T>(t);
}
#else
template <class T>
__device__ __forceinline__ Elem<T> sqr(const Elem<T>& a) {
    return mul<T>(a, a);
}
#endif

template <class T>
__device__ __forceinline__ Elem<T> to_mont(const Elem<T>& a) {
    Elem<T> r2;
#pragma unroll
    for (int i = 0; i < T::N; i++) r2.v[i] = T::R2(i);
    return mul<T>(a, r2);
}

template <class T>
__device__ __forceinline__ Elem<T> from_mont(const Elem<T>& a) {
    Elem<T> one_plain = Elem<T>::zero();
    one_plain.v[0] = 1;
    return mul<T>(a, one_plain);
}

// a^(p-2) = a^-1 (Fermat); 0 maps to 0. Only for setup/test paths: ~1.5 N multiplications per bit.
// (The exponent's limbs come from the preamble: p - 2 borrows across limbs for Fr, whose low limb is 1.)
template <class T>
__device__ __noinline__ Elem<T> inverse(OUTLINE_ARG(Elem<T>) a) {
    Elem<T> r = Elem<T>::one();
    for (int i = T::N - 1; i >= 0; i--) {
        u32 e = T::PM2(i);
        for (int b = 31; b >= 0; b--) {
            r = mul<T>(r, r);
            if ((e >> b) & 1u) r = mul<T>(r, a);
        }
    }
    return r;
}

// Loads/stores of whole elements through 16-byte vectors (N is a multiple of 4).
template <class T>
__device__ __forceinline__ Elem<T> load(const Elem<T>* p) {
    Elem<T> r;
    const uint4* q = reinterpret_cast<const uint4*>(p);
#pragma unroll
    for (int i = 0; i < T::N / 4; i++) {
        uint4 x = q[i];
        r.v[4 * i] = x.x;
        r.v[4 * i + 1] = x.y;
        r.v[4 * i + 2] = x.z;
        r.v[4 * i + 3] = x.w;
    }
    return r;
}

template <class T>
__device__ __forceinline__ void store(Elem<T>* p, const Elem<T>& a) {
    uint4* q = reinterpret_cast<uint4*>(p);
#pragma unroll
    for (int i = 0; i < T::N / 4; i++) q[i] = make_uint4(a.v[4 * i], a.v[4 * i + 1], a.v[4 * i + 2], a.v[4 * i + 3]);
}

typedef Elem<FrTag> Fr;
typedef Elem<FqTag> Fq;

// ------------------------------------------------------------------------------------------------
// Fq2 = Fq[u] / (u^2 + 1)

struct Fq2 {
    Fq c0, c1;
    __device__ __forceinline__ static Fq2 zero() { return {Fq::zero(), Fq::zero()}; }
    __device__ __forceinline__ static Fq2 one() { return {Fq::one(), Fq::zero()}; }
    __device__ __forceinline__ bool is_zero() const { return c0.is_zero() && c1.is_zero(); }
    __device__ __forceinline__ bool operator==(const Fq2& o) const { return c0 == o.c0 && c1 == o.c1; }
};

template <class E>
__device__ __forceinline__ E fq2_add(const E& a, const E& b) { return {add<FqTag>(a.c0, b.c0), add<FqTag>(a.c1, b.c1)}; }
template <class E>
__device__ __forceinline__ E fq2_sub(const E& a, const E& b) { return {sub<FqTag>(a.c0, b.c0), sub<FqTag>(a.c1, b.c1)}; }
template <class E>
__device__ __forceinline__ E fq2_neg(const E& a) { return {neg<FqTag>(a.c0), neg<FqTag>(a.c1)}; }

__device__ __forceinline__ Fq2 add(const Fq2& a, const Fq2& b) { return fq2_add(a, b); }
__device__ __forceinline__ Fq2 sub(const Fq2& a, const Fq2& b) { return fq2_sub(a, b); }
__device__ __forceinline__ Fq2 neg(const Fq2& a) { return fq2_neg(a); }
__device__ __forceinline__ Fq2 dbl(const Fq2& a) { return add(a, a); }

// Off by default although faster (G2 MSM 2^24 1069 -> 957 ms on the H200, 2026-12-03): with it the
// GPU prover's B_G2 MSM (72773 points, window 12) faults with an illegal address in g2_combine_pieces,
// while every G2 MSM test up to 4099 points matches the CPU (bench/gpu_bisect.py; NOTES.md 2026-12-03).
// Not to be turned on before that is understood.
#ifndef CUZK_FQ2_LAZY
#define CUZK_FQ2_LAZY 0
#endif

#if CUZK_FQ2_LAZY
// Karatsuba with lazy reduction: the three products stay unreduced (2N limbs) and each coefficient is
// reduced once: 3 N^2 + 2 (N^2 + N) partial products instead of 3 (2 N^2 + N) (Fq2: 744 instead of
// 900). c0 = REDC(a0 b0 + p^2 - a1 b1), in (0, 2 p^2); c1 = REDC((a0 + a1)(b0 + b1) - a0 b0 - a1 b1)
// = REDC(a0 b1 + a1 b0) exactly, the sums taken without reduction (< 2p < 2^382); both < p R.
template <class E>
__device__ __forceinline__ E fq2_mul(const E& a, const E& b) {
    constexpr int N = FqTag::N;
    u32 t0[2 * N], t1[2 * N], t2[2 * N], sa[N], sb[N], psq[2 * N];
    mul_wide<N>(a.c0.v, b.c0.v, t0);
    mul_wide<N>(a.c1.v, b.c1.v, t1);
    limbs_add<N>(a.c0.v, a.c1.v, sa);  // no carry out: < 2p < 2^382
    limbs_add<N>(b.c0.v, b.c1.v, sb);
    mul_wide<N>(sa, sb, t2);
    limbs_sub<2 * N>(t2, t0, t2);  // no borrow: the offsets keep every difference >= 0
    limbs_sub<2 * N>(t2, t1, t2);
#pragma unroll
    for (int i = 0; i < 2 * N; i++) psq[i] = FqTag::PSQ(i);
    limbs_add<2 * N>(t0, psq, t0);
    limbs_sub<2 * N>(t0, t1, t0);
    return {redc_wide<FqTag>(t0), redc_wide<FqTag>(t2)};
}
#else
// Karatsuba: 3 Fq multiplications. E is Fq2 or Fq2i (below): the same {c0, c1} layout.
template <class E>
__device__ __forceinline__ E fq2_mul(const E& a, const E& b) {
    Fq t0 = mul<FqTag>(a.c0, b.c0);
    Fq t1 = mul<FqTag>(a.c1, b.c1);
    Fq t2 = mul<FqTag>(add<FqTag>(a.c0, a.c1), add<FqTag>(b.c0, b.c1));
    return {sub<FqTag>(t0, t1), sub<FqTag>(sub<FqTag>(t2, t0), t1)};
}
#endif

// (a0 + a1 u)^2 = (a0 + a1)(a0 - a1) + 2 a0 a1 u: 2 multiplications
template <class E>
__device__ __forceinline__ E fq2_sqr(const E& a) {
    Fq t = mul<FqTag>(a.c0, a.c1);
    return {mul<FqTag>(add<FqTag>(a.c0, a.c1), sub<FqTag>(a.c0, a.c1)), add<FqTag>(t, t)};
}

#if CUZK_FQ_CALL
// one out-of-line copy of the Fq multiply and square (CUZK_FQ_CALL, below)
__device__ __noinline__ Fq fq_mul_call(const Fq a, const Fq b) { return mul<FqTag>(a, b); }
__device__ __noinline__ Fq fq_sqr_call(const Fq a) { return sqr<FqTag>(a); }
#endif

#if CUZK_FQ_CALL >= 2
// CUZK_FQ_CALL=2: Fq2's Karatsuba products through the out-of-line Fq multiply too (G2's code then holds
// one copy of the Fq multiply instead of three inlined in the Fq2 multiply and two in the square),
// the Fq2 multiply and square themselves inline (out of line with by-value operands, tried as
// CUZK_FQ_CALL=3: G2 2^24 739 -> 2999 ms, run s4-7; out of line taking no arguments, the operands in
// per-thread slots of shared memory, tried as CUZK_FQ_CALL=4: 736 -> 4609 ms, run s5-3, every register
// live across the calls went to the stack; both reverted).
__device__ __forceinline__ Fq2 mul(const Fq2& a, const Fq2& b) {
    Fq t0 = fq_mul_call(a.c0, b.c0);
    Fq t1 = fq_mul_call(a.c1, b.c1);
    Fq t2 = fq_mul_call(add<FqTag>(a.c0, a.c1), add<FqTag>(b.c0, b.c1));
    return {sub<FqTag>(t0, t1), sub<FqTag>(sub<FqTag>(t2, t0), t1)};
}
__device__ __forceinline__ Fq2 sqr(const Fq2& a) {
    Fq t = fq_mul_call(a.c0, a.c1);
    return {fq_mul_call(add<FqTag>(a.c0, a.c1), sub<FqTag>(a.c0, a.c1)), add<FqTag>(t, t)};
}
#else
// Fq2's multiply and square are calls: keeps the G2 kernels compact (and quick to compile)
__device__ __noinline__ Fq2 mul(OUTLINE_ARG(Fq2) a, OUTLINE_ARG(Fq2) b) { return fq2_mul(a, b); }
__device__ __noinline__ Fq2 sqr(OUTLINE_ARG(Fq2) a) { return fq2_sqr(a); }
#endif

// (a0 + a1 u)^-1 = (a0 - a1 u) / (a0^2 + a1^2)
__device__ __forceinline__ Fq2 inverse(const Fq2& a) {
    Fq t = inverse<FqTag>(add<FqTag>(mul<FqTag>(a.c0, a.c0), mul<FqTag>(a.c1, a.c1)));
    return {mul<FqTag>(a.c0, t), neg<FqTag>(mul<FqTag>(a.c1, t))};
}

// Generic helpers so curve code is written once for Fq (G1) and Fq2 (G2).
__device__ __forceinline__ Fq fadd(const Fq& a, const Fq& b) { return add<FqTag>(a, b); }
__device__ __forceinline__ Fq fsub(const Fq& a, const Fq& b) { return sub<FqTag>(a, b); }
// CUZK_FQ_CALL=1: the curve code's Fq multiply and square are calls to one out-of-line copy each
// instead of ~800 inlined instructions per use. The XYZZ accumulation loop inlines ten of them (over
// 600 KB of SASS for the kernel), and ncu shows its warps stalled on instruction fetch for a third of
// their cycles; one copy fits the instruction cache, at the price of a call and its argument moves.
#if CUZK_FQ_CALL
__device__ __forceinline__ Fq fmul(const Fq& a, const Fq& b) { return fq_mul_call(a, b); }
__device__ __forceinline__ Fq fsqr(const Fq& a) { return fq_sqr_call(a); }
#else
__device__ __forceinline__ Fq fmul(const Fq& a, const Fq& b) { return mul<FqTag>(a, b); }
__device__ __forceinline__ Fq fsqr(const Fq& a) { return sqr<FqTag>(a); }
#endif
__device__ __forceinline__ Fq fneg(const Fq& a) { return neg<FqTag>(a); }
__device__ __forceinline__ Fq2 fadd(const Fq2& a, const Fq2& b) { return add(a, b); }
__device__ __forceinline__ Fq2 fsub(const Fq2& a, const Fq2& b) { return sub(a, b); }
__device__ __forceinline__ Fq2 fmul(const Fq2& a, const Fq2& b) { return mul(a, b); }
__device__ __forceinline__ Fq2 fsqr(const Fq2& a) { return sqr(a); }
__device__ __forceinline__ Fq2 fneg(const Fq2& a) { return neg(a); }
__device__ __forceinline__ Fq finv(const Fq& a) { return inverse<FqTag>(a); }
__device__ __forceinline__ Fq2 finv(const Fq2& a) { return inverse(a); }
__device__ __forceinline__ Fq fone(Fq) { return Fq::one(); }
__device__ __forceinline__ Fq2 fone(Fq2) { return Fq2::one(); }
__device__ __forceinline__ Fq fzero(Fq) { return Fq::zero(); }
__device__ __forceinline__ Fq2 fzero(Fq2) { return Fq2::zero(); }

// Fq2i: the same element as Fq2 (identical layout) with the multiply and square inlined. Only the hot
// G2 loops use it (CUZK_G2_INLINE): there the call to the out-of-line Fq2 multiply passes its operands
// through the stack (887 local-memory instructions in g2_accumulate, cuobjdump), while inlining it
// everywhere made the module too slow to compile.
struct Fq2i {
    Fq c0, c1;
    __device__ __forceinline__ static Fq2i zero() { return {Fq::zero(), Fq::zero()}; }
    __device__ __forceinline__ static Fq2i one() { return {Fq::one(), Fq::zero()}; }
    __device__ __forceinline__ bool is_zero() const { return c0.is_zero() && c1.is_zero(); }
    __device__ __forceinline__ bool operator==(const Fq2i& o) const { return c0 == o.c0 && c1 == o.c1; }
};
__device__ __forceinline__ Fq2i fadd(const Fq2i& a, const Fq2i& b) { return fq2_add(a, b); }
__device__ __forceinline__ Fq2i fsub(const Fq2i& a, const Fq2i& b) { return fq2_sub(a, b); }
__device__ __forceinline__ Fq2i fneg(const Fq2i& a) { return fq2_neg(a); }
__device__ __forceinline__ Fq2i fmul(const Fq2i& a, const Fq2i& b) { return fq2_mul(a, b); }
__device__ __forceinline__ Fq2i fsqr(const Fq2i& a) { return fq2_sqr(a); }
__device__ __forceinline__ Fq2i finv(const Fq2i& a) {
    Fq2 r = inverse(Fq2{a.c0, a.c1});
    return {r.c0, r.c1};
}
__device__ __forceinline__ Fq2i fone(Fq2i) { return Fq2i::one(); }
__device__ __forceinline__ Fq2i fzero(Fq2i) { return Fq2i::zero(); }
