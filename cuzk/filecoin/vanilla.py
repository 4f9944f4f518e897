"""Vanilla PoRep proofs: the challenges of a partition, and the proof's versioned binary format.

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

Field elements are 32-byte little-endian canonical integers. Every length follows from proof_id (the
sector's node count, layers and tree shape, :mod:`.params`), so the reader checks the file's size
against them before it allocates anything, and refuses a count above the parameters' challenges per
partition. The JSON view (:func:`to_json` / :func:`from_json`) is the dict the PoRep circuit's inputs
use: the same fields, integers as decimal strings, bytes as hex.
"""

from __future__ import annotations

import hashlib
import struct
from typing import Any

from . import params as P

MAGIC = b"cuzk-cvp"
VERSION = 1
_HEAD = struct.Struct("<8sIIIIQ")


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
    """The binary file of a vanilla proof's JSON view."""
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


def decode(data: bytes, where: str = "vanilla proof") -> dict[str, Any]:
    """The JSON view of a vanilla proof file; VanillaError (one line) for anything malformed."""
    if len(data) < _HEAD.size + 6 * 32:
        raise VanillaError(f"{where}: {len(data)} bytes, too short for a vanilla proof header")
    magic, version, proof_id, partition, n, sector_id = _HEAD.unpack_from(data, 0)
    if magic != MAGIC:
        raise VanillaError(f"{where}: not a cuzk vanilla proof (magic {magic!r}, expected {MAGIC!r})")
    if version != VERSION:
        raise VanillaError(f"{where}: version {version}; this cuzk reads version {VERSION}")
    depth_d, layers, arities = _shape(proof_id)
    sp = P.PARAMS[P.sector_size_of(proof_id)]
    limit = max(sp.porep_challenges_per_partition, sp.ni_porep_challenges_per_partition)
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
