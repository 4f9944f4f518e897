"""rust-fil-proofs' (storage-proofs-core) circuit gadgets with their constraint structure, batch-first.

Facts read from filecoin-project/rust-fil-proofs (storage-proofs-core ``gadgets/{por,insertion,uint64,
encode,constraint,variables}.rs``, ``filecoin-hashers`` ``sha256.rs`` / ``poseidon.rs``) and bellperson /
bellpepper-core (``num.rs``, ``multipack.rs``, ``boolean.rs``); the code is ours:

* :func:`num_to_bits_le`: bellman's ``AllocatedNum::to_bits_le``, the *non-strict* decomposition: the
  field's bit length (255 for BLS12-381) of boolean variables, one packing constraint (256 constraints);
  the canonical bits are the witness, a congruent 255-bit value would also satisfy it;
* :func:`pack_bits`: ``multipack::pack_bits``: a new number equal to the first capacity (254) bits;
* :func:`pick`: ``insertion::pick``: c = cond ? a : b, (b - a) * cond = b - c;
* :func:`insert`: ``insertion::insert`` (arity 2: 2 picks, 4: 8 picks, 8: a nor and an and of the low
  two bits then 20 picks; other arities a select tree of picks);
* :func:`por`: ``PoRCircuit``'s path: per level the position bits allocated boolean, the siblings
  allocated, the insertion, the tree's hash (Poseidon of the arity, neptune-shaped, or Filecoin's
  SHA-256-254 of two numbers, bellman-shaped); the caller packs the path bits into a public input
  (:func:`pack_into_input`) and equates the root;
* :func:`sha256_hash2`: ``Sha256Function::hash_multi_leaf_circuit`` for two numbers: each decomposed with
  :func:`num_to_bits_le` (255 bits, one constant zero to 32 bytes, bits reversed per byte), bellman's
  SHA-256 (two compressions), the digest read little-endian and packed to 254 bits (:func:`pack_bits`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..cs import ConstraintSystem, SynthesisError
from ..lc import LC, FieldArray, Operand, Var, as_lc
from . import bellman_sha256
from .boolean import alloc_bits, pack
from .sha256 import Bits, concat_bits
from .uint32 import CONST0, VAR

BYTE_REVERSE = (np.arange(256).reshape(32, 8)[:, ::-1]).reshape(-1)  # message position -> LE bit


def _shape(*xs: Operand) -> tuple[int, ...]:
    return tuple(np.broadcast_shapes(*(as_lc(x).shape for x in xs)))


def canonical_bits(cs: ConstraintSystem, x: Var | LC, n: int = 256) -> np.ndarray:
    """The canonical little-endian bits (*B, n) of field values, uint8."""
    canon = cs.field.from_mont(cs.value(x).flat())  # (N, 4) uint64
    by = np.ascontiguousarray(canon.astype("<u8")).view(np.uint8).reshape(-1, 32)
    bits = np.unpackbits(by, axis=-1, bitorder="little")[:, :n]
    return bits.reshape((*as_lc(x).shape, n))


def num_to_bits_le(cs: ConstraintSystem, name: str, x: Var | LC) -> Var:
    """bellman's non-strict ``to_bits_le``: (*B, field bits) boolean variables, one packing constraint."""
    return num_to_bits_le_values(cs, name, x)[0]


def num_to_bits_le_values(cs: ConstraintSystem, name: str, x: Var | LC) -> tuple[Var, np.ndarray | None]:
    """:func:`num_to_bits_le` and the bits' 0/1 values (*B, field bits) uint8 (None without values), so
    that callers need not read them back from the system."""
    nb = cs.field.bits
    vals = canonical_bits(cs, x, nb) if cs.has_values else None
    bits = alloc_bits(cs, name, vals, (*as_lc(x).shape, nb))
    if cs.wants_constraints:
        cs.enforce(f"{name} unpacking", pack(bits) - x, cs.one, 0)
    return bits, vals


def le_bits_message(bits: Var, values: np.ndarray | None) -> Bits:
    """Little-endian bits (*B, n <= 256) of a number as SHA-256 message bits: padded with constant zeros
    to 32 bytes, each byte most significant bit first (rust-fil-proofs' ``reverse_bit_numbering``)."""
    n = bits.shape[-1]
    shape = bits.shape[:-1]
    codes = np.zeros((*shape, 256), dtype=np.int64)
    codes[..., :n] = bits.codes
    kinds = np.where(np.arange(256) < n, VAR, CONST0).astype(np.int8)
    vals = None
    if values is not None:
        vals = np.zeros((*shape, 256), dtype=np.uint8)
        vals[..., :n] = values
    o = BYTE_REVERSE
    return Bits(codes[..., o], kinds[o], None if vals is None else vals[..., o])


def pack_bits(cs: ConstraintSystem, name: str, bits: Bits) -> Var:
    """``multipack::pack_bits``: a new number equal to the first (capacity) little-endian bits (1
    constraint)."""
    cap = cs.field.bits - 1
    b = bits[np.arange(min(cap, len(bits)))]
    value = None
    if cs.has_values:
        assert b.values is not None
        value = _pack_field(cs, b.values)
    out = cs.alloc(name, value, b.shape)
    if cs.wants_constraints:
        terms: list[tuple[int, np.ndarray]] = []
        const = 0
        for i in range(len(b)):
            k = int(b.kinds[i])
            if k == VAR:
                terms.append((1 << i, b.codes[..., i]))
            elif k == VAR + 1:
                const += 1 << i
                terms.append((-(1 << i), b.codes[..., i]))
            elif k == 1:
                const += 1 << i
        cs.enforce(f"{name} packing", LC(terms) + const, cs.one, out)
    return out


def _pack_field(cs: ConstraintSystem, bits: np.ndarray) -> FieldArray:
    """Little-endian 0/1 values (*B, n < field bits) as field elements."""
    shape = bits.shape[:-1]
    full = np.zeros((*shape, 256), dtype=np.uint8)
    full[..., : bits.shape[-1]] = bits
    limbs = np.packbits(full, axis=-1, bitorder="little").reshape(-1, 32).view("<u8").astype(np.uint64)
    return FieldArray(cs.field, cs.field.to_mont(np.ascontiguousarray(limbs)).reshape((*shape, 4)))


def pack_into_input(cs: ConstraintSystem, name: str, bits: Sequence[Var], inp: Var) -> None:
    """``multipack::pack_into_inputs`` for at most capacity bits, the input already allocated (so that
    the public inputs keep rust-fil-proofs' order): sum 2^i bits_i = input (1 constraint)."""
    if len(bits) > cs.field.bits - 1:
        raise SynthesisError(f"{cs.path(name)}: {len(bits)} bits do not fit one input")
    if cs.wants_constraints:
        cs.enforce(name, LC([(1 << i, b.codes) for i, b in enumerate(bits)]), cs.one, inp)


def pick(cs: ConstraintSystem, name: str, cond: Var, a: Operand, b: Operand) -> Var:
    """cond ? a : b as ``insertion::pick``: (b - a) * cond = b - c (1 constraint)."""
    shape = _shape(cond, a, b)
    value = None
    if cs.has_values:
        c = np.broadcast_to(cs.value(cond).is_zero(), shape)
        va, vb = (np.broadcast_to(cs.value(as_lc(x)).mont, (*shape, 4)) for x in (a, b))
        value = FieldArray(cs.field, np.where(c[..., None], vb, va))
    out = cs.alloc(name, value, shape)
    if cs.wants_constraints:
        cs.enforce(name, as_lc(b) - a, cond, as_lc(b) - out)
    return out


def _and(cs: ConstraintSystem, name: str, x: Var, y: Var, negate: bool) -> Var:
    """x and y, or (not x) and (not y) when ``negate`` (AllocatedBit::and / nor)."""
    value = None
    if cs.has_values:
        vx, vy = (cs.value(v).small().astype(np.uint8) for v in (x, y))
        value = (1 - vx) & (1 - vy) if negate else vx & vy
    out = cs.alloc(name, value, _shape(x, y))
    if cs.wants_constraints:
        cs.enforce(name, 1 - x.lc() if negate else x, 1 - y.lc() if negate else y, out)
    return out


def insert(cs: ConstraintSystem, name: str, element: Operand, bits: Sequence[Var], others: Sequence[Operand]) -> list[Operand]:
    """``others`` (arity - 1) with ``element`` inserted at the position given by the little-endian
    ``bits`` (allocated booleans), as rust-fil-proofs' ``insert`` (2, 4, 8 specialised)."""
    size = len(others) + 1
    if 1 << len(bits) != size:
        raise SynthesisError(f"{cs.path(name)}: {len(bits)} bits for {size} children")
    with cs.namespace(name):
        if size == 2:
            (b0,) = bits
            return [pick(cs, "0", b0, others[0], element), pick(cs, "1", b0, element, others[0])]
        a = element
        if size == 4:
            b0, b1 = bits
            b, c, d = others
            p0 = pick(cs, "p0", b1, b, pick(cs, "p0_x0", b0, b, a))
            p1 = pick(cs, "p1", b1, c, pick(cs, "p1_x0", b0, a, b))
            p2 = pick(cs, "p2", b1, pick(cs, "p2_x1", b0, d, a), c)
            p3 = pick(cs, "p3", b1, pick(cs, "p3_x1", b0, a, d), d)
            return [p0, p1, p2, p3]
        if size == 8:
            b0, b1, b2 = bits
            b, c, d, e, f, g, h = others
            nor01 = _and(cs, "b0 nor b1", b0, b1, True)
            and01 = _and(cs, "b0 and b1", b0, b1, False)
            p0 = pick(cs, "p0", b2, b, pick(cs, "p0_xx0", nor01, a, b))
            t = pick(cs, "p1_x00", b0, a, b)
            p1 = pick(cs, "p1", b2, c, pick(cs, "p1_xx0", b1, c, t))
            t = pick(cs, "p2_x10", b0, d, a)
            p2 = pick(cs, "p2", b2, d, pick(cs, "p2_xx0", b1, t, c))
            p3 = pick(cs, "p3", b2, e, pick(cs, "p3_xx0", and01, a, d))
            p4 = pick(cs, "p4", b2, pick(cs, "p4_xx1", nor01, a, f), e)
            t = pick(cs, "p5_x01", b0, a, f)
            p5 = pick(cs, "p5", b2, pick(cs, "p5_xx1", b1, g, t), f)
            t = pick(cs, "p6_x11", b0, h, a)
            p6 = pick(cs, "p6", b2, pick(cs, "p6_xx1", b1, t, g), g)
            p7 = pick(cs, "p7", b2, pick(cs, "p7_xx1", and01, a, h), h)
            return [p0, p1, p2, p3, p4, p5, p6, p7]
        # any other power of two: each position selects among its candidates (a binary select of picks)
        out: list[Operand] = []
        for pos in range(size):
            choices = [others[pos] if pos < idx else (element if pos == idx else others[pos - 1]) for idx in range(size)]
            state = list(choices)
            half = size // 2
            for i, bit in enumerate(reversed(bits)):
                state = [pick(cs, f"choice {pos} pick {i} {j}", bit, state[half + j], state[j]) for j in range(half)]
                half //= 2
            out.append(state[0])
        return out


def sha256_hash2(cs: ConstraintSystem, name: str, left: Operand, right: Operand) -> Var:
    """Filecoin's SHA-256 node hash of two numbers (*B) with rust-fil-proofs' / bellman's structure."""
    with cs.namespace(name):
        parts = []
        for k, x in enumerate((left, right)):
            xl = as_lc(x)
            bits, vals = num_to_bits_le_values(cs, f"{k}_num_into_bits", xl)
            parts.append(le_bits_message(bits, vals))
        d = bellman_sha256.sha256(cs, "hash", concat_bits(parts))
        return pack_bits(cs, "pack_le", d[BYTE_REVERSE])


def por(
    cs: ConstraintSystem,
    name: str,
    leaf: Operand,
    index: np.ndarray | None,
    siblings: Sequence[Var],
    arities: Sequence[int],
    hash_kind: str = "poseidon",
) -> tuple[Var, list[Var]]:
    """A Merkle path as ``PoRCircuit`` synthesizes it: per level (arity a) log2(a) position bits
    allocated boolean (values from ``index`` (*B) integers), the siblings ``siblings[level]`` (*B, a - 1)
    (allocated by the caller), the insertion and the hash. Returns the computed root and the path bits
    (little-endian, one Var (*B) each)."""
    from .neptune_poseidon import poseidon_hash

    cur: Operand = leaf
    path_bits: list[Var] = []
    shape = _shape(leaf)
    idx = None if index is None else np.asarray(index, dtype=np.uint64)
    shift = 0
    with cs.namespace(name):
        for lv, a in enumerate(arities):
            k = a.bit_length() - 1
            with cs.namespace(f"level {lv}"):
                vals = None
                if cs.has_values:
                    assert idx is not None
                    vals = ((idx[..., None] >> (np.uint64(shift) + np.arange(k, dtype=np.uint64))) & np.uint64(1)).astype(
                        np.uint8
                    )
                bits = alloc_bits(cs, "index bits", vals, (*shape, k))
                lv_bits = [bits[..., j] for j in range(k)]
                path_bits += lv_bits
                others = [siblings[lv][..., j] for j in range(a - 1)]
                children = insert(cs, "insert", cur, lv_bits, others)
                if hash_kind == "poseidon":
                    cur = poseidon_hash(cs, "hash", children, a)
                elif hash_kind == "sha256" and a == 2:
                    cur = sha256_hash2(cs, "hash", children[0], children[1])
                else:
                    raise SynthesisError(f"{cs.path(name)}: no {hash_kind} tree of arity {a}")
            shift += k
    assert isinstance(cur, Var)
    return cur, path_bits


def uint64_alloc(cs: ConstraintSystem, name: str, values: np.ndarray | None, shape: tuple[int, ...]) -> Var:
    """``UInt64::alloc``: 64 boolean variables (*B, 64), little-endian."""
    vals = None
    if cs.has_values:
        assert values is not None
        v = np.asarray(values, dtype=np.uint64)
        vals = ((v[..., None] >> np.arange(64, dtype=np.uint64)) & np.uint64(1)).astype(np.uint8)
    return alloc_bits(cs, name, vals, (*shape, 64))
