"""BN254 (alt_bn128, circom's "bn128") CPU point library: py_arkworks_bls12381's Python API plus bulk
operations, on cuzk's own numba kernels.

Objects (same names and semantics as py_arkworks_bls12381, so callers swap libraries by curve):

* :class:`Scalar` (Fr), :class:`G1Point`, :class:`G2Point` (``G1Point()`` is the generator; ``+``, ``-``,
  ``*`` by a Scalar or an int, ``==`` as group elements, ``to_xy_bytes_le`` / ``from_xy_bytes_unchecked_le``
  with canonical little-endian affine coordinates, the identity as zero bytes), :class:`GT` (``pairing``,
  ``pairing_check``, ``*`` = the group operation, ``str`` = hex of the 12 Fq coefficients in arkworks'
  order). GT values equal arkworks' and snarkjs' (``vk_alphabeta_12``): see :mod:`._bn254_pairing` on the
  final exponentiation they share.

Bulk operations on uint64 arrays (the prover's fast paths; "LEM" rows = snarkjs .zkey layout, affine
x || y, each coordinate 32 bytes little-endian Montgomery, G2 as c0 || c1, identity = zeros):
:func:`load_bases`, :func:`msm`, :func:`fixed_base_mul`, :func:`to_lem`, :func:`from_lem`,
:func:`points_from_array`, :func:`array_from_points`. Multi-threaded kernels release the GIL.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from . import _bn254_curve as _cv
from . import _bn254_msm as _ms
from . import _bn254_pairing as _pr
from ._bn254_field import Q, R, limbs4, to_mont_int

__all__ = [
    "GT",
    "G1Point",
    "G2Point",
    "Q",
    "R",
    "Scalar",
    "array_from_points",
    "fixed_base_mul",
    "from_lem",
    "load_bases",
    "msm",
    "points_from_array",
    "to_lem",
]


def _ints_to_rows(vals: Sequence[int], width: int) -> np.ndarray:
    """Canonical integers (already < 2^256) -> one row of uint64 limbs."""
    return np.array([[lim for v in vals for lim in limbs4(v)]], dtype=np.uint64).reshape(-1, width)


def _row_ints(row: np.ndarray) -> list[int]:
    raw = row.astype("<u8", copy=False).tobytes()
    return [int.from_bytes(raw[i : i + 32], "little") for i in range(0, len(raw), 32)]


# ---------------------------------------------------------------------------------------------
# Scalar


class Scalar:
    """An element of Fr (r = the BN254 group order)."""

    __slots__ = ("_v",)

    def __init__(self, value: int = 0):
        self._v = int(value) % R

    @classmethod
    def _of(cls, v: int) -> Scalar:
        s = cls.__new__(cls)
        s._v = v
        return s

    @classmethod
    def from_le_bytes(cls, b: bytes) -> Scalar:
        """32 little-endian bytes of a value < r (ValueError otherwise, as arkworks)."""
        if len(b) != 32:
            raise ValueError(f"Scalar.from_le_bytes: expected 32 bytes, got {len(b)}")
        v = int.from_bytes(b, "little")
        if v >= R:
            raise ValueError("Scalar.from_le_bytes: value not below the group order r")
        return cls._of(v)

    @classmethod
    def from_be_bytes(cls, b: bytes) -> Scalar:
        return cls.from_le_bytes(bytes(b)[::-1])

    @classmethod
    def from_le_bytes_mod_order(cls, b: bytes) -> Scalar:
        return cls._of(int.from_bytes(b, "little") % R)

    @classmethod
    def from_be_bytes_mod_order(cls, b: bytes) -> Scalar:
        return cls._of(int.from_bytes(b, "big") % R)

    def to_le_bytes(self) -> bytes:
        return self._v.to_bytes(32, "little")

    def to_be_bytes(self) -> bytes:
        return self._v.to_bytes(32, "big")

    def __int__(self) -> int:
        return self._v

    def __index__(self) -> int:
        return self._v

    def __eq__(self, other) -> bool:
        if isinstance(other, Scalar):
            return self._v == other._v
        return NotImplemented

    def __hash__(self) -> int:
        return hash(("bn254.Scalar", self._v))

    def __add__(self, o: Scalar) -> Scalar:
        v = _sv_or_none(o)
        return NotImplemented if v is None else Scalar._of((self._v + v) % R)

    __radd__ = __add__

    def __sub__(self, o: Scalar) -> Scalar:
        v = _sv_or_none(o)
        return NotImplemented if v is None else Scalar._of((self._v - v) % R)

    def __rsub__(self, o: Scalar) -> Scalar:
        v = _sv_or_none(o)
        return NotImplemented if v is None else Scalar._of((v - self._v) % R)

    def __mul__(self, o: Scalar) -> Scalar:
        v = _sv_or_none(o)
        return NotImplemented if v is None else Scalar._of(self._v * v % R)

    __rmul__ = __mul__

    def __truediv__(self, o: Scalar) -> Scalar:
        v = _sv_or_none(o)
        return NotImplemented if v is None else self * Scalar._of(v).inverse()

    def __rtruediv__(self, o: Scalar) -> Scalar:
        v = _sv_or_none(o)
        return NotImplemented if v is None else Scalar._of(v) * self.inverse()

    def __neg__(self) -> Scalar:
        return Scalar._of(-self._v % R)

    def inverse(self) -> Scalar:
        if self._v == 0:
            raise ZeroDivisionError("Scalar.inverse of zero")
        return Scalar._of(pow(self._v, -1, R))

    def pow(self, e: Scalar | int) -> Scalar:
        return Scalar._of(pow(self._v, int(e), R))

    def square(self) -> Scalar:
        return Scalar._of(self._v * self._v % R)

    def is_zero(self) -> bool:
        return self._v == 0

    def is_one(self) -> bool:
        return self._v == 1

    def __repr__(self) -> str:
        return f"Scalar({self._v})"

    def __str__(self) -> str:
        return self.to_le_bytes().hex()

    def __reduce__(self):
        return (Scalar, (self._v,))


def _sv_or_none(o) -> int | None:
    if isinstance(o, Scalar):
        return o._v
    if isinstance(o, (int, np.integer)):
        return int(o) % R
    return None


def _sv(o) -> int:
    v = _sv_or_none(o)
    if v is None:
        raise TypeError(f"expected a Scalar or an int, got {type(o).__name__}")
    return v


def _scalar_limbs(s) -> np.ndarray:
    if isinstance(s, Scalar):
        v = s._v
    elif isinstance(s, (int, np.integer)):
        v = int(s) % R
    else:
        raise TypeError(f"expected a Scalar or an int, got {type(s).__name__}")
    return np.array(limbs4(v), dtype=np.uint64)


# ---------------------------------------------------------------------------------------------
# points


class _Point:
    """A point held as one (1, 3 * words) row: Jacobian X, Y, Z in Montgomery form (Z = 0: identity)."""

    __slots__ = ("_j",)
    _group = 0
    _words = 0
    _w: tuple = ()  # the kernels' type witness (a zero of the group's field)

    def __init__(self):
        self._j = self._gen_row().copy()

    # -- construction

    @classmethod
    def _gen_row(cls) -> np.ndarray:
        raise NotImplementedError

    @classmethod
    def _of(cls, row: np.ndarray):
        p = cls.__new__(cls)
        p._j = row
        return p

    @classmethod
    def identity(cls):
        return cls._of(_ms.jacobian_identity(cls._group))

    @classmethod
    def _from_affine_mont(cls, aff: np.ndarray):
        """(n, 2 words) affine Montgomery rows -> Jacobian rows (n, 3 words), identity rows handled."""
        n, k = aff.shape[0], cls._words
        jac = np.zeros((n, 3 * k), dtype=np.uint64)
        jac[:, : 2 * k] = aff
        one = np.array(limbs4(to_mont_int(1)), dtype=np.uint64)
        live = aff.any(axis=1)
        jac[live, 2 * k : 2 * k + 4] = one
        jac[~live, 0:4] = one
        jac[~live, k : k + 4] = one
        return jac

    @classmethod
    def from_xy_bytes_unchecked_le(cls, raw: bytes):
        """Canonical little-endian affine x || y (zeros: the identity). Raises ValueError for a coordinate
        >= q or a point off the curve (no subgroup check, as arkworks' *_unchecked)."""
        size = 16 * cls._words
        if len(raw) != size:
            raise ValueError(f"{cls.__name__}: expected {size} bytes, got {len(raw)}")
        aff = np.frombuffer(bytes(raw), dtype="<u8").reshape(1, 2 * cls._words).astype(np.uint64)
        out = np.empty((1, 3 * cls._words), dtype=np.uint64)
        flag = _cv.k_point_from_canonical(cls._w, aff, _R2_T, out)
        if flag == 1:
            raise ValueError(f"{cls.__name__}: a coordinate is not below the base field modulus q")
        if flag == 2:
            raise ValueError(f"{cls.__name__}: point is not on the curve")
        return cls._of(out)

    @classmethod
    def from_xy_bytes_le(cls, raw: bytes):
        """As from_xy_bytes_unchecked_le, and the point must be in the r-torsion subgroup."""
        p = cls.from_xy_bytes_unchecked_le(raw)
        if not p.is_in_subgroup():
            raise ValueError(f"{cls.__name__}: point is not in the prime-order subgroup")
        return p

    @classmethod
    def from_xy_bytes_unchecked_be(cls, raw: bytes):
        return cls.from_xy_bytes_unchecked_le(_flip_coords(raw))

    @classmethod
    def from_xy_bytes_be(cls, raw: bytes):
        return cls.from_xy_bytes_le(_flip_coords(raw))

    # -- encodings

    def _affine_mont(self) -> np.ndarray:
        out = np.empty((1, 2 * self._words), dtype=np.uint64)
        _cv.k_point(self._w, _cv.OP_AFFINE, self._j, self._j, _NO_SCALAR, out)
        return out

    def to_xy_bytes_le(self) -> bytes:
        """Canonical little-endian affine x || y (G2: x.c0, x.c1, y.c0, y.c1); the identity: zeros."""
        out = np.empty((1, 2 * self._words), dtype=np.uint64)
        _cv.k_rows_from_mont(self._affine_mont(), out)
        return out.astype("<u8", copy=False).tobytes()

    def to_xy_bytes_be(self) -> bytes:
        return _flip_coords(self.to_xy_bytes_le())

    def _xy(self) -> list[int]:
        return [int.from_bytes(c, "little") for c in _chunks32(self.to_xy_bytes_le())]

    # -- group operations

    def _check(self, o):
        if type(o) is not type(self):
            raise TypeError(f"expected a {type(self).__name__}, got {type(o).__name__}")

    def __add__(self, o):
        self._check(o)
        out = np.empty_like(self._j)
        _cv.k_point(self._w, _cv.OP_ADD, self._j, o._j, _NO_SCALAR, out)
        return self._of(out)

    def __sub__(self, o):
        return self + (-o)

    def __neg__(self):
        out = np.empty_like(self._j)
        _cv.k_point(self._w, _cv.OP_NEG, self._j, self._j, _NO_SCALAR, out)
        return self._of(out)

    def double(self):
        out = np.empty_like(self._j)
        _cv.k_point(self._w, _cv.OP_DBL, self._j, self._j, _NO_SCALAR, out)
        return self._of(out)

    def __mul__(self, s):
        if not isinstance(s, (Scalar, int, np.integer)):
            return NotImplemented
        out = np.empty_like(self._j)
        _cv.k_point(self._w, _cv.OP_MUL, self._j, self._j, _scalar_limbs(s), out)
        return self._of(out)

    __rmul__ = __mul__

    def __eq__(self, o) -> bool:
        if type(o) is not type(self):
            return NotImplemented
        return _cv.k_point(self._w, _cv.OP_EQ, self._j, o._j, _NO_SCALAR, self._j) == 1

    def __hash__(self) -> int:
        return hash((self._group, self.to_xy_bytes_le()))

    def is_identity(self) -> bool:
        k = self._words
        return not self._j[0, 2 * k : 3 * k].any()

    def is_on_curve(self) -> bool:
        aff = self._affine_mont()
        return bool(_validate_mont(self._group, aff)[0] == 0)

    def is_in_subgroup(self) -> bool:
        """G1 (cofactor 1): on the curve. G2: r * P is the identity."""
        if self._group == 1:
            return self.is_on_curve()
        out = np.empty_like(self._j)
        _cv.k_point(self._w, _cv.OP_MUL, self._j, self._j, _R_LIMBS, out)
        return not out[0, 16:24].any()

    @classmethod
    def multiexp_unchecked(cls, points: Sequence, scalars: Sequence) -> _Point:
        """sum_i scalars[i] * points[i] (equal lengths; Scalars or ints)."""
        if len(points) != len(scalars):
            raise ValueError(f"multiexp_unchecked: {len(points)} points but {len(scalars)} scalars")
        if not points:
            return cls.identity()
        bases = array_from_points(cls._group, points)
        sc = np.array([limbs4(_sv(s)) for s in scalars], dtype=np.uint64).reshape(-1, 4)
        return msm(cls._group, bases, sc)

    def __repr__(self) -> str:
        if self.is_identity():
            return f"{type(self).__name__}(identity)"
        x = self._xy()[0]
        return f"{type(self).__name__}(x=0x{x:064x}...)"

    def __reduce__(self):
        return (type(self).from_xy_bytes_unchecked_le, (self.to_xy_bytes_le(),))


class G1Point(_Point):
    """A point of G1: y^2 = x^3 + 3 over Fq."""

    __slots__ = ()
    _group = 1
    _words = 4
    _w = _cv.W1

    @classmethod
    def _gen_row(cls):
        return _G1_GEN


class G2Point(_Point):
    """A point of G2 on the twist y^2 = x^3 + 3/(9 + u) over Fq2."""

    __slots__ = ()
    _group = 2
    _words = 8
    _w = _cv.W2

    @classmethod
    def _gen_row(cls):
        return _G2_GEN


def _chunks32(b: bytes) -> list[bytes]:
    return [b[i : i + 32] for i in range(0, len(b), 32)]


def _flip_coords(raw: bytes) -> bytes:
    """Each 32-byte coordinate reversed (LE <-> BE; the order of coordinates is kept)."""
    return b"".join(c[::-1] for c in _chunks32(bytes(raw)))


def _to_mont_rows(canon: np.ndarray) -> np.ndarray:
    out = np.empty_like(canon)
    _cv.k_rows_to_mont(canon, out, _R2_T)
    return out


def _from_mont_rows(mont: np.ndarray) -> np.ndarray:
    out = np.empty_like(mont)
    _cv.k_rows_from_mont(np.ascontiguousarray(mont), out)
    return out


def _validate_mont(group: int, rows: np.ndarray) -> np.ndarray:
    n = rows.shape[0]
    flags = np.zeros(n, dtype=np.uint8)
    w = _cv.witness(group)
    step = 1 << 14
    _ms.run_tasks(lambda t: _cv.k_validate(w, rows, t * step, min(n, (t + 1) * step), flags), -(-n // step), _ms.cpu_count())
    return flags


_R2_T = tuple(np.uint64(v) for v in limbs4(pow(2, 512, Q)))
_R_LIMBS = np.array(limbs4(R), dtype=np.uint64)
_NO_SCALAR = np.zeros(4, dtype=np.uint64)
_G1_GEN = G1Point._from_affine_mont(_to_mont_rows(_ints_to_rows([1, 2], 8)))


def _g2_gen_row() -> np.ndarray:
    from ..curves.bn254 import CURVE

    (x0, x1), (y0, y1) = CURVE.g2
    return G2Point._from_affine_mont(_to_mont_rows(_ints_to_rows([x0, x1, y0, y1], 16)))


_G2_GEN = _g2_gen_row()


# ---------------------------------------------------------------------------------------------
# GT


class GT:
    """An element of the target group (Fq12, the pairing's image), held as a (1, 48) Montgomery row.

    ``*`` is the group operation (Fq12 product), as in py_arkworks_bls12381; ``+`` / ``-`` are the
    field's addition and negation, also as there. ``str`` is the hex of the 12 canonical coefficients,
    32 bytes little-endian each, in the order c0.c0.c0, c0.c0.c1, c0.c1.c0, ..., c1.c2.c1."""

    __slots__ = ("_f",)

    def __init__(self):
        self._f = GT.pairing(G1Point(), G2Point())._f

    @classmethod
    def _of(cls, f: np.ndarray) -> GT:
        g = cls.__new__(cls)
        g._f = f
        return g

    @classmethod
    def one(cls) -> GT:
        return cls._from_ints([1] + [0] * 11)

    identity = one

    @classmethod
    def zero(cls) -> GT:
        return cls._of(np.zeros((1, 48), dtype=np.uint64))

    @classmethod
    def _from_ints(cls, coeffs: Sequence[int]) -> GT:
        return cls._of(_to_mont_rows(_ints_to_rows([c % Q for c in coeffs], 48)))

    def coefficients(self) -> list[int]:
        """The 12 canonical Fq coefficients (arkworks' order)."""
        return _row_ints(_from_mont_rows(self._f))

    @staticmethod
    def _pairs(g1s: Sequence[G1Point], g2s: Sequence[G2Point]) -> tuple[np.ndarray, np.ndarray, int]:
        if len(g1s) != len(g2s):
            raise ValueError(f"pairing: {len(g1s)} G1 points but {len(g2s)} G2 points")
        for p1 in g1s:
            if not isinstance(p1, G1Point):
                raise TypeError(f"pairing: expected G1Point, got {type(p1).__name__}")
        for p2 in g2s:
            if not isinstance(p2, G2Point):
                raise TypeError(f"pairing: expected G2Point, got {type(p2).__name__}")
        return array_from_points(1, g1s), array_from_points(2, g2s), len(g1s)

    @classmethod
    def pairing(cls, g1: G1Point, g2: G2Point) -> GT:
        return cls.multi_pairing([g1], [g2])

    @classmethod
    def multi_pairing(cls, g1s: Sequence[G1Point], g2s: Sequence[G2Point]) -> GT:
        """prod_i e(g1s[i], g2s[i]): one Miller loop over all pairs, one final exponentiation."""
        ps, qs, m = cls._pairs(g1s, g2s)
        out = np.empty((1, 48), dtype=np.uint64)
        _pr.k_pairing(ps, qs, m, out)
        return cls._of(out)

    @classmethod
    def pairing_check(cls, g1s: Sequence[G1Point], g2s: Sequence[G2Point]) -> bool:
        """prod_i e(g1s[i], g2s[i]) == 1."""
        ps, qs, m = cls._pairs(g1s, g2s)
        return bool(_pr.k_pairing_check(ps, qs, m))

    def __mul__(self, o: GT) -> GT:
        if not isinstance(o, GT):
            return NotImplemented
        out = np.empty((1, 48), dtype=np.uint64)
        _pr.k_f12_mul(self._f, o._f, out)
        return GT._of(out)

    def inverse(self) -> GT:
        out = np.empty((1, 48), dtype=np.uint64)
        _pr.k_f12_inv(self._f, out)
        return GT._of(out)

    def __pow__(self, e) -> GT:
        e = _sv(e) if isinstance(e, Scalar) else int(e)
        base = self
        if e < 0:
            base, e = self.inverse(), -e
        out = np.empty((1, 48), dtype=np.uint64)
        bits = np.array([int(b) for b in bin(e)[2:]], dtype=np.uint8)
        _pr.k_f12_pow(base._f, bits, out)
        return GT._of(out)

    def __add__(self, o: GT) -> GT:
        if not isinstance(o, GT):
            return NotImplemented
        return GT._from_ints([a + b for a, b in zip(self.coefficients(), o.coefficients(), strict=True)])

    def __neg__(self) -> GT:
        return GT._from_ints([-a for a in self.coefficients()])

    def __sub__(self, o: GT) -> GT:
        return self + (-o)

    def __eq__(self, o) -> bool:
        if not isinstance(o, GT):
            return NotImplemented
        return bool(np.array_equal(self._f, o._f))

    def __hash__(self) -> int:
        return hash(self._f.tobytes())

    def __str__(self) -> str:
        return _from_mont_rows(self._f).astype("<u8", copy=False).tobytes().hex()

    def __repr__(self) -> str:
        return f"GT({str(self)[:16]}...)"


# ---------------------------------------------------------------------------------------------
# bulk operations


def _cls(group: int):
    if group == 1:
        return G1Point
    if group == 2:
        return G2Point
    raise ValueError(f"group must be 1 or 2, got {group!r}")


def _words(group: int) -> int:
    return _cls(group)._words


def load_bases(group: int, raw, n: int, what: str = "bases") -> np.ndarray:
    """n LEM points (raw: bytes-like) -> (n, 8) / (n, 16) uint64 rows (a view of raw where possible),
    after checking that every coordinate is < q and every non-zero point is on the curve. Raises
    ValueError naming the first bad point."""
    k = _words(group)
    need = n * 16 * k
    buf = memoryview(raw).cast("B")
    if buf.nbytes < need:
        raise ValueError(f"{what}: {n} points need {need} bytes, got {buf.nbytes}")
    rows = np.frombuffer(buf, dtype=np.uint64, count=n * 2 * k).reshape(n, 2 * k)
    flags = _validate_mont(group, rows)
    bad = np.flatnonzero(flags)
    if bad.size:
        i = int(bad[0])
        why = "has a coordinate not below the base field modulus q" if flags[i] == 1 else "is not on the curve"
        raise ValueError(f"{what}: point {i} {why}")
    return rows


def msm(group: int, bases: np.ndarray, scalars: np.ndarray, threads: int | None = None):
    """sum_i scalars[i] * bases[i] for i < k = len(scalars): bases as load_bases returns them (affine
    Montgomery rows, zero rows = identity), scalars a (k, 4) uint64 array of canonical little-endian
    limbs. Pippenger on `threads` threads (default: every core this process may run on)."""
    cls = _cls(group)
    scalars = np.asarray(scalars, dtype=np.uint64)
    if scalars.ndim != 2 or scalars.shape[1] != 4:
        raise ValueError(f"msm: scalars must be a (k, 4) uint64 array, got shape {scalars.shape}")
    if bases.ndim != 2 or bases.shape[1] != 2 * cls._words:
        raise ValueError(f"msm: G{group} bases must be (n, {2 * cls._words}) rows, got shape {bases.shape}")
    if bases.dtype != np.uint64:
        raise ValueError(f"msm: bases must be uint64, got {bases.dtype}")
    if not bases.flags.c_contiguous:
        bases = np.ascontiguousarray(bases)
    return cls._of(_ms.msm_jacobian(group, bases, scalars, threads))


def fixed_base_mul(group: int, base: G1Point | G2Point, scalars: np.ndarray, threads: int | None = None) -> np.ndarray:
    """scalars[i] * base for a (n, 4) canonical scalar array, as LEM rows (n, 8) / (n, 16): affine
    Montgomery, identity = zeros."""
    cls = _cls(group)
    if not isinstance(base, cls):
        raise TypeError(f"fixed_base_mul: expected a {cls.__name__}")
    scalars = np.asarray(scalars, dtype=np.uint64)
    if scalars.ndim != 2 or scalars.shape[1] != 4:
        raise ValueError(f"fixed_base_mul: scalars must be a (n, 4) uint64 array, got shape {scalars.shape}")
    return _ms.fixed_base(group, base._affine_mont(), scalars, threads)


def array_from_points(group: int, points: Iterable) -> np.ndarray:
    """Point objects -> (n, 2 words) affine Montgomery rows (LEM; one field inversion for all)."""
    cls = _cls(group)
    pts = list(points)
    k = cls._words
    if not pts:
        return np.zeros((0, 2 * k), dtype=np.uint64)
    for p in pts:
        if not isinstance(p, cls):
            raise TypeError(f"expected {cls.__name__}, got {type(p).__name__}")
    jac = np.concatenate([p._j for p in pts], axis=0)
    out = np.empty((len(pts), 2 * k), dtype=np.uint64)
    _cv.jac_rows_to_affine(cls._w, jac, out, 0, len(pts), np.empty((len(pts), k), dtype=np.uint64))
    return out


def points_from_array(group: int, arr: np.ndarray) -> list:
    """(n, 2 words) affine Montgomery rows (as load_bases returns them) -> point objects (not re-checked)."""
    cls = _cls(group)
    jac = cls._from_affine_mont(np.asarray(arr, dtype=np.uint64).reshape(-1, 2 * cls._words))
    return [cls._of(jac[i : i + 1]) for i in range(jac.shape[0])]


def to_lem(group: int, points: Iterable) -> bytes:
    """Point objects -> LEM bytes (n * 64 / n * 128)."""
    return array_from_points(group, points).astype("<u8", copy=False).tobytes()


def from_lem(group: int, raw, n: int, what: str = "points") -> list:
    """n LEM points -> point objects (validated as load_bases does)."""
    return points_from_array(group, load_bases(group, raw, n, what))
