"""Reader for circom ``.r1cs`` files (version 1) into a :class:`~cuzk.r1cs.pce.PCE`.

Header (section 1): n8 | prime r | nWires | nPubOut | nPubIn | nPrvIn | nLabels (u64) | nConstraints.
The prime names the curve (BN254's r for circom's default ``--prime bn128``, BLS12-381's for
``--prime bls12381``).
Constraints (section 2): per constraint LC_A LC_B LC_C, LC = nTerms u32 | nTerms x (wire u32, coef n8 LE),
coefficients canonical. Wire-to-label map (section 3): nWires x u64.
The constraint section is scanned by a numba kernel (circuits of 10^8 terms parse in seconds).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numba as nb
import numpy as np

from ..curves import Curve
from ..field.prime import limbs
from .binfile import FormatError, Reader, open_binfile, parse_binfile
from .pce import CSR, PCE


@dataclass
class R1CS:
    path: str
    n_wires: int
    n_pub_out: int
    n_pub_in: int
    n_prv_in: int
    n_labels: int
    n_constraints: int
    pce: PCE
    wire_to_label: np.ndarray | None
    curve: Curve

    @property
    def n_public(self) -> int:
        return self.n_pub_out + self.n_pub_in

    @property
    def domain_log(self) -> int:
        """log2 of the snarkjs domain: next power of two >= constraints + public rows."""
        need = self.n_constraints + self.n_public + 1
        return max(1, (need - 1).bit_length())


@nb.njit(cache=True)
def _u32(b, p):
    return (
        np.uint32(b[p])
        | (np.uint32(b[p + 1]) << np.uint32(8))
        | (np.uint32(b[p + 2]) << np.uint32(16))
        | (np.uint32(b[p + 3]) << np.uint32(24))
    )


@nb.njit(cache=True)
def _scan(b, n_constraints, n8, n_wires, rmod, counts, fill, row_ptrs, cols, coefs):
    """Walk the constraint section. Returns (status, constraint index, byte offset).

    status 0 ok, 1 truncated, 2 wire id out of range, 3 coefficient >= r.
    With fill=True also writes row_ptrs (3, m+1), cols (3 arrays concatenated) and coefs.
    """
    p = 0
    n = b.shape[0]
    k = np.zeros(3, dtype=np.int64)
    for c in range(n_constraints):
        for m in range(3):
            if p + 4 > n:
                return 1, c, p
            nt = _u32(b, p)
            p += 4
            if p + nt * (4 + n8) > n:
                return 1, c, p
            for _t in range(nt):
                w = _u32(b, p)
                if w >= n_wires:
                    return 2, c, p
                q = p + 4
                # coefficient limbs (little-endian)
                l0 = np.uint64(0)
                l1 = np.uint64(0)
                l2 = np.uint64(0)
                l3 = np.uint64(0)
                for i in range(8):
                    l0 |= np.uint64(b[q + i]) << np.uint64(8 * i)
                    l1 |= np.uint64(b[q + 8 + i]) << np.uint64(8 * i)
                    l2 |= np.uint64(b[q + 16 + i]) << np.uint64(8 * i)
                    l3 |= np.uint64(b[q + 24 + i]) << np.uint64(8 * i)
                # canonical check: value < r (compare from the top limb)
                ok = False
                if l3 != rmod[3]:
                    ok = l3 < rmod[3]
                elif l2 != rmod[2]:
                    ok = l2 < rmod[2]
                elif l1 != rmod[1]:
                    ok = l1 < rmod[1]
                else:
                    ok = l0 < rmod[0]
                if not ok:
                    return 3, c, q
                if fill:
                    j = k[m]
                    base = 0 if m == 0 else (counts[0] if m == 1 else counts[0] + counts[1])
                    cols[base + j] = w
                    coefs[base + j, 0] = l0
                    coefs[base + j, 1] = l1
                    coefs[base + j, 2] = l2
                    coefs[base + j, 3] = l3
                k[m] += 1
                p += 4 + n8
            if fill:
                row_ptrs[m, c + 1] = k[m]
    if not fill:
        counts[0] = k[0]
        counts[1] = k[1]
        counts[2] = k[2]
    return 0, n_constraints, p


_SCAN_ERRORS = {1: "truncated", 2: "wire id out of range", 3: "coefficient not below the field modulus r"}


def _parse(bf) -> R1CS:
    path = bf.path
    hdr = Reader(bf.section(1, "header"), bf, 1, "header")
    curve = hdr.curve()
    n8 = 32
    rmod = np.array(limbs(curve.r, 4), dtype=np.uint64)
    n_wires = hdr.u32("nWires")
    n_pub_out = hdr.u32("nPubOut")
    n_pub_in = hdr.u32("nPubIn")
    n_prv_in = hdr.u32("nPrvIn")
    n_labels = hdr.u64("nLabels")
    n_constraints = hdr.u32("nConstraints")
    hdr.end()
    if n_wires < 1 + n_pub_out + n_pub_in + n_prv_in:
        raise FormatError(
            f"{path}: section 1 (header): {n_wires} wires cannot hold 1 + {n_pub_out} + {n_pub_in} + {n_prv_in} signals"
        )

    body = np.frombuffer(bf.section(2, "constraints"), dtype=np.uint8)
    if 12 * n_constraints > body.shape[0]:  # three term counts each: checked before anything is allocated
        raise FormatError(f"{path}: section 1 (header): claims {n_constraints} constraints but the file has {len(bf.data)} bytes")
    counts = np.zeros(3, dtype=np.int64)
    dummy_rp = np.zeros((3, 1), dtype=np.int64)
    dummy_c = np.zeros(0, dtype=np.uint32)
    dummy_v = np.zeros((0, 4), dtype=np.uint64)
    st, ci, off = _scan(body, n_constraints, n8, n_wires, rmod, counts, False, dummy_rp, dummy_c, dummy_v)
    if st:
        raise FormatError(f"{path}: section 2 (constraints): {_SCAN_ERRORS[st]} in constraint {ci} at offset {off}")
    if off != body.shape[0]:
        raise FormatError(f"{path}: section 2 (constraints): {body.shape[0] - off} bytes left after {n_constraints} constraints")
    total = int(counts.sum())
    row_ptrs = np.zeros((3, n_constraints + 1), dtype=np.int64)
    cols = np.empty(total, dtype=np.uint32)
    coefs = np.empty((total, 4), dtype=np.uint64)
    _scan(body, n_constraints, n8, n_wires, rmod, counts, True, row_ptrs, cols, coefs)
    fr = curve.fr
    fr.to_mont(coefs, out=coefs)
    mats = []
    start = 0
    for m in range(3):
        end = start + int(counts[m])
        mats.append(CSR(row_ptrs[m].copy(), cols[start:end].copy(), coefs[start:end].copy(), n_wires, fr))
        start = end

    wire_to_label = None
    if bf.has(3):
        sec = bf.section(3, "wire map")
        if len(sec) != 8 * n_wires:
            raise FormatError(f"{path}: section 3 (wire map): {len(sec)} bytes, expected {8 * n_wires} for {n_wires} wires")
        wire_to_label = np.frombuffer(sec, dtype="<u8").copy()
    pce = PCE(mats[0], mats[1], mats[2], n_wires=n_wires, n_public=n_pub_out + n_pub_in, field=fr)
    return R1CS(path, n_wires, n_pub_out, n_pub_in, n_prv_in, n_labels, n_constraints, pce, wire_to_label, curve)


def read_r1cs(path: str | os.PathLike) -> R1CS:
    bf = open_binfile(path, "r1cs", (1,))
    try:
        return _parse(bf)
    finally:
        bf.close()


def parse_r1cs(data: bytes, name: str = "<r1cs>") -> R1CS:
    return _parse(parse_binfile(data, name, "r1cs", (1,)))


def _constraint_bytes(mats, canon, lo: int, hi: int) -> bytes:
    """Section-2 bytes of rows lo..hi: per row, per matrix, nTerms u32 then (wire u32, coef 32 bytes)."""
    rows = hi - lo
    counts = np.stack([np.diff(m.row_ptr[lo : hi + 1]) for m in mats], axis=1)  # (rows, 3)
    words = 1 + 9 * counts  # 4-byte words per (row, matrix)
    row_words = words.sum(axis=1)
    row_off = np.zeros(rows + 1, dtype=np.int64)
    np.cumsum(row_words, out=row_off[1:])
    out = np.zeros(int(row_off[-1]), dtype="<u4")
    mat_off = row_off[:-1, None] + np.concatenate([np.zeros((rows, 1), np.int64), np.cumsum(words, axis=1)[:, :2]], axis=1)
    for k, (m, cv) in enumerate(zip(mats, canon)):
        out[mat_off[:, k]] = counts[:, k]
        a, b = int(m.row_ptr[lo]), int(m.row_ptr[hi])
        if b == a:
            continue
        local = np.arange(b - a, dtype=np.int64) - (m.row_ptr[lo:hi].repeat(counts[:, k]) - a)
        base = mat_off[:, k].repeat(counts[:, k]) + 1 + 9 * local
        out[base] = m.cols[a:b]
        coef = cv[a:b].view("<u4").reshape(-1, 8)
        for j in range(8):
            out[base + 1 + j] = coef[:, j]
    return out.tobytes()


def write_r1cs(
    path: str | os.PathLike, pce: PCE, n_pub_out: int, n_pub_in: int, n_prv_in: int, chunk_rows: int = 1 << 20
) -> None:
    """Write a circom-compatible .r1cs (sections 1, 2, 3) from a PCE (for synthetic circuits); the
    header's prime is the PCE's field."""
    import struct

    from .binfile import write_binfile

    fr = pce.field
    assert fr is not None
    n_wires = pce.n_wires
    m = pce.n_constraints
    hdr = (
        struct.pack("<I", 32)
        + fr.p.to_bytes(32, "little")
        + struct.pack("<IIIIQI", n_wires, n_pub_out, n_pub_in, n_prv_in, n_wires, m)
    )
    mats = (pce.A, pce.B, pce.C)
    canon = [fr.from_mont(mat.vals) for mat in mats]
    chunks = [_constraint_bytes(mats, canon, lo, min(m, lo + chunk_rows)) for lo in range(0, m, chunk_rows)]
    wmap = np.arange(n_wires, dtype="<u8").tobytes()
    write_binfile(path, "r1cs", 1, [(1, hdr), (2, chunks), (3, wmap)])
