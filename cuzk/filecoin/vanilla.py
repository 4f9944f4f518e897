"""Vanilla proofs: PoRep's challenges of a partition, and the versioned binary format of PoRep and PoSt
(WindowPoSt / WinningPoSt) vanilla proofs.

Challenges (rust-fil-proofs storage-proofs-porep ``stacked/vanilla/challenges.rs``, read for facts):

* interactive PoRep: challenge j = count * k + i of partition k is SHA-256(replica_id || seed || j as u32
  little-endian), read as a little-endian integer, mod (nodes - 1), plus 1 (node 0 is never challenged);
* synthetic PoRep: ``min(nodes, 2^18)`` synthetic challenges from ChaCha20 (RFC 8439 layout, nonce
  ``"synth-porep\\0"``) keyed by BLAKE2b-256 keyed ``"filecoin.io|PoRep|1|Synthetic|1|Generation"`` of
  (replica_id || comm_r), two 32-byte little-endian integers per 64-byte block, each mod (nodes - 1) + 1;
  a partition's challenges select among them with a second ChaCha20 stream (key: BLAKE2b-256 keyed
  ``"...|Selection"`` of (replica_id || seed)), 16 little-endian u32 indexes per block, each mod the
  synthetic count.

The vanilla proof file (``.cvp``, version 1), little-endian throughout::

    magic "cuzk-cvp" (8 bytes), version u32 = 1, proof_id u32, partition u32, n_challenges u32,
    sector_id u64, seed[32], replica_id[32], comm_d[32], comm_c[32], comm_r_last[32], comm_r[32]
    per challenge:
        index u64, data_leaf[32], data_path: depth_d x [32]           (tree_d, leaf to root)
        replica_leaf[32], replica_path: per tree level (arity - 1) x [32]   (tree_r_last)
        column: layers x [32], column_path: like replica_path          (tree_c)
        parents: 14 x u32, then per parent: column layers x [32] and its tree_c path

Version 2 holds the proofs of spacetime (:mod:`.post`), little-endian throughout::

    magic "cuzk-cvp" (8 bytes), version u32 = 2, kind u32 (3 = WindowPoSt, 4 = WinningPoSt: Curio's proof
    kinds), proof_id u32 (a registered PoSt proof: 0-4 Winning, 5-9 Window V1, 10-14 Window V1_2),
    partition u32, n_sectors u32, challenges u32 (per sector), sectors_per_partition u32,
    sector_set_len u64, sector_challenge u64 (WinningPoSt: the sector set's size and the challenged
    sector's index in it; 0 for WindowPoSt), randomness[32], prover_id[32]
    per sector:
        sector_id u64, comm_c[32], comm_r_last[32], comm_r[32]
        per challenge: leaf index u64, leaf[32], path: per tree_r_last level (arity - 1) x [32]

Field elements are 32-byte little-endian canonical integers. Every length follows from proof_id (the
sector's node count, layers and tree shape, :mod:`.params`), so the reader checks the file's size
against them before it allocates anything, and refuses a count above the parameters' challenges per
partition (PoSt: more than 66 challenges per sector, more sectors than a WindowPoSt partition of 2349,
or a WinningPoSt of other than 1 sector). Version 1 stays PoRep's (written and read as before). The
JSON view (:func:`decode`; :func:`encode` takes it back) is the dict the circuits' inputs use: the same
fields, integers as decimal strings, bytes as hex, plus ``version`` (and ``kind`` for PoSt).
"""

from __future__ import annotations

import hashlib
import struct
from typing import Any

from . import params as P

MAGIC = b"cuzk-cvp"
VERSION = 1  # PoRep
VERSION_POST = 2  # WindowPoSt / WinningPoSt
VERSIONS = (VERSION, VERSION_POST)
_HEAD = struct.Struct("<8sIIIIQ")
_POST_HEAD = struct.Struct("<8sIIIIIIIQQ")
POST_KINDS = {3: "window-post", 4: "winning-post"}  # kind number -> :mod:`.post` kind


class VanillaError(ValueError):
    """A vanilla proof file or object that is malformed (one line naming the field)."""


# ---------------------------------------------------------------------------------------------
# challenges


def _bigint_to_challenge(x: int, nodes: int) -> int:
    return x % (nodes - 1) + 1


def interactive_challenges(nodes: int, replica_id: bytes, seed: bytes, k: int, count: int) -> list[int]:
    """Partition ``k``'s ``count`` challenges of an interactive PoRep."""
    if nodes <= 2:
        raise ValueError(f"{nodes} nodes: too few to challenge")
    out = []
    for i in range(count):
        j = count * k + i
        h = hashlib.sha256(bytes(replica_id) + bytes(seed) + struct.pack("<I", j)).digest()
        out.append(_bigint_to_challenge(int.from_bytes(h, "little"), nodes))
    return out


_SYNTH_NONCE = b"synth-porep\x00"


def _chacha20_blocks(key: bytes, first_block: int, nblocks: int) -> bytes:
    from .graph import chacha_block_raw

    kw = struct.unpack("<8I", key)
    nw = struct.unpack("<3I", _SYNTH_NONCE)
    out = bytearray()
    for b in range(first_block, first_block + nblocks):
        state = [0x61707865, 0x3320646E, 0x79622D32, 0x6B206574, *kw, b & 0xFFFFFFFF, *nw]
        out += struct.pack("<16I", *(int(x) for x in chacha_block_raw(state, rounds=20)))
    return bytes(out)


def _synth_key(label: bytes, a: bytes, b: bytes) -> bytes:
    return hashlib.blake2b(a + b, digest_size=32, key=label).digest()


def synthetic_challenge(nodes: int, replica_id: bytes, comm_r: bytes, i: int) -> int:
    """The i-th synthetic challenge."""
    key = _synth_key(b"filecoin.io|PoRep|1|Synthetic|1|Generation", replica_id, comm_r)
    block = _chacha20_blocks(key, i >> 1, 1)
    half = block[32:] if i & 1 else block[:32]
    return _bigint_to_challenge(int.from_bytes(half, "little"), nodes)


def synthetic_partition_challenges(
    nodes: int, replica_id: bytes, comm_r: bytes, seed: bytes, k: int, count: int, n_synth: int | None = None
) -> list[int]:
    """Partition ``k``'s ``count`` challenges of a synthetic PoRep (selected among the synthetic ones)."""
    n_synth = min(nodes, 1 << 18) if n_synth is None else n_synth
    first, last = k * count, k * count + count - 1
    b0, b1 = first // 16, last // 16
    key = _synth_key(b"filecoin.io|PoRep|1|Synthetic|1|Selection", replica_id, seed)
    raw = _chacha20_blocks(key, b0, b1 - b0 + 1)
    idx = [v % n_synth for v in struct.unpack(f"<{len(raw) // 4}I", raw)]
    idx = idx[first % 16 :][:count]
    return [synthetic_challenge(nodes, replica_id, comm_r, i) for i in idx]


# ---------------------------------------------------------------------------------------------
# the binary format


def _shape(proof_id: int) -> tuple[int, int, list[int]]:
    """(depth of tree_d, layers, the arity of each level of tree_c / tree_r_last) of a proof id."""
    try:
        size = P.sector_size_of(proof_id)
    except (KeyError, ValueError):
        raise VanillaError(f"proof_id: {proof_id} is not a registered seal proof") from None
    sp = P.PARAMS[size]
    nodes = sp.nodes
    base, sub, top = sp.tree_arities
    per_base = nodes // (max(sub, 1) * max(top, 1))
    k = 0
    while base**k < per_base:
        k += 1
    arities = [base] * k + [a for a in (sub, top) if a]
    return nodes.bit_length() - 1, sp.layers, arities


def _u(x: Any) -> int:
    return int(x, 0) if isinstance(x, str) else int(x)


def _fe(x: Any) -> bytes:
    v = _u(x)
    if not 0 <= v < 1 << 256:
        raise VanillaError(f"a field element out of range: {v}")
    return v.to_bytes(32, "little")


def _hex32(x: str, what: str) -> bytes:
    try:
        b = bytes.fromhex(x)
    except (TypeError, ValueError):
        raise VanillaError(f"{what}: expected 32 bytes as hex") from None
    if len(b) != 32:
        raise VanillaError(f"{what}: expected 32 bytes as hex, got {len(b)}")
    return b


def challenge_size(proof_id: int) -> int:
    depth_d, layers, arities = _shape(proof_id)
    tree_path = 32 * sum(a - 1 for a in arities)
    return 8 + 32 + 32 * depth_d + 32 + tree_path + 32 * layers + tree_path + 14 * 4 + 14 * (32 * layers + tree_path)


def encode(obj: dict[str, Any]) -> bytes:
    """The binary file of a vanilla proof's JSON view (PoRep: version 1; PoSt, with a ``kind``: version 2)."""
    if "kind" in obj:
        return _encode_post(obj)
    proof_id = int(obj["proof_id"])
    depth_d, layers, arities = _shape(proof_id)
    chal = obj["challenges"]
    out = bytearray(_HEAD.pack(MAGIC, VERSION, proof_id, int(obj.get("partition", 0)), len(chal), int(obj.get("sector_id", 0))))
    out += _hex32(obj.get("seed", "00" * 32), "seed") + _hex32(obj["replica_id"], "replica_id") + _hex32(obj["comm_d"], "comm_d")
    out += _fe(obj["comm_c"]) + _fe(obj["comm_r_last"]) + _fe(obj["comm_r"])

    def path(p: list[Any], index: int, what: str) -> bytes:
        if len(p) != len(arities):
            raise VanillaError(f"{what}: {len(p)} levels, the tree has {len(arities)}")
        b = bytearray()
        for (sib, pos), a in zip(p, arities, strict=True):
            if len(sib) != a - 1:
                raise VanillaError(f"{what}: {len(sib)} siblings at a level of arity {a}")
            if int(pos) != index % a:
                raise VanillaError(f"{what}: position {pos} does not match node {index}")
            b += b"".join(_fe(s) for s in sib)
            index //= a
        return bytes(b)

    for c, ch in enumerate(chal):
        w = f"challenges[{c}]"
        out += struct.pack("<Q", int(ch["index"])) + _hex32(ch["data_leaf"], f"{w}.data_leaf")
        if len(ch["data_path"]) != depth_d:
            raise VanillaError(f"{w}.data_path: {len(ch['data_path'])} levels, tree_d has {depth_d}")
        out += b"".join(_hex32(s, f"{w}.data_path") for s in ch["data_path"])
        idx = int(ch["index"])
        out += _fe(ch["replica_leaf"]) + path(ch["replica_path"], idx, f"{w}.replica_path")
        if len(ch["column"]) != layers:
            raise VanillaError(f"{w}.column: {len(ch['column'])} labels, the sector has {layers} layers")
        out += b"".join(_fe(x) for x in ch["column"]) + path(ch["column_path"], idx, f"{w}.column_path")
        if len(ch["parents"]) != 14 or len(ch["parent_columns"]) != 14 or len(ch["parent_paths"]) != 14:
            raise VanillaError(f"{w}: 14 parents, their columns and paths expected")
        out += struct.pack("<14I", *(int(p) for p in ch["parents"]))
        for j in range(14):
            col = ch["parent_columns"][j]
            if len(col) != layers:
                raise VanillaError(f"{w}.parent_columns[{j}]: {len(col)} labels, the sector has {layers} layers")
            out += b"".join(_fe(x) for x in col) + path(ch["parent_paths"][j], int(ch["parents"][j]), f"{w}.parent_paths[{j}]")
    return bytes(out)


def decode(data: bytes, where: str = "vanilla proof", max_challenges: int = 0) -> dict[str, Any]:
    """The JSON view of a vanilla proof file; VanillaError (one line) for anything malformed.
    ``max_challenges`` raises the limit of challenges (a partition's in Filecoin) for a circuit made
    with more, for size benchmarks (the file's length is checked against its count either way)."""
    if len(data) < _HEAD.size + 6 * 32:
        raise VanillaError(f"{where}: {len(data)} bytes, too short for a vanilla proof header")
    magic, version, proof_id, partition, n, sector_id = _HEAD.unpack_from(data, 0)
    if magic != MAGIC:
        raise VanillaError(f"{where}: not a cuzk vanilla proof (magic {magic!r}, expected {MAGIC!r})")
    if version == VERSION_POST:
        return _decode_post(data, where)
    if version != VERSION:
        raise VanillaError(f"{where}: version {version}; this cuzk reads versions {VERSION} (PoRep) and {VERSION_POST} (PoSt)")
    depth_d, layers, arities = _shape(proof_id)
    sp = P.PARAMS[P.sector_size_of(proof_id)]
    limit = max(sp.porep_challenges_per_partition, sp.ni_porep_challenges_per_partition, max_challenges)
    if not 1 <= n <= limit:
        raise VanillaError(f"{where}: {n} challenges; a partition of proof {proof_id} has at most {limit}")
    size = _HEAD.size + 6 * 32 + n * challenge_size(proof_id)
    if len(data) != size:
        raise VanillaError(f"{where}: {len(data)} bytes, {size} expected for {n} challenges of proof {proof_id}")
    pos = _HEAD.size

    def take(k: int) -> bytes:
        nonlocal pos
        b = data[pos : pos + k]
        pos += k
        return b

    def fe() -> str:
        return str(int.from_bytes(take(32), "little"))

    def path(index: int) -> list[Any]:
        out = []
        for a in arities:
            out.append([[fe() for _ in range(a - 1)], index % a])
            index //= a
        return out

    obj: dict[str, Any] = {"version": version, "proof_id": proof_id, "partition": partition, "sector_id": sector_id}
    obj["seed"] = take(32).hex()
    obj["replica_id"] = take(32).hex()
    obj["comm_d"] = take(32).hex()
    obj["comm_c"], obj["comm_r_last"], obj["comm_r"] = fe(), fe(), fe()
    chals = []
    for _ in range(n):
        (index,) = struct.unpack("<Q", take(8))
        ch: dict[str, Any] = {"index": index, "data_leaf": take(32).hex(), "data_path": [take(32).hex() for _ in range(depth_d)]}
        ch["replica_leaf"] = fe()
        ch["replica_path"] = path(index)
        ch["column"] = [fe() for _ in range(layers)]
        ch["column_path"] = path(index)
        ch["parents"] = list(struct.unpack("<14I", take(56)))
        ch["parent_columns"], ch["parent_paths"] = [], []
        for p in ch["parents"]:
            ch["parent_columns"].append([fe() for _ in range(layers)])
            ch["parent_paths"].append(path(p))
        chals.append(ch)
    obj["challenges"] = chals
    assert pos == len(data)
    return obj


# ---------------------------------------------------------------------------------------------
# version 2: proofs of spacetime


def _post_shape(kind_no: int, proof_id: int, where: str) -> tuple[str, int, list[int]]:
    """(kind, nodes, tree_r_last arities) of a PoSt file's header."""
    from .post import post_proof, tree_arities

    kind = POST_KINDS.get(kind_no)
    if kind is None:
        raise VanillaError(f"{where}: kind {kind_no}; version 2 holds kinds 3 (WindowPoSt) and 4 (WinningPoSt)")
    try:
        pp = post_proof(proof_id)
    except ValueError:
        raise VanillaError(f"{where}: proof_id {proof_id} is not a registered PoSt proof (0-14)") from None
    if pp.kind != kind:
        raise VanillaError(f"{where}: proof_id {proof_id} is {pp.name}, not a {kind}")
    return kind, pp.nodes, tree_arities(pp.sector_size)


def post_challenge_size(proof_id: int) -> int:
    """Bytes per challenge of a PoSt file: index, leaf, path."""
    from .post import post_proof, tree_arities

    return 8 + 32 + 32 * sum(a - 1 for a in tree_arities(post_proof(proof_id).sector_size))


def _encode_post(obj: dict[str, Any]) -> bytes:
    kind = obj["kind"]
    nums = {v: k for k, v in POST_KINDS.items()}
    if kind not in nums:
        raise VanillaError(f"kind: {kind!r} is not a PoSt kind ({', '.join(nums)})")
    proof_id = int(obj["proof_id"])
    _kind, nodes, arities = _post_shape(nums[kind], proof_id, "vanilla proof")
    sectors = obj["sectors"]
    counts = {len(sec["challenges"]) for sec in sectors}
    if len(counts) != 1:
        raise VanillaError(f"sectors: challenges per sector differ ({sorted(counts)})")
    out = bytearray(
        _POST_HEAD.pack(
            MAGIC,
            VERSION_POST,
            nums[kind],
            proof_id,
            int(obj.get("partition", 0)),
            len(sectors),
            counts.pop(),
            int(obj.get("sectors_per_partition", 1)),
            int(obj.get("sector_set_len", 0)),
            int(obj.get("sector_challenge", 0)),
        )
    )
    out += _hex32(obj["randomness"], "randomness") + _hex32(obj.get("prover_id", "00" * 32), "prover_id")
    for s, sec in enumerate(sectors):
        out += struct.pack("<Q", int(sec["sector_id"])) + _fe(sec["comm_c"]) + _fe(sec["comm_r_last"]) + _fe(sec["comm_r"])
        for c, ch in enumerate(sec["challenges"]):
            w = f"sectors[{s}].challenges[{c}]"
            idx = int(ch["index"])
            if not 0 <= idx < nodes:
                raise VanillaError(f"{w}.index: {idx} is not a leaf of a {nodes}-node sector")
            out += struct.pack("<Q", idx) + _fe(ch["leaf"])
            path = ch["path"]
            if len(path) != len(arities):
                raise VanillaError(f"{w}.path: {len(path)} levels, tree_r_last has {len(arities)}")
            node = idx
            for (sib, pos), a in zip(path, arities, strict=True):
                if len(sib) != a - 1:
                    raise VanillaError(f"{w}.path: {len(sib)} siblings at a level of arity {a}")
                if int(pos) != node % a:
                    raise VanillaError(f"{w}.path: position {pos} does not match leaf {idx}")
                out += b"".join(_fe(x) for x in sib)
                node //= a
    return bytes(out)


def _decode_post(data: bytes, where: str) -> dict[str, Any]:
    from .post import MAX_WINDOW_SECTORS

    if len(data) < _POST_HEAD.size + 64:
        raise VanillaError(f"{where}: {len(data)} bytes, too short for a PoSt vanilla proof header")
    _m, version, kind_no, proof_id, partition, n_sectors, n_chal, spp, set_len, pick = _POST_HEAD.unpack_from(data, 0)
    kind, nodes, arities = _post_shape(kind_no, proof_id, where)
    max_sectors = 1 if kind == "winning-post" else MAX_WINDOW_SECTORS
    if not 1 <= n_sectors <= max_sectors:
        raise VanillaError(f"{where}: {n_sectors} sectors; a {kind} has 1 to {max_sectors}")
    if not 1 <= n_chal <= P.WINNING_POST_CHALLENGE_COUNT:
        raise VanillaError(f"{where}: {n_chal} challenges per sector; at most {P.WINNING_POST_CHALLENGE_COUNT}")
    per_sector = 8 + 3 * 32 + n_chal * post_challenge_size(proof_id)
    size = _POST_HEAD.size + 64 + n_sectors * per_sector
    if len(data) != size:
        raise VanillaError(
            f"{where}: {len(data)} bytes, {size} expected for {n_sectors} sectors x {n_chal} challenges of PoSt proof {proof_id}"
        )
    pos = _POST_HEAD.size

    def take(k: int) -> bytes:
        nonlocal pos
        b = data[pos : pos + k]
        pos += k
        return b

    def fe() -> str:
        return str(int.from_bytes(take(32), "little"))

    obj: dict[str, Any] = {"version": version, "kind": kind, "proof_id": proof_id, "partition": partition}
    obj["sectors_per_partition"] = spp
    if kind == "winning-post":
        obj["sector_set_len"], obj["sector_challenge"] = set_len, pick
    obj["randomness"] = take(32).hex()
    obj["prover_id"] = take(32).hex()
    sectors = []
    for _ in range(n_sectors):
        (sid,) = struct.unpack("<Q", take(8))
        sec: dict[str, Any] = {"sector_id": sid, "comm_c": fe(), "comm_r_last": fe(), "comm_r": fe(), "challenges": []}
        for _ in range(n_chal):
            (idx,) = struct.unpack("<Q", take(8))
            if idx >= nodes:
                raise VanillaError(f"{where}: sector {len(sectors)}: leaf index {idx} is not a leaf of a {nodes}-node sector")
            ch: dict[str, Any] = {"index": idx, "leaf": fe(), "path": []}
            node = idx
            for a in arities:
                ch["path"].append([[fe() for _ in range(a - 1)], node % a])
                node //= a
            sec["challenges"].append(ch)
        sectors.append(sec)
    obj["sectors"] = sectors
    assert pos == len(data)
    return obj


def read(path: str) -> dict[str, Any]:
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError as e:
        raise VanillaError(f"{path}: cannot read: {e.strerror}") from None
    return decode(data, path)


def write(path: str, obj: dict[str, Any]) -> None:
    with open(path, "wb") as fh:
        fh.write(encode(obj))
