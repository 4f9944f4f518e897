"""SHA-256 as constraint gadgets, and Filecoin's SHA-256 truncated to 254 bits (hash2 of field elements).

Message bits are in bellman's order: bytes in order, each byte's most significant bit first (bit j of the
message is bit 7 - j % 8 of byte j // 8). Padding is added inside the gadget as constant bits (free);
the IV and the round constants are constants, so the first rounds of the first block fold constants.

Cost (per instance; the per-bit costs are in :mod:`.uint32`): per message-schedule word
sigma0 + sigma1 (32 + 32) + a 4-word sum (35) = 99, per round Sigma1, Ch, Sigma0, Maj (32 each) and two
sums (36 each) = 200, the final state sums 8 x 34; one block with a variable state: 17,824 constraints
(bellman's gadget: ~27k); the first block (constant IV) a little less. Witness values are computed
with numpy uint32 arithmetic over the whole batch, one allocation per gadget step.

Filecoin (rust-fil-proofs ``Sha256Function::hash2`` / ``hash2_circuit``, ``Sha256Domain``): a node is a
field element below 2^254 written as 32 little-endian bytes; hash2(a, b) = SHA-256(a_le || b_le) with
the top two bits of the last digest byte cleared (digest[31] &= 0x3f), read back as a little-endian
integer. In the circuit each input becomes its little-endian bits padded with two constant zeros,
bytes taken most significant bit first; the digest's bits are reversed per byte and packed.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..cs import ConstraintSystem, SynthesisError
from ..lc import LC, Var, as_lc
from ..sha256_native import IV, K
from .boolean import pack, to_bits
from .uint32 import CONST0, VAR, UInt32, add_many, ch, maj, xor3


class Bits:
    """A batch of bit strings (*B, n): per position a kind (0 / 1 constant, 2 variable, 3 its negation;
    the same for every instance, see :mod:`.uint32`), the codes (*B, n) and, with values, the 0/1
    values (*B, n) uint8 of the bits themselves."""

    __slots__ = ("codes", "kinds", "values")

    def __init__(self, codes: np.ndarray, kinds: np.ndarray, values: np.ndarray | None):
        self.codes, self.kinds, self.values = codes, kinds, values

    @staticmethod
    def of(cs: ConstraintSystem, bits: Var | Bits, values: np.ndarray | None = None) -> Bits:
        """Boolean variables (already constrained boolean) as Bits; their values are read from the
        system once when not given."""
        if isinstance(bits, Bits):
            return bits
        if cs.has_values and values is None:
            values = cs.value(bits).small().astype(np.uint8)
        vals = None if values is None or not cs.has_values else np.asarray(values, dtype=np.uint8)
        return Bits(bits.codes, np.full(bits.shape[-1], VAR, dtype=np.int8), vals)

    @staticmethod
    def constant(bits: Sequence[int] | np.ndarray) -> Bits:
        k = np.asarray(bits, dtype=np.int8).reshape(-1)
        return Bits(np.zeros(k.shape[0], dtype=np.int64), k.copy(), k.astype(np.uint8))

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.codes.shape[:-1])

    def __len__(self) -> int:
        return int(self.kinds.shape[0])

    def __getitem__(self, index: slice | np.ndarray) -> Bits:
        """Positions (the last axis)."""
        return Bits(self.codes[..., index], self.kinds[index], None if self.values is None else self.values[..., index])

    @property
    def var(self) -> Var:
        """The bits as a Var (*B, n): only when every bit is a plain variable."""
        if not (self.kinds == VAR).all():
            raise SynthesisError("these bits include constants or negations: use lc(i) or kinds")
        return Var(self.codes)

    def lc(self, i: int) -> LC:
        k = int(self.kinds[i])
        if k < VAR:
            return as_lc(k)
        v = Var(self.codes[..., i])
        return v.lc() if k == VAR else 1 - v

    def words_be(self) -> list[UInt32]:
        """32-bit words read big-endian (SHA-256's order), n a multiple of 32."""
        n = len(self)
        if n % 32:
            raise SynthesisError(f"{n} bits are not whole words")
        out = []
        for j in range(n // 32):
            sl = slice(32 * j + 31, None if j == 0 else 32 * j - 1, -1)  # little-endian within the word
            value = None
            if self.values is not None:
                b = self.values[..., sl].astype(np.uint32)
                value = (b << np.arange(32, dtype=np.uint32)).sum(axis=-1, dtype=np.uint64).astype(np.uint32)
            out.append(UInt32(np.ascontiguousarray(self.codes[..., sl]), self.kinds[sl].copy(), value))
        return out


def concat_bits(parts: Sequence[Bits]) -> Bits:
    shape = tuple(np.broadcast_shapes(*(p.shape for p in parts)))
    codes = np.concatenate([np.broadcast_to(p.codes, (*shape, len(p))) for p in parts], axis=-1)
    kinds = np.concatenate([p.kinds for p in parts])
    values = None
    if all(p.values is not None for p in parts):
        values = np.concatenate([np.broadcast_to(p.values, (*shape, len(p))) for p in parts], axis=-1)  # type: ignore[arg-type]
    return Bits(codes, kinds, values)


def words_bits_be(words: Sequence[UInt32], shape: tuple[int, ...] = ()) -> Bits:
    """Words as bits, each word most significant bit first (the digest's order), batch shape at least
    ``shape``."""
    shape = tuple(np.broadcast_shapes(shape, *(w.shape for w in words)))
    codes = np.concatenate([np.broadcast_to(w.codes, (*shape, 32))[..., ::-1] for w in words], axis=-1)
    kinds = np.concatenate([w.kinds[::-1] for w in words])
    values = None
    if all(w.value is not None for w in words):
        pos = np.arange(31, -1, -1, dtype=np.uint32)
        values = np.concatenate(
            [((np.broadcast_to(w.value, shape)[..., None] >> pos) & np.uint32(1)).astype(np.uint8) for w in words], axis=-1
        )
    return Bits(np.ascontiguousarray(codes), kinds, values)


def padding(n_bits: int) -> np.ndarray:
    """SHA-256's padding of an n-bit message: a 1, zeros, the 64-bit big-endian length."""
    k = (447 - n_bits) % 512
    length = ((n_bits >> np.arange(63, -1, -1)) & 1).astype(np.int8)
    return np.concatenate([[1], np.zeros(k, dtype=np.int8), length]).astype(np.int8)


def sha256_compression(
    cs: ConstraintSystem, name: str, state_words: Sequence[UInt32], block_bits: Var | Bits | Sequence[UInt32]
) -> list[UInt32]:
    """One compression: the 8 state words and a 512-bit block (bits in bellman's order, or 16 words)
    -> the 8 new state words."""
    if len(state_words) != 8:
        raise SynthesisError(f"{cs.path(name)}: {len(state_words)} state words")
    if isinstance(block_bits, (Var, Bits)):
        bits = Bits.of(cs, block_bits)
        if len(bits) != 512:
            raise SynthesisError(f"{cs.path(name)}: a block has 512 bits, not {len(bits)}")
        w = bits.words_be()
    else:
        w = list(block_bits)
        if len(w) != 16:
            raise SynthesisError(f"{cs.path(name)}: a block has 16 words, not {len(w)}")
    with cs.namespace(name):
        for t in range(16, 64):
            with cs.namespace(f"w{t}"):
                x, y = w[t - 15], w[t - 2]
                s0 = xor3(cs, "sigma0", x.rotr(7), x.rotr(18), x.shr(3))
                s1 = xor3(cs, "sigma1", y.rotr(17), y.rotr(19), y.shr(10))
                w.append(add_many(cs, "sum", [w[t - 16], s0, w[t - 7], s1]))
        a, b, c, d, e, f, g, h = state_words
        for t in range(64):
            with cs.namespace(f"round {t}"):
                S1 = xor3(cs, "Sigma1", e.rotr(6), e.rotr(11), e.rotr(25))
                chv = ch(cs, "ch", e, f, g)
                S0 = xor3(cs, "Sigma0", a.rotr(2), a.rotr(13), a.rotr(22))
                mj = maj(cs, "maj", a, b, c)
                t1 = [h, S1, chv, UInt32.constant(K[t]), w[t]]
                new_e = add_many(cs, "e", [d, *t1])
                new_a = add_many(cs, "a", [*t1, S0, mj])
                h, g, f, e, d, c, b, a = g, f, e, new_e, c, b, a, new_a
        return [add_many(cs, f"h{i}", [s, x]) for i, (s, x) in enumerate(zip(state_words, (a, b, c, d, e, f, g, h), strict=True))]


def sha256_words(cs: ConstraintSystem, name: str, message_bits: Var | Bits, values: np.ndarray | None = None) -> list[UInt32]:
    """SHA-256 of a batch of messages (*B, n bits, bellman's order): the 8 digest words."""
    msg = Bits.of(cs, message_bits, values)
    full = concat_bits([msg, Bits.constant(padding(len(msg)))])
    state = [UInt32.constant(v) for v in IV]
    with cs.namespace(name):
        for i in range(len(full) // 512):
            state = sha256_compression(cs, f"block {i}", state, full[512 * i : 512 * (i + 1)])
    return state


def sha256(cs: ConstraintSystem, name: str, message_bits: Var | Bits, values: np.ndarray | None = None) -> Bits:
    """SHA-256 of a batch of messages: ``message_bits`` (*B, n) boolean variables (or :class:`Bits`) in
    bellman's order (``values``: their 0/1 values, else read from the system once) -> the digest bits
    (*B, 256) in the same order (``.var`` is the Var; constant only for a constant message)."""
    msg = Bits.of(cs, message_bits, values)
    return words_bits_be(sha256_words(cs, name, msg), msg.shape)


def sha256_254(cs: ConstraintSystem, name: str, message_bits: Var | Bits, values: np.ndarray | None = None) -> Bits:
    """Filecoin's SHA-256 truncated to 254 bits: the digest bits (*B, 256) as :func:`sha256` gives
    them, with the top two bits of the last byte (positions 248, 249) the constant 0."""
    d = sha256(cs, name, message_bits, values)
    kinds = d.kinds.copy()
    kinds[248:250] = CONST0
    vals = None
    if d.values is not None:
        vals = d.values.copy()
        vals[..., 248:250] = 0
    return Bits(d.codes, kinds, vals)


def digest_le_bits(d: Bits, n: int = 254) -> Bits:
    """The first n little-endian bits of a digest read as a little-endian integer (bytes in order, each
    byte's bits reversed)."""
    order = (np.arange(len(d)).reshape(-1, 8)[:, ::-1]).reshape(-1)[:n]
    return d[order]


def _le_bytes_bits(cs: ConstraintSystem, bits254: Var, values: np.ndarray | None) -> Bits:
    """254 little-endian bits of a field element, padded with two constant zeros to 32 bytes, each byte
    most significant bit first (bellman's message order)."""
    shape = bits254.shape[:-1]
    codes = np.concatenate([bits254.codes, np.zeros((*shape, 2), dtype=np.int64)], axis=-1)
    kinds = np.concatenate([np.full(254, VAR, dtype=np.int8), np.zeros(2, dtype=np.int8)])
    vals = None
    if values is not None:
        vals = np.concatenate([values, np.zeros((*shape, 2), dtype=np.uint8)], axis=-1)
    order = (np.arange(256).reshape(32, 8)[:, ::-1]).reshape(-1)
    return Bits(codes[..., order], kinds[order], None if vals is None else vals[..., order])


def _field_bits(cs: ConstraintSystem, x: Var) -> np.ndarray:
    """The 254 low little-endian bits of field values (*B) as uint8 (*B, 254)."""
    canon = cs.field.from_mont(cs.value(x).flat())  # (N, 4) uint64
    by = canon.astype("<u8").view(np.uint8).reshape(-1, 32)
    bits = np.unpackbits(by, axis=-1, bitorder="little")[:, :254]
    return bits.reshape((*x.shape, 254))


def hash2_sha256_254(cs: ConstraintSystem, name: str, left: Var, right: Var) -> Var:
    """Filecoin's binary-tree node hash of field elements (*B) (values below 2^254): SHA-256 of the two
    32-byte little-endian encodings, the last digest byte & 0x3f, read little-endian as a new field
    variable (*B). Cost: 2 x (254 + 1) for the decompositions, two compressions, 1 to pack."""
    with cs.namespace(name):
        lb = to_bits(cs, "left bits", left, 254)
        rb = to_bits(cs, "right bits", right, 254)
        lv = rv = None
        if cs.has_values:
            lv, rv = _field_bits(cs, left), _field_bits(cs, right)
        msg = concat_bits([_le_bytes_bits(cs, lb, lv), _le_bytes_bits(cs, rb, rv)])
        d = digest_le_bits(sha256_254(cs, "sha256", msg))
        bits = d.var
        value = None
        if cs.has_values:
            assert d.values is not None
            value = _pack_field(cs, d.values)
        out = cs.alloc("value", value, bits.shape[:-1])
        cs.enforce("pack", pack(bits), cs.one, out)
        return out


def _pack_field(cs: ConstraintSystem, bits: np.ndarray):
    """Little-endian bits (*B, n <= 256) -> field values (a FieldArray)."""
    from ..lc import FieldArray

    shape = bits.shape[:-1]
    full = np.zeros((*shape, 256), dtype=np.uint8)
    full[..., : bits.shape[-1]] = bits
    by = np.packbits(full, axis=-1, bitorder="little").reshape(-1, 32)
    limbs = by.view("<u8").astype(np.uint64).reshape(-1, 4)
    if bits.shape[-1] < cs.field.bits:  # below p: canonical already
        return FieldArray(cs.field, cs.field.to_mont(np.ascontiguousarray(limbs)).reshape((*shape, 4)))
    ints = [int.from_bytes(row.tobytes(), "little") for row in by]
    return FieldArray.of(cs.field, np.array(ints, dtype=object).reshape(shape))
