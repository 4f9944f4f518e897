"""cuzk.r1cs.pce (CSR mat-vec, unsatisfied constraints, transpose, densities) against Python-int
references, on random matrices, the circom example fixture and the synthetic circuits."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cuzk.field import fr
from cuzk.field.constants import R
from cuzk.r1cs import synthetic
from cuzk.r1cs.pce import CSR, PCE, append_identity_rows, empty_rows, transpose
from cuzk.r1cs.r1cs import read_r1cs
from cuzk.r1cs.wtns import read_wtns

SETTINGS = settings(max_examples=60, deadline=None)

coef = st.one_of(st.sampled_from([0, 1, 2, R - 1, R - 2, (R - 1) // 2]), st.integers(0, R - 1))


@st.composite
def coo_matrix(draw, allow_duplicates=True):
    """(n_rows, n_cols, entries): entries are (row, col, value) in row-major storage order."""
    n_rows = draw(st.integers(0, 8))
    n_cols = draw(st.integers(1, 8))
    entries = []
    for r in range(n_rows):
        if draw(st.booleans()) and draw(st.booleans()):
            continue  # empty row (about a quarter of them)
        if allow_duplicates:
            cols = draw(st.lists(st.integers(0, n_cols - 1), max_size=6))
        else:
            cols = sorted(draw(st.sets(st.integers(0, n_cols - 1), max_size=n_cols)))
        for c in cols:
            entries.append((r, c, draw(coef)))
    return n_rows, n_cols, entries


def csr_from_coo(n_rows: int, n_cols: int, entries) -> CSR:
    row_ptr = np.zeros(n_rows + 1, dtype=np.int64)
    for r, _, _ in entries:
        row_ptr[r + 1] += 1
    np.cumsum(row_ptr, out=row_ptr)
    cols = np.array([c for _, c, _ in entries], dtype=np.uint32)
    vals = fr.from_ints([v for _, _, v in entries])
    return CSR(row_ptr, cols, vals, n_cols)


def csr_entries(m: CSR) -> list[list[tuple[int, int]]]:
    """Per row, the (col, canonical value) list in storage order."""
    vals = fr.to_ints(m.vals)
    return [[(int(m.cols[j]), vals[j]) for j in range(int(m.row_ptr[r]), int(m.row_ptr[r + 1]))] for r in range(m.n_rows)]


def naive_matvec(m: CSR, w: list[int]) -> list[int]:
    return [sum(v * w[c] for c, v in row) % R for row in csr_entries(m)]


def dense(n_rows: int, n_cols: int, entries) -> list[list[int]]:
    d = [[0] * n_cols for _ in range(n_rows)]
    for r, c, v in entries:
        d[r][c] = (d[r][c] + v) % R
    return d


# ---------------------------------------------------------------------------------------------
# CSR.matvec


@SETTINGS
@given(coo_matrix(), st.data())
def test_matvec_matches_naive(mat, data):
    n_rows, n_cols, entries = mat
    m = csr_from_coo(n_rows, n_cols, entries)
    w = data.draw(st.lists(coef, min_size=n_cols, max_size=n_cols))
    got = fr.to_ints(m.matvec(fr.from_ints(w)))
    d = dense(n_rows, n_cols, entries)
    assert got == [sum(d[r][c] * w[c] for c in range(n_cols)) % R for r in range(n_rows)]
    assert got == naive_matvec(m, w)
    assert m.n_rows == n_rows and m.nnz == len(entries)


@SETTINGS
@given(st.lists(st.dictionaries(st.integers(0, 5), coef, max_size=6), max_size=8), st.data())
def test_from_rows_matvec(rows, data):
    m = CSR.from_rows(rows, 6)
    assert [dict(r) for r in csr_entries(m)] == [{c: v for c, v in row.items()} for row in rows]
    w = data.draw(st.lists(coef, min_size=6, max_size=6))
    assert fr.to_ints(m.matvec(fr.from_ints(w))) == [sum(v * w[c] for c, v in row.items()) % R for row in rows]


def test_matvec_one_coefficient_fast_path():
    # value 1 skips the multiplication; r-1 and 1 must cancel exactly
    m = CSR.from_rows([{0: 1, 1: R - 1}, {2: 1}, {}, {0: 1, 1: 1, 2: 1}], 3)
    w = [R - 1, R - 1, 12345]
    out = m.matvec(fr.from_ints(w))
    assert fr.to_ints(out) == [0, 12345, 0, (2 * (R - 1) + 12345) % R]


def test_matvec_out_and_shape_check():
    m = CSR.from_rows([{0: 3}, {1: 4}], 2)
    out = fr.zeros(2)
    res = m.matvec(fr.from_ints([5, 6]), out=out)
    assert res is out and fr.to_ints(out) == [15, 24]
    with pytest.raises(ValueError, match="3 entries.*2 columns"):
        m.matvec(fr.from_ints([1, 2, 3]))


# ---------------------------------------------------------------------------------------------
# transpose / identity rows / empty rows


@SETTINGS
@given(coo_matrix())
def test_transpose(mat):
    n_rows, n_cols, entries = mat
    m = csr_from_coo(n_rows, n_cols, entries)
    t = transpose(m)
    assert t.n_rows == n_cols and t.n_cols == n_rows and t.nnz == m.nnz
    assert t.row_ptr.dtype == np.int64 and t.row_ptr[0] == 0 and t.row_ptr[-1] == m.nnz
    # exact entries: row c of t lists (old row, value) in old storage order
    expect = [[(r, v) for r, cc, v in entries if cc == c] for c in range(n_cols)]
    assert csr_entries(t) == expect
    d = dense(n_rows, n_cols, entries)
    dt = dense(n_cols, n_rows, [(c, r, v) for r, c, v in entries])
    assert dt == [[d[r][c] for r in range(n_rows)] for c in range(n_cols)]


@SETTINGS
@given(coo_matrix(allow_duplicates=False), st.data())
def test_double_transpose_and_adjoint(mat, data):
    n_rows, n_cols, entries = mat
    m = csr_from_coo(n_rows, n_cols, entries)
    tt = transpose(transpose(m))
    assert np.array_equal(tt.row_ptr, m.row_ptr)
    assert np.array_equal(tt.cols, m.cols)
    assert np.array_equal(tt.vals, m.vals)
    # <y, M x> == <M^T y, x>
    x = data.draw(st.lists(coef, min_size=n_cols, max_size=n_cols))
    y = data.draw(st.lists(coef, min_size=n_rows, max_size=n_rows))
    mx = fr.to_ints(m.matvec(fr.from_ints(x)))
    mty = fr.to_ints(transpose(m).matvec(fr.from_ints(y)))
    assert sum(a * b for a, b in zip(y, mx)) % R == sum(a * b for a, b in zip(mty, x)) % R


def test_transpose_known():
    m = CSR.from_rows([{0: 1, 2: 5}, {}, {1: 7, 2: R - 1}], 4)
    t = transpose(m)
    assert csr_entries(t) == [[(0, 1)], [(2, 7)], [(0, 5), (2, R - 1)], []]
    assert t.n_cols == 3


@SETTINGS
@given(coo_matrix(), st.integers(0, 4))
def test_append_identity_and_empty_rows(mat, k):
    n_rows, n_cols, entries = mat
    k = min(k, n_cols)
    m = csr_from_coo(n_rows, n_cols, entries)
    a = append_identity_rows(m, k)
    assert a.n_rows == n_rows + k
    assert csr_entries(a) == csr_entries(m) + [[(i, 1)] for i in range(k)]
    e = empty_rows(m, k)
    assert csr_entries(e) == csr_entries(m) + [[] for _ in range(k)]


# ---------------------------------------------------------------------------------------------
# column density


@SETTINGS
@given(coo_matrix())
def test_column_density(mat):
    n_rows, n_cols, entries = mat
    m = csr_from_coo(n_rows, n_cols, entries)
    expect = [any(c == col and v != 0 for _, c, v in entries) for col in range(n_cols)]
    got = m.column_density()
    assert got.dtype == np.bool_ and got.tolist() == expect


def test_column_density_zero_coefficient_is_sparse():
    m = CSR.from_rows([{0: 0, 1: 3}, {0: 0}], 3)
    assert m.column_density().tolist() == [False, True, False]
    assert CSR.from_rows([], 2).column_density().tolist() == [False, False]


# ---------------------------------------------------------------------------------------------
# the example fixture (references from snarkjs' r1cs.json / witness.json)


@pytest.fixture(scope="module")
def example():
    base = Path(__file__).resolve().parent / "fixtures" / "example"
    r = read_r1cs(base / "circuit.r1cs")
    w = read_wtns(base / "witness.wtns", expected_wires=r.n_wires)
    rj = json.loads((base / "r1cs.json").read_text())
    wj = [int(x) for x in json.loads((base / "witness.json").read_text())]
    cons = [[{int(k): int(v) for k, v in lc.items()} for lc in c] for c in rj["constraints"]]
    return r, w, cons, wj


def naive_violated(cons, w: list[int]) -> list[int]:
    out = []
    for i, (a, b, c) in enumerate(cons):
        ea = sum(v * w[k] for k, v in a.items())
        eb = sum(v * w[k] for k, v in b.items())
        ec = sum(v * w[k] for k, v in c.items())
        if (ea * eb - ec) % R:
            out.append(i)
    return out


def test_example_evaluate_matches_json(example):
    r, w, cons, wj = example
    assert fr.to_ints(w) == wj
    a, b, c = r.pce.evaluate(w)
    for m, got in enumerate((a, b, c)):
        assert fr.to_ints(got) == [sum(v * wj[k] for k, v in lc[m].items()) % R for lc in cons]
    assert r.pce.unsatisfied(w).tolist() == [] == naive_violated(cons, wj)


def test_example_density_matches_json(example):
    r, _, cons, _ = example
    dens = r.pce.density()
    for m, key in ((0, "a"), (1, "b")):
        expect = [False] * r.n_wires
        for lc in cons:
            for k, v in lc[m].items():
                if v:
                    expect[k] = True
        assert dens[key].tolist() == expect
    assert not all(dens["b"]) and any(dens["b"])


def test_example_unsatisfied_after_single_flip(example):
    r, w, cons, wj = example
    nonempty = 0
    for wire in range(r.n_wires):
        bad = list(wj)
        bad[wire] = (bad[wire] + 1) % R
        expect = naive_violated(cons, bad)
        got = r.pce.unsatisfied(fr.from_ints(bad)).tolist()
        assert got == expect, f"wire {wire}"
        # only constraints mentioning the wire can break
        assert all(any(wire in lc for lc in cons[i]) for i in got)
        nonempty += bool(expect)
    # every wire of a circom circuit is constrained somewhere, so every flip is caught
    assert nonempty == r.n_wires


@SETTINGS
@given(st.data())
def test_example_unsatisfied_random_corruptions(example, data):
    r, w, cons, wj = example
    bad = list(wj)
    for wire in data.draw(st.lists(st.integers(0, r.n_wires - 1), min_size=1, max_size=5, unique=True)):
        bad[wire] = data.draw(coef)
    assert r.pce.unsatisfied(fr.from_ints(bad)).tolist() == naive_violated(cons, bad)


# ---------------------------------------------------------------------------------------------
# synthetic circuits


def csr_constraints(pce: PCE):
    mats = [csr_entries(m) for m in (pce.A, pce.B, pce.C)]
    out = []
    for i in range(pce.n_constraints):
        lcs = []
        for m in mats:
            d: dict[int, int] = {}
            for c, v in m[i]:
                d[c] = (d.get(c, 0) + v) % R
            lcs.append(d)
        out.append(lcs)
    return out


@pytest.mark.parametrize(
    "make", [lambda: synthetic.chain(20, seed=12345), lambda: synthetic.hash_like(36, seed=99)], ids=["chain", "hash"]
)
def test_synthetic_unsatisfied(make):
    circ = make()
    pce = circ.pce
    cons = csr_constraints(pce)
    w = fr.to_ints(circ.witness)
    assert len(w) == pce.n_wires and w[0] == 1
    assert pce.unsatisfied(circ.witness).tolist() == [] == naive_violated(cons, w)
    caught = 0
    for wire in range(pce.n_wires):
        bad = list(w)
        bad[wire] = (bad[wire] + 5) % R
        expect = naive_violated(cons, bad)
        assert pce.unsatisfied(fr.from_ints(bad)).tolist() == expect, f"wire {wire}"
        caught += bool(expect)
    # every wire that appears in some constraint is caught (chain never mentions wire 0)
    mentioned = {k for c in cons for lc in c for k, v in lc.items() if v}
    assert caught == len(mentioned) >= pce.n_wires - 1


def test_chain_flip_breaks_neighbouring_constraints():
    n = 16
    circ = synthetic.chain(n, seed=777)
    w = fr.to_ints(circ.witness)
    # wires: 0 one, 1 = x_n, 2 = x_0, 3.. = x_1..x_{n-1}; constraint i: x_i * x_i = x_{i+1}
    wire_of = [2] + [i + 2 for i in range(1, n)] + [1]
    for i in range(n + 1):
        bad = list(w)
        bad[wire_of[i]] = (bad[wire_of[i]] + 1) % R
        expect = [j for j in (i - 1, i) if 0 <= j < n]
        assert circ.pce.unsatisfied(fr.from_ints(bad)).tolist() == expect


@SETTINGS
@given(st.integers(12, 60), st.integers(0, 2**64), st.data())
def test_hash_like_random_corruptions(n, seed, data):
    circ = synthetic.hash_like(n, seed=seed)
    cons = csr_constraints(circ.pce)
    w = fr.to_ints(circ.witness)
    assert circ.pce.unsatisfied(circ.witness).size == 0
    bad = list(w)
    for wire in data.draw(st.lists(st.integers(0, len(w) - 1), min_size=1, max_size=4, unique=True)):
        bad[wire] = data.draw(coef)
    assert circ.pce.unsatisfied(fr.from_ints(bad)).tolist() == naive_violated(cons, bad)


def test_pce_counts():
    circ = synthetic.hash_like(24, seed=1)
    p = circ.pce
    assert p.n_constraints == 2 * 12 + 1
    assert p.A.n_rows == p.B.n_rows == p.C.n_rows == p.n_constraints
    assert p.A.n_cols == p.n_wires and p.n_public == 3
    assert p.memory_bytes() == sum(m.row_ptr.nbytes + m.cols.nbytes + m.vals.nbytes for m in (p.A, p.B, p.C))
