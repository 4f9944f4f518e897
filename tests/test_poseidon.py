"""Poseidon as Filecoin uses it (neptune): parameters, native and batch hashing, the circuit gadget."""

from __future__ import annotations

import random

import numpy as np
import pytest

from cuzk import curves
from cuzk.circuit.cs import RecordingCS, TestCS, WitnessCS
from cuzk.circuit.gadgets.poseidon import constraint_count, schedule
from cuzk.circuit.gadgets.poseidon import poseidon_hash as poseidon_gadget
from cuzk.circuit.lc import FieldArray
from cuzk.circuit.poseidon import permute, permute_optimized, poseidon_hash, poseidon_hash_batch, poseidon_trace
from cuzk.circuit.poseidon_params import R, params

CURVE = curves.get("bls12_381")
F = CURVE.fr
NEPTUNE = "github.com/argumentcomputer/neptune @ 86377d0bd6c50f9b4e4a4677d0df335fd3812cdb"


def limbs_le(*parts: int) -> int:
    """neptune's ``scalar_from_u64s``: four little-endian 64-bit limbs of the canonical value."""
    return sum(p << (64 * i) for i, p in enumerate(parts))


# neptune src/poseidon.rs, test ``hash_values`` -> ``hash_values_aux`` with Strength::Standard and
# HashType::MerkleTree: preimage 0, 1, ..., arity - 1 (Fr::from(n)), expected ``digest`` (the Standard
# "Currently secure round constants" table) ([NEPTUNE]).
NEPTUNE_HASH_VALUES = {
    2: limbs_le(0x2E203C369A02E7FF, 0xA6FBA9339D05A69D, 0x739E0FD902EFE161, 0x396508D75E76A56B),
    4: limbs_le(0x019814FF6662075D, 0xFB6B4605BF1327EC, 0x00DB3C6579229399, 0x58A54B10A9E5848A),
    8: limbs_le(0x2A9934F56D38A5E6, 0x4B682E9D9CC4AED9, 0x1201004211677077, 0x2394611DA3A5DE55),
    11: limbs_le(0xCEE3BBC32B693163, 0x09F3DCD8CCB08FC1, 0x6CA537E232EBE87A, 0x0C0FC1B2E5227F28),
}

# neptune parameters/round_constants-1-1-255-9-8-57-73EDA753299D7D483339D80809A1D80553BDA402FFFE5BFEFFFFFFFF00000001.txt
# (the Poseidon reference script create_rcs_grain.sage run with "1 1 255 9 8 57 <r>"; neptune's
# test_round_constants in src/round_constants.rs compares its t = 9 constants to it) ([NEPTUNE]):
# its first four and its last (the 585th) constant.
NEPTUNE_RC_T9_FIRST = [
    0x6CE90D12C4045FE08C3CADDB776DD84AC52B4AE7E48CD49443984154F2F4C2F9,
    0x0CCD9B480C84022B25A75B52C8E89D80B4FA6378D32E58F3A175504940BCEC39,
    0x513AD11016AB7BB8C7CE9AE51256040E062487EDF7168D206BA1B86DFE963629,
    0x11F7CB649A0E7509A23D14173A5DE7151173D08EACBA753B99826B8B3779200A,
]
NEPTUNE_RC_T9_LAST = 0x3B3A75EB91B0F723BCC4AB7E449E4A011B8960063EFE74670C05E545519D9A8C


def rand_inputs(rng: random.Random, n: int, arity: int) -> list[list[int]]:
    return [[rng.randrange(R) for _ in range(arity)] for _ in range(n)]


def test_parameters_table():
    # neptune src/round_numbers.rs test_round_numbers_against_known_values (R_F = 8 for all)
    for arity, r_p in ((2, 55), (4, 56), (8, 57), (11, 57)):
        P = params(arity)
        assert (P.t, P.r_f, P.r_p) == (arity + 1, 8, r_p)
        assert len(P.round_constants) == (8 + r_p) * P.t
        assert P.domain_tag == 2**arity - 1
        assert all(0 <= c < R for c in P.round_constants)
        # Cauchy matrix 1 / (i + t + j), symmetric
        assert all(P.mds[i][j] * (i + P.t + j) % R == 1 for i in range(P.t) for j in range(P.t))
        assert P.mds == [list(r) for r in zip(*P.mds, strict=True)]
    assert params(8) is params(8)  # memoized


def test_round_constants_match_neptune_file():
    rc = params(8).round_constants
    assert len(rc) == 585
    assert rc[:4] == NEPTUNE_RC_T9_FIRST
    assert rc[-1] == NEPTUNE_RC_T9_LAST


@pytest.mark.parametrize("arity", sorted(NEPTUNE_HASH_VALUES))
def test_neptune_hash_values(arity):
    expected = NEPTUNE_HASH_VALUES[arity]
    assert poseidon_hash(list(range(arity))) == expected
    batch = poseidon_hash_batch(F.from_ints(range(arity)).reshape(1, arity, 4))
    assert F.to_ints(batch) == [expected]


def test_batch_equals_single():
    rng = random.Random(17)
    for arity in (2, 4, 8, 11):
        vals = rand_inputs(rng, 7, arity) + [[0] * arity, [R - 1] * arity]
        fa = FieldArray.of(F, vals)
        out = F.to_ints(poseidon_hash_batch(fa))
        assert out == [poseidon_hash(v) for v in vals]
        assert F.to_ints(poseidon_hash_batch(fa.mont, arity)) == out
        # the trace's last S-box outputs feed the output; its length is every non-constant S-box
        h, trace = poseidon_trace(fa)
        assert trace.shape == (len(vals), params(arity).n_sboxes - 1, 3, 4)
        x2, x4, x5 = (trace[:, :, k].reshape(-1, 4) for k in range(3))
        assert np.array_equal(F.mul(x2, x2), x4)
        assert np.array_equal(h, poseidon_hash_batch(fa))
    with pytest.raises(ValueError):
        poseidon_hash([1, 2, 3], arity=2)
    with pytest.raises(ValueError):
        poseidon_hash_batch(np.zeros((2, 3, 4), dtype=np.uint64), arity=2)


def test_permutation_is_not_trivial():
    P = params(2)
    s = permute([P.domain_tag, 1, 2], P)
    assert len(s) == 3 and s[1] == poseidon_hash([1, 2]) and len(set(s)) == 3


def test_optimized_form_equals_plain():
    """The batch kernel's form (compressed constants, sparse partial-round matrices) is the plain
    permutation, on the whole state."""
    rng = random.Random(3)
    for arity in (2, 4, 8, 11):
        P = params(arity)
        opt = P.optimized()
        assert all(rc[1:] == [0] * arity for rc in opt.round_constants[P.half_full : P.half_full + P.r_p])
        for _ in range(2):
            state = [rng.randrange(R) for _ in range(P.t)]
            assert permute_optimized(state, P) == permute(state, P)


@pytest.mark.parametrize("arity", [2, 8, 11])
def test_gadget_testcs(arity):
    rng = random.Random(arity)
    vals = rand_inputs(rng, 3, arity)
    cs = TestCS(CURVE)
    x = cs.alloc("x", vals)
    n0 = cs.n_constraints
    h = poseidon_gadget(cs, "poseidon", x, arity)
    assert cs.is_satisfied(), cs.which_is_unsatisfied()
    assert h.shape == (3,)
    assert list(cs.value(h).ints()) == [poseidon_hash(v) for v in vals]
    assert cs.n_constraints - n0 == 3 * constraint_count(arity)
    assert constraint_count(arity) == 3 * (params(arity).n_sboxes - 1) + 1


def test_gadget_lc_inputs_and_counts():
    assert {a: constraint_count(a) for a in (2, 4, 8, 11)} == {2: 235, 4: 286, 8: 385, 11: 457}
    rng = random.Random(5)
    vals = rand_inputs(rng, 2, 2)
    cs = TestCS(CURVE)
    x = cs.alloc("x", vals)
    # a list of LCs: (x0 + 7, 2 * x1 - x0)
    h = poseidon_gadget(cs, "p", [x[..., 0] + 7, x[..., 1] * 2 - x[..., 0]])
    assert cs.is_satisfied(), cs.which_is_unsatisfied()
    assert list(cs.value(h).ints()) == [poseidon_hash([(a + 7) % R, (2 * b - a) % R]) for a, b in vals]
    # a scalar instance (batch shape ())
    cs = TestCS(CURVE)
    a, b = cs.alloc("a", 3), cs.alloc("b", 4)
    h = poseidon_gadget(cs, "p", [a, b])
    assert h.shape == () and cs.is_satisfied()
    assert cs.value(h).ints()[()] == poseidon_hash([3, 4])


class _TamperSbox(TestCS):
    """Adds 1 to one S-box value (instance 1, S-box 40, x4) as it is assigned."""

    def _assign(self, is_input, codes, value, name):
        if name == "sbox":
            mont = value.mont.copy()
            mont[1, 40, 1] = F.add(mont[1, 40, 1].reshape(1, 4), F.one_mont().reshape(1, 4))[0]
            value = FieldArray(F, mont)
        super()._assign(is_input, codes, value, name)


class _WrongInputs(TestCS):
    """Reads the inputs' values as something else than what was assigned (the gadget's trace then does
    not start from the real inputs)."""

    def value(self, v):
        fa = super().value(v)
        lie = getattr(self, "lie", None)
        if lie is not None and getattr(v, "codes", None) is not None and np.array_equal(v.codes, lie):
            return fa + 1
        return fa


def test_gadget_tampered_witness():
    vals = rand_inputs(random.Random(1), 3, 2)
    cs = _TamperSbox(CURVE)
    x = cs.alloc("x", vals)
    with cs.namespace("outer"):
        poseidon_gadget(cs, "poseidon", x, 2)
    assert not cs.is_satisfied()
    where = cs.which_is_unsatisfied()
    assert "outer/poseidon/" in where and "instance 1" in where
    sb_round, sb_elem, _ = schedule(2).sboxes[40]
    assert f"round {sb_round} sbox {sb_elem} x4" in where

    cs = _WrongInputs(CURVE)
    x = cs.alloc("x", vals)
    cs.lie = x.codes
    poseidon_gadget(cs, "poseidon", x, 2)
    assert not cs.is_satisfied()
    assert cs.which_is_unsatisfied().startswith("constraint") and "poseidon/round 0 sbox 1 x2" in cs.which_is_unsatisfied()


def _circuit(cs, vals, arity, shape):
    x = cs.alloc_input("x", vals, (*shape, arity))
    h = poseidon_gadget(cs, "poseidon", x, arity)
    cs.enforce("use", h, cs.one, h)
    return h


@pytest.mark.parametrize("arity", [2, 11])
def test_recording_matches_witness(arity):
    shape = (2, 2)
    vals = np.array(rand_inputs(random.Random(9), 4, arity), dtype=object).reshape(*shape, arity).tolist()
    rec = RecordingCS(CURVE)
    _circuit(rec, None, arity, shape)
    pce = rec.finish()
    layout = rec.layout()
    wcs = WitnessCS(CURVE, layout)
    h = _circuit(wcs, vals, arity, shape)
    assert (wcs.n_inputs, wcs.n_aux) == (layout.n_inputs, layout.n_aux)  # the witness system may skip constraints
    w = wcs.witness()
    assert pce.unsatisfied(w).size == 0
    assert pce.n_constraints == layout.n_constraints == 4 * constraint_count(arity) + 4
    flat = [v for row in vals for v in row]
    assert list(wcs.value(h).ints().reshape(-1)) == [poseidon_hash(v) for v in flat]
    # a wrong public input breaks it
    bad = w.copy()
    bad[1] = F.add(bad[1:2], F.one_mont().reshape(1, 4))[0]
    assert pce.unsatisfied(bad).size > 0
    if arity == 2:  # the test system agrees (arity 11: its big LCs cost seconds under a test system)
        tcs = TestCS(CURVE)
        _circuit(tcs, vals, arity, shape)
        assert tcs.is_satisfied() and np.array_equal(tcs.witness(), w)
