"""cuzk.field (Fr vectors, NTT) and cuzk.curve.fq checked against plain Python integers."""

from __future__ import annotations

import secrets

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cuzk.curve import fq
from cuzk.field import fr
from cuzk.field.constants import BELLPERSON_GENERATOR, FR_TWO_ADICITY, SNARKJS_ROOT_GENERATOR, Q, R, limbs, root_of_unity
from cuzk.field.ntt import Domain, domain

MONT = pow(2, 256, R)
MONT_Q = pow(2, 384, Q)

# canonical values that stress carries, borrows and the final reduction
EDGE = sorted(
    {
        0,
        1,
        2,
        3,
        R - 1,
        R - 2,
        R - 3,
        (R - 1) // 2,
        (R + 1) // 2,
        2**64 - 1,
        2**64,
        2**128 - 1,
        2**192 - 1,
        2**192,
        2**254,
        2**254 - 1,
        2**254 + 1,
        R - 2**64,
        R - 2**128,
        R - 2**192,
        R - 2**253,
        pow(2, -256, R),  # Montgomery form 1
        MONT,
        R - MONT,
    }
)
assert all(0 <= e < R for e in EDGE)

fr_elem = st.one_of(st.sampled_from(EDGE), st.integers(0, R - 1))
fr_nonzero = fr_elem.filter(lambda x: x != 0)
fr_vec = st.lists(fr_elem, min_size=1, max_size=24)

SETTINGS = settings(max_examples=60, deadline=None)


def canon_array(values) -> np.ndarray:
    """Canonical (not Montgomery) (n, 4) limb array of arbitrary 256-bit values."""
    return np.array([limbs(v, 4) for v in values], dtype=np.uint64).reshape(len(values), 4)


def raw_ints(a: np.ndarray, width: int = 4) -> list[int]:
    """Limb rows as integers, without any Montgomery conversion."""
    return [sum(int(a[i, j]) << (64 * j) for j in range(width)) for i in range(a.shape[0])]


# ---------------------------------------------------------------------------------------------
# Fr element-wise arithmetic


@SETTINGS
@given(st.data())
def test_binary_ops_match_python_ints(data):
    n = data.draw(st.integers(1, 24))
    xs = data.draw(st.lists(fr_elem, min_size=n, max_size=n))
    ys = data.draw(st.lists(fr_elem, min_size=n, max_size=n))
    zs = data.draw(st.lists(fr_elem, min_size=n, max_size=n))
    a, b, c = fr.from_ints(xs), fr.from_ints(ys), fr.from_ints(zs)
    assert fr.to_ints(fr.mul(a, b)) == [x * y % R for x, y in zip(xs, ys)]
    assert fr.to_ints(fr.add(a, b)) == [(x + y) % R for x, y in zip(xs, ys)]
    assert fr.to_ints(fr.sub(a, b)) == [(x - y) % R for x, y in zip(xs, ys)]
    assert fr.to_ints(fr.mul_sub(a, b, c)) == [(x * y - z) % R for x, y, z in zip(xs, ys, zs)]
    # inputs are untouched
    assert fr.to_ints(a) == xs and fr.to_ints(b) == ys and fr.to_ints(c) == zs


def test_edge_value_products_exhaustive():
    xs = [x for x in EDGE for _ in EDGE]
    ys = [y for _ in EDGE for y in EDGE]
    a, b = fr.from_ints(xs), fr.from_ints(ys)
    assert fr.to_ints(fr.mul(a, b)) == [x * y % R for x, y in zip(xs, ys)]
    assert fr.to_ints(fr.add(a, b)) == [(x + y) % R for x, y in zip(xs, ys)]
    assert fr.to_ints(fr.sub(a, b)) == [(x - y) % R for x, y in zip(xs, ys)]
    assert fr.to_ints(fr.mul(fr.from_ints([R - 1]), fr.from_ints([R - 1]))) == [1]


@SETTINGS
@given(fr_vec, fr_vec)
def test_out_parameter_may_alias_input(xs, ys):
    n = min(len(xs), len(ys))
    xs, ys = xs[:n], ys[:n]
    a, b = fr.from_ints(xs), fr.from_ints(ys)
    out = fr.add(a, b, out=a)
    assert out is a
    assert fr.to_ints(a) == [(x + y) % R for x, y in zip(xs, ys)]
    fr.mul(a, b, out=b)
    assert fr.to_ints(b) == [(x + y) * y % R for x, y in zip(xs, ys)]


@SETTINGS
@given(fr_vec, st.one_of(fr_elem, st.integers(-(2**300), 2**300)))
def test_scale(xs, c):
    assert fr.to_ints(fr.scale(fr.from_ints(xs), c)) == [x * c % R for x in xs]


@SETTINGS
@given(st.lists(st.integers(-(2**300), 2**300), min_size=0, max_size=24))
def test_from_ints_reduces_and_is_montgomery(vals):
    a = fr.from_ints(vals)
    assert a.shape == (len(vals), 4) and a.dtype == np.uint64
    assert fr.to_ints(a) == [v % R for v in vals]
    # the stored limbs are v * 2^256 mod r
    assert raw_ints(a) == [v % R * MONT % R for v in vals]


@SETTINGS
@given(fr_vec)
def test_to_mont_from_mont_round_trip(xs):
    canon = canon_array(xs)
    m = fr.to_mont(canon)
    assert raw_ints(m) == [x * MONT % R for x in xs]
    back = fr.from_mont(m)
    assert np.array_equal(back, canon)
    assert fr.to_canonical_bytes(m) == b"".join(x.to_bytes(32, "little") for x in xs)
    assert fr.mont_scalar(xs[0]).tolist() == limbs(xs[0] * MONT % R, 4)


def test_below_modulus():
    vals = [0, 1, R - 1, R, R + 1, 2**255, 2**256 - 1, R - 2**64, R + 2**192, 2**192 - 1, R ^ 1, R - 1 + 2**64]
    expect = [v < R for v in vals]
    assert fr.below_modulus(canon_array(vals)).tolist() == expect
    assert expect.count(False) >= 5 and expect.count(True) >= 5


@SETTINGS
@given(st.lists(st.integers(0, 2**256 - 1), min_size=1, max_size=24))
def test_below_modulus_random(vals):
    assert fr.below_modulus(canon_array(vals)).tolist() == [v < R for v in vals]


def test_canonical_from_bytes():
    vals = [5, R - 1, 2**200 + 3]
    buf = b"".join(v.to_bytes(32, "little") for v in vals)
    assert raw_ints(fr.canonical_from_bytes(buf, 3)) == vals


def test_random_and_one():
    a = fr.random(64)
    ints = fr.to_ints(a)
    assert all(0 <= x < R for x in ints) and len(set(ints)) == 64
    assert fr.to_ints(fr.one_mont().reshape(1, 4)) == [1]
    assert fr.to_ints(fr.zeros(3)) == [0, 0, 0]


# ---------------------------------------------------------------------------------------------
# batch inverse


@SETTINGS
@given(st.lists(fr_nonzero, min_size=1, max_size=40))
def test_batch_inverse(xs):
    inv = fr.to_ints(fr.batch_inverse(fr.from_ints(xs)))
    assert inv == [pow(x, -1, R) for x in xs]


def test_batch_inverse_empty():
    assert fr.batch_inverse(fr.zeros(0)).shape == (0, 4)


@pytest.mark.parametrize("pos", [0, 3, 7])
def test_batch_inverse_zero_raises(pos):
    xs = [2, 3, R - 1, 5, 7, 11, 13, 17]
    xs[pos] = 0
    with pytest.raises(ZeroDivisionError):
        fr.batch_inverse(fr.from_ints(xs))
    # a multiple of r is zero as well
    xs[pos] = R
    with pytest.raises(ZeroDivisionError):
        fr.batch_inverse(fr.from_ints(xs))


# ---------------------------------------------------------------------------------------------
# powers / mul_powers


@SETTINGS
@given(fr_elem, st.integers(0, 40), fr_elem)
def test_powers(g, n, start):
    assert fr.to_ints(fr.powers(g, n, start=start)) == [start * pow(g, i, R) % R for i in range(n)]


@SETTINGS
@given(fr_vec, fr_elem, fr_elem)
def test_mul_powers(xs, g, start):
    out = fr.mul_powers(fr.from_ints(xs), g, start=start)
    assert fr.to_ints(out) == [x * start * pow(g, i, R) % R for i, x in enumerate(xs)]


def test_powers_across_chunk_boundary():
    n = fr._POWER_CHUNK * 2 + 5  # several parallel chunks, the last one partial
    g, start = 0x1234567890ABCDEF1234567890ABCDEF, 3
    expect, cur = [], start
    for _ in range(n):
        expect.append(cur)
        cur = cur * g % R
    assert fr.to_ints(fr.powers(g, n, start=start)) == expect
    xs = [(7 * i + 1) % R for i in range(n)]
    got = fr.to_ints(fr.mul_powers(fr.from_ints(xs), g, start=start))
    assert got == [x * e % R for x, e in zip(xs, expect)]


# ---------------------------------------------------------------------------------------------
# Fq Montgomery conversions (cuzk.curve.fq)

FQ_EDGE = [0, 1, 2, Q - 1, Q - 2, (Q - 1) // 2, 2**64 - 1, 2**320 - 1, 2**380, MONT_Q, Q - MONT_Q, pow(2, -384, Q)]
fq_elem = st.one_of(st.sampled_from(FQ_EDGE), st.integers(0, Q - 1))


def fq_array(values) -> np.ndarray:
    return np.array([limbs(v, 6) for v in values], dtype=np.uint64).reshape(len(values), 6)


@SETTINGS
@given(st.lists(fq_elem, min_size=1, max_size=24))
def test_fq_mont_round_trip(xs):
    canon = fq_array(xs)
    m = fq.to_mont(canon)
    assert raw_ints(m, 6) == [x * MONT_Q % Q for x in xs]
    assert raw_ints(fq.from_mont(m), 6) == xs
    # from_mont of an arbitrary reduced value is x / 2^384
    assert raw_ints(fq.from_mont(canon), 6) == [x * pow(2, -384, Q) % Q for x in xs]


def test_fq_edges_and_below_modulus():
    canon = fq_array(FQ_EDGE)
    assert raw_ints(fq.from_mont(fq.to_mont(canon)), 6) == FQ_EDGE
    vals = [0, Q - 1, Q, Q + 1, 2**384 - 1, 2**381]
    assert fq.below_modulus(fq_array(vals)).tolist() == [v < Q for v in vals]


def test_fq_many_rows_parallel_chunks():
    # the kernel works in chunks of 1024 rows
    xs = [secrets.randbelow(Q) for _ in range(2500)] + [Q - 1]
    m = fq.to_mont(fq_array(xs))
    assert raw_ints(m, 6) == [x * MONT_Q % Q for x in xs]
    assert raw_ints(fq.from_mont(m), 6) == xs


# ---------------------------------------------------------------------------------------------
# NTT

GENERATORS = [SNARKJS_ROOT_GENERATOR, BELLPERSON_GENERATOR]


def naive_dft(coefs: list[int], omega: int) -> list[int]:
    n = len(coefs)
    return [sum(c * pow(omega, i * k, R) for k, c in enumerate(coefs)) % R for i in range(n)]


def poly_eval(coefs: list[int], x: int) -> int:
    acc = 0
    for c in reversed(coefs):
        acc = (acc * x + c) % R
    return acc


@st.composite
def ntt_case(draw, max_log=6):
    log_n = draw(st.integers(1, max_log))
    gen = draw(st.sampled_from(GENERATORS))
    coefs = draw(st.lists(fr_elem, min_size=1 << log_n, max_size=1 << log_n))
    return log_n, gen, coefs


def test_generators_are_5_and_7():
    assert SNARKJS_ROOT_GENERATOR == 5 and BELLPERSON_GENERATOR == 7


@SETTINGS
@given(ntt_case())
def test_ntt_matches_naive_dft(case):
    log_n, gen, coefs = case
    d = domain(log_n, gen)
    assert d.size == 1 << log_n and d.generator == gen
    got = fr.to_ints(d.ntt(fr.from_ints(coefs)))
    assert got == naive_dft(coefs, d.omega)


@SETTINGS
@given(ntt_case())
def test_intt_inverts_ntt(case):
    log_n, gen, coefs = case
    d = domain(log_n, gen)
    a = fr.from_ints(coefs)
    evals = d.ntt(a)
    assert fr.to_ints(a) == coefs  # not in place by default
    assert fr.to_ints(d.intt(evals)) == coefs
    # intt is the inverse DFT: evaluations -> coefficients
    assert fr.to_ints(d.intt(fr.from_ints(naive_dft(coefs, d.omega)))) == coefs


@SETTINGS
@given(ntt_case(), fr_nonzero)
def test_coset_ntt_evaluates_on_coset(case, shift):
    log_n, gen, coefs = case
    d = domain(log_n, gen)
    got = fr.to_ints(d.coset_ntt(fr.from_ints(coefs), shift))
    assert got == [poly_eval(coefs, shift * pow(d.omega, i, R) % R) for i in range(d.size)]


@SETTINGS
@given(ntt_case(), fr_nonzero)
def test_coset_intt_inverts_coset_ntt(case, shift):
    log_n, gen, coefs = case
    d = domain(log_n, gen)
    evals = d.coset_ntt(fr.from_ints(coefs), shift)
    assert fr.to_ints(d.coset_intt(evals, shift)) == coefs


def test_ntt_inplace():
    d = domain(3)
    coefs = list(range(1, 9))
    a = fr.from_ints(coefs)
    out = d.ntt(a, inplace=True)
    assert out is a
    assert fr.to_ints(a) == naive_dft(coefs, d.omega)
    d.intt(a, inplace=True)
    assert fr.to_ints(a) == coefs


@pytest.mark.parametrize("gen", GENERATORS)
def test_large_round_trip_2_12(gen):
    log_n = 12
    d = domain(log_n, gen)
    coefs = [secrets.randbelow(R) for _ in range(1 << log_n)]
    coefs[0], coefs[1], coefs[-1] = 0, R - 1, 1
    a = fr.from_ints(coefs)
    evals = d.ntt(a)
    assert fr.to_ints(d.intt(evals)) == coefs
    # spot-check a few evaluations against Horner
    ev = fr.to_ints(evals)
    for i in (0, 1, 2, 1000, 4095):
        assert ev[i] == poly_eval(coefs, pow(d.omega, i, R))
    shift = gen
    cev = d.coset_ntt(a, shift)
    cev_i = fr.to_ints(cev)
    for i in (0, 7, 4095):
        assert cev_i[i] == poly_eval(coefs, shift * pow(d.omega, i, R) % R)
    assert fr.to_ints(d.coset_intt(cev, shift)) == coefs


@pytest.mark.parametrize("k", range(0, FR_TWO_ADICITY + 1))
def test_root_of_unity(k):
    omega = root_of_unity(k, 5)
    assert omega == pow(5, (R - 1) >> k, R)
    assert pow(omega, 1 << k, R) == 1
    if k >= 1:
        assert pow(omega, 1 << (k - 1), R) == R - 1  # primitive: order exactly 2^k
    else:
        assert omega == 1
    omega7 = root_of_unity(k, 7)
    assert omega7 == pow(7, (R - 1) >> k, R)
    assert pow(omega7, 1 << k, R) == 1
    if k >= 1:
        assert pow(omega7, 1 << (k - 1), R) == R - 1
    if k <= 16:
        d = Domain(k, 5)
        assert d.omega == omega and d.omega * d.omega_inv % R == 1 and d.size * d.size_inv % R == 1


def test_generators_give_different_domains():
    # the two styles must not share roots (snarkjs 5, bellperson 7)
    assert domain(10, 5).omega != domain(10, 7).omega


@pytest.mark.parametrize("bad", [33, 34, 64, -1])
def test_domain_rejects_out_of_range(bad):
    with pytest.raises(ValueError, match="2\\^"):
        Domain(bad)
    with pytest.raises(ValueError):
        root_of_unity(bad)


def test_domain_rejects_wrong_shape():
    d = domain(3)
    with pytest.raises(ValueError, match="shape"):
        d.ntt(fr.zeros(4))
    with pytest.raises(ValueError, match="shape"):
        d.intt(np.zeros((8, 4), dtype=np.int64))


def test_domain_size_one():
    d = Domain(0)
    a = fr.from_ints([42])
    assert fr.to_ints(d.ntt(a)) == [42]
    assert fr.to_ints(d.intt(a)) == [42]
    assert fr.to_ints(d.coset_ntt(a, 9)) == [42]
    assert fr.to_ints(d.coset_intt(a, 9)) == [42]


def test_copy_into_copies_every_limb_and_checks_shapes():
    a = fr.random(1001)
    b = fr.zeros(1001)
    assert fr.copy_into(b, a) is b
    assert np.array_equal(a, b)
    with pytest.raises(ValueError, match="shapes"):
        fr.copy_into(fr.zeros(1000), a)
