"""Reader and writer for circom/snarkjs ``.wtns`` files (version 2).

Section 1: n8 u32 | prime (n8 bytes LE) | nWitness u32. Section 2: nWitness x n8-byte canonical LE
values in wire order, w[0] = 1. The prime names the curve; a reader given the curve of the key or circuit
the witness is for rejects a witness of another curve in one line.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass

import numpy as np

from ..curves import Curve
from ..curves import get as get_curve
from .binfile import FormatError, Reader, curve_mismatch, open_binfile, parse_binfile, write_binfile


@dataclass
class Witness:
    curve: Curve
    values: np.ndarray  # Montgomery Fr vector of the curve


def _parse(bf, expected_wires: int | None, curve: Curve | None, expected_what: str) -> Witness:
    path = bf.path
    hdr = Reader(bf.section(1, "header"), bf, 1, "header")
    got = hdr.curve()
    if curve is not None and got != curve:
        raise curve_mismatch(f"{path}: witness", got, curve, expected_what)
    fr = got.fr
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
    return Witness(got, w)


def read_witness(path: str | os.PathLike, expected_wires: int | None = None) -> Witness:
    """The witness and the curve its header names."""
    bf = open_binfile(path, "wtns", (2,))
    try:
        return _parse(bf, expected_wires, None, "")
    finally:
        bf.close()


def read_wtns(
    path: str | os.PathLike, expected_wires: int | None = None, curve: Curve | None = None, expected_what: str = "the key"
) -> np.ndarray:
    """The witness as a Montgomery Fr vector; with ``curve``, a witness of another curve is refused."""
    bf = open_binfile(path, "wtns", (2,))
    try:
        return _parse(bf, expected_wires, curve, expected_what).values
    finally:
        bf.close()


def parse_wtns(
    data: bytes,
    name: str = "<wtns>",
    expected_wires: int | None = None,
    curve: Curve | None = None,
    expected_what: str = "the key",
) -> np.ndarray:
    return _parse(parse_binfile(data, name, "wtns", (2,)), expected_wires, curve, expected_what).values


def _header(w: np.ndarray, curve: Curve) -> bytes:
    return struct.pack("<I", 32) + curve.r.to_bytes(32, "little") + struct.pack("<I", w.shape[0])


def wtns_bytes(w: np.ndarray, curve: Curve | str = "bls12_381") -> bytes:
    """A .wtns file's bytes for the Montgomery vector ``w`` of ``curve``'s scalar field."""
    c = get_curve(curve)
    hdr = _header(w, c)
    body = c.fr.to_canonical_bytes(w)
    out = [b"wtns", struct.pack("<II", 2, 2)]
    for sid, payload in ((1, hdr), (2, body)):
        out.append(struct.pack("<IQ", sid, len(payload)))
        out.append(payload)
    return b"".join(out)


def write_wtns(path: str | os.PathLike, w: np.ndarray, curve: Curve | str = "bls12_381") -> None:
    c = get_curve(curve)
    write_binfile(path, "wtns", 2, [(1, _header(w, c)), (2, c.fr.to_canonical_bytes(w))])
