"""Synthetic benchmark circuits with satisfying witnesses, built directly as CSR matrices.

* ``chain``: a squaring chain x_{i+1} = x_i^2 — every wire is dense in A and B, witness values are
  full-size field elements (the worst case for MSM).
* ``hash``: a Poseidon-like permutation of width 3: per round an x^5 S-box on each lane (3 non-linear
  constraints per lane) followed by a linear mixing layer written as linear constraints
  ((sum M_jk s_k + c_j) * 1 = y_j): a third of the rows are linear, as in real hash circuits.

Wire order follows circom: 0 = 1, public outputs, public inputs, private inputs, internal wires.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass

import numpy as np

from ..field import fr
from ..field.constants import R
from .pce import CSR, PCE


@dataclass
class Circuit:
    pce: PCE
    witness: np.ndarray  # Montgomery Fr vector
    n_pub_out: int
    n_pub_in: int
    n_prv_in: int
    name: str


def _csr(rows: np.ndarray, cols: np.ndarray, vals: np.ndarray, n_rows: int, n_cols: int) -> CSR:
    """CSR from coordinate triples (vals a Montgomery Fr vector); entries sorted by row, stable."""
    order = np.argsort(rows, kind="stable")
    row_ptr = np.zeros(n_rows + 1, dtype=np.int64)
    np.add.at(row_ptr, rows.astype(np.int64) + 1, 1)
    np.cumsum(row_ptr, out=row_ptr)
    return CSR(row_ptr, cols[order].astype(np.uint32), np.ascontiguousarray(vals[order]), n_cols)


def _ones(n: int) -> np.ndarray:
    return np.tile(fr.one_mont(), (n, 1))


def chain(n_constraints: int, seed: int | None = None) -> Circuit:
    """x_0 (public input) squared n times; x_n is the public output."""
    n = n_constraints
    n_wires = n + 2  # 1, x_n, x_0, x_1..x_{n-1}
    idx = np.arange(n + 1, dtype=np.int64)
    wire_of = np.where(idx == 0, 2, np.where(idx == n, 1, idx + 2))  # wire of x_i
    rows = np.arange(n, dtype=np.int64)
    one = _ones(n)
    A = _csr(rows, wire_of[:n], one, n, n_wires)
    B = _csr(rows, wire_of[:n], one, n, n_wires)
    C = _csr(rows, wire_of[1:], one, n, n_wires)
    x = (seed if seed is not None else secrets.randbelow(R - 2)) + 2
    vals = [0] * n_wires
    vals[0] = 1
    for i in range(n + 1):
        vals[int(wire_of[i])] = x
        x = x * x % R
    return Circuit(PCE(A, B, C, n_wires, 2), fr.from_ints(vals), 1, 1, 0, f"chain-{n}")


_T = 3
_MDS = [[2, 3, 1], [1, 2, 3], [3, 1, 2]]


def hash_like(n_constraints: int, seed: int | None = None) -> Circuit:
    """Rounds of x^5 S-boxes and linear mixing, width 3, about n_constraints rows (12 per round).

    Public inputs: two lanes of the initial state; private input: the third lane; public output: lane 0
    of the final state.
    """
    rounds = max(1, n_constraints // 12)
    rc = [[(7 * r + 3 * j + 1) ** 5 % R for j in range(_T)] for r in range(rounds)]
    rng = secrets.SystemRandom() if seed is None else None
    state = [rng.randrange(R) if rng else (seed + j) % R for j in range(_T)]
    # wires: 0 one, 1 out, 2,3 public inputs, 4 private input, then 12 per round
    lanes = [2, 3, 4]
    vals = [1, 0] + state
    rows_a, cols_a, vals_a = [], [], []
    rows_b, cols_b, vals_b = [], [], []
    rows_c, cols_c, vals_c = [], [], []
    row = 0
    w = 5
    for r in range(rounds):
        s5 = []
        for j in range(_T):
            x, xv = lanes[j], state[j]
            x2, x4, x5 = w, w + 1, w + 2
            w += 3
            v2 = xv * xv % R
            v4 = v2 * v2 % R
            v5 = v4 * xv % R
            vals += [v2, v4, v5]
            for a, b, c in ((x, x, x2), (x2, x2, x4), (x4, x, x5)):
                rows_a.append(row); cols_a.append(a); vals_a.append(1)
                rows_b.append(row); cols_b.append(b); vals_b.append(1)
                rows_c.append(row); cols_c.append(c); vals_c.append(1)
                row += 1
            s5.append((x5, v5))
        new_lanes, new_state = [], []
        for j in range(_T):
            y = w
            w += 1
            yv = (sum(_MDS[j][k] * s5[k][1] for k in range(_T)) + rc[r][j]) % R
            for k in range(_T):
                rows_a.append(row); cols_a.append(s5[k][0]); vals_a.append(_MDS[j][k])
            rows_a.append(row); cols_a.append(0); vals_a.append(rc[r][j])
            rows_b.append(row); cols_b.append(0); vals_b.append(1)
            rows_c.append(row); cols_c.append(y); vals_c.append(1)
            row += 1
            vals.append(yv)
            new_lanes.append(y)
            new_state.append(yv)
        lanes, state = new_lanes, new_state
    # output: out = lane 0 (a linear constraint)
    rows_a.append(row); cols_a.append(lanes[0]); vals_a.append(1)
    rows_b.append(row); cols_b.append(0); vals_b.append(1)
    rows_c.append(row); cols_c.append(1); vals_c.append(1)
    row += 1
    vals[1] = state[0]
    n_wires = w
    mats = [
        _csr(np.array(rr), np.array(cc), fr.from_ints(vv), row, n_wires)
        for rr, cc, vv in ((rows_a, cols_a, vals_a), (rows_b, cols_b, vals_b), (rows_c, cols_c, vals_c))
    ]
    return Circuit(PCE(*mats, n_wires, 3), fr.from_ints(vals), 1, 2, 1, f"hash-{row}")


SHAPES = {"chain": chain, "hash": hash_like}


def make(shape: str, n_constraints: int, seed: int | None = None) -> Circuit:
    if shape not in SHAPES:
        raise ValueError(f"unknown shape {shape!r}: expected one of {', '.join(SHAPES)}")
    return SHAPES[shape](n_constraints, seed)


def fit_domain(shape: str, log_n: int) -> int:
    """The largest constraint count of ``shape`` whose snarkjs domain is 2^log_n."""
    n = 1 << log_n
    if shape == "chain":
        return n - 3  # + 2 public signals + the constant wire's row
    return ((n - 4 - 1) // 12) * 12  # 12 per round, +1 output row, +3 public rows +1
