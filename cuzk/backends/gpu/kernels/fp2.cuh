// The quadratic extension Fq2 = Fq[u] / (u^2 + 1) (G2's coordinates on BLS12-381 and on BN254), and
// the curve-code operations over it (fadd, fsub, fmul, fsqr, fneg, finv, fone, fzero, as in fields.cuh).
#pragma once
#include "fields.cuh"

struct Fq2 {
    Fq c0, c1;
    __device__ __forceinline__ static Fq2 zero() { return {Fq::zero(), Fq::zero()}; }
    __device__ __forceinline__ static Fq2 one() { return {Fq::one(), Fq::zero()}; }
    __device__ __forceinline__ bool is_zero() const { return c0.is_zero() && c1.is_zero(); }
    __device__ __forceinline__ bool operator==(const Fq2& o) const { return c0 == o.c0 && c1 == o.c1; }
};

__device__ __forceinline__ Fq2 add(const Fq2& a, const Fq2& b) { return {add<FqTag>(a.c0, b.c0), add<FqTag>(a.c1, b.c1)}; }
__device__ __forceinline__ Fq2 sub(const Fq2& a, const Fq2& b) { return {sub<FqTag>(a.c0, b.c0), sub<FqTag>(a.c1, b.c1)}; }
__device__ __forceinline__ Fq2 neg(const Fq2& a) { return {neg<FqTag>(a.c0), neg<FqTag>(a.c1)}; }
__device__ __forceinline__ Fq2 dbl(const Fq2& a) { return add(a, a); }

#if CUZK_FQ_OUTLINE
// Karatsuba's three products through the out-of-line Fq multiply (G2's code then holds one copy of the
// Fq multiply instead of three inlined in the Fq2 multiply and two in the square), the Fq2 multiply and
// square themselves inline: every out-of-line Fq2 form measured slower (by value: G2 2^24 739 -> 2999
// ms; operands in shared-memory slots: 736 -> 4609 ms; both spill everything live across the call), and
// by reference it meets the uniform-register fault (mont.cuh, OUTLINE_ARG). NOTES.md, runs s4-7, s5-3.
__device__ __forceinline__ Fq2 mul(const Fq2& a, const Fq2& b) {
    Fq t0 = fq_mul_call(a.c0, b.c0);
    Fq t1 = fq_mul_call(a.c1, b.c1);
    Fq t2 = fq_mul_call(add<FqTag>(a.c0, a.c1), add<FqTag>(b.c0, b.c1));
    return {sub<FqTag>(t0, t1), sub<FqTag>(sub<FqTag>(t2, t0), t1)};
}
// (a0 + a1 u)^2 = (a0 + a1)(a0 - a1) + 2 a0 a1 u: 2 multiplications
__device__ __forceinline__ Fq2 sqr(const Fq2& a) {
    Fq t = fq_mul_call(a.c0, a.c1);
    return {fq_mul_call(add<FqTag>(a.c0, a.c1), sub<FqTag>(a.c0, a.c1)), add<FqTag>(t, t)};
}
#else
// Karatsuba: 3 Fq multiplications
__device__ __forceinline__ Fq2 fq2_mul(const Fq2& a, const Fq2& b) {
    Fq t0 = mul<FqTag>(a.c0, b.c0);
    Fq t1 = mul<FqTag>(a.c1, b.c1);
    Fq t2 = mul<FqTag>(add<FqTag>(a.c0, a.c1), add<FqTag>(b.c0, b.c1));
    return {sub<FqTag>(t0, t1), sub<FqTag>(sub<FqTag>(t2, t0), t1)};
}
// (a0 + a1 u)^2 = (a0 + a1)(a0 - a1) + 2 a0 a1 u: 2 multiplications
__device__ __forceinline__ Fq2 fq2_sqr(const Fq2& a) {
    Fq t = mul<FqTag>(a.c0, a.c1);
    return {mul<FqTag>(add<FqTag>(a.c0, a.c1), sub<FqTag>(a.c0, a.c1)), add<FqTag>(t, t)};
}
// The multiply and square are calls: keeps the G2 kernels compact (and quick to compile)
__device__ __noinline__ Fq2 mul(OUTLINE_ARG(Fq2) a, OUTLINE_ARG(Fq2) b) { return fq2_mul(a, b); }
__device__ __noinline__ Fq2 sqr(OUTLINE_ARG(Fq2) a) { return fq2_sqr(a); }
#endif

// (a0 + a1 u)^-1 = (a0 - a1 u) / (a0^2 + a1^2)
__device__ __forceinline__ Fq2 inverse(const Fq2& a) {
    Fq t = inverse<FqTag>(add<FqTag>(mul<FqTag>(a.c0, a.c0), mul<FqTag>(a.c1, a.c1)));
    return {mul<FqTag>(a.c0, t), neg<FqTag>(mul<FqTag>(a.c1, t))};
}

__device__ __forceinline__ Fq2 fadd(const Fq2& a, const Fq2& b) { return add(a, b); }
__device__ __forceinline__ Fq2 fsub(const Fq2& a, const Fq2& b) { return sub(a, b); }
__device__ __forceinline__ Fq2 fmul(const Fq2& a, const Fq2& b) { return mul(a, b); }
__device__ __forceinline__ Fq2 fsqr(const Fq2& a) { return sqr(a); }
__device__ __forceinline__ Fq2 fneg(const Fq2& a) { return neg(a); }
__device__ __forceinline__ Fq2 finv(const Fq2& a) { return inverse(a); }
__device__ __forceinline__ Fq2 fone(Fq2) { return Fq2::one(); }
__device__ __forceinline__ Fq2 fzero(Fq2) { return Fq2::zero(); }
