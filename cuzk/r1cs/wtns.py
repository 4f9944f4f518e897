"""Reader and writer for circom/snarkjs ``.wtns`` files (version 2).

Section 1: n8 u32 | prime (n8 bytes LE) | nWitness u32. Section 2: nWitness x n8-byte canonical LE
values in wire order, w[0] = 1.
"""

from __future__ import annotations

import os
import struct

import numpy as np

from ..field import fr
from ..field.constants import R
from .binfile import FormatError, Reader, open_binfile, parse_binfile, write_binfile


def _parse(bf, expected_wires: int | None) -> np.ndarray:
    path = bf.path
    hdr = Reader(bf.section(1, "header"), bf, 1, "header")
    hdr.scalar_field()
    n = hdr.u32("nWitness")
    hdr.end()
    body = bf.section(2, "witness")
    if len(body) != 32 * n:
        raise FormatError(f"{path}: section 2 (witness): {len(body)} bytes, expected {32 * n} for {n} values")
    if expected_wires is not None and n != expected_wires:
        raise FormatError(f"{path}: witness has {n} values, the circuit has {expected_wires} wires")
    canon = fr.canonical_from_bytes(body, n)
    ok = fr.below_modulus(canon)
    if not ok.all():
        bad = int(np.flatnonzero(~ok)[0])
        raise FormatError(f"{path}: section 2 (witness): value {bad} is not below the field modulus r")
    w = fr.to_mont(canon)
    if n and fr.to_ints(w[:1]) != [1]:
        raise FormatError(f"{path}: section 2 (witness): w[0] = {fr.to_ints(w[:1])[0]}, expected 1 (the constant wire)")
    return w


def read_wtns(path: str | os.PathLike, expected_wires: int | None = None) -> np.ndarray:
    """The witness as a Montgomery Fr vector."""
    bf = open_binfile(path, "wtns", (2,))
    try:
        return _parse(bf, expected_wires)
    finally:
        bf.close()


def parse_wtns(data: bytes, name: str = "<wtns>", expected_wires: int | None = None) -> np.ndarray:
    return _parse(parse_binfile(data, name, "wtns", (2,)), expected_wires)


def wtns_bytes(w: np.ndarray) -> bytes:
    hdr = struct.pack("<I", 32) + R.to_bytes(32, "little") + struct.pack("<I", w.shape[0])
    body = fr.to_canonical_bytes(w)
    out = [b"wtns", struct.pack("<II", 2, 2)]
    for sid, payload in ((1, hdr), (2, body)):
        out.append(struct.pack("<IQ", sid, len(payload)))
        out.append(payload)
    return b"".join(out)


def write_wtns(path: str | os.PathLike, w: np.ndarray) -> None:
    hdr = struct.pack("<I", 32) + R.to_bytes(32, "little") + struct.pack("<I", w.shape[0])
    write_binfile(path, "wtns", 2, [(1, hdr), (2, fr.to_canonical_bytes(w))])
