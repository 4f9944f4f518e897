"""bellperson / Filecoin ``.params`` files (``Parameters::write``) and ``.vk`` files.

Layout, all big-endian, zcash uncompressed points (G1 96 B = x||y, G2 192 B = x.c1||x.c0||y.c1||y.c0,
flag bits in the top three bits of byte 0):
  alpha_g1, beta_g1, beta_g2, gamma_g2, delta_g1, delta_g2   (864 bytes)
  then six vectors, each u32 count + points: ic, h (m - 1), l (aux), a, b_g1, b_g2.
A ``.vk`` file holds the first part and ic only.

The file does not record which aux wires the a / b vectors cover: those densities come from the circuit,
so reading params takes the circuit's PCE and checks every count against it.
"""

from __future__ import annotations

import os
import struct

from ..curve import points as pts
from ..curves import get as get_curve
from ..r1cs.binfile import FormatError, map_file
from ..r1cs.pce import PCE
from .keys import BELLPERSON, ProvingKey, VerifyingKey

BLS = get_curve("bls12_381")  # bellperson parameters exist for BLS12-381 only
_VECTORS = (("ic", 1), ("h", 1), ("l", 1), ("a", 1), ("b1", 1), ("b2", 2))
_VK_BYTES = 3 * 96 + 3 * 192


def _vk_bytes(vk: VerifyingKey) -> bytes:
    return b"".join(
        [
            pts.to_uncompressed_be(BLS, 1, [vk.alpha1, vk.beta1]),
            pts.to_uncompressed_be(BLS, 2, [vk.beta2, vk.gamma2]),
            pts.to_uncompressed_be(BLS, 1, [vk.delta1]),
            pts.to_uncompressed_be(BLS, 2, [vk.delta2]),
        ]
    )


def write_params(path: str | os.PathLike[str], pk: ProvingKey) -> None:
    if pk.style != BELLPERSON:
        raise ValueError("only bellperson-style keys can be written as .params")
    if pk.curve != BLS:
        raise ValueError(f"bellperson .params hold BLS12-381 keys, not {pk.curve}")
    tmp = os.fspath(path) + ".tmp"
    with open(tmp, "wb") as fh:
        fh.write(_vk_bytes(pk.vk))
        fh.write(struct.pack(">I", len(pk.vk.ic)))
        fh.write(pts.to_uncompressed_be(BLS, 1, pk.vk.ic))
        for name, group in _VECTORS[1:]:
            raw = pk.raw[name]
            size = 96 if group == 1 else 192
            fh.write(struct.pack(">I", len(raw) // size))
            fh.write(pts.lem_to_uncompressed_be(BLS, group, raw, len(raw) // size))
    os.replace(tmp, path)


def write_vk(path: str | os.PathLike[str], vk: VerifyingKey) -> None:
    with open(path, "wb") as fh:
        fh.write(_vk_bytes(vk) + struct.pack(">I", len(vk.ic)) + pts.to_uncompressed_be(BLS, 1, vk.ic))


class _Cursor:
    def __init__(self, data: memoryview, path: str):
        self.data, self.pos, self.path = data, 0, path

    def take(self, n: int, what: str) -> memoryview:
        if self.pos + n > len(self.data):
            raise FormatError(
                f"{self.path}: truncated in {what}: needs {n} bytes at offset {self.pos}, file has {len(self.data) - self.pos} left"
            )
        v = self.data[self.pos : self.pos + n]
        self.pos += n
        return v

    def count(self, what: str) -> int:
        (n,) = struct.unpack(">I", self.take(4, f"{what} count"))
        return int(n)


def _read_vk(cur: _Cursor) -> VerifyingKey:
    where = f"{cur.path}: verifying key"
    alpha1, beta1 = pts.from_uncompressed_be(BLS, 1, cur.take(192, "verifying key"), 2, where)
    beta2, gamma2 = pts.from_uncompressed_be(BLS, 2, cur.take(384, "verifying key"), 2, where)
    (delta1,) = pts.from_uncompressed_be(BLS, 1, cur.take(96, "verifying key"), 1, where)
    (delta2,) = pts.from_uncompressed_be(BLS, 2, cur.take(192, "verifying key"), 1, where)
    n_ic = cur.count("ic")
    ic = pts.from_uncompressed_be(BLS, 1, cur.take(96 * n_ic, "ic"), n_ic, f"{cur.path}: ic")
    return VerifyingKey(alpha1, beta2, gamma2, delta2, ic, beta1=beta1, delta1=delta1)


def _map(path: str | os.PathLike[str]) -> memoryview:
    return memoryview(map_file(path, "bellperson parameters"))


def read_vk(path: str | os.PathLike[str]) -> VerifyingKey:
    cur = _Cursor(_map(path), os.fspath(path))
    vk = _read_vk(cur)
    if cur.pos != len(cur.data):
        raise FormatError(f"{path}: {len(cur.data) - cur.pos} trailing bytes after the verifying key")
    return vk


def params_layout(path: str | os.PathLike[str]) -> dict[str, int]:
    """The vector lengths of a ``.params`` file (or a ``.vk``: ic only) and its verifying key checked on the
    curve, without reading the vectors' points (a 32 GiB PoRep's parameters are ~50 GB: the file is
    mapped, only the counts are touched). FormatError when the counts do not add up to the file."""
    cur = _Cursor(_map(path), os.fspath(path))
    _read_vk(cur)
    out = {"ic": 0, "h": 0, "l": 0, "a": 0, "b1": 0, "b2": 0, "bytes": len(cur.data)}
    cur.pos = _VK_BYTES
    out["ic"] = cur.count("ic")
    cur.take(96 * out["ic"], "ic")
    if cur.pos == len(cur.data):
        out["vk_only"] = 1
        return out
    for name, group in _VECTORS[1:]:
        n = cur.count(name)
        cur.take(n * (96 if group == 1 else 192), name)
        out[name] = n
    if cur.pos != len(cur.data):
        raise FormatError(f"{path}: {len(cur.data) - cur.pos} trailing bytes after the b_g2 vector")
    return out


def read_params(path: str | os.PathLike[str], pce: PCE) -> ProvingKey:
    """Parameters for the circuit ``pce``; every vector length is checked against the circuit."""
    path = os.fspath(path)
    if pce.field is not None and pce.field.p != BLS.r:
        raise FormatError(f"{path}: bellperson parameters are over BLS12-381 but the circuit is over {pce.field.name.split()[0]}")
    cur = _Cursor(_map(path), path)
    vk = _read_vk(cur)
    n_inputs = pce.n_public + 1
    n_aux = pce.n_wires - n_inputs
    rows = pce.n_constraints + n_inputs
    log_n = max(1, (rows - 1).bit_length())
    dens_a = pce.A.column_density()
    dens_b = pce.B.column_density()
    expect = {
        "ic": n_inputs,
        "h": (1 << log_n) - 1,
        "l": n_aux,
        "a": n_inputs + int(dens_a[n_inputs:].sum()),
        "b1": int(dens_b.sum()),
        "b2": int(dens_b.sum()),
    }
    if len(vk.ic) != expect["ic"]:
        raise FormatError(
            f"{path}: ic has {len(vk.ic)} points, the circuit has {n_inputs} inputs (is this the key of another circuit?)"
        )
    raw = {}
    for name, group in _VECTORS[1:]:
        n = cur.count(name)
        if n != expect[name]:
            raise FormatError(
                f"{path}: vector {name} has {n} points, expected {expect[name]} for this circuit (is this the key of another circuit?)"
            )
        size = 96 if group == 1 else 192
        raw[name] = pts.uncompressed_be_to_lem(BLS, group, cur.take(n * size, name), n, f"{path}: {name}")
    if cur.pos != len(cur.data):
        raise FormatError(f"{path}: {len(cur.data) - cur.pos} trailing bytes after the b_g2 vector")
    return ProvingKey(
        BELLPERSON,
        pce.n_wires,
        pce.n_public,
        log_n,
        vk,
        raw,
        *pce.qap_matrices(),
        a_aux_density=dens_a[n_inputs:].copy(),
        b_inp_density=dens_b[:n_inputs].copy(),
        b_aux_density=dens_b[n_inputs:].copy(),
        source=path,
    )
