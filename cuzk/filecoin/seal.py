"""Sealing a sector as Filecoin does it (SDR / StackedDRG, PoRep V1.1), from the padded sector data to
CommR: tree_d and CommD, the replica id, the layers' labels over the parent graph, tree_c over the label
columns, the replica (data + last layer's labels) and tree_r_last, CommR = Poseidon(CommC, CommR_last).

The pieces: :mod:`.params` (sizes, layers, tree shapes, porep ids), :mod:`.graph` (the parent cache),
:mod:`.sdr` (labels and the replica id), :mod:`.trees` (tree_d, the Poseidon trees, CommR). Everything a
vanilla proof needs later (every level of the three trees, every layer's labels) is kept on the
:class:`SealedSector`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import params as P
from . import trees
from .graph import StackedGraph
from .sdr import create_labels, labels_to_bytes, replica_id

FR = trees.FR


def _nodes_to_mont(nodes: np.ndarray) -> np.ndarray:
    """(N, 32) uint8 little-endian field elements (< 2^254) -> (N, 4) Montgomery."""
    canon = np.ascontiguousarray(nodes, dtype=np.uint8).view("<u8").reshape(-1, 4).astype(np.uint64)
    return FR.to_mont(np.ascontiguousarray(canon))


@dataclass
class SealedSector:
    proof_id: int
    replica_id: bytes
    data: np.ndarray  # (N, 32) uint8: the padded sector
    labels: list[np.ndarray]  # per layer (N, 8) uint32 big-endian digest words
    tree_d: trees.DataTree
    tree_c: trees.PoseidonTree
    tree_r_last: trees.PoseidonTree

    @property
    def comm_d(self) -> bytes:
        return self.tree_d.root

    @property
    def comm_c(self) -> int:
        return self.tree_c.root_int()

    @property
    def comm_r_last(self) -> int:
        return self.tree_r_last.root_int()

    @property
    def comm_r(self) -> int:
        return trees.comm_r(self.comm_c, self.comm_r_last)

    def comm_r_bytes(self) -> bytes:
        return self.comm_r.to_bytes(32, "little")


def seal(
    data: bytes | np.ndarray,
    proof_id: int,
    prover_id: bytes,
    sector_id: int,
    ticket: bytes,
    timings: dict[str, float] | None = None,
) -> SealedSector:
    """Seal one sector: ``data`` the fr32-padded sector (exactly the sector size; every 32-byte node below
    2^254), ``proof_id`` a registered seal proof id (e.g. 5 = StackedDrg2KiBV1_1). ``timings`` receives
    each phase's seconds (tree_d, parents, labels, tree_c, tree_r_last)."""
    import time

    clock = [time.perf_counter()]

    def lap(name: str) -> None:
        now = time.perf_counter()
        if timings is not None:
            timings[name] = now - clock[0]
        clock[0] = now

    size = P.sector_size_of(proof_id)
    sp = P.PARAMS[size]
    nodes = np.frombuffer(bytes(data), dtype=np.uint8) if isinstance(data, (bytes, bytearray)) else np.asarray(data, np.uint8)
    if nodes.size != size:
        raise ValueError(f"sector data: {nodes.size} bytes, a {size}-byte sector was expected (proof id {proof_id})")
    nodes = nodes.reshape(-1, 32)
    bad = np.flatnonzero(nodes[:, 31] & 0xC0)
    if bad.size:
        raise ValueError(f"sector data: node {int(bad[0])} has its top two bits set: the data is not fr32-padded")
    tree_d = trees.build_data_tree(nodes)
    lap("tree_d")
    rid = replica_id(prover_id, sector_id, ticket, tree_d.root, P.porep_id(proof_id))
    parents = StackedGraph.for_proof(proof_id).parents_all()
    lap("parents")
    labels = create_labels(rid, parents, sp.layers)
    lap("labels")
    label_mont = np.stack([_nodes_to_mont(labels_to_bytes(w)) for w in labels])
    _base, sub, top = sp.tree_arities
    tree_c = trees.build_tree(trees.column_hashes(label_mont), sub, top)
    lap("tree_c")
    replica = trees.encode(_nodes_to_mont(nodes), label_mont[-1])
    tree_r_last = trees.build_tree(replica, sub, top)
    lap("tree_r_last")
    return SealedSector(proof_id, rid, nodes, labels, tree_d, tree_c, tree_r_last)
