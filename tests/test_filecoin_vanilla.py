"""Vanilla PoRep proofs: challenge derivation (against rust-fil-proofs' hard-coded vectors) and the
binary format's refusals."""

from __future__ import annotations

import struct

import pytest

from cuzk.filecoin import vanilla as V


def test_synthetic_challenges_match_rust_fil_proofs():
    # rust-fil-proofs storage-proofs-porep/src/stacked/vanilla/challenges.rs,
    # test_synth_challenges_against_hardcoded: sector_nodes = 2^10, replica_id = Fr(55), comm_r = Fr(101)
    # (to_repr: 32 little-endian bytes), 21 synthetic challenges, 10 porep challenges with rand = [1; 32]
    rid, comm_r = (55).to_bytes(32, "little"), (101).to_bytes(32, "little")
    synth = [V.synthetic_challenge(1 << 10, rid, comm_r, i) for i in range(21)]
    assert synth == [178, 297, 869, 211, 875, 477, 94, 781, 124, 332, 856, 801, 176, 692, 429, 691, 290, 204, 986, 210, 973]
    porep = V.synthetic_partition_challenges(1 << 10, rid, comm_r, bytes([1] * 32), 0, 10, n_synth=21)
    assert porep == [176, 781, 801, 986, 290, 211, 692, 856, 986, 332]
    # partitions select consecutive runs of the same selection stream (challenges.rs test_synth_challenges_32gib)
    whole = V.synthetic_partition_challenges(1 << 10, rid, comm_r, bytes([1] * 32), 0, 20, n_synth=21)
    parts = [
        c for k in range(4) for c in V.synthetic_partition_challenges(1 << 10, rid, comm_r, bytes([1] * 32), k, 5, n_synth=21)
    ]
    assert whole == parts


def test_interactive_challenges():
    rid, seed = bytes(range(32)), bytes(range(32, 64))
    one = V.interactive_challenges(1 << 30, rid, seed, 0, 200)
    # partitioning gives the same challenges as one partition (challenges.rs challenge_partition_equivalence)
    assert one == [c for k in range(5) for c in V.interactive_challenges(1 << 30, rid, seed, k, 40)]
    assert all(1 <= c < 1 << 30 for c in one) and len(set(one)) == 200
    small = V.interactive_challenges(64, rid, seed, 0, 500)
    assert min(small) == 1 and max(small) == 63  # node 0 is never challenged
    with pytest.raises(ValueError, match="too few"):
        V.interactive_challenges(2, rid, seed, 0, 1)


def test_decode_refuses_malformed_files():
    head = V._HEAD.pack(V.MAGIC, 1, 5, 0, 1, 7) + bytes(6 * 32)
    with pytest.raises(V.VanillaError, match="too short"):
        V.decode(b"abc")
    with pytest.raises(V.VanillaError, match="not a cuzk vanilla proof"):
        V.decode(b"X" * len(head))
    with pytest.raises(V.VanillaError, match="version 2"):
        V.decode(V._HEAD.pack(V.MAGIC, 2, 5, 0, 1, 7) + bytes(6 * 32))
    with pytest.raises(V.VanillaError, match="not a registered seal proof"):
        V.decode(V._HEAD.pack(V.MAGIC, 1, 9999, 0, 1, 7) + bytes(6 * 32))
    with pytest.raises(V.VanillaError, match="at most"):
        V.decode(V._HEAD.pack(V.MAGIC, 1, 5, 0, 1 << 30, 7) + bytes(6 * 32))  # no allocation by this count
    with pytest.raises(V.VanillaError, match=r"324 bytes, \d+ expected for 1 challenges of proof 5"):
        V.decode(head + bytes(100))
    # a well-sized file of zeros decodes (contents are checked by verification, not by the codec)
    obj = V.decode(head + bytes(V.challenge_size(5)))
    assert obj["proof_id"] == 5 and len(obj["challenges"]) == 1 and len(obj["challenges"][0]["parents"]) == 14
    assert V.decode(V.encode(obj)) == obj
    assert struct.unpack_from("<I", V.encode(obj), 8)[0] == 1
