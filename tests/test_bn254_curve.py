"""BN254 CPU point library (cuzk.curve.bn254) against external truth.

Truth: py_ecc (Ethereum Foundation's pure-Python bn128, `py_ecc.optimized_bn128`) for point arithmetic
and pairings, and snarkjs (`vk_alphabeta_12` of a verification key it exports) for the exact GT value.
py_ecc raises to the textbook exponent (q^12 - 1)/r; arkworks, libff and snarkjs (wasmcurves'
`_finalExponentiationLastChunk`) use the Fuentes-Castaneda et al. hard part, i.e. the power
2z(6z^2 + 3z + 1) of it; we match snarkjs and check the exact relation to py_ecc.
"""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import threading
from pathlib import Path

import numpy as np
import pytest
from conftest import ROOT, SNARKJS
from py_ecc import optimized_bn128 as ob

from cuzk.curve import _bn254_msm as ms
from cuzk.curve import _bn254_pairing as pr
from cuzk.curve import bn254 as L
from cuzk.curves import get

C = get("bn254")
Q, R = C.q, C.r
ZP = 4965661367192848881
EXP_FACTOR = 2 * ZP * (6 * ZP * ZP + 3 * ZP + 1)  # snarkjs/arkworks GT = textbook GT ^ this

CIRCOM = ROOT / "node_modules" / ".bin" / "circom2"

rng = random.Random(254)


def rand_scalar() -> int:
    return rng.randrange(R)


# ---- conversions to and from py_ecc


def ecc_xy(P) -> list[int]:
    """py_ecc point -> canonical coordinates [x, y] (G1) or [x0, x1, y0, y1] (G2); infinity -> zeros."""
    if ob.is_inf(P):
        return [0, 0] if isinstance(P[0], ob.FQ) else [0, 0, 0, 0]
    x, y = ob.normalize(P)
    if isinstance(x, ob.FQ):
        return [int(x), int(y)]
    return [int(x.coeffs[0]), int(x.coeffs[1]), int(y.coeffs[0]), int(y.coeffs[1])]


def xy(p) -> list[int]:
    raw = p.to_xy_bytes_le()
    return [int.from_bytes(raw[i : i + 32], "little") for i in range(0, len(raw), 32)]


def from_ecc(P):
    c = ecc_xy(P)
    cls = L.G1Point if len(c) == 2 else L.G2Point
    return cls.from_xy_bytes_unchecked_le(b"".join(v.to_bytes(32, "little") for v in c))


def gt_to_ecc(e: L.GT) -> ob.FQ12:
    """Our tower (Fq12 = Fq6[w]/(w^2 - v), Fq6 = Fq2[v]/(v^3 - (9 + u))) -> py_ecc's Fq[w]/(w^12 - 18 w^6 + 82)
    with u = w^6 - 9: coefficient (h, k) of the tower multiplies w^(2k + h)."""
    c = e.coefficients()
    out = [0] * 12
    for p in range(6):
        h, k = divmod(p, 3)
        i = 2 * k + h
        a, b = c[2 * p], c[2 * p + 1]
        out[i] = (out[i] + a - 9 * b) % Q
        out[i + 6] = (out[i + 6] + b) % Q
    return ob.FQ12(out)


def limbs(values) -> np.ndarray:
    return np.array([[(v >> (64 * i)) & (2**64 - 1) for i in range(4)] for v in values], dtype=np.uint64).reshape(-1, 4)


# ---- Fq2 square roots (for a twist point outside G2)


def fq_sqrt(a: int) -> int | None:
    s = pow(a, (Q + 1) // 4, Q)
    return s if s * s % Q == a % Q else None


def fq2_sqrt(a0: int, a1: int):
    n = fq_sqrt((a0 * a0 + a1 * a1) % Q)
    if n is None:
        return None
    inv2 = pow(2, -1, Q)
    for t in ((a0 + n) * inv2 % Q, (a0 - n) * inv2 % Q):
        c0 = fq_sqrt(t)
        if c0:
            c1 = a1 * pow(2 * c0, -1, Q) % Q
            if ((c0 * c0 - c1 * c1) % Q, 2 * c0 * c1 % Q) == (a0 % Q, a1 % Q):
                return c0, c1
    return None


def twist_point_outside_g2():
    b0, b1 = C.b2
    for i in range(1, 1000):
        x0, x1 = i, 1
        # x^3 + b'
        s0, s1 = (x0 * x0 - x1 * x1) % Q, 2 * x0 * x1 % Q
        t0, t1 = (s0 * x0 - s1 * x1) % Q, (s0 * x1 + s1 * x0) % Q
        y = fq2_sqrt((t0 + b0) % Q, (t1 + b1) % Q)
        if y:
            return (ob.FQ2([x0, x1]), ob.FQ2([y[0], y[1]]), ob.FQ2.one())
    raise AssertionError("no twist point found")


# ---------------------------------------------------------------------------------------------
# Scalar


def test_scalar_api():
    s = L.Scalar(5)
    assert int(s) == 5 and s == L.Scalar(5) and s != L.Scalar(6)
    assert L.Scalar(R + 7) == L.Scalar(7)
    assert L.Scalar.from_le_bytes((R - 1).to_bytes(32, "little")) == L.Scalar(R - 1)
    with pytest.raises(ValueError):
        L.Scalar.from_le_bytes(R.to_bytes(32, "little"))
    with pytest.raises(ValueError):
        L.Scalar.from_le_bytes(b"\x01" * 31)
    assert L.Scalar.from_le_bytes_mod_order(b"\xff" * 32) == L.Scalar(2**256 - 1)
    assert L.Scalar(123).to_le_bytes() == (123).to_bytes(32, "little")
    assert L.Scalar.from_be_bytes(L.Scalar(99).to_be_bytes()) == L.Scalar(99)
    a, b = L.Scalar(rand_scalar()), L.Scalar(rand_scalar())
    assert int(a * b) == int(a) * int(b) % R and int(a - b) == (int(a) - int(b)) % R
    assert (a / b) * b == a and a * a.inverse() == L.Scalar(1) and -a + a == L.Scalar(0)
    assert a.pow(L.Scalar(3)) == a * a * a and a.square() == a * a
    assert L.Scalar(0).is_zero() and L.Scalar(1).is_one()
    assert repr(L.Scalar(5)) == "Scalar(5)" and hash(L.Scalar(5)) == hash(L.Scalar(R + 5))


# ---------------------------------------------------------------------------------------------
# point arithmetic against py_ecc


@pytest.mark.parametrize("group", [1, 2])
def test_point_arithmetic_matches_py_ecc(group):
    cls, G = (L.G1Point, ob.G1) if group == 1 else (L.G2Point, ob.G2)
    g = cls()
    assert xy(g) == ecc_xy(G)
    for _ in range(3):
        a, b = rand_scalar(), rand_scalar()
        A, B = ob.multiply(G, a), ob.multiply(G, b)
        pa, pb = g * L.Scalar(a), g * b  # Scalar and int
        assert xy(pa) == ecc_xy(A) and xy(pb) == ecc_xy(B)
        assert xy(pa + pb) == ecc_xy(ob.add(A, B))
        assert xy(pa - pb) == ecc_xy(ob.add(A, ob.neg(B)))
        assert xy(-pa) == ecc_xy(ob.neg(A))
        assert xy(pa.double()) == ecc_xy(ob.double(A))
        assert xy(pa * L.Scalar(b)) == ecc_xy(ob.multiply(A, b))
        assert xy(L.Scalar(b) * pa) == xy(pa * L.Scalar(b))
    # special scalars and the doubling / cancelling branches of addition
    p = g * rand_scalar()
    assert p * 0 == cls.identity() and p * 1 == p and p * (R - 1) == -p and p * R == cls.identity()
    assert p + p == p.double() and p + (-p) == cls.identity()
    assert (p + p) + p == p * 3 and p.double().double() == p * 4


@pytest.mark.parametrize("cls", [L.G1Point, L.G2Point])
def test_identity_equality_hash(cls):
    g, o = cls(), cls.identity()
    assert o + g == g and g + o == g and o + o == o and -o == o and o.double() == o
    assert o.to_xy_bytes_le() == bytes(len(g.to_xy_bytes_le()))
    assert cls.from_xy_bytes_unchecked_le(bytes(len(g.to_xy_bytes_le()))) == o
    assert g * 5 * 0 == o and o * 7 == o and o.is_in_subgroup() and o.is_identity()
    # equal as group elements whatever the Jacobian representative
    p, q = g * 6, (g * 2 + g) + (g * 3)
    assert p == q and hash(p) == hash(q) and len({p, q, g * 6}) == 1
    assert p != g and g != o and (g == 5) is False
    assert repr(o).endswith("(identity)") and repr(g).startswith(cls.__name__)


@pytest.mark.parametrize("cls", [L.G1Point, L.G2Point])
def test_xy_encodings_round_trip_and_rejects(cls):
    p = cls() * rand_scalar()
    raw = p.to_xy_bytes_le()
    assert len(raw) == (64 if cls is L.G1Point else 128)
    assert cls.from_xy_bytes_unchecked_le(raw) == p and cls.from_xy_bytes_le(raw) == p
    assert cls.from_xy_bytes_unchecked_be(p.to_xy_bytes_be()) == p and cls.from_xy_bytes_be(p.to_xy_bytes_be()) == p
    # off the curve: y + 1
    coords = [int.from_bytes(raw[i : i + 32], "little") for i in range(0, len(raw), 32)]
    bad = list(coords)
    bad[len(bad) // 2] = (bad[len(bad) // 2] + 1) % Q
    with pytest.raises(ValueError, match="not on the curve"):
        cls.from_xy_bytes_unchecked_le(b"".join(v.to_bytes(32, "little") for v in bad))
    # x + q: the same residue, not canonical
    big = list(coords)
    big[0] += Q
    with pytest.raises(ValueError, match="modulus"):
        cls.from_xy_bytes_unchecked_le(b"".join(v.to_bytes(32, "little") for v in big))
    with pytest.raises(ValueError):
        cls.from_xy_bytes_unchecked_le(raw[:-1])
    import pickle

    assert pickle.loads(pickle.dumps(p)) == p


def test_g2_subgroup_check_rejects_twist_point_outside_g2():
    P = twist_point_outside_g2()
    assert ob.is_on_curve(P, ob.b2)
    assert not ob.is_inf(ob.multiply(P, R))  # py_ecc: r * P != O, so P is outside G2
    p = from_ecc(P)  # on the twist: accepted without the subgroup check
    assert not p.is_in_subgroup()
    assert not (p + L.G2Point()).is_in_subgroup()
    with pytest.raises(ValueError, match="subgroup"):
        L.G2Point.from_xy_bytes_le(p.to_xy_bytes_le())
    # clearing the cofactor h = 2q - r lands in G2
    cleared = from_ecc(ob.multiply(P, 2 * Q - R))
    assert cleared.is_in_subgroup()
    assert (L.G2Point() * rand_scalar()).is_in_subgroup()
    assert (L.G1Point() * rand_scalar()).is_in_subgroup()


# ---------------------------------------------------------------------------------------------
# pairing


def test_pairing_equals_py_ecc_to_the_arkworks_power():
    a, b = rand_scalar(), rand_scalar()
    P, Qp = ob.multiply(ob.G1, a), ob.multiply(ob.G2, b)
    ours = L.GT.pairing(from_ecc(P), from_ecc(Qp))
    ref = ob.pairing(Qp, P)
    assert gt_to_ecc(ours) == ref**EXP_FACTOR
    assert ours != L.GT.one()
    assert EXP_FACTOR % R != 0  # still a non-degenerate pairing


def test_pairing_bilinearity_and_identity():
    g1, g2 = L.G1Point(), L.G2Point()
    a, b = rand_scalar(), rand_scalar()
    e = L.GT.pairing(g1, g2)
    e_ab = L.GT.pairing(g1 * a, g2 * b)
    assert e_ab == L.GT.pairing(g1 * (a * b % R), g2) == L.GT.pairing(g1, g2 * (a * b % R))
    assert e_ab == e ** (a * b % R) == e ** L.Scalar(a * b)
    assert e != L.GT.one() and e**R == L.GT.one()  # non-degenerate, order r
    assert L.GT.pairing(g1 * a, g2) * L.GT.pairing(g1 * b, g2) == L.GT.pairing(g1 * (a + b), g2)
    assert L.GT.pairing(L.G1Point.identity(), g2) == L.GT.one() == L.GT.pairing(g1, L.G2Point.identity())
    assert L.GT.multi_pairing([g1 * a, g1], [g2, g2 * b]) == L.GT.pairing(g1 * a, g2) * L.GT.pairing(g1, g2 * b)
    assert GT_default_is_pairing_of_generators()


def GT_default_is_pairing_of_generators() -> bool:
    return L.GT() == L.GT.pairing(L.G1Point(), L.G2Point())


def test_pairing_check_outcomes_match_py_ecc():
    g1, g2 = L.G1Point(), L.G2Point()
    a, b, c = rand_scalar(), rand_scalar(), rand_scalar()
    # e(aP, bQ) e(-abP, Q) == 1 ; a Groth16-shaped 4-pair check
    assert L.GT.pairing_check([g1 * a, -(g1 * (a * b % R))], [g2 * b, g2])
    assert not L.GT.pairing_check([g1 * a, -(g1 * (a * b % R + 1))], [g2 * b, g2])
    four_g1 = [g1 * a, g1 * b, g1 * c, -(g1 * ((a + b + c) % R))]
    four_g2 = [g2, g2, g2, g2]
    assert L.GT.pairing_check(four_g1, four_g2)
    assert not L.GT.pairing_check(four_g1, [g2, g2, g2 * 2, g2])
    assert L.GT.pairing_check([], []) and L.GT.pairing_check([L.G1Point.identity()], [g2])
    # the same two equations through py_ecc (textbook pairings, multiplied)
    P1, P2 = ob.multiply(ob.G1, a), ob.neg(ob.multiply(ob.G1, a * b % R))
    Q1 = ob.multiply(ob.G2, b)
    assert ob.pairing(Q1, P1) * ob.pairing(ob.G2, P2) == ob.FQ12.one()
    P2bad = ob.neg(ob.multiply(ob.G1, (a * b + 1) % R))
    assert ob.pairing(Q1, P1) * ob.pairing(ob.G2, P2bad) != ob.FQ12.one()
    with pytest.raises(ValueError):
        L.GT.pairing_check([g1], [])
    with pytest.raises(TypeError):
        L.GT.pairing_check([g2], [g1])


def test_gt_api_and_internal_fq12_identities():
    e = L.GT.pairing(L.G1Point() * 3, L.G2Point() * 11)
    s = str(e)
    assert len(s) == 768 and bytes.fromhex(s)[:32] == e.coefficients()[0].to_bytes(32, "little")
    assert str(L.GT.one()) == "01" + "00" * 383 and L.GT.identity() == L.GT.one()
    assert e * e.inverse() == L.GT.one() and e * L.GT.one() == e and hash(e) == hash(e * L.GT.one())
    assert (e + e) - e == e and e + L.GT.zero() == e and (e - e) + e == e
    # cyclotomic squaring == squaring in the cyclotomic subgroup; Frobenius powers compose
    f, o1, o2 = e._f, np.empty((1, 48), np.uint64), np.empty((1, 48), np.uint64)
    pr.k_f12_cyclo_sqr(f, o1)
    pr.k_f12_sqr(f, o2)
    assert np.array_equal(o1, o2)
    a = L.GT._from_ints([rng.randrange(Q) for _ in range(12)])._f  # a general element
    f1, f2, f3, t = (np.empty((1, 48), np.uint64) for _ in range(4))
    pr.k_f12_frob(a, 1, f1)
    pr.k_f12_frob(f1, 1, f2)
    pr.k_f12_frob(a, 2, t)
    assert np.array_equal(f2, t)
    pr.k_f12_frob(f2, 1, f3)
    pr.k_f12_frob(a, 3, t)
    assert np.array_equal(f3, t)
    pr.k_f12_pow(a, np.array([int(b) for b in bin(Q)[2:]], dtype=np.uint8), t)
    assert np.array_equal(f1, t)  # frob1 = x -> x^q
    inv = np.empty((1, 48), np.uint64)
    pr.k_f12_inv(a, inv)
    pr.k_f12_mul(a, inv, t)
    assert L.GT._of(t) == L.GT.one()


def _snarkjs_vk(tmp_path: Path) -> dict:
    def run(*args):
        subprocess.run([str(a) for a in args], cwd=tmp_path, check=True, capture_output=True, timeout=120)

    (tmp_path / "x.circom").write_text(
        "pragma circom 2.0.0;\ntemplate T() { signal input a; signal input b; signal output c; c <== a * b; }\ncomponent main = T();\n"
    )
    run(SNARKJS, "powersoftau", "new", "bn128", "4", "p0.ptau")
    # a phase-1 contribution, so that alpha and beta are not the generators
    run(SNARKJS, "powersoftau", "contribute", "p0.ptau", "p1.ptau", "--name=cuzk", "-e=cuzk bn254 test entropy")
    run(SNARKJS, "powersoftau", "prepare", "phase2", "p1.ptau", "final.ptau")
    run(CIRCOM, "x.circom", "--r1cs", "-o", ".")
    run(SNARKJS, "groth16", "setup", "x.r1cs", "final.ptau", "x.zkey")
    run(SNARKJS, "zkey", "export", "verificationkey", "x.zkey", "vk.json")
    return json.loads((tmp_path / "vk.json").read_text())


@pytest.mark.skipif(not SNARKJS.exists() or shutil.which("node") is None, reason="snarkjs (node_modules/.bin) or node missing")
def test_gt_value_equals_snarkjs_vk_alphabeta(tmp_path):
    vk = _snarkjs_vk(tmp_path)
    ax, ay, az = (int(v) for v in vk["vk_alpha_1"])
    (bx0, bx1), (by0, by1), bz = ([int(v) for v in c] for c in vk["vk_beta_2"])
    assert az == 1 and bz == [1, 0]
    alpha = L.G1Point.from_xy_bytes_le(b"".join(v.to_bytes(32, "little") for v in (ax, ay)))
    beta = L.G2Point.from_xy_bytes_le(b"".join(v.to_bytes(32, "little") for v in (bx0, bx1, by0, by1)))
    assert alpha != L.G1Point() and beta != L.G2Point()
    want = [int(c) for half in vk["vk_alphabeta_12"] for f2 in half for c in f2]
    assert L.GT.pairing(alpha, beta).coefficients() == want


# ---------------------------------------------------------------------------------------------
# bulk: load_bases, conversions


@pytest.mark.parametrize("group", [1, 2])
def test_lem_round_trip_and_load_bases_errors(group):
    cls = L.G1Point if group == 1 else L.G2Point
    pts = [cls() * rand_scalar() for _ in range(6)] + [cls.identity()]
    raw = L.to_lem(group, pts)
    assert len(raw) == 7 * (64 if group == 1 else 128)
    assert L.from_lem(group, raw, 7) == pts
    arr = L.load_bases(group, raw, 7, "bases")
    assert arr.shape == (7, 8 * group) and arr.dtype == np.uint64
    assert L.points_from_array(group, arr) == pts and np.array_equal(L.array_from_points(group, pts), arr)
    # LEM is Montgomery: x * 2^256 mod q
    x = int.from_bytes(raw[:32], "little") * pow(2**256, -1, Q) % Q
    assert x == int.from_bytes(pts[0].to_xy_bytes_le()[:32], "little")
    size = 64 * group
    bad = bytearray(raw)
    bad[3 * size + size - 1] ^= 0x01  # point 3: y (high byte of its last limb) changed -> off the curve
    with pytest.raises(ValueError, match="my bases: point 3 is not on the curve"):
        L.load_bases(group, bytes(bad), 7, "my bases")
    big = bytearray(raw)
    big[5 * size : 5 * size + 32] = (2**256 - 1).to_bytes(32, "little")  # point 5: x >= q
    with pytest.raises(ValueError, match="key: point 5 has a coordinate not below"):
        L.from_lem(group, bytes(big), 7, "key")
    with pytest.raises(ValueError, match="bytes"):
        L.load_bases(group, raw[:-1], 7)
    assert L.load_bases(group, b"", 0).shape == (0, 8 * group)
    # an MSM straight on the loaded (read-only, bytes-backed) view
    assert not arr.flags.writeable
    sc = [rand_scalar() for _ in range(7)]
    want = cls.identity()
    for p, s in zip(pts, sc, strict=True):
        want = want + p * s
    assert L.msm(group, arr, limbs(sc)) == want


# ---------------------------------------------------------------------------------------------
# MSM


def _bases_and_logs(group: int, n: int):
    """n bases with known discrete logs t_i (g * t_i), some of them the identity or repeated."""
    cls = L.G1Point if group == 1 else L.G2Point
    logs = [rand_scalar() for _ in range(n)]
    for i in range(0, n, 11):
        logs[i] = 0  # identity bases
    for i in range(5, n, 13):
        logs[i] = logs[i - 1]  # repeated bases (bucket doublings)
    for i in range(7, n, 17):
        logs[i] = (R - logs[i - 1]) % R  # negated bases (buckets cancelling)
    arr = L.fixed_base_mul(group, cls(), limbs(logs))
    return arr, logs


def _special_scalars(n: int) -> list[int]:
    pool = [0, 1, 2, R - 1, R - 2, 2**128, 3, (R - 1) // 2]
    return [pool[i % len(pool)] if i % 3 else rand_scalar() for i in range(n)]


@pytest.mark.parametrize("group", [1, 2])
def test_msm_small_sizes_against_naive_sum(group):
    cls = L.G1Point if group == 1 else L.G2Point
    n = 70
    arr, logs = _bases_and_logs(group, n)
    pts = L.points_from_array(group, arr)
    sc = _special_scalars(n)
    scal = limbs(sc)
    want = cls.identity()
    for k in range(n + 1):
        for threads in (1, 2):
            got = L.msm(group, arr, scal[:k], threads=threads)
            assert got == want, (group, k, threads)
        if k < n:
            want = want + pts[k] * sc[k]
    # py_ecc anchors the final sum (the bases' discrete logs are known)
    total = sum(s * t for s, t in zip(sc, logs, strict=True)) % R
    assert xy(want) == ecc_xy(ob.multiply(ob.G1 if group == 1 else ob.G2, total))


@pytest.mark.parametrize("group", [1, 2])
def test_msm_1024_against_py_ecc(group):
    """Bases g * t_i with known t_i: sum s_i (g t_i) = (sum s_i t_i) g, checked with one py_ecc multiply."""
    n = 1024
    arr, logs = _bases_and_logs(group, n)
    sc = [rand_scalar() for _ in range(n)]
    for i in range(0, n, 5):
        sc[i] = _special_scalars(40)[i % 40]
    total = sum(s * t for s, t in zip(sc, logs, strict=True)) % R
    ref = ecc_xy(ob.multiply(ob.G1 if group == 1 else ob.G2, total))
    scal = limbs(sc)
    for threads in (1, 2):
        assert xy(L.msm(group, arr, scal, threads=threads)) == ref
    cls = L.G1Point if group == 1 else L.G2Point
    pts = L.points_from_array(group, arr)
    assert xy(cls.multiexp_unchecked(pts, [L.Scalar(s) for s in sc])) == ref
    # every window size the digit recoding can take, and the point-chunked split
    for c in (2, 3, 7, 13, 16) if group == 1 else (2, 5, 11):
        assert xy(cls._of(ms.msm_jacobian(group, arr, scal, threads=2, c=c))) == ref
    # full 256-bit scalars (>= r) are reduced by the group order, as for any point of order r
    wide = limbs([s + R * (1 + (i % 4)) if s + R * (1 + (i % 4)) < 2**256 else s for i, s in enumerate(sc)])
    assert xy(L.msm(group, arr, wide, threads=2)) == ref


def test_msm_small_scalars_chunked_and_errors():
    n = 5000
    arr, logs = _bases_and_logs(1, n)
    for sc in ([i % 2 for i in range(n)], [i % 7 for i in range(n)], [0] * n):
        total = sum(s * t for s, t in zip(sc, logs, strict=True)) % R
        want = L.G1Point() * total
        assert L.msm(1, arr, limbs(sc), threads=1) == want
        assert L.msm(1, arr, limbs(sc), threads=16) == want  # > 2 windows per thread: point chunks
    sc = [rand_scalar() for _ in range(n)]
    total = sum(s * t for s, t in zip(sc, logs, strict=True)) % R
    assert L.msm(1, arr, limbs(sc), threads=16) == L.G1Point() * total
    assert L.msm(1, arr, limbs(sc[:100])) == L.G1Point() * (sum(s * t for s, t in zip(sc[:100], logs, strict=False)) % R)
    with pytest.raises(ValueError):
        L.msm(1, arr[:10], limbs(sc[:11]))
    with pytest.raises(ValueError):
        L.msm(2, arr, limbs(sc))


def test_msm_from_concurrent_python_threads():
    """The daemon calls kernels from several threads at once."""
    results, errors = {}, []
    cases = {}
    for group in (1, 2):
        arr, logs = _bases_and_logs(group, 3000)
        sc = [rand_scalar() for _ in range(3000)]
        cls = L.G1Point if group == 1 else L.G2Point
        cases[group] = (arr, limbs(sc), cls() * (sum(s * t for s, t in zip(sc, logs, strict=True)) % R))

    def work(group):
        try:
            arr, scal, _ = cases[group]
            results[group] = L.msm(group, arr, scal, threads=2)
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    ts = [threading.Thread(target=work, args=(g,)) for g in (1, 2)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors
    for group in (1, 2):
        assert results[group] == cases[group][2]


# ---------------------------------------------------------------------------------------------
# fixed-base multiplication


@pytest.mark.parametrize("group", [1, 2])
def test_fixed_base_mul_matches_scalar_multiplication(group):
    cls = L.G1Point if group == 1 else L.G2Point
    base = cls() * rand_scalar()
    sc = [0, 1, 2, R - 1, 2**253, 2**128 + 1, *[rand_scalar() for _ in range(34)]]
    want = [base * s for s in sc]
    got = L.fixed_base_mul(group, base, limbs(sc))
    assert got.shape == (len(sc), 8 * group)
    assert L.points_from_array(group, got) == want
    assert not got[0].any()  # 0 * base: zeros
    for c in (2, 5, 16) if group == 1 else (2, 5, 11):
        assert L.points_from_array(group, ms.fixed_base(group, base._affine_mont(), limbs(sc), 2, c=c)) == want
    assert not L.fixed_base_mul(group, cls.identity(), limbs(sc)).any()
    assert L.fixed_base_mul(group, base, limbs([])).shape == (0, 8 * group)


def test_fixed_base_mul_many_chunks_two_threads():
    base = L.G1Point() * rand_scalar()
    sc = [rand_scalar() for _ in range(2500)]
    got = L.fixed_base_mul(1, base, limbs(sc), threads=2)
    pts = L.points_from_array(1, got)
    for i in range(0, 2500, 97):
        assert pts[i] == base * sc[i]
    assert np.array_equal(got, L.fixed_base_mul(1, base, limbs(sc), threads=1))


def test_curve_descriptor_loads_this_library():
    lib = get("bn128").lib
    assert lib is L and lib.G1Point is L.G1Point and lib.GT is L.GT
