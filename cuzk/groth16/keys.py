"""Groth16 keys held in memory, independent of their file format and of any device.

A :class:`ProvingKey` keeps the SRS point vectors as raw LEM bytes (the layout of snarkjs zkeys and of
our GPU kernels: affine, little-endian Montgomery coordinates, infinity = zeros). Resident forms (point
objects for the CPU, device arrays for a GPU) belong to the backends (:mod:`cuzk.groth16.backend`), which
keep them per key; the key holds only host data and small derived indices.

Keys carry their curve: the verifying key's points are objects of the curve's point library, and
``vk.curve`` / ``pk.curve`` name it. Two parameter styles exist (:mod:`cuzk.groth16.style`):

* ``snarkjs``: A, B1, B2 hold one point per wire (infinity where the wire is absent); C holds one per
  private wire; H holds n points [L_{2j+1}^{(2n)}(tau)/delta] (odd-coset Lagrange basis); the quotient
  scalars are evaluations on the odd coset of the 2n-domain (roots from the curve's snarkjs generator).
* ``bellperson`` (BLS12-381 only): A holds all inputs then aux wires in A's density; B1/B2 the inputs and
  aux wires in B's density; L one point per aux wire; H holds n-1 points [tau^i Z(tau)/delta]; the
  quotient is in coefficient form, computed on the multiplicative coset g = 7 (roots from 7).
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..curve import curve_of
from ..curve import points as pts
from ..curves import Curve
from ..r1cs.pce import CSR

SNARKJS = "snarkjs"
BELLPERSON = "bellperson"

VECTOR_GROUPS = {"a": 1, "b1": 1, "b2": 2, "l": 1, "h": 1}


@dataclass
class VerifyingKey:
    alpha1: Any
    beta2: Any
    gamma2: Any
    delta2: Any
    ic: list[Any]
    beta1: Any = None
    delta1: Any = None

    @property
    def n_public(self) -> int:
        return len(self.ic) - 1

    @property
    def curve(self) -> Curve:
        return curve_of(self.alpha1)


@dataclass(eq=False)
class ProvingKey:
    """Everything the prover needs for one circuit."""

    style: str
    n_vars: int  # wires, including the constant wire 0
    n_public: int  # public signals (wires 1..n_public)
    domain_log: int
    vk: VerifyingKey
    # raw LEM point vectors: "a", "b1", "b2", "l" (the private-wire query: zkey section 8 "C"), "h"
    raw: Mapping[str, memoryview | bytes]
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
    # host-side derived data (masks, indices) and what must live as long as the key (a file mapping)
    _objs: dict[object, Any] = field(default_factory=dict, repr=False)

    @property
    def curve(self) -> Curve:
        return self.vk.curve

    @property
    def domain_size(self) -> int:
        return 1 << self.domain_log

    def count(self, name: str) -> int:
        return len(self.raw[name]) // self.curve.point_bytes(VECTOR_GROUPS[name])

    def points(self, name: str) -> list[Any]:
        """The named vector as point-library objects (decoded now, not cached: the backends keep the
        resident forms)."""
        group = VECTOR_GROUPS[name]
        return pts.from_lem(self.curve, group, self.raw[name], self.count(name), f"{self.source}: {name} points")

    def nonzero_mask(self, name: str) -> np.ndarray:
        """Which points of a vector are not the point at infinity (cheap, from the raw bytes)."""
        key = ("mask", name)
        if key not in self._objs:
            self._objs[key] = pts.nonzero_rows(self.curve, VECTOR_GROUPS[name], self.raw[name])
        mask: np.ndarray = self._objs[key]
        return mask

    def scalar_index(self, name: str) -> np.ndarray:
        """bellperson keys: the witness index of each scalar of the A ("a") or B ("b") vectors (inputs
        then the aux wires in the vector's density)."""
        key = ("index", name)
        if key not in self._objs:
            n_in = self.n_public + 1
            if name == "a":
                assert self.a_aux_density is not None
                idx = np.concatenate([np.arange(n_in), np.flatnonzero(self.a_aux_density) + n_in])
            else:
                assert self.b_inp_density is not None and self.b_aux_density is not None
                idx = np.concatenate([np.flatnonzero(self.b_inp_density), np.flatnonzero(self.b_aux_density) + n_in])
            self._objs[key] = idx.astype(np.int64)
        index: np.ndarray = self._objs[key]
        return index

    def keep_alive(self, obj: object) -> None:
        """Tie ``obj`` (a file mapping the raw vectors view) to the key's lifetime."""
        self._objs.setdefault("_keepalive", []).append(obj)

    def raw_bytes(self) -> int:
        return sum(len(v) for v in self.raw.values())

    def matrix_bytes(self) -> int:
        return sum(m.memory_bytes() for m in (self.A, self.B, self.C) if m is not None)

    @functools.cached_property
    def fingerprint(self) -> str:
        """Identifies the key (curve + circuit + toxic waste): hash of the header points and the IC."""
        c = self.curve
        h = hashlib.sha256()
        h.update(self.style.encode())
        if c.name != "bls12_381":  # BLS12-381 fingerprints stay what they were before keys had curves
            h.update(c.name.encode())
        h.update(pts.to_lem(c, 1, [self.vk.alpha1]) + pts.to_lem(c, 2, [self.vk.beta2, self.vk.gamma2, self.vk.delta2]))
        h.update(pts.to_lem(c, 1, self.vk.ic))
        h.update(bytes(self.raw["h"][: c.g1_bytes]))
        return h.hexdigest()[:16]
