"""Montgomery arithmetic on one element of a prime field held in four 64-bit limbs (numba, inlined).

Every function takes the modulus as ``p0..p3`` (little-endian limbs) and, for the multiply, ``inv`` =
-p^-1 mod 2^64, so one compiled kernel serves every field of at most 256 bits: BLS12-381's and BN254's
scalar fields, BN254's base field. A kernel passes them either from module-level constants (LLVM folds
them) or from a small modulus array read once before its loop (:class:`cuzk.field.prime.PrimeField`);
x86-64 multiplies take their operands from registers either way, so the two cost the same.

Values are fully reduced (< p) between operations; the Montgomery radix is 2^256.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from ._u128 import adc, mac, sbb

_Z = np.uint64(0)


@nb.njit(inline="always", cache=True)
def reduce_once(t0, t1, t2, t3, t4, p0, p1, p2, p3):
    """t (< 2p, with overflow word t4) -> t mod p."""
    d0, br = sbb(t0, p0, _Z)
    d1, br = sbb(t1, p1, br)
    d2, br = sbb(t2, p2, br)
    d3, br = sbb(t3, p3, br)
    if t4 != _Z or br == _Z:
        return d0, d1, d2, d3
    return t0, t1, t2, t3


@nb.njit(inline="always", cache=True)
def mul(a0, a1, a2, a3, b0, b1, b2, b3, p0, p1, p2, p3, inv):
    """Montgomery product a*b/2^256 mod p (CIOS)."""
    t0 = t1 = t2 = t3 = t4 = _Z
    for i in range(4):
        ai = a0 if i == 0 else (a1 if i == 1 else (a2 if i == 2 else a3))
        t0, c = mac(t0, ai, b0, _Z)
        t1, c = mac(t1, ai, b1, c)
        t2, c = mac(t2, ai, b2, c)
        t3, c = mac(t3, ai, b3, c)
        t4, t5 = adc(t4, c, _Z)
        m = t0 * inv
        _, c = mac(t0, m, p0, _Z)
        t0, c = mac(t1, m, p1, c)
        t1, c = mac(t2, m, p2, c)
        t2, c = mac(t3, m, p3, c)
        t3, c = adc(t4, c, _Z)
        t4 = t5 + c
    return reduce_once(t0, t1, t2, t3, t4, p0, p1, p2, p3)


@nb.njit(inline="always", cache=True)
def add(a0, a1, a2, a3, b0, b1, b2, b3, p0, p1, p2, p3):
    s0, c = adc(a0, b0, _Z)
    s1, c = adc(a1, b1, c)
    s2, c = adc(a2, b2, c)
    s3, c = adc(a3, b3, c)
    return reduce_once(s0, s1, s2, s3, c, p0, p1, p2, p3)


@nb.njit(inline="always", cache=True)
def sub(a0, a1, a2, a3, b0, b1, b2, b3, p0, p1, p2, p3):
    d0, br = sbb(a0, b0, _Z)
    d1, br = sbb(a1, b1, br)
    d2, br = sbb(a2, b2, br)
    d3, br = sbb(a3, b3, br)
    if br != _Z:
        d0, c = adc(d0, p0, _Z)
        d1, c = adc(d1, p1, c)
        d2, c = adc(d2, p2, c)
        d3, c = adc(d3, p3, c)
    return d0, d1, d2, d3


@nb.njit(inline="always", cache=True)
def below(a0, a1, a2, a3, p0, p1, p2, p3):
    """a < p (a canonical 4-limb integer)."""
    _, br = sbb(a0, p0, _Z)
    _, br = sbb(a1, p1, br)
    _, br = sbb(a2, p2, br)
    _, br = sbb(a3, p3, br)
    return br != _Z
