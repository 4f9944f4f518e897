"""SHA-256 with bellman's / bellperson's constraint structure (the circuit Filecoin's proofs are built on).

:mod:`.sha256` is our compact SHA-256 (about 17.8k constraints per compression); this module reproduces
the constraint structure of bellperson's ``gadgets::sha256`` (with ``gadgets::uint32``, ``multieq`` and
bellpepper-core's ``Boolean``) so that a circuit built from it has Filecoin's constraint count. Facts read
from filecoin-project/bellperson ``src/gadgets/{sha256,uint32,multieq}.rs`` and
argumentcomputer/bellpepper ``crates/bellpepper-core/src/gadgets/boolean.rs`` (our own code, batch-first):

* bits have three kinds, as :mod:`.uint32` (constant, variable, negated variable); NOT is free;
* ``xor`` of two variable bits: one new variable, (2a) * b = a + b - c on the *underlying* variables (a
  negated operand makes the result negated); a constant operand costs nothing;
* ``and``: one new variable (a * b, a * (1 - b) or (1 - a)(1 - b)), nothing with a constant operand;
* ``ch`` / ``maj``: bellman's case tables on constant operands (most reduce to one ``and`` or to a copy);
  with three variable bits ``ch`` costs 1 ((b - c) * a = ch - c) and ``maj`` 2 (b and c, then
  (2bc - b - c) * a = bc - maj);
* ``addmany`` of k words: ceil(log2(k (2^32 - 1))) result bits, each allocated boolean (1 constraint
  each; the carries included), and the equality "packed operands = packed result" handed to a
  :class:`MultiEq`, which adds equalities (each shifted by the bits already used) into one constraint while
  the bits used stay below the field's capacity (254 for BLS12-381) and emits it when the next one would not
  fit and at the end of each compression; an addition of constant words only is a constant;
* a compression: the message schedule (s0 = r7 ^ r18 ^ shr3 as two xors, s1 likewise, a 4-word addmany),
  64 rounds whose new ``a`` / ``e`` are *deferred* sums (computed by one addmany when first read: 6 and 7
  operands; the round constant a constant word), and the final additions (h0 and h4 fold the deferred
  sums, the others 2-word addmanys);
* ``sha256``: bellman's padding (a 1 bit, zeros, the 64-bit length, all constants).

Counts (tests/test_gadgets_bellman.py): one block with 512 allocated message bits 25,840 constraints
beyond the message bits' 512 (bellperson's own test ``test_full_block``), the two-block SHA-256 of 512
allocated bits 44,874 (``test_full_hash``).

Values are computed with numpy over the batch, one allocation per gadget step and kind group, exactly as
in :mod:`.uint32` (whose word type and grouping are reused); the three constraint systems allocate
identically.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..cs import ConstraintSystem, SynthesisError
from ..lc import LC, Var, as_lc
from ..sha256_native import IV, K
from .boolean import enforce_boolean
from .sha256 import Bits, concat_bits, padding, words_bits_be
from .uint32 import CONST0, CONST1, VAR, UInt32, _bits_of, _groups, _Out, _value

__all__ = ["MultiEq", "addmany", "ch", "maj", "sha256", "sha256_compression", "sha256_words", "xor"]


def _var_at(w: UInt32, pos: np.ndarray) -> LC:
    """The underlying variables of variable / negated bits at ``pos`` (the negation ignored)."""
    return Var(w.codes[..., pos]).lc()


def _lit(w: UInt32, pos: np.ndarray, kind: int) -> LC:
    """The bits at ``pos`` (all of one kind) as a linear combination, negation applied."""
    if kind == CONST0:
        return LC()
    if kind == CONST1:
        return as_lc(1)
    v = Var(w.codes[..., pos])
    return v.lc() if kind == VAR else 1 - v


def xor(cs: ConstraintSystem, name: str, a: UInt32, b: UInt32) -> UInt32:
    """Bitwise Boolean::xor: one constraint per position where both bits are variables."""
    groups = _groups(a.kinds, b.kinds)
    n_new = sum(1 for key, _ in groups if key[0] >= VAR and key[1] >= VAR)
    out = _Out(cs, name, [a, b], _value(cs, [a, b], lambda x, y: x ^ y), n_new)
    for (ka, kb), pos in groups:
        if ka < VAR and kb < VAR:
            out.const(pos, ka ^ kb)
        elif ka < VAR:
            out.copy(pos, b, ka)  # false: b; true: not b
        elif kb < VAR:
            out.copy(pos, a, kb)
        else:
            flip = int(ka != kb)  # one negated operand: the result is the negation of xor of the variables
            c = out.new(pos, flip)
            if cs.wants_constraints:
                va, vb = _var_at(a, pos), _var_at(b, pos)
                cs.enforce(out.sub(), va * 2, vb, va + vb - c)
    return out.word()


# ---------------------------------------------------------------------------------------------
# ch and maj: bellman's case tables. A plan per kind triple: ("const", bit), ("copy", operand, flip),
# ("and", (operand, flip), (operand, flip), out_flip) -- a new variable c with
# lit(x) * lit(y) = c, the result c or its negation --, or ("full",).


def _and_plan(kx: int, ix: int, fx: int, ky: int, iy: int, fy: int, out_flip: int) -> tuple:
    """Boolean::and of operand ix (kind kx, negated when fx) and operand iy (likewise), the result
    negated when out_flip: a constant, a copy, or one new variable."""
    ex, ey = kx ^ fx, ky ^ fy  # the effective kinds (x ^ 1 negates every kind)
    if CONST0 in (ex, ey):
        return ("const", out_flip)
    if ex == CONST1:
        return ("copy", iy, fy ^ out_flip) if ey >= VAR else ("const", 1 ^ out_flip)
    if ey == CONST1:
        return ("copy", ix, fx ^ out_flip)
    return ("and", (ix, fx), (iy, fy), out_flip)


def _ch_plan(key: tuple[int, int, int]) -> tuple:
    ka, kb, kc = key
    if ka < VAR and kb < VAR and kc < VAR:
        return ("const", kc if ka == CONST0 else kb)
    if ka == CONST0:
        return ("copy", 2, 0)
    if kb == CONST0:
        return _and_plan(ka, 0, 1, kc, 2, 0, 0)  # (not a) and c
    if kc == CONST0:
        return _and_plan(ka, 0, 0, kb, 1, 0, 0)  # a and b
    if kc == CONST1:
        return _and_plan(ka, 0, 0, kb, 1, 1, 1)  # not (a and not b)
    if kb == CONST1:
        return _and_plan(ka, 0, 1, kc, 2, 1, 1)  # not (not a and not c)
    return ("full",)  # a constant true or variable: b, c variables


def _maj_plan(key: tuple[int, int, int]) -> tuple:
    ka, kb, kc = key
    if ka < VAR and kb < VAR and kc < VAR:
        return ("const", int(ka + kb + kc >= 2))
    if ka == CONST0:
        return _and_plan(kb, 1, 0, kc, 2, 0, 0)
    if kb == CONST0:
        return _and_plan(ka, 0, 0, kc, 2, 0, 0)
    if kc == CONST0:
        return _and_plan(ka, 0, 0, kb, 1, 0, 0)
    if kc == CONST1:
        return _and_plan(ka, 0, 1, kb, 1, 1, 1)
    if kb == CONST1:
        return _and_plan(ka, 0, 1, kc, 2, 1, 1)
    if ka == CONST1:
        return _and_plan(kb, 1, 1, kc, 2, 1, 1)
    return ("full",)


def _triop(cs: ConstraintSystem, name: str, words: list[UInt32], fn, plan_of, full) -> UInt32:
    groups = _groups(*(w.kinds for w in words))
    plans = [(plan_of(key), key, pos) for key, pos in groups]
    n_new = sum(1 for p, _, _ in plans if p[0] in ("and", "full"))
    out = _Out(cs, name, words, _value(cs, words, fn), n_new)
    for plan, key, pos in plans:
        kind = plan[0]
        if kind == "const":
            out.const(pos, plan[1])
        elif kind == "copy":
            out.copy(pos, words[plan[1]], plan[2])
        elif kind == "and":
            (ix, fx), (iy, fy), of = plan[1], plan[2], plan[3]
            c = out.new(pos, of)
            if cs.wants_constraints:
                lx = _lit(words[ix], pos, key[ix] ^ fx)
                ly = _lit(words[iy], pos, key[iy] ^ fy)
                cs.enforce(out.sub(), lx, ly, c)
        else:
            full(cs, out, words, key, pos)
    return out.word()


def _ch_full(cs: ConstraintSystem, out: _Out, words: list[UInt32], key: tuple, pos: np.ndarray) -> None:
    a, b, c = words
    r = out.new(pos)
    if cs.wants_constraints:
        la, lb, lc = (_lit(w, pos, k) for w, k in zip(words, key, strict=True))
        cs.enforce(out.sub(), lb - lc, la, r - lc)


def _maj_full(cs: ConstraintSystem, out: _Out, words: list[UInt32], key: tuple, pos: np.ndarray) -> None:
    a, b, c = words
    m = out.new(pos)
    shape = out.shape
    vals = None
    if cs.has_values:
        assert b.value is not None and c.value is not None
        bv = np.broadcast_to(b.value, shape)
        cv = np.broadcast_to(c.value, shape)
        vals = _bits_of(bv & cv, pos)
    bc = cs.alloc(f"{out.sub()} b and c", vals, (*shape, len(pos)))
    if cs.wants_constraints:
        la, lb, lc = (_lit(w, pos, k) for w, k in zip(words, key, strict=True))
        cs.enforce(f"{out.sub()} b and c", lb, lc, bc)
        cs.enforce(out.sub(), bc * 2 - lb - lc, la, bc - m)


def ch(cs: ConstraintSystem, name: str, e: UInt32, f: UInt32, g: UInt32) -> UInt32:
    """SHA-256's Ch (e and f) xor (not e and g) with bellman's ``sha256_ch`` cases per bit."""
    return _triop(cs, name, [e, f, g], lambda x, y, z: (x & y) ^ (~x & z), _ch_plan, _ch_full)


def maj(cs: ConstraintSystem, name: str, a: UInt32, b: UInt32, c: UInt32) -> UInt32:
    """SHA-256's Maj with bellman's ``sha256_maj`` cases per bit (2 constraints for 3 variable bits)."""
    return _triop(cs, name, [a, b, c], lambda x, y, z: (x & y) ^ (x & z) ^ (y & z), _maj_plan, _maj_full)


# ---------------------------------------------------------------------------------------------
# addition


class MultiEq:
    """Equalities of bit-packed values added up into one constraint (bellman's ``MultiEq``): each new
    equality is shifted by the bits used so far; the sum is emitted as one constraint when the next
    equality would reach the field's capacity (bits - 1) and at :meth:`flush`.

    The pending left side is kept per operand word (a word in two of the pending sums, as the round's
    temp1 words in the deferred ``a`` and ``e``, gets one term per bit with the coefficients added): the
    same constraint with fewer terms to evaluate."""

    def __init__(self, cs: ConstraintSystem, name: str = "multieq"):
        self.cs, self.name = cs, name
        self.capacity = cs.field.bits - 1
        self.bits_used = 0
        self.ops = 0
        self.words: dict[int, list] = {}  # id(word) -> [word, coefficient]
        self.rhs: list[tuple[int, np.ndarray]] = []

    def enforce_equal(self, num_bits: int, words: Sequence[UInt32], rhs: list[tuple[int, np.ndarray]]) -> None:
        """sum(words) = the packed ``rhs`` terms, an equality of ``num_bits`` bits."""
        if self.capacity <= self.bits_used + num_bits:
            self.flush()
        if self.capacity <= self.bits_used + num_bits:
            raise SynthesisError(f"{self.cs.path(self.name)}: an equality of {num_bits} bits does not fit the field")
        if self.cs.wants_constraints:
            s = 1 << self.bits_used
            for w in words:
                e = self.words.get(id(w))
                if e is None:
                    self.words[id(w)] = [w, s]
                else:
                    e[1] += s
            self.rhs += [(k * s, c) for k, c in rhs]
        self.bits_used += num_bits

    def flush(self) -> None:
        if self.bits_used == 0:
            return
        if self.cs.wants_constraints:
            terms: list[tuple[int, np.ndarray]] = []
            const = 0
            for w, s in self.words.values():
                t, k = w._pack_terms()
                terms += [(c * s, codes) for c, codes in t]
                const += k * s
            self.cs.enforce(f"{self.name} {self.ops}", LC(terms) + const, self.cs.one, LC(self.rhs))
        self.words, self.rhs = {}, []
        self.bits_used = 0
        self.ops += 1


def addmany(cs: ConstraintSystem, name: str, meq: MultiEq, words: Sequence[UInt32]) -> UInt32:
    """The sum of 2 to 10 words mod 2^32, as bellman's ``UInt32::addmany``: a constant when every bit is
    constant, else ceil(log2(k (2^32 - 1))) new boolean result bits and one equality for ``meq``."""
    ws = list(words)
    if not 2 <= len(ws) <= 10:
        raise SynthesisError(f"{cs.path(name)}: addmany of {len(ws)} words")
    value = None
    if cs.has_values:
        vals = [w.value for w in ws]
        if any(v is None for v in vals):
            raise SynthesisError(f"{cs.path(name)}: a word has no values")
        value = sum((np.asarray(v, dtype=np.uint64) for v in vals), np.uint64(0))
    if all(w.is_constant for w in ws):
        return UInt32.constant(sum(w.max_value() for w in ws))
    n = (len(ws) * 0xFFFFFFFF).bit_length()
    shape = tuple(np.broadcast_shapes(*(w.shape for w in ws)))
    vals_bits = None
    if value is not None:
        v = np.broadcast_to(value, shape)
        vals_bits = ((v[..., None] >> np.arange(n, dtype=np.uint64)) & np.uint64(1)).astype(np.uint8)
    bits = cs.alloc(name, vals_bits, (*shape, n))
    enforce_boolean(cs, name, bits)
    rhs = [(1 << i, bits.codes[..., i]) for i in range(n)] if cs.wants_constraints else []
    meq.enforce_equal(n, ws, rhs)
    out_value = None if value is None else np.broadcast_to(value, shape).astype(np.uint32)
    return UInt32(np.ascontiguousarray(bits.codes[..., :32]), np.full(32, VAR, dtype=np.int8), out_value)


# ---------------------------------------------------------------------------------------------
# the compression and the hash


def _s(cs: ConstraintSystem, name: str, x: UInt32, r1: int, r2: int, r3: int, shift: bool) -> UInt32:
    """x >>> r1 ^ x >>> r2 ^ (x >> r3 or x >>> r3) as two xors (bellman's order)."""
    t = xor(cs, f"{name} first xor", x.rotr(r1), x.rotr(r2))
    return xor(cs, f"{name} second xor", t, x.shr(r3) if shift else x.rotr(r3))


def sha256_compression(
    cs: ConstraintSystem, name: str, state_words: Sequence[UInt32], block_bits: Var | Bits | Sequence[UInt32]
) -> list[UInt32]:
    """One compression with bellman's structure: the 8 state words and a 512-bit block (bits in
    bellman's order, or 16 words) -> the 8 new state words. One MultiEq per call, flushed at its end."""
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
        meq = MultiEq(cs)
        for t in range(16, 64):
            with cs.namespace(f"w{t}"):
                s0 = _s(cs, "s0", w[t - 15], 7, 18, 3, True)
                s1 = _s(cs, "s1", w[t - 2], 17, 19, 10, True)
                w.append(addmany(cs, "sum", meq, [w[t - 16], s0, w[t - 7], s1]))
        st = list(state_words)
        a_def: list[UInt32] | UInt32 = st[0]  # a list: a deferred sum
        e_def: list[UInt32] | UInt32 = st[4]
        b, c, d, f, g, h = st[1], st[2], st[3], st[5], st[6], st[7]

        def compute(x: list[UInt32] | UInt32, others: list[UInt32], what: str) -> UInt32:
            return x if isinstance(x, UInt32) else addmany(cs, what, meq, [*x, *others])

        for t in range(64):
            with cs.namespace(f"round {t}"):
                e = compute(e_def, [], "e")
                S1 = _s(cs, "S1", e, 6, 11, 25, False)
                chv = ch(cs, "ch", e, f, g)
                temp1 = [h, S1, chv, UInt32.constant(K[t]), w[t]]
                a = compute(a_def, [], "a")
                S0 = _s(cs, "S0", a, 2, 13, 22, False)
                mj = maj(cs, "maj", a, b, c)
                h, g, f = g, f, e
                e_def = [*temp1, d]
                d, c, b = c, b, a
                a_def = [*temp1, S0, mj]
        out = [compute(a_def, [st[0]], "h0")]
        out += [addmany(cs, f"h{i}", meq, [st[i], x]) for i, x in ((1, b), (2, c), (3, d))]
        out.append(compute(e_def, [st[4]], "h4"))
        out += [addmany(cs, f"h{i}", meq, [st[i], x]) for i, x in ((5, f), (6, g), (7, h))]
        meq.flush()
        return out


def sha256_words(cs: ConstraintSystem, name: str, message_bits: Var | Bits, values: np.ndarray | None = None) -> list[UInt32]:
    """bellman's ``sha256`` of a batch of messages (*B, n bits, bellman's order): the 8 digest words."""
    msg = Bits.of(cs, message_bits, values)
    if len(msg) % 8:
        raise SynthesisError(f"{cs.path(name)}: {len(msg)} bits are not whole bytes")
    full = concat_bits([msg, Bits.constant(padding(len(msg)))])
    state = [UInt32.constant(v) for v in IV]
    with cs.namespace(name):
        for i in range(len(full) // 512):
            state = sha256_compression(cs, f"block {i}", state, full[512 * i : 512 * (i + 1)])
    return state


def sha256(cs: ConstraintSystem, name: str, message_bits: Var | Bits, values: np.ndarray | None = None) -> Bits:
    """bellman's ``sha256``: the digest bits (*B, 256), each word most significant bit first."""
    msg = Bits.of(cs, message_bits, values)
    return words_bits_be(sha256_words(cs, name, msg), msg.shape)
