"""cuzk.field (prime-field vectors, NTT) and cuzk.curve.fq checked against plain Python integers, for the
scalar field of every curve (BLS12-381's and BN254's Fr) and BN254's base field (a four-limb PrimeField)."""

from __future__ import annotations

import secrets

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cuzk import curves
from cuzk.curve import fq
from cuzk.field import prime
from cuzk.field.ntt import Domain, domain
from cuzk.field.prime import PrimeField, limbs
from cuzk.groth16.style import BELLPERSON_GENERATOR

CURVES = curves.all_curves()
BN254 = curves.get("bn254")
# every four-limb field cuzk computes in: each curve's Fr, and BN254's Fq
FIELDS = [c.fr for c in CURVES] + [BN254.fq]
fields = pytest.mark.parametrize("F", FIELDS, ids=lambda f: f.name.replace(" ", "-"))
on_curves = pytest.mark.parametrize("C", CURVES, ids=lambda c: c.name)
SETTINGS = settings(max_examples=40, deadline=None)


def edges(p: int) -> list[int]:
    """Canonical values that stress carries, borrows and the final reduction."""
    mont = pow(2, 256, p)
    vals = {
        0,
        1,
        2,
        3,
        p - 1,
        p - 2,
        p - 3,
        (p - 1) // 2,
        (p + 1) // 2,
        2**64 - 1,
        2**64,
        2**128 - 1,
        2**192 - 1,
        2**192,
        2**253,
        2**253 - 1,
        p - 2**64,
        p - 2**128,
        p - 2**192,
        p - 2**252,
        pow(2, -256, p),  # Montgomery form 1
        mont,
        p - mont,
    }
    out = sorted(v for v in vals if 0 <= v < p)
    assert len(out) >= 20
    return out


def elem(p: int):
    return st.one_of(st.sampled_from(edges(p)), st.integers(0, p - 1))


def vec(p: int, n: int | None = None):
    return st.lists(elem(p), min_size=n or 1, max_size=n or 24)


def canon_array(values) -> np.ndarray:
    """Canonical (not Montgomery) (n, 4) limb array of arbitrary 256-bit values."""
    return np.array([limbs(v, 4) for v in values], dtype=np.uint64).reshape(len(values), 4)


def raw_ints(a: np.ndarray, width: int = 4) -> list[int]:
    """Limb rows as integers, without any Montgomery conversion."""
    return [sum(int(a[i, j]) << (64 * j) for j in range(width)) for i in range(a.shape[0])]


# ---------------------------------------------------------------------------------------------
# element-wise arithmetic


@fields
@SETTINGS
@given(data=st.data())
def test_binary_ops_match_python_ints(F, data):
    R = F.p
    n = data.draw(st.integers(1, 24))
    xs, ys, zs = (data.draw(vec(R, n)) for _ in range(3))
    a, b, c = F.from_ints(xs), F.from_ints(ys), F.from_ints(zs)
    assert F.to_ints(F.mul(a, b)) == [x * y % R for x, y in zip(xs, ys)]
    assert F.to_ints(F.add(a, b)) == [(x + y) % R for x, y in zip(xs, ys)]
    assert F.to_ints(F.sub(a, b)) == [(x - y) % R for x, y in zip(xs, ys)]
    assert F.to_ints(F.mul_sub(a, b, c)) == [(x * y - z) % R for x, y, z in zip(xs, ys, zs)]
    # inputs are untouched
    assert F.to_ints(a) == xs and F.to_ints(b) == ys and F.to_ints(c) == zs


@fields
def test_edge_value_products_exhaustive(F):
    R = F.p
    e = edges(R)
    xs = [x for x in e for _ in e]
    ys = [y for _ in e for y in e]
    a, b = F.from_ints(xs), F.from_ints(ys)
    assert F.to_ints(F.mul(a, b)) == [x * y % R for x, y in zip(xs, ys)]
    assert F.to_ints(F.add(a, b)) == [(x + y) % R for x, y in zip(xs, ys)]
    assert F.to_ints(F.sub(a, b)) == [(x - y) % R for x, y in zip(xs, ys)]
    assert F.to_ints(F.mul(F.from_ints([R - 1]), F.from_ints([R - 1]))) == [1]


@fields
@SETTINGS
@given(data=st.data())
def test_out_parameter_may_alias_input(F, data):
    R = F.p
    n = data.draw(st.integers(1, 24))
    xs, ys = data.draw(vec(R, n)), data.draw(vec(R, n))
    a, b = F.from_ints(xs), F.from_ints(ys)
    out = F.add(a, b, out=a)
    assert out is a
    assert F.to_ints(a) == [(x + y) % R for x, y in zip(xs, ys)]
    F.mul(a, b, out=b)
    assert F.to_ints(b) == [(x + y) * y % R for x, y in zip(xs, ys)]


@fields
@SETTINGS
@given(data=st.data())
def test_scale(F, data):
    R = F.p
    xs = data.draw(vec(R))
    c = data.draw(st.one_of(elem(R), st.integers(-(2**300), 2**300)))
    assert F.to_ints(F.scale(F.from_ints(xs), c)) == [x * c % R for x in xs]


@fields
@SETTINGS
@given(vals=st.lists(st.integers(-(2**300), 2**300), min_size=0, max_size=24))
def test_from_ints_reduces_and_is_montgomery(F, vals):
    R = F.p
    a = F.from_ints(vals)
    assert a.shape == (len(vals), 4) and a.dtype == np.uint64
    assert F.to_ints(a) == [v % R for v in vals]
    # the stored limbs are v * 2^256 mod p
    assert raw_ints(a) == [v % R * pow(2, 256, R) % R for v in vals]


@fields
@SETTINGS
@given(data=st.data())
def test_to_mont_from_mont_round_trip(F, data):
    R = F.p
    xs = data.draw(vec(R))
    canon = canon_array(xs)
    m = F.to_mont(canon)
    assert raw_ints(m) == [x * pow(2, 256, R) % R for x in xs]
    back = F.from_mont(m)
    assert np.array_equal(back, canon)
    assert F.to_canonical_bytes(m) == b"".join(x.to_bytes(32, "little") for x in xs)
    assert F.mont_scalar(xs[0]).tolist() == limbs(xs[0] * pow(2, 256, R) % R, 4)


@fields
def test_below_modulus(F):
    R = F.p
    vals = [0, 1, R - 1, R, R + 1, 2**255, 2**256 - 1, R - 2**64, R + 2**192, 2**192 - 1, R ^ 1, R - 1 + 2**64]
    expect = [v < R for v in vals]
    assert F.below_modulus(canon_array(vals)).tolist() == expect
    assert expect.count(False) >= 5 and expect.count(True) >= 5


@fields
@SETTINGS
@given(vals=st.lists(st.integers(0, 2**256 - 1), min_size=1, max_size=24))
def test_below_modulus_random(F, vals):
    assert F.below_modulus(canon_array(vals)).tolist() == [v < F.p for v in vals]


@fields
def test_canonical_from_bytes(F):
    vals = [5, F.p - 1, 2**200 + 3]
    buf = b"".join(v.to_bytes(32, "little") for v in vals)
    assert raw_ints(F.canonical_from_bytes(buf, 3)) == vals


@fields
def test_random_and_one(F):
    a = F.random(64)
    ints = F.to_ints(a)
    assert all(0 <= x < F.p for x in ints) and len(set(ints)) == 64
    assert F.to_ints(F.one_mont().reshape(1, 4)) == [1]
    assert F.to_ints(F.zeros(3)) == [0, 0, 0]


def test_fields_are_distinct_and_their_two_adicity():
    assert [c.two_adicity for c in CURVES] == [32, 28]
    assert BN254.fq.two_adicity == 1  # q = 3 mod 4
    with pytest.raises(ValueError, match="odd prime"):
        PrimeField("even", 2**200)


# ---------------------------------------------------------------------------------------------
# batch inverse


@fields
@SETTINGS
@given(data=st.data())
def test_batch_inverse(F, data):
    xs = data.draw(st.lists(elem(F.p).filter(lambda x: x != 0), min_size=1, max_size=40))
    inv = F.to_ints(F.batch_inverse(F.from_ints(xs)))
    assert inv == [pow(x, -1, F.p) for x in xs]


@fields
def test_batch_inverse_empty(F):
    assert F.batch_inverse(F.zeros(0)).shape == (0, 4)


@fields
@pytest.mark.parametrize("pos", [0, 3, 7])
def test_batch_inverse_zero_raises(F, pos):
    R = F.p
    xs = [2, 3, R - 1, 5, 7, 11, 13, 17]
    xs[pos] = 0
    with pytest.raises(ZeroDivisionError):
        F.batch_inverse(F.from_ints(xs))
    # a multiple of p is zero as well
    xs[pos] = R
    with pytest.raises(ZeroDivisionError):
        F.batch_inverse(F.from_ints(xs))


# ---------------------------------------------------------------------------------------------
# powers / mul_powers


@fields
@SETTINGS
@given(data=st.data())
def test_powers(F, data):
    R = F.p
    g, n, start = data.draw(elem(R)), data.draw(st.integers(0, 40)), data.draw(elem(R))
    assert F.to_ints(F.powers(g, n, start=start)) == [start * pow(g, i, R) % R for i in range(n)]


@fields
@SETTINGS
@given(data=st.data())
def test_mul_powers(F, data):
    R = F.p
    xs, g, start = data.draw(vec(R)), data.draw(elem(R)), data.draw(elem(R))
    out = F.mul_powers(F.from_ints(xs), g, start=start)
    assert F.to_ints(out) == [x * start * pow(g, i, R) % R for i, x in enumerate(xs)]


@fields
def test_powers_across_chunk_boundary(F):
    R = F.p
    n = prime._POWER_CHUNK * 2 + 5  # several parallel chunks, the last one partial
    g, start = 0x1234567890ABCDEF1234567890ABCDEF, 3
    expect, cur = [], start
    for _ in range(n):
        expect.append(cur)
        cur = cur * g % R
    assert F.to_ints(F.powers(g, n, start=start)) == expect
    xs = [(7 * i + 1) % R for i in range(n)]
    got = F.to_ints(F.mul_powers(F.from_ints(xs), g, start=start))
    assert got == [x * e % R for x, e in zip(xs, expect)]


# ---------------------------------------------------------------------------------------------
# base-field Montgomery conversions of point coordinates (cuzk.curve.fq), any limb count


def fq_edges(C) -> list[int]:
    Q, k = C.q, C.fq_limbs
    mont = pow(2, 64 * k, Q)
    return [
        0,
        1,
        2,
        Q - 1,
        Q - 2,
        (Q - 1) // 2,
        2**64 - 1,
        2 ** (64 * k - 64) - 1,
        2 ** (Q.bit_length() - 1),
        mont,
        Q - mont,
        pow(2, -64 * k, Q),
    ]


def fq_array(C, values) -> np.ndarray:
    return np.array([limbs(v, C.fq_limbs) for v in values], dtype=np.uint64).reshape(len(values), C.fq_limbs)


@on_curves
@SETTINGS
@given(data=st.data())
def test_fq_mont_round_trip(C, data):
    Q, k = C.q, C.fq_limbs
    xs = data.draw(st.lists(st.one_of(st.sampled_from(fq_edges(C)), st.integers(0, Q - 1)), min_size=1, max_size=24))
    canon = fq_array(C, xs)
    m = fq.to_mont(C, canon)
    assert raw_ints(m, k) == [x * pow(2, 64 * k, Q) % Q for x in xs]
    assert raw_ints(fq.from_mont(C, m), k) == xs
    # from_mont of an arbitrary reduced value is x / 2^(64 k)
    assert raw_ints(fq.from_mont(C, canon), k) == [x * pow(2, -64 * k, Q) % Q for x in xs]


@on_curves
def test_fq_edges_and_below_modulus(C):
    Q, k = C.q, C.fq_limbs
    e = fq_edges(C)
    assert raw_ints(fq.from_mont(C, fq.to_mont(C, fq_array(C, e))), k) == e
    vals = [0, Q - 1, Q, Q + 1, 2 ** (64 * k) - 1, 2 ** (Q.bit_length())]
    assert fq.below_modulus(C, fq_array(C, vals)).tolist() == [v < Q for v in vals]


@on_curves
def test_fq_many_rows_parallel_chunks(C):
    # the kernel works in chunks of 1024 rows
    Q, k = C.q, C.fq_limbs
    xs = [secrets.randbelow(Q) for _ in range(2500)] + [Q - 1]
    m = fq.to_mont(C, fq_array(C, xs))
    assert raw_ints(m, k) == [x * pow(2, 64 * k, Q) % Q for x in xs]
    assert raw_ints(fq.from_mont(C, m), k) == xs


def test_bn254_fq_conversions_agree_with_its_prime_field():
    # two implementations of the same map (the generic N-limb rows and the four-limb vector kernels)
    xs = [secrets.randbelow(BN254.q) for _ in range(300)] + [0, 1, BN254.q - 1]
    canon = fq_array(BN254, xs)
    assert np.array_equal(fq.to_mont(BN254, canon), BN254.fq.to_mont(canon))
    assert np.array_equal(fq.from_mont(BN254, canon), BN254.fq.from_mont(canon))


# ---------------------------------------------------------------------------------------------
# NTT


def naive_dft(coefs: list[int], omega: int, R: int) -> list[int]:
    n = len(coefs)
    return [sum(c * pow(omega, i * k, R) for k, c in enumerate(coefs)) % R for i in range(n)]


def poly_eval(coefs: list[int], x: int, R: int) -> int:
    acc = 0
    for c in reversed(coefs):
        acc = (acc * x + c) % R
    return acc


def generators(C) -> list[int]:
    """snarkjs' generator, and bellperson's where that style exists."""
    return [C.root_generator] + ([BELLPERSON_GENERATOR] if C.bellperson else [])


def ntt_case(data, C, max_log=6):
    log_n = data.draw(st.integers(1, max_log))
    gen = data.draw(st.sampled_from(generators(C)))
    coefs = data.draw(vec(C.r, 1 << log_n))
    return log_n, gen, coefs


def test_snarkjs_generators():
    # ffjavascript builds roots of unity from the first quadratic non-residue: 5 for both scalar fields
    for C in CURVES:
        assert C.root_generator == 5
        assert all(pow(g, (C.r - 1) // 2, C.r) == 1 for g in (2, 3, 4)) and pow(5, (C.r - 1) // 2, C.r) == C.r - 1
    assert BELLPERSON_GENERATOR == 7


@on_curves
@SETTINGS
@given(data=st.data())
def test_ntt_matches_naive_dft(C, data):
    log_n, gen, coefs = ntt_case(data, C)
    d = domain(C.fr, log_n, gen)
    assert d.size == 1 << log_n and d.generator == gen
    got = C.fr.to_ints(d.ntt(C.fr.from_ints(coefs)))
    assert got == naive_dft(coefs, d.omega, C.r)


@on_curves
@SETTINGS
@given(data=st.data())
def test_intt_inverts_ntt(C, data):
    log_n, gen, coefs = ntt_case(data, C)
    F = C.fr
    d = domain(F, log_n, gen)
    a = F.from_ints(coefs)
    evals = d.ntt(a)
    assert F.to_ints(a) == coefs  # not in place by default
    assert F.to_ints(d.intt(evals)) == coefs
    # intt is the inverse DFT: evaluations -> coefficients
    assert F.to_ints(d.intt(F.from_ints(naive_dft(coefs, d.omega, C.r)))) == coefs


@on_curves
@SETTINGS
@given(data=st.data())
def test_coset_ntt_evaluates_on_coset(C, data):
    log_n, gen, coefs = ntt_case(data, C)
    shift = data.draw(elem(C.r).filter(lambda x: x != 0))
    d = domain(C.fr, log_n, gen)
    got = C.fr.to_ints(d.coset_ntt(C.fr.from_ints(coefs), shift))
    R = C.r
    assert got == [poly_eval(coefs, shift * pow(d.omega, i, R) % R, R) for i in range(d.size)]


@on_curves
@SETTINGS
@given(data=st.data())
def test_coset_intt_inverts_coset_ntt(C, data):
    log_n, gen, coefs = ntt_case(data, C)
    shift = data.draw(elem(C.r).filter(lambda x: x != 0))
    scale = data.draw(elem(C.r))
    d = domain(C.fr, log_n, gen)
    evals = d.coset_ntt(C.fr.from_ints(coefs), shift)
    assert C.fr.to_ints(d.coset_intt(evals.copy(), shift)) == coefs
    assert C.fr.to_ints(d.coset_intt(evals, shift, scale=scale)) == [c * scale % C.r for c in coefs]


@on_curves
def test_ntt_inplace(C):
    F = C.fr
    d = domain(F, 3, C.root_generator)
    coefs = list(range(1, 9))
    a = F.from_ints(coefs)
    out = d.ntt(a, inplace=True)
    assert out is a
    assert F.to_ints(a) == naive_dft(coefs, d.omega, C.r)
    d.intt(a, inplace=True)
    assert F.to_ints(a) == coefs


@pytest.mark.parametrize("C,gen", [(c, g) for c in CURVES for g in generators(c)], ids=lambda x: getattr(x, "name", str(x)))
def test_large_round_trip_2_12(C, gen):
    F, R = C.fr, C.r
    log_n = 12
    d = domain(F, log_n, gen)
    coefs = [secrets.randbelow(R) for _ in range(1 << log_n)]
    coefs[0], coefs[1], coefs[-1] = 0, R - 1, 1
    a = F.from_ints(coefs)
    evals = d.ntt(a)
    assert F.to_ints(d.intt(evals)) == coefs
    # spot-check a few evaluations against Horner
    ev = F.to_ints(evals)
    for i in (0, 1, 2, 1000, 4095):
        assert ev[i] == poly_eval(coefs, pow(d.omega, i, R), R)
    shift = gen
    cev = d.coset_ntt(a, shift)
    cev_i = F.to_ints(cev)
    for i in (0, 7, 4095):
        assert cev_i[i] == poly_eval(coefs, shift * pow(d.omega, i, R) % R, R)
    assert F.to_ints(d.coset_intt(cev, shift)) == coefs


@pytest.mark.parametrize(
    "C,k", [(c, k) for c in CURVES for k in range(c.two_adicity + 1)], ids=lambda x: getattr(x, "name", str(x))
)
def test_root_of_unity(C, k):
    R = C.r
    for g in generators(C):
        omega = C.root_of_unity(k, g)
        assert omega == pow(g, (R - 1) >> k, R)
        assert pow(omega, 1 << k, R) == 1
        if k >= 1:
            assert pow(omega, 1 << (k - 1), R) == R - 1  # primitive: order exactly 2^k
        else:
            assert omega == 1
    if k <= 16:
        d = Domain(C.fr, k, C.root_generator)
        assert d.omega == C.root_of_unity(k) and d.omega * d.omega_inv % R == 1 and d.size * d.size_inv % R == 1


def test_generators_give_different_domains():
    # the two styles must not share roots (snarkjs 5, bellperson 7)
    F = curves.get("bls12_381").fr
    assert domain(F, 10, 5).omega != domain(F, 10, 7).omega


@on_curves
def test_domain_rejects_out_of_range(C):
    for bad in (C.two_adicity + 1, C.two_adicity + 2, 64, -1):
        with pytest.raises(ValueError, match="2\\^"):
            Domain(C.fr, bad, 5)
        with pytest.raises(ValueError):
            C.root_of_unity(bad)


@on_curves
def test_domain_rejects_wrong_shape(C):
    d = domain(C.fr, 3, 5)
    with pytest.raises(ValueError, match="shape"):
        d.ntt(C.fr.zeros(4))
    with pytest.raises(ValueError, match="shape"):
        d.intt(np.zeros((8, 4), dtype=np.int64))


@on_curves
def test_domain_size_one(C):
    F = C.fr
    d = Domain(F, 0, 5)
    a = F.from_ints([42])
    assert F.to_ints(d.ntt(a)) == [42]
    assert F.to_ints(d.intt(a)) == [42]
    assert F.to_ints(d.coset_ntt(a, 9)) == [42]
    assert F.to_ints(d.coset_intt(a, 9)) == [42]


def test_copy_into_copies_every_limb_and_checks_shapes():
    F = BN254.fr
    a = F.random(1001)
    b = F.zeros(1001)
    assert F.copy_into(b, a) is b
    assert np.array_equal(a, b)
    with pytest.raises(ValueError, match="shapes"):
        F.copy_into(F.zeros(1000), a)
