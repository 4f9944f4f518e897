"""The trees of a sealed sector: tree_d (binary SHA-256-254), the Poseidon LCTrees of every sector shape,
column hashes, encoding and CommR; paths verify and tampered paths do not."""

from __future__ import annotations

import random

import numpy as np
import pytest

from cuzk.circuit.poseidon import poseidon_hash
from cuzk.filecoin import trees

F = trees.FR


def reference_root(vals: list[int], arities: list[int]) -> int:
    for a in arities:
        vals = [poseidon_hash(vals[i : i + a], a) for i in range(0, len(vals), a)]
    assert len(vals) == 1
    return vals[0]


@pytest.mark.parametrize(
    "n, sub, top, arities",
    [
        (64, 0, 0, [8, 8]),  # 2 KiB: SectorShapeBase
        (128, 2, 0, [8, 8, 2]),  # 4 KiB: SectorShapeSub2
        (512, 8, 0, [8, 8, 8]),  # 16 KiB: SectorShapeSub8
        (1024, 8, 2, [8, 8, 8, 2]),  # 32 KiB: SectorShapeTop2
    ],
)
def test_poseidon_lc_trees(n, sub, top, arities):
    rng = random.Random(n)
    vals = [rng.randrange(F.p) for _ in range(n)]
    t = trees.build_tree(F.from_ints(vals), sub, top)
    assert t.arities == arities
    assert t.root_int() == reference_root(vals, arities)
    for idx in (0, 7, n // 2 + 3, n - 1):
        p = t.path(idx)
        assert t.verify_path(vals[idx], idx, p)
        assert not t.verify_path((vals[idx] + 1) % F.p, idx, p)  # another leaf
        assert not t.verify_path(vals[idx], idx ^ 1, p)  # another position
    with pytest.raises(ValueError, match="not a power of 8"):
        trees.build_tree(F.from_ints(vals[:48]))


def test_columns_encoding_comm_r():
    rng = random.Random(3)
    layers, n = 3, 16
    labels = [[rng.randrange(F.p) for _ in range(n)] for _ in range(layers)]
    mont = np.stack([F.from_ints(row) for row in labels])
    cols = F.to_ints(trees.column_hashes(mont))
    assert cols == [poseidon_hash([labels[k][i] for k in range(layers)], layers) for i in range(n)]
    data = [rng.randrange(1 << 254) for _ in range(n)]
    enc = F.to_ints(trees.encode(F.from_ints(data), mont[-1]))
    assert enc == [(d + k) % F.p for d, k in zip(data, labels[-1], strict=True)]
    assert trees.comm_r(5, 7) == poseidon_hash([5, 7], 2)


def test_data_tree_empty_sector_and_paths():
    # CommD of an all-zero 2 KiB sector (64 nodes): rust-fil-proofs filecoin-proofs/tests/pieces.rs,
    # test_compute_comm_d_empty: fc7e9282...18f833
    t = trees.build_data_tree(np.zeros((64, 32), np.uint8))
    assert t.root.hex() == "fc7e928296e516faade986b28f92d44a4f24b935485223376a799027bc18f833"
    nodes = np.random.default_rng(1).integers(0, 256, (64, 32), dtype=np.uint8)
    nodes[:, 31] &= 0x3F
    t = trees.build_data_tree(nodes)
    for i in (0, 9, 63):
        assert trees.verify_data_path(nodes[i].tobytes(), i, t.path(i), t.root)
        assert not trees.verify_data_path(nodes[i].tobytes(), i ^ 2, t.path(i), t.root)
    with pytest.raises(ValueError, match="not a power of two"):
        trees.build_data_tree(nodes[:48])
