"""The compact recording (issue 17, Poseidon 2^24): matrices holding a coefficient index per non-zero
(IndexedCSR), blocks sorted and merged as they are recorded. Checked against a naive recorder (one dict
per row, CSR.from_rows), the dense mat-vec on random witnesses, the proving key's boundary (plain CSRs)
and the cache's format."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest

from cuzk import curves
from cuzk.circuit import RecordingCS
from cuzk.circuit import circuit as circuit_mod
from cuzk.circuit.circuit import Circuit, CircuitSpec, record, recording_key, witness
from cuzk.circuit.cs import ConstraintSystem, wires_of
from cuzk.r1cs.pce import CSR, PCE, IndexedCSR

BLS = curves.get("bls12_381")
F = BLS.fr
MERKLE = "cuzk.circuit.examples:MerkleInclusion"


class NaiveCS(ConstraintSystem):
    """The reference: every row as a {code: coefficient} dict, then CSR.from_rows over the final wires."""

    def __init__(self, curve):
        super().__init__(curve)
        self.rows: list[list[dict[int, int]]] = [[], [], []]

    def _enforce(self, name, a, b, c, shape, rows):
        p = self.field.p
        for m, lc in enumerate((a, b, c)):
            terms = [(k % p, np.broadcast_to(codes, shape).reshape(-1)) for k, codes in lc.terms]
            for r in range(rows):
                row: dict[int, int] = {}
                for k, codes in terms:
                    code = int(codes[r])
                    row[code] = (row.get(code, 0) + k) % p
                self.rows[m].append(row)

    def pce(self) -> PCE:
        n_wires = self.n_inputs + self.n_aux
        mats = []
        for m in range(3):
            rows = []
            for row in self.rows[m]:
                codes = [c for c, k in row.items() if k]
                wires = wires_of(np.array(codes, dtype=np.int64), self.n_inputs).tolist() if codes else []
                rows.append({w: row[c] for w, c in zip(wires, codes, strict=True)})
            mats.append(CSR.from_rows(rows, n_wires, self.field))
        return PCE(*mats, n_wires=n_wires, n_public=self.n_inputs - 1, field=self.field)


class Mixed(Circuit):
    """Duplicate terms (sums of 2 and 3 copies, some cancelling), inputs allocated after private variables
    (the final wire order differs from the code order), empty LCs, a zero-row enforce, batches."""

    def __init__(self, batch: int = 5):
        super().__init__(batch=batch)
        self.batch = batch

    def sample_inputs(self, seed=0):
        return {}

    def synthesize(self, cs, inputs):
        B = self.batch
        has = inputs is not None
        x = cs.alloc("x", list(range(3, 3 + B)) if has else None, B)
        y = cs.alloc("y", [2 * v for v in range(3, 3 + B)] if has else None, B)
        z = cs.alloc_input("z", [v for v in range(3, 3 + B)] if has else None, B)
        cs.enforce("x + x = y", x + x, cs.one, y)
        cs.enforce("x - x + y = y", x - x + y, cs.one, y)
        cs.enforce("3x + 2x - 5x + z = x", x * 3 + x * 2 - x * 5 + z, cs.one, x)
        cs.enforce("z + x + z - 2z = x", z + x + z - z * 2, cs.one + x - x, x)
        cs.enforce("nothing", x - x, x, 0)  # A and C empty
        cs.enforce("no rows", cs.alloc("e", [] if has else None, 0), cs.one, 0)
        w = cs.alloc("w", [v * v for v in range(3, 3 + B)] if has else None, B)
        cs.enforce("x * x = w", x, x, w)
        cs.enforce("x * x = w, x on both sides", x + 7, x + cs.one * 0, w + x * 7)
        for i in range(4):  # many small enforce calls: many blocks when compaction is frequent
            cs.enforce(f"again {i}", x * (i + 1) + x, cs.one, y * (i + 2) - y * (i + 1) + x * i)


def _same(got: PCE, ref: PCE) -> None:
    assert (got.n_wires, got.n_public) == (ref.n_wires, ref.n_public)
    for m in "ABC":
        g, r = getattr(got, m), getattr(ref, m)
        assert isinstance(g, IndexedCSR)
        assert np.array_equal(g.row_ptr, r.row_ptr), m
        assert np.array_equal(g.cols, r.cols), m
        assert np.array_equal(g.vals, r.vals), m
        assert g.cols.dtype == np.uint32 and g.coef.dtype == np.uint16


def _circuits():
    return [
        Mixed(),
        CircuitSpec.parse(MERKLE, {"depth": 2, "challenges": 3, "arity": 4}).load(),
        CircuitSpec.parse(MERKLE, {"depth": 1, "challenges": 2, "arity": 8}).load(),
    ]


@pytest.mark.parametrize("blocks", ["default", "tiny"])
@pytest.mark.parametrize("storage", ["arrays", "dicts"])
def test_recording_equals_naive_rows(blocks, storage, monkeypatch):
    if blocks == "tiny":  # a block per enforce call or two
        monkeypatch.setattr(RecordingCS, "COMPACT_EVERY", 3)
        monkeypatch.setattr(RecordingCS, "COMPACT_ENTRIES", 7)
    for c in _circuits():
        naive = NaiveCS(BLS)
        c.synthesize(naive, None)
        cs = RecordingCS(BLS, lc_storage=storage)
        c.synthesize(cs, None)
        pce = cs.finish()
        _same(pce, naive.pce())
        assert pce.unsatisfied(witness(c, c.sample_inputs(1))).size == 0


def test_merge_sums_distinct_combinations():
    """Groups of 2 and 3 equal keys over several coefficients, one cancelling: one Python sum per distinct
    (sorted) combination, indices of new sums appended to the table."""
    cs = RecordingCS(BLS)
    a, b, c = cs._coef_index(5), cs._coef_index(7), cs._coef_index(F.p - 12)
    coef = np.array([a, b, a, b, b, a, a, a, c, b, a, b], dtype=np.int32)
    starts = np.array([0, 2, 4, 5, 8, 11])  # groups (a,b) (a,b) (b) (a,a,a) (c,b,a)=0 (b)
    merged = cs._merge(coef, starts)
    assert merged[2] == b and merged[5] == b
    assert merged[0] == merged[1] == cs._coef[12]
    assert merged[3] == cs._coef[15]
    assert merged[4] == -1


def _random_witness(rng: random.Random, n: int) -> np.ndarray:
    return F.from_ints([rng.randrange(F.p) for _ in range(n)])


def test_indexed_matvec_equals_dense_on_random_witnesses():
    rng = random.Random(17)
    pce = record(CircuitSpec.parse(MERKLE, {"depth": 2, "challenges": 5}).load(), cache=False).pce
    for _ in range(3):
        w = _random_witness(rng, pce.n_wires)
        for m in (pce.A, pce.B, pce.C):
            assert isinstance(m, IndexedCSR)
            d = m.dense()
            assert type(d) is CSR
            assert np.array_equal(m.matvec(w), d.matvec(w))
            assert np.array_equal(m.column_density(), d.column_density())
    # a satisfying witness: the same a, b, c and no violated constraint
    c = CircuitSpec.parse(MERKLE, {"depth": 2, "challenges": 5}).load()
    w = witness(c, c.sample_inputs(3))
    dense = PCE(pce.A.dense(), pce.B.dense(), pce.C.dense(), n_wires=pce.n_wires, n_public=pce.n_public)
    for x, y in zip(pce.evaluate(w), dense.evaluate(w), strict=True):
        assert np.array_equal(x, y)
    assert pce.unsatisfied(w).size == 0


def test_indexed_csr_uint32_indices_zero_and_unit_coefficients():
    """More than 65,536 distinct coefficients (uint32 indices), Montgomery one (the multiply skipped) and a
    zero entry in the table (a sparse column for the density)."""
    rng = np.random.default_rng(5)
    k, rows, cols_n, nnz = 70_000, 300, 50, 3000
    table = F.from_ints([int(x) for x in rng.integers(0, 1 << 62, size=k)])
    table[0] = F.one_mont()
    table[1] = 0
    coef = rng.integers(0, k, size=nnz).astype(np.uint32)
    coef[:200] = 0
    coef[200:260] = 1
    cols = np.sort(rng.integers(0, cols_n, size=nnz).astype(np.uint32))
    row_ptr = np.concatenate([[0], np.sort(rng.integers(0, nnz, size=rows - 1)), [nnz]]).astype(np.int64)
    m = IndexedCSR(row_ptr, cols, coef, table, cols_n, F)
    d = m.dense()
    w = _random_witness(random.Random(1), cols_n)
    assert np.array_equal(m.matvec(w), d.matvec(w))
    assert np.array_equal(m.column_density(), d.column_density())
    assert m.memory_bytes() == row_ptr.nbytes + cols.nbytes + coef.nbytes + table.nbytes
    with pytest.raises(AttributeError):
        m.vals = d.vals
    with pytest.raises(ValueError, match="uint16/32"):
        IndexedCSR(row_ptr, cols, coef.astype(np.int64), table, cols_n, F)
    empty = IndexedCSR(np.zeros(3, np.int64), np.zeros(0, np.uint32), np.zeros(0, np.uint16), table[:0], 4, F)
    assert empty.vals.shape == (0, 4) and empty.matvec(F.zeros(4)).shape == (2, 4)


def test_proving_key_matrices_are_plain_csr():
    """The boundary: qap_matrices (setup, the key cache, the GPU upload) gives plain CSRs, the same as the
    dense PCE's."""
    pce = record(Mixed(), cache=False).pce
    dense = PCE(pce.A.dense(), pce.B.dense(), pce.C.dense(), n_wires=pce.n_wires, n_public=pce.n_public)
    for got, ref in zip(pce.qap_matrices(), dense.qap_matrices(), strict=True):
        assert type(got) is CSR
        assert np.array_equal(got.row_ptr, ref.row_ptr) and np.array_equal(got.cols, ref.cols)
        assert np.array_equal(got.vals, ref.vals)
    assert {k: v.tolist() for k, v in pce.density().items()} == {k: v.tolist() for k, v in dense.density().items()}


def test_cache_format_is_part_of_the_key_and_checked(tmp_path, monkeypatch):
    c = Mixed()
    first = record(c, tmp_path)
    path = tmp_path / f"{first.key}.npz"
    with np.load(path) as z:
        assert json.loads(bytes(z["meta"]).decode())["format"] == circuit_mod.RECORDING_FORMAT
        assert "table" in z.files and "A_coef" in z.files and "A_vals" not in z.files
    again = record(c, tmp_path)
    assert again.cached
    _same(again.pce, NaiveCS_pce(c))
    # the format is in the key: another format never finds this file
    monkeypatch.setattr(circuit_mod, "RECORDING_FORMAT", circuit_mod.RECORDING_FORMAT + 1)
    assert recording_key(c) != first.key
    monkeypatch.undo()
    # a file of the old form (32-byte values, no format) under the key is not read: recorded again
    d = again.pce.A.dense()
    arrays = {f"{m}_{f}": getattr(getattr(again.pce, m).dense(), f) for m in "ABC" for f in ("row_ptr", "cols", "vals")}
    meta = {"n_inputs": again.layout.n_inputs, "n_aux": again.layout.n_aux, "n_constraints": again.layout.n_constraints}
    arrays["meta"] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
    np.savez(path, **arrays)
    assert d.nnz == again.pce.A.nnz
    third = record(c, tmp_path)
    assert not third.cached
    _same(third.pce, NaiveCS_pce(c))


def NaiveCS_pce(c: Circuit) -> PCE:
    naive = NaiveCS(BLS)
    c.synthesize(naive, None)
    return naive.pce()
