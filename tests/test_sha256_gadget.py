"""32-bit word gadgets, SHA-256 and Filecoin's SHA-256-254 gadgets: values against numpy / hashlib, the
constraints checked (TestCS, and the recording evaluated on the witness-only system's witness),
constraint counts, tampered witnesses named by path, and a published Filecoin vector."""

from __future__ import annotations

import hashlib

import numba
import numpy as np
import pytest

from cuzk import curves
from cuzk.circuit import RecordingCS, TestCS, WitnessCS
from cuzk.circuit import sha256_native as native
from cuzk.circuit.gadgets import boolean, num
from cuzk.circuit.gadgets.sha256 import hash2_sha256_254, sha256, sha256_254, sha256_compression
from cuzk.circuit.gadgets.uint32 import UInt32, add_many, and_, ch, maj, xor, xor3

BLS = curves.get("bls12_381")
MASK = 0xFFFFFFFF

# Filecoin's zero-piece commitments (the root of a binary SHA-256-254 tree over all-zero 32-byte leaves),
# from rust-fil-proofs filecoin-proofs/tests/pieces.rs, test_compute_comm_d_empty: the CommD of an empty
# 128-byte sector (4 leaves) and of an empty 2 KiB sector (64 leaves); the same values head the
# zero-piece tables of go-commp-utils zerocomm / cpp-filecoin zerocomm.
ZERO_COMM_128 = bytes.fromhex("3731bb99ac689f66eef5973e4a94da188f4ddcae580724fc6f3fd60dfd488333")
ZERO_COMM_2K = bytes(
    [252, 126, 146, 130, 150, 229, 22, 250, 173, 233, 134, 178, 143, 146, 212, 74]
    + [79, 36, 185, 53, 72, 82, 35, 55, 106, 121, 144, 39, 188, 24, 248, 51]
)


@pytest.fixture(autouse=True)
def one_numba_thread():
    """The TestCS checks run many tiny field kernels; on a loaded machine each parallel region's start
    costs milliseconds, so these tests run them on one thread."""
    n = numba.get_num_threads()
    numba.set_num_threads(1)
    yield
    numba.set_num_threads(n)


def word_values(cs, w: UInt32) -> np.ndarray:
    """A word's value as the constraint system holds it (its bit LCs evaluated)."""
    return np.asarray(cs.value(w.lc()).small(), dtype=np.uint64).astype(np.uint32)


def rotr(x, n):
    return ((x >> np.uint32(n)) | (x << np.uint32(32 - n))).astype(np.uint32)


def msg_bits(m: np.ndarray) -> np.ndarray:
    return np.unpackbits(m, axis=-1, bitorder="big")


# ---------------------------------------------------------------------------------------------
# words


def test_uint32_ops():
    rng = np.random.default_rng(1)
    B = 16
    a, b, c = (rng.integers(0, 1 << 32, B, dtype=np.uint64).astype(np.uint32) for _ in range(3))
    k = 0x5A5AF00F
    cs = TestCS(BLS)
    A, Bw, C = (UInt32.alloc(cs, n, v) for n, v in (("a", a), ("b", b), ("c", c)))
    assert cs.n_constraints == 3 * 32 * B
    K = UInt32.constant(k)
    mixed = A.shr(5).not_()  # 5 constant bits (1 after the not), 27 negated variables
    m, nc = ~(a >> np.uint32(5)), ~c
    cases = {
        "xor": (xor(cs, "xor", A, Bw), a ^ b, 32),
        "xor k": (xor(cs, "xor k", A, K), a ^ np.uint32(k), 0),
        "xor3": (xor3(cs, "xor3", A, Bw, C), a ^ b ^ c, 32),
        "xor3 k": (xor3(cs, "xor3 k", A, K, C), a ^ np.uint32(k) ^ c, 32),
        "xor3 mixed": (
            xor3(cs, "xor3 mixed", mixed, Bw.rotr(3), C.shr(7)),
            ~(a >> np.uint32(5)) ^ rotr(b, 3) ^ (c >> np.uint32(7)),
            32,
        ),
        "and": (and_(cs, "and", A, Bw), a & b, 32),
        "and k": (and_(cs, "and k", A, K), a & np.uint32(k), 0),
        "and mixed": (and_(cs, "and mixed", mixed, C), ~(a >> np.uint32(5)) & c, 27),
        "not": (A.not_(), ~a, 0),
        "rotr": (A.rotr(13), rotr(a, 13), 0),
        "shr": (A.shr(10), a >> np.uint32(10), 0),
        "ch": (ch(cs, "ch", A, Bw, C), (a & b) ^ (~a & c), 32),
        "ch k": (ch(cs, "ch k", A, K, C), (a & np.uint32(k)) ^ (~a & c), 32),
        "ch kk": (ch(cs, "ch kk", A, K, K.not_()), (a & np.uint32(k)) ^ (~a & np.uint32(~k & MASK)), 0),
        "maj": (maj(cs, "maj", A, Bw, C), (a & b) ^ (a & c) ^ (b & c), 32),
        "maj k": (maj(cs, "maj k", A, K, C), (a & np.uint32(k)) ^ (a & c) ^ (np.uint32(k) & c), 32),
        "maj mixed": (maj(cs, "maj mixed", mixed, Bw, C.not_()), (m & b) ^ (m & nc) ^ (b & nc), 32),
    }
    before = 3 * 32 * B
    counts = {}
    for name, (w, want, _) in cases.items():
        np.testing.assert_array_equal(w.value, want.astype(np.uint32), err_msg=name)
        np.testing.assert_array_equal(word_values(cs, w) if not w.is_constant else w.value, want.astype(np.uint32), err_msg=name)
    # constraint counts per instance, op by op
    cs2 = RecordingCS(BLS)
    A2, B2, C2 = (UInt32.alloc(cs2, n, None, ()) for n in "abc")
    for name, fn, want in [
        ("xor", lambda: xor(cs2, "x", A2, B2), 32),
        ("xor k", lambda: xor(cs2, "x", A2, K), 0),
        ("xor3", lambda: xor3(cs2, "x", A2, B2, C2), 32),
        ("xor3 shr", lambda: xor3(cs2, "x", A2.rotr(7), A2.rotr(18), A2.shr(3)), 32),
        ("and", lambda: and_(cs2, "x", A2, B2), 32),
        ("ch", lambda: ch(cs2, "x", A2, B2, C2), 32),
        ("maj", lambda: maj(cs2, "x", A2, B2, C2), 32),
        ("maj kk", lambda: maj(cs2, "x", A2, K, K), 0),
    ]:
        n0 = cs2.n_constraints
        fn()
        counts[name] = cs2.n_constraints - n0
        assert counts[name] == want, (name, counts[name])
    assert cs.is_satisfied(), cs.which_is_unsatisfied()
    assert cs.n_constraints > before


@pytest.mark.parametrize("k", [2, 3, 4, 5])
def test_add_many(k):
    rng = np.random.default_rng(k)
    B = 12
    vals = rng.integers(0, 1 << 32, (k, B), dtype=np.uint64)
    vals[:, 0] = MASK  # the largest carry
    vals[:, 1] = 0
    cs = TestCS(BLS)
    words = [UInt32.alloc(cs, f"w{i}", vals[i]) for i in range(k)]
    n0 = cs.n_constraints
    s = add_many(cs, "sum", words)
    carry_bits = (k - 1).bit_length()
    assert cs.n_constraints - n0 == (32 + carry_bits + 1) * B
    want = (vals.sum(axis=0) & MASK).astype(np.uint32)
    np.testing.assert_array_equal(s.value, want)
    np.testing.assert_array_equal(word_values(cs, s), want)
    # with a constant operand and a not-ed one
    s2 = add_many(cs, "sum k", [*words, 0xFFFFFFFF, words[0].not_()])
    want2 = ((vals.sum(axis=0) + MASK + (MASK - vals[0])) & MASK).astype(np.uint32)
    np.testing.assert_array_equal(word_values(cs, s2), want2)
    assert cs.is_satisfied(), cs.which_is_unsatisfied()
    # a wrong result bit is caught
    bad = TestCS(
        BLS,
        tamper={
            "sum": lambda fa: fa.small().astype(np.uint8) ^ np.eye(1, fa.mont.size // 4, 3, dtype=np.uint8).reshape(fa.shape)
        },
    )
    ws = [UInt32.alloc(bad, f"w{i}", vals[i]) for i in range(k)]
    add_many(bad, "sum", ws)
    assert not bad.is_satisfied() and "sum" in bad.which_is_unsatisfied()


# ---------------------------------------------------------------------------------------------
# SHA-256


def synth_sha(cs, m: np.ndarray):
    B, L = m.shape
    bits = msg_bits(m) if cs.has_values else None
    v = boolean.alloc_bits(cs, "msg", bits, (B, 8 * L))
    return sha256(cs, "sha", v, bits)


@pytest.mark.parametrize("length", [0, 1, 55, 56, 63, 64, 65, 119, 120, 200])
def test_sha256_lengths(length):
    rng = np.random.default_rng(length)
    B = 3
    m = rng.integers(0, 256, (B, length), dtype=np.uint8)
    w = WitnessCS(BLS)
    d = synth_sha(w, m)
    got = np.packbits(np.broadcast_to(d.values, (B, 256)), axis=-1, bitorder="big")
    for i in range(B):
        assert got[i].tobytes() == hashlib.sha256(m[i].tobytes()).digest()
    np.testing.assert_array_equal(native.sha256_batch(m), got)
    if length == 0:  # a constant message: a constant digest, no constraints
        assert w.n_constraints == 0
        return
    np.testing.assert_array_equal(w.value(d.var).small(), got_bits := msg_bits(got))
    assert got_bits.shape == (B, 256)
    rec = RecordingCS(BLS)
    synth_sha(rec, m)
    assert (rec.n_inputs, rec.n_aux) == (w.n_inputs, w.n_aux)  # the witness system may skip constraints
    pce = rec.finish()
    assert pce.unsatisfied(w.witness()).size == 0


def test_sha256_testcs_and_tamper():
    rng = np.random.default_rng(7)
    B, L = 2, 40
    m = rng.integers(0, 256, (B, L), dtype=np.uint8)
    bits = msg_bits(m)
    cs = TestCS(BLS)
    v = boolean.alloc_bits(cs, "msg", bits, (B, 8 * L))
    d = sha256(cs, "sha", v, bits)
    assert cs.is_satisfied(), cs.which_is_unsatisfied()
    want = [hashlib.sha256(m[i].tobytes()).digest() for i in range(B)]
    assert np.packbits(cs.value(d.var).small().astype(np.uint8), axis=-1, bitorder="big")[1].tobytes() == want[1]

    # one message bit flipped in the system, the gadget given the true values: unsatisfied
    def flip(idx):
        def f(fa):
            x = fa.small().astype(np.uint8)
            x.reshape(-1)[idx] ^= 1
            return x

        return f

    bad = TestCS(BLS, tamper={"msg": flip(8 * L + 5)})  # instance 1, bit 5
    v = boolean.alloc_bits(bad, "msg", bits, (B, 8 * L))
    sha256(bad, "sha", v, bits)
    assert not bad.is_satisfied()
    assert bad.which_is_unsatisfied().startswith("constraint") and "sha/block 0/" in bad.which_is_unsatisfied()
    assert "[instance 1]" in bad.which_is_unsatisfied()

    # one digest bit flipped (the last state addition's result bits)
    bad = TestCS(BLS, tamper={"sha/block 0/h3": flip(7)})
    v = boolean.alloc_bits(bad, "msg", bits, (B, 8 * L))
    sha256(bad, "sha", v, bits)
    assert "sha/block 0/h3" in bad.which_is_unsatisfied()

    # a wrong expected digest
    bad = TestCS(BLS)
    v = boolean.alloc_bits(bad, "msg", bits, (B, 8 * L))
    d = sha256(bad, "sha", v, bits)
    expected = msg_bits(np.frombuffer(b"".join(want), dtype=np.uint8).reshape(B, 32)).copy()
    expected[0, 17] ^= 1
    e = bad.alloc("expected", expected, (B, 256))
    num.assert_equal(bad, "digest", d.var, e)
    assert "digest" in bad.which_is_unsatisfied()


def test_batch_equals_single_runs():
    rng = np.random.default_rng(3)
    B, L = 4, 70
    m = rng.integers(0, 256, (B, L), dtype=np.uint8)
    w = WitnessCS(BLS)
    batch = w.value(synth_sha(w, m).var).small()
    for i in range(B):
        w1 = WitnessCS(BLS)
        one = w1.value(synth_sha(w1, m[i : i + 1]).var).small()
        np.testing.assert_array_equal(one[0], batch[i])


def test_compression_counts():
    """Constraints of one compression with a variable state and block (the figure to compare with
    bellman's ~27k), and of the first block of a message (the IV constant)."""
    rec = RecordingCS(BLS)
    state = [UInt32.alloc(rec, f"s{i}", None, ()) for i in range(8)]
    block = boolean.alloc_bits(rec, "block", None, (512,))
    n0 = rec.n_constraints
    sha256_compression(rec, "c", state, block)
    assert rec.n_constraints - n0 == 48 * 99 + 64 * 200 + 8 * 34 == 17824


# ---------------------------------------------------------------------------------------------
# Filecoin's SHA-256-254


def test_sha256_254():
    rng = np.random.default_rng(11)
    B, L = 3, 64
    m = rng.integers(0, 256, (B, L), dtype=np.uint8)
    cs = WitnessCS(BLS)
    bits = msg_bits(m)
    v = boolean.alloc_bits(cs, "msg", bits, (B, 8 * L))
    d = sha256_254(cs, "sha", v, bits)
    got = np.packbits(d.values, axis=-1, bitorder="big")
    for i in range(B):
        assert got[i].tobytes() == native.sha256_254(m[i].tobytes())
    assert (d.kinds[248:250] == 0).all()


def hash2_circuit(cs, lv, rv, B):
    left = cs.alloc("left", lv, B)
    right = cs.alloc("right", rv, B)
    return hash2_sha256_254(cs, "h2", left, right)


def test_hash2_sha256_254():
    rng = np.random.default_rng(5)
    B = 4
    ls = [int.from_bytes(rng.bytes(32), "little") & ((1 << 254) - 1) for _ in range(B)]
    rs = [int.from_bytes(rng.bytes(32), "little") & ((1 << 254) - 1) for _ in range(B)]
    ls[0], rs[0] = 0, 0
    want = [native.sha256_254_hash2(x, y) for x, y in zip(ls, rs, strict=True)]
    cs = TestCS(BLS)
    out = hash2_circuit(cs, ls, rs, B)
    assert cs.is_satisfied(), cs.which_is_unsatisfied()
    assert list(cs.value(out).ints()) == want
    # batch native over byte arrays
    lb = np.array([list(x.to_bytes(32, "little")) for x in ls], dtype=np.uint8)
    rb = np.array([list(x.to_bytes(32, "little")) for x in rs], dtype=np.uint8)
    assert native.bytes_to_ints(native.hash2_batch(lb, rb)) == want

    # the recording and the witness-only system agree
    w = WitnessCS(BLS)
    out_w = hash2_circuit(w, ls, rs, B)
    assert list(w.value(out_w).ints()) == want
    rec = RecordingCS(BLS)
    hash2_circuit(rec, None, None, B)
    assert (rec.n_inputs, rec.n_aux) == (w.n_inputs, w.n_aux)  # the witness system may skip constraints
    # two 254-bit decompositions (255 each), the SHA-256 of 64 bytes (its second block is the constant
    # padding; 4 constant message bits fold 3 constraints more: 30,698 vs 30,701 for 512 variable
    # bits), one packing constraint
    assert rec.n_constraints == B * (2 * 255 + 30698 + 1) == B * 31209
    assert per_sha256_512_bits() == 30701
    pce = rec.finish()
    assert pce.unsatisfied(w.witness()).size == 0

    # a tampered digest bit
    def flip(fa):
        x = fa.small().astype(np.uint8)
        x.reshape(-1)[2] ^= 1
        return x

    bad = TestCS(BLS, tamper={"h2/sha256/block 1/h5": flip})
    hash2_circuit(bad, ls, rs, B)
    assert "h2/sha256/block 1/h5" in bad.which_is_unsatisfied()


def per_sha256_512_bits() -> int:
    rec = RecordingCS(BLS)
    v = boolean.alloc_bits(rec, "m", None, (512,))
    n0 = rec.n_constraints
    sha256(rec, "s", v)
    return rec.n_constraints - n0


def test_zero_piece_commitment():
    """The CommD of empty 128-byte and 2 KiB sectors: binary SHA-256-254 trees over zero leaves, one
    gadget call per level over the whole level (a batch), witness only; natively too."""
    node = 0
    for _ in range(2):
        node = native.sha256_254_hash2(node, node)
    assert node.to_bytes(32, "little") == ZERO_COMM_128
    for _ in range(4):
        node = native.sha256_254_hash2(node, node)
    assert node.to_bytes(32, "little") == ZERO_COMM_2K

    cs = WitnessCS(BLS)
    level = cs.alloc("leaves", np.zeros(64, dtype=np.uint64), 64)
    for depth in range(6):
        pairs = level.reshape(-1, 2)
        level = hash2_sha256_254(cs, f"level {depth}", pairs[:, 0], pairs[:, 1])
        if depth == 1:
            assert all(int(x).to_bytes(32, "little") == ZERO_COMM_128 for x in cs.value(level).ints())
    assert int(cs.value(level).ints()[0]).to_bytes(32, "little") == ZERO_COMM_2K
