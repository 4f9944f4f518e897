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
  (row, variable code, coefficient index; sorted and merged block by block) or, with the ``lc_storage =
  "dicts"`` switch, as one dict per row; ``finish()`` gives the pre-compiled evaluator (CSR A/B/C over the
  final wire layout, a coefficient index per non-zero: :class:`~cuzk.r1cs.pce.IndexedCSR`) the prover
  runs. The recording of a circuit topology is cached on disk (:mod:`cuzk.circuit.circuit`).
* :class:`WitnessCS`: values only, no constraint bookkeeping: the per-proof path. Its buffers are
  pre-sized from the recording's layout (``witness_buffer = "presized"``) or grow as they fill.
* :class:`TestCS`: values and a check of every constraint as it is enforced; the first unsatisfied one
  is named by its namespace path (and the instance index within a batch).

Synthesis switches (measured in BENCHMARKS.md 6b): ``lc_storage`` and ``witness_buffer`` (module
:data:`SWITCHES`; the daemon's ``synthesis.*`` keys set them through :func:`configure_switches`, and
``CUZK_LC_STORAGE`` / ``CUZK_WITNESS_BUFFER`` override both; the registry is :mod:`cuzk.engine.switches`).
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
from ..r1cs.pce import PCE, IndexedCSR
from .lc import LC, ONE_CODE, FieldArray, Operand, Var, as_lc

SWITCHES = {"lc_storage": ("arrays", "dicts"), "witness_buffer": ("presized", "growing")}
# the environment variable that overrides each switch (named here in full: tests grep for every CUZK_* read)
SWITCH_ENV = {"lc_storage": "CUZK_LC_STORAGE", "witness_buffer": "CUZK_WITNESS_BUFFER"}

_configured: dict[str, str] = {}  # the daemon's [synthesis] values (configure_switches), under the environment


def configure_switches(values: dict[str, str]) -> dict[str, str]:
    """Set the process-wide synthesis switches (the daemon's ``synthesis.lc_storage`` / ``witness_buffer``,
    or ``--set``); the environment still overrides them. Returns the previous settings."""
    for name, value in values.items():
        if name not in SWITCHES:
            raise CuzkError(f"synthesis.{name}: not a synthesis switch (expected one of {', '.join(SWITCHES)})")
        if value not in SWITCHES[name]:
            raise CuzkError(f"synthesis.{name} = {value!r}: expected {' or '.join(SWITCHES[name])}")
    old = dict(_configured)
    _configured.clear()
    _configured.update(values)
    return old


def configured_switches() -> dict[str, str]:
    """The settings given to :func:`configure_switches` (the environment not applied): what a worker
    process (WitnessPool) is started with."""
    return dict(_configured)


def switch(name: str) -> str:
    """The current setting of a synthesis switch: its environment variable when set (an override), else
    the configured value, else the default (its first choice)."""
    choices = SWITCHES[name]
    var = SWITCH_ENV[name]
    value = os.environ.get(var, "") or _configured.get(name, choices[0])
    if value not in choices:
        raise CuzkError(f"{var}={value!r}: expected {' or '.join(choices)}")
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


@dataclass
class _Block:
    """Recorded entries of one matrix over rows [r0, r0 + counts.size), sorted and merged: per row its
    entry count, per entry its variable code and coefficient index, in the final column order."""

    r0: int
    counts: np.ndarray  # int32 per row
    codes: np.ndarray  # uint32 per entry: variable codes (inputs 2i, private 2j + 1)
    coef: np.ndarray  # int32 per entry: index into the recording's coefficient table


_CODE_BITS = 32  # variable codes as uint32: fewer than 2^31 variables of each kind
_KEY_COL_BITS = _CODE_BITS + 1  # the sort key's column part: (kind, index), the final wire order


class RecordingCS(ConstraintSystem):
    """Constraints without values, turned into the prover's CSR matrices by :meth:`finish`.

    The matrices hold a coefficient index per non-zero into the table of the recording's distinct
    coefficients (:class:`~cuzk.r1cs.pce.IndexedCSR`: 6 bytes per non-zero with the column). Terms are
    kept per enforce call and, every :data:`COMPACT_EVERY` terms or :data:`COMPACT_ENTRIES` entries,
    compacted into a block that is sorted into row-major final order and merged (the same variable twice
    in one LC) at once: enforce calls cover disjoint increasing row ranges, so blocks never need a global
    sort, and :meth:`finish` only concatenates them (8 bytes per non-zero held while recording)."""

    COMPACT_EVERY = 2048
    COMPACT_ENTRIES = 1 << 22

    def __init__(self, curve: Curve, lc_storage: str | None = None):
        super().__init__(curve)
        self.lc_storage = lc_storage or switch("lc_storage")
        self._coef: dict[int, int] = {}  # coefficient (mod r) -> its index
        self._coefs: list[int] = []  # index -> coefficient
        # per matrix: chunks of (first row, codes, coefficient index) -- one per LC term of an enforce call --
        # compacted into sorted blocks, so that a 2^24-constraint recording holds a few thousand arrays, not
        # millions; or one dict per row (lc_storage = "dicts")
        self._chunks: list[list[tuple[int, np.ndarray, int]]] = [[], [], []]
        self._pending = [0, 0, 0]  # entries in _chunks[m]
        self._blocks: list[list[_Block]] = [[], [], []]
        self._rows: list[list[dict[int, int]]] = [[], [], []]

    def _coef_index(self, k: int) -> int:
        k %= self.field.p
        i = self._coef.get(k)
        if i is None:
            i = self._coef[k] = len(self._coefs)
            self._coefs.append(k)
        return i

    def _enforce(self, name: str, a: LC, b: LC, c: LC, shape: tuple[int, ...], rows: int) -> None:
        base = self.n_constraints
        if rows == 0:
            return
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
            chunks = self._chunks[m]
            for k, codes in lc.terms:
                if k % self.field.p == 0:
                    continue
                flat = codes.reshape(-1) if codes.shape == shape else np.broadcast_to(codes, shape).reshape(-1)
                chunks.append((base, flat, self._coef_index(k)))
                self._pending[m] += rows
            if len(chunks) >= self.COMPACT_EVERY or self._pending[m] >= self.COMPACT_ENTRIES:
                self._compact(m)

    def _compact(self, m: int) -> None:
        """The pending chunks of matrix m (whole enforce calls) as one sorted, merged block."""
        chunks = self._chunks[m]
        if not chunks:
            return
        lengths = np.array([c[1].size for c in chunks], dtype=np.int64)
        bases = np.array([c[0] for c in chunks], dtype=np.int64)
        r0 = int(bases[0])
        r1 = int((bases + lengths).max())
        offsets = np.cumsum(lengths) - lengths  # where each chunk starts among the entries
        rows = np.arange(int(lengths.sum()), dtype=np.int64) + np.repeat(bases - r0 - offsets, lengths)
        codes = np.concatenate([c[1] for c in chunks]).astype(np.int64, copy=False)
        coef = np.repeat(np.array([c[2] for c in chunks], dtype=np.int32), lengths)
        chunks.clear()
        self._pending[m] = 0
        self._blocks[m].append(self._block(r0, r1 - r0, rows, codes, coef))

    def _block(self, r0: int, n_rows: int, rows: np.ndarray, codes: np.ndarray, coef: np.ndarray) -> _Block:
        """Entries (local row, variable code, coefficient index) of rows [r0, r0 + n_rows) sorted row-major,
        each row in final column order (inputs, then private variables), duplicates merged."""
        if codes.size and (int(codes.min()) < 0 or int(codes.max()) >= 1 << _CODE_BITS):
            raise SynthesisError(f"{self.path()}: more than 2^31 variables of one kind: too large to record")
        if n_rows >= 1 << (63 - _KEY_COL_BITS):
            raise SynthesisError(f"{self.path()}: {n_rows} rows in one block: too large to record")
        # column part of the key: (kind, index) -- the final wire order whatever the number of inputs
        key = (rows << _KEY_COL_BITS) | ((codes & 1) << _CODE_BITS) | (codes >> 1)
        del rows, codes
        order = np.argsort(key, kind="stable")  # runs of increasing rows (one per term): near-linear
        key = key[order]
        coef = coef[order]
        del order
        if key.size:
            first = np.empty(key.size, dtype=bool)
            first[0] = True
            np.not_equal(key[1:], key[:-1], out=first[1:])
            starts = np.flatnonzero(first)
            del first
            if starts.size != key.size:  # the same variable twice in one LC (x + x): sum the coefficients
                merged = self._merge(coef, starts)
                keep = merged >= 0  # coefficients that cancelled are dropped
                key, coef = key[starts][keep], merged[keep]
        counts = np.bincount(key >> _KEY_COL_BITS, minlength=n_rows).astype(np.int32)
        col = key & ((1 << _KEY_COL_BITS) - 1)
        codes32 = (((col & ((1 << _CODE_BITS) - 1)) << 1) | (col >> _CODE_BITS)).astype(np.uint32)
        return _Block(r0, counts, codes32, coef.astype(np.int32, copy=False))

    def _merge(self, coef: np.ndarray, starts: np.ndarray) -> np.ndarray:
        """Per group of equal keys (beginning at ``starts``), the index of its coefficients' sum (-1: zero).
        The sums are Python integers, once per distinct combination of indices (few: the same gadget's
        rows repeat them)."""
        p = self.field.p
        sizes = np.diff(np.append(starts, coef.size))
        merged = coef[starts].copy()
        for s in np.unique(sizes[sizes > 1]).tolist():
            g = np.flatnonzero(sizes == s)
            combos = coef[starts[g][:, None] + np.arange(s)]
            combos.sort(axis=1)
            distinct, inverse = np.unique(combos, axis=0, return_inverse=True)
            sums = [sum(self._coefs[i] for i in row) % p for row in distinct.tolist()]
            index = np.array([self._coef_index(v) if v else -1 for v in sums], dtype=np.int32)
            merged[g] = index[inverse.reshape(-1)]
        return merged

    def finish(self) -> PCE:
        """The recorded constraints as the pre-compiled evaluator (CSR over the final wire layout, a
        coefficient index per non-zero)."""
        F = self.field
        n_in, n_rows, n_wires = self.n_inputs, self.n_constraints, self.n_inputs + self.n_aux
        if n_wires >= 1 << _CODE_BITS:
            raise SynthesisError(f"{n_wires} wires: too large to record (column indices are uint32)")
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
                self._rows[m] = []
                self._blocks[m] = [self._block(0, n_rows, rows, codes, coef)]
            else:
                self._compact(m)
        table = F.from_ints(self._coefs) if self._coefs else np.zeros((0, 4), dtype=np.uint64)
        index_type = np.uint16 if len(self._coefs) <= 1 << 16 else np.uint32
        mats = []
        for m in range(3):
            blocks = self._blocks[m]
            nnz = sum(b.codes.size for b in blocks)
            cols = np.empty(nnz, dtype=np.uint32)
            coef = np.empty(nnz, dtype=index_type)
            counts = np.zeros(n_rows, dtype=np.int64)
            at = 0
            blocks.reverse()
            while blocks:  # block by block into the final arrays, each freed once copied
                b = blocks.pop()
                n = b.codes.size
                np.add(b.codes >> 1, (b.codes & 1) * np.uint32(n_in), out=cols[at : at + n])
                coef[at : at + n] = b.coef
                counts[b.r0 : b.r0 + b.counts.size] = b.counts
                at += n
                del b
            row_ptr = np.zeros(n_rows + 1, dtype=np.int64)
            np.cumsum(counts, out=row_ptr[1:])
            mats.append(IndexedCSR(row_ptr, cols, coef, table, n_wires, F))
        self._chunks = [[], [], []]
        self._blocks = [[], [], []]
        self._rows = [[], [], []]
        return PCE(mats[0], mats[1], mats[2], n_wires=n_wires, n_public=n_in - 1, field=F)


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
        self._coef: dict[int, np.ndarray] = {}  # coefficient (mod p) -> its Montgomery limbs

    # at most this many (term, instance) values gathered at once by _eval (32 B each: 128 MiB)
    EVAL_BATCH = 1 << 22

    def _eval(self, lc: LC, shape: tuple[int, ...] | None = None) -> FieldArray:
        """The LC's values, as WitnessCS computes them, with one gather, one multiplication by the
        coefficients and a tree of additions for all its terms (WitnessCS: one of each per term; TestCS
        evaluates every constraint's three LCs, and the per-term Python work dominated its checks: the
        Filecoin PoRep circuit's 2 KiB partition took about 100 s to check on 2 cores, 26-33 s this way)."""
        shape = lc.shape if shape is None else shape
        n = int(np.prod(shape, dtype=np.int64))
        t = len(lc.terms)
        if t < 2 or t * n > self.EVAL_BATCH:
            return super()._eval(lc, shape)
        F = self.field
        codes = np.empty((t, *shape), dtype=np.int64)
        coef = np.empty((t, 4), dtype=np.uint64)
        scaled = False
        for i, (k, c) in enumerate(lc.terms):
            codes[i] = c  # broadcast to the shape
            kp = k % F.p
            m = self._coef.get(kp)
            if m is None:
                m = self._coef[kp] = F.mont_scalar(kp)
            coef[i] = m
            scaled = scaled or kp != 1
        vals = self.value(Var(codes)).flat()  # (t * n, 4): term-major
        if scaled:
            vals = F.mul(vals, np.repeat(coef, n, axis=0))
        terms = vals.reshape(t, n, 4)
        while terms.shape[0] > 1:  # pairwise sums (the field's addition: the same values in any order)
            h = terms.shape[0] // 2
            s = F.add(terms[:h].reshape(-1, 4), terms[h : 2 * h].reshape(-1, 4)).reshape(h, n, 4)
            terms = np.concatenate([s, terms[2 * h :]]) if terms.shape[0] % 2 else s
        return FieldArray(F, terms[0].reshape((*shape, 4)))

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
