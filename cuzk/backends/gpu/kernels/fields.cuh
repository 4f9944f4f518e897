// The curve's two prime fields, Fr (scalars) and Fq (coordinates), from the generated preamble
// (cuzk/curves: Curve.gpu_preamble, the single source of truth): CUZK_FR_LIMBS / CUZK_FQ_LIMBS 32-bit
// limbs (BLS12-381: 8 / 12, BN254: 8 / 8), CUZK_FR_BITS / CUZK_FQ_BITS, and each field's P, NP0, ONE,
// R2 and PM2. Plus the Fq operations the curve code (ec.cuh) is written against: fadd, fsub, fmul,
// fsqr, fneg, finv, fone, fzero (fp2.cuh gives the same names over Fq2).
#pragma once
#include "mont.cuh"

CUZK_FIELD_TAG(Fr, CUZK_FR_LIMBS, FR)
CUZK_FIELD_TAG(Fq, CUZK_FQ_LIMBS, FQ)

typedef Elem<FrTag> Fr;
typedef Elem<FqTag> Fq;

#if CUZK_FQ_OUTLINE
// One out-of-line copy of the Fq multiply and square, operands by value (OUTLINE_ARG, mont.cuh).
__device__ __noinline__ Fq fq_mul_call(const Fq a, const Fq b) { return mul<FqTag>(a, b); }
__device__ __noinline__ Fq fq_sqr_call(const Fq a) { return sqr<FqTag>(a); }
#endif

__device__ __forceinline__ Fq fadd(const Fq& a, const Fq& b) { return add<FqTag>(a, b); }
__device__ __forceinline__ Fq fsub(const Fq& a, const Fq& b) { return sub<FqTag>(a, b); }
// With CUZK_FQ_OUTLINE the curve code's Fq multiply and square are calls to one out-of-line copy each
// instead of ~800 inlined instructions per use (BLS12-381). The XYZZ accumulation loop inlines ten of
// them (over 600 KB of SASS for the kernel), and ncu showed its warps stalled on instruction fetch for
// a third of their cycles; one copy fits the instruction cache, at the price of a call and its argument
// moves (G1 MSM 2^26 966 -> 767 ms, G2 2^24 1068 -> 740 ms on the H200: NOTES.md, BENCHMARKS 2e).
#if CUZK_FQ_OUTLINE
__device__ __forceinline__ Fq fmul(const Fq& a, const Fq& b) { return fq_mul_call(a, b); }
__device__ __forceinline__ Fq fsqr(const Fq& a) { return fq_sqr_call(a); }
#else
__device__ __forceinline__ Fq fmul(const Fq& a, const Fq& b) { return mul<FqTag>(a, b); }
__device__ __forceinline__ Fq fsqr(const Fq& a) { return sqr<FqTag>(a); }
#endif
__device__ __forceinline__ Fq fneg(const Fq& a) { return neg<FqTag>(a); }
__device__ __forceinline__ Fq finv(const Fq& a) { return inverse<FqTag>(a); }
__device__ __forceinline__ Fq fone(Fq) { return Fq::one(); }
__device__ __forceinline__ Fq fzero(Fq) { return Fq::zero(); }
