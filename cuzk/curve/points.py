"""G1/G2 points of any curve: bulk conversion between byte encodings and point-library objects.

Encodings (``curve.n8q`` bytes per base-field coordinate: 48 for BLS12-381, 32 for BN254):

* **LEM** (snarkjs .zkey/.ptau, our GPU kernels): affine x||y, each coordinate little-endian in
  Montgomery form (x * 2^(8 n8q) mod q); G2 coordinates are c0||c1. The point at infinity is all zeros.
* **canonical LE** (the point libraries' ``from_xy_bytes_unchecked_le``): as LEM but canonical.
* **zcash BE** (BLS12-381 only: bellperson .params and proofs): big-endian coordinates, G2 as c1||c0,
  the three top bits of byte 0 are flags (compressed, infinity, sign of y). Uncompressed: G1 96 B,
  G2 192 B; compressed: G1 48 B, G2 96 B.
* **EVM** (BN254 proofs, Solidity calldata): uncompressed big-endian, G2 as c1||c0, no flags,
  infinity = zeros.

Conversions are vectorised with numpy/numba; only the final object construction is a per-point call
(the library checks that each point is on the curve there).
"""

from __future__ import annotations

import numpy as np

from .. import CuzkError
from ..curves import Curve
from . import fq


class PointError(CuzkError):
    """Bytes that do not decode to a valid curve point."""


def _per_point(group: int) -> int:
    return 2 if group == 1 else 4


def _coords(curve: Curve, buf, n_coords: int) -> np.ndarray:
    """n_coords little-endian coordinates -> (n_coords, fq_limbs) uint64 limbs."""
    k = curve.fq_limbs
    return np.frombuffer(buf, dtype="<u8", count=n_coords * k).reshape(n_coords, k)


def lem_to_canonical(curve: Curve, buf, n: int, group: int, what: str) -> bytes:
    """LEM points -> canonical LE bytes, checking every coordinate is below q."""
    per = _per_point(group)
    limbs = _coords(curve, buf, n * per)
    ok = fq.below_modulus(curve, limbs)
    if not ok.all():
        bad = int(np.flatnonzero(~ok)[0]) // per
        raise PointError(f"{what}: point {bad} has a coordinate not below the base field modulus q")
    return fq.from_mont(curve, limbs).tobytes()


def _build(raw: bytes, n: int, size: int, ctor, what: str) -> list:
    out = []
    try:
        for i in range(n):
            out.append(ctor(raw[i * size : (i + 1) * size]))
    except Exception as e:  # the libraries raise plain exceptions for off-curve points
        raise PointError(f"{what}: point {len(out)} is not on the curve ({e})") from None
    return out


def group_class(curve: Curve, group: int):
    return curve.lib.G1Point if group == 1 else curve.lib.G2Point


def from_lem(curve: Curve, group: int, buf, n: int, what: str = "points") -> list:
    """n LEM points -> library point objects (on-curve checked)."""
    raw = lem_to_canonical(curve, buf, n, group, what)
    return _build(raw, n, curve.point_bytes(group), group_class(curve, group).from_xy_bytes_unchecked_le, what)


def canonical_le(points) -> bytes:
    """Concatenated canonical little-endian affine coordinates of G1 or G2 points."""
    return b"".join(p.to_xy_bytes_le() for p in points)


def canonical_le_to_lem(curve: Curve, raw: bytes, n_coords: int) -> bytes:
    return fq.to_mont(curve, _coords(curve, raw, n_coords)).tobytes()


def to_lem(curve: Curve, group: int, points) -> bytes:
    points = list(points)
    return canonical_le_to_lem(curve, canonical_le(points), _per_point(group) * len(points))


def nonzero_rows(curve: Curve, group: int, buf) -> np.ndarray:
    """Which points of a LEM vector are not the point at infinity (from the raw bytes)."""
    words = curve.point_bytes(group) // 8
    return np.frombuffer(buf, dtype=np.uint64).reshape(-1, words).any(axis=1)


# ---------------------------------------------------------------------------------------------
# decimal coordinates (snarkjs JSON files)


def from_ints(curve: Curve, group: int, coords: tuple[int, ...], what: str = "point"):
    """Affine coordinates (G1: x, y; G2: x0, x1, y0, y1) -> a library point (on-curve checked)."""
    raw = b"".join(v.to_bytes(curve.n8q, "little") for v in coords)
    try:
        return group_class(curve, group).from_xy_bytes_unchecked_le(raw)
    except Exception:
        where = f"({coords[0]}, {coords[1]}) " if group == 1 else ""
        raise PointError(f"{what}: {where}is not on the G{group} curve ({curve})") from None


def to_ints(curve: Curve, p) -> tuple[int, ...] | None:
    """Affine coordinates (G1: x, y; G2: x0, x1, y0, y1), or None for the point at infinity."""
    raw = p.to_xy_bytes_le()
    if not any(raw):
        return None
    k = curve.n8q
    return tuple(int.from_bytes(raw[k * i : k * i + k], "little") for i in range(len(raw) // k))


# ---------------------------------------------------------------------------------------------
# big-endian uncompressed encodings: zcash (BLS12-381, with flags) and EVM (BN254, without)

_FLAG_COMPRESSED = 0x80
_FLAG_INFINITY = 0x40
_FLAG_SIGN = 0x20


def _reverse(raw: bytes, n_coords: int, k: int) -> np.ndarray:
    """Byte-reverse each k-byte coordinate (LE <-> BE)."""
    return np.frombuffer(raw, dtype=np.uint8).reshape(n_coords, k)[:, ::-1]


def to_uncompressed_be(curve: Curve, group: int, points, flags: bool | None = None) -> bytes:
    """Uncompressed big-endian: G1 x||y, G2 x.c1||x.c0||y.c1||y.c0. With ``flags`` (default: the
    curve's bellperson/zcash convention), the identity carries the infinity flag; else it is zeros."""
    points = list(points)
    flags = curve.bellperson if flags is None else flags
    k, per = curve.n8q, _per_point(group)
    c = _reverse(canonical_le(points), per * len(points), k).reshape(len(points), per, k)
    if group == 2:
        c = c[:, [1, 0, 3, 2], :]
    be = np.ascontiguousarray(c).reshape(len(points), per * k)
    if flags:
        be[~be.any(axis=1), 0] = _FLAG_INFINITY
    return be.tobytes()


def _uncompressed_to_le(curve: Curve, buf, n: int, group: int, what: str, flags: bool) -> bytes:
    k, per = curve.n8q, _per_point(group)
    size = k * per
    arr = np.frombuffer(buf, dtype=np.uint8, count=n * size).reshape(n, size).copy()
    if flags:
        fl = arr[:, 0] & 0xE0
        if (fl & _FLAG_COMPRESSED).any():
            bad = int(np.flatnonzero(fl & _FLAG_COMPRESSED)[0])
            raise PointError(f"{what}: point {bad} has the compression flag set in an uncompressed encoding")
        inf = (fl & _FLAG_INFINITY) != 0
        arr[:, 0] &= 0x1F
        if (arr[inf].any(axis=1)).any():
            bad = int(np.flatnonzero(inf & arr.any(axis=1))[0])
            raise PointError(f"{what}: point {bad} has the infinity flag but non-zero coordinates")
    order = [0, 1] if group == 1 else [1, 0, 3, 2]
    c = arr.reshape(n, per, k)[:, order, ::-1]
    limbs = np.ascontiguousarray(c).reshape(n * per, k).view("<u8").reshape(n * per, curve.fq_limbs)
    ok = fq.below_modulus(curve, limbs)
    if not ok.all():
        raise PointError(f"{what}: point {int(np.flatnonzero(~ok)[0]) // per} has a coordinate not below q")
    return limbs.tobytes()


def from_uncompressed_be(curve: Curve, group: int, buf, n: int, what: str = "points", flags: bool | None = None) -> list:
    flags = curve.bellperson if flags is None else flags
    le = _uncompressed_to_le(curve, buf, n, group, what, flags)
    return _build(le, n, curve.point_bytes(group), group_class(curve, group).from_xy_bytes_unchecked_le, what)


def uncompressed_be_to_lem(curve: Curve, group: int, buf, n: int, what: str = "points") -> bytes:
    """zcash uncompressed points -> LEM bytes (the GPU/zkey layout), validating coordinates < q."""
    le = _uncompressed_to_le(curve, buf, n, group, what, curve.bellperson)
    return canonical_le_to_lem(curve, le, _per_point(group) * n)


def lem_to_uncompressed_be(curve: Curve, group: int, raw, n: int) -> bytes:
    """LEM points -> uncompressed big-endian (vectorised; no curve objects)."""
    k, per = curve.n8q, _per_point(group)
    le = fq.from_mont(curve, _coords(curve, raw, n * per)).tobytes()
    c = _reverse(le, per * n, k).reshape(n, per, k)
    if group == 2:
        c = c[:, [1, 0, 3, 2], :]
    be = np.ascontiguousarray(c).reshape(n, k * per)
    if curve.bellperson:
        be[~be.any(axis=1), 0] = _FLAG_INFINITY
    return be.tobytes()


# ---------------------------------------------------------------------------------------------
# zcash compressed encodings (BLS12-381's bellperson proofs and keys)


def _check_compressed_flags(data: bytes, what: str) -> None:
    """zcash rules arkworks does not enforce: the compression flag is set, and an infinity encoding
    has no other bit set (otherwise many byte strings would decode to the same point)."""
    if not data[0] & _FLAG_COMPRESSED:
        raise PointError(f"{what}: compression flag not set in a compressed encoding")
    if data[0] & _FLAG_INFINITY and (data[0] != _FLAG_COMPRESSED | _FLAG_INFINITY or any(data[1:])):
        raise PointError(f"{what}: infinity flag set but other bits are non-zero")


def from_compressed(curve: Curve, group: int, data: bytes, what: str = "point"):
    size = curve.n8q * (1 if group == 1 else 2)
    if not curve.bellperson:
        raise PointError(f"{what}: compressed points are not supported on {curve}")
    if len(data) != size:
        raise PointError(f"{what}: {len(data)} bytes, expected {size}")
    _check_compressed_flags(data, what)
    try:
        return group_class(curve, group).from_compressed_bytes(bytes(data))
    except Exception as e:
        raise PointError(f"{what}: not a valid compressed G{group} point in the subgroup ({e})") from None
