"""Limits on untrusted JSON checked before it is parsed.

Python's json module parses nested arrays and objects recursively in C; how deep it may go depends on the
interpreter's recursion limit at that moment, which a library elsewhere in the process can raise (a
test framework does), and past the thread's stack a 100,000-deep ``[[[...`` crashes the process instead
of raising RecursionError. So the depth of untrusted JSON is measured first, without recursion: a
vectorized scan that follows JSON's string lexing (a quote ends a string unless an odd run of
backslashes precedes it) and counts the brackets outside strings, in chunks so memory stays bounded.
"""

from __future__ import annotations

import numpy as np

MAX_DEPTH = 64  # deeper than any input format of this project (a C1 output nests ~12 levels)
_CHUNK = 1 << 23
_QUOTE, _BACKSLASH = ord('"'), ord("\\")


def max_nesting(data: bytes | bytearray | memoryview) -> int:
    """The deepest nesting of arrays/objects in ``data`` (brackets inside strings ignored). For
    malformed JSON the count follows the same lexing up to the error, which is as far as a parser goes."""
    buf = np.frombuffer(memoryview(data).cast("B"), dtype=np.uint8)
    depth = deepest = 0
    in_string = 0
    trailing_bs = 0  # backslashes at the end of the previous chunk
    delta_of = np.zeros(256, np.int8)
    delta_of[[ord("["), ord("{")]] = 1
    delta_of[[ord("]"), ord("}")]] = -1
    for lo in range(0, len(buf), _CHUNK):
        c = buf[lo : lo + _CHUNK]
        n = len(c)
        idx = np.arange(n, dtype=np.int64)
        last_other = np.maximum.accumulate(np.where(c != _BACKSLASH, idx, -1))
        before = np.empty(n, np.int64)  # the last non-backslash strictly before each position
        before[0] = -1
        before[1:] = last_other[:-1]
        run = np.where(before >= 0, idx - 1 - before, idx + trailing_bs)  # backslashes just before i
        quotes = (c == _QUOTE) & (run % 2 == 0)
        parity = (np.cumsum(quotes, dtype=np.int64) + in_string) & 1
        delta = np.where(parity == 0, delta_of[c], 0).astype(np.int64)
        level = np.cumsum(delta) + depth
        if n:
            deepest = max(deepest, int(level.max()))
            depth, in_string = int(level[-1]), int(parity[-1])
            trailing_bs = n - 1 - int(last_other[-1]) if last_other[-1] >= 0 else n + trailing_bs
    return deepest
