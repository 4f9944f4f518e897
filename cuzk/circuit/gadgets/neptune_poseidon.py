"""Poseidon with neptune's legacy circuit structure (``neptune::circuit::poseidon_hash``), the one
Filecoin's proofs use (rust-fil-proofs ``filecoin-hashers`` and ``stacked/circuit/hash.rs``).

:mod:`.poseidon` is our compact gadget (3 constraints per S-box, linear layers symbolic). neptune's
circuit (read from argumentcomputer/neptune ``src/circuit.rs``, facts only) allocates every S-box input
that is not already a variable:

* round 0: element 0 (the domain tag) is a constant, its S-box folded in; the S-box of each input element
  (a variable) costs 3 constraints: (x + k)^2, its square, and x^5 (no allocation of x);
* every other S-box (the 7 other full rounds' t S-boxes and the R_P partial rounds' one) first allocates
  its input, a linear combination of the previous S-boxes (1 constraint), then 3: 4 constraints;
* the output (state element 1) is allocated: 1 constraint.

So 3 * arity + 4 * (7 t + R_P) + 1 constraints per hash: 311 (arity 2), 377 (4), 505 (8), 598 (11),
with as many new variables. neptune adds its (compressed) round constants after each S-box's x^5 and
multiplies by sparse matrices in the partial rounds; here the constants and the plain MDS stay in the
symbolic linear combinations of :func:`.poseidon.schedule` (the same permutation, so the same hash: each
allocated x, x^2, x^4 is the value neptune allocates; its allocated x^5 differs from ours by the round
constant it adds).

Variables per instance, in order: per S-box (x2, x4, x5) for round 0's and (x, x2, x4, x5) for the others
(one array (*B, n)), then ``out`` (*B). Values from the numba trace of :mod:`..poseidon`; the S-box inputs
x = x^5 / x^4 (x = 0 where x^4 = 0) by one batch inversion.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..cs import ConstraintSystem, SynthesisError
from ..lc import LC, FieldArray, Operand, Var, as_lc
from ..poseidon import poseidon_trace
from .poseidon import _combine, schedule

__all__ = ["constraint_count", "poseidon_hash"]


def _layout(arity: int) -> tuple[list[bool], np.ndarray]:
    """Per S-box of the schedule: whether its input is allocated, and its first variable's offset."""
    sched = schedule(arity)
    alloc_x = [rnd != 0 for rnd, _, _ in sched.sboxes]
    sizes = np.array([4 if a else 3 for a in alloc_x], dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    return alloc_x, offsets


def constraint_count(arity: int) -> int:
    """Constraints (= new variables) per hash instance."""
    alloc_x, _ = _layout(arity)
    return sum(4 if a else 3 for a in alloc_x) + 1


def poseidon_hash(cs: ConstraintSystem, name: str, inputs: Var | Sequence[Operand], arity: int | None = None) -> Var:
    """The Merkle-tree Poseidon hash of ``arity`` field elements per instance, neptune-shaped: ``inputs`` a
    Var (*B, arity) or a list of ``arity`` Vars (*B) (neptune takes allocated numbers: an LC input is
    allowed here but is not neptune's shape); returns the output Var (*B)."""
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
    alloc_x, offsets = _layout(arity)
    n_sb = len(sched.sboxes)
    n_vars = sum(4 if a else 3 for a in alloc_x)
    with cs.namespace(name):
        values = out_value = None
        if cs.has_values:
            n = int(np.prod(shape, dtype=np.int64))
            if isinstance(inputs, Var):
                vals = cs.value(inputs).mont
            else:
                vals = np.stack([np.broadcast_to(cs.value(x).mont, (*shape, 4)) for x in ins], axis=-2)
            vals = np.ascontiguousarray(np.broadcast_to(vals, (*shape, arity, 4))).reshape(n, arity, 4)
            out, trace = poseidon_trace(vals)
            trace = trace.reshape(n, n_sb, 3, 4)
            F = cs.field
            x4 = np.ascontiguousarray(trace[:, :, 1]).reshape(-1, 4)
            x5 = np.ascontiguousarray(trace[:, :, 2]).reshape(-1, 4)
            zero = ~x4.any(axis=1)
            safe = np.where(zero[:, None], F.one_mont().reshape(1, 4), x4)
            x = F.mul(x5, F.batch_inverse(np.ascontiguousarray(safe)))
            x[zero] = 0
            x = x.reshape(n, n_sb, 4)
            full = np.zeros((n, n_vars, 4), dtype=np.uint64)
            for s in range(n_sb):
                o = int(offsets[s])
                if alloc_x[s]:
                    full[:, o] = x[:, s]
                    full[:, o + 1 : o + 4] = trace[:, s]
                else:
                    full[:, o : o + 3] = trace[:, s]
            values = FieldArray(F, full.reshape((*shape, n_vars, 4)))
            out_value = FieldArray(F, out.reshape((*shape, 4)))
        v = cs.alloc("sbox", values, (*shape, n_vars))
        basis: list[LC] = [as_lc(1), *ins]
        for s, (rnd, i, row) in enumerate(sched.sboxes):
            o = int(offsets[s])
            where = f"round {rnd} sbox {i}"
            if alloc_x[s]:
                xv = v[..., o]
                if cs.wants_constraints:
                    cs.enforce(f"{where} input", _combine(basis, row), cs.one, xv)
                x: LC = xv.lc()
                x2, x4_, x5_ = v[..., o + 1], v[..., o + 2], v[..., o + 3]
            else:
                x = _combine(basis, row)
                x2, x4_, x5_ = v[..., o], v[..., o + 1], v[..., o + 2]
            cs.enforce(f"{where} x2", x, x, x2)
            cs.enforce(f"{where} x4", x2, x2, x4_)
            cs.enforce(f"{where} x5", x4_, x, x5_)
            basis.append(x5_.lc())
        out_var = cs.alloc("out", out_value, shape)
        cs.enforce("out", _combine(basis, sched.output), cs.one, out_var)
    return out_var
