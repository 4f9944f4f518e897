"""Sealing (SDR PoRep V1.1) end to end on small sectors: CommD, labels over the parent graph, tree_c,
the replica and tree_r_last, CommR; every relation a vanilla proof will open is checked node by node."""

from __future__ import annotations

import numpy as np
import pytest

from cuzk.circuit.poseidon import poseidon_hash
from cuzk.filecoin import params as P
from cuzk.filecoin import sdr
from cuzk.filecoin.graph import StackedGraph
from cuzk.filecoin.seal import FR, seal

PROOF_2KIB_V1_1 = 5  # RegisteredSealProof::StackedDrg2KiBV1_1 (rust-filecoin-proofs-api registry.rs)
PROVER, TICKET = bytes(range(32)), bytes(range(100, 132))


def sector(seed: int, n: int = 64) -> np.ndarray:
    d = np.random.default_rng(seed).integers(0, 256, (n, 32), dtype=np.uint8)
    d[:, 31] &= 0x3F  # fr32: every node below 2^254
    return d


def test_seal_2kib_relations_and_determinism():
    data = sector(1)
    s = seal(data, PROOF_2KIB_V1_1, PROVER, 42, TICKET)
    assert seal(data.copy(), PROOF_2KIB_V1_1, PROVER, 42, TICKET).comm_r == s.comm_r  # deterministic
    assert seal(data, PROOF_2KIB_V1_1, PROVER, 43, TICKET).comm_r != s.comm_r  # another sector id
    layers = P.PARAMS[2048].layers
    assert len(s.labels) == layers
    assert s.replica_id == sdr.replica_id(PROVER, 42, TICKET, s.comm_d, P.porep_id(PROOF_2KIB_V1_1))
    parents = StackedGraph.for_proof(PROOF_2KIB_V1_1).parents_all()
    lab_bytes = [sdr.labels_to_bytes(w) for w in s.labels]
    lab_int = [[int.from_bytes(bytes(row), "little") for row in lb] for lb in lab_bytes]
    for node in (0, 1, 17, 63):
        # the label of each layer from its parents (hashlib reference)
        for layer in range(1, layers + 1):
            prev = lab_bytes[layer - 2] if layer > 1 else None
            want = sdr.label_reference(s.replica_id, layer, node, parents[node], lab_bytes[layer - 1], prev)
            assert bytes(lab_bytes[layer - 1][node]) == want
        # tree_c's leaf: the Poseidon hash of the node's column
        column = [lab_int[k][node] for k in range(layers)]
        assert FR.to_ints(s.tree_c.levels[0][node : node + 1])[0] == poseidon_hash(column, layers)
        # tree_r_last's leaf: the data node plus the last layer's label
        d = int.from_bytes(bytes(s.data[node]), "little")
        leaf = (d + lab_int[-1][node]) % FR.p
        assert FR.to_ints(s.tree_r_last.levels[0][node : node + 1])[0] == leaf
        assert s.tree_r_last.verify_path(leaf, node, s.tree_r_last.path(node))
        assert s.tree_c.verify_path(poseidon_hash(column, layers), node, s.tree_c.path(node))
    assert s.comm_r == poseidon_hash([s.comm_c, s.comm_r_last], 2)


def test_seal_zero_sector_comm_d_and_bad_data():
    s = seal(np.zeros((64, 32), np.uint8), PROOF_2KIB_V1_1, PROVER, 1, TICKET)
    # CommD of an all-zero 2 KiB sector: rust-fil-proofs filecoin-proofs/tests/pieces.rs
    # (test_compute_comm_d_empty)
    assert s.comm_d.hex() == "fc7e928296e516faade986b28f92d44a4f24b935485223376a799027bc18f833"
    bad = sector(2)
    bad[5, 31] |= 0x80
    with pytest.raises(ValueError, match="node 5 has its top two bits set"):
        seal(bad, PROOF_2KIB_V1_1, PROVER, 1, TICKET)
    with pytest.raises(ValueError, match="a 2048-byte sector was expected"):
        seal(sector(3)[:32], PROOF_2KIB_V1_1, PROVER, 1, TICKET)
