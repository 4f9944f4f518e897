"""Pre-compiled constraint evaluator (PCE).

A circuit's R1CS is held as three CSR matrices A, B, C over the curve's scalar field Fr (rows =
constraints, columns = wires, values in Montgomery form) plus density bitmaps. Per proof only the
witness changes, and the evaluation vectors are three sparse mat-vecs: a = A.w, b = B.w, c = C.w (mod r).
"""

from __future__ import annotations

from dataclasses import dataclass

import numba as nb
import numpy as np

from ..field import mont4
from ..field.prime import PrimeField, empty

_Z = np.uint64(0)


@dataclass
class CSR:
    """Compressed sparse rows: row r holds entries row_ptr[r]:row_ptr[r+1] of (cols, vals)."""

    row_ptr: np.ndarray  # int64, rows+1
    cols: np.ndarray  # uint32, nnz
    vals: np.ndarray  # (nnz, 4) uint64, Montgomery Fr
    n_cols: int
    field: PrimeField | None = None  # the field of vals (set by the readers; a caller may pass it instead)

    @property
    def n_rows(self) -> int:
        return self.row_ptr.shape[0] - 1

    @property
    def nnz(self) -> int:
        return int(self.cols.shape[0])

    def column_density(self) -> np.ndarray:
        """Bool per column: does any row have a non-zero entry there."""
        d = np.zeros(self.n_cols, dtype=np.bool_)
        if self.nnz:
            nz = np.any(self.vals != 0, axis=1)
            d[self.cols[nz]] = True
        return d

    def matvec(self, w: np.ndarray, out: np.ndarray | None = None, field: PrimeField | None = None) -> np.ndarray:
        field = field or self.field
        if field is None:
            raise ValueError("CSR.matvec: the matrix's field is unknown (pass field=)")
        if w.shape[0] != self.n_cols:
            raise ValueError(f"witness has {w.shape[0]} entries, matrix has {self.n_cols} columns")
        out = empty(self.n_rows) if out is None else out
        _k_spmv(self.row_ptr, self.cols, self.vals, w, out, field.m)
        return out

    def memory_bytes(self) -> int:
        return self.row_ptr.nbytes + self.cols.nbytes + self.vals.nbytes

    def dense(self) -> CSR:
        """This matrix with one Montgomery value per non-zero (itself: it already is)."""
        return self

    @staticmethod
    def from_rows(rows: list[dict[int, int]], n_cols: int, field: PrimeField) -> CSR:
        """Build from per-row {column: canonical coefficient} dicts (small circuits, tests)."""
        row_ptr = np.zeros(len(rows) + 1, dtype=np.int64)
        cols: list[int] = []
        vals: list[int] = []
        for i, row in enumerate(rows):
            for c in sorted(row):
                cols.append(c)
                vals.append(row[c])
            row_ptr[i + 1] = len(cols)
        return CSR(row_ptr, np.array(cols, dtype=np.uint32), field.from_ints(vals), n_cols, field)


class IndexedCSR(CSR):
    """A CSR whose non-zeros are indices (``coef``, uint16 or uint32) into a table of the distinct
    Montgomery coefficients (``table``, (k, 4) uint64): a Python circuit's recording, whose linear layers
    repeat a few hundred coefficients over hundreds of millions of non-zeros (2 bytes each instead of 32).

    ``vals`` is computed from the table on every access (nothing is kept), so each reader of a CSR's values
    works unchanged; :meth:`dense` gives the plain CSR, and :meth:`PCE.qap_matrices` (the proving key's
    matrices: setup, the GPU upload) always does. :meth:`matvec` and :meth:`column_density` read the
    indices."""

    def __init__(
        self, row_ptr: np.ndarray, cols: np.ndarray, coef: np.ndarray, table: np.ndarray, n_cols: int, field: PrimeField | None
    ):
        if coef.dtype not in (np.uint16, np.uint32) or coef.shape != cols.shape:
            raise ValueError(
                f"IndexedCSR: coefficient indices of dtype {coef.dtype}, shape {coef.shape}: expected uint16/32, {cols.shape}"
            )
        if table.ndim != 2 or table.shape[1] != 4 or table.dtype != np.uint64:
            raise ValueError(f"IndexedCSR: a coefficient table of shape {table.shape}, {table.dtype}: expected (k, 4) uint64")
        self.row_ptr = row_ptr
        self.cols = cols
        self.coef = coef
        self.table = table
        self.n_cols = n_cols
        self.field = field

    @property  # type: ignore[override]
    def vals(self) -> np.ndarray:
        """The (nnz, 4) Montgomery values, made now (32 bytes per non-zero)."""
        if self.coef.size == 0:
            return np.zeros((0, 4), dtype=np.uint64)
        return np.take(self.table, self.coef, axis=0)

    @vals.setter
    def vals(self, v: np.ndarray) -> None:
        raise AttributeError("IndexedCSR.vals is computed from its table: build a CSR to set values")

    def dense(self) -> CSR:
        return CSR(self.row_ptr, self.cols, self.vals, self.n_cols, self.field)

    def column_density(self) -> np.ndarray:
        d = np.zeros(self.n_cols, dtype=np.bool_)
        if self.nnz:
            nz = np.any(self.table != 0, axis=1)
            d[self.cols[nz[self.coef]]] = True
        return d

    def matvec(self, w: np.ndarray, out: np.ndarray | None = None, field: PrimeField | None = None) -> np.ndarray:
        field = field or self.field
        if field is None:
            raise ValueError("CSR.matvec: the matrix's field is unknown (pass field=)")
        if w.shape[0] != self.n_cols:
            raise ValueError(f"witness has {w.shape[0]} entries, matrix has {self.n_cols} columns")
        out = empty(self.n_rows) if out is None else out
        unit = np.all(self.table == field.one_mont(), axis=1)  # Montgomery one: the multiply is skipped
        table = self.table if self.table.shape[0] else np.zeros((1, 4), dtype=np.uint64)
        _k_spmv_indexed(self.row_ptr, self.cols, self.coef, table, unit if unit.size else np.zeros(1, np.bool_), w, out, field.m)
        return out

    def memory_bytes(self) -> int:
        return self.row_ptr.nbytes + self.cols.nbytes + self.coef.nbytes + self.table.nbytes


@nb.njit(parallel=True, cache=True)
def _k_spmv_indexed(row_ptr, cols, coef, table, unit, w, out, fm):
    p0, p1, p2, p3, inv = fm[0], fm[1], fm[2], fm[3], fm[4]
    m = row_ptr.shape[0] - 1
    for r in nb.prange(m):
        s0 = s1 = s2 = s3 = _Z
        for j in range(row_ptr[r], row_ptr[r + 1]):
            c = cols[j]
            k = coef[j]
            if unit[k]:
                t0, t1, t2, t3 = w[c, 0], w[c, 1], w[c, 2], w[c, 3]
            else:
                t0, t1, t2, t3 = mont4.mul(
                    table[k, 0], table[k, 1], table[k, 2], table[k, 3], w[c, 0], w[c, 1], w[c, 2], w[c, 3], p0, p1, p2, p3, inv
                )
            s0, s1, s2, s3 = mont4.add(s0, s1, s2, s3, t0, t1, t2, t3, p0, p1, p2, p3)
        out[r, 0], out[r, 1], out[r, 2], out[r, 3] = s0, s1, s2, s3


@nb.njit(parallel=True, cache=True)
def _k_spmv(row_ptr, cols, vals, w, out, fm):
    p0, p1, p2, p3, inv = fm[0], fm[1], fm[2], fm[3], fm[4]
    o0, o1, o2, o3 = fm[9], fm[10], fm[11], fm[12]  # one, Montgomery: unit coefficients skip the multiply
    m = row_ptr.shape[0] - 1
    for r in nb.prange(m):
        s0 = s1 = s2 = s3 = _Z
        for j in range(row_ptr[r], row_ptr[r + 1]):
            c = cols[j]
            v0, v1, v2, v3 = vals[j, 0], vals[j, 1], vals[j, 2], vals[j, 3]
            if v0 == o0 and v1 == o1 and v2 == o2 and v3 == o3:
                t0, t1, t2, t3 = w[c, 0], w[c, 1], w[c, 2], w[c, 3]
            else:
                t0, t1, t2, t3 = mont4.mul(v0, v1, v2, v3, w[c, 0], w[c, 1], w[c, 2], w[c, 3], p0, p1, p2, p3, inv)
            s0, s1, s2, s3 = mont4.add(s0, s1, s2, s3, t0, t1, t2, t3, p0, p1, p2, p3)
        out[r, 0], out[r, 1], out[r, 2], out[r, 3] = s0, s1, s2, s3


@nb.njit(parallel=True, cache=True)
def _k_unsatisfied(a, b, c, flags, fm):
    p0, p1, p2, p3, inv = fm[0], fm[1], fm[2], fm[3], fm[4]
    for r in nb.prange(a.shape[0]):
        t0, t1, t2, t3 = mont4.mul(a[r, 0], a[r, 1], a[r, 2], a[r, 3], b[r, 0], b[r, 1], b[r, 2], b[r, 3], p0, p1, p2, p3, inv)
        d0, d1, d2, d3 = mont4.sub(t0, t1, t2, t3, c[r, 0], c[r, 1], c[r, 2], c[r, 3], p0, p1, p2, p3)
        flags[r] = (d0 | d1 | d2 | d3) != _Z


@dataclass
class PCE:
    """The pre-compiled evaluator of one circuit topology."""

    A: CSR
    B: CSR
    C: CSR
    n_wires: int
    n_public: int  # public signals, not counting the constant wire 0
    field: PrimeField | None = None  # the scalar field (defaults to A's)

    def __post_init__(self) -> None:
        self.field = self.field or self.A.field
        if self.field is None:
            raise ValueError("PCE: the scalar field is unknown (pass field= or matrices that carry it)")
        for m in (self.A, self.B, self.C):
            m.field = m.field or self.field

    @property
    def n_constraints(self) -> int:
        return self.A.n_rows

    def evaluate(self, w: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(A.w, B.w, C.w) for a Montgomery witness vector w."""
        return self.A.matvec(w), self.B.matvec(w), self.C.matvec(w)

    def unsatisfied(self, w: np.ndarray) -> np.ndarray:
        """Indices of the constraints that w violates (empty when w satisfies the system)."""
        a, b, c = self.evaluate(w)
        flags = np.empty(a.shape[0], dtype=np.bool_)
        _k_unsatisfied(a, b, c, flags, self.field.m)
        return np.flatnonzero(flags)

    def density(self) -> dict[str, np.ndarray]:
        """Which wires appear (non-zero) in A and in B."""
        return {"a": self.A.column_density(), "b": self.B.column_density()}

    def memory_bytes(self) -> int:
        return self.A.memory_bytes() + self.B.memory_bytes() + self.C.memory_bytes()

    def qap_matrices(self) -> tuple[CSR, CSR, CSR]:
        """A, B, C over the QAP rows: the constraints, then one A row {i: 1} per input wire
        (the constant and the public signals: the rows that bind the inputs, in snarkjs and bellperson).
        Always plain CSRs (one Montgomery value per non-zero), whatever form the PCE holds: the proving
        key's matrices, what the setup, the key cache and the GPU upload read."""
        n_inputs = self.n_public + 1
        A, B, C = self.A.dense(), self.B.dense(), self.C.dense()
        return append_identity_rows(A, n_inputs), empty_rows(B, n_inputs), empty_rows(C, n_inputs)


def transpose(m: CSR) -> CSR:
    """The transpose (columns become rows), entries of each new row in old-row order."""
    order = np.argsort(m.cols, kind="stable")
    rows = np.repeat(np.arange(m.n_rows, dtype=np.uint32), np.diff(m.row_ptr))
    row_ptr = np.zeros(m.n_cols + 1, dtype=np.int64)
    np.add.at(row_ptr, m.cols.astype(np.int64) + 1, 1)
    np.cumsum(row_ptr, out=row_ptr)
    return CSR(row_ptr, rows[order], np.ascontiguousarray(m.vals[order]), m.n_rows, m.field)


def append_identity_rows(m: CSR, n_inputs: int) -> CSR:
    """m with one extra row {i: 1} per input wire i < n_inputs (the public-input rows that bind the
    inputs in the QAP; snarkjs and bellperson both add them to A)."""
    row_ptr = np.concatenate([m.row_ptr, m.row_ptr[-1] + 1 + np.arange(n_inputs, dtype=np.int64)])
    cols = np.concatenate([m.cols, np.arange(n_inputs, dtype=np.uint32)])
    assert m.field is not None
    vals = np.concatenate([m.vals, np.tile(m.field.one_mont(), (n_inputs, 1))])
    return CSR(row_ptr, cols, vals, m.n_cols, m.field)


def empty_rows(m: CSR, extra: int) -> CSR:
    """m with ``extra`` empty rows appended."""
    return CSR(np.concatenate([m.row_ptr, np.full(extra, m.row_ptr[-1], dtype=np.int64)]), m.cols, m.vals, m.n_cols, m.field)
