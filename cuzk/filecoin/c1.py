"""Filecoin's commit-phase-1 output (``C1``): the PoRep vanilla proof as Curio, lotus and filecoin-ffi hand
it over, read into the openings :class:`.porep.PoRep` proves, and written from a sector we sealed.

Sources (read for facts, nothing copied): filecoin-project/rust-filecoin-proofs-api 0e64ce8 ``src/seal.rs``
(``SealCommitPhase1Output``, ``VanillaSealProof``), filecoin-project/rust-fil-proofs 87348a7
(storage-proofs-porep ``stacked/vanilla/{params,proof,column,column_proof,labeling_proof,encoding_proof,
challenges}.rs``, storage-proofs-core ``merkle/proof.rs``, filecoin-hashers ``poseidon.rs`` / ``sha256.rs``,
filecoin-proofs ``api/seal.rs``), filecoin-project/curio e0294b0f (``lib/proof/porep_vproof_types.go``,
``lib/proof/merkle.go``: the Go mirror of the same JSON; ``lib/ffi/cuzk_funcs.go``: the envelope).

Layout (serde_json of the Rust types; every object's keys in this order, compact, no spaces)::

    envelope (Curio's PoRep request ``vanilla_proof``; lotus-bench's commit2 input; Go's json.Marshal):
      {"SectorNum": u64, "Phase1Out": base64 (standard alphabet, padded) of the C1 JSON, "SectorSize": u64}

    C1 (rust-filecoin-proofs-api SealCommitPhase1Output):
      {"registered_proof": name,            e.g. "StackedDrg2KiBV1_1" (RegisteredSealProof variant: id 5)
       "vanilla_proofs": {SIZE: [[Proof]]}, one key, the sector size's V1 variant name ("StackedDrg2KiBV1",
                                            "StackedDrg32GiBV1", ... for every proof version of that size);
                                            per partition, per challenge, a Proof
       "comm_r": B32, "comm_d": B32, "replica_id": B32, "seed": B32, "ticket": B32}

    B32 = a JSON array of 32 integers 0..255 (a Poseidon domain: a BLS12-381 scalar, little-endian,
          canonical; a SHA-256 domain: 32 bytes, read little-endian below 2^254 in tree_d)

    Proof (storage-proofs-porep stacked::Proof, one challenged node):
      {"comm_d_proofs":      MerkleProof over tree_d (SHA-256, arity 2): leaf = the data node, root = CommD
       "comm_r_last_proof":  MerkleProof over tree_r_last (Poseidon): leaf = the replica node, root = CommR_last
       "replica_column_proofs": {"c_x": ColumnProof,               the challenged node's column
                                 "drg_parents": [ColumnProof x 6], its base parents' columns
                                 "exp_parents": [ColumnProof x 8]},its expander parents' columns
       "labeling_proofs": [LabelingProof x layers],  layer 1 first
       "encoding_proof": LabelingProof}              the last layer's labeling proof again (the key)

    ColumnProof:   {"column": {"index": u32 node, "rows": [B32 x layers] (its label in each layer), "_h": null},
                    "inclusion_proof": MerkleProof over tree_c (Poseidon): leaf = Poseidon(rows), root = CommC}
    LabelingProof: {"parents": [B32 x 37], "layer_index": u32 (from 1), "node": u64}; parents = the 37 parent
                    labels the label hashes (layer 1: base parent k mod 6 of the layer; later layers: parent
                    k mod 14, base parents from the layer, expander parents from the layer before)
    MerkleProof:   {"data": {"Single": {"root": B32, "leaf": B32, "path": Path}}}        base-only trees
                   {"data": {"Sub": {"base_proof": Path, "sub_proof": Path, "root", "leaf"}}}   sub trees
                   {"data": {"Top": {"base_proof", "sub_proof", "top_proof", "root", "leaf"}}}  top trees
    Path:          {"path": [{"hashes": [B32 x (arity - 1)], "index": position among the siblings}, ...]}
                   leaf to root; the sub / top paths have one element each

Tree shapes follow the registered proof (:mod:`.params`): tree_d is Single with log2(nodes) levels; tree_c
and tree_r_last are Single (2 KiB, 8 MiB, 512 MiB: octrees), Sub (32 GiB: 8 octrees under an arity-8 level)
or Top (64 GiB: then an arity-2 level). Counts: every registered proof fixes its partitions and challenges per
partition (interactive and synthetic PoRep: 1 x 2 for the test sizes, 10 x 18 for 32/64 GiB; NI-PoRep:
13 x 2 / 126 x 18); the reader checks each list's length against them before it reads the list.

What the reader checks (one-line :class:`C1Error` naming the JSON path and what was expected): every type,
length, byte and range above; every redundant field against the one it repeats (each Merkle root against
CommD / CommC / CommR_last, each path's positions against the node, each column's index, its inclusion
leaf against Poseidon(rows), each labeling proof's node, layer and parents against the parents' columns,
the encoding proof against the last labeling proof); the challenges against their derivation (interactive:
from the replica id and the seed; synthetic: the synthetic set, selected by the seed; NI-PoRep: from the
replica id and CommR). It does not
re-hash the trees or the labels: :func:`.porep.verify_openings` does that on the openings. As serde does,
unknown keys are ignored; unlike Python's json module (and like serde_json) NaN / Infinity and duplicate
keys are refused.

The openings (one dict per partition) are the JSON view :meth:`.porep.PoRep.parse_inputs` takes (the keys of
:func:`.porep.challenge_openings`, plus ``partition`` and ``seed``).
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass, field
from typing import Any

from ..json_limits import MAX_DEPTH, max_nesting
from . import FilecoinError
from . import params as P

# scalar field of BLS12-381 (filecoin-hashers PoseidonDomain is its little-endian canonical repr)
R = 0x73EDA753299D7D483339D80809A1D80553BDA402FFFE5BFEFFFFFFFF00000001
LABEL_PARENTS = 37  # rust-fil-proofs TOTAL_PARENTS
MAX_C1_BYTES = 256 << 20  # the original daemon accepts 128 MiB messages; a 32 GiB C1 is ~51 MB (~68 MB enveloped)

SIZE_NAMES = {2 * P.KIB: "2KiB", 8 * P.MIB: "8MiB", 512 * P.MIB: "512MiB", 32 * P.GIB: "32GiB", 64 * P.GIB: "64GiB"}
_VARIANT_SUFFIX = {
    "V1": "V1",
    "V1_1": "V1_1",
    "V1_1_Synth": "V1_1_Feat_SyntheticPoRep",
    "V1_2_NI": "V1_2_Feat_NonInteractivePoRep",
}
# rust-filecoin-proofs-api RegisteredSealProof variant names -> Filecoin's RegisteredSealProof numbers
REGISTERED_SEAL_PROOFS: dict[str, int] = {
    f"StackedDrg{SIZE_NAMES[size]}{suffix}": P.PARAMS[size].seal_proof_ids[key]
    for size in P.SECTOR_SIZES
    for key, suffix in _VARIANT_SUFFIX.items()
}
_PROOF_NAMES = {v: k for k, v in REGISTERED_SEAL_PROOFS.items()}


class C1Error(FilecoinError):
    """A commit-phase-1 output (or its envelope) that is malformed or inconsistent; one line naming the
    JSON path of the field and what was expected."""


def proof_name(proof_id: int) -> str:
    """The RegisteredSealProof variant name of a registered seal proof id (5 -> "StackedDrg2KiBV1_1")."""
    try:
        return _PROOF_NAMES[proof_id]
    except (KeyError, TypeError):
        raise C1Error(f"registered seal proof {proof_id!r}: not a registered seal proof id (0-19)") from None


def proof_id_of(name: str) -> int:
    """The registered seal proof id of a variant name ("StackedDrg32GiBV1_1" -> 8)."""
    try:
        return REGISTERED_SEAL_PROOFS[name]
    except (KeyError, TypeError):
        raise C1Error(f"registered proof {name!r}: not a RegisteredSealProof name") from None


def vanilla_variant(proof_id: int) -> str:
    """The ``vanilla_proofs`` key of a proof id: the sector size's V1 variant for every version."""
    return f"StackedDrg{SIZE_NAMES[P.sector_size_of(proof_id)]}V1"


def _kind(proof_id: int) -> str:
    if proof_id >= 15:
        return "ni"
    return "synth" if proof_id >= 10 else "interactive"


def counts(proof_id: int) -> tuple[int, int]:
    """(partitions, challenges per partition) of a registered seal proof's vanilla proofs."""
    sp = P.PARAMS[P.sector_size_of(proof_id)]
    if _kind(proof_id) == "ni":
        return sp.ni_porep_partitions, sp.ni_porep_challenges_per_partition
    return sp.porep_partitions, sp.porep_challenges_per_partition


def _shape(proof_id: int) -> tuple[int, int, int, list[int], str]:
    """(nodes, layers, base levels, tree_c / tree_r_last level arities, MerkleProof variant)."""
    sp = P.PARAMS[P.sector_size_of(proof_id)]
    base, sub, top = sp.tree_arities
    per_base = sp.nodes // (max(sub, 1) * max(top, 1))
    k = 0
    while base**k < per_base:
        k += 1
    arities = [base] * k + [a for a in (sub, top) if a]
    variant = "Top" if top else ("Sub" if sub else "Single")
    return sp.nodes, sp.layers, k, arities, variant


def _expected_challenges(proof_id: int, nodes: int, replica_id: bytes, comm_r: bytes, seed: bytes, k: int, n: int):
    from . import vanilla as V

    kind = _kind(proof_id)
    if kind == "interactive":
        return V.interactive_challenges(nodes, replica_id, seed, k, n)
    if kind == "synth":
        return V.synthetic_partition_challenges(nodes, replica_id, comm_r, seed, k, n)
    return ni_challenges(nodes, replica_id, comm_r, k, n)


NI_TAG = b"filecoin.io|PoRep|1|NonInteractive|1"


def ni_challenges(nodes: int, replica_id: bytes, comm_r: bytes, k: int, count: int) -> list[int]:
    """Partition ``k``'s challenges of a non-interactive PoRep (rust-fil-proofs ``NiChallenges::derive``):
    challenge j = count * k + i is SHA-256(tag || replica_id || comm_r || j as u32 little-endian), read
    little-endian, mod (nodes - 1), plus 1. No published vector; the seed plays no part."""
    import hashlib
    import struct

    head = NI_TAG + bytes(replica_id) + bytes(comm_r)
    out = []
    for i in range(count):
        h = hashlib.sha256(head + struct.pack("<I", count * k + i)).digest()
        out.append(int.from_bytes(h, "little") % (nodes - 1) + 1)
    return out


# ---------------------------------------------------------------------------------------------
# field readers (each raises C1Error naming the path)


def _what(x: Any) -> str:
    if x is None:
        return "null"
    if isinstance(x, bool):
        return "a boolean"
    if isinstance(x, list):
        return f"a list of {len(x)}"
    if isinstance(x, dict):
        return "an object"
    if isinstance(x, str):
        return "a string"
    if isinstance(x, float):
        return "a number with a fraction"
    return repr(x) if isinstance(x, int) else type(x).__name__


def _obj(x: Any, where: str, keys: tuple[str, ...]) -> dict:
    if not isinstance(x, dict):
        raise C1Error(f"{where}: expected an object, got {_what(x)}")
    for k in keys:
        if k not in x:
            raise C1Error(f"{where}: missing {k!r}")
    return x


def _list(x: Any, where: str, n: int | None = None, noun: str = "element") -> list:
    if not isinstance(x, list):
        raise C1Error(f"{where}: expected a list, got {_what(x)}")
    if n is not None and len(x) != n:
        raise C1Error(f"{where}: expected {n} {noun}{'' if n == 1 else 's'}, got {len(x)}")
    return x


def _uint(x: Any, where: str, hi: int, what: str = "an integer") -> int:
    if isinstance(x, bool) or not isinstance(x, int) or not 0 <= x < hi:
        raise C1Error(f"{where}: expected {what} in [0, {hi}), got {_what(x)}")
    return x


def _b32(x: Any, where: str) -> bytes:
    if not isinstance(x, list) or len(x) != 32:
        raise C1Error(f"{where}: expected 32 bytes (a list of 32 integers 0-255), got {_what(x)}")
    for j, v in enumerate(x):
        if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= 255:
            raise C1Error(f"{where}[{j}]: expected a byte (an integer 0-255), got {_what(v)}")
    return bytes(x)


def _fr(x: Any, where: str) -> bytes:
    """A Poseidon domain: 32 bytes, a canonical BLS12-381 scalar (little-endian)."""
    b = _b32(x, where)
    if int.from_bytes(b, "little") >= R:
        raise C1Error(f"{where}: not a canonical field element (at least the BLS12-381 scalar modulus)")
    return b


def _n254(x: Any, where: str) -> bytes:
    """32 bytes read little-endian below 2^254 (a tree_d node, a label, the replica id)."""
    b = _b32(x, where)
    if b[31] & 0xC0:
        raise C1Error(f"{where}: above 2^254 (its last byte has its top two bits set)")
    return b


def _int(b: bytes) -> str:
    return str(int.from_bytes(b, "little"))


# ---------------------------------------------------------------------------------------------
# Merkle proofs


@dataclass
class _Merkle:
    root: bytes
    leaf: bytes
    levels: list[tuple[list[bytes], int]]  # per level leaf to root: (siblings, position)

    def index(self, arities: list[int]) -> int:
        idx, mul = 0, 1
        for (_, pos), a in zip(self.levels, arities, strict=True):
            idx += pos * mul
            mul *= a
        return idx


def _path(x: Any, where: str, arities: list[int], read) -> list[tuple[list[bytes], int]]:
    elems = _list(_obj(x, where, ("path",))["path"], f"{where}.path", len(arities), "level")
    out = []
    for lv, (e, a) in enumerate(zip(elems, arities, strict=True)):
        w = f"{where}.path[{lv}]"
        _obj(e, w, ("hashes", "index"))
        hs = _list(e["hashes"], f"{w}.hashes", a - 1, "hash")
        sib = [read(h, f"{w}.hashes[{j}]") for j, h in enumerate(hs)]
        out.append((sib, _uint(e["index"], f"{w}.index", a, "a position")))
    return out


def _merkle(x: Any, where: str, base_levels: int, arities: list[int], variant: str, read) -> _Merkle:
    data = _obj(_obj(x, where, ("data",))["data"], f"{where}.data", ())
    if len(data) != 1 or variant not in data:
        got = ", ".join(repr(k) for k in data) or "none"
        raise C1Error(f"{where}.data: expected the {variant!r} variant for this tree's shape, got {got}")
    w = f"{where}.data.{variant}"
    if variant == "Single":
        d = _obj(data[variant], w, ("root", "leaf", "path"))
        levels = _path(d["path"], f"{w}.path", arities, read)
    else:
        parts = ("base_proof", "sub_proof") + (("top_proof",) if variant == "Top" else ())
        d = _obj(data[variant], w, (*parts, "root", "leaf"))
        levels = _path(d["base_proof"], f"{w}.base_proof", arities[:base_levels], read)
        for j, name in enumerate(parts[1:]):
            levels += _path(d[name], f"{w}.{name}", arities[base_levels + j : base_levels + j + 1], read)
    return _Merkle(read(d["root"], f"{w}.root"), read(d["leaf"], f"{w}.leaf"), levels)


def _merkle_json(m: _Merkle, base_levels: int, variant: str) -> dict:
    def path(levels: list) -> dict:
        return {"path": [{"hashes": [list(h) for h in sib], "index": pos} for sib, pos in levels]}

    if variant == "Single":
        body = {"root": list(m.root), "leaf": list(m.leaf), "path": path(m.levels)}
    else:
        body = {"base_proof": path(m.levels[:base_levels]), "sub_proof": path(m.levels[base_levels : base_levels + 1])}
        if variant == "Top":
            body["top_proof"] = path(m.levels[base_levels + 1 : base_levels + 2])
        body["root"], body["leaf"] = list(m.root), list(m.leaf)
    return {"data": {variant: body}}


# ---------------------------------------------------------------------------------------------
# the parsed output


@dataclass
class C1Output:
    """A parsed commit-phase-1 output. ``openings[k]`` is partition k's openings dict (None for partitions
    :func:`partition_openings` did not convert)."""

    registered_proof: str
    proof_id: int
    sector_size: int
    comm_r: bytes
    comm_d: bytes
    replica_id: bytes
    seed: bytes
    ticket: bytes
    partitions: int
    challenges_per_partition: int
    sector_num: int | None = None  # from the envelope
    openings: list[dict | None] = field(default_factory=list)


class _Refused(ValueError):
    pass


def _no_constant(name: str) -> Any:
    raise _Refused(f"{name} is not a JSON number")


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict:
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        dup = next(k for k, _ in pairs if k in seen or seen.add(k))  # type: ignore[func-returns-value]
        raise _Refused(f"duplicate key {dup[:40]!r} in an object")
    return out


def _load_json(data: bytes, where: str) -> Any:
    """Strict JSON as serde_json reads it: UTF-8, no NaN / Infinity, no duplicate keys in an object."""
    try:
        text = bytes(data).decode("utf-8")
    except UnicodeDecodeError as e:
        raise C1Error(f"{where}: not UTF-8 JSON (byte {e.start})") from None
    if max_nesting(data) > MAX_DEPTH:  # measured first: the C parser's recursion can crash the process
        raise C1Error(f"{where}: not JSON this reader takes: nested too deeply (more than {MAX_DEPTH} levels)")
    try:
        return json.loads(text, parse_constant=_no_constant, object_pairs_hook=_unique_keys)
    except _Refused as e:
        raise C1Error(f"{where}: not JSON this reader takes: {e}") from None
    except json.JSONDecodeError as e:
        raise C1Error(f"{where}: not JSON: {e.msg} at line {e.lineno} column {e.colno}") from None
    except RecursionError:
        raise C1Error(f"{where}: not JSON this reader takes: nested too deeply") from None
    except ValueError as e:  # e.g. an integer of too many digits
        raise C1Error(f"{where}: not JSON this reader takes: {e}") from None


def _open(data: bytes) -> tuple[dict, str, int | None, int | None]:
    """(the C1 object, its path name, SectorNum, SectorSize) of an envelope or a bare C1 output."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise C1Error(f"C1 output: expected bytes, got {type(data).__name__}")
    if len(data) > MAX_C1_BYTES:
        raise C1Error(f"C1 output: {len(data)} bytes, more than the {MAX_C1_BYTES} this reader takes")
    obj = _load_json(data, "C1 output")
    if not isinstance(obj, dict):
        raise C1Error(f"C1 output: expected a JSON object, got {_what(obj)}")
    if "Phase1Out" not in obj:
        return obj, "c1", None, None
    env = _obj(obj, "envelope", ("SectorNum", "Phase1Out", "SectorSize"))
    num = _uint(env["SectorNum"], "SectorNum", 1 << 64, "a sector number")
    size = _uint(env["SectorSize"], "SectorSize", 1 << 64, "a sector size")
    b64 = env["Phase1Out"]
    if not isinstance(b64, str):
        raise C1Error(f"Phase1Out: expected a base64 string, got {_what(b64)}")
    try:
        raw = base64.b64decode(b64, validate=True)
    except (binascii.Error, ValueError) as e:
        raise C1Error(f"Phase1Out: not base64: {e}") from None
    inner = _load_json(raw, "Phase1Out")
    if not isinstance(inner, dict):
        raise C1Error(f"Phase1Out: expected a JSON object, got {_what(inner)}")
    return inner, "Phase1Out", num, size


def _header(data: bytes) -> tuple[C1Output, list, str]:
    """The checked top-level fields, the per-partition list of vanilla proofs and its path."""
    c1, root, num, env_size = _open(data)
    _obj(c1, root, ("registered_proof", "vanilla_proofs", "comm_r", "comm_d", "replica_id", "seed", "ticket"))
    name = c1["registered_proof"]
    if not isinstance(name, str):
        raise C1Error(f"{root}.registered_proof: expected a RegisteredSealProof name, got {_what(name)}")
    if name not in REGISTERED_SEAL_PROOFS:
        raise C1Error(f"{root}.registered_proof: {name[:80]!r} is not a RegisteredSealProof name")
    pid = REGISTERED_SEAL_PROOFS[name]
    size = P.sector_size_of(pid)
    if env_size is not None and env_size != size:
        raise C1Error(f"SectorSize: {env_size}, but {name} seals {size}-byte sectors")
    parts, chals = counts(pid)
    comm_r = _fr(c1["comm_r"], f"{root}.comm_r")
    comm_d = _n254(c1["comm_d"], f"{root}.comm_d")
    for k, v in (("comm_r", comm_r), ("comm_d", comm_d)):
        if v == bytes(32):
            raise C1Error(f"{root}.{k}: all zero (an invalid commitment)")
    seed = _b32(c1["seed"], f"{root}.seed")
    if seed == bytes(32):
        raise C1Error(f"{root}.seed: all zero (an invalid PoRep challenge seed)")
    out = C1Output(
        registered_proof=name,
        proof_id=pid,
        sector_size=size,
        comm_r=comm_r,
        comm_d=comm_d,
        replica_id=_n254(c1["replica_id"], f"{root}.replica_id"),
        seed=seed,
        ticket=_b32(c1["ticket"], f"{root}.ticket"),
        partitions=parts,
        challenges_per_partition=chals,
        sector_num=num,
    )
    variant = vanilla_variant(pid)
    vp = _obj(c1["vanilla_proofs"], f"{root}.vanilla_proofs", ())
    if len(vp) != 1 or variant not in vp:
        got = ", ".join(repr(k[:40]) for k in vp) or "none"
        raise C1Error(f"{root}.vanilla_proofs: expected the one key {variant!r} ({name}), got {got}")
    where = f"{root}.vanilla_proofs.{variant}"
    plist = _list(vp[variant], where, parts, "partition")
    for k, p in enumerate(plist):
        _list(p, f"{where}[{k}]", chals, "challenge")
    out.openings = [None] * len(plist)
    return out, plist, where


def _column(x: Any, where: str, layers: int, base_levels: int, arities: list[int], variant: str):
    """A ColumnProof -> (index, rows, inclusion proof)."""
    _obj(x, where, ("column", "inclusion_proof"))
    col = _obj(x["column"], f"{where}.column", ("index", "rows"))
    if col.get("_h", None) is not None:
        raise C1Error(f"{where}.column._h: expected null, got {_what(col['_h'])}")
    idx = _uint(col["index"], f"{where}.column.index", 1 << 32, "a node index (u32)")
    rows = [
        _n254(r, f"{where}.column.rows[{j}]") for j, r in enumerate(_list(col["rows"], f"{where}.column.rows", layers, "row"))
    ]
    m = _merkle(x["inclusion_proof"], f"{where}.inclusion_proof", base_levels, arities, variant, _fr)
    return idx, rows, m


def _convert_partition(hdr: C1Output, plist: list, k: int, where: str) -> dict:
    """Partition k's Proofs, checked, as the openings dict of :func:`.porep.challenge_openings`."""
    from ..circuit.poseidon import poseidon_hash
    from .graph import StackedGraph

    pid = hdr.proof_id
    nodes, layers, kb, arities, variant = _shape(pid)
    depth_d = nodes.bit_length() - 1
    bin_arities = [2] * depth_d
    expected = _expected_challenges(pid, nodes, hdr.replica_id, hdr.comm_r, hdr.seed, k, hdr.challenges_per_partition)
    graph = StackedGraph.for_proof(pid)
    G, E = P.DRG_DEGREE, P.EXP_DEGREE
    comm_c = comm_r_last = None
    out = []
    for c, proof in enumerate(plist[k]):
        w = f"{where}[{k}][{c}]"
        _obj(proof, w, ("comm_d_proofs", "comm_r_last_proof", "replica_column_proofs", "labeling_proofs", "encoding_proof"))
        rcp = _obj(proof["replica_column_proofs"], f"{w}.replica_column_proofs", ("c_x", "drg_parents", "exp_parents"))
        wr = f"{w}.replica_column_proofs"
        i, column, cm = _column(rcp["c_x"], f"{wr}.c_x", layers, kb, arities, variant)
        if not 0 < i < nodes:
            raise C1Error(f"{wr}.c_x.column.index: node {i} cannot be challenged in a {nodes}-node sector")
        if i != expected[c]:
            raise C1Error(
                f"{wr}.c_x.column.index: node {i}, but challenge {c} of partition {k} is node {expected[c]} "
                f"(derived as {_kind(pid)} PoRep challenges)"
            )
        # tree_d
        dm = _merkle(proof["comm_d_proofs"], f"{w}.comm_d_proofs", depth_d, bin_arities, "Single", _n254)
        if dm.root != hdr.comm_d:
            raise C1Error(f"{w}.comm_d_proofs.data.Single.root: not comm_d")
        if dm.index(bin_arities) != i:
            raise C1Error(f"{w}.comm_d_proofs: its path leads to node {dm.index(bin_arities)}, the challenge is node {i}")
        # tree_r_last
        rm = _merkle(proof["comm_r_last_proof"], f"{w}.comm_r_last_proof", kb, arities, variant, _fr)
        if comm_r_last is None:
            comm_r_last = rm.root
        elif rm.root != comm_r_last:
            raise C1Error(f"{w}.comm_r_last_proof.data.{variant}.root: differs from challenge 0's (CommR_last)")
        if rm.index(arities) != i:
            raise C1Error(f"{w}.comm_r_last_proof: its path leads to node {rm.index(arities)}, the challenge is node {i}")
        # tree_c: the challenge's column and its 14 parents'
        drg = _list(rcp["drg_parents"], f"{wr}.drg_parents", G, "column proof")
        exp = _list(rcp["exp_parents"], f"{wr}.exp_parents", E, "column proof")
        cols = [(f"{wr}.c_x", i, column, cm)]
        cols += [
            (f"{wr}.drg_parents[{j}]", *_column(x, f"{wr}.drg_parents[{j}]", layers, kb, arities, variant))
            for j, x in enumerate(drg)
        ]
        cols += [
            (f"{wr}.exp_parents[{j}]", *_column(x, f"{wr}.exp_parents[{j}]", layers, kb, arities, variant))
            for j, x in enumerate(exp)
        ]
        parents = [p for _, p, _, _ in cols[1:]]
        want = graph.parents(i)
        for j, (wc, p, rows, m) in enumerate(cols):
            if comm_c is None:
                comm_c = m.root
            elif m.root != comm_c:
                raise C1Error(f"{wc}.inclusion_proof.data.{variant}.root: differs from the c_x root of challenge 0 (CommC)")
            if j and p != want[j - 1]:
                raise C1Error(f"{wc}.column.index: node {p}, but parent {j - 1} of node {i} is node {want[j - 1]}")
            if m.index(arities) != p:
                raise C1Error(f"{wc}.inclusion_proof: its path leads to node {m.index(arities)}, the column is node {p}")
            h = poseidon_hash([int.from_bytes(r, "little") for r in rows], layers)
            if int.from_bytes(m.leaf, "little") != h:
                raise C1Error(f"{wc}.inclusion_proof.data.{variant}.leaf: not the Poseidon hash of the column's rows")
        # labeling proofs: the 37 parent labels are the parents' column rows
        pcols = [rows for _, _, rows, _ in cols[1:]]
        labs = _list(proof["labeling_proofs"], f"{w}.labeling_proofs", layers, "labeling proof")
        for layer in range(1, layers + 1):
            _check_labeling(labs[layer - 1], f"{w}.labeling_proofs[{layer - 1}]", layer, i, pcols)
        _check_labeling(proof["encoding_proof"], f"{w}.encoding_proof", layers, i, pcols)

        def ppath(m: _Merkle) -> list:
            return [[[_int(s) for s in sib], pos] for sib, pos in m.levels]

        out.append(
            {
                "index": i,
                "data_leaf": dm.leaf.hex(),
                "data_path": [sib[0].hex() for sib, _ in dm.levels],
                "replica_leaf": _int(rm.leaf),
                "replica_path": ppath(rm),
                "column": [_int(r) for r in column],
                "column_path": ppath(cm),
                "parents": parents,
                "parent_columns": [[_int(r) for r in rows] for rows in pcols],
                "parent_paths": [ppath(m) for _, _, _, m in cols[1:]],
            }
        )
    assert comm_c is not None and comm_r_last is not None
    return {
        "proof_id": pid,
        "partition": k,
        "seed": hdr.seed.hex(),
        "replica_id": hdr.replica_id.hex(),
        "comm_d": hdr.comm_d.hex(),
        "comm_c": _int(comm_c),
        "comm_r_last": _int(comm_r_last),
        "comm_r": _int(hdr.comm_r),
        "challenges": out,
    }


def _label_parents(layer: int, pcols: list[list[bytes]]) -> list[bytes]:
    """The 37 parent labels the label of a node in ``layer`` hashes (from its 14 parents' columns)."""
    deg = P.DEGREE if layer > 1 else P.DRG_DEGREE
    out = []
    for k in range(LABEL_PARENTS):
        slot = k % deg
        out.append(pcols[slot][layer - 1] if slot < P.DRG_DEGREE else pcols[slot][layer - 2])
    return out


def _check_labeling(x: Any, where: str, layer: int, node: int, pcols: list[list[bytes]]) -> None:
    _obj(x, where, ("parents", "layer_index", "node"))
    got_layer = _uint(x["layer_index"], f"{where}.layer_index", 1 << 32, "a layer (u32)")
    if got_layer != layer:
        raise C1Error(f"{where}.layer_index: {got_layer}, expected layer {layer}")
    got_node = _uint(x["node"], f"{where}.node", 1 << 64, "a node (u64)")
    if got_node != node:
        raise C1Error(f"{where}.node: {got_node}, the challenge is node {node}")
    ps = _list(x["parents"], f"{where}.parents", LABEL_PARENTS, "parent label")
    want = _label_parents(layer, pcols)
    for j, (p, lab) in enumerate(zip(ps, want, strict=True)):
        if _n254(p, f"{where}.parents[{j}]") != lab:
            slot = j % (P.DEGREE if layer > 1 else P.DRG_DEGREE)
            src = layer if slot < P.DRG_DEGREE else layer - 1
            raise C1Error(f"{where}.parents[{j}]: not parent {slot}'s label in layer {src} (its column proof's row)")


# ---------------------------------------------------------------------------------------------
# public API


def parse_c1(data: bytes) -> C1Output:
    """A commit-phase-1 output (Curio's envelope or the bare C1 JSON), every field checked, every
    partition converted to the openings :meth:`.porep.PoRep.parse_inputs` takes (``.openings``)."""
    hdr, plist, where = _header(data)
    hdr.openings = [_convert_partition(hdr, plist, k, where) for k in range(len(plist))]
    return hdr


def partition_openings(data: bytes, partition: int) -> dict:
    """Partition ``partition``'s openings of a commit-phase-1 output (envelope or bare): the top-level
    fields and that partition are checked and converted (the others only counted)."""
    hdr, plist, where = _header(data)
    if isinstance(partition, bool) or not isinstance(partition, int) or not 0 <= partition < len(plist):
        raise C1Error(f"partition {partition!r}: the C1 output has partitions 0 to {len(plist) - 1}")
    return _convert_partition(hdr, plist, partition, where)


def is_c1(data: bytes) -> bool:
    """Whether ``data`` looks like a C1 JSON (envelope or bare): its first non-space byte is ``{``."""
    return bytes(data[:4096]).lstrip()[:1] == b"{"


def write_c1(
    sealed: Any,
    seed: bytes,
    ticket: bytes,
    *,
    sector_num: int | None = None,
    prover_id: bytes | None = None,
    sector_id: int | None = None,
) -> bytes:
    """The commit-phase-1 output of a sector we sealed (:class:`.seal.SealedSector`), exactly as
    rust-filecoin-proofs-api serializes it: compact serde_json, fields in declaration order. Challenges
    are derived as rust-fil-proofs does (interactive: from the replica id and ``seed``; synthetic: the
    synthetic set selected by ``seed``; NI-PoRep: from the replica id and CommR). ``sector_num`` wraps it in Curio's envelope
    (``{"SectorNum", "Phase1Out", "SectorSize"}``). ``ticket`` is recorded as given; with ``prover_id`` and
    ``sector_id`` it is checked to give the sealed replica id."""
    import numpy as np

    from . import porep
    from .sdr import replica_id as make_replica_id
    from .trees import FR

    pid = int(sealed.proof_id)
    name = proof_name(pid)
    seed, ticket = bytes(seed), bytes(ticket)
    if len(seed) != 32 or len(ticket) != 32:
        raise C1Error("seed and ticket: 32 bytes each expected")
    if prover_id is not None and sector_id is not None:
        rid = make_replica_id(bytes(prover_id), int(sector_id), ticket, bytes(sealed.comm_d), P.porep_id(pid))
        if rid != bytes(sealed.replica_id):
            raise C1Error("ticket: with this prover id and sector id it does not give the sealed sector's replica id")
    nodes, layers, kb, arities, variant = _shape(pid)
    parts, per = counts(pid)
    comm_r = sealed.comm_r_bytes()
    rid = bytes(sealed.replica_id)
    depth_d = nodes.bit_length() - 1
    leaves_c = sealed.tree_c.levels[0]

    def b(x: int | str) -> list[int]:
        return list(int(x).to_bytes(32, "little"))

    def pm(leaf: list[int], root: list[int], path: list) -> dict:
        m = _Merkle(bytes(root), bytes(leaf), [([bytes(b(s)) for s in sib], int(pos)) for sib, pos in path])
        return _merkle_json(m, kb, variant)

    leaf_c: dict[int, int] = {}  # tree_c leaves (column hashes) of the opened nodes

    def column_proof(node: int, col: list[str], path: list, root: str) -> dict:
        leaf = leaf_c[node]
        return {
            "column": {"index": node, "rows": [b(x) for x in col], "_h": None},
            "inclusion_proof": pm(b(leaf), b(root), path),
        }

    vanilla = []
    for k in range(parts):
        chals = _expected_challenges(pid, nodes, rid, comm_r, seed, k, per)
        op = porep.challenge_openings(sealed, chals)
        opened = sorted({n for ch in op["challenges"] for n in (ch["index"], *ch["parents"])} - leaf_c.keys())
        if opened:
            leaf_c.update(zip(opened, FR.to_ints(leaves_c[np.array(opened)]), strict=True))
        proofs = []
        for ch in op["challenges"]:
            i = ch["index"]
            pcols = [[int(x).to_bytes(32, "little") for x in col] for col in ch["parent_columns"]]
            dlevels = [([bytes.fromhex(s)], (i >> lv) & 1) for lv, s in enumerate(ch["data_path"])]
            dm = _merkle_json(_Merkle(bytes(sealed.comm_d), bytes.fromhex(ch["data_leaf"]), dlevels), depth_d, "Single")
            labs = [
                {"parents": [list(x) for x in _label_parents(layer, pcols)], "layer_index": layer, "node": i}
                for layer in range(1, layers + 1)
            ]
            cps = [
                column_proof(p, col, path, op["comm_c"])
                for p, col, path in zip(ch["parents"], ch["parent_columns"], ch["parent_paths"], strict=True)
            ]
            proofs.append(
                {
                    "comm_d_proofs": dm,
                    "comm_r_last_proof": pm(b(ch["replica_leaf"]), b(op["comm_r_last"]), ch["replica_path"]),
                    "replica_column_proofs": {
                        "c_x": column_proof(i, ch["column"], ch["column_path"], op["comm_c"]),
                        "drg_parents": cps[: P.DRG_DEGREE],
                        "exp_parents": cps[P.DRG_DEGREE :],
                    },
                    "labeling_proofs": labs,
                    "encoding_proof": dict(labs[-1]),
                }
            )
        vanilla.append(proofs)
    c1 = {
        "registered_proof": name,
        "vanilla_proofs": {vanilla_variant(pid): vanilla},
        "comm_r": list(comm_r),
        "comm_d": list(bytes(sealed.comm_d)),
        "replica_id": list(rid),
        "seed": list(seed),
        "ticket": list(ticket),
    }
    raw = json.dumps(c1, separators=(",", ":")).encode()
    if sector_num is None:
        return raw
    env = {"SectorNum": int(sector_num), "Phase1Out": base64.b64encode(raw).decode(), "SectorSize": P.sector_size_of(pid)}
    return json.dumps(env, separators=(",", ":")).encode()


__all__ = [
    "REGISTERED_SEAL_PROOFS",
    "C1Error",
    "C1Output",
    "counts",
    "is_c1",
    "parse_c1",
    "partition_openings",
    "proof_id_of",
    "proof_name",
    "write_c1",
]
