"""Example circuits written in Python: the demo and test circuits, and the synthesis benchmarks.

* :class:`Cube` — x^3 + x + 5 = y, the smallest useful circuit (y public, x private).
* :class:`MerkleInclusion` — many challenged leaves of one Poseidon (arity 8) or SHA-256-254 (binary) tree
  against a public root: the core of Filecoin's PoRep / PoSt circuits and the synthesis benchmarks.

Each takes its topology as parameters (``CircuitSpec("cuzk.circuit.examples:Cube", {...})``), reads its
per-proof inputs from a JSON object, and can make valid random inputs (:meth:`Circuit.sample_inputs`).
"""

from __future__ import annotations

import random
from typing import Any

import numpy as np

from .circuit import Circuit, CircuitError
from .cs import ConstraintSystem


def _int(obj: Any, key: str, what: str) -> int:
    """A field element given in JSON as a number or a decimal / 0x-hex string."""
    if not isinstance(obj, dict) or key not in obj:
        raise CircuitError(f"inputs: missing {key!r} ({what})")
    v = obj[key]
    if isinstance(v, bool) or not isinstance(v, (int, str)):
        raise CircuitError(f"inputs.{key}: expected an integer or a decimal/hex string, got {type(v).__name__}")
    if isinstance(v, str):
        if len(v) > 80:
            raise CircuitError(f"inputs.{key}: {len(v)} characters is too long for a field element")
        try:
            v = int(v, 0)
        except ValueError:
            raise CircuitError(f"inputs.{key}: {v!r} is not an integer") from None
    return v


class Cube(Circuit):
    """Knowledge of x with x^3 + x + 5 = y: inputs ``{"x": ...}``, public output y. With ``partitions``
    > 1 a request carries a list of such objects, one proof each."""

    def __init__(self, curve: str = "bls12_381", partitions: int = 1):
        super().__init__(curve=curve, partitions=partitions)
        self.curve = curve
        self.partitions = partitions

    def parse_inputs(self, obj: Any) -> Any:
        return {"x": _int(obj, "x", "the secret")}

    def sample_inputs(self, seed: int = 0) -> Any:
        return {"x": random.Random(seed).randrange(1, 1 << 64)}

    def synthesize(self, cs: ConstraintSystem, inputs: Any) -> None:
        x_val = inputs["x"] if inputs is not None else None
        p = cs.field.p
        y_val = None if x_val is None else (x_val**3 + x_val + 5) % p
        y = cs.alloc_input("y", y_val)
        x = cs.alloc("x", x_val)
        x2 = cs.alloc("x^2", None if x_val is None else x_val * x_val % p)
        x3 = cs.alloc("x^3", None if x_val is None else x_val**3 % p)
        cs.enforce("square", x, x, x2)
        cs.enforce("cube", x2, x, x3)
        cs.enforce("output", x3 + x + 5, cs.one, y)


# ---------------------------------------------------------------------------------------------
# Merkle inclusion: the shape of Filecoin's PoRep and PoSt circuits (many challenged leaves, one root)


def _field_list(obj: Any, key: str, n: int, where: str) -> list[int]:
    v = obj.get(key) if isinstance(obj, dict) else None
    if not isinstance(v, list) or len(v) != n:
        raise CircuitError(f"{where}.{key}: expected a list of {n} field elements")
    return [_int({key: x}, key, where) for x in v]


class MerkleInclusion(Circuit):
    """``challenges`` leaves of one tree, each with its path, against one public root: Poseidon trees of
    ``arity`` 8 (Filecoin's tree_c / tree_r_last) or binary SHA-256-254 trees (``hash = "sha256"``, the
    data tree). Public inputs: the root, then each challenge's leaf index.

    Inputs: ``{"root": R, "challenges": [{"index": i, "leaf": L, "path": [[siblings of level 0], ...]}]}``
    (field elements as integers or decimal / 0x strings; arity - 1 siblings per level)."""

    def __init__(self, depth: int = 4, challenges: int = 2, hash: str = "poseidon", arity: int = 8):
        super().__init__(depth=depth, challenges=challenges, hash=hash, arity=arity)
        if hash not in ("poseidon", "sha256"):
            raise CircuitError(f"MerkleInclusion: hash {hash!r}: expected poseidon or sha256")
        if hash == "sha256":
            arity = 2
        if arity < 2 or arity & (arity - 1):
            raise CircuitError(f"MerkleInclusion: arity {arity} is not a power of two")
        self.depth, self.challenges, self.hash, self.arity = depth, challenges, hash, arity
        self.k = arity.bit_length() - 1
        if depth * self.k > 200 or depth < 1 or challenges < 1:
            raise CircuitError(f"MerkleInclusion: depth {depth} x arity {arity} / {challenges} challenges out of range")

    # -- native side: a sparse tree (challenged leaves random, all others zero)
    def _hash(self, children: list[list[int]]) -> list[int]:
        if self.hash == "sha256":
            from .sha256_native import sha256_254_hash2

            return [sha256_254_hash2(a, b) for a, b in children]
        from .. import curves
        from .poseidon import poseidon_hash_batch

        F = curves.get("bls12_381").fr
        flat = F.from_ints([x for ch in children for x in ch]).reshape(len(children), self.arity, 4)
        return F.to_ints(poseidon_hash_batch(flat))

    def sample_inputs(self, seed: int = 0) -> Any:
        rng = random.Random(seed)
        a, n_leaves = self.arity, self.arity**self.depth
        idx = rng.sample(range(n_leaves), self.challenges) if n_leaves < 1 << 62 else [rng.randrange(n_leaves)]
        levels: list[dict[int, int]] = [{i: rng.randrange(1 << 254) for i in idx}]
        zero = [0]
        for _ in range(self.depth):
            cur = levels[-1]
            parents = sorted({i // a for i in cur})
            kids = [[cur.get(p * a + j, zero[-1]) for j in range(a)] for p in parents]
            levels.append(dict(zip(parents, self._hash(kids), strict=True)))
            zero.append(self._hash([[zero[-1]] * a])[0])
        chals = []
        for i in idx:
            path = []
            for lv in range(self.depth):
                node, base = i // a**lv, (i // a ** (lv + 1)) * a
                path.append([str(levels[lv].get(base + j, zero[lv])) for j in range(a) if base + j != node])
            chals.append({"index": i, "leaf": str(levels[0][i]), "path": path})
        return {"root": str(levels[-1][idx[0] // a**self.depth]), "challenges": chals}

    def parse_inputs(self, obj: Any) -> Any:
        if not isinstance(obj, dict):
            raise CircuitError(f"inputs: expected a JSON object, got {type(obj).__name__}")
        root = _int(obj, "root", "the tree's root")
        ch = obj.get("challenges")
        if not isinstance(ch, list) or len(ch) != self.challenges:
            raise CircuitError(f"inputs.challenges: expected a list of {self.challenges} challenges")
        idx, leaves, paths = [], [], []
        for c, x in enumerate(ch):
            where = f"inputs.challenges[{c}]"
            i = _int(x, "index", "the leaf's index") if isinstance(x, dict) else -1
            if not 0 <= i < self.arity**self.depth:
                raise CircuitError(f"{where}.index: expected a leaf index below {self.arity}^{self.depth}")
            idx.append(i)
            leaves.append(_int(x, "leaf", "the leaf"))
            path = x.get("path")
            if not isinstance(path, list) or len(path) != self.depth:
                raise CircuitError(f"{where}.path: expected {self.depth} levels of {self.arity - 1} siblings")
            for lv, sib in enumerate(path):
                paths.extend(_field_list({"s": sib}, "s", self.arity - 1, f"{where}.path[{lv}]"))
        return {"root": root, "index": idx, "leaf": leaves, "path": paths}

    def split_units(self) -> int:
        return self.challenges

    def split(self, inputs: Any, lo: int, hi: int) -> tuple[Any, dict[str, Any]]:
        """Challenges ``[lo, hi)`` against the same root (:mod:`cuzk.circuit.split`; a part's messages
        count its challenges from 0)."""
        ch = inputs.get("challenges") if isinstance(inputs, dict) else None
        if not isinstance(ch, list) or len(ch) != self.challenges:
            raise CircuitError(f"inputs.challenges: expected a list of {self.challenges} challenges")
        return {**inputs, "challenges": ch[lo:hi]}, {**self.params, "challenges": hi - lo}

    def synthesize(self, cs: ConstraintSystem, inputs: Any) -> None:
        from .gadgets import boolean, merkle, num

        C, d, a = self.challenges, self.depth, self.arity
        v = inputs or {}
        root = cs.alloc_input("root", v.get("root"))
        index = cs.alloc_input("index", v.get("index"), C)
        leaf = cs.alloc("leaf", v.get("leaf"), C)
        sib_vals = None
        if inputs is not None:
            sib_vals = (
                np.array(v["path"], dtype=object).reshape(C, d, a - 1)
                if a > 2
                else np.array(v["path"], dtype=object).reshape(C, d)
            )
        siblings = cs.alloc("path", sib_vals, (C, d, a - 1) if a > 2 else (C, d))
        bits = boolean.to_bits(cs, "index bits", index, d * self.k)
        if self.hash == "sha256":
            computed = merkle.root_sha256_254(cs, "tree", leaf, siblings, bits)
        else:
            computed = merkle.root_poseidon(cs, "tree", leaf, siblings, bits, a)
        num.assert_equal(cs, "root", computed, root)
