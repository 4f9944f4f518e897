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
from dataclasses import dataclass, field

import numpy as np

from ..curves import Curve
from ..curves import get as get_curve
from ..field.prime import PrimeField
from .pce import CSR, PCE


@dataclass
class Circuit:
    pce: PCE
    witness: np.ndarray  # Montgomery Fr vector
    n_pub_out: int
    n_pub_in: int
    n_prv_in: int
    name: str
    # more satisfying witnesses of the same circuit (porep shapes with ``witnesses`` > 1): a batch's inputs
    others: list[np.ndarray] = field(default_factory=list)


def _csr(rows: np.ndarray, cols: np.ndarray, vals: np.ndarray, n_rows: int, n_cols: int, fr: PrimeField) -> CSR:
    """CSR from coordinate triples (vals a Montgomery Fr vector); entries sorted by row, stable."""
    order = np.argsort(rows, kind="stable")
    row_ptr = np.zeros(n_rows + 1, dtype=np.int64)
    np.add.at(row_ptr, rows.astype(np.int64) + 1, 1)
    np.cumsum(row_ptr, out=row_ptr)
    return CSR(row_ptr, cols[order].astype(np.uint32), np.ascontiguousarray(vals[order]), n_cols, fr)


def _ones(n: int, fr: PrimeField) -> np.ndarray:
    return np.tile(fr.one_mont(), (n, 1))


def chain(n_constraints: int, seed: int | None = None, curve: Curve | str = "bls12_381") -> Circuit:
    """x_0 (public input) squared n times; x_n is the public output."""
    fr = get_curve(curve).fr
    R = fr.p
    n = n_constraints
    n_wires = n + 2  # 1, x_n, x_0, x_1..x_{n-1}
    idx = np.arange(n + 1, dtype=np.int64)
    wire_of = np.where(idx == 0, 2, np.where(idx == n, 1, idx + 2))  # wire of x_i
    rows = np.arange(n, dtype=np.int64)
    one = _ones(n, fr)
    A = _csr(rows, wire_of[:n], one, n, n_wires, fr)
    B = _csr(rows, wire_of[:n], one, n, n_wires, fr)
    C = _csr(rows, wire_of[1:], one, n, n_wires, fr)
    x = (seed if seed is not None else secrets.randbelow(R - 2)) + 2
    vals = [0] * n_wires
    vals[0] = 1
    for i in range(n + 1):
        vals[int(wire_of[i])] = x
        x = x * x % R
    return Circuit(PCE(A, B, C, n_wires, 2), fr.from_ints(vals), 1, 1, 0, f"chain-{n}")


_T = 3
_MDS = [[2, 3, 1], [1, 2, 3], [3, 1, 2]]


def hash_like(n_constraints: int, seed: int | None = None, curve: Curve | str = "bls12_381") -> Circuit:
    """Rounds of x^5 S-boxes and linear mixing, width 3, about n_constraints rows (12 per round).

    Public inputs: two lanes of the initial state; private input: the third lane; public output: lane 0
    of the final state.
    """
    fr = get_curve(curve).fr
    R = fr.p
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
                rows_a.append(row)
                cols_a.append(a)
                vals_a.append(1)
                rows_b.append(row)
                cols_b.append(b)
                vals_b.append(1)
                rows_c.append(row)
                cols_c.append(c)
                vals_c.append(1)
                row += 1
            s5.append((x5, v5))
        new_lanes, new_state = [], []
        for j in range(_T):
            y = w
            w += 1
            yv = (sum(_MDS[j][k] * s5[k][1] for k in range(_T)) + rc[r][j]) % R
            for k in range(_T):
                rows_a.append(row)
                cols_a.append(s5[k][0])
                vals_a.append(_MDS[j][k])
            rows_a.append(row)
            cols_a.append(0)
            vals_a.append(rc[r][j])
            rows_b.append(row)
            cols_b.append(0)
            vals_b.append(1)
            rows_c.append(row)
            cols_c.append(y)
            vals_c.append(1)
            row += 1
            vals.append(yv)
            new_lanes.append(y)
            new_state.append(yv)
        lanes, state = new_lanes, new_state
    # output: out = lane 0 (a linear constraint)
    rows_a.append(row)
    cols_a.append(lanes[0])
    vals_a.append(1)
    rows_b.append(row)
    cols_b.append(0)
    vals_b.append(1)
    rows_c.append(row)
    cols_c.append(1)
    vals_c.append(1)
    row += 1
    vals[1] = state[0]
    n_wires = w
    mats = [
        _csr(np.array(rr), np.array(cc), fr.from_ints(vv), row, n_wires, fr)
        for rr, cc, vv in ((rows_a, cols_a, vals_a), (rows_b, cols_b, vals_b), (rows_c, cols_c, vals_c))
    ]
    return Circuit(PCE(*mats, n_wires, 3), fr.from_ints(vals), 1, 2, 1, f"hash-{row}")


# ---------------------------------------------------------------------------------------------
# PoRep-shaped circuits (Filecoin statistics), built block by block without any per-row Python

# One block of 20 rows. Row kinds and their non-zeros (A, B, C):
#   xor  2a * b = a + b - c        (1, 1, 3)   c = a XOR b            (new boolean wire)
#   and  a * b = c                 (1, 1, 1)   c = a AND b            (new boolean wire)
#   bool (1 - c) * c = 0           (2, 1, 0)   checks a previous output is a bit
#   pack sum_i 2^i b_i * 1 = x     (7, 1, 1)   packs 7 of the block's xor/and outputs into a field element
# Per row: A 2.35, B 1.0, C 2.05 (2.2 dense). The xor/and operands come from a pool of seed bits about a
# tenth of the wires, so B (seed operands, checked outputs, the constant) touches ~25% of the wires and A
# (seeds, packed outputs, checked outputs) ~80%; ~80% of the aux wires are bits. In the dense variant every value is a
# random field element: xor rows compute c = a + b - 2ab over Fr and bool rows become products
# d = (1 - c) c with d a new wire, so the witness has no small values at all.
_BLOCK = ["xor"] * 12 + ["and"] + ["bool"] * 3 + ["pack"] * 4
_PACK_BITS = 7
_NNZ = {"xor": (1, 1, 3), "and": (1, 1, 1), "bool": (2, 1, 0), "pack": (_PACK_BITS, 1, 1)}


def _mont_small(vals: np.ndarray, fr: PrimeField) -> np.ndarray:
    """Montgomery form of small non-negative integers (< 2^16) by table lookup."""
    table = fr.from_ints(range(int(vals.max()) + 1 if vals.size else 1))
    return table[vals]


def porep_like(
    n_constraints: int,
    dense: bool = False,
    n_public: int = 328,
    seed: int | None = None,
    curve: Curve | str = "bls12_381",
    witnesses: int = 1,
) -> Circuit:
    """A circuit with the statistics of a Filecoin PoRep partition and ``witnesses`` satisfying witnesses
    (the first in ``witness``, the others in ``others``: a batch of proofs of one circuit)."""
    fr = get_curve(curve).fr
    R = fr.p
    rng = np.random.default_rng(seed)
    blocks = max(1, n_constraints // len(_BLOCK))
    m = blocks * len(_BLOCK)
    kinds = _BLOCK
    new_wire = [k in ("xor", "and", "pack") or (dense and k == "bool") for k in kinds]
    outs_per_block = sum(new_wire)
    n_out_wires = blocks * outs_per_block
    # seed bits: the operands of the xor / and rows
    n_seed = max(16, n_out_wires // 9)
    seed0 = 1 + n_public
    out0 = seed0 + n_seed
    n_wires = out0 + n_out_wires
    # per block: wire id of each output, by position
    out_pos = np.cumsum(new_wire) - 1
    out_wire = (
        out0
        + np.arange(blocks, dtype=np.int64)[:, None] * outs_per_block
        + np.array([out_pos[i] if new_wire[i] else 0 for i in range(len(kinds))])[None, :]
    )

    def seeds(shape):
        return seed0 + rng.integers(0, n_seed, size=shape, dtype=np.int64)

    # operands for every row position of every block
    op_a = seeds((blocks, len(kinds)))
    op_b = seeds((blocks, len(kinds)))
    # pack row j packs outputs (7j + t) mod 13 of the block's xor/and rows (all of them get packed)
    logic_pos = [i for i, k in enumerate(kinds) if k in ("xor", "and")]
    pack_pos = [i for i, k in enumerate(kinds) if k == "pack"]

    def pack_col(i: int, t: int) -> np.ndarray:
        """Wire of bit t packed by the pack row at block position i (a column of out_wire, no copy)."""
        return out_wire[:, logic_pos[(_PACK_BITS * pack_pos.index(i) + t) % len(logic_pos)]]

    # bool rows check the output of the xor row at the same offset within the block
    checked = out_wire[:, [i for i, k in enumerate(kinds) if k == "xor"][:3]]

    def witness(wrng: np.random.Generator) -> np.ndarray:
        """A satisfying witness: free values (public inputs, seed bits) from ``wrng``, the rest follows."""
        w_int = None
        if dense:
            w = fr.zeros(n_wires)
            w[0] = fr.one_mont()
            w[1:out0] = (
                fr.random(out0 - 1)
                if out0 - 1 <= 1 << 16
                else np.tile(fr.random(1 << 16), (-(-(out0 - 1) // (1 << 16)), 1))[: out0 - 1]
            )
        else:
            w_int = np.zeros(n_wires, dtype=np.int64)
            w_int[0] = 1
            w_int[1:seed0] = wrng.integers(0, 1 << 16, size=n_public)
            w_int[seed0:out0] = wrng.integers(0, 2, size=n_seed)
        bool_i = 0
        for i, k in enumerate(kinds):
            a, b, o = op_a[:, i], op_b[:, i], out_wire[:, i]
            if dense:
                if k == "xor":
                    wa, wb = w[a], w[b]
                    w[o] = fr.sub(fr.add(wa, wb), fr.scale(fr.mul(wa, wb), 2))
                elif k == "and":
                    w[o] = fr.mul(w[a], w[b])
                elif k == "bool":
                    c = w[checked[:, bool_i]]
                    w[o] = fr.mul(fr.sub(np.broadcast_to(fr.one_mont(), c.shape).copy(), c), c)
                else:
                    acc = fr.zeros(blocks)
                    for j in range(_PACK_BITS):
                        acc = fr.add(acc, fr.scale(w[pack_col(i, j)], 1 << j))
                    w[o] = acc
            elif k == "xor":
                w_int[o] = w_int[a] ^ w_int[b]
            elif k == "and":
                w_int[o] = w_int[a] & w_int[b]
            elif k == "pack":
                w_int[o] = sum(w_int[pack_col(i, t)] << t for t in range(_PACK_BITS))
            if k == "bool":
                bool_i += 1
        return w if dense else _mont_small(w_int, fr)

    w = witness(rng)
    others = [witness(np.random.default_rng([0 if seed is None else seed, j])) for j in range(1, witnesses)]

    # matrices, row-major by construction: row r = block * 20 + position
    one = fr.one_mont()
    two = fr.mont_scalar(2)
    minus1 = fr.mont_scalar(R - 1)
    coefs_pack = np.stack([fr.mont_scalar(1 << j) for j in range(_PACK_BITS)])

    def build(which: int) -> CSR:
        per = [(_NNZ[k][which] if not (dense and k == "bool" and which == 2) else 1) for k in kinds]
        per_block = sum(per)
        cols = np.empty((blocks, per_block), dtype=np.uint32)
        vals = np.empty((blocks, per_block, 4), dtype=np.uint64)
        off = 0
        bi = 0
        for i, k in enumerate(kinds):
            a, b, o = op_a[:, i], op_b[:, i], out_wire[:, i]
            if k == "xor":
                ent = [[(a, two)], [(b, one)], [(a, one), (b, one), (o, minus1)]][which]
            elif k == "and":
                ent = [[(a, one)], [(b, one)], [(o, one)]][which]
            elif k == "bool":
                c = checked[:, bi]
                zero_col = np.zeros(blocks, dtype=np.int64)
                ent = [[(zero_col, one), (c, minus1)], [(c, one)], ([(o, one)] if dense else [])][which]
            elif which == 0:
                ent = [(pack_col(i, j), coefs_pack[j]) for j in range(_PACK_BITS)]
            else:
                ent = [[(np.zeros(blocks, dtype=np.int64), one)], [(o, one)]][which - 1]
            for col, val in ent:
                cols[:, off] = col
                vals[:, off] = val
                off += 1
            if k == "bool":
                bi += 1
        row_ptr = np.zeros(m + 1, dtype=np.int64)
        row_ptr[1:] = np.cumsum(np.tile(np.array(per, dtype=np.int64), blocks))
        return CSR(row_ptr, cols.reshape(-1), vals.reshape(-1, 4), n_wires, fr)

    mats = [build(which) for which in range(3)]
    name = f"porep{'-dense' if dense else ''}-{m}"
    return Circuit(PCE(*mats, n_wires, n_public), w, 0, n_public, 0, name, others)


SHAPES = {
    "chain": chain,
    "hash": hash_like,
    "porep": lambda n, seed=None, curve="bls12_381", witnesses=1: porep_like(
        n, dense=False, seed=seed, curve=curve, witnesses=witnesses
    ),
    "dense": lambda n, seed=None, curve="bls12_381", witnesses=1: porep_like(
        n, dense=True, seed=seed, curve=curve, witnesses=witnesses
    ),
}


def make(
    shape: str, n_constraints: int, seed: int | None = None, curve: Curve | str = "bls12_381", witnesses: int = 1
) -> Circuit:
    """``witnesses`` > 1 (porep shapes only): more witnesses of the same circuit in ``Circuit.others``."""
    if shape not in SHAPES:
        raise ValueError(f"unknown shape {shape!r}: expected one of {', '.join(SHAPES)}")
    if witnesses > 1:
        if shape not in ("porep", "dense"):
            raise ValueError(f"shape {shape!r} makes one witness; batches of witnesses come from porep or dense")
        return SHAPES[shape](n_constraints, seed, curve=curve, witnesses=witnesses)
    return SHAPES[shape](n_constraints, seed, curve=curve)


def fit_domain(shape: str, log_n: int) -> int:
    """The largest constraint count of ``shape`` whose snarkjs domain is 2^log_n."""
    n = 1 << log_n
    if shape == "chain":
        return n - 3  # + 2 public signals + the constant wire's row
    if shape in ("porep", "dense"):
        return ((n - 328 - 1) // len(_BLOCK)) * len(_BLOCK)  # whole blocks, + public rows + constant
    return ((n - 4 - 1) // 12) * 12  # 12 per round, +1 output row, +3 public rows +1
