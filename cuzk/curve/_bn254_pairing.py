"""BN254 optimal ate pairing in numba: Fq6, Fq12, the Miller loop and the final exponentiation.

Tower (arkworks', snarkjs'): Fq6 = Fq2[v]/(v^3 - xi), xi = 9 + u; Fq12 = Fq6[w]/(w^2 - v). An Fq6 value
is a 3-tuple of Fq2 values, an Fq12 value the pair (c0, c1) of Fq6 values; in arrays an Fq12 value is a
(1, 48) uint64 row in arkworks' serialisation order (c0.c0.c0, c0.c0.c1, c0.c1.c0, ..., c1.c2.c1),
Montgomery form.

Miller loop: G2 points stay on the D-type twist E'(Fq2): y^2 = x^3 + b' in homogeneous projective
coordinates (x = X/Z, y = Y/Z); the untwisting map (x, y) -> (x w^2, y w^3) makes a line through twist
points, evaluated at P = (xP, yP) in G1, the sparse element

    yP * s + (-slope_num * xP) w + (slope_num * x_T - s * y_T) v w     (s: the slope's denominator)

with non-zero coefficients at c0.c0 (in Fq2 after scaling), c1.c0 and c1.c1 only ("034"); the scaling
factors are in Fq2 and vanish in the final exponentiation. Loop count 6z + 2 in NAF (z = 4965661367192848881),
then the two Frobenius lines (pi(Q), -pi^2(Q)). Several pairs share one loop (one squaring of f per bit).

Final exponentiation: easy part f^((q^6 - 1)(q^2 + 1)), then the hard part by the addition chain of
Fuentes-Castaneda, Knapp and Rodriguez-Henriquez (2011), which raises to 2z(6z^2 + 3z + 1) * (q^4 - q^2 + 1)/r
rather than (q^4 - q^2 + 1)/r. That multiple is what arkworks, libff and snarkjs (wasmcurves) compute,
so GT values (e.g. vk_alphabeta_12) match theirs coefficient for coefficient; the exponent is prime to
r, so the map is still a non-degenerate bilinear pairing (NOTES.md, "BN254 CPU point library").
"""

from __future__ import annotations

import numba as nb
import numpy as np

from ._bn254_field import (
    FQ_ONE,
    FQ_ZERO,
    B2x3_MONT,
    Q,
    f2_add,
    f2_conj,
    f2_dbl,
    f2_eq,
    f2_inv,
    f2_is_zero,
    f2_mul_xi,
    f2_neg,
    f2_sub,
    fmul,
    fq_is_zero,
    fsqr,
    mont_tuple,
)
from ._bn254_field import f2_mul_fq as _f2_mul_fq

Z_PARAM = 4965661367192848881


def _naf(n: int) -> list[int]:
    out = []
    while n > 0:
        if n & 1:
            d = 2 - (n % 4)
            out.append(d)
            n -= d
        else:
            out.append(0)
        n >>= 1
    return out[::-1]  # most significant first


ATE_NAF = np.array(_naf(6 * Z_PARAM + 2), dtype=np.int8)
Z_NAF = np.array(_naf(Z_PARAM), dtype=np.int8)

# ---------------------------------------------------------------------------------------------
# Frobenius constants: gamma[k][i] = xi^(i (q^k - 1) / 6) for the coefficient of w^i


def _f2mul_int(a, b):
    return ((a[0] * b[0] - a[1] * b[1]) % Q, (a[0] * b[1] + a[1] * b[0]) % Q)


def _f2pow_int(a, e):
    r = (1, 0)
    while e:
        if e & 1:
            r = _f2mul_int(r, a)
        a = _f2mul_int(a, a)
        e >>= 1
    return r


def _gamma(k: int, i: int):
    c = _f2pow_int((9, 1), i * (Q**k - 1) // 6)
    return (mont_tuple(c[0]), mont_tuple(c[1]))


G1_ = tuple(_gamma(1, i) for i in range(6))
G2_ = tuple(_gamma(2, i) for i in range(6))
G3_ = tuple(_gamma(3, i) for i in range(6))
F2_ONE = (FQ_ONE, FQ_ZERO)
F2_ZERO = (FQ_ZERO, FQ_ZERO)

f2_mul = fmul
f2_sqr = fsqr


@nb.njit(cache=True)
def f2_mul_fq(a, s):
    return _f2_mul_fq(a, s)


# ---------------------------------------------------------------------------------------------
# Fq6


@nb.njit(cache=True)
def f6_add(a, b):
    return f2_add(a[0], b[0]), f2_add(a[1], b[1]), f2_add(a[2], b[2])


@nb.njit(cache=True)
def f6_sub(a, b):
    return f2_sub(a[0], b[0]), f2_sub(a[1], b[1]), f2_sub(a[2], b[2])


@nb.njit(cache=True)
def f6_neg(a):
    return f2_neg(a[0]), f2_neg(a[1]), f2_neg(a[2])


@nb.njit(cache=True)
def f6_mul_v(a):
    """a * v = (xi a2, a0, a1)."""
    return f2_mul_xi(a[2]), a[0], a[1]


@nb.njit(cache=True)
def f6_mul(a, b):
    """Karatsuba: 6 Fq2 products."""
    v0 = f2_mul(a[0], b[0])
    v1 = f2_mul(a[1], b[1])
    v2 = f2_mul(a[2], b[2])
    c0 = f2_add(v0, f2_mul_xi(f2_sub(f2_sub(f2_mul(f2_add(a[1], a[2]), f2_add(b[1], b[2])), v1), v2)))
    c1 = f2_add(f2_sub(f2_sub(f2_mul(f2_add(a[0], a[1]), f2_add(b[0], b[1])), v0), v1), f2_mul_xi(v2))
    c2 = f2_add(f2_sub(f2_sub(f2_mul(f2_add(a[0], a[2]), f2_add(b[0], b[2])), v0), v2), v1)
    return c0, c1, c2


@nb.njit(cache=True)
def f6_mul_01(a, d0, d1):
    """a * (d0 + d1 v): 5 Fq2 products."""
    aa = f2_mul(a[0], d0)
    bb = f2_mul(a[1], d1)
    t1 = f2_sub(f2_sub(f2_mul(f2_add(a[0], a[1]), f2_add(d0, d1)), aa), bb)
    c0 = f2_add(f2_mul_xi(f2_mul(a[2], d1)), aa)
    c2 = f2_add(f2_mul(a[2], d0), bb)
    return c0, t1, c2


@nb.njit(cache=True)
def f6_mul_f2(a, d):
    return f2_mul(a[0], d), f2_mul(a[1], d), f2_mul(a[2], d)


@nb.njit(cache=True)
def f6_inv(a):
    a0, a1, a2 = a
    t0 = f2_sub(f2_sqr(a0), f2_mul_xi(f2_mul(a1, a2)))
    t1 = f2_sub(f2_mul_xi(f2_sqr(a2)), f2_mul(a0, a1))
    t2 = f2_sub(f2_sqr(a1), f2_mul(a0, a2))
    den = f2_add(f2_mul(a0, t0), f2_mul_xi(f2_add(f2_mul(a2, t1), f2_mul(a1, t2))))
    di = f2_inv(den)
    return f2_mul(t0, di), f2_mul(t1, di), f2_mul(t2, di)


# ---------------------------------------------------------------------------------------------
# Fq12


@nb.njit(cache=True)
def f12_one():
    z = (F2_ZERO, F2_ZERO, F2_ZERO)
    return (F2_ONE, F2_ZERO, F2_ZERO), z


@nb.njit(cache=True)
def f12_mul(a, b):
    t0 = f6_mul(a[0], b[0])
    t1 = f6_mul(a[1], b[1])
    c1 = f6_sub(f6_sub(f6_mul(f6_add(a[0], a[1]), f6_add(b[0], b[1])), t0), t1)
    return f6_add(t0, f6_mul_v(t1)), c1


@nb.njit(cache=True)
def f12_sqr(a):
    """(a0 + a1 w)^2 = (a0 + a1)(a0 + v a1) - t - v t + 2t w, t = a0 a1: 2 Fq6 products."""
    t = f6_mul(a[0], a[1])
    c0 = f6_sub(f6_sub(f6_mul(f6_add(a[0], a[1]), f6_add(a[0], f6_mul_v(a[1]))), t), f6_mul_v(t))
    return c0, f6_add(t, t)


@nb.njit(cache=True)
def f12_conj(a):
    return a[0], f6_neg(a[1])


@nb.njit(cache=True)
def f12_inv(a):
    """(a0 - a1 w) / (a0^2 - v a1^2)."""
    t = f6_inv(f6_sub(f6_mul(a[0], a[0]), f6_mul_v(f6_mul(a[1], a[1]))))
    return f6_mul(a[0], t), f6_neg(f6_mul(a[1], t))


@nb.njit(cache=True)
def f12_mul_034(f, c0, c3, c4):
    """f * (c0 + (c3 + c4 v) w), the shape of a Miller-loop line: 13 Fq2 products."""
    a, b = f
    t0 = f6_mul_f2(a, c0)
    t1 = f6_mul_01(b, c3, c4)
    n1 = f6_sub(f6_sub(f6_mul_01(f6_add(a, b), f2_add(c0, c3), c4), t0), t1)
    return f6_add(t0, f6_mul_v(t1)), n1


@nb.njit(cache=True)
def f12_eq(a, b):
    for i in range(2):
        for j in range(3):
            if not f2_eq(a[i][j], b[i][j]):
                return False
    return True


@nb.njit(cache=True)
def f12_is_one(a):
    return f12_eq(a, f12_one())


@nb.njit(cache=True)
def _frob(a, g, conj):
    """The k-th Frobenius power with constants g = gamma_k (conjugate the Fq2 coefficients for odd k).
    Coefficient of w^i: c0.c0 = w^0, c1.c0 = w^1, c0.c1 = w^2, c1.c1 = w^3, c0.c2 = w^4, c1.c2 = w^5."""
    x0, x1 = a
    if conj:
        x0 = (f2_conj(x0[0]), f2_conj(x0[1]), f2_conj(x0[2]))
        x1 = (f2_conj(x1[0]), f2_conj(x1[1]), f2_conj(x1[2]))
    c0 = (x0[0], f2_mul(x0[1], g[2]), f2_mul(x0[2], g[4]))
    c1 = (f2_mul(x1[0], g[1]), f2_mul(x1[1], g[3]), f2_mul(x1[2], g[5]))
    return c0, c1


@nb.njit(cache=True)
def f12_frob1(a):
    return _frob(a, G1_, True)


@nb.njit(cache=True)
def f12_frob2(a):
    return _frob(a, G2_, False)


@nb.njit(cache=True)
def f12_frob3(a):
    return _frob(a, G3_, True)


@nb.njit(cache=True)
def _f4_sqr(a0, a1):
    """(a0 + a1 s)^2 with s^2 = xi: (a0^2 + xi a1^2, 2 a0 a1)."""
    t0 = f2_sqr(a0)
    t1 = f2_sqr(a1)
    return f2_add(t0, f2_mul_xi(t1)), f2_sub(f2_sub(f2_sqr(f2_add(a0, a1)), t0), t1)


@nb.njit(cache=True)
def f12_cyclo_sqr(f):
    """Squaring in the cyclotomic subgroup (Granger-Scott): f = A + B w + C w^2 over Fq4 = Fq2[s],
    s = w^3, with A = (c0.c0, c1.c1), B = (c1.c0, c0.c2), C = (c0.c1, c1.c2);
    f^2 = (3A^2 - 2 conj A) + (3 s C^2 + 2 conj B) w + (3 B^2 - 2 conj C) w^2."""
    (g0, g2, g4), (g1, g3, g5) = f
    a0, a1 = _f4_sqr(g0, g3)
    b0, b1 = _f4_sqr(g1, g4)
    c0, c1 = _f4_sqr(g2, g5)
    # A' = 3 A^2 - 2 conj(A): (3 a0 - 2 g0, 3 a1 + 2 g3)
    n0 = f2_add(f2_dbl(f2_sub(a0, g0)), a0)
    n3 = f2_add(f2_dbl(f2_add(a1, g3)), a1)
    # B' = 3 s C^2 + 2 conj(B): s (c0 + c1 s) = xi c1 + c0 s -> (3 xi c1 + 2 g1, 3 c0 - 2 g4)
    xc1 = f2_mul_xi(c1)
    n1 = f2_add(f2_dbl(f2_add(xc1, g1)), xc1)
    n4 = f2_add(f2_dbl(f2_sub(c0, g4)), c0)
    # C' = 3 B^2 - 2 conj(C): (3 b0 - 2 g2, 3 b1 + 2 g5)
    n2 = f2_add(f2_dbl(f2_sub(b0, g2)), b0)
    n5 = f2_add(f2_dbl(f2_add(b1, g5)), b1)
    return (n0, n2, n4), (n1, n3, n5)


@nb.njit(cache=True)
def f12_cyclo_exp_naf(f, naf):
    """f^e in the cyclotomic subgroup (inverse = conjugate), e given in NAF, most significant first."""
    fi = f12_conj(f)
    r = f if naf[0] == 1 else fi
    for i in range(1, naf.shape[0]):
        r = f12_cyclo_sqr(r)
        if naf[i] == 1:
            r = f12_mul(r, f)
        elif naf[i] == -1:
            r = f12_mul(r, fi)
    return r


@nb.njit(cache=True)
def _exp_neg_z(f):
    return f12_conj(f12_cyclo_exp_naf(f, Z_NAF))


@nb.njit(cache=True)
def final_exp(f):
    # easy part: f^((q^6 - 1)(q^2 + 1))
    f1 = f12_mul(f12_conj(f), f12_inv(f))
    f = f12_mul(f12_frob2(f1), f1)
    # hard part (exponent 2z(6z^2 + 3z + 1)(q^4 - q^2 + 1)/r; see the module docstring)
    a = _exp_neg_z(f)  # f^-z
    b = f12_cyclo_sqr(a)  # f^-2z
    c = f12_cyclo_sqr(b)  # f^-4z
    d = f12_mul(c, b)  # f^-6z
    e = _exp_neg_z(d)  # f^6z^2
    g = _exp_neg_z(f12_cyclo_sqr(e))  # f^-12z^3
    k = f12_mul(f12_mul(f12_conj(g), e), f12_conj(d))  # f^(12z^3 + 6z^2 + 6z)
    l_ = f12_mul(k, b)  # f^(12z^3 + 6z^2 + 4z)
    n = f12_mul(f12_mul(k, e), f)  # f^(12z^3 + 12z^2 + 6z + 1)
    t = f12_mul(f12_frob1(l_), n)
    t = f12_mul(f12_frob2(k), t)
    u = f12_frob3(f12_mul(f12_conj(f), l_))  # f^(q^3 (12z^3 + 6z^2 + 4z - 1))
    return f12_mul(u, t)


# ---------------------------------------------------------------------------------------------
# Miller loop


@nb.njit(cache=True)
def _dbl_step(X, Y, Z, xp, yp):
    """T = 2T in homogeneous coordinates on the twist (scaled by 4 to avoid halving) and the tangent
    line at T, evaluated at P: (c0, c3, c4)."""
    B = f2_sqr(Y)
    C = f2_sqr(Z)
    E = f2_mul(C, B2x3_MONT)  # 3 b' Z^2
    F = f2_add(f2_dbl(E), E)  # 9 b' Z^2
    H = f2_dbl(f2_mul(Y, Z))  # 2 Y Z
    J = f2_sqr(X)
    # line * 2YZ: 2YZ yP - 3X^2 xP w + (Y^2 - 3 b' Z^2) v w
    l0 = f2_mul_fq(H, yp)
    l3 = f2_neg(f2_mul_fq(f2_add(f2_dbl(J), J), xp))
    l4 = f2_sub(B, E)
    # 2T (times 4): X3 = 2XY (B - F), Y3 = (B + F)^2 - 12 E^2, Z3 = 4 B H
    X3 = f2_dbl(f2_mul(f2_mul(X, Y), f2_sub(B, F)))
    E2 = f2_sqr(E)
    E4 = f2_dbl(f2_dbl(E2))
    Y3 = f2_sub(f2_sqr(f2_add(B, F)), f2_add(f2_dbl(E4), E4))
    Z3 = f2_dbl(f2_dbl(f2_mul(B, H)))
    return X3, Y3, Z3, l0, l3, l4


@nb.njit(cache=True)
def _add_step(X, Y, Z, x2, y2, xp, yp):
    """T = T + (x2, y2) (affine) and the line through them, evaluated at P: (c0, c3, c4)."""
    th = f2_sub(Y, f2_mul(y2, Z))
    la = f2_sub(X, f2_mul(x2, Z))
    C = f2_sqr(th)
    D = f2_sqr(la)
    E = f2_mul(la, D)
    F = f2_mul(Z, C)
    G = f2_mul(X, D)
    H = f2_sub(f2_add(E, F), f2_dbl(G))
    X3 = f2_mul(la, H)
    Y3 = f2_sub(f2_mul(th, f2_sub(G, H)), f2_mul(Y, E))
    Z3 = f2_mul(Z, E)
    # line * la: la yP - th xP w + (th x2 - la y2) v w
    l0 = f2_mul_fq(la, yp)
    l3 = f2_neg(f2_mul_fq(th, xp))
    l4 = f2_sub(f2_mul(th, x2), f2_mul(la, y2))
    return X3, Y3, Z3, l0, l3, l4


@nb.njit(cache=True)
def _ldq(qs, i):
    x = ((qs[i, 0], qs[i, 1], qs[i, 2], qs[i, 3]), (qs[i, 4], qs[i, 5], qs[i, 6], qs[i, 7]))
    y = ((qs[i, 8], qs[i, 9], qs[i, 10], qs[i, 11]), (qs[i, 12], qs[i, 13], qs[i, 14], qs[i, 15]))
    return x, y


@nb.njit(cache=True)
def miller_loop(ps, qs, m):
    """prod_i f_{6z+2, Q_i}(P_i) * (Frobenius lines), over the pairs whose points are both non-zero.
    ps: (m, 8) affine Montgomery G1 rows, qs: (m, 16) affine Montgomery G2 rows (zeros: identity)."""
    f = f12_one()
    live = np.zeros(m, dtype=np.bool_)
    T = np.zeros((m, 24), dtype=np.uint64)
    for i in range(m):
        pz = fq_is_zero((ps[i, 0], ps[i, 1], ps[i, 2], ps[i, 3])) and fq_is_zero((ps[i, 4], ps[i, 5], ps[i, 6], ps[i, 7]))
        x, y = _ldq(qs, i)
        qz = f2_is_zero(x) and f2_is_zero(y)
        live[i] = not (pz or qz)
        _stT(T, i, x, y, F2_ONE)
    for bit in range(1, ATE_NAF.shape[0]):
        f = f12_sqr(f)
        for i in range(m):
            if not live[i]:
                continue
            xp = (ps[i, 0], ps[i, 1], ps[i, 2], ps[i, 3])
            yp = (ps[i, 4], ps[i, 5], ps[i, 6], ps[i, 7])
            X, Y, Z = _ldT(T, i)
            X, Y, Z, l0, l3, l4 = _dbl_step(X, Y, Z, xp, yp)
            f = f12_mul_034(f, l0, l3, l4)
            d = ATE_NAF[bit]
            if d != 0:
                x2, y2 = _ldq(qs, i)
                if d < 0:
                    y2 = f2_neg(y2)
                X, Y, Z, l0, l3, l4 = _add_step(X, Y, Z, x2, y2, xp, yp)
                f = f12_mul_034(f, l0, l3, l4)
            _stT(T, i, X, Y, Z)
    for i in range(m):
        if not live[i]:
            continue
        xp = (ps[i, 0], ps[i, 1], ps[i, 2], ps[i, 3])
        yp = (ps[i, 4], ps[i, 5], ps[i, 6], ps[i, 7])
        X, Y, Z = _ldT(T, i)
        x2, y2 = _ldq(qs, i)
        # pi(Q) = (conj(x) xi^((q-1)/3), conj(y) xi^((q-1)/2)); -pi^2(Q) = (x xi^((q^2-1)/3), -y xi^((q^2-1)/2))
        x1 = f2_mul(f2_conj(x2), G1_[2])
        y1 = f2_mul(f2_conj(y2), G1_[3])
        X, Y, Z, l0, l3, l4 = _add_step(X, Y, Z, x1, y1, xp, yp)
        f = f12_mul_034(f, l0, l3, l4)
        x3 = f2_mul(x2, G2_[2])
        y3 = f2_neg(f2_mul(y2, G2_[3]))
        X, Y, Z, l0, l3, l4 = _add_step(X, Y, Z, x3, y3, xp, yp)
        f = f12_mul_034(f, l0, l3, l4)
    return f


@nb.njit(cache=True)
def _ldT(T, i):
    return (
        ((T[i, 0], T[i, 1], T[i, 2], T[i, 3]), (T[i, 4], T[i, 5], T[i, 6], T[i, 7])),
        ((T[i, 8], T[i, 9], T[i, 10], T[i, 11]), (T[i, 12], T[i, 13], T[i, 14], T[i, 15])),
        ((T[i, 16], T[i, 17], T[i, 18], T[i, 19]), (T[i, 20], T[i, 21], T[i, 22], T[i, 23])),
    )


@nb.njit(cache=True)
def _stT(T, i, X, Y, Z):
    j = 0
    for c in (X, Y, Z):
        for h in range(2):
            e = c[h]
            T[i, j], T[i, j + 1], T[i, j + 2], T[i, j + 3] = e[0], e[1], e[2], e[3]
            j += 4


# ---------------------------------------------------------------------------------------------
# (1, 48) rows


@nb.njit(cache=True)
def f12_load(a):
    v = [FQ_ZERO] * 12
    for i in range(12):
        v[i] = (a[0, 4 * i], a[0, 4 * i + 1], a[0, 4 * i + 2], a[0, 4 * i + 3])
    c0 = ((v[0], v[1]), (v[2], v[3]), (v[4], v[5]))
    c1 = ((v[6], v[7]), (v[8], v[9]), (v[10], v[11]))
    return c0, c1


@nb.njit(cache=True)
def f12_store(out, f):
    j = 0
    for h in range(2):
        for k in range(3):
            for t in range(2):
                e = f[h][k][t]
                out[0, j], out[0, j + 1], out[0, j + 2], out[0, j + 3] = e[0], e[1], e[2], e[3]
                j += 4


@nb.njit(nogil=True, cache=True)
def k_pairing(ps, qs, m, out):
    """out = final_exp(miller_loop(...)) (the product of the m pairings)."""
    f12_store(out, final_exp(miller_loop(ps, qs, m)))


@nb.njit(nogil=True, cache=True)
def k_pairing_check(ps, qs, m):
    return f12_is_one(final_exp(miller_loop(ps, qs, m)))


@nb.njit(nogil=True, cache=True)
def k_miller(ps, qs, m, out):
    f12_store(out, miller_loop(ps, qs, m))


@nb.njit(nogil=True, cache=True)
def k_final_exp(a, out):
    f12_store(out, final_exp(f12_load(a)))


@nb.njit(cache=True)
def k_f12_mul(a, b, out):
    f12_store(out, f12_mul(f12_load(a), f12_load(b)))


@nb.njit(cache=True)
def k_f12_sqr(a, out):
    f12_store(out, f12_sqr(f12_load(a)))


@nb.njit(cache=True)
def k_f12_cyclo_sqr(a, out):
    f12_store(out, f12_cyclo_sqr(f12_load(a)))


@nb.njit(cache=True)
def k_f12_inv(a, out):
    f12_store(out, f12_inv(f12_load(a)))


@nb.njit(cache=True)
def k_f12_frob(a, k, out):
    f = f12_load(a)
    if k == 1:
        f = f12_frob1(f)
    elif k == 2:
        f = f12_frob2(f)
    else:
        f = f12_frob3(f)
    f12_store(out, f)


@nb.njit(cache=True)
def k_f12_pow(a, bits, out):
    """a^e (generic squarings), e as bits from the top."""
    f = f12_load(a)
    r = f12_one()
    for i in range(bits.shape[0]):
        r = f12_sqr(r)
        if bits[i]:
            r = f12_mul(r, f)
    f12_store(out, r)
