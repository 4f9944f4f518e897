"""Curve descriptors: everything cuzk knows about a pairing-friendly curve, in one place per curve.

A :class:`Curve` holds the two moduli, the generators, the two-adicity and the root-of-unity generator
snarkjs uses, the byte sizes and encodings of points, the names snarkjs writes in its JSON files, the
CPU point library that does the group arithmetic, and the constants the GPU kernels are compiled with.
Adding a curve means adding one module here (and, for its CPU group arithmetic, a point library).

Files carry their curve: ``.r1cs``, ``.wtns`` and ``.zkey`` headers state the scalar field's prime,
and :func:`by_scalar_prime` maps it back to a descriptor, so a curve is detected, never assumed.
"""

from __future__ import annotations

import functools
import importlib
from dataclasses import dataclass, field
from types import ModuleType

from ..field.prime import PrimeField, limbs


@dataclass(frozen=True)
class Curve:
    name: str  # our name: "bls12_381", "bn254"
    title: str  # for messages: "BLS12-381", "BN254"
    snarkjs_name: str  # the "curve" field snarkjs writes in proof.json / verification_key.json
    json_names: tuple[str, ...]  # names accepted when reading JSON (snarkjs' first)
    circom_prime: str  # `circom --prime NAME` for circuits over this scalar field
    r: int  # scalar field (Fr) modulus
    q: int  # base field (Fq) modulus
    fq_limbs: int  # 64-bit limbs of a base-field coordinate (6 for 381 bits, 4 for 254)
    root_generator: int  # snarkjs' roots of unity: generator^((r-1)/2^k) (ffjavascript's first non-residue)
    g1: tuple[int, int]  # affine generators
    g2: tuple[tuple[int, int], tuple[int, int]]  # ((x.c0, x.c1), (y.c0, y.c1)); Fq2 = Fq[u]/(u^2 + 1)
    b: int  # y^2 = x^3 + b on G1
    b2: tuple[int, int]  # twist coefficient of G2
    cpu_library: str  # module implementing the CPU point library (see cuzk.curve.library)
    proof_bytes: int  # length of the binary proof encoding (bellperson's compressed 192; EVM 256)
    bellperson: bool = False  # Filecoin/bellperson `.params` and compressed proofs exist for this curve
    extra: dict[str, object] = field(default_factory=dict, compare=False, hash=False)

    # ---- sizes

    @property
    def n8r(self) -> int:
        return 32

    @property
    def n8q(self) -> int:
        return 8 * self.fq_limbs

    @property
    def g1_bytes(self) -> int:
        """Affine G1 point, x || y (LEM or canonical LE)."""
        return 2 * self.n8q

    @property
    def g2_bytes(self) -> int:
        return 4 * self.n8q

    def point_bytes(self, group: int) -> int:
        return self.g1_bytes if group == 1 else self.g2_bytes

    # ---- fields

    @functools.cached_property
    def fr(self) -> PrimeField:
        return PrimeField(f"{self.title} Fr", self.r)

    @functools.cached_property
    def fq(self) -> PrimeField | None:
        """The base field as a vector field, where it fits four limbs (BN254); None for BLS12-381."""
        return PrimeField(f"{self.title} Fq", self.q) if self.fq_limbs == 4 else None

    @property
    def two_adicity(self) -> int:
        return self.fr.two_adicity

    def root_of_unity(self, log_n: int, generator: int | None = None) -> int:
        return self.fr.root_of_unity(log_n, self.root_generator if generator is None else generator)

    # ---- the CPU point library

    @functools.cached_property
    def lib(self) -> ModuleType:
        """The CPU point library: G1Point, G2Point, GT, Scalar (arkworks' Python API) plus the bulk
        operations of :mod:`cuzk.curve.library` (imported on first use)."""
        return importlib.import_module(self.cpu_library)

    # ---- GPU

    def gpu_preamble(self) -> str:
        """#defines the CUDA kernels are compiled with (the kernel cache is keyed by them)."""
        lines = [f"// generated from cuzk/curves ({self.name})", f"#define CUZK_CURVE_{self.name.upper()} 1"]
        for prefix, p, n64 in (("FR", self.r, 4), ("FQ", self.q, self.fq_limbs)):
            n = 2 * n64
            one, r2 = pow(2, 64 * n64, p), pow(2, 128 * n64, p)
            lines.append(f"#define CUZK_{prefix}_LIMBS {n}")
            lines.append(f"#define CUZK_{prefix}_BITS {p.bit_length()}")
            lines.append(f"#define CUZK_{prefix}_P {_limbs32(p, n)}")
            lines.append(f"#define CUZK_{prefix}_NP0 0x{(-pow(p, -1, 2**32)) % 2**32:08x}u")
            lines.append(f"#define CUZK_{prefix}_ONE {_limbs32(one, n)}")
            lines.append(f"#define CUZK_{prefix}_R2 {_limbs32(r2, n)}")
            lines.append(f"#define CUZK_{prefix}_PM2 {_limbs32(p - 2, n)}")  # Fermat exponent
            lines.append(f"#define CUZK_{prefix}_PSQ {_limbs32(p * p, 2 * n)}")  # p^2: offset of lazy sums
        return "\n".join(lines) + "\n"

    def __str__(self) -> str:
        return self.title


def _limbs32(x: int, n: int) -> str:
    return ", ".join(f"0x{(x >> (32 * i)) & 0xFFFFFFFF:08x}u" for i in range(n))


class CurveError(ValueError):
    """An unknown curve name or prime."""


_MODULES = ("bls12_381", "bn254")


@functools.cache
def all_curves() -> tuple[Curve, ...]:
    return tuple(importlib.import_module(f"{__name__}.{m}").CURVE for m in _MODULES)


def get(name: str | Curve) -> Curve:
    """A curve by our name, its snarkjs/circom name or a common alias ("bn128", "bls12-381", ...)."""
    if isinstance(name, Curve):
        return name
    key = name.lower().replace("-", "").replace("_", "")
    for c in all_curves():
        names = {c.name, c.snarkjs_name, c.circom_prime, *c.json_names}
        if key in {n.lower().replace("-", "").replace("_", "") for n in names}:
            return c
    known = ", ".join(c.name for c in all_curves())
    raise CurveError(f"unknown curve {name!r}: expected one of {known}")


def by_scalar_prime(prime: int) -> Curve | None:
    """The curve whose scalar field has this prime (as r1cs / wtns / zkey headers state it)."""
    for c in all_curves():
        if c.r == prime:
            return c
    return None


def by_base_prime(prime: int) -> Curve | None:
    for c in all_curves():
        if c.q == prime:
            return c
    return None


def names() -> list[str]:
    return [c.name for c in all_curves()]


__all__ = ["Curve", "CurveError", "all_curves", "by_base_prime", "by_scalar_prime", "get", "limbs", "names"]
