"""Vectorised arithmetic on arrays of elements of a prime field below 2^256.

A field vector is a C-contiguous ``numpy.ndarray`` of shape ``(n, 4)`` and dtype ``uint64``: four
little-endian 64-bit limbs per element, in **Montgomery form** (x * 2^256 mod p). This is the memory
layout of blst/bellperson ``Scalar``, of snarkjs' field elements and of our GPU kernels, so a vector goes
to the device or into a cache file without conversion. Canonical (plain) integers appear only at the
edges: ``.wtns`` files, JSON, and scalars handed to a point library.

One :class:`PrimeField` per modulus (a curve's scalar field Fr, BN254's base field Fq); its kernels are
numba-compiled once for every field (``cache=True``), the modulus travelling as a small array
(``PrimeField.m``) that each kernel reads before its loop.
"""

from __future__ import annotations

import secrets

import numba as nb
import numpy as np

from . import mont4

_Z = np.uint64(0)
_U1 = np.uint64(1)

# m = [p0, p1, p2, p3, inv, r2_0..r2_3, one_0..one_3]: the modulus, -p^-1 mod 2^64, 2^512 mod p, 2^256 mod p


def limbs(x: int, n: int) -> list[int]:
    """Little-endian 64-bit limbs of x."""
    return [(x >> (64 * i)) & 0xFFFFFFFFFFFFFFFF for i in range(n)]


@nb.njit(parallel=True, cache=True)
def _k_mul(a, b, out, m):
    p0, p1, p2, p3, inv = m[0], m[1], m[2], m[3], m[4]
    for k in nb.prange(a.shape[0]):
        r = mont4.mul(a[k, 0], a[k, 1], a[k, 2], a[k, 3], b[k, 0], b[k, 1], b[k, 2], b[k, 3], p0, p1, p2, p3, inv)
        out[k, 0], out[k, 1], out[k, 2], out[k, 3] = r


@nb.njit(parallel=True, cache=True)
def _k_mul_scalar(a, c, out, m):
    p0, p1, p2, p3, inv = m[0], m[1], m[2], m[3], m[4]
    c0, c1, c2, c3 = c[0], c[1], c[2], c[3]
    for k in nb.prange(a.shape[0]):
        r = mont4.mul(a[k, 0], a[k, 1], a[k, 2], a[k, 3], c0, c1, c2, c3, p0, p1, p2, p3, inv)
        out[k, 0], out[k, 1], out[k, 2], out[k, 3] = r


@nb.njit(parallel=True, cache=True)
def _k_add(a, b, out, m):
    p0, p1, p2, p3 = m[0], m[1], m[2], m[3]
    for k in nb.prange(a.shape[0]):
        r = mont4.add(a[k, 0], a[k, 1], a[k, 2], a[k, 3], b[k, 0], b[k, 1], b[k, 2], b[k, 3], p0, p1, p2, p3)
        out[k, 0], out[k, 1], out[k, 2], out[k, 3] = r


@nb.njit(parallel=True, cache=True)
def _k_sub(a, b, out, m):
    p0, p1, p2, p3 = m[0], m[1], m[2], m[3]
    for k in nb.prange(a.shape[0]):
        r = mont4.sub(a[k, 0], a[k, 1], a[k, 2], a[k, 3], b[k, 0], b[k, 1], b[k, 2], b[k, 3], p0, p1, p2, p3)
        out[k, 0], out[k, 1], out[k, 2], out[k, 3] = r


# Serial twins of the four element-wise kernels, for short vectors (a circuit gadget's batch of a few
# hundred instances): a parallel launch costs ~0.1 ms on an idle machine and milliseconds on a loaded
# one, far more than the arithmetic (measured: 1170 adds of 64 elements took 5.1 s in a witness).
SERIAL_BELOW = 1 << 14


@nb.njit(cache=True)
def _s_mul(a, b, out, m):
    p0, p1, p2, p3, inv = m[0], m[1], m[2], m[3], m[4]
    for k in range(a.shape[0]):
        r = mont4.mul(a[k, 0], a[k, 1], a[k, 2], a[k, 3], b[k, 0], b[k, 1], b[k, 2], b[k, 3], p0, p1, p2, p3, inv)
        out[k, 0], out[k, 1], out[k, 2], out[k, 3] = r


@nb.njit(cache=True)
def _s_mul_scalar(a, c, out, m):
    p0, p1, p2, p3, inv = m[0], m[1], m[2], m[3], m[4]
    c0, c1, c2, c3 = c[0], c[1], c[2], c[3]
    for k in range(a.shape[0]):
        r = mont4.mul(a[k, 0], a[k, 1], a[k, 2], a[k, 3], c0, c1, c2, c3, p0, p1, p2, p3, inv)
        out[k, 0], out[k, 1], out[k, 2], out[k, 3] = r


@nb.njit(cache=True)
def _s_add(a, b, out, m):
    p0, p1, p2, p3 = m[0], m[1], m[2], m[3]
    for k in range(a.shape[0]):
        r = mont4.add(a[k, 0], a[k, 1], a[k, 2], a[k, 3], b[k, 0], b[k, 1], b[k, 2], b[k, 3], p0, p1, p2, p3)
        out[k, 0], out[k, 1], out[k, 2], out[k, 3] = r


@nb.njit(cache=True)
def _s_sub(a, b, out, m):
    p0, p1, p2, p3 = m[0], m[1], m[2], m[3]
    for k in range(a.shape[0]):
        r = mont4.sub(a[k, 0], a[k, 1], a[k, 2], a[k, 3], b[k, 0], b[k, 1], b[k, 2], b[k, 3], p0, p1, p2, p3)
        out[k, 0], out[k, 1], out[k, 2], out[k, 3] = r


@nb.njit(parallel=True, cache=True)
def _k_mul_sub(a, b, c, out, m):
    """out = a*b - c (the H numerator on the evaluation domain)."""
    p0, p1, p2, p3, inv = m[0], m[1], m[2], m[3], m[4]
    for k in nb.prange(a.shape[0]):
        t0, t1, t2, t3 = mont4.mul(a[k, 0], a[k, 1], a[k, 2], a[k, 3], b[k, 0], b[k, 1], b[k, 2], b[k, 3], p0, p1, p2, p3, inv)
        r = mont4.sub(t0, t1, t2, t3, c[k, 0], c[k, 1], c[k, 2], c[k, 3], p0, p1, p2, p3)
        out[k, 0], out[k, 1], out[k, 2], out[k, 3] = r


@nb.njit(parallel=True, cache=True)
def _k_copy(src, out):
    for k in nb.prange(src.shape[0]):
        out[k, 0], out[k, 1], out[k, 2], out[k, 3] = src[k, 0], src[k, 1], src[k, 2], src[k, 3]


@nb.njit(parallel=True, cache=True)
def _k_to_mont(a, out, m):
    p0, p1, p2, p3, inv = m[0], m[1], m[2], m[3], m[4]
    r0, r1, r2, r3 = m[5], m[6], m[7], m[8]
    for k in nb.prange(a.shape[0]):
        r = mont4.mul(a[k, 0], a[k, 1], a[k, 2], a[k, 3], r0, r1, r2, r3, p0, p1, p2, p3, inv)
        out[k, 0], out[k, 1], out[k, 2], out[k, 3] = r


@nb.njit(parallel=True, cache=True)
def _k_from_mont(a, out, m):
    p0, p1, p2, p3, inv = m[0], m[1], m[2], m[3], m[4]
    for k in nb.prange(a.shape[0]):
        r = mont4.mul(a[k, 0], a[k, 1], a[k, 2], a[k, 3], _U1, _Z, _Z, _Z, p0, p1, p2, p3, inv)
        out[k, 0], out[k, 1], out[k, 2], out[k, 3] = r


@nb.njit(parallel=True, cache=True)
def _k_below_modulus(a, out, m):
    p0, p1, p2, p3 = m[0], m[1], m[2], m[3]
    for k in nb.prange(a.shape[0]):
        out[k] = mont4.below(a[k, 0], a[k, 1], a[k, 2], a[k, 3], p0, p1, p2, p3)


@nb.njit(parallel=True, cache=True)
def _k_powers_mul(a, starts, step, chunk, out, m):
    """out[i] = a[i] * g^i where starts[j] = g^(j*chunk) and step = g (all Montgomery)."""
    p0, p1, p2, p3, inv = m[0], m[1], m[2], m[3], m[4]
    n = a.shape[0]
    s0, s1, s2, s3 = step[0], step[1], step[2], step[3]
    for j in nb.prange(starts.shape[0]):
        g0, g1, g2, g3 = starts[j, 0], starts[j, 1], starts[j, 2], starts[j, 3]
        end = min(n, (j + 1) * chunk)
        for k in range(j * chunk, end):
            r = mont4.mul(a[k, 0], a[k, 1], a[k, 2], a[k, 3], g0, g1, g2, g3, p0, p1, p2, p3, inv)
            out[k, 0], out[k, 1], out[k, 2], out[k, 3] = r
            g0, g1, g2, g3 = mont4.mul(g0, g1, g2, g3, s0, s1, s2, s3, p0, p1, p2, p3, inv)


@nb.njit(parallel=True, cache=True)
def _k_powers(starts, step, chunk, n, out, m):
    p0, p1, p2, p3, inv = m[0], m[1], m[2], m[3], m[4]
    s0, s1, s2, s3 = step[0], step[1], step[2], step[3]
    for j in nb.prange(starts.shape[0]):
        g0, g1, g2, g3 = starts[j, 0], starts[j, 1], starts[j, 2], starts[j, 3]
        end = min(n, (j + 1) * chunk)
        for k in range(j * chunk, end):
            out[k, 0], out[k, 1], out[k, 2], out[k, 3] = g0, g1, g2, g3
            g0, g1, g2, g3 = mont4.mul(g0, g1, g2, g3, s0, s1, s2, s3, p0, p1, p2, p3, inv)


@nb.njit(cache=True)
def _k_prefix_products(a, pre, m):
    p0, p1, p2, p3, inv = m[0], m[1], m[2], m[3], m[4]
    o0, o1, o2, o3 = m[9], m[10], m[11], m[12]
    for k in range(a.shape[0]):
        pre[k, 0], pre[k, 1], pre[k, 2], pre[k, 3] = o0, o1, o2, o3
        o0, o1, o2, o3 = mont4.mul(o0, o1, o2, o3, a[k, 0], a[k, 1], a[k, 2], a[k, 3], p0, p1, p2, p3, inv)
    return o0, o1, o2, o3


@nb.njit(cache=True)
def _k_batch_inverse(a, pre, inv_total, out, m):
    p0, p1, p2, p3, inv = m[0], m[1], m[2], m[3], m[4]
    i0, i1, i2, i3 = inv_total[0], inv_total[1], inv_total[2], inv_total[3]
    for k in range(a.shape[0] - 1, -1, -1):
        out[k, 0], out[k, 1], out[k, 2], out[k, 3] = mont4.mul(
            i0, i1, i2, i3, pre[k, 0], pre[k, 1], pre[k, 2], pre[k, 3], p0, p1, p2, p3, inv
        )
        i0, i1, i2, i3 = mont4.mul(i0, i1, i2, i3, a[k, 0], a[k, 1], a[k, 2], a[k, 3], p0, p1, p2, p3, inv)


_POWER_CHUNK = 1 << 14


def empty(n: int) -> np.ndarray:
    return np.empty((n, 4), dtype=np.uint64)


def zeros(n: int) -> np.ndarray:
    return np.zeros((n, 4), dtype=np.uint64)


def canonical_from_bytes(buf, n: int) -> np.ndarray:
    """n little-endian 32-byte integers -> (n, 4) uint64 (a view when buf allows, no copy)."""
    return np.frombuffer(buf, dtype="<u8", count=4 * n).reshape(n, 4)


def copy_into(out: np.ndarray, src: np.ndarray) -> np.ndarray:
    """out[:] = src on every core (a single-threaded memcpy runs at ~9 GB/s: the witness upload's
    copy into a pinned staging buffer was bound by it)."""
    if out.shape != src.shape:
        raise ValueError(f"copy_into: shapes {out.shape} and {src.shape} differ")
    _k_copy(src, out)
    return out


def _out(a: np.ndarray, out: np.ndarray | None) -> np.ndarray:
    return np.empty_like(a) if out is None else out


class PrimeField:
    """A prime field of at most 256 bits and its vector operations (Montgomery form, R = 2^256).

    ``name`` is for messages ("BN254 Fr"); ``two_adicity`` is the largest s with 2^s | p - 1.
    """

    LIMBS = 4
    BYTES = 32

    def __init__(self, name: str, p: int):
        if not 2 < p < 1 << 256 or p % 2 == 0:
            raise ValueError(f"{name}: modulus must be an odd prime below 2^256")
        self.name = name
        self.p = p
        self.bits = p.bit_length()
        self.mont_r = pow(2, 256, p)
        self.mont_r2 = pow(2, 512, p)
        self.inv64 = (-pow(p, -1, 1 << 64)) % (1 << 64)
        self.m = np.array(limbs(p, 4) + [self.inv64] + limbs(self.mont_r2, 4) + limbs(self.mont_r, 4), dtype=np.uint64)
        s = 0
        while (p - 1) >> s & 1 == 0:
            s += 1
        self.two_adicity = s

    def __repr__(self) -> str:
        return f"PrimeField({self.name})"

    def __reduce__(self):  # the kernels' modulus array is rebuilt, never pickled stale
        return (PrimeField, (self.name, self.p))

    # ---- vector arithmetic (Montgomery in, Montgomery out)

    def mul(self, a: np.ndarray, b: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        out = _out(a, out)
        (_s_mul if a.shape[0] < SERIAL_BELOW else _k_mul)(a, b, out, self.m)
        return out

    def add(self, a: np.ndarray, b: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        out = _out(a, out)
        (_s_add if a.shape[0] < SERIAL_BELOW else _k_add)(a, b, out, self.m)
        return out

    def sub(self, a: np.ndarray, b: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        out = _out(a, out)
        (_s_sub if a.shape[0] < SERIAL_BELOW else _k_sub)(a, b, out, self.m)
        return out

    def mul_sub(self, a: np.ndarray, b: np.ndarray, c: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """a*b - c elementwise."""
        out = _out(a, out)
        _k_mul_sub(a, b, c, out, self.m)
        return out

    def mont_scalar(self, x: int) -> np.ndarray:
        """One element (any integer, reduced mod p) as its 4 Montgomery limbs."""
        return np.array(limbs(x % self.p * self.mont_r % self.p, 4), dtype=np.uint64)

    def scale(self, a: np.ndarray, c: int, out: np.ndarray | None = None) -> np.ndarray:
        """a * c for an integer c."""
        out = _out(a, out)
        (_s_mul_scalar if a.shape[0] < SERIAL_BELOW else _k_mul_scalar)(a, self.mont_scalar(c), out, self.m)
        return out

    def _power_starts(self, g: int, start: int, n: int) -> np.ndarray:
        starts = []
        cur = start % self.p
        step = pow(g, _POWER_CHUNK, self.p)
        for _ in range(max(1, -(-n // _POWER_CHUNK))):
            starts.append(limbs(cur * self.mont_r % self.p, 4))
            cur = cur * step % self.p
        return np.array(starts, dtype=np.uint64)

    def mul_powers(self, a: np.ndarray, g: int, start: int = 1, out: np.ndarray | None = None) -> np.ndarray:
        """out[i] = a[i] * start * g^i (coset shifts and twiddle scaling)."""
        out = _out(a, out)
        _k_powers_mul(a, self._power_starts(g, start, a.shape[0]), self.mont_scalar(g), _POWER_CHUNK, out, self.m)
        return out

    def powers(self, g: int, n: int, start: int = 1) -> np.ndarray:
        """[start * g^i for i < n] in Montgomery form."""
        out = empty(n)
        _k_powers(self._power_starts(g, start, n), self.mont_scalar(g), _POWER_CHUNK, n, out, self.m)
        return out

    def to_mont(self, a: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        out = _out(a, out)
        _k_to_mont(a, out, self.m)
        return out

    def from_mont(self, a: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        out = _out(a, out)
        _k_from_mont(a, out, self.m)
        return out

    def below_modulus(self, canonical: np.ndarray) -> np.ndarray:
        """Boolean mask: which canonical elements are < p."""
        out = np.empty(canonical.shape[0], dtype=np.bool_)
        _k_below_modulus(canonical, out, self.m)
        return out

    def from_ints(self, values) -> np.ndarray:
        """Python integers (any sign, reduced mod p) -> Montgomery vector."""
        vals = list(values)
        if not vals:
            return zeros(0)
        data = b"".join((v % self.p).to_bytes(32, "little") for v in vals)
        return self.to_mont(np.frombuffer(data, dtype="<u8").reshape(len(vals), 4).copy())

    def to_ints(self, a: np.ndarray) -> list[int]:
        """Montgomery vector -> canonical Python integers."""
        raw = self.from_mont(np.ascontiguousarray(a)).tobytes()
        return [int.from_bytes(raw[32 * i : 32 * i + 32], "little") for i in range(a.shape[0])]

    def to_canonical_bytes(self, a: np.ndarray) -> bytes:
        """Montgomery vector -> concatenated canonical 32-byte little-endian integers."""
        return self.from_mont(np.ascontiguousarray(a)).astype("<u8", copy=False).tobytes()

    def random(self, n: int) -> np.ndarray:
        """n uniformly random elements (CSPRNG), Montgomery form."""
        return self.from_ints(secrets.randbelow(self.p) for _ in range(n))

    def one_mont(self) -> np.ndarray:
        return self.m[9:13].copy()

    def batch_inverse(self, a: np.ndarray) -> np.ndarray:
        """Elementwise inverse (Montgomery's trick: one field inversion for the whole vector).

        Raises ZeroDivisionError if any element is zero.
        """
        a = np.ascontiguousarray(a)
        pre = empty(a.shape[0])
        total = np.array(_k_prefix_products(a, pre, self.m), dtype=np.uint64)
        t = self.to_ints(total.reshape(1, 4))[0]
        if t == 0:
            raise ZeroDivisionError(f"batch_inverse of a {self.name} vector containing zero")
        out = empty(a.shape[0])
        _k_batch_inverse(a, pre, self.mont_scalar(pow(t, -1, self.p)), out, self.m)
        return out

    # ---- roots of unity

    def root_of_unity(self, log_n: int, generator: int) -> int:
        """Primitive 2^log_n-th root of unity: generator^((p-1)/2^log_n) (generator a non-residue)."""
        if not 0 <= log_n <= self.two_adicity:
            raise ValueError(f"domain 2^{log_n} exceeds the two-adicity 2^{self.two_adicity} of {self.name}")
        return pow(generator, (self.p - 1) >> log_n, self.p)

    # module-level helpers, reachable from a field object too
    empty = staticmethod(empty)
    zeros = staticmethod(zeros)
    canonical_from_bytes = staticmethod(canonical_from_bytes)
    copy_into = staticmethod(copy_into)
