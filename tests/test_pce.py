"""cuzk.r1cs.pce (CSR mat-vec, unsatisfied constraints, transpose, densities) against Python-int
references, on random matrices, the circom example fixture and the synthetic circuits, over the scalar
field of every curve (``C``: BLS12-381, BN254)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import BLS, BN254, CURVES, fixture_dir, on_curves
from hypothesis import given, settings
from hypothesis import strategies as st

from cuzk.r1cs import synthetic
from cuzk.r1cs.pce import CSR, PCE, append_identity_rows, empty_rows, transpose
from cuzk.r1cs.r1cs import read_r1cs
from cuzk.r1cs.wtns import read_wtns

SETTINGS = settings(max_examples=60, deadline=None)


def coef(R: int):
    """Coefficients of the field of order R, edge values first."""
    return st.one_of(st.sampled_from([0, 1, 2, R - 1, R - 2, (R - 1) // 2]), st.integers(0, R - 1))


@st.composite
def coo_matrix(draw, R: int, allow_duplicates=True):
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
            entries.append((r, c, draw(coef(R))))
    return n_rows, n_cols, entries


def csr_from_coo(n_rows: int, n_cols: int, entries, fr) -> CSR:
    row_ptr = np.zeros(n_rows + 1, dtype=np.int64)
    for r, _, _ in entries:
        row_ptr[r + 1] += 1
    np.cumsum(row_ptr, out=row_ptr)
    cols = np.array([c for _, c, _ in entries], dtype=np.uint32)
    vals = fr.from_ints([v for _, _, v in entries])
    return CSR(row_ptr, cols, vals, n_cols, fr)


def csr_entries(m: CSR) -> list[list[tuple[int, int]]]:
    """Per row, the (col, canonical value) list in storage order."""
    vals = m.field.to_ints(m.vals)
    return [[(int(m.cols[j]), vals[j]) for j in range(int(m.row_ptr[r]), int(m.row_ptr[r + 1]))] for r in range(m.n_rows)]


def naive_matvec(m: CSR, w: list[int]) -> list[int]:
    R = m.field.p
    return [sum(v * w[c] for c, v in row) % R for row in csr_entries(m)]


def dense(n_rows: int, n_cols: int, entries, R: int) -> list[list[int]]:
    d = [[0] * n_cols for _ in range(n_rows)]
    for r, c, v in entries:
        d[r][c] = (d[r][c] + v) % R
    return d


# ---------------------------------------------------------------------------------------------
# CSR.matvec


@on_curves
@SETTINGS
@given(data=st.data())
def test_matvec_matches_naive(C, data):
    R, fr = C.r, C.fr
    n_rows, n_cols, entries = data.draw(coo_matrix(R))
    m = csr_from_coo(n_rows, n_cols, entries, fr)
    w = data.draw(st.lists(coef(R), min_size=n_cols, max_size=n_cols))
    got = fr.to_ints(m.matvec(fr.from_ints(w)))
    d = dense(n_rows, n_cols, entries, R)
    assert got == [sum(d[r][c] * w[c] for c in range(n_cols)) % R for r in range(n_rows)]
    assert got == naive_matvec(m, w)
    assert m.n_rows == n_rows and m.nnz == len(entries)


@on_curves
@SETTINGS
@given(data=st.data())
def test_from_rows_matvec(C, data):
    R, fr = C.r, C.fr
    rows = data.draw(st.lists(st.dictionaries(st.integers(0, 5), coef(R), max_size=6), max_size=8))
    m = CSR.from_rows(rows, 6, fr)
    assert m.field is fr
    assert [dict(r) for r in csr_entries(m)] == [{c: v for c, v in row.items()} for row in rows]
    w = data.draw(st.lists(coef(R), min_size=6, max_size=6))
    assert fr.to_ints(m.matvec(fr.from_ints(w))) == [sum(v * w[c] for c, v in row.items()) % R for row in rows]


@on_curves
def test_matvec_one_coefficient_fast_path(C):
    # value 1 skips the multiplication; r-1 and 1 must cancel exactly
    R, fr = C.r, C.fr
    m = CSR.from_rows([{0: 1, 1: R - 1}, {2: 1}, {}, {0: 1, 1: 1, 2: 1}], 3, fr)
    w = [R - 1, R - 1, 12345]
    out = m.matvec(fr.from_ints(w))
    assert fr.to_ints(out) == [0, 12345, 0, (2 * (R - 1) + 12345) % R]


@on_curves
def test_matvec_out_and_shape_check(C):
    fr = C.fr
    m = CSR.from_rows([{0: 3}, {1: 4}], 2, fr)
    out = fr.zeros(2)
    res = m.matvec(fr.from_ints([5, 6]), out=out)
    assert res is out and fr.to_ints(out) == [15, 24]
    with pytest.raises(ValueError, match="3 entries.*2 columns"):
        m.matvec(fr.from_ints([1, 2, 3]))


def test_matvec_field_is_the_matrix_or_given():
    # the same coefficients reduce differently in each field: the matrix's field is used, or the one passed
    bls, bn = BLS.fr, BN254.fr
    m = CSR.from_rows([{0: bn.p + 1}], 1, bls)  # a BLS12-381 coefficient above BN254's r
    w = [bn.p - 1]
    assert bls.to_ints(m.matvec(bls.from_ints(w))) == [(bn.p + 1) * (bn.p - 1) % bls.p]
    small = CSR.from_rows([{0: 7}], 1, bls)
    bare = CSR(small.row_ptr, small.cols, bn.from_ints([7]), 1)  # no field
    with pytest.raises(ValueError, match="field is unknown"):
        bare.matvec(bn.from_ints([3]))
    assert bn.to_ints(bare.matvec(bn.from_ints([3]), field=bn)) == [21]


# ---------------------------------------------------------------------------------------------
# transpose / identity rows / empty rows


@on_curves
@SETTINGS
@given(data=st.data())
def test_transpose(C, data):
    n_rows, n_cols, entries = data.draw(coo_matrix(C.r))
    m = csr_from_coo(n_rows, n_cols, entries, C.fr)
    t = transpose(m)
    assert t.n_rows == n_cols and t.n_cols == n_rows and t.nnz == m.nnz
    assert t.row_ptr.dtype == np.int64 and t.row_ptr[0] == 0 and t.row_ptr[-1] == m.nnz
    # exact entries: row c of t lists (old row, value) in old storage order
    expect = [[(r, v) for r, cc, v in entries if cc == c] for c in range(n_cols)]
    assert csr_entries(t) == expect
    assert t.field is C.fr
    d = dense(n_rows, n_cols, entries, C.r)
    dt = dense(n_cols, n_rows, [(c, r, v) for r, c, v in entries], C.r)
    assert dt == [[d[r][c] for r in range(n_rows)] for c in range(n_cols)]


@on_curves
@SETTINGS
@given(data=st.data())
def test_double_transpose_and_adjoint(C, data):
    R, fr = C.r, C.fr
    n_rows, n_cols, entries = data.draw(coo_matrix(R, allow_duplicates=False))
    m = csr_from_coo(n_rows, n_cols, entries, fr)
    tt = transpose(transpose(m))
    assert np.array_equal(tt.row_ptr, m.row_ptr)
    assert np.array_equal(tt.cols, m.cols)
    assert np.array_equal(tt.vals, m.vals)
    # <y, M x> == <M^T y, x>
    x = data.draw(st.lists(coef(R), min_size=n_cols, max_size=n_cols))
    y = data.draw(st.lists(coef(R), min_size=n_rows, max_size=n_rows))
    mx = fr.to_ints(m.matvec(fr.from_ints(x)))
    mty = fr.to_ints(transpose(m).matvec(fr.from_ints(y)))
    assert sum(a * b for a, b in zip(y, mx)) % R == sum(a * b for a, b in zip(mty, x)) % R


@on_curves
def test_transpose_known(C):
    R = C.r
    m = CSR.from_rows([{0: 1, 2: 5}, {}, {1: 7, 2: R - 1}], 4, C.fr)
    t = transpose(m)
    assert csr_entries(t) == [[(0, 1)], [(2, 7)], [(0, 5), (2, R - 1)], []]
    assert t.n_cols == 3


@on_curves
@SETTINGS
@given(data=st.data(), k=st.integers(0, 4))
def test_append_identity_and_empty_rows(C, data, k):
    n_rows, n_cols, entries = data.draw(coo_matrix(C.r))
    k = min(k, n_cols)
    m = csr_from_coo(n_rows, n_cols, entries, C.fr)
    a = append_identity_rows(m, k)
    assert a.n_rows == n_rows + k
    assert csr_entries(a) == csr_entries(m) + [[(i, 1)] for i in range(k)]
    e = empty_rows(m, k)
    assert csr_entries(e) == csr_entries(m) + [[] for _ in range(k)]


# ---------------------------------------------------------------------------------------------
# column density


@on_curves
@SETTINGS
@given(data=st.data())
def test_column_density(C, data):
    n_rows, n_cols, entries = data.draw(coo_matrix(C.r))
    m = csr_from_coo(n_rows, n_cols, entries, C.fr)
    expect = [any(c == col and v != 0 for _, c, v in entries) for col in range(n_cols)]
    got = m.column_density()
    assert got.dtype == np.bool_ and got.tolist() == expect


@on_curves
def test_column_density_zero_coefficient_is_sparse(C):
    m = CSR.from_rows([{0: 0, 1: 3}, {0: 0}], 3, C.fr)
    assert m.column_density().tolist() == [False, True, False]
    assert CSR.from_rows([], 2, C.fr).column_density().tolist() == [False, False]


# ---------------------------------------------------------------------------------------------
# the example fixture (references from snarkjs' r1cs.json / witness.json)


@pytest.fixture(scope="module", params=CURVES, ids=lambda c: c.name)
def example(request):
    """The circom example on each curve: (R1CS, witness, constraints from r1cs.json, witness.json)."""
    base = fixture_dir(request.param, "example")
    r = read_r1cs(base / "circuit.r1cs")
    assert r.curve == request.param
    w = read_wtns(base / "witness.wtns", expected_wires=r.n_wires, curve=r.curve)
    rj = json.loads((base / "r1cs.json").read_text())
    wj = [int(x) for x in json.loads((base / "witness.json").read_text())]
    cons = [[{int(k): int(v) for k, v in lc.items()} for lc in c] for c in rj["constraints"]]
    return r, w, cons, wj


def naive_violated(cons, w: list[int], R: int) -> list[int]:
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
    fr, R = r.curve.fr, r.curve.r
    assert fr.to_ints(w) == wj
    a, b, c = r.pce.evaluate(w)
    for m, got in enumerate((a, b, c)):
        assert fr.to_ints(got) == [sum(v * wj[k] for k, v in lc[m].items()) % R for lc in cons]
    assert r.pce.unsatisfied(w).tolist() == [] == naive_violated(cons, wj, R)


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
    fr, R = r.curve.fr, r.curve.r
    nonempty = 0
    for wire in range(r.n_wires):
        bad = list(wj)
        bad[wire] = (bad[wire] + 1) % R
        expect = naive_violated(cons, bad, R)
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
    fr, R = r.curve.fr, r.curve.r
    bad = list(wj)
    for wire in data.draw(st.lists(st.integers(0, r.n_wires - 1), min_size=1, max_size=5, unique=True)):
        bad[wire] = data.draw(coef(R))
    assert r.pce.unsatisfied(fr.from_ints(bad)).tolist() == naive_violated(cons, bad, R)


# ---------------------------------------------------------------------------------------------
# synthetic circuits


def csr_constraints(pce: PCE):
    R = pce.field.p
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


@on_curves
@pytest.mark.parametrize(
    "make",
    [lambda C: synthetic.chain(20, seed=12345, curve=C), lambda C: synthetic.hash_like(36, seed=99, curve=C)],
    ids=["chain", "hash"],
)
def test_synthetic_unsatisfied(C, make):
    fr, R = C.fr, C.r
    circ = make(C)
    pce = circ.pce
    assert pce.field is fr
    cons = csr_constraints(pce)
    w = fr.to_ints(circ.witness)
    assert len(w) == pce.n_wires and w[0] == 1
    assert pce.unsatisfied(circ.witness).tolist() == [] == naive_violated(cons, w, R)
    caught = 0
    for wire in range(pce.n_wires):
        bad = list(w)
        bad[wire] = (bad[wire] + 5) % R
        expect = naive_violated(cons, bad, R)
        assert pce.unsatisfied(fr.from_ints(bad)).tolist() == expect, f"wire {wire}"
        caught += bool(expect)
    # every wire that appears in some constraint is caught (chain never mentions wire 0)
    mentioned = {k for c in cons for lc in c for k, v in lc.items() if v}
    assert caught == len(mentioned) >= pce.n_wires - 1


@on_curves
def test_chain_flip_breaks_neighbouring_constraints(C):
    fr, R = C.fr, C.r
    n = 16
    circ = synthetic.chain(n, seed=777, curve=C)
    w = fr.to_ints(circ.witness)
    # wires: 0 one, 1 = x_n, 2 = x_0, 3.. = x_1..x_{n-1}; constraint i: x_i * x_i = x_{i+1}
    wire_of = [2] + [i + 2 for i in range(1, n)] + [1]
    for i in range(n + 1):
        bad = list(w)
        bad[wire_of[i]] = (bad[wire_of[i]] + 1) % R
        expect = [j for j in (i - 1, i) if 0 <= j < n]
        assert circ.pce.unsatisfied(fr.from_ints(bad)).tolist() == expect


@on_curves
@SETTINGS
@given(n=st.integers(12, 60), seed=st.integers(0, 2**64), data=st.data())
def test_hash_like_random_corruptions(C, n, seed, data):
    fr, R = C.fr, C.r
    circ = synthetic.hash_like(n, seed=seed, curve=C)
    cons = csr_constraints(circ.pce)
    w = fr.to_ints(circ.witness)
    assert circ.pce.unsatisfied(circ.witness).size == 0
    bad = list(w)
    for wire in data.draw(st.lists(st.integers(0, len(w) - 1), min_size=1, max_size=4, unique=True)):
        bad[wire] = data.draw(coef(R))
    assert circ.pce.unsatisfied(fr.from_ints(bad)).tolist() == naive_violated(cons, bad, R)


@on_curves
def test_pce_counts(C):
    circ = synthetic.hash_like(24, seed=1, curve=C)
    p = circ.pce
    assert p.n_constraints == 2 * 12 + 1
    assert p.A.n_rows == p.B.n_rows == p.C.n_rows == p.n_constraints
    assert p.A.n_cols == p.n_wires and p.n_public == 3
    assert p.field is C.fr and all(m.field is C.fr for m in (p.A, p.B, p.C))
    assert p.memory_bytes() == sum(m.row_ptr.nbytes + m.cols.nbytes + m.vals.nbytes for m in (p.A, p.B, p.C))
