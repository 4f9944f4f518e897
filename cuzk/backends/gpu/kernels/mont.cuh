// Montgomery arithmetic over a prime field of N 32-bit limbs, little-endian (one template for every
// field of every curve; the fields themselves are instantiated in fields.cuh from the preamble).
//
// A field is a tag type (CUZK_FIELD_TAG below) holding its limb count and constants: the modulus p,
// -p^-1 mod 2^32, R = 2^(32N) mod p, R^2 mod p and p - 2. Values are kept fully reduced (< p) after
// every operation. The memory layout of an element is its limbs, byte-identical to 64-bit
// little-endian limbs: the host's (n, N / 2) uint64 arrays. N must be a multiple of 4 (16-byte loads).
//
// The multiply is CIOS with 64-bit accumulators: each partial product is one 32x32->64 multiply-add
// (IMAD.WIDE) plus carries, the form the performance anchors measure at 32/clk/SM, rather than the
// separate low/high halves of mad.lo/mad.hi PTX (measured no faster: NOTES.md, v3 results). The square
// is SOS (the cross products once, doubled): G1 MSM 2^26 980 -> 955 ms against mul(a, a).
#pragma once

typedef unsigned int u32;
typedef unsigned long long u64;

// CUZK_FQ_OUTLINE (a module's choice, set before its first include: msm.cu sets it, the other modules
// do not): the curve code's Fq multiply and square are calls to one out-of-line copy each (fields.cuh).
// With it, every remaining out-of-line function takes its operands by value (OUTLINE_ARG): ptxas
// (CUDA 13) addresses a by-reference operand that lives in the caller's stack frame through a
// uniform-register copy of the stack pointer, and another out-of-line function that uses the same
// uniform register as scratch clobbers it for the whole warp, so when the warp diverges (one lane adds,
// another doubles) the second path reads through a garbage pointer (compute-sanitizer: out-of-bounds
// __local__ read in dbl called from add; NOTES.md, 2026-12-03 fourth session). By-value operands travel
// in registers; scripts/check_sass.py finds the pattern in a built module.
#ifndef CUZK_FQ_OUTLINE
#define CUZK_FQ_OUTLINE 0
#endif
#if CUZK_FQ_OUTLINE
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
    };

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

// CUZK_MUL_CHAIN (an experiment, 0 by default; a module's #define, e.g. CUZK_KERNEL_DEFINES_NTT=
// CUZK_MUL_CHAIN=1): mul as PTX carry chains that ptxas fuses pairwise into wide multiply-adds with
// carry in (IMAD.WIDE.U32.X), instead of the C form's separate adds, carries and shifts per partial
// product. A wide multiply-add reads and writes an aligned register pair, so the running sum t is kept
// in two arrays whose pairs never straddle: e (word k of t at e[k]) takes the products x y[j] of even
// j, o (word k at o[k + 1]) those of odd j; each row t = (t + a_i b + m p) / 2^32 is four chains (even
// and odd, for a_i b and for m p), m from e[0] + o[1], and the division by 2^32 is a renaming (new e[k]
// = o[k + 2], new o[k] = e[k]) plus one add whose carry out of the cleared low word starts the next
// row's first chain. Modelled instruction by instruction in tests/test_mul_chain_model.py against
// Python integers; not measured on a GPU yet (NOTES.md). The asm statements are volatile: the carry
// flag links them, which the compiler cannot see. At ptxas's default -O3 both forms keep ~60 predicate
// spills per multiply (ptxas overlaps rows beyond its seven carry predicates); CUZK_PTXAS_O=1 (a build
// option, build.py) removes them: BLS12-381 Fq, form 2, 812 -> 413 SASS instructions in the MSM.
#ifndef CUZK_MUL_CHAIN
#define CUZK_MUL_CHAIN 0
#endif

#if CUZK_MUL_CHAIN
namespace chain {
#define CUZK_PTX3(name, op)                                                               \
    __device__ __forceinline__ u32 name(u32 x, u32 y, u32 z) {                            \
        u32 r;                                                                            \
        asm volatile(op " %0, %1, %2, %3;" : "=r"(r) : "r"(x), "r"(y), "r"(z));           \
        return r;                                                                         \
    }
#define CUZK_PTX2(name, op)                                                               \
    __device__ __forceinline__ u32 name(u32 x, u32 y) {                                   \
        u32 r;                                                                            \
        asm volatile(op " %0, %1, %2;" : "=r"(r) : "r"(x), "r"(y));                       \
        return r;                                                                         \
    }
CUZK_PTX3(mad_lo_cc, "mad.lo.cc.u32")
CUZK_PTX3(madc_lo_cc, "madc.lo.cc.u32")
CUZK_PTX3(madc_hi_cc, "madc.hi.cc.u32")
CUZK_PTX3(madc_hi, "madc.hi.u32")
CUZK_PTX2(add_cc, "add.cc.u32")
CUZK_PTX2(addc_cc, "addc.cc.u32")
CUZK_PTX2(addc, "addc.u32")
#undef CUZK_PTX3
#undef CUZK_PTX2

// e[0 .. N] += x (y[0] + y[2] 2^64 + ...); CARRY_IN: the first multiply-add takes the carry flag as the
// instruction before left it. No carry leaves e[N], nor o[N + 1] below: with p < 2^(32N - 1) (every
// field here) a row's t + x b + m p stays below 2p + 2^33 p < 2^(32(N + 1)).
template <int N, bool CARRY_IN>
__device__ __forceinline__ void row_even(u32* e, u32 x, const u32* y) {
    e[0] = CARRY_IN ? madc_lo_cc(x, y[0], e[0]) : mad_lo_cc(x, y[0], e[0]);
    e[1] = madc_hi_cc(x, y[0], e[1]);
#pragma unroll
    for (int j = 2; j < N; j += 2) {
        e[j] = madc_lo_cc(x, y[j], e[j]);
        e[j + 1] = madc_hi_cc(x, y[j], e[j + 1]);
    }
    e[N] = addc(e[N], 0);
}

// o[2 .. N + 1] += x (y[1] 2^32 + y[3] 2^96 + ...) 2^32 (o[k] is word k - 1 of t)
template <int N>
__device__ __forceinline__ void row_odd(u32* o, u32 x, const u32* y) {
    o[2] = mad_lo_cc(x, y[1], o[2]);
#pragma unroll
    for (int j = 1; j < N; j += 2) {
        if (j > 1) o[j + 1] = madc_lo_cc(x, y[j], o[j + 1]);
        o[j + 2] = j < N - 1 ? madc_hi_cc(x, y[j], o[j + 2]) : madc_hi(x, y[j], o[j + 2]);
    }
}

// The second form (CUZK_MUL_CHAIN=2): t kept as X + Y 2^32 in two N-word arrays (X: the products of
// even words, aligned; Y: those of odd words, one word up), rows alternating the two roles. A row adds
// x y and m p to t, clearing its low word; the division by 2^32 is the role swap plus one add (Y[1] into
// X[0]) whose carry runs on into the next odd chain, which also shifts Y down two words. No word beyond
// N: with p < 2^(32N - 1) the top words never carry out (tests/test_mul_chain_model.py asserts it).
#define CUZK_PTX_PAIR(name, lo, hi)                                                                 \
    __device__ __forceinline__ void name(u32& r0, u32& r1, u32 x, u32 y, u32 z0, u32 z1) {           \
        asm volatile(lo " %0, %2, %3, %4;\n\t" hi " %1, %2, %3, %5;"                                 \
                     : "=r"(r0), "=r"(r1)                                                           \
                     : "r"(x), "r"(y), "r"(z0), "r"(z1));                                           \
    }
CUZK_PTX_PAIR(mad_pair_first, "mad.lo.cc.u32", "madc.hi.cc.u32")
CUZK_PTX_PAIR(mad_pair, "madc.lo.cc.u32", "madc.hi.cc.u32")
CUZK_PTX_PAIR(mad_pair_last, "madc.lo.cc.u32", "madc.hi.u32")
#undef CUZK_PTX_PAIR

// acc = x (y[0] + y[2] 2^64 + ...), no carries
template <int N>
__device__ __forceinline__ void mul_pairs(u32* acc, u32 x, const u32* y) {
#pragma unroll
    for (int j = 0; j < N; j += 2) {
        acc[j] = x * y[j];
        acc[j + 1] = __umulhi(x, y[j]);
    }
}

// acc += x (y[0] + y[2] 2^64 + ...), a fresh chain; its carry is left in the flag
template <int N>
__device__ __forceinline__ void mad_pairs(u32* acc, u32 x, const u32* y) {
    mad_pair_first(acc[0], acc[1], x, y[0], acc[0], acc[1]);
#pragma unroll
    for (int j = 2; j < N; j += 2) mad_pair(acc[j], acc[j + 1], x, y[j], acc[j], acc[j + 1]);
}

// acc = acc / 2^64 + x (y[0] + y[2] 2^64 + ...) + the carry flag
template <int N>
__device__ __forceinline__ void mad_pairs_down(u32* acc, u32 x, const u32* y) {
#pragma unroll
    for (int j = 0; j < N - 2; j += 2) mad_pair(acc[j], acc[j + 1], x, y[j], acc[j + 2], acc[j + 3]);
    mad_pair_last(acc[N - 2], acc[N - 1], x, y[N - 2], 0, 0);
}

// One row on t = X + Y 2^32: t + x y + m p with m clearing the low word (X[0] is 0 afterwards, so
// t / 2^32 = Y + X / 2^32: the next row runs with the roles swapped).
template <class T>
__device__ __forceinline__ void row2(u32* X, u32* Y, u32 x, const u32* y, const u32* p, bool first) {
    constexpr int N = T::N;
    if (first) {
        mul_pairs<N>(Y, x, y + 1);
        mul_pairs<N>(X, x, y);
    } else {
        X[0] = add_cc(X[0], Y[1]);
        mad_pairs_down<N>(Y, x, y + 1);
        mad_pairs<N>(X, x, y);
        Y[N - 1] = addc(Y[N - 1], 0);
    }
    const u32 m = X[0] * T::NP0;
    mad_pairs<N>(Y, m, p + 1);
    mad_pairs<N>(X, m, p);
    Y[N - 1] = addc(Y[N - 1], 0);
}
}  // namespace chain
#endif

// Montgomery product a*b/2^(32N) mod p (CIOS).
template <class T>
__device__ __forceinline__ Elem<T> mul(const Elem<T>& a, const Elem<T>& b) {
    constexpr int N = T::N;
#if CUZK_MUL_CHAIN == 2
    u32 X[N], Y[N], p[N];
#pragma unroll
    for (int j = 0; j < N; j++) p[j] = T::P(j);
#pragma unroll
    for (int i = 0; i < N; i += 2) {
        chain::row2<T>(X, Y, a.v[i], b.v, p, i == 0);
        chain::row2<T>(Y, X, a.v[i + 1], b.v, p, false);
    }
    u32 t[N];  // the last row cleared Y[0]: t / 2^32 = X + Y / 2^32 < 2p
    t[0] = chain::add_cc(X[0], Y[1]);
#pragma unroll
    for (int k = 1; k < N - 1; k++) t[k] = chain::addc_cc(X[k], Y[k + 1]);
    t[N - 1] = chain::addc(X[N - 1], 0);
    Elem<T> r;
    reduce_once<T>(r, t, 0);
    return r;
#elif CUZK_MUL_CHAIN
    u32 e[N + 1], o[N + 2], p[N];
#pragma unroll
    for (int k = 0; k <= N; k++) e[k] = 0;
#pragma unroll
    for (int k = 0; k <= N + 1; k++) o[k] = 0;
#pragma unroll
    for (int j = 0; j < N; j++) p[j] = T::P(j);
#pragma unroll
    for (int i = 0; i < N; i++) {
        if (i == 0) {
            chain::row_even<N, false>(e, a.v[i], b.v);
        } else {
            chain::row_even<N, true>(e, a.v[i], b.v);  // takes the carry of the last row's low word
        }
        chain::row_odd<N>(o, a.v[i], b.v);
        u32 m = (e[0] + o[1]) * T::NP0;
        chain::row_even<N, false>(e, m, p);
        chain::row_odd<N>(o, m, p);
        chain::add_cc(e[0], o[1]);  // word 0 of t is 0 mod 2^32 now; its carry goes to the next chain
        u32 ne[N + 1], no[N + 2];   // t / 2^32: a renaming
#pragma unroll
        for (int k = 0; k < N; k++) ne[k] = o[k + 2];
        ne[N] = 0;
#pragma unroll
        for (int k = 0; k <= N; k++) no[k] = e[k];
        no[N + 1] = 0;
#pragma unroll
        for (int k = 0; k <= N; k++) e[k] = ne[k];
#pragma unroll
        for (int k = 0; k <= N + 1; k++) o[k] = no[k];
    }
    u32 t[N];  // e + o / 2^32 + the last carry: t < 2p
    t[0] = chain::addc_cc(e[0], o[1]);
#pragma unroll
    for (int k = 1; k < N; k++) t[k] = chain::addc_cc(e[k], o[k + 1]);
    u32 hi = chain::addc(e[N], o[N + 1]);
    Elem<T> r;
    reduce_once<T>(r, t, hi);
    return r;
#else
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
#endif
}

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

// Montgomery square by SOS: the N(N-1)/2 cross products once, doubled, plus the N squares on the
// diagonal, then N rows of reduction: N(N+3)/2 + N^2 partial products instead of the multiply's 2 N^2
// (BLS12-381 Fq: 234 instead of 288). Same result as mul(a, a), fully reduced. Needs a < p < 2^(32N - 1)
// (true of every field here), so that the doubled cross sum cannot overflow 2N limbs.
// CUZK_SQR_MUL (an experiment, 0 by default; a module's #define): the square as mul(a, a). With the
// carry-chain multiply at ptxas -O1 (CUZK_MUL_CHAIN=2, CUZK_PTXAS_O=1) the BLS12-381 Fq multiply is 413
// SASS instructions in the MSM against this SOS square's ~940 (NOTES.md, 2026-12-06 fourth session).
#ifndef CUZK_SQR_MUL
#define CUZK_SQR_MUL 0
#endif
template <class T>
__device__ __forceinline__ Elem<T> sqr(const Elem<T>& a) {
#if CUZK_SQR_MUL
    return mul<T>(a, a);
#else
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
#endif
}

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
// (The exponent's limbs come from the preamble: p - 2 borrows across limbs when the low limb is 1.)
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
    static_assert(T::N % 4 == 0, "elements are loaded as 16-byte vectors");
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
