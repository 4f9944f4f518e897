"""snarkjs Groth16 ``.zkey`` (version 1) reader and writer, any curve.

Sections: 1 header (protocol = 1), 2 Groth16 header (n8q, q, n8r, r, nVars, nPublic, domainSize, alpha1,
beta1, beta2, gamma2, delta1, delta2), 3 IC, 4 coefficients (A and B matrices plus one A row per public
signal, values stored as v * R^2 mod r), 5 A, 6 B1, 7 B2, 8 C, 9 H, 10 contributions. Points are LEM
(n8q bytes per coordinate). The primes q and r name the curve (bn128 keys from circom's default
circuits, bls12381 ones from ``--prime bls12381``).
"""

from __future__ import annotations

import os
import struct

import numpy as np

from .. import curves
from ..curve import points as pts
from ..field.prime import PrimeField
from ..r1cs.binfile import BinFile, FormatError, Reader, open_binfile, parse_binfile, write_binfile
from ..r1cs.pce import CSR
from .keys import SNARKJS, ProvingKey, VerifyingKey

_COEF = np.dtype([("matrix", "<u4"), ("constraint", "<u4"), ("signal", "<u4"), ("value", "<u8", (4,))])
_SECTION_NAMES = {
    1: "header",
    2: "groth16 header",
    3: "IC",
    4: "coefficients",
    5: "A",
    6: "B1",
    7: "B2",
    8: "C",
    9: "H",
    10: "contributions",
}


def _point_section(bf: BinFile, sid: int, count: int, size: int) -> memoryview:
    sec = bf.section(sid, _SECTION_NAMES[sid])
    if len(sec) != count * size:
        raise FormatError(
            f"{bf.path}: section {sid} ({_SECTION_NAMES[sid]}): {len(sec)} bytes, expected {count * size} "
            f"({count} points of {size} bytes)"
        )
    return sec


def _parse(bf: BinFile) -> ProvingKey:
    path = bf.path
    r1 = Reader(bf.section(1, "header"), bf, 1, "header")
    protocol = r1.u32("protocol")
    if protocol != 1:
        names = {2: "PLONK", 10: "FFLONK"}
        raise FormatError(
            f"{path}: section 1 (header): protocol {protocol} ({names.get(protocol, 'unknown')}), expected 1 (Groth16)"
        )
    r1.end()

    r2 = Reader(bf.section(2, "groth16 header"), bf, 2, "groth16 header")
    where2 = f"{path}: section 2 (groth16 header)"
    n8q = r2.u32("n8q")
    q = r2.integer(n8q, "q") if 0 < n8q <= 64 else -1
    curve = curves.by_base_prime(q)
    known = " or ".join(c.title for c in curves.all_curves())
    if curve is None or n8q != curve.n8q:
        raise FormatError(f"{where2}: base field (n8q = {n8q}, q = {q:#x}) is not that of {known}")
    n8r = r2.u32("n8r")
    r = r2.integer(n8r, "r") if 0 < n8r <= 64 else -1
    if n8r != curve.n8r or r != curve.r:
        raise FormatError(f"{where2}: scalar field (n8r = {n8r}, r = {r:#x}) is not {curve}'s")
    n_vars = r2.u32("nVars")
    n_public = r2.u32("nPublic")
    domain = r2.u32("domainSize")
    if domain < 2 or domain & (domain - 1):
        raise FormatError(f"{where2}: domainSize {domain} is not a power of two >= 2")
    if domain.bit_length() - 1 > curve.two_adicity:
        raise FormatError(f"{where2}: domainSize 2^{domain.bit_length() - 1} exceeds {curve}'s two-adicity 2^{curve.two_adicity}")
    if n_vars < n_public + 1:
        raise FormatError(f"{where2}: nVars {n_vars} < nPublic + 1 = {n_public + 1}")
    g1, g2 = curve.g1_bytes, curve.g2_bytes
    # the header's counts against the file's size before anything is allocated from them (issue 19):
    # the IC, A, B1, B2 and H points alone need this many bytes
    need = (n_public + 1) * g1 + n_vars * (2 * g1 + g2) + domain * g1
    if need > len(bf.data):
        raise FormatError(
            f"{where2}: claims 2^{domain.bit_length() - 1} constraints and {n_vars} wires ({need} bytes of points) "
            f"but the file has {len(bf.data)} bytes"
        )
    alpha1, beta1 = pts.from_lem(curve, 1, r2.bytes(2 * g1, "alpha1, beta1"), 2, where2)
    beta2, gamma2 = pts.from_lem(curve, 2, r2.bytes(2 * g2, "beta2, gamma2"), 2, where2)
    (delta1,) = pts.from_lem(curve, 1, r2.bytes(g1, "delta1"), 1, where2)
    (delta2,) = pts.from_lem(curve, 2, r2.bytes(g2, "delta2"), 1, where2)
    r2.end()

    ic_raw = _point_section(bf, 3, n_public + 1, g1)
    ic = pts.from_lem(curve, 1, ic_raw, n_public + 1, f"{path}: section 3 (IC)")

    r4 = Reader(bf.section(4, "coefficients"), bf, 4, "coefficients")
    n_coefs = r4.u32("nCoefs")
    body = r4.bytes(n_coefs * _COEF.itemsize, f"{n_coefs} coefficients")
    r4.end()
    coefs = np.frombuffer(body, dtype=_COEF, count=n_coefs)
    A, B = _coef_matrices(path, coefs, n_vars, domain, curve.fr)

    raw = {
        "a": _point_section(bf, 5, n_vars, g1),
        "b1": _point_section(bf, 6, n_vars, g1),
        "b2": _point_section(bf, 7, n_vars, g2),
        "l": _point_section(bf, 8, n_vars - n_public - 1, g1),
        "h": _point_section(bf, 9, domain, g1),
    }
    vk = VerifyingKey(alpha1, beta2, gamma2, delta2, ic, beta1=beta1, delta1=delta1)
    return ProvingKey(SNARKJS, n_vars, n_public, domain.bit_length() - 1, vk, raw, A, B, None, source=path)


def _coef_matrices(path: str, coefs: np.ndarray, n_vars: int, domain: int, fr: PrimeField) -> tuple[CSR, CSR]:
    where = f"{path}: section 4 (coefficients)"
    if coefs.shape[0]:
        bad = np.flatnonzero(coefs["matrix"] > 1)
        if bad.size:
            raise FormatError(
                f"{where}: entry {int(bad[0])} names matrix {int(coefs['matrix'][bad[0]])}, expected 0 (A) or 1 (B)"
            )
        bad = np.flatnonzero(coefs["constraint"] >= domain)
        if bad.size:
            raise FormatError(
                f"{where}: entry {int(bad[0])} names constraint {int(coefs['constraint'][bad[0]])}, beyond the domain of {domain}"
            )
        bad = np.flatnonzero(coefs["signal"] >= n_vars)
        if bad.size:
            raise FormatError(f"{where}: entry {int(bad[0])} names signal {int(coefs['signal'][bad[0]])}, the key has {n_vars}")
    vals = np.ascontiguousarray(coefs["value"])
    ok = fr.below_modulus(vals)
    if not ok.all():
        raise FormatError(f"{where}: entry {int(np.flatnonzero(~ok)[0])} has a value not below r")
    vals = fr.from_mont(vals)  # v*R^2 -> v*R: our Montgomery form
    mats = []
    for m in (0, 1):
        sel = np.flatnonzero(coefs["matrix"] == m)
        rows = coefs["constraint"][sel].astype(np.int64)
        order = np.argsort(rows, kind="stable")
        sel, rows = sel[order], rows[order]
        row_ptr = np.zeros(domain + 1, dtype=np.int64)
        np.add.at(row_ptr, rows + 1, 1)
        np.cumsum(row_ptr, out=row_ptr)
        mats.append(CSR(row_ptr, coefs["signal"][sel].astype(np.uint32), np.ascontiguousarray(vals[sel]), n_vars, fr))
    return mats[0], mats[1]


def read_zkey(path: str | os.PathLike[str]) -> ProvingKey:
    """Read and validate a snarkjs Groth16 zkey. Point vectors stay mapped from the file."""
    bf = open_binfile(path, "zkey", (1,))
    return _parse(bf)


def parse_zkey(data: bytes, name: str = "<zkey>") -> ProvingKey:
    return _parse(parse_binfile(data, name, "zkey", (1,)))


def zkey_sections(pk: ProvingKey, contributions: bytes | None = None) -> list[tuple[int, bytes | list[bytes]]]:
    """Section payloads of a snarkjs zkey for ``pk`` (which must be snarkjs-style)."""
    vk = pk.vk
    c = pk.curve
    hdr2 = b"".join(
        [
            struct.pack("<I", c.n8q),
            c.q.to_bytes(c.n8q, "little"),
            struct.pack("<I", c.n8r),
            c.r.to_bytes(c.n8r, "little"),
            struct.pack("<III", pk.n_vars, pk.n_public, pk.domain_size),
            pts.to_lem(c, 1, [vk.alpha1, vk.beta1]),
            pts.to_lem(c, 2, [vk.beta2, vk.gamma2]),
            pts.to_lem(c, 1, [vk.delta1]),
            pts.to_lem(c, 2, [vk.delta2]),
        ]
    )
    coef_chunks = []
    total = 0
    for m, mat in ((0, pk.A), (1, pk.B)):
        counts = np.diff(mat.row_ptr)
        rec = np.empty(mat.nnz, dtype=_COEF)
        rec["matrix"] = m
        rec["constraint"] = np.repeat(np.arange(mat.n_rows, dtype=np.uint32), counts)
        rec["signal"] = mat.cols
        rec["value"] = c.fr.to_mont(mat.vals)  # v*R -> v*R^2
        coef_chunks.append(rec.tobytes())
        total += mat.nnz
    contrib = contributions if contributions is not None else bytes(64) + struct.pack("<I", 0)
    return [
        (1, struct.pack("<I", 1)),
        (2, hdr2),
        (3, pts.to_lem(c, 1, vk.ic)),
        (4, [struct.pack("<I", total)] + coef_chunks),
        (5, bytes(pk.raw["a"])),
        (6, bytes(pk.raw["b1"])),
        (7, bytes(pk.raw["b2"])),
        (8, bytes(pk.raw["l"])),
        (9, bytes(pk.raw["h"])),
        (10, contrib),
    ]


def write_zkey(path: str | os.PathLike[str], pk: ProvingKey) -> None:
    if pk.style != SNARKJS:
        raise ValueError("only snarkjs-style keys can be written as .zkey")
    write_binfile(path, "zkey", 1, zkey_sections(pk))
