"""Bulk conversions of Fq (381-bit base field) coordinates between Montgomery and canonical form.

snarkjs zkeys store point coordinates as x * 2^384 mod q, little-endian ("LEM"); arkworks takes
canonical little-endian coordinates. Only conversion is needed on the CPU side (all curve arithmetic
is arkworks'), so this module has a generic 6-limb Montgomery multiply and nothing else.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from ..field._u128 import adc, mac, sbb
from ..field.constants import FQ_MONT_R2, Q, limbs

_QL = np.array(limbs(Q, 6), dtype=np.uint64)
_QINV = np.uint64((-pow(Q, -1, 2**64)) % 2**64)
_R2L = np.array(limbs(FQ_MONT_R2, 6), dtype=np.uint64)
_ONE = np.array([1, 0, 0, 0, 0, 0], dtype=np.uint64)
_Z = np.uint64(0)


@nb.njit(cache=True)
def _mont_mul_row(a, b, q, qinv, t, out):
    """out = a*b/2^384 mod q for 6-limb rows (CIOS); t is an 8-word scratch row."""
    for j in range(8):
        t[j] = _Z
    for i in range(6):
        c = _Z
        for j in range(6):
            t[j], c = mac(t[j], a[i], b[j], c)
        t[6], t[7] = adc(t[6], c, _Z)
        m = t[0] * qinv
        _, c = mac(t[0], m, q[0], _Z)
        for j in range(1, 6):
            t[j - 1], c = mac(t[j], m, q[j], c)
        t[5], c = adc(t[6], c, _Z)
        t[6] = t[7] + c
    br = _Z
    for j in range(6):
        out[j], br = sbb(t[j], q[j], br)
    if t[6] == _Z and br != _Z:
        for j in range(6):
            out[j] = t[j]


@nb.njit(parallel=True, cache=True)
def _k_mul_const(a, k, q, qinv, out):
    n = a.shape[0]
    nchunks = (n + 1023) // 1024
    for ch in nb.prange(nchunks):
        t = np.empty(8, dtype=np.uint64)
        for i in range(ch * 1024, min(n, (ch + 1) * 1024)):
            _mont_mul_row(a[i], k, q, qinv, t, out[i])


@nb.njit(parallel=True, cache=True)
def _k_below(a, q, out):
    for i in nb.prange(a.shape[0]):
        br = _Z
        for j in range(6):
            _, br = sbb(a[i, j], q[j], br)
        out[i] = br != _Z


def from_mont(coords: np.ndarray) -> np.ndarray:
    """(n, 6) Montgomery limbs -> (n, 6) canonical limbs."""
    out = np.empty_like(coords)
    _k_mul_const(np.ascontiguousarray(coords), _ONE, _QL, _QINV, out)
    return out


def to_mont(coords: np.ndarray) -> np.ndarray:
    """(n, 6) canonical limbs -> (n, 6) Montgomery limbs."""
    out = np.empty_like(coords)
    _k_mul_const(np.ascontiguousarray(coords), _R2L, _QL, _QINV, out)
    return out


def below_modulus(coords: np.ndarray) -> np.ndarray:
    out = np.empty(coords.shape[0], dtype=np.bool_)
    _k_below(np.ascontiguousarray(coords), _QL, out)
    return out
