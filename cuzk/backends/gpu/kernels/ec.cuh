// Short-Weierstrass (a = 0) point arithmetic for G1 (over Fq) and G2 (over Fq2), any curve whose fields
// fields.cuh instantiates (the formulas use neither the curve's b nor its twist).
//
// Affine points use the zkey layout: x then y, each coordinate's limbs in Montgomery form; the point at
// infinity is (0, 0), which is on neither group's curve when b != 0 (y^2 = x^3 + b), so unambiguous.
// Accumulators are XYZZ ("extended Jacobian": x = X/ZZ, y = Y/ZZZ, ZZ^3 = ZZZ^2); infinity has ZZ = 0.
// Formulas: EFD madd-2008-s (8M+2S), add-2008-s (12M+2S), dbl-2008-s and mdbl-2008-s.
#pragma once
#include "fp2.cuh"

// Point operations are real calls by default: each is several thousand instructions, and inlining all
// of them into every kernel made ptxas take many minutes per module. The hot loops (bucket
// accumulation, the 0/1 sums) call madd_inl instead, so their accumulator stays in registers instead of
// the local-memory stack frame a by-reference call forces. With CUZK_FQ_OUTLINE the multiplies are
// calls, a point function is small, and inlining it removes the by-reference calls whose operand
// pointer ptxas derives from a uniform register that a divergent sibling call can clobber (mont.cuh,
// OUTLINE_ARG).
#if CUZK_FQ_OUTLINE
#define POINT_FN __device__ __forceinline__
#else
#define POINT_FN __device__ __noinline__
#endif

template <class F>
struct Affine {
    F x, y;
    __device__ __forceinline__ bool is_inf() const { return x.is_zero() && y.is_zero(); }
};

template <class F>
struct XYZZ {
    F X, Y, ZZ, ZZZ;
    __device__ __forceinline__ static XYZZ inf() {
        F z = fzero(F());
        return {z, z, z, z};
    }
    __device__ __forceinline__ bool is_inf() const { return ZZ.is_zero(); }
};

template <class F>
__device__ __forceinline__ XYZZ<F> from_affine(const Affine<F>& a) {
    if (a.is_inf()) return XYZZ<F>::inf();
    F one = fone(F());
    return {a.x, a.y, one, one};
}

// 2 * (x, y) for an affine point (mdbl-2008-s)
template <class F>
POINT_FN XYZZ<F> dbl_affine(const F& x, const F& y) {
    F U = fadd(y, y);
    F V = fsqr(U);
    F W = fmul(U, V);
    F S = fmul(x, V);
    F xx = fsqr(x);
    F M = fadd(fadd(xx, xx), xx);
    F X3 = fsub(fsub(fsqr(M), S), S);
    F Y3 = fsub(fmul(M, fsub(S, X3)), fmul(W, y));
    return {X3, Y3, V, W};
}

template <class F>
POINT_FN void dbl(XYZZ<F>& p) {
    if (p.is_inf()) return;
    F U = fadd(p.Y, p.Y);
    F V = fsqr(U);
    F W = fmul(U, V);
    F S = fmul(p.X, V);
    F xx = fsqr(p.X);
    F M = fadd(fadd(xx, xx), xx);
    F X3 = fsub(fsub(fsqr(M), S), S);
    F Y3 = fsub(fmul(M, fsub(S, X3)), fmul(W, p.Y));
    p.ZZ = fmul(V, p.ZZ);
    p.ZZZ = fmul(W, p.ZZZ);
    p.X = X3;
    p.Y = Y3;
}

// p += (x, y); y may be pre-negated by the caller for a subtraction
template <class F>
__device__ __forceinline__ void madd_inl(XYZZ<F>& p, const F& x, const F& y) {
    if (x.is_zero() && y.is_zero()) return;
    if (p.is_inf()) {
        F one = fone(F());
        p = {x, y, one, one};
        return;
    }
    F U2 = fmul(x, p.ZZ);
    F S2 = fmul(y, p.ZZZ);
    F P = fsub(U2, p.X);
    F R = fsub(S2, p.Y);
    if (P.is_zero()) {
        if (R.is_zero())
            p = dbl_affine(x, y);
        else
            p = XYZZ<F>::inf();
        return;
    }
    F PP = fsqr(P);
    F PPP = fmul(P, PP);
    F Q = fmul(p.X, PP);
    F X3 = fsub(fsub(fsub(fsqr(R), PPP), Q), Q);
    F Y3 = fsub(fmul(R, fsub(Q, X3)), fmul(p.Y, PPP));
    p.ZZ = fmul(p.ZZ, PP);
    p.ZZZ = fmul(p.ZZZ, PPP);
    p.X = X3;
    p.Y = Y3;
}

template <class F>
POINT_FN void madd(XYZZ<F>& p, const F& x, const F& y) {
    madd_inl(p, x, y);
}

template <class F>
__device__ __forceinline__ void madd(XYZZ<F>& p, const Affine<F>& a) {
    madd(p, a.x, a.y);
}

// p += q (add-2008-s)
template <class F>
POINT_FN void add(XYZZ<F>& p, const XYZZ<F>& q) {
    if (q.is_inf()) return;
    if (p.is_inf()) {
        p = q;
        return;
    }
    F U1 = fmul(p.X, q.ZZ);
    F U2 = fmul(q.X, p.ZZ);
    F S1 = fmul(p.Y, q.ZZZ);
    F S2 = fmul(q.Y, p.ZZZ);
    F P = fsub(U2, U1);
    F R = fsub(S2, S1);
    if (P.is_zero()) {
        if (R.is_zero())
            dbl(p);
        else
            p = XYZZ<F>::inf();
        return;
    }
    F PP = fsqr(P);
    F PPP = fmul(P, PP);
    F Q = fmul(U1, PP);
    F X3 = fsub(fsub(fsub(fsqr(R), PPP), Q), Q);
    F Y3 = fsub(fmul(R, fsub(Q, X3)), fmul(S1, PPP));
    p.ZZ = fmul(fmul(p.ZZ, q.ZZ), PP);
    p.ZZZ = fmul(fmul(p.ZZZ, q.ZZZ), PPP);
    p.X = X3;
    p.Y = Y3;
}

template <class F>
__device__ __forceinline__ void negate(XYZZ<F>& p) {
    p.Y = fneg(p.Y);
}

// k * p for a small non-negative integer k (double-and-add, MSB first)
template <class F>
POINT_FN XYZZ<F> mul_small(const XYZZ<F>& p, u32 k) {
    XYZZ<F> r = XYZZ<F>::inf();
    if (k == 0) return r;
    int top = 31 - __clz(k);
    for (int b = top; b >= 0; b--) {
        dbl(r);
        if ((k >> b) & 1) add(r, p);
    }
    return r;
}

// affine form (one inversion: t = 1/(ZZ ZZZ), 1/ZZ = t ZZZ, 1/ZZZ = t ZZ); infinity -> (0, 0)
template <class F>
POINT_FN Affine<F> to_affine(const XYZZ<F>& p) {
    if (p.is_inf()) return {fzero(F()), fzero(F())};
    F t = finv(fmul(p.ZZ, p.ZZZ));
    return {fmul(p.X, fmul(t, p.ZZZ)), fmul(p.Y, fmul(t, p.ZZ))};
}

typedef Affine<Fq> G1Affine;
typedef XYZZ<Fq> G1XYZZ;
typedef Affine<Fq2> G2Affine;
typedef XYZZ<Fq2> G2XYZZ;
