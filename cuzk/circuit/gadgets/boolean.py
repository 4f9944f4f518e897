"""Booleans and bits: allocation with the booleanity constraint, bit decomposition with a range check,
packing bits into field elements, and the logic gates of bits.

Bits are little-endian along the last axis (bit i has weight 2^i). Values are computed with numpy on
uint8 arrays of all instances at once.
"""

from __future__ import annotations

import numpy as np

from ..cs import ConstraintSystem, SynthesisError
from ..lc import LC, Var

Shape = tuple[int, ...]


def _values(cs: ConstraintSystem, v: Var) -> np.ndarray:
    return cs.value(v).small().astype(np.uint8)


def alloc_bits(cs: ConstraintSystem, name: str, values: np.ndarray | None, shape: Shape | int | None = None) -> Var:
    """New boolean variables (b * b = b each); ``values`` 0/1 (None while recording: give ``shape``)."""
    if cs.has_values:
        if values is None:
            raise SynthesisError(f"{cs.path(name)}: bits need values")
        vals = np.asarray(values)
        if vals.size and (vals.min() < 0 or vals.max() > 1):
            raise SynthesisError(f"{cs.path(name)}: a bit value is not 0 or 1")
        b = cs.alloc(name, vals.astype(np.uint8), vals.shape if shape is None else shape)
    else:
        b = cs.alloc(name, None, shape if shape is not None else np.asarray(values).shape)
    enforce_boolean(cs, name, b)
    return b


def enforce_boolean(cs: ConstraintSystem, name: str, b: Var) -> None:
    cs.enforce(f"{name} boolean", b, b, b)


def pack(bits: Var) -> LC:
    """sum_i 2^i bits[..., i]: a linear combination (no constraint)."""
    codes = bits.codes
    return LC([(1 << i, codes[..., i]) for i in range(codes.shape[-1])])


def to_bits(cs: ConstraintSystem, name: str, x: Var | LC, n_bits: int) -> Var:
    """The n_bits little-endian bits of x, constrained to pack back to x: x < 2^n_bits, so n_bits must
    stay below the field's bit length (the decomposition is then unique)."""
    if n_bits >= cs.field.bits:
        raise SynthesisError(f"{cs.path(name)}: {n_bits}-bit decomposition is not unique in {cs.field.name}")
    shape = x.shape
    vals = None
    if cs.has_values:
        canon = cs.field.from_mont(cs.value(x).flat())  # (N, 4) limbs
        all_bits = ((canon[:, :, None] >> np.arange(64, dtype=np.uint64)) & np.uint64(1)).astype(np.uint8).reshape(-1, 256)
        if all_bits[:, n_bits:].any():
            raise SynthesisError(f"{cs.path(name)}: a value does not fit {n_bits} bits")
        vals = all_bits[:, :n_bits].reshape((*shape, n_bits))
    bits = alloc_bits(cs, name, vals, (*shape, n_bits))
    if cs.wants_constraints:
        cs.enforce(f"{name} pack", pack(bits), cs.one, x)
    return bits


def from_bits(cs: ConstraintSystem, name: str, bits: Var) -> Var:
    """A new variable equal to the packed bits (one constraint)."""
    value = (lambda: cs.value(pack(bits))) if cs.has_values else None
    x = cs.alloc(name, value, bits.shape[:-1])
    if cs.wants_constraints:
        cs.enforce(f"{name} pack", pack(bits), cs.one, x)
    return x


def not_(b: Var | LC) -> LC:
    return 1 - (b if isinstance(b, LC) else b.lc())


def and_(cs: ConstraintSystem, name: str, a: Var, b: Var) -> Var:
    """a AND b: one constraint a * b = c (c boolean by construction)."""
    value = (lambda: _values(cs, a) & _values(cs, b)) if cs.has_values else None
    c = cs.alloc(name, value, np.broadcast_shapes(a.shape, b.shape))
    cs.enforce(name, a, b, c)
    return c


def xor(cs: ConstraintSystem, name: str, a: Var, b: Var) -> Var:
    """a XOR b: one constraint 2a * b = a + b - c."""
    value = (lambda: _values(cs, a) ^ _values(cs, b)) if cs.has_values else None
    c = cs.alloc(name, value, np.broadcast_shapes(a.shape, b.shape))
    cs.enforce(name, a * 2, b, a + b - c)
    return c


def or_(cs: ConstraintSystem, name: str, a: Var, b: Var) -> Var:
    """a OR b: one constraint (1 - a) * (1 - b) = 1 - c."""
    value = (lambda: _values(cs, a) | _values(cs, b)) if cs.has_values else None
    c = cs.alloc(name, value, np.broadcast_shapes(a.shape, b.shape))
    cs.enforce(name, not_(a), not_(b), not_(c))
    return c
