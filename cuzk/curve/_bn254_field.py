# ruff: noqa: PLW0108  (the overloads below return lambdas: numba needs Python functions there)
"""BN254 base field Fq and its quadratic extension Fq2 = Fq[u]/(u^2 + 1), as numba values.

An Fq element is a 4-tuple of uint64 limbs (little-endian, Montgomery form x * 2^256 mod q, fully
reduced); an Fq2 element is the pair (c0, c1) of Fq tuples for c0 + c1 u. Tuples stay in registers
once LLVM inlines the small functions (it does: a 4-limb product through a plain ``njit`` call costs
the same as through ``inline="always"``, ~20 ns, NOTES.md), and numba types them without allocation.

The generic names ``fmul``, ``fadd``, ... dispatch on the element type at compile time (numba
``overload``), so the point formulas in :mod:`._bn254_curve` and the MSM kernels are written once and
compiled once per group (G1 over Fq, G2 over Fq2). The modulus comes from module-level np.uint64
constants, which numba freezes into the code (LLVM folds them into the multiplies).
"""

from __future__ import annotations

import numba as nb
import numpy as np
from numba import types
from numba.extending import overload

from ..curves.bn254 import CURVE
from ..field import mont4

Q = CURVE.q
R = CURVE.r
_M64 = (1 << 64) - 1


def limbs4(x: int) -> tuple[int, int, int, int]:
    return (x & _M64, (x >> 64) & _M64, (x >> 128) & _M64, (x >> 192) & _M64)


def to_mont_int(x: int) -> int:
    return (x % Q) * (1 << 256) % Q


def from_mont_int(x: int) -> int:
    return x * pow(1 << 256, -1, Q) % Q


def mont_tuple(x: int) -> tuple:
    """A canonical integer as an Fq element for numba (a tuple of np.uint64, Montgomery form)."""
    return tuple(np.uint64(v) for v in limbs4(to_mont_int(x)))


Q0, Q1, Q2, Q3 = (np.uint64(v) for v in limbs4(Q))
QINV = np.uint64((-pow(Q, -1, 1 << 64)) % (1 << 64))
_Z = np.uint64(0)
FQ_ZERO = (_Z, _Z, _Z, _Z)
FQ_ONE = mont_tuple(1)
# q - 2: Fermat inversion exponent, as bits from the top (a frozen constant array)
_QM2_BITS = np.array([int(b) for b in bin(Q - 2)[2:]], dtype=np.uint8)

# ---------------------------------------------------------------------------------------------
# Fq


@nb.njit(cache=True)
def fq_mul(a, b):
    return mont4.mul(a[0], a[1], a[2], a[3], b[0], b[1], b[2], b[3], Q0, Q1, Q2, Q3, QINV)


@nb.njit(cache=True)
def fq_sqr(a):
    return mont4.mul(a[0], a[1], a[2], a[3], a[0], a[1], a[2], a[3], Q0, Q1, Q2, Q3, QINV)


@nb.njit(cache=True)
def fq_add(a, b):
    return mont4.add(a[0], a[1], a[2], a[3], b[0], b[1], b[2], b[3], Q0, Q1, Q2, Q3)


@nb.njit(cache=True)
def fq_sub(a, b):
    return mont4.sub(a[0], a[1], a[2], a[3], b[0], b[1], b[2], b[3], Q0, Q1, Q2, Q3)


@nb.njit(cache=True)
def fq_dbl(a):
    return mont4.add(a[0], a[1], a[2], a[3], a[0], a[1], a[2], a[3], Q0, Q1, Q2, Q3)


@nb.njit(cache=True)
def fq_neg(a):
    return mont4.sub(_Z, _Z, _Z, _Z, a[0], a[1], a[2], a[3], Q0, Q1, Q2, Q3)


@nb.njit(cache=True)
def fq_is_zero(a):
    return (a[0] | a[1] | a[2] | a[3]) == _Z


@nb.njit(cache=True)
def fq_eq(a, b):
    return a[0] == b[0] and a[1] == b[1] and a[2] == b[2] and a[3] == b[3]


@nb.njit(cache=True)
def fq_pow_bits(a, bits):
    """a^e for e given as its bits from the top (bits[0] == 1)."""
    r = a
    for i in range(1, bits.shape[0]):
        r = fq_sqr(r)
        if bits[i]:
            r = fq_mul(r, a)
    return r


@nb.njit(cache=True)
def fq_inv(a):
    """a^-1 (Fermat; 0 -> 0)."""
    return fq_pow_bits(a, _QM2_BITS)


@nb.njit(cache=True)
def fq_below(a):
    """A canonical 4-limb integer is < q."""
    return mont4.below(a[0], a[1], a[2], a[3], Q0, Q1, Q2, Q3)


# ---------------------------------------------------------------------------------------------
# Fq2 = Fq[u] / (u^2 + 1)


@nb.njit(cache=True)
def f2_add(a, b):
    return fq_add(a[0], b[0]), fq_add(a[1], b[1])


@nb.njit(cache=True)
def f2_sub(a, b):
    return fq_sub(a[0], b[0]), fq_sub(a[1], b[1])


@nb.njit(cache=True)
def f2_dbl(a):
    return fq_dbl(a[0]), fq_dbl(a[1])


@nb.njit(cache=True)
def f2_neg(a):
    return fq_neg(a[0]), fq_neg(a[1])


@nb.njit(cache=True)
def f2_conj(a):
    return a[0], fq_neg(a[1])


@nb.njit(cache=True)
def f2_mul(a, b):
    """Karatsuba: 3 Fq products."""
    v0 = fq_mul(a[0], b[0])
    v1 = fq_mul(a[1], b[1])
    s = fq_mul(fq_add(a[0], a[1]), fq_add(b[0], b[1]))
    return fq_sub(v0, v1), fq_sub(fq_sub(s, v0), v1)


@nb.njit(cache=True)
def f2_sqr(a):
    """(a0 + a1)(a0 - a1) + 2 a0 a1 u: 2 Fq products."""
    t = fq_mul(a[0], a[1])
    return fq_mul(fq_add(a[0], a[1]), fq_sub(a[0], a[1])), fq_dbl(t)


@nb.njit(cache=True)
def f2_mul_fq(a, s):
    return fq_mul(a[0], s), fq_mul(a[1], s)


@nb.njit(cache=True)
def f2_mul_xi(a):
    """a * (9 + u) = (9 a0 - a1) + (9 a1 + a0) u."""
    a0, a1 = a[0], a[1]
    e0 = fq_add(fq_dbl(fq_dbl(fq_dbl(a0))), a0)
    e1 = fq_add(fq_dbl(fq_dbl(fq_dbl(a1))), a1)
    return fq_sub(e0, a1), fq_add(e1, a0)


@nb.njit(cache=True)
def f2_inv(a):
    t = fq_inv(fq_add(fq_sqr(a[0]), fq_sqr(a[1])))
    return fq_mul(a[0], t), fq_neg(fq_mul(a[1], t))


@nb.njit(cache=True)
def f2_is_zero(a):
    return fq_is_zero(a[0]) and fq_is_zero(a[1])


@nb.njit(cache=True)
def f2_eq(a, b):
    return fq_eq(a[0], b[0]) and fq_eq(a[1], b[1])


# ---------------------------------------------------------------------------------------------
# generic element operations: one name, Fq or Fq2 chosen by the argument's type at compile time


def _is_fq(t) -> bool:
    return isinstance(t, types.UniTuple) and t.count == 4 and t.dtype == types.uint64


def fmul(a, b):
    raise NotImplementedError("numba only")


def fsqr(a):
    raise NotImplementedError("numba only")


def fadd(a, b):
    raise NotImplementedError("numba only")


def fsub(a, b):
    raise NotImplementedError("numba only")


def fdbl(a):
    raise NotImplementedError("numba only")


def fneg(a):
    raise NotImplementedError("numba only")


def finv(a):
    raise NotImplementedError("numba only")


def fis_zero(a):
    raise NotImplementedError("numba only")


def feq(a, b):
    raise NotImplementedError("numba only")


def fzero(a):
    """The zero of a's field (a is only a type witness)."""
    raise NotImplementedError("numba only")


def fone(a):
    raise NotImplementedError("numba only")


def fload(w, arr, i, off):
    """The element of w's field stored at arr[i, off:off + 4] (Fq) or arr[i, off:off + 8] (Fq2: c0, c1)."""
    raise NotImplementedError("numba only")


def fstore(arr, i, off, a):
    raise NotImplementedError("numba only")


def fwords(w):
    """uint64 words of an element of w's field (4 or 8)."""
    raise NotImplementedError("numba only")


def fmul_b(a):
    """a times the curve constant of a's group: 3 (G1) or b' = 3 / (9 + u) (G2)."""
    raise NotImplementedError("numba only")


@overload(fmul)
def _ov_fmul(a, b):
    return (lambda a, b: fq_mul(a, b)) if _is_fq(a) else (lambda a, b: f2_mul(a, b))


@overload(fsqr)
def _ov_fsqr(a):
    return (lambda a: fq_sqr(a)) if _is_fq(a) else (lambda a: f2_sqr(a))


@overload(fadd)
def _ov_fadd(a, b):
    return (lambda a, b: fq_add(a, b)) if _is_fq(a) else (lambda a, b: f2_add(a, b))


@overload(fsub)
def _ov_fsub(a, b):
    return (lambda a, b: fq_sub(a, b)) if _is_fq(a) else (lambda a, b: f2_sub(a, b))


@overload(fdbl)
def _ov_fdbl(a):
    return (lambda a: fq_dbl(a)) if _is_fq(a) else (lambda a: f2_dbl(a))


@overload(fneg)
def _ov_fneg(a):
    return (lambda a: fq_neg(a)) if _is_fq(a) else (lambda a: f2_neg(a))


@overload(finv)
def _ov_finv(a):
    return (lambda a: fq_inv(a)) if _is_fq(a) else (lambda a: f2_inv(a))


@overload(fis_zero)
def _ov_fis_zero(a):
    return (lambda a: fq_is_zero(a)) if _is_fq(a) else (lambda a: f2_is_zero(a))


@overload(feq)
def _ov_feq(a, b):
    return (lambda a, b: fq_eq(a, b)) if _is_fq(a) else (lambda a, b: f2_eq(a, b))


@overload(fzero)
def _ov_fzero(a):
    if _is_fq(a):
        return lambda a: FQ_ZERO
    return lambda a: (FQ_ZERO, FQ_ZERO)


@overload(fone)
def _ov_fone(a):
    if _is_fq(a):
        return lambda a: FQ_ONE
    return lambda a: (FQ_ONE, FQ_ZERO)


@overload(fwords)
def _ov_fwords(w):
    if _is_fq(w):
        return lambda w: 4
    return lambda w: 8


@overload(fload)
def _ov_fload(w, arr, i, off):
    if _is_fq(w):
        return lambda w, arr, i, off: (arr[i, off], arr[i, off + 1], arr[i, off + 2], arr[i, off + 3])

    def ld2(w, arr, i, off):
        return (
            (arr[i, off], arr[i, off + 1], arr[i, off + 2], arr[i, off + 3]),
            (arr[i, off + 4], arr[i, off + 5], arr[i, off + 6], arr[i, off + 7]),
        )

    return ld2


@overload(fstore)
def _ov_fstore(arr, i, off, a):
    if _is_fq(a):

        def st1(arr, i, off, a):
            arr[i, off], arr[i, off + 1], arr[i, off + 2], arr[i, off + 3] = a

        return st1

    def st2(arr, i, off, a):
        arr[i, off], arr[i, off + 1], arr[i, off + 2], arr[i, off + 3] = a[0]
        arr[i, off + 4], arr[i, off + 5], arr[i, off + 6], arr[i, off + 7] = a[1]

    return st2


B1_MONT = mont_tuple(CURVE.b)
B2_MONT = (mont_tuple(CURVE.b2[0]), mont_tuple(CURVE.b2[1]))
B1x3_MONT = mont_tuple(3 * CURVE.b)  # 3b, 3b' (homogeneous-coordinate formulas)
B2x3_MONT = (mont_tuple(3 * CURVE.b2[0]), mont_tuple(3 * CURVE.b2[1]))


@overload(fmul_b)
def _ov_fmul_b(a):
    if _is_fq(a):
        return lambda a: fq_add(fq_dbl(a), a)  # 3a
    return lambda a: f2_mul(a, B2_MONT)


def fcurve_b(w):
    """The curve constant b of w's group (3 or b'), Montgomery form."""
    raise NotImplementedError("numba only")


@overload(fcurve_b)
def _ov_fcurve_b(w):
    if _is_fq(w):
        return lambda w: B1_MONT
    return lambda w: B2_MONT
