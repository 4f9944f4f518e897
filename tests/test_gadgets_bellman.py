"""The Filecoin-faithful gadgets: bellman's SHA-256 (cuzk.circuit.gadgets.bellman_sha256), neptune's Poseidon
circuit (neptune_poseidon) and rust-fil-proofs' insertion / hash2 (storage_proofs): their constraint counts
against the published ones, their values against hashlib and our native Poseidon, satisfied in TestCS,
and the recording satisfied by the witness-only system's witness (the three systems allocate alike)."""

from __future__ import annotations

import hashlib
import random

import numba
import numpy as np
import pytest

from cuzk import curves
from cuzk.circuit.cs import ConstraintSystem, RecordingCS, TestCS, WitnessCS
from cuzk.circuit.gadgets import bellman_sha256 as B
from cuzk.circuit.gadgets import neptune_poseidon as NP
from cuzk.circuit.gadgets import storage_proofs as SP
from cuzk.circuit.gadgets.boolean import alloc_bits
from cuzk.circuit.gadgets.sha256 import Bits
from cuzk.circuit.gadgets.uint32 import UInt32
from cuzk.circuit.poseidon import poseidon_hash as poseidon_native
from cuzk.circuit.sha256_native import IV

CURVE = curves.get("bls12-381")
R = CURVE.fr.p


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    # TestCS runs many tiny field kernels: numba's parallel regions only cost time here (see NOTES)
    n = numba.get_num_threads()
    numba.set_num_threads(1)
    yield
    numba.set_num_threads(n)


def _message(cs, data: np.ndarray | None, shape: tuple[int, ...]) -> Bits:
    """Allocated message bits (*B, 8 n), each byte most significant bit first."""
    vals = None if data is None else np.unpackbits(data, axis=-1)
    bits = alloc_bits(cs, "message", vals, shape)
    return Bits.of(cs, bits, vals)


def test_sha256_counts_match_bellman():
    """bellperson src/gadgets/sha256.rs: ``test_full_block`` (one compression of 512 allocated bits with
    the constant IV: ``num_constraints() - 512 == 25840``) and ``test_full_hash`` (sha256 of 512 allocated
    bits, two blocks: 44874); ``test_blank_hash`` (a constant block: no constraint)."""
    cs = ConstraintSystem(CURVE)
    msg = _message(cs, None, (512,))
    B.sha256_compression(cs, "block", [UInt32.constant(v) for v in IV], msg)
    assert cs.n_constraints - 512 == 25_840
    cs = ConstraintSystem(CURVE)
    B.sha256(cs, "hash", _message(cs, None, (512,)))
    assert cs.n_constraints - 512 == 44_874
    cs = ConstraintSystem(CURVE)
    blank = np.zeros(512, dtype=np.int8)
    blank[0] = 1
    out = B.sha256_compression(cs, "blank", [UInt32.constant(v) for v in IV], Bits.constant(blank))
    assert cs.n_constraints == 0 and all(w.is_constant for w in out)
    digest = b"".join(int(w.max_value()).to_bytes(4, "big") for w in out)
    assert digest == hashlib.sha256(b"").digest()


@pytest.mark.parametrize("n_bytes", [0, 1, 55, 56, 64, 100])
def test_sha256_values(n_bytes):
    rng = np.random.default_rng(n_bytes)
    data = rng.integers(0, 256, (3, n_bytes), dtype=np.uint8)
    cs = TestCS(CURVE)
    d = B.sha256(cs, "hash", _message(cs, data, (3, 8 * n_bytes)))
    assert cs.is_satisfied(), cs.which_is_unsatisfied()
    got = np.packbits(d.values, axis=-1)
    for i in range(3):
        assert bytes(got[i]) == hashlib.sha256(bytes(data[i])).digest()


def test_sha256_tampered_bit_is_caught():
    """A wrong carry bit in one addition (its value changed in the witness) breaks the MultiEq sum."""
    data = np.random.default_rng(3).integers(0, 256, (2, 40), dtype=np.uint8)

    def flip(fa):
        v = fa.small().astype(np.uint8)
        v[1, 33] ^= 1  # instance 1, a carry bit
        return v

    cs = TestCS(CURVE, tamper={"hash/block 0/round 5/a": flip})
    B.sha256(cs, "hash", _message(cs, data, (2, 320)))
    assert cs.tampered == {"hash/block 0/round 5/a"}
    assert not cs.is_satisfied()
    first = cs.which_is_unsatisfied()
    assert first is not None and "hash/block 0/" in first and "multieq" in first and "instance 1" in first


def _recording_matches_witness(build) -> None:
    """The gadget recorded, then run in the witness-only system on the recording's layout: the witness
    satisfies the recorded constraints (so both systems allocated the same variables in the same order)."""
    rec = RecordingCS(CURVE)
    build(rec, False)
    pce = rec.finish()
    w = WitnessCS(CURVE, rec.layout())
    build(w, True)
    assert (w.n_inputs, w.n_aux) == (rec.n_inputs, rec.n_aux)
    assert len(pce.unsatisfied(w.witness())) == 0


def test_sha256_recording_and_witness():
    data = np.random.default_rng(5).integers(0, 256, (4, 70), dtype=np.uint8)

    def build(cs, values):
        B.sha256(cs, "hash", _message(cs, data if values else None, (4, 560)))

    _recording_matches_witness(build)


# neptune src/circuit.rs: 3 per input S-box of round 0, 4 per other S-box, 1 for the output
NEPTUNE = {2: 311, 4: 377, 8: 505, 11: 598}


@pytest.mark.parametrize("arity", [2, 4, 8, 11])
def test_neptune_poseidon(arity):
    assert NP.constraint_count(arity) == NEPTUNE[arity]
    rng = random.Random(arity)
    vals = [[rng.randrange(R) for _ in range(arity)] for _ in range(4)]
    vals[0][0] = 0
    cs = TestCS(CURVE)
    x = cs.alloc("in", vals, (4, arity))
    out = NP.poseidon_hash(cs, "h", x, arity)
    assert cs.is_satisfied(), cs.which_is_unsatisfied()
    assert cs.value(out).ints().tolist() == [poseidon_native(v, arity) for v in vals]
    assert cs.n_constraints == 4 * NEPTUNE[arity] and cs.n_aux == 4 * arity + 4 * NEPTUNE[arity]

    def build(c, values):
        xx = c.alloc("in", vals if values else None, (4, arity))
        NP.poseidon_hash(c, "h", xx, arity)

    _recording_matches_witness(build)


def test_neptune_poseidon_tampered():
    vals = [[1, 2, 3, 4, 5, 6, 7, 8]]
    cs = TestCS(CURVE, tamper={"h/sbox": lambda fa: fa + 1})
    NP.poseidon_hash(cs, "h", cs.alloc("in", vals, (1, 8)), 8)
    assert not cs.is_satisfied()


@pytest.mark.parametrize(("arity", "cost"), [(2, 2), (4, 8), (8, 22), (16, 16 * 15)])
def test_insert(arity, cost):
    """rust-fil-proofs insertion.rs: the element lands at every position; insert_2 / 4 / 8 cost 2 / 8 / 22
    constraints (the generic select: size * (size - 1) picks)."""
    k = arity.bit_length() - 1
    cs = TestCS(CURVE)
    others = cs.alloc("others", [[100 + j for j in range(arity - 1)]] * arity, (arity, arity - 1))
    element = cs.alloc("element", [7] * arity, (arity,))
    pos_bits = np.array([[(p >> i) & 1 for i in range(k)] for p in range(arity)], dtype=np.uint8)
    bits = alloc_bits(cs, "bits", pos_bits, (arity, k))
    before = cs.n_constraints
    out = SP.insert(cs, "insert", element, [bits[:, i] for i in range(k)], [others[:, j] for j in range(arity - 1)])
    assert cs.is_satisfied(), cs.which_is_unsatisfied()
    assert cs.n_constraints - before == cost * arity  # arity instances
    got = np.array([cs.value(o).ints() for o in out]).T
    for p in range(arity):
        want = [100 + j for j in range(p)] + [7] + [100 + j for j in range(p, arity - 1)]
        assert got[p].tolist() == want


def test_sha256_hash2_matches_filecoin():
    """Filecoin's SHA-256 node hash (digest[31] &= 0x3f, little-endian): 2 x 256 decompositions, 44,866
    for the two-block SHA-256 (44,874 less 8: the two constant message bits padding each 255-bit number
    fold away) and 1 packing constraint: 45,379 per hash."""
    rng = random.Random(9)
    pairs = [(rng.randrange(1 << 254), rng.randrange(1 << 254)) for _ in range(3)]
    cs = TestCS(CURVE)
    a = cs.alloc("a", [p[0] for p in pairs], (3,))
    b = cs.alloc("b", [p[1] for p in pairs], (3,))
    out = SP.sha256_hash2(cs, "h", a, b)
    assert cs.is_satisfied(), cs.which_is_unsatisfied()
    for (x, y), got in zip(pairs, cs.value(out).ints().tolist(), strict=True):
        d = bytearray(hashlib.sha256(x.to_bytes(32, "little") + y.to_bytes(32, "little")).digest())
        d[31] &= 0x3F
        assert got == int.from_bytes(d, "little")
    assert cs.n_constraints == 3 * (2 * 256 + 44_866 + 1) == 3 * 45_379
