"""Vanilla PoRep proofs: challenge derivation (against rust-fil-proofs' hard-coded vectors) and the
binary format's refusals (PoSt's version 2: tests/test_filecoin_post.py)."""

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
    with pytest.raises(V.VanillaError, match=r"version 3; this cuzk reads versions 1 \(PoRep\) and 2 \(PoSt\)"):
        V.decode(V._HEAD.pack(V.MAGIC, 3, 5, 0, 1, 7) + bytes(6 * 32))
    with pytest.raises(V.VanillaError, match="kind 5; version 2 holds kinds 3"):
        V.decode(V._HEAD.pack(V.MAGIC, 2, 5, 0, 1, 7) + bytes(6 * 32))  # version 2 is PoSt's
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


def test_vanilla_round_trip_and_refusal_naming_the_challenge(tmp_path):
    import json
    import subprocess
    import sys

    from cuzk.circuit.circuit import CircuitError
    from cuzk.filecoin.porep import PoRep

    out = tmp_path / "p.cvp"
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "cuzk",
            "gen-vanilla",
            "--sector-size",
            "2KiB",
            "--seed",
            "11" * 32,
            "-o",
            str(out),
            "--json",
            str(tmp_path / "p.json"),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert r.returncode == 0, r.stderr
    data = out.read_bytes()
    obj = V.decode(data)
    assert obj == json.loads((tmp_path / "p.json").read_text()) | {"version": 1}
    assert V.encode(obj) == data  # the binary form is canonical
    assert obj["proof_id"] == 5 and len(obj["challenges"]) == 2 and obj["seed"] == "11" * 32
    want = V.interactive_challenges(64, bytes.fromhex(obj["replica_id"]), bytes.fromhex("11" * 32), 0, 2)
    assert [c["index"] for c in obj["challenges"]] == want
    circuit = PoRep(5, 2)
    circuit.parse_inputs(circuit.parse_binary(data))  # verified natively: accepted
    bad = json.loads(json.dumps(obj))
    bad["challenges"][1]["parent_columns"][3][0] = "12345"
    with pytest.raises(CircuitError, match=rf"challenge 1 \(node {want[1]}\)"):
        circuit.parse_inputs(V.decode(V.encode(bad)))
    with pytest.raises(CircuitError, match="not a cuzk vanilla proof"):
        circuit.parse_binary(b"x" * 600)
    r = subprocess.run(
        [sys.executable, "-m", "cuzk", "gen-vanilla", "--sector-size", "3KiB", "-o", str(out)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert r.returncode == 2 and "not a Filecoin sector size" in r.stderr


def test_more_challenges_than_a_partition_only_for_a_circuit_made_with_them():
    from cuzk.circuit.circuit import CircuitError
    from cuzk.filecoin.porep import PoRep

    n = 5  # a 2 KiB partition (proof 5) has 2 in Filecoin; a size benchmark's circuit may take more
    data = V._HEAD.pack(V.MAGIC, 1, 5, 0, n, 7) + bytes(6 * 32) + bytes(n * V.challenge_size(5))
    with pytest.raises(V.VanillaError, match="5 challenges; a partition of proof 5 has at most 2"):
        V.decode(data)
    assert len(V.decode(data, max_challenges=n)["challenges"]) == n
    assert len(PoRep(proof_id=5, challenges=n).parse_binary(data)["challenges"]) == n
    with pytest.raises(CircuitError, match="at most 2"):
        PoRep(proof_id=5, challenges=2).parse_binary(data)
    with pytest.raises(CircuitError, match=r"challenges 129: expected 1 to 18 \(Filecoin's limit; up to 128"):
        PoRep(proof_id=5, challenges=129)
