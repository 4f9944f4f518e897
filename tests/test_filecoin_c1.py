"""Filecoin's commit-phase-1 output (C1): our sealer writes it, the reader checks every field, naming the
JSON path, and its openings are the ones the PoRep circuit proves.

No published C1 output was found to test against (curio, lotus, filecoin-ffi, rust-fil-proofs and supraseal
keep none in their trees; supraseal's 32 GiB ``commit-phase-1-output`` is bincode and absent from the
snapshot). The shape is pinned by field names and order read from rust-fil-proofs 87348a7,
rust-filecoin-proofs-api 0e64ce8 and curio e0294b0f (``lib/proof/porep_vproof_types.go``,
``lib/proof/merkle.go``) and by filecoin-ffi's own serde_json of a PreCommit1Out; the contents by a 2 KiB
sector lotus sealed on a devnet (its on-chain CommR reproduced, so the C1 output for its seed is the one
lotus made) and by our native verifier (see the last test)."""

from __future__ import annotations

import base64
import copy
import hashlib
import json
import re

import numpy as np
import pytest

from cuzk.circuit.circuit import CircuitError
from cuzk.filecoin import c1 as C1
from cuzk.filecoin import params as P
from cuzk.filecoin import porep
from cuzk.filecoin import vanilla as V
from cuzk.filecoin.seal import seal

PROVER_ID = bytes([0x87, 0x24]) + bytes(30)  # miner 4615 as LEB128, left-aligned (curio make_prover_id)
SECTOR = 234
TICKET = bytes((7 * i + 1) % 256 for i in range(31)) + b"\x1f"
SEED = bytes((11 * i + 3) % 256 for i in range(31)) + b"\x2a"


def _sector(proof_id: int):
    rng = np.random.default_rng(proof_id + 18)
    data = rng.integers(0, 256, (64, 32), dtype=np.uint8)
    data[:, 31] &= 0x3F
    return seal(data, proof_id, PROVER_ID, SECTOR, TICKET)


@pytest.fixture(scope="module")
def sealed():
    return _sector(5)


@pytest.fixture(scope="module")
def bare(sealed) -> bytes:
    return C1.write_c1(sealed, SEED, TICKET, prover_id=PROVER_ID, sector_id=SECTOR)


def _err(data: bytes) -> str:
    with pytest.raises(C1.C1Error) as e:
        C1.parse_c1(data)
    msg = str(e.value)
    assert "\n" not in msg
    return msg


def _dump(obj) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode()


# ---------------------------------------------------------------------------------------------
# names


def test_registered_proof_names():
    # curio lib/proof/porep_vproof_types.go StringRegisteredProofType.ToABI
    assert C1.proof_id_of("StackedDrg2KiBV1") == 0
    assert C1.proof_id_of("StackedDrg2KiBV1_1") == 5
    assert C1.proof_id_of("StackedDrg32GiBV1_1") == 8
    assert C1.proof_id_of("StackedDrg64GiBV1_1") == 9
    assert C1.proof_id_of("StackedDrg512MiBV1_1_Feat_SyntheticPoRep") == 12
    assert C1.proof_id_of("StackedDrg2KiBV1_2_Feat_NonInteractivePoRep") == 15
    assert C1.proof_id_of("StackedDrg64GiBV1_2_Feat_NonInteractivePoRep") == 19
    assert sorted(C1.REGISTERED_SEAL_PROOFS.values()) == list(range(20))
    assert all(C1.proof_id_of(C1.proof_name(i)) == i for i in range(20))
    # rust-filecoin-proofs-api VanillaSealProof: one variant per size, named after V1
    assert C1.vanilla_variant(8) == C1.vanilla_variant(13) == "StackedDrg32GiBV1"
    assert C1.counts(8) == (10, 18) and C1.counts(5) == (1, 2) and C1.counts(15) == (13, 2) and C1.counts(18) == (126, 18)
    with pytest.raises(C1.C1Error, match="not a RegisteredSealProof name"):
        C1.proof_id_of("StackedDrg4KiBV1")


# ---------------------------------------------------------------------------------------------
# round trip on a real sealed 2 KiB sector


def test_round_trip_2kib(sealed, bare):
    out = C1.parse_c1(bare)
    assert (out.registered_proof, out.proof_id, out.sector_size) == ("StackedDrg2KiBV1_1", 5, 2048)
    assert (out.partitions, out.challenges_per_partition, out.sector_num) == (1, 2, None)
    assert out.comm_r == sealed.comm_r_bytes() and out.comm_d == sealed.comm_d and out.replica_id == sealed.replica_id
    assert (out.seed, out.ticket) == (SEED, TICKET)
    (op,) = out.openings
    chals = [c["index"] for c in op["challenges"]]
    assert chals == V.interactive_challenges(64, sealed.replica_id, SEED, 0, 2)
    ours = porep.challenge_openings(sealed, chals)
    assert {k: v for k, v in op.items() if k not in ("partition", "seed")} == ours
    assert (op["partition"], op["seed"]) == (0, SEED.hex())
    porep.verify_openings(op)
    porep.PoRep(proof_id=5, challenges=2).parse_inputs(op)  # verifies natively too
    # the envelope carries the same C1 output
    env = C1.write_c1(sealed, SEED, TICKET, sector_num=SECTOR)
    e = json.loads(env)
    assert list(e) == ["SectorNum", "Phase1Out", "SectorSize"] and (e["SectorNum"], e["SectorSize"]) == (SECTOR, 2048)
    assert base64.b64decode(e["Phase1Out"]) == bare
    eo = C1.parse_c1(env)
    assert eo.sector_num == SECTOR and eo.openings == out.openings
    assert C1.partition_openings(env, 0) == op == C1.partition_openings(b"  \n" + bare, 0)
    assert C1.is_c1(env) and C1.is_c1(b" \t" + bare) and not C1.is_c1(b"cuzk-cvp")
    with pytest.raises(C1.C1Error, match="partitions 0 to 0"):
        C1.partition_openings(bare, 1)


def test_written_shape_matches_rust_field_names(bare):
    c1 = json.loads(bare)
    assert bare.startswith(b'{"registered_proof":"StackedDrg2KiBV1_1","vanilla_proofs":{"StackedDrg2KiBV1":[[{')
    assert b" " not in bare  # serde_json's compact output
    assert list(c1) == ["registered_proof", "vanilla_proofs", "comm_r", "comm_d", "replica_id", "seed", "ticket"]
    assert all(
        len(c1[k]) == 32 and all(0 <= b < 256 for b in c1[k]) for k in ("comm_r", "comm_d", "replica_id", "seed", "ticket")
    )
    (part,) = c1["vanilla_proofs"]["StackedDrg2KiBV1"]
    assert len(part) == 2
    p = part[0]
    assert list(p) == ["comm_d_proofs", "comm_r_last_proof", "replica_column_proofs", "labeling_proofs", "encoding_proof"]
    d = p["comm_d_proofs"]["data"]["Single"]
    assert list(d) == ["root", "leaf", "path"] and d["root"] == c1["comm_d"]
    assert [list(e) for e in d["path"]["path"]] == [["hashes", "index"]] * 6 and all(
        len(e["hashes"]) == 1 for e in d["path"]["path"]
    )
    r = p["comm_r_last_proof"]["data"]["Single"]
    assert len(r["path"]["path"]) == 2 and all(len(e["hashes"]) == 7 for e in r["path"]["path"])
    rcp = p["replica_column_proofs"]
    assert list(rcp) == ["c_x", "drg_parents", "exp_parents"] and (len(rcp["drg_parents"]), len(rcp["exp_parents"])) == (6, 8)
    cx = rcp["c_x"]
    assert list(cx) == ["column", "inclusion_proof"] and list(cx["column"]) == ["index", "rows", "_h"]
    assert cx["column"]["_h"] is None and len(cx["column"]["rows"]) == 2
    assert b'"_h":null' in bare
    labs = p["labeling_proofs"]
    assert [list(x) for x in labs] == [["parents", "layer_index", "node"]] * 2
    assert [x["layer_index"] for x in labs] == [1, 2] and all(len(x["parents"]) == 37 for x in labs)
    assert labs[0]["node"] == cx["column"]["index"]
    assert p["encoding_proof"] == labs[-1]
    # layer 1 hashes the 6 base parents' layer-1 labels cyclically; layer 2 the 14 parents'
    base = [c["column"]["rows"][0] for c in rcp["drg_parents"]]
    assert labs[0]["parents"] == [base[k % 6] for k in range(37)]
    both = [c["column"]["rows"][1] for c in rcp["drg_parents"]] + [c["column"]["rows"][0] for c in rcp["exp_parents"]]
    assert labs[1]["parents"] == [both[k % 14] for k in range(37)]


@pytest.mark.parametrize("proof_id", [0, 10, 15])
def test_round_trip_other_versions(proof_id):
    # V1 (the legacy graph), synthetic PoRep (challenges selected among the synthetic ones), NI-PoRep
    sealed = _sector(proof_id)
    raw = C1.write_c1(sealed, SEED, TICKET, sector_num=1)
    parts, n = C1.counts(proof_id)
    if parts == 1:
        out = C1.parse_c1(raw)
        assert out.proof_id == proof_id and len(out.openings) == 1
        op = out.openings[-1]
    else:  # NI-PoRep: 13 partitions; convert the last only (parse_c1 of all takes ~5 s)
        assert len(json.loads(base64.b64decode(json.loads(raw)["Phase1Out"]))["vanilla_proofs"]["StackedDrg2KiBV1"]) == parts
        op = C1.partition_openings(raw, parts - 1)
    porep.verify_openings(op)
    k = op["partition"]
    want = {
        0: lambda: V.interactive_challenges(64, sealed.replica_id, SEED, k, n),
        10: lambda: V.synthetic_partition_challenges(64, sealed.replica_id, sealed.comm_r_bytes(), SEED, k, n),
        15: lambda: C1.ni_challenges(64, sealed.replica_id, sealed.comm_r_bytes(), k, n),
    }[proof_id]()
    assert [c["index"] for c in op["challenges"]] == want


def test_write_checks_the_ticket(sealed):
    with pytest.raises(C1.C1Error, match="replica id"):
        C1.write_c1(sealed, SEED, bytes(32), prover_id=PROVER_ID, sector_id=SECTOR)


# ---------------------------------------------------------------------------------------------
# refusals: each names the JSON path

P0 = re.escape("c1.vanilla_proofs.StackedDrg2KiBV1[0][0]")
RCP = P0 + re.escape(".replica_column_proofs")


def _set(path: list, value):
    def f(c1):
        obj = c1
        for k in path[:-1]:
            obj = obj[k]
        obj[path[-1]] = value(obj[path[-1]]) if callable(value) else value

    return f


def _p0(*path):
    return ["vanilla_proofs", "StackedDrg2KiBV1", 0, 0, *path]


SINGLE = ["data", "Single"]
CASES = [
    (
        _set(_p0("comm_d_proofs", *SINGLE, "path", "path", 2, "hashes"), []),
        rf"{P0}\.comm_d_proofs\.data\.Single\.path\.path\[2\]\.hashes: expected 1 hash, got 0",
    ),
    (_set(["comm_r", 5], 256), r"c1\.comm_r\[5\]: expected a byte \(an integer 0-255\), got 256"),
    (_set(["comm_r", 5], True), r"c1\.comm_r\[5\]: expected a byte .*got a boolean"),
    (_set(["comm_r"], lambda v: v[:31]), r"c1\.comm_r: expected 32 bytes .*got a list of 31"),
    (_set(["comm_r"], [255] * 32), r"c1\.comm_r: not a canonical field element"),
    (_set(["comm_r"], [0] * 32), r"c1\.comm_r: all zero"),
    (_set(["seed"], [0] * 32), r"c1\.seed: all zero"),
    (_set(["replica_id"], "00" * 32), r"c1\.replica_id: expected 32 bytes .*got a string"),
    (_set(["ticket"], None), r"c1\.ticket: expected 32 bytes .*got null"),
    (
        _set(["registered_proof"], "StackedDrg4KiBV1_1"),
        r"c1\.registered_proof: 'StackedDrg4KiBV1_1' is not a RegisteredSealProof name",
    ),
    (
        _set(["registered_proof"], "StackedDrg8MiBV1_1"),
        r"c1\.vanilla_proofs: expected the one key 'StackedDrg8MiBV1' \(StackedDrg8MiBV1_1\), got 'StackedDrg2KiBV1'",
    ),
    (
        _set(["vanilla_proofs", "StackedDrg2KiBV1"], lambda v: v * 2),
        r"c1\.vanilla_proofs\.StackedDrg2KiBV1: expected 1 partition, got 2",
    ),
    (
        _set(["vanilla_proofs", "StackedDrg2KiBV1", 0], lambda v: v[:1]),
        r"c1\.vanilla_proofs\.StackedDrg2KiBV1\[0\]: expected 2 challenges, got 1$",
    ),
    (_set(_p0("replica_column_proofs", "c_x", "column", "index"), 0), rf"{RCP}\.c_x\.column\.index: node 0 cannot be challenged"),
    (
        _set(_p0("replica_column_proofs", "c_x", "column", "index"), lambda v: v % 63 + 1),
        rf"{RCP}\.c_x\.column\.index: node \d+, but challenge 0 of partition 0 is node \d+ \(derived as interactive PoRep challenges\)",
    ),
    (
        _set(_p0("replica_column_proofs", "c_x", "column", "index"), -1),
        rf"{RCP}\.c_x\.column\.index: expected a node index \(u32\) in \[0, 4294967296\), got -1",
    ),
    (_set(_p0("replica_column_proofs", "c_x", "column", "_h"), 0), rf"{RCP}\.c_x\.column\._h: expected null, got 0"),
    (_set(_p0("replica_column_proofs", "c_x", "column", "rows", 1, 31), 0x40), rf"{RCP}\.c_x\.column\.rows\[1\]: above 2\^254"),
    (
        _set(_p0("replica_column_proofs", "c_x", "inclusion_proof", *SINGLE, "leaf", 0), lambda b: b ^ 1),
        rf"{RCP}\.c_x\.inclusion_proof\.data\.Single\.leaf: not the Poseidon hash of the column's rows",
    ),
    (
        _set(_p0("replica_column_proofs", "drg_parents", 3, "inclusion_proof", *SINGLE, "root", 0), lambda b: b ^ 1),
        rf"{RCP}\.drg_parents\[3\]\.inclusion_proof\.data\.Single\.root: differs from the c_x root of challenge 0 \(CommC\)",
    ),
    (
        _set(_p0("replica_column_proofs", "exp_parents", 2, "column", "index"), lambda v: v ^ 1),
        rf"{RCP}\.exp_parents\[2\]\.column\.index: node \d+, but parent 8 of node \d+ is node \d+",
    ),
    (_set(_p0("replica_column_proofs", "exp_parents"), lambda v: v[:7]), rf"{RCP}\.exp_parents: expected 8 column proofs, got 7"),
    (
        _set(_p0("replica_column_proofs", "c_x", "inclusion_proof", *SINGLE, "path", "path", 1, "index"), 8),
        rf"{RCP}\.c_x\.inclusion_proof\.data\.Single\.path\.path\[1\]\.index: expected a position in \[0, 8\), got 8",
    ),
    (
        _set(_p0("replica_column_proofs", "c_x", "inclusion_proof", *SINGLE, "path", "path", 1, "index"), lambda v: (v + 1) % 8),
        rf"{RCP}\.c_x\.inclusion_proof: its path leads to node \d+, the column is node \d+",
    ),
    (
        _set(_p0("comm_r_last_proof", "data"), lambda d: {"Sub": d["Single"]}),
        rf"{P0}\.comm_r_last_proof\.data: expected the 'Single' variant for this tree's shape, got 'Sub'",
    ),
    (
        _set(_p0("comm_r_last_proof", *SINGLE, "path", "path"), lambda v: v[:1]),
        rf"{P0}\.comm_r_last_proof\.data\.Single\.path\.path: expected 2 levels, got 1",
    ),
    (
        _set(_p0("comm_r_last_proof", *SINGLE, "root", 3), lambda b: b ^ 1),
        r"c1\.vanilla_proofs\.StackedDrg2KiBV1\[0\]\[1\]\.comm_r_last_proof\.data\.Single\.root: differs from challenge 0's \(CommR_last\)",
    ),
    (_set(_p0("comm_d_proofs", *SINGLE, "root", 0), lambda b: b ^ 1), rf"{P0}\.comm_d_proofs\.data\.Single\.root: not comm_d"),
    (
        _set(_p0("comm_d_proofs", *SINGLE, "path", "path", 0, "index"), lambda v: 1 - v),
        rf"{P0}\.comm_d_proofs: its path leads to node \d+, the challenge is node \d+",
    ),
    (_set(_p0("comm_d_proofs", *SINGLE, "leaf", 31), 0xFF), rf"{P0}\.comm_d_proofs\.data\.Single\.leaf: above 2\^254"),
    (
        _set(_p0("labeling_proofs", 1, "parents", 20, 0), lambda b: b ^ 1),
        rf"{P0}\.labeling_proofs\[1\]\.parents\[20\]: not parent 6's label in layer 1",
    ),
    (
        _set(_p0("labeling_proofs", 0, "parents"), lambda v: v[:36]),
        rf"{P0}\.labeling_proofs\[0\]\.parents: expected 37 parent labels, got 36",
    ),
    (_set(_p0("labeling_proofs", 0, "layer_index"), 2), rf"{P0}\.labeling_proofs\[0\]\.layer_index: 2, expected layer 1"),
    (
        _set(_p0("labeling_proofs", 1, "node"), lambda v: v + 1),
        rf"{P0}\.labeling_proofs\[1\]\.node: \d+, the challenge is node \d+",
    ),
    (_set(_p0("encoding_proof", "layer_index"), 1), rf"{P0}\.encoding_proof\.layer_index: 1, expected layer 2"),
    (
        _set(_p0("encoding_proof"), lambda e: {k: v for k, v in e.items() if k != "node"}),
        rf"{P0}\.encoding_proof: missing 'node'",
    ),
    (_set(_p0("replica_column_proofs"), []), rf"{RCP}: expected an object, got a list of 0"),
]


@pytest.mark.parametrize(("tamper", "pattern"), CASES, ids=[f"case{i}" for i in range(len(CASES))])
def test_tampered_fields_are_refused_naming_the_path(bare, tamper, pattern):
    c1 = copy.deepcopy(json.loads(bare))
    tamper(c1)
    msg = _err(_dump(c1))
    assert re.match(pattern, msg), msg  # anchored at the start: the path comes first


def test_consistent_forgeries_fail_native_verification(bare):
    # fields the reader cannot check without hashing: it accepts them, verify_openings and the circuit refuse
    c1 = json.loads(bare)
    d = c1["vanilla_proofs"]["StackedDrg2KiBV1"][0][1]["comm_d_proofs"]["data"]["Single"]
    d["leaf"][0] ^= 1  # the data node (the encoding and the data path no longer hold)
    op = C1.parse_c1(_dump(c1)).openings[0]
    with pytest.raises(ValueError, match=r"challenge 1 \(node \d+\): the data path does not reach CommD"):
        porep.verify_openings(op)
    with pytest.raises(CircuitError, match="vanilla proof: challenge 1"):
        porep.PoRep(proof_id=5, challenges=2).parse_inputs(op)
    c1 = json.loads(bare)
    c1["comm_r"][0] ^= 1
    with pytest.raises(ValueError, match="CommR is not Poseidon2"):
        porep.verify_openings(C1.parse_c1(_dump(c1)).openings[0])


def test_malformed_inputs_are_refused_in_one_line(bare):
    good = {"SectorNum": 3, "Phase1Out": base64.b64encode(bare).decode(), "SectorSize": 2048}
    assert C1.parse_c1(_dump(good)).sector_num == 3
    cases = [
        (b"", r"C1 output: not JSON: Expecting value at line 1 column 1"),
        (b'{"a": ', r"C1 output: not JSON: .*"),
        (b"\xff{}", r"C1 output: not UTF-8 JSON \(byte 0\)"),
        (b"[1, 2]", r"C1 output: expected a JSON object, got a list of 2"),
        # measured before parsing (json's C parser recursion could crash the process past the stack)
        (b"[" * 100000 + b"]" * 100000, r"C1 output: not JSON this reader takes: nested too deeply \(more than 64 levels\)"),
        (b'{"a": ' + b"9" * 5000 + b"}", r"C1 output: not JSON this reader takes: .*"),
        (_dump({**good, "Phase1Out": "not base64!"}), r"Phase1Out: not base64: .*"),
        (_dump({**good, "Phase1Out": base64.b64encode(b"not json").decode()}), r"Phase1Out: not JSON: .*"),
        (_dump({**good, "Phase1Out": base64.b64encode(b"[]").decode()}), r"Phase1Out: expected a JSON object, got a list of 0"),
        (_dump({**good, "Phase1Out": 5}), r"Phase1Out: expected a base64 string, got 5"),
        (_dump({**good, "SectorSize": 4096}), r"SectorSize: 4096, but StackedDrg2KiBV1_1 seals 2048-byte sectors"),
        (_dump({**good, "SectorNum": -1}), r"SectorNum: expected a sector number in \[0, 18446744073709551616\), got -1"),
        (_dump({**good, "SectorNum": "3"}), r"SectorNum: expected a sector number .*got a string"),
        (_dump({k: v for k, v in good.items() if k != "SectorSize"}), r"envelope: missing 'SectorSize'"),
        (_dump({k: v for k, v in json.loads(bare).items() if k != "ticket"}), r"c1: missing 'ticket'"),
        (b"cuzk-cvp", r"C1 output: not JSON: .*"),
        (b'{"a": NaN}', r"C1 output: not JSON this reader takes: NaN is not a JSON number$"),
        (
            _dump({**good, "SectorNum": 4, "SectorNum ": 0})[:-1] + b',"SectorNum":5}',
            r"C1 output: not JSON this reader takes: duplicate key 'SectorNum' in an object$",
        ),
    ]
    for data, pattern in cases:
        msg = _err(data)
        assert re.fullmatch(pattern, msg), (data[:40], msg)
    # errors inside the envelope name Phase1Out as the root
    c1 = json.loads(bare)
    c1["vanilla_proofs"]["StackedDrg2KiBV1"][0][0]["comm_d_proofs"]["data"]["Single"]["path"]["path"][2]["hashes"] = []
    msg = _err(_dump({**good, "Phase1Out": base64.b64encode(_dump(c1)).decode()}))
    assert msg.startswith("Phase1Out.vanilla_proofs.StackedDrg2KiBV1[0][0].comm_d_proofs.data.Single.path.path[2].hashes: ")
    with pytest.raises(C1.C1Error, match="expected bytes"):
        C1.parse_c1("{}")  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------------
# sub / top tree proofs (32 / 64 GiB shapes: no sector of those sizes is sealed in the tests)


@pytest.mark.parametrize(("variant", "arities", "base"), [("Sub", [8, 8, 8], 2), ("Top", [8, 8, 8, 2], 2)])
def test_sub_and_top_merkle_proofs(variant, arities, base):
    levels = [([bytes([lv, j]) + bytes(30) for j in range(a - 1)], (lv * 3) % a) for lv, a in enumerate(arities)]
    m = C1._Merkle(bytes([1]) + bytes(31), bytes([2]) + bytes(31), levels)
    js = C1._merkle_json(m, base, variant)
    body = js["data"][variant]
    parts = ["base_proof", "sub_proof"] + (["top_proof"] if variant == "Top" else [])
    assert list(body) == [*parts, "root", "leaf"]
    assert len(body["base_proof"]["path"]) == base and all(len(body[p]["path"]) == 1 for p in parts[1:])
    back = C1._merkle(json.loads(json.dumps(js)), "x", base, arities, variant, C1._fr)
    assert back == m
    assert back.index(arities) == sum(pos * int(np.prod(arities[:lv])) for lv, (_, pos) in enumerate(levels))
    body["sub_proof"]["path"].append(body["sub_proof"]["path"][0])
    with pytest.raises(C1.C1Error, match=rf"^x\.data\.{variant}\.sub_proof\.path: expected 1 level, got 2$"):
        C1._merkle(js, "x", base, arities, variant, C1._fr)


def test_porep_parse_binary_takes_c1(sealed):
    """PoRep.parse_binary recognizes a C1 JSON: Curio's envelope is the daemon's vanilla proof for PoRep."""
    env = C1.write_c1(sealed, SEED, TICKET, sector_num=SECTOR)
    circuit = porep.PoRep(proof_id=5, challenges=2)
    obj = circuit.parse_binary(env)
    assert obj == C1.partition_openings(env, 0)
    circuit.parse_inputs(obj)
    c1 = json.loads(base64.b64decode(json.loads(env)["Phase1Out"]))
    c1["seed"][0] ^= 1  # other challenges: the reader refuses it, naming the field
    with pytest.raises(
        C1.C1Error, match=r"^c1\.vanilla_proofs\.StackedDrg2KiBV1\[0\]\[0\]\.replica_column_proofs\.c_x\.column\.index: "
    ):
        circuit.parse_binary(_dump(c1))


# ---------------------------------------------------------------------------------------------
# external vector: a 2 KiB sector sealed by lotus 1.4.1 (rust-fil-proofs through filecoin-ffi) on a devnet
#
# Source: liyunpeng/netsecure at 312a1215797bfcfa302774205463b5fc164b0e41, "区块链/lotus搭建.md" (a
# `lotus-miner sectors status --log 1` of miner t01002, 2021-04-07): a committed-capacity sector (its data is
# all zeros: SectorStartCC, one 2048-byte filler piece), SealProof 5, sector 1, with its ticket, seed, CommD
# and CommR CIDs, and the PreCommit1Out lotus logged (filecoin-ffi's serde_json output). The repository has
# no licence, so only these facts are used here (no file is stored). No C1 output is published there or
# anywhere found (curio, lotus, filecoin-ffi, rust-fil-proofs, supraseal were searched), but the C1 output
# is a function of exactly these inputs, so reproducing CommR pins everything the openings are made of.

LOTUS_MINER = 1002  # t01002
LOTUS_SECTOR = 1
LOTUS_TICKET = "w6HKErmBqKWfmkdk7fM5jt0jmyr6jKK71X4AkewZOqA="  # TicketValue (hex c3a1ca12...)
LOTUS_SEED = "Yqnsh5S9uc+YmePh/endPITssoW/7qzn/b9JJLJeuoU="  # SeedValue (hex 62a9ec87...)
LOTUS_COMM_D = "baga6ea4seaqpy7usqklokfx2vxuynmupslkeutzexe2uqurdg5vhtebhxqmpqmy"
LOTUS_COMM_R = "bagboea4b5abcbnym7z3pgc64fk5wwsk3nsmz62jamgaa3pekzelmm3fv5q6g6zji"
LOTUS_PC1_OUT = (
    "eyJyZWdpc3RlcmVkX3Byb29mIjoiU3RhY2tlZERyZzJLaUJWMV8xIiwibGFiZWxzIjp7IlN0YWNrZWREcmcyS2lCVjEiOnsibGFiZWxzIjpbeyJw"
    "YXRoIjoiL2hvbWUvZmlsLy5sb3R1c21pbmVyL2NhY2hlL3MtdDAxMDAyLTEiLCJpZCI6ImxheWVyLTEiLCJzaXplIjo2NCwicm93c190b19kaXNj"
    "YXJkIjo1fSx7InBhdGgiOiIvaG9tZS9maWwvLmxvdHVzbWluZXIvY2FjaGUvcy10MDEwMDItMSIsImlkIjoibGF5ZXItMiIsInNpemUiOjY0LCJy"
    "b3dzX3RvX2Rpc2NhcmQiOjV9XSwiX2giOm51bGx9fSwiY29uZmlnIjp7InBhdGgiOiIvaG9tZS9maWwvLmxvdHVzbWluZXIvY2FjaGUvcy10MDEw"
    "MDItMSIsImlkIjoidHJlZS1kIiwic2l6ZSI6MTI3LCJyb3dzX3RvX2Rpc2NhcmQiOjV9LCJjb21tX2QiOlsyNTIsMTI2LDE0NiwxMzAsMTUwLDIy"
    "OSwyMiwyNTAsMTczLDIzMywxMzQsMTc4LDE0MywxNDYsMjEyLDc0LDc5LDM2LDE4NSw1Myw3Miw4MiwzNSw1NSwxMDYsMTIxLDE0NCwzOSwxODgs"
    "MjQsMjQ4LDUxXX0="
)


def test_external_lotus_2kib_sector_commr_and_c1():
    from cuzk.filecoin import cid

    prover = P.prover_id(LOTUS_MINER)  # the id's LEB128, left-aligned: pinned by the CommR below
    assert prover[:2] == b"\xea\x07"
    ticket, seed = base64.b64decode(LOTUS_TICKET), base64.b64decode(LOTUS_SEED)
    sealed = seal(np.zeros((64, 32), np.uint8), 5, prover, LOTUS_SECTOR, ticket)
    # CommD (the zero 2 KiB piece) and CommR exactly as lotus put them on chain: replica id, SDR labels over
    # the V1_1 graph, tree_c over the columns, the encoding, tree_r_last and CommR all match Filecoin's
    assert sealed.comm_d == cid.piece_commitment_from_cid(LOTUS_COMM_D)
    assert sealed.comm_r_bytes() == cid.sealed_commitment_from_cid(LOTUS_COMM_R)
    # filecoin-ffi's own serde_json (the PreCommit1Out): compact, the sector size's V1 variant as the enum
    # key, a PhantomData field as "_h":null (as in Column), 32-byte values as arrays of integers
    pc1 = base64.b64decode(LOTUS_PC1_OUT)
    assert pc1.startswith(b'{"registered_proof":"StackedDrg2KiBV1_1","labels":{"StackedDrg2KiBV1":{"labels":[{')
    assert b'"_h":null' in pc1 and b" " not in pc1
    assert bytes(json.loads(pc1)["comm_d"]) == sealed.comm_d
    # the C1 output lotus's commit phase 1 made from these inputs (its SNARK proof is in the log; checking it
    # needs Filecoin's 2 KiB verifying key, which no code repository carries)
    env = C1.write_c1(sealed, seed, ticket, sector_num=LOTUS_SECTOR, prover_id=prover, sector_id=LOTUS_SECTOR)
    out = C1.parse_c1(env)
    assert out.comm_r == sealed.comm_r_bytes() and out.seed == seed and out.sector_num == 1
    (op,) = out.openings
    assert [c["index"] for c in op["challenges"]] == V.interactive_challenges(64, sealed.replica_id, seed, 0, 2) == [48, 12]
    porep.verify_openings(op)
    # a regression pin on the exact bytes written (our output, not an external value)
    assert hashlib.sha256(base64.b64decode(json.loads(env)["Phase1Out"])).hexdigest() == (
        "44e62d06ee9ee504243b3dd35f97ff75875fb7f3b134a61b0a855b21cbd008ac"
    )


def test_32gib_shape_partition():
    """A 32 GiB-shaped partition (Sub tree proofs: 9 octree levels and an arity-8 sub level, tree_d depth
    30, 11 layers, 18 challenges) read through the same checks; zero labels keep it cheap to make. Its
    Merkle paths are not real, so only the reader is exercised (verify_openings would refuse it)."""
    from cuzk.circuit.poseidon import poseidon_hash
    from cuzk.filecoin.graph import StackedGraph

    pid, layers, nodes = 8, 11, 1 << 30
    nodes_, layers_, kb, arities, variant = C1._shape(pid)
    assert (nodes_, layers_, kb, arities, variant) == (nodes, layers, 9, [8] * 10, "Sub")
    rid, seed = bytes(range(31)) + b"\x01", bytes(range(1, 33))
    comm_r, comm_d = (5).to_bytes(32, "little"), (7).to_bytes(32, "little")
    comm_c, comm_r_last = (11).to_bytes(32, "little"), (13).to_bytes(32, "little")
    zero = bytes(32)
    leaf = poseidon_hash([0] * layers, layers).to_bytes(32, "little")
    graph = StackedGraph.for_proof(pid)

    def levels(node: int, ar: list[int]) -> list:
        out = []
        for a in ar:
            out.append(([(node % 251).to_bytes(32, "little")] * (a - 1), node % a))
            node //= a
        return out

    def column(node: int) -> dict:
        m = C1._Merkle(comm_c, leaf, levels(node, arities))
        return {
            "column": {"index": node, "rows": [list(zero)] * layers, "_h": None},
            "inclusion_proof": C1._merkle_json(m, kb, variant),
        }

    chals = V.interactive_challenges(nodes, rid, seed, 3, 18)
    proofs = []
    for i in chals:
        ps = graph.parents(i)
        labs = [{"parents": [list(zero)] * 37, "layer_index": layer, "node": i} for layer in range(1, layers + 1)]
        proofs.append(
            {
                "comm_d_proofs": C1._merkle_json(C1._Merkle(comm_d, zero, levels(i, [2] * 30)), 30, "Single"),
                "comm_r_last_proof": C1._merkle_json(C1._Merkle(comm_r_last, zero, levels(i, arities)), kb, variant),
                "replica_column_proofs": {
                    "c_x": column(i),
                    "drg_parents": [column(p) for p in ps[:6]],
                    "exp_parents": [column(p) for p in ps[6:]],
                },
                "labeling_proofs": labs,
                "encoding_proof": labs[-1],
            }
        )
    hdr = C1.C1Output("StackedDrg32GiBV1_1", pid, 32 << 30, comm_r, comm_d, rid, seed, zero, 10, 18)
    plist = [[]] * 3 + [proofs]
    op = C1._convert_partition(hdr, plist, 3, "c1.vanilla_proofs.StackedDrg32GiBV1")
    assert [c["index"] for c in op["challenges"]] == chals and op["comm_c"] == "11" and op["comm_r_last"] == "13"
    ch = op["challenges"][0]
    assert len(ch["data_path"]) == 30 and len(ch["replica_path"]) == 10 and len(ch["parent_paths"][13]) == 10
    assert all(len(sib) == 7 for sib, _ in ch["column_path"]) and len(ch["column"]) == 11
    body = proofs[0]["comm_r_last_proof"]["data"]["Sub"]
    assert len(body["base_proof"]["path"]) == 9 and len(body["sub_proof"]["path"]) == 1
    body["sub_proof"]["path"][0]["index"] = (body["sub_proof"]["path"][0]["index"] + 1) % 8
    with pytest.raises(
        C1.C1Error, match=r"\[3\]\[0\]\.comm_r_last_proof: its path leads to node \d+, the challenge is node \d+$"
    ):
        C1._convert_partition(hdr, plist, 3, "c1.vanilla_proofs.StackedDrg32GiBV1")
