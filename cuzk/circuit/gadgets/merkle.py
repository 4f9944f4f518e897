"""Merkle inclusion: a leaf, its path of siblings and its index (little-endian bits) recompute a root.

Two trees, as Filecoin builds them:

* binary trees hashed with SHA-256 truncated to 254 bits (the data tree, CommD/CommP): at each level the
  index bit says whether the current node is the right child; one conditional swap and one hash;
* arity-8 (or any power-of-two arity) Poseidon trees (tree_c, tree_r_last): at each level log2(arity)
  index bits place the current node among the arity - 1 siblings (an "insert": a one-hot of the bits
  and two selects per position), then one Poseidon hash of the arity children.

Batch-first: ``leaf`` is a field variable of batch shape (*B), ``siblings`` (*B, depth) or
(*B, depth, arity - 1), ``index_bits`` (*B, depth * log2(arity)) boolean variables (least significant
first: the bits of the leaf's index). The gadgets return the computed root (*B); compare it with
:func:`.num.assert_equal` to a public root.
"""

from __future__ import annotations

from ..cs import ConstraintSystem, SynthesisError
from ..lc import LC, Operand, Var, as_lc
from .num import select, swap


def root_sha256_254(cs: ConstraintSystem, name: str, leaf: Operand, siblings: Var, index_bits: Var) -> Var:
    """The root of a binary SHA-256-254 tree from a leaf, its siblings (*B, depth) and index bits."""
    from .sha256 import hash2_sha256_254

    depth = siblings.shape[-1]
    if index_bits.shape[-1] != depth:
        raise SynthesisError(f"{cs.path(name)}: {index_bits.shape[-1]} index bits for a path of depth {depth}")
    cur: Operand = leaf
    with cs.namespace(name):
        for level in range(depth):
            with cs.namespace(f"level {level}"):
                left, right = swap(cs, "swap", index_bits[..., level], cur, siblings[..., level])
                cur = hash2_sha256_254(cs, "hash", left, right)
    assert isinstance(cur, Var)
    return cur


def insert(cs: ConstraintSystem, name: str, element: Operand, bits: Var, others: list[Operand]) -> list[Var]:
    """``others`` (arity - 1 operands) with ``element`` inserted at the position the little-endian
    ``bits`` give (arity = 2^len(bits) children)."""
    k = bits.shape[-1]
    arity = 1 << k
    if len(others) != arity - 1:
        raise SynthesisError(f"{cs.path(name)}: {len(others)} siblings for arity {arity}")
    with cs.namespace(name):
        # one-hot of the position: e[j] = prod_i (bit_i if bit i of j else 1 - bit_i); products of a
        # non-constant LC with a bit cost one constraint, the complementary product is linear
        onehot: list[LC] = [as_lc(1)]
        for i in range(k):
            b = bits[..., i]
            high = []
            for j, p in enumerate(onehot):
                if i == 0:
                    high.append(b.lc())
                    continue
                pv = (lambda p=p, b=b: cs.value(p) * cs.value(b)) if cs.has_values else None
                prod = cs.alloc(f"onehot {j} bit {i}", pv, b.shape)
                cs.enforce(f"onehot {j} bit {i}", p, b, prod)
                high.append(prod.lc())
            onehot = [p - h for p, h in zip(onehot, high, strict=True)] + high
        out: list[Var] = []
        before: LC = as_lc(0)  # 1 when the element sits before position j
        for j in range(arity):
            if j == 0:
                shifted: Operand = others[0]
            elif j == arity - 1:
                shifted = others[arity - 2]
            else:
                shifted = select(cs, f"position {j} shift", before, others[j - 1], others[j])
            out.append(select(cs, f"position {j}", onehot[j], element, shifted))
            before = before + onehot[j]
        return out


def root_poseidon(cs: ConstraintSystem, name: str, leaf: Operand, siblings: Var, index_bits: Var, arity: int = 8) -> Var:
    """The root of a Poseidon tree of ``arity`` from a leaf, siblings (*B, depth, arity - 1) and the
    index bits (*B, depth * log2(arity))."""
    from .poseidon import poseidon_hash

    k = arity.bit_length() - 1
    if arity != 1 << k or arity < 2:
        raise SynthesisError(f"{cs.path(name)}: arity {arity} is not a power of two")
    depth = siblings.shape[-2]
    if siblings.shape[-1] != arity - 1 or index_bits.shape[-1] != depth * k:
        raise SynthesisError(
            f"{cs.path(name)}: siblings {siblings.shape} and index bits {index_bits.shape} do not fit depth {depth}, arity {arity}"
        )
    cur: Operand = leaf
    with cs.namespace(name):
        for level in range(depth):
            with cs.namespace(f"level {level}"):
                others: list[Operand] = [siblings[..., level, j] for j in range(arity - 1)]
                children = insert(cs, "insert", cur, index_bits[..., level * k : (level + 1) * k], others)
                cur = poseidon_hash(cs, "hash", children, arity)
    assert isinstance(cur, Var)
    return cur
