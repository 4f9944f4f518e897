"""BN254 point arithmetic in numba, written once for G1 (over Fq) and G2 (over Fq2).

Points in kernels are Jacobian tuples (X, Y, Z) with x = X/Z^2, y = Y/Z^3 and the identity at Z = 0
(both curves have a = 0). Points in arrays are rows of uint64 words: affine x || y (Montgomery; the
identity is an all-zero row, which is not on either curve since b != 0) or Jacobian X || Y || Z.

Every kernel takes ``w``, a zero element of the group's field (``W1`` or ``W2``), only for its type:
numba compiles each kernel once per group from the same source.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from ._bn254_field import (
    FQ_ZERO,
    fadd,
    fcurve_b,
    fdbl,
    feq,
    finv,
    fis_zero,
    fload,
    fmul,
    fneg,
    fone,
    fq_below,
    fq_mul,
    fsqr,
    fstore,
    fsub,
    fwords,
    fzero,
)

W1 = FQ_ZERO
W2 = (FQ_ZERO, FQ_ZERO)
_Z = np.uint64(0)
_U1 = np.uint64(1)


def witness(group: int):
    return W1 if group == 1 else W2


# ---------------------------------------------------------------------------------------------
# formulas (a = 0)


@nb.njit(cache=True)
def jac_identity(w):
    return fone(w), fone(w), fzero(w)


@nb.njit(cache=True)
def jac_dbl(X, Y, Z):
    """dbl-2009-l: 2M + 5S. The identity (Z = 0) doubles to Z3 = 0."""
    A = fsqr(X)
    B = fsqr(Y)
    C = fsqr(B)
    D = fdbl(fsub(fsub(fsqr(fadd(X, B)), A), C))
    E = fadd(fdbl(A), A)
    F = fsqr(E)
    X3 = fsub(F, fdbl(D))
    C8 = fdbl(fdbl(fdbl(C)))
    Y3 = fsub(fmul(E, fsub(D, X3)), C8)
    Z3 = fdbl(fmul(Y, Z))
    return X3, Y3, Z3


@nb.njit(cache=True)
def jac_madd(X, Y, Z, x2, y2):
    """(X, Y, Z) + (x2, y2) with (x2, y2) affine and not the identity: madd-2007-bl, 7M + 4S."""
    if fis_zero(Z):
        return x2, y2, fone(x2)
    Z1Z1 = fsqr(Z)
    U2 = fmul(x2, Z1Z1)
    S2 = fmul(y2, fmul(Z, Z1Z1))
    H = fsub(U2, X)
    r = fdbl(fsub(S2, Y))
    if fis_zero(H):
        if fis_zero(r):
            return jac_dbl(X, Y, Z)
        return fone(x2), fone(x2), fzero(x2)
    HH = fsqr(H)
    I4 = fdbl(fdbl(HH))
    J = fmul(H, I4)
    V = fmul(X, I4)
    X3 = fsub(fsub(fsqr(r), J), fdbl(V))
    Y3 = fsub(fmul(r, fsub(V, X3)), fdbl(fmul(Y, J)))
    Z3 = fsub(fsub(fsqr(fadd(Z, H)), Z1Z1), HH)
    return X3, Y3, Z3


@nb.njit(cache=True)
def jac_add(X1, Y1, Z1, X2, Y2, Z2):
    """add-2007-bl: 11M + 5S, with the identity and P + P, P + (-P) handled."""
    if fis_zero(Z1):
        return X2, Y2, Z2
    if fis_zero(Z2):
        return X1, Y1, Z1
    Z1Z1 = fsqr(Z1)
    Z2Z2 = fsqr(Z2)
    U1 = fmul(X1, Z2Z2)
    U2 = fmul(X2, Z1Z1)
    S1 = fmul(fmul(Y1, Z2), Z2Z2)
    S2 = fmul(fmul(Y2, Z1), Z1Z1)
    H = fsub(U2, U1)
    r = fdbl(fsub(S2, S1))
    if fis_zero(H):
        if fis_zero(r):
            return jac_dbl(X1, Y1, Z1)
        return fone(X1), fone(X1), fzero(X1)
    I = fsqr(fdbl(H))  # noqa: E741
    J = fmul(H, I)
    V = fmul(U1, I)
    X3 = fsub(fsub(fsqr(r), J), fdbl(V))
    Y3 = fsub(fmul(r, fsub(V, X3)), fdbl(fmul(S1, J)))
    Z3 = fmul(fsub(fsub(fsqr(fadd(Z1, Z2)), Z1Z1), Z2Z2), H)
    return X3, Y3, Z3


@nb.njit(cache=True)
def jac_eq(X1, Y1, Z1, X2, Y2, Z2):
    i1 = fis_zero(Z1)
    i2 = fis_zero(Z2)
    if i1 or i2:
        return i1 and i2
    Z1Z1 = fsqr(Z1)
    Z2Z2 = fsqr(Z2)
    if not feq(fmul(X1, Z2Z2), fmul(X2, Z1Z1)):
        return False
    return feq(fmul(fmul(Y1, Z2), Z2Z2), fmul(fmul(Y2, Z1), Z1Z1))


@nb.njit(cache=True)
def jac_to_affine(X, Y, Z):
    """(x, y); the identity -> (0, 0)."""
    if fis_zero(Z):
        return fzero(X), fzero(X)
    zi = finv(Z)
    zi2 = fsqr(zi)
    return fmul(X, zi2), fmul(Y, fmul(zi, zi2))


@nb.njit(cache=True)
def on_curve(x, y):
    """y^2 == x^3 + b (affine, Montgomery)."""
    return feq(fsqr(y), fadd(fmul(fsqr(x), x), fcurve_b(x)))


@nb.njit(cache=True)
def jac_mul(X, Y, Z, s):
    """(X, Y, Z) * s for s a canonical 4-limb integer (left-to-right double-and-add on a 4-bit
    window: 15 precomputed multiples)."""
    tx = [X] * 16
    ty = [Y] * 16
    tz = [Z] * 16
    ix, iy, iz = jac_identity(X)
    tx[0], ty[0], tz[0] = ix, iy, iz
    for j in range(2, 16):
        if j % 2 == 0:
            tx[j], ty[j], tz[j] = jac_dbl(tx[j // 2], ty[j // 2], tz[j // 2])
        else:
            tx[j], ty[j], tz[j] = jac_add(tx[j - 1], ty[j - 1], tz[j - 1], X, Y, Z)
    ax, ay, az = ix, iy, iz
    for k in range(63, -1, -1):
        limb = s[k // 16]
        d = np.int64((limb >> np.uint64(4 * (k % 16))) & np.uint64(15))
        ax, ay, az = jac_dbl(ax, ay, az)
        ax, ay, az = jac_dbl(ax, ay, az)
        ax, ay, az = jac_dbl(ax, ay, az)
        ax, ay, az = jac_dbl(ax, ay, az)
        if d != 0:
            ax, ay, az = jac_add(ax, ay, az, tx[d], ty[d], tz[d])
    return ax, ay, az


# ---------------------------------------------------------------------------------------------
# single-point kernels for the Python objects: a point is a (1, 3 * words) Jacobian row


@nb.njit(cache=True)
def _ld(w, a):
    k = fwords(w)
    return fload(w, a, 0, 0), fload(w, a, 0, k), fload(w, a, 0, 2 * k)


@nb.njit(cache=True)
def _st(out, P):
    k = fwords(P[0])
    fstore(out, 0, 0, P[0])
    fstore(out, 0, k, P[1])
    fstore(out, 0, 2 * k, P[2])


OP_ADD, OP_DBL, OP_NEG, OP_MUL, OP_EQ, OP_AFFINE = range(6)


@nb.njit(cache=True)
def k_point(w, op, a, b, s, out):
    """One kernel for every single-point operation of the Python objects (one compilation per group
    instead of one per operation: the G2 formulas are large and each kernel re-optimised its own copy).
    a, b: (1, 3 words) Jacobian rows; s: 4-limb canonical scalar; out: (1, 3 words), or (1, 2 words)
    affine for OP_AFFINE. Returns the comparison for OP_EQ, else 0."""
    X, Y, Z = _ld(w, a)
    if op == OP_ADD:
        X2, Y2, Z2 = _ld(w, b)
        _st(out, jac_add(X, Y, Z, X2, Y2, Z2))
    elif op == OP_DBL:
        _st(out, jac_dbl(X, Y, Z))
    elif op == OP_NEG:
        _st(out, (X, fneg(Y), Z))
    elif op == OP_MUL:
        _st(out, jac_mul(X, Y, Z, s))
    elif op == OP_EQ:
        X2, Y2, Z2 = _ld(w, b)
        return 1 if jac_eq(X, Y, Z, X2, Y2, Z2) else 0
    elif op == OP_AFFINE:
        x, y = jac_to_affine(X, Y, Z)
        k = fwords(w)
        fstore(out, 0, 0, x)
        fstore(out, 0, k, y)
    return 0


# ---------------------------------------------------------------------------------------------
# bulk kernels


@nb.njit(nogil=True, cache=True)
def k_validate(w, pts, lo, hi, flags):
    """Affine Montgomery rows lo..hi: flags[i] = 0 (valid or identity), 1 (a coordinate >= q), 2 (off
    the curve). (Not a prange kernel: numba's parallel wrapper rejects the nested-tuple witness of G2;
    the caller spreads ranges over threads.)"""
    k = fwords(w)
    for i in range(lo, hi):
        ok = True
        zero = True
        for j in range(0, 2 * k, 4):
            if not fq_below((pts[i, j], pts[i, j + 1], pts[i, j + 2], pts[i, j + 3])):
                ok = False
            if (pts[i, j] | pts[i, j + 1] | pts[i, j + 2] | pts[i, j + 3]) != _Z:
                zero = False
        if not ok:
            flags[i] = 1
        elif zero:
            flags[i] = 0
        else:
            x = fload(w, pts, i, 0)
            y = fload(w, pts, i, k)
            flags[i] = 0 if on_curve(x, y) else 2


@nb.njit(cache=True)
def k_point_from_canonical(w, raw, r2, out):
    """One canonical affine row (1, 2 words) -> a Jacobian Montgomery row out (1, 3 words). Returns 0,
    1 (a coordinate >= q) or 2 (off the curve); the zero row is the identity."""
    k = fwords(w)
    zero = True
    for j in range(0, 2 * k, 4):
        if not fq_below((raw[0, j], raw[0, j + 1], raw[0, j + 2], raw[0, j + 3])):
            return 1
        if (raw[0, j] | raw[0, j + 1] | raw[0, j + 2] | raw[0, j + 3]) != _Z:
            zero = False
    if zero:
        _st(out, jac_identity(w))
        return 0
    mont = np.empty((1, 2 * k), dtype=np.uint64)
    for j in range(0, 2 * k, 4):
        mont[0, j], mont[0, j + 1], mont[0, j + 2], mont[0, j + 3] = fq_mul(
            (raw[0, j], raw[0, j + 1], raw[0, j + 2], raw[0, j + 3]), r2
        )
    x = fload(w, mont, 0, 0)
    y = fload(w, mont, 0, k)
    if not on_curve(x, y):
        return 2
    _st(out, (x, y, fone(w)))
    return 0


@nb.njit(nogil=True, cache=True)
def jac_rows_to_affine(w, jac, out, lo, hi, scratch):
    """Jacobian rows jac[lo:hi] -> affine Montgomery rows out[lo:hi] (identity -> zeros), one field
    inversion for the range (Montgomery's trick; scratch holds (hi - lo, words) prefix products)."""
    k = fwords(w)
    acc = fone(w)
    for i in range(lo, hi):
        fstore(scratch, i - lo, 0, acc)
        z = fload(w, jac, i, 2 * k)
        if not fis_zero(z):
            acc = fmul(acc, z)
    inv = finv(acc)
    for i in range(hi - 1, lo - 1, -1):
        z = fload(w, jac, i, 2 * k)
        if fis_zero(z):
            for j in range(2 * k):
                out[i, j] = _Z
            continue
        zi = fmul(inv, fload(w, scratch, i - lo, 0))
        inv = fmul(inv, z)
        zi2 = fsqr(zi)
        fstore(out, i, 0, fmul(fload(w, jac, i, 0), zi2))
        fstore(out, i, k, fmul(fload(w, jac, i, k), fmul(zi2, zi)))


@nb.njit(nogil=True, cache=True)
def k_rows_from_mont(rows, out):
    """Montgomery Fq limbs -> canonical, for every 4-word group of every row. (Serial: the callers
    convert one point or one GT value, and a parallel region cost 7 ms to start on a busy machine.)"""
    n = rows.shape[0]
    m = rows.shape[1]
    one = (_U1, _Z, _Z, _Z)
    for i in range(n):
        for j in range(0, m, 4):
            out[i, j], out[i, j + 1], out[i, j + 2], out[i, j + 3] = fq_mul(
                (rows[i, j], rows[i, j + 1], rows[i, j + 2], rows[i, j + 3]), one
            )


@nb.njit(nogil=True, cache=True)
def k_rows_to_mont(rows, out, r2):
    """Canonical Fq limbs -> Montgomery (times r2 = 2^512 mod q), every 4-word group of every row."""
    n = rows.shape[0]
    m = rows.shape[1]
    for i in range(n):
        for j in range(0, m, 4):
            out[i, j], out[i, j + 1], out[i, j + 2], out[i, j + 3] = fq_mul(
                (rows[i, j], rows[i, j + 1], rows[i, j + 2], rows[i, j + 3]), r2
            )
