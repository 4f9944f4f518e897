"""The Poseidon trees of a sealed sector: tree_c (over the columns of labels), tree_r_last (over the
replica) and CommR, as rust-fil-proofs builds them.

Facts (rust-fil-proofs, filecoin-proofs ``constants.rs`` and storage-proofs-core ``merkle``; read for
facts, nothing copied):

* a sector's trees are ``LCTree<PoseidonHasher, U8, SUB, TOP>``: arity-8 base trees over consecutive
  runs of leaves, then one level of arity SUB (0: none) over the base roots, then one of arity TOP (0:
  none). Base shape (SUB = TOP = 0): 2 KiB, 8 MiB, 512 MiB; SUB = 2: 4 KiB, 16 MiB, 1 GiB; SUB = 8:
  16 KiB, 32 GiB; SUB = 8, TOP = 2: 32 KiB, 64 GiB;
* every tree node is the Merkle-tree Poseidon hash (neptune ``HashType::MerkleTree``, :mod:`cuzk.circuit.poseidon`)
  of its children;
* a tree_c leaf is the column hash of a node: the Poseidon hash, arity = the number of layers, of that
  node's label in every layer (layer 1 first);
* a tree_r_last leaf is the replica node: the data node plus the last layer's label, in Fr
  (``encoding::encode``);
* CommR = Poseidon arity 2 of (CommC, CommR_last).

Everything is vectorized over a level (one numba kernel call hashes a whole level), values are Montgomery
(N, 4) uint64 arrays of BLS12-381 Fr, and every level is kept so that Merkle paths can be read off.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import curves
from ..circuit.poseidon import poseidon_hash_batch

FR = curves.get("bls12_381").fr
BASE_ARITY = 8


def _hash_level(level: np.ndarray, arity: int) -> np.ndarray:
    n = level.shape[0]
    if n % arity:
        raise ValueError(f"a level of {n} nodes does not split into groups of {arity}")
    return poseidon_hash_batch(np.ascontiguousarray(level.reshape(n // arity, arity, 4)))


@dataclass
class PoseidonTree:
    """Every level of an LCTree<Poseidon, 8, sub, top>: ``levels[0]`` the leaves, ``levels[-1]`` the root.

    Levels of the base trees are stored side by side (level k holds every base tree's level k in leaf
    order), which is the same array as one octree's level k; the sub and top levels follow."""

    levels: list[np.ndarray]
    arities: list[int]  # arity of the hash that made levels[k + 1] from levels[k]

    @property
    def root(self) -> np.ndarray:
        return self.levels[-1][0]

    def root_int(self) -> int:
        return FR.to_ints(self.levels[-1][:1])[0]

    def path(self, index: int) -> list[tuple[list[int], int]]:
        """The inclusion path of leaf ``index``: per level, (the siblings in order, the node's position
        among its arity children)."""
        out = []
        for lv, arity in enumerate(self.arities):
            first = index - index % arity
            pos = index % arity
            sib = [j for j in range(first, first + arity) if j != index]
            out.append((FR.to_ints(self.levels[lv][sib]), pos))
            index //= arity
        return out

    def verify_path(self, leaf: int, index: int, path: list[tuple[list[int], int]]) -> bool:
        from ..circuit.poseidon import poseidon_hash

        cur = leaf
        for (sib, pos), arity in zip(path, self.arities, strict=True):
            if pos != index % arity:
                return False
            children = sib[:pos] + [cur] + sib[pos:]
            cur = poseidon_hash(children, arity)
            index //= arity
        return cur == self.root_int()


def build_tree(leaves: np.ndarray, sub_arity: int = 0, top_arity: int = 0) -> PoseidonTree:
    """The LCTree over Montgomery leaves (N, 4): N = 8^k * max(sub, 1) * max(top, 1)."""
    n = leaves.shape[0]
    groups = max(sub_arity, 1) * max(top_arity, 1)
    if n % groups or n // groups < 1:
        raise ValueError(f"{n} leaves do not split into {groups} base trees")
    per_base = n // groups
    k = 0
    while BASE_ARITY**k < per_base:
        k += 1
    if BASE_ARITY**k != per_base:
        raise ValueError(f"base trees of {per_base} leaves: not a power of {BASE_ARITY}")
    levels = [np.ascontiguousarray(leaves)]
    arities: list[int] = []
    for _ in range(k):  # the base trees' levels, all base trees at once
        levels.append(_hash_level(levels[-1], BASE_ARITY))
        arities.append(BASE_ARITY)
    for a in (sub_arity, top_arity):
        if a:
            levels.append(_hash_level(levels[-1], a))
            arities.append(a)
    return PoseidonTree(levels, arities)


def column_hashes(labels: np.ndarray) -> np.ndarray:
    """tree_c's leaves: labels (layers, N, 4) Montgomery -> (N, 4), the Poseidon hash of each column."""
    cols = np.ascontiguousarray(np.transpose(labels, (1, 0, 2)))  # (N, layers, 4)
    return poseidon_hash_batch(cols)


def encode(data: np.ndarray, key: np.ndarray) -> np.ndarray:
    """The replica nodes: data + key (the last layer's labels) in Fr, Montgomery in and out."""
    return FR.add(np.ascontiguousarray(data), np.ascontiguousarray(key))


def comm_r(comm_c: int, comm_r_last: int) -> int:
    from ..circuit.poseidon import poseidon_hash

    return poseidon_hash([comm_c, comm_r_last], 2)


@dataclass
class DataTree:
    """tree_d: the binary SHA-256-254 tree over the sector's 32-byte nodes (root = CommD); ``levels[k]``
    (N / 2^k, 32) uint8, little-endian node bytes."""

    levels: list[np.ndarray]

    @property
    def root(self) -> bytes:
        return self.levels[-1][0].tobytes()

    def path(self, index: int) -> list[bytes]:
        """The siblings of leaf ``index`` from the leaves up (its index bits say left or right)."""
        out = []
        for lv in self.levels[:-1]:
            out.append(lv[index ^ 1].tobytes())
            index >>= 1
        return out


def build_data_tree(nodes: np.ndarray) -> DataTree:
    """tree_d over (N, 32) uint8 nodes, N a power of two (the fr32-padded sector)."""
    from ..circuit.sha256_native import hash2_batch

    n = nodes.shape[0]
    if n < 1 or n & (n - 1):
        raise ValueError(f"a data tree over {n} nodes: not a power of two")
    levels = [np.ascontiguousarray(nodes, dtype=np.uint8)]
    while levels[-1].shape[0] > 1:
        lv = levels[-1]
        levels.append(hash2_batch(lv[0::2], lv[1::2]))
    return DataTree(levels)


def verify_data_path(leaf: bytes, index: int, path: list[bytes], root: bytes) -> bool:
    from ..circuit.sha256_native import sha256_254

    cur = leaf
    for sib in path:
        cur = sha256_254(sib + cur) if index & 1 else sha256_254(cur + sib)
        index >>= 1
    return cur == root
