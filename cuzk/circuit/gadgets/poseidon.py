"""The Poseidon hash (Filecoin's, neptune HashType::MerkleTree) as a circuit gadget, batch-first.

Constraints: 3 per S-box whose input is not a constant (x2 = x * x, x4 = x2 * x2, x5 = x4 * x, the S-box
input x a linear combination), plus one for the output (out * 1 = its linear combination). Round
constants and MDS layers are linear, so they cost nothing: the state between S-boxes is tracked
symbolically as, per state element, coefficients (Python ints mod r) over a basis (ONE, the inputs, the
S-box outputs x5 so far), the same for every instance and every call of an arity, computed once per arity
(:func:`schedule`) and merged per basis variable (no term blow-up). Round 0's element 0 (the domain tag
plus a constant) is a constant, its S-box is folded in. Per arity: t * R_F + R_P - 1 S-boxes in the
circuit, so 3 * (t * R_F + R_P - 1) + 1 constraints (arity 2: 235, 4: 286, 8: 385, 11: 457; neptune's
own circuit uses 311, -, 505, 598: it also allocates the linear layers' outputs).

Variables, in allocation order: ``sbox`` (*B, S, 3): (x2, x4, x5) of every S-box in round order, then
``out`` (*B). Values come from one numba kernel over all instances (:func:`..poseidon.poseidon_trace`),
never from the constraint system one element at a time; recording and witness allocate identically.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..cs import ConstraintSystem, SynthesisError
from ..lc import LC, FieldArray, Operand, Var, as_lc
from ..poseidon import poseidon_trace
from ..poseidon_params import R, params

Row = list[tuple[int, int]]  # (basis index, coefficient mod r), coefficient non-zero


@dataclass(frozen=True)
class Schedule:
    """An arity's circuit: basis 0 = ONE, 1..arity = the inputs, arity + 1 + s = x5 of S-box s."""

    arity: int
    sboxes: list[tuple[int, int, Row]]  # (round, state element, the S-box input as a row)
    output: Row


_schedules: dict[int, Schedule] = {}
_lock = threading.Lock()


def schedule(arity: int) -> Schedule:
    """The symbolic permutation of an arity (memoized)."""
    s = _schedules.get(arity)
    if s is not None:
        return s
    with _lock:
        s = _schedules.get(arity)
        if s is None:
            s = _schedules[arity] = _build(arity)
    return s


def _build(arity: int) -> Schedule:
    P = params(arity)
    t = P.t
    state: list[dict[int, int]] = [{0: P.domain_tag}] + [{i: 1} for i in range(1, t)]
    sboxes: list[tuple[int, int, Row]] = []
    for rnd in range(P.n_rounds):
        for i, c in enumerate(P.rc(rnd)):
            state[i][0] = (state[i].get(0, 0) + c) % R
        for i in range(t if P.is_full(rnd) else 1):
            row = [(b, k) for b, k in state[i].items() if k]
            if all(b == 0 for b, _ in row):  # a constant: fold the S-box in
                state[i] = {0: pow(dict(row).get(0, 0), 5, R)}
                continue
            state[i] = {arity + 1 + len(sboxes): 1}
            sboxes.append((rnd, i, sorted(row)))
        new: list[dict[int, int]] = []
        for i in range(t):
            acc: dict[int, int] = {}
            for j in range(t):
                m = P.mds[i][j]
                for b, k in state[j].items():
                    acc[b] = (acc.get(b, 0) + m * k) % R
            new.append({b: k for b, k in acc.items() if k})
        state = new
    if len(sboxes) != P.n_sboxes - 1:
        raise AssertionError(f"Poseidon arity {arity}: {len(sboxes)} S-boxes in the circuit, expected {P.n_sboxes - 1}")
    return Schedule(arity, sboxes, sorted(state[1].items()))


def constraint_count(arity: int) -> int:
    """Constraints per hash instance."""
    return 3 * len(schedule(arity).sboxes) + 1


def _combine(basis: list[LC], row: Row) -> LC:
    terms: list[tuple[int, np.ndarray]] = []
    for b, k in row:
        for c, codes in basis[b].terms:
            terms.append((k * c % R, codes))
    return LC(terms)


def poseidon_hash(cs: ConstraintSystem, name: str, inputs: Var | Sequence[Operand], arity: int | None = None) -> Var:
    """The Merkle-tree Poseidon hash of ``arity`` field elements per instance: ``inputs`` a Var of shape
    (*B, arity) or a list of ``arity`` Vars / LCs of shape (*B); returns a Var of shape (*B)."""
    if isinstance(inputs, Var):
        if not inputs.shape:
            raise SynthesisError(f"{cs.path(name)}: Poseidon inputs: a Var of shape (*B, arity)")
        ins = [inputs[..., i].lc() for i in range(inputs.shape[-1])]
    else:
        ins = [as_lc(x) for x in inputs]
    arity = len(ins) if arity is None else arity
    if len(ins) != arity:
        raise SynthesisError(f"{cs.path(name)}: Poseidon of arity {arity} given {len(ins)} inputs")
    try:
        shape = tuple(np.broadcast_shapes(*(x.shape for x in ins)))
    except ValueError:
        raise SynthesisError(f"{cs.path(name)}: Poseidon inputs of shapes {[x.shape for x in ins]} do not broadcast") from None
    sched = schedule(arity)
    n_sb = len(sched.sboxes)
    with cs.namespace(name):
        sb_value = out_value = None
        if cs.has_values:
            n = int(np.prod(shape, dtype=np.int64))
            if isinstance(inputs, Var):
                vals = cs.value(inputs).mont
            else:
                vals = np.stack([np.broadcast_to(cs.value(x).mont, (*shape, 4)) for x in ins], axis=-2)
            vals = np.ascontiguousarray(np.broadcast_to(vals, (*shape, arity, 4))).reshape(n, arity, 4)
            out, trace = poseidon_trace(vals)
            sb_value = FieldArray(cs.field, trace.reshape((*shape, n_sb, 3, 4)))
            out_value = FieldArray(cs.field, out.reshape((*shape, 4)))
        sb = cs.alloc("sbox", sb_value, (*shape, n_sb, 3))
        basis: list[LC] = [as_lc(1), *ins] + [sb[..., s, 2].lc() for s in range(n_sb)]
        for s, (rnd, i, row) in enumerate(sched.sboxes):
            x = _combine(basis, row)
            x2, x4, x5 = sb[..., s, 0], sb[..., s, 1], sb[..., s, 2]
            where = f"round {rnd} sbox {i}"
            cs.enforce(f"{where} x2", x, x, x2)
            cs.enforce(f"{where} x4", x2, x2, x4)
            cs.enforce(f"{where} x5", x4, x, x5)
        out_var = cs.alloc("out", out_value, shape)
        cs.enforce("out", out_var, cs.one, _combine(basis, sched.output))
    return out_var
