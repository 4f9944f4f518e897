"""Variables, linear combinations and field-element arrays: the values a circuit is written in.

Every object here is a *batch*: a :class:`Var` holds an array of variables (any shape, a scalar is shape
``()``), a :class:`LC` a linear combination per element of its shape, a :class:`FieldArray` a field
element per element of its shape. A gadget applied to B instances is one call on arrays of B
variables: the constraint system records its constraints once per call (B rows at a time, with numpy)
and computes its values with numpy or numba over all B instances. One instance is the case B = 1 (or
shape ``()``).

Variable codes: inputs (the constant ONE is input 0, then the public inputs) are ``2 * i``, private
(auxiliary) variables ``2 * j + 1``, in allocation order; the final wire of a code is ``i`` for an input
and ``n_inputs + j`` for an auxiliary variable (inputs first, as circom and bellperson lay them out).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from ..field.prime import PrimeField

ONE_CODE = 0


class Var:
    """An array of variables (their codes); ``x * 3 + y - 1`` builds an :class:`LC`."""

    __slots__ = ("codes",)

    def __init__(self, codes: np.ndarray | int):
        self.codes = np.asarray(codes, dtype=np.int64)

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.codes.shape)

    def __len__(self) -> int:
        return int(self.codes.shape[0])

    def __getitem__(self, index: Any) -> Var:
        return Var(self.codes[index])

    def reshape(self, *shape: Any) -> Var:
        return Var(self.codes.reshape(*shape))

    @property
    def T(self) -> Var:
        return Var(self.codes.T)

    def lc(self) -> LC:
        return LC([(1, self.codes)])

    # arithmetic: always an LC
    def __add__(self, other: Operand) -> LC:
        return self.lc() + other

    __radd__ = __add__

    def __sub__(self, other: Operand) -> LC:
        return self.lc() - other

    def __rsub__(self, other: Operand) -> LC:
        return as_lc(other) - self.lc()

    def __mul__(self, k: int) -> LC:
        return self.lc() * k

    __rmul__ = __mul__

    def __neg__(self) -> LC:
        return self.lc() * -1

    def __repr__(self) -> str:
        return f"Var(shape={self.shape})"


def stack(vars_: Sequence[Var], axis: int = 0) -> Var:
    return Var(np.stack([v.codes for v in vars_], axis=axis))


def concat(vars_: Sequence[Var], axis: int = 0) -> Var:
    return Var(np.concatenate([v.codes for v in vars_], axis=axis))


class LC:
    """sum_k coeff_k * var_k (+ a constant, as a multiple of ONE), per element of a batch shape.

    ``terms``: (integer coefficient, variable codes) pairs; every code array broadcasts to the shape."""

    __slots__ = ("terms",)

    def __init__(self, terms: Iterable[tuple[int, np.ndarray]] = ()):
        self.terms: list[tuple[int, np.ndarray]] = list(terms)

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(np.broadcast_shapes(*(c.shape for _, c in self.terms))) if self.terms else ()

    def __add__(self, other: Operand) -> LC:
        return LC(self.terms + as_lc(other).terms)

    __radd__ = __add__

    def __sub__(self, other: Operand) -> LC:
        return LC(self.terms + [(-k, c) for k, c in as_lc(other).terms])

    def __rsub__(self, other: Operand) -> LC:
        return as_lc(other) - self

    def __mul__(self, k: int) -> LC:
        if not isinstance(k, (int, np.integer)):
            raise TypeError("an LC is multiplied by an integer constant; products of variables need a constraint")
        k = int(k)
        return LC([(k * c, v) for c, v in self.terms])

    __rmul__ = __mul__

    def __neg__(self) -> LC:
        return self * -1

    def __getitem__(self, index: Any) -> LC:
        shape = self.shape
        return LC([(k, np.broadcast_to(c, shape)[index]) for k, c in self.terms])

    def __repr__(self) -> str:
        return f"LC({len(self.terms)} terms, shape={self.shape})"


Operand = LC | Var | int


def as_lc(x: Operand) -> LC:
    if isinstance(x, LC):
        return x
    if isinstance(x, Var):
        return x.lc()
    if isinstance(x, (int, np.integer)):
        return LC([(int(x), np.asarray(ONE_CODE, dtype=np.int64))]) if int(x) else LC()
    raise TypeError(f"not a linear combination: {type(x).__name__}")


def lc_sum(parts: Iterable[Operand]) -> LC:
    terms: list[tuple[int, np.ndarray]] = []
    for p in parts:
        terms.extend(as_lc(p).terms)
    return LC(terms)


class FieldArray:
    """Field elements of a batch shape, Montgomery form: ``mont`` is (*shape, 4) uint64."""

    __slots__ = ("field", "mont")

    def __init__(self, field: PrimeField, mont: np.ndarray):
        self.field = field
        self.mont = mont

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.mont.shape[:-1])

    @staticmethod
    def of(field: PrimeField, values: Any, shape: tuple[int, ...] | None = None) -> FieldArray:
        """Values as field elements: a FieldArray, non-negative integer numpy arrays (below 2^64: bits,
        words), Python ints (any size, any sign) or nested lists of them."""
        if isinstance(values, FieldArray):
            fa = values
        elif isinstance(values, np.ndarray) and values.dtype in (np.bool_, np.uint8) and (values.size == 0 or values.max() <= 1):
            # bits, the bulk of a SHA-256 witness: Montgomery 1 is R mod p, so no multiply is needed
            table = np.stack([np.zeros(4, dtype=np.uint64), field.one_mont().reshape(4)])
            fa = FieldArray(field, np.take(table, values.astype(np.uint8), axis=0))
        elif isinstance(values, np.ndarray) and (
            values.dtype.kind in "ub" or (values.dtype.kind == "i" and (values.size == 0 or values.min() >= 0))
        ):
            v = np.asarray(values, dtype=np.uint64)
            canon = np.zeros((*v.shape, 4), dtype=np.uint64)
            canon[..., 0] = v
            fa = FieldArray(field, field.to_mont(canon.reshape(-1, 4)).reshape(canon.shape))
        else:
            arr = np.asarray(values, dtype=object)
            flat = [int(x) for x in arr.reshape(-1)]
            fa = FieldArray(field, field.from_ints(flat).reshape((*arr.shape, 4)))
        if shape is not None and fa.shape != tuple(shape):
            fa = FieldArray(field, np.ascontiguousarray(np.broadcast_to(fa.mont, (*shape, 4))))
        return fa

    def flat(self) -> np.ndarray:
        return np.ascontiguousarray(self.mont.reshape(-1, 4))

    def ints(self) -> np.ndarray:
        """Canonical values as a numpy object array of Python ints (small batches, messages, tests)."""
        vals = self.field.to_ints(self.flat())
        return np.array(vals, dtype=object).reshape(self.shape)

    def small(self) -> np.ndarray:
        """Canonical values that fit 64 bits (bits, words) as uint64; ValueError if one does not."""
        canon = self.field.from_mont(self.flat())
        if canon[:, 1:].any():
            raise ValueError("a value does not fit 64 bits")
        return canon[:, 0].reshape(self.shape)

    def _binary(self, other: Any, op: str) -> FieldArray:
        o = other if isinstance(other, FieldArray) else FieldArray.of(self.field, other)
        a, b = np.broadcast_arrays(self.mont, o.mont)
        shape = a.shape
        fa, fb = np.ascontiguousarray(a).reshape(-1, 4), np.ascontiguousarray(b).reshape(-1, 4)
        out = getattr(self.field, op)(fa, fb)
        return FieldArray(self.field, out.reshape(shape))

    def __add__(self, other: Any) -> FieldArray:
        return self._binary(other, "add")

    __radd__ = __add__

    def __sub__(self, other: Any) -> FieldArray:
        return self._binary(other, "sub")

    def __rsub__(self, other: Any) -> FieldArray:
        return FieldArray.of(self.field, other)._binary(self, "sub")

    def __mul__(self, other: Any) -> FieldArray:
        if isinstance(other, (int, np.integer)):
            return FieldArray(self.field, self.field.scale(self.flat(), int(other)).reshape(self.mont.shape))
        return self._binary(other, "mul")

    __rmul__ = __mul__

    def __neg__(self) -> FieldArray:
        return self * -1

    def __getitem__(self, index: Any) -> FieldArray:
        """Indexing over the batch dimensions (no Ellipsis: the last axis holds the limbs)."""
        return FieldArray(self.field, self.mont[index])

    def square(self) -> FieldArray:
        return self * self

    def inverse(self) -> FieldArray:
        """Elementwise inverse (ZeroDivisionError on a zero)."""
        return FieldArray(self.field, self.field.batch_inverse(self.flat()).reshape(self.mont.shape))

    def is_zero(self) -> np.ndarray:
        return ~self.mont.any(axis=-1)

    def __eq__(self, other: object) -> bool:  # whole-array equality (tests)
        return isinstance(other, FieldArray) and self.shape == other.shape and bool(np.array_equal(self.mont, other.mont))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"FieldArray(shape={self.shape})"
