"""The carry-chain Montgomery multiplies of mont.cuh (CUZK_MUL_CHAIN=1 and =2), modelled instruction by instruction.

The models below follow ``chain::row_even`` / ``chain::row_odd`` (the first form) and ``chain::row2``
(the second) with the ``CUZK_MUL_CHAIN`` branches of ``mul`` in cuzk/backends/gpu/kernels/mont.cuh one
PTX instruction at a time, with the carry flag as PTX
defines it (the .cc forms set it, the c forms read it, madc.hi and addc only read it), and is checked against
Python integers: a b 2^(-32N) mod p, fully reduced, for every field the kernels instantiate. It checks
the algorithm (the chain order, the words each chain touches, the carries out of the top); that the GPU
runs it bit for bit is the GPU suite's job (tests/test_gpu.py on a device, with the module built with
the define).
"""

from __future__ import annotations

import random

import pytest

from cuzk.curves import get as get_curve

M32 = (1 << 32) - 1


class Ptx:
    """The PTX carry flag and the instructions the chain multiply uses; an instruction without .cc
    whose sum leaves 32 bits would drop a carry: the model refuses it (the kernel relies on the bound)."""

    def __init__(self) -> None:
        self.cf = 0

    def _set(self, s: int) -> int:
        self.cf = s >> 32
        assert self.cf in (0, 1)
        return s & M32

    @staticmethod
    def _keep(s: int) -> int:
        assert s >> 32 == 0, "a carry the kernel drops"
        return s

    def mad_lo_cc(self, x: int, y: int, z: int) -> int:
        return self._set(((x * y) & M32) + z)

    def madc_lo_cc(self, x: int, y: int, z: int) -> int:
        return self._set(((x * y) & M32) + z + self.cf)

    def madc_hi_cc(self, x: int, y: int, z: int) -> int:
        return self._set((x * y >> 32) + z + self.cf)

    def madc_hi(self, x: int, y: int, z: int) -> int:
        return self._keep((x * y >> 32) + z + self.cf)

    def add_cc(self, x: int, y: int) -> int:
        return self._set(x + y)

    def addc_cc(self, x: int, y: int) -> int:
        return self._set(x + y + self.cf)

    def addc(self, x: int, y: int) -> int:
        return self._keep(x + y + self.cf)


def row_even(ptx: Ptx, e: list[int], x: int, y: list[int], n: int, carry_in: bool) -> None:
    """chain::row_even: e[0 .. n] += x (y[0] + y[2] 2^64 + ...)."""
    e[0] = ptx.madc_lo_cc(x, y[0], e[0]) if carry_in else ptx.mad_lo_cc(x, y[0], e[0])
    e[1] = ptx.madc_hi_cc(x, y[0], e[1])
    for j in range(2, n, 2):
        e[j] = ptx.madc_lo_cc(x, y[j], e[j])
        e[j + 1] = ptx.madc_hi_cc(x, y[j], e[j + 1])
    e[n] = ptx.addc(e[n], 0)


def row_odd(ptx: Ptx, o: list[int], x: int, y: list[int], n: int) -> None:
    """chain::row_odd: o[2 .. n + 1] += the odd products (o[k] is word k - 1 of t)."""
    o[2] = ptx.mad_lo_cc(x, y[1], o[2])
    for j in range(1, n, 2):
        if j > 1:
            o[j + 1] = ptx.madc_lo_cc(x, y[j], o[j + 1])
        o[j + 2] = ptx.madc_hi_cc(x, y[j], o[j + 2]) if j < n - 1 else ptx.madc_hi(x, y[j], o[j + 2])


def words(v: int, n: int) -> list[int]:
    return [(v >> (32 * i)) & M32 for i in range(n)]


def value(ws: list[int]) -> int:
    return sum(w << (32 * i) for i, w in enumerate(ws))


def chain_mul(a: int, b: int, p: int, n: int) -> int:
    """The CUZK_MUL_CHAIN branch of mul, statement by statement."""
    assert p < 1 << (32 * n - 1), "the kernel's carry bound needs p < 2^(32N - 1)"
    np0 = (-pow(p, -1, 1 << 32)) % (1 << 32)
    av, bv, pv = words(a, n), words(b, n), words(p, n)
    ptx = Ptx()
    e, o = [0] * (n + 1), [0] * (n + 2)
    for i in range(n):
        row_even(ptx, e, av[i], bv, n, carry_in=i > 0)
        row_odd(ptx, o, av[i], bv, n)
        m = ((e[0] + o[1]) * np0) & M32
        row_even(ptx, e, m, pv, n, carry_in=False)
        row_odd(ptx, o, m, pv, n)
        ptx.add_cc(e[0], o[1])
        assert (e[0] + o[1]) & M32 == 0, "the reduction must clear word 0"
        e, o = o[2:] + [0], e + [0]  # ne[k] = o[k + 2], ne[N] = 0; no[k] = e[k], no[N + 1] = 0
    t = [ptx.addc_cc(e[0], o[1])] + [ptx.addc_cc(e[k], o[k + 1]) for k in range(1, n)]
    hi = ptx.addc(e[n], o[n + 1])
    v = value(t) + (hi << (32 * n))
    assert v < 2 * p  # reduce_once's precondition
    return v - p if v >= p else v


def row2(ptx: Ptx, X: list[int], Y: list[int], x: int, y: list[int], p: list[int], np0: int, first: bool) -> None:
    """chain::row2: t = X + Y 2^32 -> t + x y + m p, X[0] cleared (the caller swaps the roles)."""
    n = len(X)
    if first:
        for j in range(0, n, 2):
            X[j], X[j + 1] = (x * y[j]) & M32, (x * y[j]) >> 32
            Y[j], Y[j + 1] = (x * y[j + 1]) & M32, (x * y[j + 1]) >> 32
    else:
        X[0] = ptx.add_cc(X[0], Y[1])
        for j in range(0, n - 2, 2):  # mad_pairs_down: Y / 2^64 + x (y[1] + y[3] 2^64 + ...) + carry
            Y[j] = ptx.madc_lo_cc(x, y[j + 1], Y[j + 2])
            Y[j + 1] = ptx.madc_hi_cc(x, y[j + 1], Y[j + 3])
        Y[n - 2] = ptx.madc_lo_cc(x, y[n - 1], 0)
        Y[n - 1] = ptx.madc_hi(x, y[n - 1], 0)
        mad_pairs(ptx, X, x, y[0::2])
        Y[n - 1] = ptx.addc(Y[n - 1], 0)
    m = (X[0] * np0) & M32
    mad_pairs(ptx, Y, m, p[1::2])
    mad_pairs(ptx, X, m, p[0::2])
    Y[n - 1] = ptx.addc(Y[n - 1], 0)
    assert X[0] == 0, "the reduction must clear word 0"


def mad_pairs(ptx: Ptx, acc: list[int], x: int, ys: list[int]) -> None:
    """chain::mad_pairs: acc += x (ys[0] + ys[1] 2^64 + ...), a fresh chain (ys: every other word)."""
    for k, yk in enumerate(ys):
        lo = ptx.mad_lo_cc(x, yk, acc[2 * k]) if k == 0 else ptx.madc_lo_cc(x, yk, acc[2 * k])
        acc[2 * k], acc[2 * k + 1] = lo, ptx.madc_hi_cc(x, yk, acc[2 * k + 1])


def chain2_mul(a: int, b: int, p: int, n: int) -> int:
    """The CUZK_MUL_CHAIN == 2 branch of mul, statement by statement."""
    assert p < 1 << (32 * n - 1), "the kernel's carry bound needs p < 2^(32N - 1)"
    np0 = (-pow(p, -1, 1 << 32)) % (1 << 32)
    av, bv, pv = words(a, n), words(b, n), words(p, n)
    ptx = Ptx()
    X, Y = [0] * n, [0] * n
    for i in range(0, n, 2):
        row2(ptx, X, Y, av[i], bv, pv, np0, first=i == 0)
        row2(ptx, Y, X, av[i + 1], bv, pv, np0, first=False)
    t = [ptx.add_cc(X[0], Y[1])] + [ptx.addc_cc(X[k], Y[k + 1]) for k in range(1, n - 1)]
    t.append(ptx.addc(X[n - 1], 0))
    v = value(t)
    assert v < 2 * p  # reduce_once's precondition (its top word is 0)
    return v - p if v >= p else v


FIELDS = [(c, which) for c in ("bls12_381", "bn254") for which in ("r", "q")]


@pytest.mark.parametrize("form", [chain_mul, chain2_mul], ids=["chain1", "chain2"])
@pytest.mark.parametrize("curve,which", FIELDS, ids=str)
def test_chain_multiply_model_matches_integers(curve, which, form):
    C = get_curve(curve)
    p = C.r if which == "r" else C.q
    n = -(-p.bit_length() // 32)
    n += n % 4 and 4 - n % 4  # the kernels' limb counts are multiples of 4 (8 for Fr, 12 for BLS12-381 Fq)
    r_inv = pow(1 << (32 * n), -1, p)
    rng = random.Random(f"{curve}-{which}")
    edge = [0, 1, 2, p - 1, p - 2, (1 << (32 * n - 1)) % p, p >> 1]
    pairs = [(x, y) for x in edge for y in edge] + [(rng.randrange(p), rng.randrange(p)) for _ in range(400)]
    for x, y in pairs:
        assert form(x, y, p, n) == x * y * r_inv % p, (curve, which, x, y)
