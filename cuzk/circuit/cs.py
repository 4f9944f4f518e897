"""The constraint-system interface circuits are written against, and its three implementations.

A circuit (or gadget) calls:

* ``cs.alloc(name, value, shape)`` / ``cs.alloc_input(name, value, shape)``: new private / public
  variables, an array of ``shape`` (``value``: a :class:`FieldArray`, integers, or a callable returning
  one, called only when the system needs values);
* ``cs.enforce(name, a, b, c)``: a * b = c, elementwise over the LCs' common shape (one R1CS row each);
* ``with cs.namespace(name):`` prefixes the names of what is made inside (paths joined by "/");
* ``cs.value(var)`` (a FieldArray) when ``cs.has_values``; ``cs.one`` is the constant-one variable;
* ``cs.wants_constraints``: False in the witness-only system, where a gadget may skip building the
  linear combinations it would pass to ``enforce`` (they are ignored there).

Implementations:

* :class:`RecordingCS`: constraints without values, recorded as flat parallel arrays per matrix
  (row, variable code, coefficient index) or, with the ``lc_storage = "dicts"`` switch, as one dict per
  row; ``finish()`` gives the pre-compiled evaluator (CSR A/B/C over the final wire layout) the prover
  runs. The recording of a circuit topology is cached on disk (:mod:`cuzk.circuit.circuit`).
* :class:`WitnessCS`: values only, no constraint bookkeeping: the per-proof path. Its buffers are
  pre-sized from the recording's layout (``witness_buffer = "presized"``) or grow as they fill.
* :class:`TestCS`: values and a check of every constraint as it is enforced; the first unsatisfied one
  is named by its namespace path (and the instance index within a batch).

Synthesis switches (measured in BENCHMARKS.md): ``lc_storage`` and ``witness_buffer`` (module
:data:`SWITCHES`, overridden by ``CUZK_LC_STORAGE`` / ``CUZK_WITNESS_BUFFER`` for benchmarks).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import CuzkError
from ..curves import Curve
from ..field.prime import PrimeField
from ..r1cs.pce import CSR, PCE
from .lc import LC, ONE_CODE, FieldArray, Operand, Var, as_lc

SWITCHES = {"lc_storage": ("arrays", "dicts"), "witness_buffer": ("presized", "growing")}


def switch(name: str) -> str:
    """The current setting of a synthesis switch (its first choice is the default)."""
    choices = SWITCHES[name]
    value = os.environ.get(f"CUZK_{name.upper()}", choices[0])
    if value not in choices:
        raise CuzkError(f"CUZK_{name.upper()}={value!r}: expected {' or '.join(choices)}")
    return value


class SynthesisError(CuzkError):
    """A circuit used the constraint-system API wrongly (a value missing, a shape mismatch)."""


Value = FieldArray | np.ndarray | int | list[Any] | Callable[[], Any] | None


@dataclass
class Layout:
    """Where a recording put everything: the counts of inputs (ONE included) and private variables."""

    n_inputs: int
    n_aux: int
    n_constraints: int

    @property
    def n_wires(self) -> int:
        return self.n_inputs + self.n_aux


def wires_of(codes: np.ndarray, n_inputs: int) -> np.ndarray:
    """Final wire indices of variable codes (inputs first, then the private variables)."""
    codes = np.asarray(codes, dtype=np.int64)
    return np.where(codes & 1, n_inputs + (codes >> 1), codes >> 1)


class ConstraintSystem:
    """The interface and the allocation bookkeeping shared by the three systems."""

    has_values = False
    # False where enforce ignores its arguments (the witness-only system): a gadget may then skip building
    # the linear combinations of its constraints, the bulk of its Python work (bit packings of 32 terms)
    wants_constraints = True

    def __init__(self, curve: Curve):
        self.curve = curve
        self.field: PrimeField = curve.fr
        self.n_inputs = 1  # ONE
        self.n_aux = 0
        self.n_constraints = 0
        self._path: list[str] = []
        self.one = Var(ONE_CODE)

    # ---- names
    @contextlib.contextmanager
    def namespace(self, name: str) -> Iterator[None]:
        self._path.append(str(name))
        try:
            yield
        finally:
            self._path.pop()

    def path(self, name: str = "") -> str:
        return "/".join([*self._path, name] if name else self._path)

    # ---- variables
    def _shape(self, value: Value, shape: tuple[int, ...] | int | None) -> tuple[int, ...]:
        if shape is not None:
            return (shape,) if isinstance(shape, int) else tuple(shape)
        if isinstance(value, FieldArray):
            return value.shape
        if isinstance(value, np.ndarray):
            return tuple(value.shape)
        if value is None or isinstance(value, int):
            return ()
        if isinstance(value, list):
            return tuple(np.asarray(value, dtype=object).shape)
        raise SynthesisError(f"{self.path()}: give the shape of a variable whose value is computed lazily")

    def alloc(self, name: str, value: Value = None, shape: tuple[int, ...] | int | None = None) -> Var:
        shp = self._shape(value, shape)
        n = int(np.prod(shp, dtype=np.int64))
        codes = (2 * (self.n_aux + np.arange(n, dtype=np.int64)) + 1).reshape(shp)
        self.n_aux += n
        self._assign(False, codes, value, name)
        return Var(codes)

    def alloc_input(self, name: str, value: Value = None, shape: tuple[int, ...] | int | None = None) -> Var:
        shp = self._shape(value, shape)
        n = int(np.prod(shp, dtype=np.int64))
        codes = (2 * (self.n_inputs + np.arange(n, dtype=np.int64))).reshape(shp)
        self.n_inputs += n
        self._assign(True, codes, value, name)
        return Var(codes)

    def _assign(self, is_input: bool, codes: np.ndarray, value: Value, name: str) -> None:
        """Store the new variables' values (systems with values)."""

    def enforce(self, name: str, a: Operand, b: Operand, c: Operand) -> None:
        la, lb, lc = as_lc(a), as_lc(b), as_lc(c)
        try:
            shape = tuple(np.broadcast_shapes(la.shape, lb.shape, lc.shape))
        except ValueError:
            raise SynthesisError(
                f"{self.path(name)}: a, b, c of shapes {la.shape}, {lb.shape}, {lc.shape} do not broadcast"
            ) from None
        rows = int(np.prod(shape, dtype=np.int64))
        self._enforce(name, la, lb, lc, shape, rows)
        self.n_constraints += rows

    def _enforce(self, name: str, a: LC, b: LC, c: LC, shape: tuple[int, ...], rows: int) -> None:
        pass

    def value(self, v: Var | LC) -> FieldArray:
        raise SynthesisError(f"{self.path()}: {type(self).__name__} has no values")

    def layout(self) -> Layout:
        return Layout(self.n_inputs, self.n_aux, self.n_constraints)


# ---------------------------------------------------------------------------------------------
# recording


class RecordingCS(ConstraintSystem):
    """Constraints without values, turned into the prover's CSR matrices by :meth:`finish`."""

    def __init__(self, curve: Curve, lc_storage: str | None = None):
        super().__init__(curve)
        self.lc_storage = lc_storage or switch("lc_storage")
        self._coef: dict[int, int] = {}  # coefficient (mod r) -> its index
        # per matrix: chunks of (rows, codes, coefficient index) -- one per LC term of an enforce call --
        # compacted every COMPACT_EVERY chunks into blocks of (rows, codes, coefficient indices), so that a
        # 2^24-constraint recording holds a few thousand arrays, not millions; or one dict per row
        self._chunks: list[list[tuple[np.ndarray, np.ndarray, int]]] = [[], [], []]
        self._blocks: list[list[tuple[np.ndarray, np.ndarray, np.ndarray]]] = [[], [], []]
        self._rows: list[list[dict[int, int]]] = [[], [], []]

    def _coef_index(self, k: int) -> int:
        k %= self.field.p
        i = self._coef.get(k)
        if i is None:
            i = self._coef[k] = len(self._coef)
        return i

    def _enforce(self, name: str, a: LC, b: LC, c: LC, shape: tuple[int, ...], rows: int) -> None:
        base = self.n_constraints
        for m, lc in enumerate((a, b, c)):
            if self.lc_storage == "dicts":
                terms = [(k % self.field.p, np.broadcast_to(codes, shape).reshape(-1)) for k, codes in lc.terms]
                for r in range(rows):
                    row: dict[int, int] = {}
                    for k, codes in terms:
                        code = int(codes[r])
                        row[code] = (row.get(code, 0) + k) % self.field.p
                    self._rows[m].append(row)
                continue
            row_ids = base + np.arange(rows, dtype=np.int64)
            chunks = self._chunks[m]
            for k, codes in lc.terms:
                if k % self.field.p == 0:
                    continue
                flat = codes.reshape(-1) if codes.shape == shape else np.broadcast_to(codes, shape).reshape(-1)
                chunks.append((row_ids, flat, self._coef_index(k)))
            if len(chunks) >= self.COMPACT_EVERY:
                self._compact(m)

    COMPACT_EVERY = 2048

    def _compact(self, m: int) -> None:
        chunks = self._chunks[m]
        if not chunks:
            return
        lengths = np.array([c[0].size for c in chunks], dtype=np.int64)
        rows = np.concatenate([c[0] for c in chunks])
        codes = np.concatenate([c[1] for c in chunks]).astype(np.int64, copy=False)
        coef = np.repeat(np.array([c[2] for c in chunks], dtype=np.int32), lengths)
        self._blocks[m].append((rows, codes, coef))
        chunks.clear()

    def finish(self) -> PCE:
        """The recorded constraints as the pre-compiled evaluator (CSR over the final wire layout)."""
        F = self.field
        n_in, n_rows, n_wires = self.n_inputs, self.n_constraints, self.n_inputs + self.n_aux
        mats = []
        for m in range(3):
            if self.lc_storage == "dicts":
                rows_l, codes_l, vals_l = [], [], []
                for r, row in enumerate(self._rows[m]):
                    for code, k in row.items():
                        if k:
                            rows_l.append(r)
                            codes_l.append(code)
                            vals_l.append(self._coef_index(k))
                rows = np.array(rows_l, dtype=np.int64)
                codes = np.array(codes_l, dtype=np.int64)
                coef = np.array(vals_l, dtype=np.int32)
            elif self._chunks[m] or self._blocks[m]:
                self._compact(m)
                blocks = self._blocks[m]
                rows = np.concatenate([b[0] for b in blocks])
                codes = np.concatenate([b[1] for b in blocks])
                coef = np.concatenate([b[2] for b in blocks])
                self._blocks[m] = []
            else:
                rows, codes, coef = (np.zeros(0, dtype=t) for t in (np.int64, np.int64, np.int32))
            mats.append(self._csr(rows, wires_of(codes, n_in), coef, n_rows, n_wires))
        self._chunks = [[], [], []]
        self._blocks = [[], [], []]
        self._rows = [[], [], []]
        return PCE(mats[0], mats[1], mats[2], n_wires=n_wires, n_public=n_in - 1, field=F)

    def _csr(self, rows: np.ndarray, cols: np.ndarray, coef: np.ndarray, n_rows: int, n_cols: int) -> CSR:
        F = self.field
        table = [0] * len(self._coef)
        for k, i in self._coef.items():
            table[i] = k
        table_mont = F.from_ints(table) if table else F.zeros(0)
        # one int64 key per entry (row-major); a stable sort puts each row's entries in column order
        key = rows * np.int64(n_cols) + cols
        order = np.argsort(key, kind="stable")
        key, coef = key[order], coef[order]
        vals = np.take(table_mont, coef, axis=0) if key.size else F.zeros(0)  # take: 2x a fancy index here
        rows, cols = rows[order], cols[order]
        if key.size:
            first = np.empty(key.size, dtype=bool)
            first[0] = True
            np.not_equal(key[1:], key[:-1], out=first[1:])
            starts = np.flatnonzero(first)
            if starts.size != key.size:  # the same variable twice in one LC (x + x): sum the coefficients
                sizes = np.diff(np.append(starts, key.size))
                merged = vals[starts]
                for j in range(1, int(sizes.max())):
                    g = np.flatnonzero(sizes > j)
                    merged[g] = F.add(np.ascontiguousarray(merged[g]), np.ascontiguousarray(vals[starts[g] + j]))
                keep = merged.any(axis=1)  # coefficients that cancelled
                rows, cols, vals = rows[starts][keep], cols[starts][keep], merged[keep]
        row_ptr = np.zeros(n_rows + 1, dtype=np.int64)
        np.cumsum(np.bincount(rows, minlength=n_rows), out=row_ptr[1:])
        return CSR(row_ptr, cols.astype(np.uint32), np.ascontiguousarray(vals.reshape(-1, 4)), n_cols, F)


# ---------------------------------------------------------------------------------------------
# values


class _Buffer:
    """Montgomery values of one variable kind, pre-sized or growing (doubling)."""

    def __init__(self, n: int | None):
        self.data = np.zeros((max(1, n or 1024), 4), dtype=np.uint64)
        self.fixed = n is not None

    def put(self, start: int, vals: np.ndarray) -> None:
        end = start + vals.shape[0]
        if end > self.data.shape[0]:
            if self.fixed:
                raise SynthesisError(f"more variables than the recording's layout ({self.data.shape[0]}): the circuit changed")
            new = np.zeros((max(end, 2 * self.data.shape[0]), 4), dtype=np.uint64)
            new[: self.data.shape[0]] = self.data
            self.data = new
        self.data[start:end] = vals


class WitnessCS(ConstraintSystem):
    """Values only: the witness of one proof (or of a batch of proofs' partitions)."""

    has_values = True
    wants_constraints = False  # so its n_constraints counts only the constraints gadgets did not skip

    def __init__(self, curve: Curve, layout: Layout | None = None, witness_buffer: str | None = None):
        super().__init__(curve)
        mode = witness_buffer or switch("witness_buffer")
        presized = mode == "presized" and layout is not None
        self._inputs = _Buffer(layout.n_inputs if presized else None)
        self._aux = _Buffer(layout.n_aux if presized else None)
        self._inputs.put(0, self.field.one_mont().reshape(1, 4))
        self.expected = layout

    def _assign(self, is_input: bool, codes: np.ndarray, value: Value, name: str) -> None:
        if value is None:
            raise SynthesisError(f"{self.path(name)}: no value given (the witness needs one)")
        v = value() if callable(value) else value
        fa = FieldArray.of(self.field, v, codes.shape)
        n = codes.size
        if is_input:
            self._inputs.put(self.n_inputs - n, fa.flat())
        else:
            self._aux.put(self.n_aux - n, fa.flat())

    def value(self, v: Var | LC) -> FieldArray:
        if isinstance(v, LC):
            return self._eval(v)
        codes = v.codes
        kinds = codes & 1
        idx = codes >> 1
        out = np.where(
            kinds[..., None] == 1, self._aux.data[np.where(kinds == 1, idx, 0)], self._inputs.data[np.where(kinds == 0, idx, 0)]
        )
        return FieldArray(self.field, out)

    def _eval(self, lc: LC, shape: tuple[int, ...] | None = None) -> FieldArray:
        shape = lc.shape if shape is None else shape
        F = self.field
        acc = np.zeros((int(np.prod(shape, dtype=np.int64)), 4), dtype=np.uint64)
        for k, codes in lc.terms:
            vals = self.value(Var(np.broadcast_to(codes, shape))).flat()
            if k % F.p != 1:
                vals = F.scale(vals, k)
            acc = F.add(acc, vals)
        return FieldArray(F, acc.reshape((*shape, 4)))

    def witness(self) -> np.ndarray:
        """The full witness vector: ONE, the public inputs, then the private variables."""
        if self.expected is not None and (self.n_inputs, self.n_aux) != (self.expected.n_inputs, self.expected.n_aux):
            raise SynthesisError(
                f"the circuit allocated {self.n_inputs} inputs and {self.n_aux} private variables, its recording "
                f"{self.expected.n_inputs} and {self.expected.n_aux}: the circuit changed since it was recorded"
            )
        return np.concatenate([self._inputs.data[: self.n_inputs], self._aux.data[: self.n_aux]])

    def public_inputs(self) -> list[int]:
        return self.field.to_ints(self._inputs.data[1 : self.n_inputs])


@dataclass
class Unsatisfied:
    path: str  # the enforce call's namespace path
    index: tuple[int, ...]  # the instance within the call's batch shape
    row: int  # the R1CS row

    def __str__(self) -> str:
        at = f" [instance {', '.join(map(str, self.index))}]" if self.index else ""
        return f"constraint {self.row} ({self.path}{at})"


class TestCS(WitnessCS):
    """Values, and every constraint checked as it is enforced."""

    __test__ = False  # not a pytest class
    wants_constraints = True

    def __init__(self, curve: Curve, tamper: dict[str, Callable[[FieldArray], Any]] | None = None):
        """``tamper``: fault injection for tests of gadgets: the values of the variables allocated under a
        path (``"ns/name"``) go through the function before they are stored."""
        super().__init__(curve, None, "growing")
        self.unsatisfied: list[Unsatisfied] = []
        self.n_unsatisfied = 0
        self.tamper = dict(tamper or {})
        self.tampered: set[str] = set()

    def _assign(self, is_input: bool, codes: np.ndarray, value: Value, name: str) -> None:
        fn = self.tamper.get(self.path(name))
        if fn is not None and value is not None:
            v = value() if callable(value) else value
            value = fn(FieldArray.of(self.field, v, codes.shape))
            self.tampered.add(self.path(name))
        super()._assign(is_input, codes, value, name)

    def _enforce(self, name: str, a: LC, b: LC, c: LC, shape: tuple[int, ...], rows: int) -> None:
        F = self.field
        av, bv, cv = (self._eval(x, shape).flat() for x in (a, b, c))
        bad = np.flatnonzero(np.any(F.sub(F.mul(av, bv), cv) != 0, axis=1))
        if bad.size:
            self.n_unsatisfied += int(bad.size)
            if not self.unsatisfied:
                i = int(bad[0])
                index = tuple(int(x) for x in np.unravel_index(i, shape)) if shape else ()
                self.unsatisfied.append(Unsatisfied(self.path(name), index, self.n_constraints + i))

    def is_satisfied(self) -> bool:
        return not self.unsatisfied

    def which_is_unsatisfied(self) -> str | None:
        return str(self.unsatisfied[0]) if self.unsatisfied else None
