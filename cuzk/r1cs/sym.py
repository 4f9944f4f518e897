"""Reader for circom ``.sym`` files.

A ``.sym`` file is text, one line per signal label::

    labelId,wireId,componentId,name        e.g.  3,3,1,main.arr[0][0]

``wireId`` is -1 for a signal the optimiser removed (it has a label but no wire in the witness).
Several labels may share one wire (signals that the optimiser merged); the first one is the name we
report for that wire. Every error names the file and the line number.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import NamedTuple

from .. import CuzkError
from .binfile import FormatError


class SymEntry(NamedTuple):
    label: int
    wire: int  # -1: optimised away
    component: int
    name: str


def _parse_int(field: str) -> int:
    s = field.strip()
    # int() alone would also take "1_000", "+3" or non-ASCII digits
    if not s or not (s.isascii() and (s.isdigit() or (s[0] == "-" and s[1:].isdigit()))):
        raise ValueError(field)
    return int(s)


def iter_sym(path: str | os.PathLike) -> Iterator[SymEntry]:
    """Every label of the file, in file order (including optimised-away ones, wire = -1)."""
    try:
        f = open(path, "rb")
    except OSError as e:
        raise CuzkError(f"{path}: cannot read symbol file: {e.strerror or e}") from None
    with f:
        for lineno, raw in enumerate(f, 1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError:
                raise FormatError(f"{path}:{lineno}: malformed sym line: not valid UTF-8") from None
            line = line.rstrip("\r\n")
            if not line.strip():
                continue
            parts = line.split(",", 3)
            try:
                if len(parts) != 4:
                    raise ValueError(line)
                label, wire, comp = (_parse_int(p) for p in parts[:3])
            except ValueError:
                shown = line if len(line) <= 80 else line[:77] + "..."
                raise FormatError(
                    f"{path}:{lineno}: malformed sym line {shown!r}: expected labelId,wireId,componentId,name"
                ) from None
            name = parts[3].strip()
            if not name:
                raise FormatError(f"{path}:{lineno}: malformed sym line {line!r}: empty signal name")
            if wire < -1 or label < 0 or comp < 0:
                raise FormatError(f"{path}:{lineno}: malformed sym line {line!r}: negative id (only wireId may be -1)")
            yield SymEntry(label, wire, comp, name)


def read_sym(path: str | os.PathLike) -> dict[int, str]:
    """wireId -> the first signal name labelling that wire (optimised-away labels are skipped)."""
    out: dict[int, str] = {}
    for e in iter_sym(path):
        if e.wire >= 0 and e.wire not in out:
            out[e.wire] = e.name
    return out
