"""Vectorised arithmetic on arrays of Fr elements.

An Fr vector is a C-contiguous ``numpy.ndarray`` of shape ``(n, 4)`` and dtype ``uint64``: four
little-endian 64-bit limbs per element, in **Montgomery form** (x * 2^256 mod r). This is the memory
layout of blst/bellperson ``Scalar`` and of our GPU kernels, so a vector goes to the device or into a
cache file without conversion. Canonical (plain) integers appear only at the edges: ``.wtns`` files,
JSON, and scalars handed to arkworks.

Kernels are numba-compiled (``cache=True``, so a CLI run loads them from disk instead of compiling)
and use the 128-bit primitives of :mod:`cuzk.field._u128`.
"""

from __future__ import annotations

import secrets

import numba as nb
import numpy as np

from ._u128 import adc, mac, sbb
from .constants import FR_MONT_R, FR_MONT_R2, R, limbs

_P0, _P1, _P2, _P3 = (np.uint64(x) for x in limbs(R, 4))
_INV = np.uint64((-pow(R, -1, 2**64)) % 2**64)  # -r^-1 mod 2^64
_R2 = tuple(np.uint64(x) for x in limbs(FR_MONT_R2, 4))
_ONE_M = tuple(np.uint64(x) for x in limbs(FR_MONT_R, 4))
_Z = np.uint64(0)
_U1 = np.uint64(1)

# ---------------------------------------------------------------------------------------------
# element-level primitives (inlined into every kernel)


@nb.njit(inline="always", cache=True)
def _reduce_once(t0, t1, t2, t3, t4):
    """t (< 2r, with overflow word t4) -> t mod r."""
    d0, br = sbb(t0, _P0, _Z)
    d1, br = sbb(t1, _P1, br)
    d2, br = sbb(t2, _P2, br)
    d3, br = sbb(t3, _P3, br)
    if t4 != _Z or br == _Z:
        return d0, d1, d2, d3
    return t0, t1, t2, t3


@nb.njit(inline="always", cache=True)
def mont_mul(a0, a1, a2, a3, b0, b1, b2, b3):
    """Montgomery product a*b/2^256 mod r (CIOS, 4 x 64-bit limbs)."""
    t0 = t1 = t2 = t3 = t4 = _Z
    for i in range(4):
        ai = a0 if i == 0 else (a1 if i == 1 else (a2 if i == 2 else a3))
        t0, c = mac(t0, ai, b0, _Z)
        t1, c = mac(t1, ai, b1, c)
        t2, c = mac(t2, ai, b2, c)
        t3, c = mac(t3, ai, b3, c)
        t4, t5 = adc(t4, c, _Z)
        m = t0 * _INV
        _, c = mac(t0, m, _P0, _Z)
        t0, c = mac(t1, m, _P1, c)
        t1, c = mac(t2, m, _P2, c)
        t2, c = mac(t3, m, _P3, c)
        t3, c = adc(t4, c, _Z)
        t4 = t5 + c
    return _reduce_once(t0, t1, t2, t3, t4)


@nb.njit(inline="always", cache=True)
def mod_add(a0, a1, a2, a3, b0, b1, b2, b3):
    s0, c = adc(a0, b0, _Z)
    s1, c = adc(a1, b1, c)
    s2, c = adc(a2, b2, c)
    s3, c = adc(a3, b3, c)
    return _reduce_once(s0, s1, s2, s3, c)


@nb.njit(inline="always", cache=True)
def mod_sub(a0, a1, a2, a3, b0, b1, b2, b3):
    d0, br = sbb(a0, b0, _Z)
    d1, br = sbb(a1, b1, br)
    d2, br = sbb(a2, b2, br)
    d3, br = sbb(a3, b3, br)
    if br != _Z:
        d0, c = adc(d0, _P0, _Z)
        d1, c = adc(d1, _P1, c)
        d2, c = adc(d2, _P2, c)
        d3, c = adc(d3, _P3, c)
    return d0, d1, d2, d3


# ---------------------------------------------------------------------------------------------
# vector kernels


@nb.njit(parallel=True, cache=True)
def _k_mul(a, b, out):
    for k in nb.prange(a.shape[0]):
        r = mont_mul(a[k, 0], a[k, 1], a[k, 2], a[k, 3], b[k, 0], b[k, 1], b[k, 2], b[k, 3])
        out[k, 0], out[k, 1], out[k, 2], out[k, 3] = r


@nb.njit(parallel=True, cache=True)
def _k_mul_scalar(a, c, out):
    c0, c1, c2, c3 = c[0], c[1], c[2], c[3]
    for k in nb.prange(a.shape[0]):
        r = mont_mul(a[k, 0], a[k, 1], a[k, 2], a[k, 3], c0, c1, c2, c3)
        out[k, 0], out[k, 1], out[k, 2], out[k, 3] = r


@nb.njit(parallel=True, cache=True)
def _k_add(a, b, out):
    for k in nb.prange(a.shape[0]):
        r = mod_add(a[k, 0], a[k, 1], a[k, 2], a[k, 3], b[k, 0], b[k, 1], b[k, 2], b[k, 3])
        out[k, 0], out[k, 1], out[k, 2], out[k, 3] = r


@nb.njit(parallel=True, cache=True)
def _k_sub(a, b, out):
    for k in nb.prange(a.shape[0]):
        r = mod_sub(a[k, 0], a[k, 1], a[k, 2], a[k, 3], b[k, 0], b[k, 1], b[k, 2], b[k, 3])
        out[k, 0], out[k, 1], out[k, 2], out[k, 3] = r


@nb.njit(parallel=True, cache=True)
def _k_mul_sub(a, b, c, out):
    """out = a*b - c (the H numerator on the evaluation domain)."""
    for k in nb.prange(a.shape[0]):
        p0, p1, p2, p3 = mont_mul(a[k, 0], a[k, 1], a[k, 2], a[k, 3], b[k, 0], b[k, 1], b[k, 2], b[k, 3])
        r = mod_sub(p0, p1, p2, p3, c[k, 0], c[k, 1], c[k, 2], c[k, 3])
        out[k, 0], out[k, 1], out[k, 2], out[k, 3] = r


@nb.njit(parallel=True, cache=True)
def _k_copy(src, out):
    for k in nb.prange(src.shape[0]):
        out[k, 0], out[k, 1], out[k, 2], out[k, 3] = src[k, 0], src[k, 1], src[k, 2], src[k, 3]


@nb.njit(parallel=True, cache=True)
def _k_to_mont(a, out):
    r0, r1, r2, r3 = _R2
    for k in nb.prange(a.shape[0]):
        r = mont_mul(a[k, 0], a[k, 1], a[k, 2], a[k, 3], r0, r1, r2, r3)
        out[k, 0], out[k, 1], out[k, 2], out[k, 3] = r


@nb.njit(parallel=True, cache=True)
def _k_from_mont(a, out):
    for k in nb.prange(a.shape[0]):
        r = mont_mul(a[k, 0], a[k, 1], a[k, 2], a[k, 3], _U1, _Z, _Z, _Z)
        out[k, 0], out[k, 1], out[k, 2], out[k, 3] = r


@nb.njit(parallel=True, cache=True)
def _k_below_modulus(a, out):
    for k in nb.prange(a.shape[0]):
        _, br = sbb(a[k, 0], _P0, _Z)
        _, br = sbb(a[k, 1], _P1, br)
        _, br = sbb(a[k, 2], _P2, br)
        _, br = sbb(a[k, 3], _P3, br)
        out[k] = br == _U1


@nb.njit(parallel=True, cache=True)
def _k_powers_mul(a, starts, step, chunk, out):
    """out[i] = a[i] * g^i where starts[j] = g^(j*chunk) and step = g (all Montgomery)."""
    n = a.shape[0]
    s0, s1, s2, s3 = step[0], step[1], step[2], step[3]
    for j in nb.prange(starts.shape[0]):
        g0, g1, g2, g3 = starts[j, 0], starts[j, 1], starts[j, 2], starts[j, 3]
        end = min(n, (j + 1) * chunk)
        for k in range(j * chunk, end):
            r = mont_mul(a[k, 0], a[k, 1], a[k, 2], a[k, 3], g0, g1, g2, g3)
            out[k, 0], out[k, 1], out[k, 2], out[k, 3] = r
            g0, g1, g2, g3 = mont_mul(g0, g1, g2, g3, s0, s1, s2, s3)


@nb.njit(parallel=True, cache=True)
def _k_powers(starts, step, chunk, n, out):
    s0, s1, s2, s3 = step[0], step[1], step[2], step[3]
    for j in nb.prange(starts.shape[0]):
        g0, g1, g2, g3 = starts[j, 0], starts[j, 1], starts[j, 2], starts[j, 3]
        end = min(n, (j + 1) * chunk)
        for k in range(j * chunk, end):
            out[k, 0], out[k, 1], out[k, 2], out[k, 3] = g0, g1, g2, g3
            g0, g1, g2, g3 = mont_mul(g0, g1, g2, g3, s0, s1, s2, s3)


# ---------------------------------------------------------------------------------------------
# Python API


def empty(n: int) -> np.ndarray:
    return np.empty((n, 4), dtype=np.uint64)


def zeros(n: int) -> np.ndarray:
    return np.zeros((n, 4), dtype=np.uint64)


def _out(a: np.ndarray, out: np.ndarray | None) -> np.ndarray:
    return np.empty_like(a) if out is None else out


def mul(a: np.ndarray, b: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    out = _out(a, out)
    _k_mul(a, b, out)
    return out


def add(a: np.ndarray, b: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    out = _out(a, out)
    _k_add(a, b, out)
    return out


def sub(a: np.ndarray, b: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    out = _out(a, out)
    _k_sub(a, b, out)
    return out


def mul_sub(a: np.ndarray, b: np.ndarray, c: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """a*b - c elementwise."""
    out = _out(a, out)
    _k_mul_sub(a, b, c, out)
    return out


def copy_into(out: np.ndarray, src: np.ndarray) -> np.ndarray:
    """out[:] = src on every core (a single-threaded memcpy runs at ~9 GB/s: the witness upload's
    copy into a pinned staging buffer was bound by it)."""
    if out.shape != src.shape:
        raise ValueError(f"copy_into: shapes {out.shape} and {src.shape} differ")
    _k_copy(src, out)
    return out


def mont_scalar(x: int) -> np.ndarray:
    """One element (canonical int) as its 4 Montgomery limbs."""
    return np.array(limbs(x % R * FR_MONT_R % R, 4), dtype=np.uint64)


def scale(a: np.ndarray, c: int, out: np.ndarray | None = None) -> np.ndarray:
    """a * c for a canonical integer c."""
    out = _out(a, out)
    _k_mul_scalar(a, mont_scalar(c), out)
    return out


_POWER_CHUNK = 1 << 14


def _power_starts(g: int, start: int, n: int) -> np.ndarray:
    starts = []
    cur = start % R
    step = pow(g, _POWER_CHUNK, R)
    for _ in range(max(1, -(-n // _POWER_CHUNK))):
        starts.append(limbs(cur * FR_MONT_R % R, 4))
        cur = cur * step % R
    return np.array(starts, dtype=np.uint64)


def mul_powers(a: np.ndarray, g: int, start: int = 1, out: np.ndarray | None = None) -> np.ndarray:
    """out[i] = a[i] * start * g^i (coset shifts and twiddle scaling)."""
    out = _out(a, out)
    _k_powers_mul(a, _power_starts(g, start, a.shape[0]), mont_scalar(g), _POWER_CHUNK, out)
    return out


def powers(g: int, n: int, start: int = 1) -> np.ndarray:
    """[start * g^i for i < n] in Montgomery form."""
    out = empty(n)
    _k_powers(_power_starts(g, start, n), mont_scalar(g), _POWER_CHUNK, n, out)
    return out


def to_mont(a: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    out = _out(a, out)
    _k_to_mont(a, out)
    return out


def from_mont(a: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    out = _out(a, out)
    _k_from_mont(a, out)
    return out


def below_modulus(canonical: np.ndarray) -> np.ndarray:
    """Boolean mask: which canonical elements are < r."""
    out = np.empty(canonical.shape[0], dtype=np.bool_)
    _k_below_modulus(canonical, out)
    return out


def canonical_from_bytes(buf, n: int) -> np.ndarray:
    """n little-endian 32-byte integers -> (n, 4) uint64 (a view when buf allows, no copy)."""
    return np.frombuffer(buf, dtype="<u8", count=4 * n).reshape(n, 4)


def from_ints(values) -> np.ndarray:
    """Python integers (any sign, reduced mod r) -> Montgomery vector."""
    vals = list(values)
    data = b"".join((v % R).to_bytes(32, "little") for v in vals)
    return to_mont(np.frombuffer(data, dtype="<u8").reshape(len(vals), 4).copy() if vals else zeros(0))


def to_ints(a: np.ndarray) -> list[int]:
    """Montgomery vector -> canonical Python integers."""
    raw = from_mont(np.ascontiguousarray(a)).tobytes()
    return [int.from_bytes(raw[32 * i : 32 * i + 32], "little") for i in range(a.shape[0])]


def to_canonical_bytes(a: np.ndarray) -> bytes:
    """Montgomery vector -> concatenated canonical 32-byte little-endian integers."""
    return from_mont(np.ascontiguousarray(a)).astype("<u8", copy=False).tobytes()


def random(n: int) -> np.ndarray:
    """n uniformly random elements (CSPRNG), Montgomery form."""
    return from_ints(secrets.randbelow(R) for _ in range(n))


def one_mont() -> np.ndarray:
    return np.array(_ONE_M, dtype=np.uint64)


@nb.njit(cache=True)
def _k_prefix_products(a, pre):
    o0, o1, o2, o3 = _ONE_M
    for k in range(a.shape[0]):
        pre[k, 0], pre[k, 1], pre[k, 2], pre[k, 3] = o0, o1, o2, o3
        o0, o1, o2, o3 = mont_mul(o0, o1, o2, o3, a[k, 0], a[k, 1], a[k, 2], a[k, 3])
    return o0, o1, o2, o3


@nb.njit(cache=True)
def _k_batch_inverse(a, pre, inv_total, out):
    i0, i1, i2, i3 = inv_total[0], inv_total[1], inv_total[2], inv_total[3]
    for k in range(a.shape[0] - 1, -1, -1):
        out[k, 0], out[k, 1], out[k, 2], out[k, 3] = mont_mul(i0, i1, i2, i3, pre[k, 0], pre[k, 1], pre[k, 2], pre[k, 3])
        i0, i1, i2, i3 = mont_mul(i0, i1, i2, i3, a[k, 0], a[k, 1], a[k, 2], a[k, 3])


def batch_inverse(a: np.ndarray) -> np.ndarray:
    """Elementwise inverse (Montgomery's trick: one field inversion for the whole vector).

    Raises ZeroDivisionError if any element is zero.
    """
    a = np.ascontiguousarray(a)
    pre = empty(a.shape[0])
    total = np.array(_k_prefix_products(a, pre), dtype=np.uint64)
    t = to_ints(total.reshape(1, 4))[0]
    if t == 0:
        raise ZeroDivisionError("batch_inverse of a vector containing zero")
    out = empty(a.shape[0])
    _k_batch_inverse(a, pre, mont_scalar(pow(t, -1, R)), out)
    return out
