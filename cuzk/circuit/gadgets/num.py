"""Field-element gadgets: equality, conditional select and swap, zero tests, comparison.

All are batch-first like every gadget: operands are :class:`Var` / :class:`LC` of a common batch shape,
conditions are boolean variables (made by :mod:`.boolean`; the gadgets here do not re-check them).
Values come from the constraint system's own arrays, all instances at once.
"""

from __future__ import annotations

import numpy as np

from ..cs import ConstraintSystem, SynthesisError
from ..lc import LC, FieldArray, Operand, Var, as_lc
from .boolean import to_bits


def _shape(*xs: Operand) -> tuple[int, ...]:
    return tuple(np.broadcast_shapes(*(as_lc(x).shape for x in xs)))


def assert_equal(cs: ConstraintSystem, name: str, a: Operand, b: Operand) -> None:
    """a = b (one constraint per instance: (a - b) * 1 = 0)."""
    cs.enforce(name, as_lc(a) - b, cs.one, 0)


def alloc_num(cs: ConstraintSystem, name: str, x: Operand) -> Var:
    """A new variable equal to a linear combination (one constraint); the way to cut an LC that would
    otherwise be copied into many constraints."""
    value = (lambda: cs.value(as_lc(x))) if cs.has_values else None
    v = cs.alloc(name, value, _shape(x))
    cs.enforce(name, x, cs.one, v)
    return v


def select(cs: ConstraintSystem, name: str, cond: Operand, a: Operand, b: Operand) -> Var:
    """cond ? a : b (one constraint: cond * (a - b) = out - b); ``cond`` a boolean variable or a linear
    combination known to be 0 or 1."""
    shape = _shape(cond, a, b)

    def value() -> FieldArray:
        c = cs.value(as_lc(cond)).is_zero()
        va, vb = cs.value(as_lc(a)), cs.value(as_lc(b))
        va, vb = (FieldArray(cs.field, np.broadcast_to(v.mont, (*shape, 4))) for v in (va, vb))
        return FieldArray(cs.field, np.where(np.broadcast_to(c, shape)[..., None], vb.mont, va.mont))

    out = cs.alloc(name, value if cs.has_values else None, shape)
    cs.enforce(name, cond, as_lc(a) - b, out - as_lc(b))
    return out


def swap(cs: ConstraintSystem, name: str, cond: Operand, a: Operand, b: Operand) -> tuple[Var, LC]:
    """(b, a) when cond, else (a, b): one constraint (the second output is the linear combination
    a + b - first, which costs nothing)."""
    first = select(cs, name, cond, b, a)
    return first, as_lc(a) + b - first


def is_zero(cs: ConstraintSystem, name: str, x: Operand) -> Var:
    """1 when x = 0 else 0 (two constraints: x * inv = 1 - out, x * out = 0)."""
    shape = _shape(x)
    lx = as_lc(x)
    if cs.has_values:
        vx = cs.value(lx)
        zero = vx.is_zero()
        safe = FieldArray(cs.field, np.where(zero[..., None], cs.field.one_mont(), vx.mont))
        inv_v: FieldArray | None = safe.inverse()
        inv_v = FieldArray(cs.field, np.where(zero[..., None], np.uint64(0), inv_v.mont))
        out_v: np.ndarray | None = zero.astype(np.uint8)
    else:
        inv_v, out_v = None, None
    inv = cs.alloc(f"{name} inverse", inv_v, shape)
    out = cs.alloc(name, out_v, shape)
    cs.enforce(f"{name} inverse", lx, inv, 1 - out.lc())
    cs.enforce(name, lx, out, 0)
    return out


def is_equal(cs: ConstraintSystem, name: str, a: Operand, b: Operand) -> Var:
    """1 when a = b else 0 (two constraints)."""
    return is_zero(cs, name, as_lc(a) - b)


def less_than(cs: ConstraintSystem, name: str, a: Operand, b: Operand, n_bits: int, checked: bool = True) -> Var:
    """1 when a < b else 0, for a, b below 2^n_bits: the top bit of a - b + 2^n_bits (n_bits + 1
    constraints). With ``checked`` both operands are first range-checked to n_bits (2 n_bits more
    constraints); without it the caller guarantees the ranges (the comparison is unsound otherwise)."""
    if n_bits + 1 >= cs.field.bits:
        raise SynthesisError(f"{cs.path(name)}: a {n_bits}-bit comparison does not fit {cs.field.name}")
    if checked:
        to_bits(cs, f"{name} range a", as_lc(a), n_bits)
        to_bits(cs, f"{name} range b", as_lc(b), n_bits)
    bits = to_bits(cs, name, as_lc(a) - b + (1 << n_bits), n_bits + 1)
    # the top bit is 1 exactly when a >= b; the result is its negation, kept as a variable
    top = bits[..., n_bits]
    value = (lambda: 1 - cs.value(top)) if cs.has_values else None
    lt = cs.alloc(f"{name} result", value, top.shape)
    cs.enforce(f"{name} negate", 1 - top.lc(), cs.one, lt)
    return lt
