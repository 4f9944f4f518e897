"""Bulk conversions of base-field (Fq) coordinates between Montgomery and canonical form, any limb count.

snarkjs zkeys store point coordinates as x * 2^(64 N) mod q, little-endian ("LEM"); point libraries take
canonical coordinates. Only conversion is needed on this side (the group arithmetic belongs to the
curve's point library), so this module has a generic N-limb Montgomery multiply and nothing else:
N = 6 for BLS12-381's 381-bit q, 4 for BN254's 254-bit q.
"""

from __future__ import annotations

import functools

import numba as nb
import numpy as np

from ..curves import Curve
from ..field._u128 import adc, mac, sbb
from ..field.prime import limbs

_Z = np.uint64(0)


@nb.njit(cache=True)
def _mont_mul_row(a, b, q, qinv, t, out):
    """out = a*b/2^(64N) mod q for N-limb rows (CIOS); t is an (N+2)-word scratch row."""
    n = q.shape[0]
    for j in range(n + 2):
        t[j] = _Z
    for i in range(n):
        c = _Z
        for j in range(n):
            t[j], c = mac(t[j], a[i], b[j], c)
        t[n], t[n + 1] = adc(t[n], c, _Z)
        m = t[0] * qinv
        _, c = mac(t[0], m, q[0], _Z)
        for j in range(1, n):
            t[j - 1], c = mac(t[j], m, q[j], c)
        t[n - 1], c = adc(t[n], c, _Z)
        t[n] = t[n + 1] + c
    br = _Z
    for j in range(n):
        out[j], br = sbb(t[j], q[j], br)
    if t[n] == _Z and br != _Z:
        for j in range(n):
            out[j] = t[j]


@nb.njit(parallel=True, cache=True)
def _k_mul_const(a, k, q, qinv, out):
    n = a.shape[0]
    nchunks = (n + 1023) // 1024
    for ch in nb.prange(nchunks):
        t = np.empty(q.shape[0] + 2, dtype=np.uint64)
        for i in range(ch * 1024, min(n, (ch + 1) * 1024)):
            _mont_mul_row(a[i], k, q, qinv, t, out[i])


@nb.njit(parallel=True, cache=True)
def _k_below(a, q, out):
    for i in nb.prange(a.shape[0]):
        br = _Z
        for j in range(q.shape[0]):
            _, br = sbb(a[i, j], q[j], br)
        out[i] = br != _Z


@functools.cache
def _consts(q: int, n: int) -> tuple[np.ndarray, np.uint64, np.ndarray, np.ndarray]:
    ql = np.array(limbs(q, n), dtype=np.uint64)
    qinv = np.uint64((-pow(q, -1, 2**64)) % 2**64)
    r2 = np.array(limbs(pow(2, 128 * n, q), n), dtype=np.uint64)
    one = np.array([1] + [0] * (n - 1), dtype=np.uint64)
    return ql, qinv, r2, one


def from_mont(curve: Curve, coords: np.ndarray) -> np.ndarray:
    """(n, N) Montgomery limbs -> (n, N) canonical limbs."""
    ql, qinv, _, one = _consts(curve.q, curve.fq_limbs)
    out = np.empty_like(coords)
    _k_mul_const(np.ascontiguousarray(coords), one, ql, qinv, out)
    return out


def to_mont(curve: Curve, coords: np.ndarray) -> np.ndarray:
    """(n, N) canonical limbs -> (n, N) Montgomery limbs."""
    ql, qinv, r2, _ = _consts(curve.q, curve.fq_limbs)
    out = np.empty_like(coords)
    _k_mul_const(np.ascontiguousarray(coords), r2, ql, qinv, out)
    return out


def below_modulus(curve: Curve, coords: np.ndarray) -> np.ndarray:
    ql = _consts(curve.q, curve.fq_limbs)[0]
    out = np.empty(coords.shape[0], dtype=np.bool_)
    _k_below(np.ascontiguousarray(coords), ql, out)
    return out
