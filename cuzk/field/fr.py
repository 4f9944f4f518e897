"""BLS12-381's scalar field as module-level functions: a transitional shim over
:class:`cuzk.field.prime.PrimeField` for code that predates curve descriptors (the GPU wrappers until
they take a curve). New code uses ``curve.fr``."""

from __future__ import annotations

from .constants import R
from .prime import PrimeField, canonical_from_bytes, copy_into, empty, zeros

FIELD = PrimeField("BLS12-381 Fr", R)

mul = FIELD.mul
add = FIELD.add
sub = FIELD.sub
mul_sub = FIELD.mul_sub
mont_scalar = FIELD.mont_scalar
scale = FIELD.scale
mul_powers = FIELD.mul_powers
powers = FIELD.powers
to_mont = FIELD.to_mont
from_mont = FIELD.from_mont
below_modulus = FIELD.below_modulus
from_ints = FIELD.from_ints
to_ints = FIELD.to_ints
to_canonical_bytes = FIELD.to_canonical_bytes
random = FIELD.random
one_mont = FIELD.one_mont
batch_inverse = FIELD.batch_inverse

__all__ = [
    "FIELD",
    "R",
    "add",
    "batch_inverse",
    "below_modulus",
    "canonical_from_bytes",
    "copy_into",
    "empty",
    "from_ints",
    "from_mont",
    "mont_scalar",
    "mul",
    "mul_powers",
    "mul_sub",
    "one_mont",
    "powers",
    "random",
    "scale",
    "sub",
    "to_canonical_bytes",
    "to_ints",
    "to_mont",
    "zeros",
]
