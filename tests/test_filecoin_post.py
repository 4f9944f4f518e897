"""Filecoin's proofs of spacetime (WindowPoSt, WinningPoSt) on sealed 2 KiB sectors: challenge derivation,
the openings checked natively, the circuits satisfied by honest openings and unsatisfied where a tampered
one fails, recording = counting, the witness satisfying the recording, the public inputs in rust's
order, the binary vanilla format, ``cuzk gen-vanilla --kind``, the constraint counts (ours, and a model of
rust-fil-proofs' that reproduces its published numbers) and a WinningPoSt proved through the daemon."""

from __future__ import annotations

import copy
import hashlib
import json
import struct
import subprocess
import sys

import numpy as np
import pytest

from cuzk import curves
from cuzk.circuit.circuit import CircuitError, check, record, witness
from cuzk.circuit.cs import TestCS, WitnessCS
from cuzk.filecoin import params as P
from cuzk.filecoin import post
from cuzk.filecoin import vanilla as V
from cuzk.filecoin.seal import seal

RANDOMNESS = bytes(range(32))  # below r (byte 31 = 31)
PROVER = bytes(range(100, 132))


def _sealed(seed: int):
    d = np.random.default_rng(seed).integers(0, 256, (64, 32), dtype=np.uint8)
    d[:, 31] &= 0x3F
    return seal(d, 5, PROVER, 100 + seed, bytes(range(50, 82)))


@pytest.fixture(scope="module")
def sectors():
    return [(100 + i, _sealed(i)) for i in range(2)]


@pytest.fixture(scope="module")
def window(sectors):
    obj = post.post_openings(sectors, RANDOMNESS, post.WINDOW)
    assert json.loads(json.dumps(obj)) == obj  # JSON-ready
    return obj


@pytest.fixture(scope="module")
def winning(sectors):
    return post.post_openings(sectors, RANDOMNESS, post.WINNING, prover_id=PROVER)


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    import numba

    n = numba.get_num_threads()
    numba.set_num_threads(1)  # TestCS runs many tiny parallel kernels (see NOTES, SHA-256 gadgets)
    yield
    numba.set_num_threads(n)


# ---------------------------------------------------------------------------------------------
# registry and challenges


def test_registered_post_proofs():
    assert post.post_proof(0).name == "StackedDrgWinning2KiBV1" and post.post_proof(0).kind == post.WINNING
    assert post.post_proof(8).name == "StackedDrgWindow32GiBV1" and post.post_proof(8).api_version == P.API_V1_0_0
    pp = post.post_proof(13)
    assert (pp.name, pp.kind, pp.sector_size, pp.api_version) == ("StackedDrgWindow32GiBV1_2", post.WINDOW, 32 << 30, "1.2.0")
    assert post.post_proof_id(post.WINDOW, 2048) == 10 and post.post_proof_id(post.WINNING, 64 << 30) == 4
    for bad in (15, -1, "3", True):
        with pytest.raises(ValueError, match="registered PoSt proof"):
            post.post_proof(bad)
    assert post.tree_arities(2048) == [8, 8]
    assert post.tree_arities(32 << 30) == [8] * 9 + [8] and post.tree_arities(64 << 30) == [8] * 9 + [8, 2]


def _leaf_ref(randomness: bytes, sector_id: int, index: int, nodes: int) -> int:
    """generate_leaf_challenge as storage-proofs-post fallback/vanilla.rs states it: SHA-256 of the
    randomness, the sector id (u64 LE) and the challenge index (u64 LE); the first 8 bytes LE mod nodes."""
    d = hashlib.sha256(randomness + sector_id.to_bytes(8, "little") + index.to_bytes(8, "little")).digest()
    return struct.unpack("<Q", d[:8])[0] % nodes


def test_challenge_derivation():
    # no published vector exists in rust-fil-proofs (its PoSt tests derive and check, never pin values):
    # checked against the rule as stated, and by properties
    r = bytes(range(32))
    n32 = (32 << 30) // 32
    assert post.leaf_challenge(r, 7, 3, n32) == _leaf_ref(r, 7, 3, n32)
    # V1_2 (today's WindowPoSt): the index is n whatever the sector's position; V1: position * count + n
    v12 = [post.leaf_challenges(13, r, 7, si) for si in (0, 5)]
    assert v12[0] == v12[1] == [_leaf_ref(r, 7, n, n32) for n in range(10)]
    v1 = post.leaf_challenges(8, r, 7, 5)
    assert v1 == [_leaf_ref(r, 7, 50 + n, n32) for n in range(10)] and v1 != v12[0]
    # WinningPoSt: 66 challenges, index n (its one sector sits at position 0)
    win = post.leaf_challenges(3, r, 7, 0)
    assert len(win) == 66 and win[:10] == v12[0]
    assert all(0 <= c < 64 for c in post.leaf_challenges(10, r, 1, 0, 500))
    # the challenged sector: SHA-256(prover id || randomness || n u64 LE), first 8 bytes LE mod the set
    d = hashlib.sha256(PROVER + r + (0).to_bytes(8, "little")).digest()
    assert post.sector_challenge(r, PROVER, 0, 1000) == struct.unpack("<Q", d[:8])[0] % 1000
    # filecoin-proofs tests/api.rs winning_post: with a sector set of one, the only valid index is 0
    assert post.sector_challenges(r, 1, 1, PROVER) == [0]
    with pytest.raises(ValueError, match="empty sector set"):
        post.sector_challenge(r, PROVER, 0, 0)


# ---------------------------------------------------------------------------------------------
# openings checked natively


def test_openings_shape(window, winning, sectors):
    assert window["proof_id"] == 10 and window["sectors_per_partition"] == 2 and len(window["sectors"]) == 2
    s1 = window["sectors"][1]
    assert s1["sector_id"] == 101 and s1["comm_r"] == str(sectors[1][1].comm_r) and len(s1["challenges"]) == 10
    assert [c["index"] for c in s1["challenges"]] == post.leaf_challenges(10, RANDOMNESS, 101, 1)
    ch = s1["challenges"][0]
    assert [pos for _, pos in ch["path"]] == [ch["index"] % 8, ch["index"] // 8]
    assert winning["proof_id"] == 0 and len(winning["sectors"]) == 1 and len(winning["sectors"][0]["challenges"]) == 66
    pick = post.sector_challenge(RANDOMNESS, PROVER, 0, 2)
    assert winning["sector_challenge"] == pick and winning["sectors"][0]["sector_id"] == 100 + pick


def test_verify_post_openings(window, winning):
    post.verify_post_openings(window)
    post.verify_post_openings(winning)
    bad = copy.deepcopy(window)
    ch = bad["sectors"][1]["challenges"][3]
    ch["leaf"] = str(int(ch["leaf"]) + 1)
    i = ch["index"]
    with pytest.raises(ValueError, match=rf"^sector 1 \(id 101\): challenge 3 \(leaf {i}\): the path does not reach CommR_last$"):
        post.verify_post_openings(bad)
    bad = copy.deepcopy(window)
    bad["sectors"][0]["challenges"][9]["path"][1][0][2] = "5"
    with pytest.raises(ValueError, match=r"sector 0 \(id 100\): challenge 9 \(leaf \d+\): the path does not reach"):
        post.verify_post_openings(bad)
    bad = copy.deepcopy(window)
    bad["sectors"][1]["comm_r"] = str(int(bad["sectors"][1]["comm_r"]) ^ 1)
    with pytest.raises(ValueError, match=r"sector 1 \(id 101\): CommR is not Poseidon2\(CommC, CommR_last\)"):
        post.verify_post_openings(bad)
    # a valid opening of another leaf is refused: the randomness fixes the leaf
    bad = copy.deepcopy(window)
    chs = bad["sectors"][0]["challenges"]
    want = chs[5]["index"]
    j = next(j for j, ch in enumerate(chs) if ch["index"] != want)
    chs[5] = copy.deepcopy(chs[j])
    with pytest.raises(
        ValueError, match=rf"challenge 5 \(leaf {chs[j]['index']}\): not the leaf the randomness challenges \(leaf {want}\)"
    ):
        post.verify_post_openings(bad)
    bad = copy.deepcopy(winning)
    bad["sectors"][0]["sector_id"] += 1  # another sector's challenges
    with pytest.raises(ValueError, match="not the leaf the randomness challenges"):
        post.verify_post_openings(bad)
    with pytest.raises(ValueError, match="kind 'window-post': PoSt proof 0"):
        post.verify_post_openings(dict(winning, kind=post.WINDOW))


# ---------------------------------------------------------------------------------------------
# circuits


def test_parse_inputs_errors(window, winning):
    c = post.WindowPoSt()
    c.parse_inputs(window)
    with pytest.raises(CircuitError, match="inputs.kind: 'winning-post', the circuit is a window-post"):
        c.parse_inputs(winning)
    with pytest.raises(CircuitError, match=r"sectors\[0\].challenges: expected a list of 5, got 10"):
        post.WindowPoSt(challenges=5).parse_inputs(window)
    with pytest.raises(CircuitError, match="inputs.sectors: expected 1 to 1 entries, got 2"):
        post.WindowPoSt(sectors=1).parse_inputs(window)
    bad = copy.deepcopy(window)
    del bad["sectors"][1]["challenges"][2]["path"]
    with pytest.raises(CircuitError, match=r"inputs.sectors\[1\].challenges\[2\]: missing 'path'"):
        c.parse_inputs(bad)
    bad = copy.deepcopy(window)
    bad["sectors"][0]["challenges"][0]["path"][1][1] = 9
    with pytest.raises(CircuitError, match=r"path\[1\]: position 9 does not match the leaf index"):
        c.parse_inputs(bad)
    bad = copy.deepcopy(window)
    bad["sectors"][0]["challenges"][0]["index"] = 64
    with pytest.raises(CircuitError, match=r"challenges\[0\].index: expected an integer in \[0, 64\)"):
        c.parse_inputs(bad)
    bad = copy.deepcopy(window)
    bad["sectors"][1]["comm_c"] = str(int(bad["sectors"][1]["comm_c"]) + 1)
    with pytest.raises(CircuitError, match=r"vanilla proof: sector 1 \(id 101\): CommR is not"):
        c.parse_inputs(bad)  # the native check names the sector before anything is synthesized
    for kw, msg in (
        ({"proof_id": 0}, "is StackedDrgWinning2KiBV1, not a window-post"),
        ({"sectors": 0}, "sectors 0: expected 1 to 2349"),
        ({"challenges": 67}, "challenges 67: expected 1 to 66"),
        ({"proof_id": 99}, "registered PoSt proof"),
    ):
        with pytest.raises(CircuitError, match=msg):
            post.WindowPoSt(**kw)
    with pytest.raises(CircuitError, match="proves 1 sector"):
        post.WinningPoSt(sectors=2)


@pytest.mark.parametrize("shape", ["filecoin", "compact"])
def test_circuits_satisfied(window, winning, shape):
    assert check(post.WindowPoSt(shape=shape), window) is None
    assert check(post.WinningPoSt(shape=shape), winning) is None
    # a partition of one sector: the circuit repeats it (as rust does)
    one = dict(window, sectors=window["sectors"][:1])
    assert check(post.WindowPoSt(shape=shape), one) is None


def test_sample_inputs():
    for c in (post.WindowPoSt(), post.WinningPoSt(shape="compact")):
        assert check(c, c.sample_inputs(5)) is None  # fake replicas (random leaves and CommC), checked natively


def test_circuit_tampered_names_the_namespace(window, winning):
    c = post.WindowPoSt()
    c.verify_natively = False  # past the native check, the circuit itself must refuse
    bad = copy.deepcopy(window)
    bad["sectors"][1]["challenges"][4]["path"][0][0][1] = "7"
    first = check(c, bad)
    assert first is not None and "tree_r_last/root = CommR_last [instance 1, 4]" in first
    bad = copy.deepcopy(window)
    bad["sectors"][0]["comm_r"] = str(int(bad["sectors"][0]["comm_r"]) + 1)
    first = check(c, bad)
    assert first is not None and "comm_r/CommR = Poseidon2(CommC, CommR_last) [instance 0]" in first
    w = post.WinningPoSt()
    w.verify_natively = False
    bad = copy.deepcopy(winning)
    bad["sectors"][0]["challenges"][65]["leaf"] = "3"
    first = check(w, bad)
    assert first is not None and "tree_r_last/root = CommR_last [instance 65, 0]" in first
    # tampering a witness value inside a gadget: the constraint using it is named
    cs = TestCS(curves.get(w.curve), tamper={"tree_r_last/path/level 1/hash/out": lambda v: v + 1})
    w.synthesize(cs, w.parse_inputs(winning))
    assert "tree_r_last/path/level 1/hash/out" in (cs.which_is_unsatisfied() or "")
    # the compact shape names the same places
    c = post.WindowPoSt(shape="compact")
    c.verify_natively = False
    bad = copy.deepcopy(window)
    bad["sectors"][1]["challenges"][4]["path"][0][0][1] = "7"
    first = check(c, bad)
    assert first is not None and "tree_r_last/root = CommR_last [instance 1, 4]" in first


def test_recording_equals_counting_and_witness_satisfies(window, winning, tmp_path_factory):
    folder = tmp_path_factory.mktemp("circuits")
    cases = [
        (cls(shape=shape), obj, kind, shape)
        for cls, obj, kind in ((post.WindowPoSt, window, post.WINDOW), (post.WinningPoSt, winning, post.WINNING))
        for shape in post.SHAPES
    ]
    for c, obj, kind, shape in cases:
        rec = record(c, cache=folder)
        assert rec.layout.n_constraints == post.count_constraints(kind, shape=shape)["constraints"]
        w = witness(c, obj, rec.layout)
        assert len(rec.pce.unsatisfied(w)) == 0
        # public inputs: per circuit sector its CommR, then its challenges' leaf indices (rust's order)
        cs = WitnessCS(curves.get(c.curve))
        c.synthesize(cs, c.parse_inputs(obj))
        want = []
        if kind == post.WINDOW:
            for sec in obj["sectors"]:
                want += [int(sec["comm_r"]), *(ch["index"] for ch in sec["challenges"])]
        else:
            sec = obj["sectors"][0]
            for ch in sec["challenges"]:
                want += [int(sec["comm_r"]), ch["index"]]
        assert cs.public_inputs() == want
    # a one-sector partition: the last sector repeated, inputs included
    cs = WitnessCS(curves.get("bls12_381"))
    c = post.WindowPoSt()
    c.synthesize(cs, c.parse_inputs(dict(window, sectors=window["sectors"][:1])))
    sec = window["sectors"][0]
    assert cs.public_inputs() == 2 * [int(sec["comm_r"]), *(ch["index"] for ch in sec["challenges"])]


def test_constraint_counts():
    count = post.count_constraints
    # shape "filecoin": rust-fil-proofs' numbers exactly: filecoin-proofs src/constants.rs
    # WINDOW_POST_SECTOR_COUNT comments (one 32 / 64 GiB WindowPoSt partition)
    assert count(post.WINDOW, 13)["constraints"] == 125_279_217
    assert count(post.WINDOW, 14)["constraints"] == 129_887_900
    assert count(post.WINDOW, 13)["inputs"] == 2349 * 11
    # storage-proofs-post tests/fallback_circuit.rs: base-8 trees of 64 leaves (= 2 KiB), 5 challenges per
    # sector: 3 sectors 16,869 constraints and 19 inputs (with ONE), 2 sectors 11,246 and 13
    assert count(post.WINDOW, 10, 3, 5) == {"constraints": 16_869, "inputs": 18, "aux": 17_067}
    assert count(post.WINDOW, 10, 2, 5)["constraints"] == 11_246 and count(post.WINDOW, 10, 2, 5)["inputs"] + 1 == 13
    # ... and its sub (8-4, 256 leaves) and top (8-4-2, 512 leaves) trees, shapes no Filecoin size has
    from cuzk.circuit.cs import ConstraintSystem

    for arities, want in (([8, 8, 4], 22_674), ([8, 8, 4, 2], 27_384)):
        c = post.WindowPoSt(10, 3, 5)
        c.arities, c.nodes = arities, int(np.prod(arities))
        c.bits = c.nodes.bit_length() - 1
        cs = ConstraintSystem(curves.get(c.curve))
        c.synthesize(cs, None)
        assert (cs.n_constraints, cs.n_inputs) == (want, 19)
        assert post.rust_constraint_count(arities, 3, 5) == want
    # the model of rust's gadgets agrees (and with its 32 GiB base-8 BenchCS test)
    assert post.rust_constraint_count(post.tree_arities(32 << 30), 2349, 10) == 125_279_217
    assert post.rust_constraint_count([8] * 10, 5, 10) == 266_665
    # Filecoin's sizes: 2 KiB and 32 GiB, both kinds, both shapes
    assert count(post.WINDOW)["constraints"] == 21_866 and count(post.WINNING)["constraints"] == 90_750
    assert count(post.WINNING, 3) == {"constraints": 370_590, "inputs": 132, "aux": 375_210}
    assert count(post.WINDOW, shape="compact") == {"constraints": 16_832, "inputs": 22, "aux": 17_094}
    assert count(post.WINNING, shape="compact")["constraints"] == 69_564
    assert count(post.WINDOW, 13, shape="compact") == {"constraints": 96_440_544, "inputs": 25_839, "aux": 98_063_703}
    assert count(post.WINNING, 3, shape="compact") == {"constraints": 284_988, "inputs": 132, "aux": 289_608}
    # compact per challenge: 30 index bits + pack, 10 x (insert 20 + Poseidon 385), root; per sector 236
    assert count(post.WINDOW, 13, 1, 1, shape="compact")["constraints"] == 236 + 31 + 10 * 405 + 1


# ---------------------------------------------------------------------------------------------
# the binary format


def test_binary_round_trip_and_refusals(window, winning):
    for obj in (window, winning):
        data = V.encode(obj)
        assert struct.unpack_from("<II", data, 8) == (2, 3 if obj is window else 4)
        back = V.decode(data)
        assert back == obj | {"version": 2}
        assert V.encode(back) == data  # canonical
    c = post.WinningPoSt()
    c.parse_inputs(c.parse_binary(V.encode(winning)))
    data = V.encode(window)
    head = V._POST_HEAD
    with pytest.raises(V.VanillaError, match=r"\d+ bytes, \d+ expected for 2 sectors x 10 challenges of PoSt proof 10"):
        V.decode(data[:-1])
    with pytest.raises(V.VanillaError, match="kind 5; version 2 holds kinds 3"):
        V.decode(data[:12] + struct.pack("<I", 5) + data[16:])
    with pytest.raises(V.VanillaError, match="proof_id 0 is StackedDrgWinning2KiBV1, not a window-post"):
        V.decode(data[:16] + struct.pack("<I", 0) + data[20:])
    with pytest.raises(V.VanillaError, match="proof_id 77 is not a registered PoSt proof"):
        V.decode(data[:16] + struct.pack("<I", 77) + data[20:])
    big = head.pack(V.MAGIC, 2, 3, 10, 0, 1 << 30, 10, 2, 0, 0) + bytes(200)
    with pytest.raises(V.VanillaError, match="1073741824 sectors; a window-post has 1 to 2349"):
        V.decode(big)  # refused by the count, nothing allocated
    many = head.pack(V.MAGIC, 2, 4, 0, 0, 1, 1000, 1, 1, 0) + bytes(200)
    with pytest.raises(V.VanillaError, match="1000 challenges per sector; at most 66"):
        V.decode(many)
    two = head.pack(V.MAGIC, 2, 4, 0, 0, 2, 66, 1, 1, 0) + bytes(200)
    with pytest.raises(V.VanillaError, match="2 sectors; a winning-post has 1 to 1"):
        V.decode(two)
    bad = bytearray(data)
    struct.pack_into("<Q", bad, head.size + 64 + 104, 64)  # sector 0's first leaf index: 64 of 64 leaves
    with pytest.raises(V.VanillaError, match="leaf index 64 is not a leaf of a 64-node sector"):
        V.decode(bytes(bad))
    with pytest.raises(CircuitError, match="not a cuzk vanilla proof"):
        c.parse_binary(b"y" * 300)
    # PoRep's version 1 is read as before
    porep_head = V._HEAD.pack(V.MAGIC, 1, 5, 0, 1, 7) + bytes(6 * 32)
    assert V.decode(porep_head + bytes(V.challenge_size(5)))["proof_id"] == 5


def test_rust_bincode_sector_proofs(window, winning):
    """rust's per-sector vanilla proof (bincode FallbackPoStSectorProof, what Curio sends): our openings
    written in that layout and read back give the same dict; malformed bytes are refused in one line."""
    blobs = [post.sector_proof_to_bincode(sec, 10) for sec in window["sectors"]]
    # 2 KiB (a base-only tree): per proof tag + root + leaf + 2 levels of (len, 7 hashes, index)
    assert len(blobs[0]) == 8 + 32 + 16 + 10 * (4 + 64 + 8 + 2 * (8 + 7 * 32 + 8)) + 64
    back = post.post_from_bincode(post.WINDOW, 10, RANDOMNESS, blobs)
    assert back == window
    post.verify_post_openings(back)
    w = post.post_from_bincode(post.WINNING, 0, RANDOMNESS, [post.sector_proof_to_bincode(winning["sectors"][0], 0)])
    assert w["sectors"] == winning["sectors"]
    # a 32 GiB (Sub: base 9 levels + sub) and 64 GiB (Top) sector proof round-trip
    for pid in (13, 14):
        ar = post.tree_arities(post.post_proof(pid).sector_size)
        idx = 123_456_789
        path, node = [], idx
        for a in ar:
            path.append([[str(7 * a + j) for j in range(a - 1)], node % a])
            node //= a
        sec = {"sector_id": 9, "comm_c": "1", "comm_r_last": "2", "comm_r": "3"}
        sec["challenges"] = [{"index": idx, "leaf": "5", "path": path}]
        assert post.sector_proof_from_bincode(post.sector_proof_to_bincode(sec, pid), pid) == sec
    b = blobs[0]
    tag_at = 8 + 32 + 16
    for data, msg in (
        (b[:-1], r"truncated at byte \d+ \(comm_r_last\)"),
        (b + b"\0", "1 bytes after the proof"),
        (b[:40] + struct.pack("<Q", 2) + b[48:], "2 sector proofs, expected 1"),
        (b[:48] + struct.pack("<Q", 1 << 40) + b[56:], "1099511627776 inclusion proofs; 1 to 66 expected"),
        (b[:tag_at] + struct.pack("<I", 1) + b[tag_at + 4 :], "inclusion proof 0: a Sub proof; 2048-byte sectors have Single"),
        (b[: tag_at + 68] + struct.pack("<Q", 3) + b[tag_at + 76 :], "inclusion proof 0 path: 3 levels, the tree has 2"),
        (
            b[: tag_at + 76] + struct.pack("<Q", 6) + b[tag_at + 84 :],
            r"inclusion proof 0 path\[0\]: 6 hashes at a level of arity 8",
        ),
        (b[: tag_at + 4] + bytes(32) + b[tag_at + 36 :], "inclusion proof 0: its root is not the proof's CommR_last"),
        (b[:8] + b"\xff" * 32 + b[40:], "comm_r: not a field element"),
    ):
        with pytest.raises(post.BincodeError, match=msg):
            post.sector_proof_from_bincode(data, 10)
    with pytest.raises(post.BincodeError, match="3 sector proofs; a partition holds 1 to 2"):
        post.post_from_bincode(post.WINDOW, 10, RANDOMNESS, blobs + blobs[:1])
    with pytest.raises(post.BincodeError, match="PoSt proof 0 is StackedDrgWinning2KiBV1, not a window-post"):
        post.post_from_bincode(post.WINDOW, 0, RANDOMNESS, blobs)


# ---------------------------------------------------------------------------------------------
# the CLI


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "cuzk", *args], capture_output=True, text=True, check=False)


def test_gen_vanilla_post(tmp_path):
    r = _cli(
        "gen-vanilla", "--kind", "window-post", "--sectors", "2", "--randomness", "22" * 31 + "00",
        "--sector-id", "40", "-o", str(tmp_path / "w.cvp"), "--json", str(tmp_path / "w.json"),
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    data = (tmp_path / "w.cvp").read_bytes()
    obj = V.decode(data)
    assert obj == json.loads((tmp_path / "w.json").read_text())
    assert [s["sector_id"] for s in obj["sectors"]] == [40, 41] and obj["proof_id"] == 10
    randomness = bytes.fromhex("22" * 31 + "00")
    assert [c["index"] for c in obj["sectors"][1]["challenges"]] == post.leaf_challenges(10, randomness, 41, 1)
    c = post.WindowPoSt()
    c.parse_inputs(c.parse_binary(data))  # verified natively: accepted
    r = _cli("gen-vanilla", "--kind", "winning-post", "--sectors", "3", "-o", str(tmp_path / "n.cvp"))
    assert r.returncode == 0, r.stderr
    obj = V.read(str(tmp_path / "n.cvp"))
    assert obj["kind"] == post.WINNING and obj["sector_set_len"] == 3 and len(obj["sectors"][0]["challenges"]) == 66
    for args, msg in (
        (
            ("--kind", "window-post", "--sectors", "3"),
            "cuzk: error: --sectors: 3; a WindowPoSt partition of 2048-byte sectors holds at most 2",
        ),
        (("--kind", "winning-post", "--randomness", "ff" * 32), "cuzk: error: --randomness: not a field element"),
        (
            ("--kind", "window-post", "--post-proof-id", "0"),
            "cuzk: error: --post-proof-id: 0 is StackedDrgWinning2KiBV1, not a window-post",
        ),
    ):
        r = _cli("gen-vanilla", *args, "-o", str(tmp_path / "x.cvp"))
        assert r.returncode == 2 and r.stderr.strip().startswith(msg) and len(r.stderr.strip().splitlines()) == 1, r.stderr


# ---------------------------------------------------------------------------------------------
# through the daemon


@pytest.mark.slow
def test_daemon_winning_post(tmp_path, monkeypatch, winning):
    """A 2 KiB WinningPoSt (rust's shape: 90,750 constraints) proved through the daemon (CPU backend) from its binary
    vanilla proof; the proof verifies with the key's verifying key; a tampered vanilla proof is refused at
    submission, naming the sector and challenge."""
    from test_daemon import daemon

    from cuzk.groth16 import formats, setup, verifier, zkey
    from cuzk.server.client import DaemonError

    monkeypatch.setenv("CUZK_CACHE_DIR", str(tmp_path / "cache"))
    spec = "cuzk.filecoin.post:WinningPoSt"
    circuit = post.WinningPoSt()
    pk = setup.setup(record(circuit).pce, quiet=True)
    zk = tmp_path / "winning.zkey"
    zkey.write_zkey(zk, pk)
    with daemon() as (_d, c):
        c.register("winning", python=spec, zkey=str(zk))
        res = c.prove("winning", partitions=[("vanilla", V.encode(winning))])
        sec = winning["sectors"][0]
        want = [x for ch in sec["challenges"] for x in (int(sec["comm_r"]), ch["index"])]
        assert res.public[0] == want
        assert verifier.verify(pk.vk, res.public[0], formats.Proof.from_bytes(res.proofs[0], pk.vk.curve))
        bad = copy.deepcopy(winning)
        bad["sectors"][0]["challenges"][7]["leaf"] = "1"
        with pytest.raises(DaemonError, match=r"sector 0 \(id \d+\): challenge 7 \(leaf \d+\): the path does not reach"):
            c.prove("winning", partitions=[("vanilla", V.encode(bad))])
