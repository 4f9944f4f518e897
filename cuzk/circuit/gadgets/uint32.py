"""32-bit words as constraint gadgets: bitwise logic, rotations, multi-operand addition, SHA-256's ch and maj.

A :class:`UInt32` is a batch of words (batch shape (*B)): per bit position a *kind*, the same for every
instance of the batch (constants such as SHA-256's IV, round constants and padding are the same for all
instances), and the variable codes (*B, 32), little-endian (bit i has weight 2^i):

* kind 0 / 1: the constant bit 0 / 1 (no variable; the code is a placeholder);
* kind 2: the boolean variable ``codes[..., i]``;
* kind 3: its negation ``1 - codes[..., i]`` (NOT is free: a linear expression).

When the constraint system has values the word's native values travel alongside (``value``, a uint32
array of shape (*B)): every gadget computes its outputs with numpy over all instances and allocates the
bits of one step in one ``alloc``; nothing is read back from the constraint system.

Operations with a constant operand bit cost nothing there (xor with a constant is a copy or a negation,
and with a constant is a copy or a constant). The bits of all-variable positions cost (per bit):

* ``xor`` 1 (2a * b = a + b - c), ``and_`` 1, ``not_`` / ``rotr`` / ``shr`` 0;
* ``xor3`` (a ^ b ^ c) 1: with S = 3 - 2(a + b + c), which is odd and so never 0 for boolean a, b, c,
  the constraint (4 out + S) * S = 2S + 3 has the single solution out = a ^ b ^ c (S = 3, 1, -1, -3 give
  out = 0, 1, 0, 1); out needs no booleanity constraint;
* ``ch`` 1: e * (f - g) = out - g;  ``maj`` 1: (8 out + S) * S = 4S - 3 (S as for xor3: out = 0, 0, 1, 1);
* ``add_many`` of k words: the packed sum equals the result bits plus 2^32 times the carry bits, all
  allocated boolean: 32 + (number of carry bits) + 1 constraints (3 carry bits for 5..8 operands).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..cs import ConstraintSystem, SynthesisError
from ..lc import LC, Var, as_lc
from .boolean import enforce_boolean, pack

CONST0, CONST1, VAR, NOT = 0, 1, 2, 3
_POS = np.arange(32, dtype=np.uint32)
_MASK32 = 0xFFFFFFFF


def _bits_of(value: np.ndarray, pos: np.ndarray) -> np.ndarray:
    """The bits at ``pos`` of uint32 values: (*B, len(pos)) uint8."""
    return ((value[..., None] >> pos.astype(np.uint32)) & np.uint32(1)).astype(np.uint8)


class UInt32:
    """A batch of 32-bit words (see the module docstring)."""

    __slots__ = ("codes", "kinds", "value")

    def __init__(self, codes: np.ndarray, kinds: np.ndarray, value: np.ndarray | None):
        self.codes = codes  # int64 (*B, 32) (or (32,) for a constant)
        self.kinds = kinds  # int8 (32,)
        self.value = value  # uint32 (*B) or None (recording)

    # ---- constructors
    @staticmethod
    def constant(c: int | np.ndarray) -> UInt32:
        """A constant word (no variables, no constraints)."""
        c = int(c) & _MASK32
        kinds = ((c >> np.arange(32)) & 1).astype(np.int8)
        return UInt32(np.zeros(32, dtype=np.int64), kinds, np.array(c, dtype=np.uint32))

    @staticmethod
    def alloc(cs: ConstraintSystem, name: str, values: np.ndarray | None, shape: tuple[int, ...] | int | None = None) -> UInt32:
        """New words: 32 boolean variables each (32 constraints), from uint32 values (None while recording:
        give ``shape``)."""
        if cs.has_values:
            if values is None:
                raise SynthesisError(f"{cs.path(name)}: words need values")
            value = np.asarray(values).astype(np.uint32)
            shp = value.shape
        else:
            value = None
            shp = (shape,) if isinstance(shape, int) else tuple(shape if shape is not None else np.asarray(values).shape)
        bits = cs.alloc(name, _bits_of(value, _POS) if value is not None else None, (*shp, 32))
        enforce_boolean(cs, name, bits)
        return UInt32(bits.codes, np.full(32, VAR, dtype=np.int8), value)

    @staticmethod
    def from_bits(bits: Var, values: np.ndarray | None = None) -> UInt32:
        """A word of existing boolean variables (*B, 32), little-endian; ``values``: their 0/1 values
        (*B, 32) when the system has values (the gadgets never read the system)."""
        if bits.shape[-1] != 32:
            raise SynthesisError(f"a word has 32 bits, not {bits.shape[-1]}")
        value = None if values is None else _pack_values(np.asarray(values))
        return UInt32(bits.codes, np.full(32, VAR, dtype=np.int8), value)

    @staticmethod
    def from_bits_be(bits: Var, values: np.ndarray | None = None) -> UInt32:
        """As :meth:`from_bits` from big-endian bits (the most significant first, as SHA-256 reads)."""
        return UInt32.from_bits(bits[..., ::-1], None if values is None else np.asarray(values)[..., ::-1])

    @staticmethod
    def alloc_bytes_be(
        cs: ConstraintSystem, name: str, data: np.ndarray | None, shape: tuple[int, ...] | None = None
    ) -> list[UInt32]:
        """Words from bytes read big-endian, as SHA-256 does: ``data`` (*B, 4n) uint8 -> n words (*B)
        (while recording: ``data`` None and ``shape`` the shape (*B, 4n))."""
        if cs.has_values:
            if data is None:
                raise SynthesisError(f"{cs.path(name)}: bytes need values")
            d = np.asarray(data, dtype=np.uint8)
            if d.shape[-1] % 4:
                raise SynthesisError(f"{cs.path(name)}: {d.shape[-1]} bytes are not whole words")
            b = d.reshape(*d.shape[:-1], -1, 4).astype(np.uint32)
            words = (b[..., 0] << 24) | (b[..., 1] << 16) | (b[..., 2] << 8) | b[..., 3]
        else:
            assert shape is not None
            words = None
        n = (words.shape[-1]) if words is not None else shape[-1] // 4
        batch = words.shape[:-1] if words is not None else tuple(shape[:-1])
        vals = None if words is None else np.moveaxis(words, -1, 0)
        ws = UInt32.alloc(cs, name, vals, (n, *batch))
        return [UInt32(ws.codes[j], ws.kinds, None if ws.value is None else ws.value[j]) for j in range(n)]

    @staticmethod
    def constant_bytes_be(data: bytes) -> list[UInt32]:
        return [UInt32.constant(int.from_bytes(data[i : i + 4], "big")) for i in range(0, len(data), 4)]

    # ---- views
    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.codes.shape[:-1])

    @property
    def is_constant(self) -> bool:
        return bool((self.kinds < VAR).all())

    @property
    def bits(self) -> Var:
        """The bits as a Var (*B, 32), little-endian; only for words whose 32 bits are plain variables."""
        if not (self.kinds == VAR).all():
            raise SynthesisError("this word has constant or negated bits: use bit_lc()")
        return Var(self.codes)

    def bit_lc(self, i: int) -> LC:
        """Bit i as a linear combination (a constant, the variable, or 1 - the variable)."""
        k = int(self.kinds[i])
        if k == CONST0:
            return LC()
        if k == CONST1:
            return as_lc(1)
        v = Var(self.codes[..., i])
        return v.lc() if k == VAR else 1 - v

    def lc(self) -> LC:
        """The packed word sum_i 2^i bit_i as a linear combination (no constraint)."""
        terms, const = self._pack_terms()
        return LC(terms) + const

    def _pack_terms(self) -> tuple[list[tuple[int, np.ndarray]], int]:
        terms: list[tuple[int, np.ndarray]] = []
        const = 0
        for i in range(32):
            k = self.kinds[i]
            if k == CONST0:
                continue
            if k == CONST1:
                const += 1 << i
            elif k == VAR:
                terms.append((1 << i, self.codes[..., i]))
            else:
                const += 1 << i
                terms.append((-(1 << i), self.codes[..., i]))
        return terms, const

    def max_value(self) -> int:
        """The largest value the word can take (its constant bits fixed)."""
        return int(_WEIGHTS[self.kinds != CONST0].sum())

    # ---- free operations
    def rotr(self, n: int) -> UInt32:
        n %= 32
        v = None if self.value is None else (self.value >> np.uint32(n)) | (self.value << np.uint32((32 - n) % 32))
        perm = _ROTR[n]  # an index gather: np.roll's Python overhead was the witness's top line
        return UInt32(self.codes[..., perm], self.kinds[perm], v)

    def rotl(self, n: int) -> UInt32:
        return self.rotr(32 - n % 32)

    def shr(self, n: int) -> UInt32:
        if not 0 <= n <= 32:
            raise SynthesisError(f"shift by {n}")
        codes = np.concatenate([self.codes[..., n:], np.zeros((*self.shape, n), dtype=np.int64)], axis=-1)
        kinds = np.concatenate([self.kinds[n:], np.zeros(n, dtype=np.int8)])
        v = None if self.value is None else (self.value >> np.uint32(n) if n < 32 else np.zeros_like(self.value))
        return UInt32(codes, kinds, v)

    def not_(self) -> UInt32:
        return UInt32(self.codes, self.kinds ^ np.int8(1), None if self.value is None else ~self.value)

    __invert__ = not_

    def __repr__(self) -> str:
        return f"UInt32(shape={self.shape}, {int((self.kinds >= VAR).sum())} variable bits)"


_WEIGHTS = np.array([1 << i for i in range(32)], dtype=np.uint64)
_ROTR = [np.roll(np.arange(32), -n) for n in range(32)]


def _pack_values(bits: np.ndarray) -> np.ndarray:
    """0/1 values (*B, 32) little-endian -> uint32 (*B)."""
    return (bits.astype(np.uint32) << _POS).sum(axis=-1, dtype=np.uint64).astype(np.uint32)


# ---------------------------------------------------------------------------------------------
# building blocks: positions grouped by their operands' kinds


_GROUPS: dict[bytes, list[tuple[tuple[int, ...], np.ndarray]]] = {}


def _groups(*kinds: np.ndarray) -> list[tuple[tuple[int, ...], np.ndarray]]:
    key = np.stack(kinds, axis=1).astype(np.int8)
    k = key.tobytes()
    g = _GROUPS.get(k)
    if g is None:
        uniq, inv = np.unique(key, axis=0, return_inverse=True)
        inv = inv.reshape(-1)
        g = [(tuple(int(x) for x in uniq[j]), np.flatnonzero(inv == j)) for j in range(uniq.shape[0])]
        _GROUPS[k] = g
    return g


def _lc_at(w: UInt32, pos: np.ndarray, kind: int) -> LC:
    if kind == CONST0:
        return LC()
    if kind == CONST1:
        return as_lc(1)
    v = Var(w.codes[..., pos])
    return v.lc() if kind == VAR else 1 - v


class _Out:
    """The result word being assembled group by group."""

    def __init__(self, cs: ConstraintSystem, name: str, words: Sequence[UInt32], value: np.ndarray | None, n_groups: int):
        self.cs, self.name, self.value = cs, name, value
        self.shape = tuple(np.broadcast_shapes(*(w.shape for w in words)))
        self.codes = np.zeros((*self.shape, 32), dtype=np.int64)
        self.kinds = np.zeros(32, dtype=np.int8)
        self.n_groups = n_groups
        self.g = 0

    def const(self, pos: np.ndarray, bit: int) -> None:
        self.kinds[pos] = bit

    def copy(self, pos: np.ndarray, src: UInt32, flip: int = 0) -> None:
        self.codes[..., pos] = src.codes[..., pos]
        self.kinds[pos] = src.kinds[pos] ^ np.int8(flip)

    def new(self, pos: np.ndarray, flip: int = 0) -> Var:
        """New variables at ``pos`` holding the result bits (negated when ``flip``: the result is then
        1 - the variable)."""
        cs = self.cs
        name = self.name if self.n_groups == 1 else f"{self.name} {self.g}"
        self.g += 1
        vals = None
        if cs.has_values:
            assert self.value is not None
            vals = _bits_of(np.broadcast_to(self.value, self.shape), pos)
            if flip:
                vals ^= np.uint8(1)
        v = cs.alloc(name, vals, (*self.shape, len(pos)))
        self.codes[..., pos] = v.codes
        self.kinds[pos] = VAR + flip
        return v

    def sub(self) -> str:
        return self.name if self.n_groups == 1 else f"{self.name} {self.g - 1}"

    def word(self) -> UInt32:
        v = None if self.value is None else np.broadcast_to(self.value, self.shape).astype(np.uint32)
        return UInt32(self.codes, self.kinds, v)


def _value(cs: ConstraintSystem, words: Sequence[UInt32], fn) -> np.ndarray | None:
    if not cs.has_values:
        return None
    vals = [w.value for w in words]
    if any(v is None for v in vals):
        raise SynthesisError(f"{cs.path()}: a word has no values")
    return np.asarray(fn(*vals), dtype=np.uint32)


# ---------------------------------------------------------------------------------------------
# gadgets


def not_(a: UInt32) -> UInt32:
    return a.not_()


def rotr(a: UInt32, n: int) -> UInt32:
    return a.rotr(n)


def shr(a: UInt32, n: int) -> UInt32:
    return a.shr(n)


def xor(cs: ConstraintSystem, name: str, a: UInt32, b: UInt32) -> UInt32:
    """a ^ b: one constraint per bit where both bits are variables."""
    return _xor_n(cs, name, [a, b], lambda x, y: x ^ y)


def xor3(cs: ConstraintSystem, name: str, a: UInt32, b: UInt32, c: UInt32) -> UInt32:
    """a ^ b ^ c: one constraint per bit where at least two bits are variables (see the module docstring)."""
    return _xor_n(cs, name, [a, b, c], lambda x, y, z: x ^ y ^ z)


def _xor_n(cs: ConstraintSystem, name: str, words: list[UInt32], fn) -> UInt32:
    groups = _groups(*(w.kinds for w in words))
    n_new = sum(1 for key, _ in groups if sum(k >= VAR for k in key) >= 2)
    out = _Out(cs, name, words, _value(cs, words, fn), n_new)
    for key, pos in groups:
        parity = sum(k for k in key if k < VAR) & 1
        var = [(w, k) for w, k in zip(words, key, strict=True) if k >= VAR]
        if not var:
            out.const(pos, parity)
        elif len(var) == 1:
            out.copy(pos, var[0][0], parity)
        elif len(var) == 2:
            c = out.new(pos, parity)  # c = la ^ lb; the result is c ^ parity
            if cs.wants_constraints:
                la, lb = (_lc_at(w, pos, k) for w, k in var)
                cs.enforce(out.sub(), la * 2, lb, la + lb - c)
        else:
            c = out.new(pos)
            if cs.wants_constraints:
                s = _lc_at(var[0][0], pos, var[0][1]) + _lc_at(var[1][0], pos, var[1][1]) + _lc_at(var[2][0], pos, var[2][1])
                S = 3 - s * 2
                cs.enforce(out.sub(), c * 4 + S, S, S * 2 + 3)
    return out.word()


def and_(cs: ConstraintSystem, name: str, a: UInt32, b: UInt32) -> UInt32:
    """a & b: one constraint per bit where both bits are variables."""
    groups = _groups(a.kinds, b.kinds)
    n_new = sum(1 for key, _ in groups if key[0] >= VAR and key[1] >= VAR)
    out = _Out(cs, name, [a, b], _value(cs, [a, b], lambda x, y: x & y), n_new)
    for (ka, kb), pos in groups:
        if CONST0 in (ka, kb):
            out.const(pos, 0)
        elif ka == CONST1:
            out.copy(pos, b)
        elif kb == CONST1:
            out.copy(pos, a)
        else:
            c = out.new(pos)
            if cs.wants_constraints:
                cs.enforce(out.sub(), _lc_at(a, pos, ka), _lc_at(b, pos, kb), c)
    return out.word()


def ch(cs: ConstraintSystem, name: str, e: UInt32, f: UInt32, g: UInt32) -> UInt32:
    """SHA-256's Ch: (e & f) ^ (~e & g), bit by bit "e ? f : g": e * (f - g) = out - g, one constraint
    per bit (none where e is constant or f and g are)."""
    groups = _groups(e.kinds, f.kinds, g.kinds)
    n_new = sum(1 for key, _ in groups if key[0] >= VAR and (key[1] >= VAR or key[2] >= VAR))
    out = _Out(cs, name, [e, f, g], _value(cs, [e, f, g], lambda x, y, z: (x & y) ^ (~x & z)), n_new)
    for (ke, kf, kg), pos in groups:
        if ke == CONST1:
            out.copy(pos, f)
        elif ke == CONST0:
            out.copy(pos, g)
        elif kf < VAR and kg < VAR:
            if kf == kg:
                out.const(pos, kf)
            else:
                out.copy(pos, e, kg)  # f = 1, g = 0: e; f = 0, g = 1: not e
        else:
            c = out.new(pos)
            if cs.wants_constraints:
                lg = _lc_at(g, pos, kg)
                cs.enforce(out.sub(), _lc_at(e, pos, ke), _lc_at(f, pos, kf) - lg, c - lg)
    return out.word()


def maj(cs: ConstraintSystem, name: str, a: UInt32, b: UInt32, c: UInt32) -> UInt32:
    """SHA-256's Maj: the majority of three bits: (8 out + S) * S = 4S - 3 with S = 3 - 2(a + b + c),
    one constraint per bit (an and / or where one bit is constant, none where two are)."""
    words = [a, b, c]
    groups = _groups(a.kinds, b.kinds, c.kinds)
    n_new = sum(1 for key, _ in groups if sum(k >= VAR for k in key) >= 2)
    out = _Out(cs, name, words, _value(cs, words, lambda x, y, z: (x & y) ^ (x & z) ^ (y & z)), n_new)
    for key, pos in groups:
        consts = [k for k in key if k < VAR]
        var = [(w, k) for w, k in zip(words, key, strict=True) if k >= VAR]
        if not var:
            out.const(pos, int(sum(consts) >= 2))
        elif len(var) == 1:
            if consts[0] == consts[1]:
                out.const(pos, consts[0])
            else:
                out.copy(pos, var[0][0])
        elif len(var) == 2:
            m = out.new(pos, 0 if consts[0] == 0 else 1)
            if cs.wants_constraints:
                la, lb = (_lc_at(w, pos, k) for w, k in var)
                if consts[0] == 0:  # a & b
                    cs.enforce(out.sub(), la, lb, m)
                else:  # a | b = 1 - (1 - a)(1 - b): m holds the negation
                    cs.enforce(out.sub(), 1 - la, 1 - lb, m)
        else:
            m = out.new(pos)
            if cs.wants_constraints:
                s = _lc_at(a, pos, key[0]) + _lc_at(b, pos, key[1]) + _lc_at(c, pos, key[2])
                S = 3 - s * 2
                cs.enforce(out.sub(), m * 8 + S, S, S * 4 - 3)
    return out.word()


def add_many(cs: ConstraintSystem, name: str, words: Sequence[UInt32 | int]) -> UInt32:
    """The sum of the words mod 2^32: the packed operands (constants folded into one constant) equal
    the 32 result bits plus 2^32 times the carry bits, all new boolean variables (32 + carry bits + 1
    constraints; the carry takes ceil(log2(k)) bits for k full operands)."""
    ws = [w if isinstance(w, UInt32) else UInt32.constant(w) for w in words]
    if not ws:
        return UInt32.constant(0)
    total_max = sum(w.max_value() for w in ws)
    value = None
    if cs.has_values:
        vals = [w.value for w in ws]
        if any(v is None for v in vals):
            raise SynthesisError(f"{cs.path(name)}: a word has no values")
        value = sum((np.asarray(v, dtype=np.uint64) for v in vals), np.uint64(0))
    if all(w.is_constant for w in ws):
        return UInt32.constant(sum(w.max_value() for w in ws))
    n_carry = (total_max >> 32).bit_length()
    n = 32 + n_carry
    shape = tuple(np.broadcast_shapes(*(w.shape for w in ws)))
    vals_bits = None
    if value is not None:
        v = np.broadcast_to(value, shape)
        vals_bits = ((v[..., None] >> np.arange(n, dtype=np.uint64)) & np.uint64(1)).astype(np.uint8)
    bits = cs.alloc(name, vals_bits, (*shape, n))
    enforce_boolean(cs, name, bits)
    if cs.wants_constraints:
        terms: list[tuple[int, np.ndarray]] = []
        const = 0
        for w in ws:
            t, k = w._pack_terms()
            terms += t
            const += k
        cs.enforce(f"{name} sum", LC(terms) + const, cs.one, pack(bits))
    out_value = None if value is None else np.broadcast_to(value, shape).astype(np.uint32)  # mod 2^32
    return UInt32(np.ascontiguousarray(bits.codes[..., :32]), np.full(32, VAR, dtype=np.int8), out_value)
