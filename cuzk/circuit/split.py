"""One witness computed in parts: a batched circuit's units (PoRep's challenges) split over processes.

A circuit that batches independent units (every challenge of a PoRep partition goes through the same
gadget calls, each allocation of shape ``(C, ...)``) can run with a subset of them: the same class with
``C' = hi - lo`` units, on the inputs of units ``[lo, hi)``. Its allocations are then the full circuit's,
block for block, with the leading dimension ``C`` of the per-unit blocks made ``C'`` and the global blocks
(the replica id, CommR's hash) unchanged, so its witness maps onto the full one:

    full[o + lo * R + j] = sub[o' + j]   for j < C' * R   (a per-unit block of shape (C, *rest), R = prod(rest))
    full[o + j] = sub[o' + j]                              (a global block)

at the block's offsets ``o`` / ``o'`` in the full and the sub-circuit's layouts (public inputs first, then the
private variables, each counted apart). Nothing here assumes a circuit has this property: the map is
derived from the two allocation sequences (:func:`alloc_blocks` of the full circuit, which allocates as
its recording did, and the sequence the sub-witness itself allocated), and refused (:class:`SplitError`)
unless both have the same blocks in the same order, by kind and namespace path, each either of the same
shape (global) or of shapes ``(C, *rest)`` / ``(C', *rest)``, with the full sequence's sizes adding up to
the recording's layout. The parts' global blocks must also hold the same values (a global value that
depended on which units a part had, such as a hash over all challenges, would differ): checked by digest.

A circuit opts in with :meth:`Circuit.split_units` (its ``C``) and :meth:`Circuit.split` (the JSON inputs
and the parameters of the sub-circuit of units ``[lo, hi)``); ``parse_inputs`` of the parts must accept
exactly when ``parse_inputs`` of the whole does (each unit's checks in the part that has it, the global
ones in every part), which lets the submission-time check run in parts too.

:func:`split_witness_serial` merges the parts in this process (tests, reference);
:class:`cuzk.circuit.circuit.WitnessPool` runs them in its worker processes, each writing its part of the
witness straight into one shared buffer (:class:`SharedWitness`).
"""

from __future__ import annotations

import hashlib
import mmap
import os
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import CuzkError
from .circuit import Circuit
from .cs import ConstraintSystem, Layout, Value, WitnessCS

# one allocation: (public input?, namespace path, shape)
Block = tuple[bool, str, tuple[int, ...]]


class SplitError(CuzkError):
    """The circuit's witness cannot be computed in parts: its allocations do not scale with its units
    (or a part's global values differ from another's). Not the request's fault: compute it whole."""


def _size(shape: tuple[int, ...]) -> int:
    return int(np.prod(shape, dtype=np.int64))


class _BlockCS(ConstraintSystem):
    """Counts and logs allocations, no values: the recording's allocation path (``wants_constraints``,
    no values), without its matrices."""

    def __init__(self, curve: Any):
        super().__init__(curve)
        self.blocks: list[Block] = []

    def _assign(self, is_input: bool, codes: np.ndarray, value: Value, name: str) -> None:
        self.blocks.append((is_input, self.path(name), tuple(codes.shape)))


class _PartWitnessCS(WitnessCS):
    """A part's witness: values, and its allocations logged. Buffers pre-sized from an estimate of the
    part's layout but free to grow (the estimate assumes the split works; the log decides)."""

    def __init__(self, curve: Any, estimate: Layout):
        super().__init__(curve, estimate, "presized")
        self._inputs.fixed = self._aux.fixed = False
        self.expected = None
        self.blocks: list[Block] = []

    def _assign(self, is_input: bool, codes: np.ndarray, value: Value, name: str) -> None:
        self.blocks.append((is_input, self.path(name), tuple(codes.shape)))
        super()._assign(is_input, codes, value, name)

    def buffers(self) -> tuple[np.ndarray, np.ndarray]:
        """(public inputs incl. ONE, private variables) as allocated."""
        return self._inputs.data[: self.n_inputs], self._aux.data[: self.n_aux]


def alloc_blocks(circuit: Circuit) -> list[Block]:
    """The allocation sequence of the circuit without inputs (as its recording allocates)."""
    cs = _BlockCS(circuit.curve_)
    circuit.synthesize(cs, None)
    return cs.blocks


def check_blocks(blocks: list[Block], layout: Layout) -> None:
    """The blocks add up to the recording's layout (SplitError otherwise)."""
    n_in = 1 + sum(_size(s) for i, _, s in blocks if i)
    n_aux = sum(_size(s) for i, _, s in blocks if not i)
    if (n_in, n_aux) != (layout.n_inputs, layout.n_aux):
        raise SplitError(
            f"the circuit allocates {n_in} inputs and {n_aux} private variables without inputs, its recording "
            f"{layout.n_inputs} and {layout.n_aux}"
        )


@dataclass
class Runs:
    """Where a part's values go in the full witness: per run, its source buffer (public inputs or private
    variables), start in that buffer, destination wire, length, and whether it is a global block's."""

    src_input: np.ndarray  # bool
    src: np.ndarray  # int64
    dst: np.ndarray  # int64
    n: np.ndarray  # int64
    glob: np.ndarray  # bool

    @property
    def wires(self) -> int:
        return int(self.n[~self.glob].sum())


def scatter_runs(full: list[Block], sub: list[Block], units: int, lo: int, hi: int, layout: Layout) -> Runs:
    """The copies that put the witness of units ``[lo, hi)`` (allocations ``sub``) into the full witness
    (allocations ``full``, of ``layout``); SplitError naming the first block that does not fit."""
    if not 0 <= lo < hi <= units:
        raise SplitError(f"units [{lo}, {hi}) are not a range of the circuit's {units}")
    part = hi - lo
    if len(sub) != len(full):
        raise SplitError(f"the circuit of {part} of its {units} units makes {len(sub)} allocations, the circuit {len(full)}")
    rows: list[tuple[bool, int, int, int, bool]] = [(True, 0, 0, 1, True)]  # ONE: input 0 in both
    fo = [1, layout.n_inputs]  # next full wire, per kind (aux after the inputs)
    so = [1, 0]  # next position in the part's buffers, per kind
    for k, (a, b) in enumerate(zip(full, sub)):
        is_in, name, shape = a
        if b[0] != is_in or b[1] != name:
            raise SplitError(
                f"allocation {k} of the circuit of {part} units is {_what(b)}, the circuit's is {_what(a)}: "
                "the allocations differ, not only in size"
            )
        kind = 0 if is_in else 1
        sshape = b[2]
        size, ssize = _size(shape), _size(sshape)
        if sshape == shape:  # global: whole
            if size:
                rows.append((is_in, so[kind], fo[kind], size, True))
        elif shape and sshape and shape[0] == units and sshape[0] == part and shape[1:] == sshape[1:]:
            r = _size(shape[1:])
            if r:
                rows.append((is_in, so[kind], fo[kind] + lo * r, part * r, False))
        else:
            raise SplitError(
                f"{_what(a)} (allocation {k}) has shape {sshape} in the circuit of {part} of its {units} units: "
                f"neither the same (global) nor its leading dimension {units} made {part}; the circuit cannot be split"
            )
        fo[kind] += size
        so[kind] += ssize
    if fo != [layout.n_inputs, layout.n_wires]:
        raise SplitError(
            f"the circuit's allocations make {fo[0]} inputs and {fo[1] - fo[0]} private variables, its recording "
            f"{layout.n_inputs} and {layout.n_aux}"
        )
    si, src, dst, n, glob = zip(*rows)
    i64 = lambda x: np.asarray(x, dtype=np.int64)  # noqa: E731
    return Runs(np.asarray(si, dtype=bool), i64(src), i64(dst), i64(n), np.asarray(glob, dtype=bool))


def _what(b: Block) -> str:
    return f"{'input' if b[0] else 'variable'} {b[1]!r} {b[2]}"


def split_ranges(units: int, parts: int) -> list[tuple[int, int]]:
    """``units`` in ``parts`` contiguous ranges of sizes differing by at most one (the larger first)."""
    parts = max(1, min(parts, units))
    q, r = divmod(units, parts)
    out, lo = [], 0
    for i in range(parts):
        hi = lo + q + (i < r)
        out.append((lo, hi))
        lo = hi
    return out


def check_ranges(ranges: Iterable[tuple[int, int]], units: int) -> list[tuple[int, int]]:
    """The ranges, sorted, if they cover ``[0, units)`` exactly once (ValueError otherwise)."""
    rs = sorted(ranges)
    at = 0
    for lo, hi in rs:
        if lo != at or hi <= lo:
            raise ValueError(f"ranges {rs} do not cover [0, {units}) once")
        at = hi
    if at != units or not rs:
        raise ValueError(f"ranges {rs} do not cover [0, {units}) once")
    return rs


def _estimate(full: list[Block], units: int, part: int) -> Layout:
    """The part's layout if every block of leading dimension ``units`` scales (a presizing guess)."""
    n = [1, 0]
    for is_in, _, shape in full:
        size = _size(shape)
        if shape and shape[0] == units:
            size = size // units * part
        n[0 if is_in else 1] += size
    return Layout(n[0], n[1], 0)


def compute_part(
    circuit: Circuit, full: list[Block], layout: Layout, sub_inputs: Any, sub_params: dict[str, Any], lo: int, hi: int
) -> tuple[_PartWitnessCS, Runs]:
    """The witness of units ``[lo, hi)`` (the sub-circuit's inputs parsed, so checked, here) and its runs
    into the full witness. ``full``: the circuit's :func:`alloc_blocks`, checked against ``layout``."""
    units = circuit.split_units()
    sub = type(circuit)(**sub_params)
    if sub.split_units() != hi - lo:
        raise SplitError(f"{type(circuit).__name__}.split: the circuit of units [{lo}, {hi}) has {sub.split_units()} units")
    cs = _PartWitnessCS(sub.curve_, _estimate(full, units, hi - lo))
    sub.synthesize(cs, sub.parse_inputs(sub_inputs))
    return cs, scatter_runs(full, cs.blocks, units, lo, hi, layout)


def write_part(out: np.ndarray, cs: _PartWitnessCS, runs: Runs, with_globals: bool) -> str:
    """Copy the part's values into ``out`` (the full witness, (n_wires, 4) uint64): its per-unit runs, and
    the global ones when ``with_globals``; returns a digest of its global values."""
    ins, aux = cs.buffers()
    h = hashlib.sha256()
    for si, s, d, k, g in zip(runs.src_input.tolist(), runs.src.tolist(), runs.dst.tolist(), runs.n.tolist(), runs.glob.tolist()):
        vals = (ins if si else aux)[s : s + k]
        if g:
            h.update(np.ascontiguousarray(vals).tobytes())
            if not with_globals:
                continue
        out[d : d + k] = vals
    return h.hexdigest()


def same_globals(digests: list[str]) -> None:
    if len(set(digests)) > 1:
        raise SplitError(
            "the parts' global values differ (a value outside the per-unit blocks depends on which units a part "
            "has): the circuit cannot be split"
        )


def split_witness_serial(circuit: Circuit, inputs: Any, layout: Layout, parts: int | list[tuple[int, int]] = 2) -> np.ndarray:
    """The witness computed in parts in this process, one after the other, and merged (a reference for the
    parallel path, and its tests): ``parts`` ranges of units, or a count split evenly."""
    units = circuit.split_units()
    if units < 1:
        raise SplitError(f"{type(circuit).__name__} does not declare units to split over (split_units)")
    ranges = check_ranges(split_ranges(units, parts) if isinstance(parts, int) else parts, units)
    full = alloc_blocks(circuit)
    check_blocks(full, layout)
    out = np.zeros((layout.n_wires, 4), dtype=np.uint64)
    digests = []
    for lo, hi in ranges:
        sub_inputs, sub_params = circuit.split(inputs, lo, hi)
        cs, runs = compute_part(circuit, full, layout, sub_inputs, sub_params, lo, hi)
        digests.append(write_part(out, cs, runs, lo == 0))
    same_globals(digests)
    return out


# ---------------------------------------------------------------------------------------------
# a diagnostic of the recorded constraints


def wire_units(blocks: list[Block], units: int, layout: Layout) -> np.ndarray:
    """The unit of every wire of the full layout (-1 for a global block's wires and ONE), reading a block
    of leading dimension ``units`` as per-unit (SplitError if the blocks do not make ``layout``)."""
    check_blocks(blocks, layout)
    out = np.full(layout.n_wires, -1, dtype=np.int32)
    at = [1, layout.n_inputs]
    for is_in, _, shape in blocks:
        kind, size = (0 if is_in else 1), _size(shape)
        if shape and shape[0] == units and size:
            out[at[kind] : at[kind] + size] = np.repeat(np.arange(units, dtype=np.int32), size // units)
        at[kind] += size
    return out


def crossing_rows(pce: Any, unit: np.ndarray) -> np.ndarray:
    """The constraints (rows of A, B and C together) whose variables belong to two units or more: none in
    a circuit whose units are independent given the global variables."""
    n = pce.A.n_rows
    lo = np.full(n, np.iinfo(np.int32).max, dtype=np.int64)
    hi = np.full(n, -1, dtype=np.int64)
    for m in (pce.A, pce.B, pce.C):
        if m.nnz == 0:
            continue
        u = unit[m.cols].astype(np.int64)
        starts = np.minimum(m.row_ptr[:-1], m.nnz - 1)
        full = np.diff(m.row_ptr) > 0  # reduceat gives an empty row the next entry: masked
        big = np.where(u >= 0, u, np.iinfo(np.int32).max)
        lo = np.where(full, np.minimum(lo, np.minimum.reduceat(big, starts)), lo)
        hi = np.where(full, np.maximum(hi, np.maximum.reduceat(u, starts)), hi)
    return np.flatnonzero((hi >= 0) & (lo != hi))


# ---------------------------------------------------------------------------------------------
# one witness buffer shared with the worker processes


class SharedWitness:
    """A zeroed (n_wires, 4) uint64 buffer in an anonymous memory file (memfd: not bounded by /dev/shm's
    size) that spawned workers open through ``/proc/<pid>/fd``; :meth:`array` maps it in this process
    (the array keeps the mapping: no copy of the witness)."""

    def __init__(self, n_wires: int):
        self.nbytes = n_wires * 32
        self.fd = os.memfd_create("cuzk-witness")
        try:
            os.ftruncate(self.fd, self.nbytes)
        except OSError:
            os.close(self.fd)
            raise
        self.ref = (os.getpid(), self.fd, self.nbytes)

    def array(self) -> np.ndarray:
        mm = mmap.mmap(self.fd, self.nbytes)
        return np.frombuffer(mm, dtype=np.uint64).reshape(-1, 4)

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __enter__(self) -> SharedWitness:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_shared(ref: tuple[int, int, int]) -> tuple[mmap.mmap, np.ndarray]:
    """A worker's view of a :class:`SharedWitness` (close the mmap after dropping the array)."""
    pid, fd, nbytes = ref
    f = os.open(f"/proc/{pid}/fd/{fd}", os.O_RDWR)
    try:
        mm = mmap.mmap(f, nbytes)
    finally:
        os.close(f)
    return mm, np.frombuffer(mm, dtype=np.uint64).reshape(-1, 4)
