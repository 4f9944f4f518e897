"""G1/G2 points: bulk conversion between byte encodings and arkworks objects.

Encodings handled:

* **LEM** (snarkjs .zkey/.ptau): affine x||y, each coordinate little-endian in Montgomery form
  (x * 2^384 mod q); G2 coordinates are c0||c1. The point at infinity is all zero bytes.
* **canonical LE** (arkworks ``from_xy_bytes_le``): as LEM but canonical; infinity = zeros.
* **zcash BE** (bellperson .params and proofs): big-endian coordinates, G2 as c1||c0, the three top
  bits of byte 0 are flags (compressed, infinity, sign of y). Uncompressed: G1 96 B, G2 192 B;
  compressed: G1 48 B, G2 96 B.

Conversions are vectorised with numpy/numba; only the final object construction is a per-point call
(arkworks checks that each point is on the curve there).
"""

from __future__ import annotations

import numpy as np
from py_arkworks_bls12381 import G1Point, G2Point

from .. import CuzkError
from . import fq

G1_BYTES = 96
G2_BYTES = 192
G1_COMPRESSED = 48
G2_COMPRESSED = 96


class PointError(CuzkError):
    """Bytes that do not decode to a valid curve point."""


def _coords(buf, n: int, per_point: int) -> np.ndarray:
    """n points of per_point coordinates (48-byte LE each) -> (n*per_point, 6) uint64 limbs."""
    return np.frombuffer(buf, dtype="<u8", count=n * per_point * 6).reshape(n * per_point, 6)


def _lem_to_canonical(buf, n: int, per_point: int, what: str) -> bytes:
    limbs = _coords(buf, n, per_point)
    ok = fq.below_modulus(limbs)
    if not ok.all():
        bad = int(np.flatnonzero(~ok)[0]) // per_point
        raise PointError(f"{what}: point {bad} has a coordinate not below the base field modulus q")
    return fq.from_mont(limbs).tobytes()


def _build(raw: bytes, n: int, size: int, ctor, what: str) -> list:
    out = []
    try:
        for i in range(n):
            out.append(ctor(raw[i * size : (i + 1) * size]))
    except Exception as e:  # arkworks raises a plain exception for off-curve points
        raise PointError(f"{what}: point {len(out)} is not on the curve ({e})") from None
    return out


def g1_from_lem(buf, n: int, what: str = "G1 points") -> list[G1Point]:
    raw = _lem_to_canonical(buf, n, 2, what)
    return _build(raw, n, G1_BYTES, G1Point.from_xy_bytes_unchecked_le, what)


def g2_from_lem(buf, n: int, what: str = "G2 points") -> list[G2Point]:
    raw = _lem_to_canonical(buf, n, 4, what)
    return _build(raw, n, G2_BYTES, G2Point.from_xy_bytes_unchecked_le, what)


def canonical_le(points) -> bytes:
    """Concatenated canonical little-endian affine coordinates of G1 or G2 points."""
    return b"".join(p.to_xy_bytes_le() for p in points)


def canonical_le_to_lem(raw: bytes, n_coords: int) -> bytes:
    return fq.to_mont(np.frombuffer(raw, dtype="<u8").reshape(n_coords, 6)).tobytes()


def g1_to_lem(points) -> bytes:
    points = list(points)
    return canonical_le_to_lem(canonical_le(points), 2 * len(points))


def g2_to_lem(points) -> bytes:
    points = list(points)
    return canonical_le_to_lem(canonical_le(points), 4 * len(points))


# ---------------------------------------------------------------------------------------------
# zcash big-endian encodings (bellperson)

_FLAG_COMPRESSED = 0x80
_FLAG_INFINITY = 0x40
_FLAG_SIGN = 0x20


def _reverse48(raw: bytes, n_coords: int) -> np.ndarray:
    """Byte-reverse each 48-byte coordinate (LE <-> BE)."""
    return np.frombuffer(raw, dtype=np.uint8).reshape(n_coords, 48)[:, ::-1]


def g1_to_uncompressed(points) -> bytes:
    """zcash uncompressed G1: x||y big-endian, infinity flag on the identity."""
    points = list(points)
    le = canonical_le(points)
    be = np.ascontiguousarray(_reverse48(le, 2 * len(points))).reshape(len(points), 96)
    inf = ~be.any(axis=1)
    be[inf, 0] = _FLAG_INFINITY
    return be.tobytes()


def g2_to_uncompressed(points) -> bytes:
    """zcash uncompressed G2: x.c1||x.c0||y.c1||y.c0 big-endian."""
    points = list(points)
    le = canonical_le(points)
    c = _reverse48(le, 4 * len(points)).reshape(len(points), 4, 48)
    be = np.ascontiguousarray(c[:, [1, 0, 3, 2], :]).reshape(len(points), 192)
    inf = ~be.any(axis=1)
    be[inf, 0] = _FLAG_INFINITY
    return be.tobytes()


def _uncompressed_to_le(buf, n: int, size: int, order: list[int], what: str) -> bytes:
    arr = np.frombuffer(buf, dtype=np.uint8, count=n * size).reshape(n, size).copy()
    flags = arr[:, 0] & 0xE0
    if (flags & _FLAG_COMPRESSED).any():
        bad = int(np.flatnonzero(flags & _FLAG_COMPRESSED)[0])
        raise PointError(f"{what}: point {bad} has the compression flag set in an uncompressed encoding")
    inf = (flags & _FLAG_INFINITY) != 0
    arr[:, 0] &= 0x1F
    if (arr[inf].any(axis=1)).any():
        bad = int(np.flatnonzero(inf & arr.any(axis=1))[0])
        raise PointError(f"{what}: point {bad} has the infinity flag but non-zero coordinates")
    k = size // 48
    c = arr.reshape(n, k, 48)[:, order, ::-1]
    limbs = np.ascontiguousarray(c).reshape(n * k, 48).view("<u8").reshape(n * k, 6)
    ok = fq.below_modulus(limbs)
    if not ok.all():
        raise PointError(f"{what}: point {int(np.flatnonzero(~ok)[0]) // k} has a coordinate not below q")
    return limbs.tobytes()


def g1_from_uncompressed(buf, n: int, what: str = "G1 points") -> list[G1Point]:
    le = _uncompressed_to_le(buf, n, 96, [0, 1], what)
    return _build(le, n, G1_BYTES, G1Point.from_xy_bytes_unchecked_le, what)


def g2_from_uncompressed(buf, n: int, what: str = "G2 points") -> list[G2Point]:
    le = _uncompressed_to_le(buf, n, 192, [1, 0, 3, 2], what)
    return _build(le, n, G2_BYTES, G2Point.from_xy_bytes_unchecked_le, what)


def uncompressed_to_lem(buf, n: int, group: int, what: str = "points") -> bytes:
    """zcash uncompressed points -> LEM bytes (the GPU/zkey layout), validating coordinates < q."""
    if group == 1:
        le = _uncompressed_to_le(buf, n, 96, [0, 1], what)
        return canonical_le_to_lem(le, 2 * n)
    le = _uncompressed_to_le(buf, n, 192, [1, 0, 3, 2], what)
    return canonical_le_to_lem(le, 4 * n)


def _check_compressed_flags(data: bytes, what: str) -> None:
    """zcash rules arkworks does not enforce: the compression flag is set, and an infinity encoding
    has no other bit set (otherwise many byte strings would decode to the same point)."""
    if not data[0] & _FLAG_COMPRESSED:
        raise PointError(f"{what}: compression flag not set in a compressed encoding")
    if data[0] & _FLAG_INFINITY and (data[0] != _FLAG_COMPRESSED | _FLAG_INFINITY or any(data[1:])):
        raise PointError(f"{what}: infinity flag set but other bits are non-zero")


def g1_from_compressed(data: bytes, what: str = "G1 point") -> G1Point:
    if len(data) != G1_COMPRESSED:
        raise PointError(f"{what}: {len(data)} bytes, expected {G1_COMPRESSED}")
    _check_compressed_flags(data, what)
    try:
        return G1Point.from_compressed_bytes(bytes(data))
    except Exception as e:
        raise PointError(f"{what}: not a valid compressed G1 point in the subgroup ({e})") from None


def g2_from_compressed(data: bytes, what: str = "G2 point") -> G2Point:
    if len(data) != G2_COMPRESSED:
        raise PointError(f"{what}: {len(data)} bytes, expected {G2_COMPRESSED}")
    _check_compressed_flags(data, what)
    try:
        return G2Point.from_compressed_bytes(bytes(data))
    except Exception as e:
        raise PointError(f"{what}: not a valid compressed G2 point in the subgroup ({e})") from None


# ---------------------------------------------------------------------------------------------
# decimal JSON coordinates (snarkjs JSON files)

_G1_INF = G1Point.identity()


def g1_from_ints(x: int, y: int, what: str = "G1 point") -> G1Point:
    raw = x.to_bytes(48, "little") + y.to_bytes(48, "little")
    try:
        return G1Point.from_xy_bytes_unchecked_le(raw)
    except Exception:
        raise PointError(f"{what}: ({x}, {y}) is not on the G1 curve") from None


def g2_from_ints(x0: int, x1: int, y0: int, y1: int, what: str = "G2 point") -> G2Point:
    raw = b"".join(v.to_bytes(48, "little") for v in (x0, x1, y0, y1))
    try:
        return G2Point.from_xy_bytes_unchecked_le(raw)
    except Exception:
        raise PointError(f"{what}: not on the G2 curve") from None


def g1_to_ints(p: G1Point) -> tuple[int, int] | None:
    """Affine coordinates, or None for the point at infinity."""
    raw = p.to_xy_bytes_le()
    if not any(raw):
        return None
    return int.from_bytes(raw[:48], "little"), int.from_bytes(raw[48:], "little")


def g2_to_ints(p: G2Point) -> tuple[int, int, int, int] | None:
    raw = p.to_xy_bytes_le()
    if not any(raw):
        return None
    return tuple(int.from_bytes(raw[48 * i : 48 * i + 48], "little") for i in range(4))  # type: ignore[return-value]


def lem_to_uncompressed(raw, n: int, group: int) -> bytes:
    """LEM points -> zcash uncompressed big-endian (vectorised; no curve objects)."""
    k = 2 if group == 1 else 4
    le = fq.from_mont(_coords(raw, n, k)).tobytes()
    c = _reverse48(le, k * n).reshape(n, k, 48)
    if group == 2:
        c = c[:, [1, 0, 3, 2], :]
    be = np.ascontiguousarray(c).reshape(n, 48 * k)
    be[~be.any(axis=1), 0] = _FLAG_INFINITY
    return be.tobytes()
