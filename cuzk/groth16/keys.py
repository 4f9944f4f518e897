"""Groth16 keys held in memory, independent of their file format.

A :class:`ProvingKey` keeps the SRS point vectors as raw LEM bytes (the layout of snarkjs zkeys and of
our GPU kernels: affine, little-endian Montgomery coordinates, infinity = zeros) and converts them to
arkworks objects only when the CPU backend first needs them (``g1(name)`` / ``g2(name)``), once.

Two parameter styles exist and decide how the prover builds H and which wires each MSM covers:

* ``snarkjs``: A, B1, B2 hold one point per wire (infinity where the wire is absent); C holds one per
  private wire; H holds n points [L_{2j+1}^{(2n)}(tau)/delta] (odd-coset Lagrange basis); the quotient
  scalars are evaluations on the odd coset of the 2n-domain (roots from generator 5).
* ``bellperson``: A holds all inputs then aux wires in A's density; B1/B2 the inputs and aux wires in
  B's density; L one point per aux wire; H holds n-1 points [tau^i Z(tau)/delta]; the quotient is in
  coefficient form, computed on the multiplicative coset g = 7 (roots from generator 7).
"""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass, field

import numpy as np
from py_arkworks_bls12381 import G1Point, G2Point

from ..curve import points as pts
from ..r1cs.pce import CSR

SNARKJS = "snarkjs"
BELLPERSON = "bellperson"


@dataclass
class VerifyingKey:
    alpha1: G1Point
    beta2: G2Point
    gamma2: G2Point
    delta2: G2Point
    ic: list[G1Point]
    beta1: G1Point | None = None
    delta1: G1Point | None = None

    @property
    def n_public(self) -> int:
        return len(self.ic) - 1


_G1_VECTORS = ("a", "b1", "l", "h")
_G2_VECTORS = ("b2",)


@dataclass(eq=False)
class ProvingKey:
    """Everything the prover needs for one circuit."""

    style: str
    n_vars: int  # wires, including the constant wire 0
    n_public: int  # public signals (wires 1..n_public)
    domain_log: int
    vk: VerifyingKey
    # raw LEM point vectors: "a", "b1", "b2", "l" (the private-wire query: zkey section 8 "C"), "h"
    raw: dict[str, memoryview | bytes]
    # evaluation matrices over the domain rows (snarkjs: from the zkey coefficient section, public rows
    # included; C is None because snarkjs takes c = a*b). bellperson: A, B, C of the R1CS plus input rows.
    A: CSR
    B: CSR
    C: CSR | None
    # bellperson: which aux wires the A / B vectors cover, and which inputs B covers
    a_aux_density: np.ndarray | None = None
    b_inp_density: np.ndarray | None = None
    b_aux_density: np.ndarray | None = None
    source: str = ""
    _objs: dict = field(default_factory=dict, repr=False)

    @property
    def domain_size(self) -> int:
        return 1 << self.domain_log

    def count(self, name: str) -> int:
        size = pts.G2_BYTES if name in _G2_VECTORS else pts.G1_BYTES
        return len(self.raw[name]) // size

    def g1(self, name: str) -> list[G1Point]:
        """The named G1 vector as arkworks points (converted once, then cached)."""
        if name not in self._objs:
            self._objs[name] = pts.g1_from_lem(self.raw[name], self.count(name), f"{self.source}: {name} points")
        return self._objs[name]

    def g2(self, name: str) -> list[G2Point]:
        if name not in self._objs:
            self._objs[name] = pts.g2_from_lem(self.raw[name], self.count(name), f"{self.source}: {name} points")
        return self._objs[name]

    def load_all(self) -> None:
        """Convert every vector now (the daemon's HOT tier for the CPU backend)."""
        for n in _G1_VECTORS:
            self.g1(n)
        for n in _G2_VECTORS:
            self.g2(n)

    def drop_objects(self) -> None:
        """Forget the CPU-side point objects (the HOT form of the CPU backend); device copies stay."""
        for k in _G1_VECTORS + _G2_VECTORS:
            self._objs.pop(k, None)

    def nonzero_mask(self, name: str) -> np.ndarray:
        """Which points of a vector are not the point at infinity (cheap, from the raw bytes)."""
        key = ("mask", name)
        if key not in self._objs:
            size = pts.G2_BYTES if name in _G2_VECTORS else pts.G1_BYTES
            arr = np.frombuffer(self.raw[name], dtype=np.uint64).reshape(-1, size // 8)
            self._objs[key] = arr.any(axis=1)
        return self._objs[key]

    def raw_bytes(self) -> int:
        return sum(len(v) for v in self.raw.values())

    @functools.cached_property
    def fingerprint(self) -> str:
        """Identifies the key (circuit + toxic waste): hash of the header points and the IC."""
        h = hashlib.sha256()
        h.update(self.style.encode())
        h.update(pts.g1_to_lem([self.vk.alpha1]) + pts.g2_to_lem([self.vk.beta2, self.vk.gamma2, self.vk.delta2]))
        h.update(pts.g1_to_lem(self.vk.ic))
        h.update(bytes(self.raw["h"][: pts.G1_BYTES]))
        return h.hexdigest()[:16]
