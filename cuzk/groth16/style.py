"""The two Groth16 parameter styles as one object each: everything the recipe does differently for them.

* snarkjs (circom's keys, any curve): roots of unity from the curve's snarkjs generator; c = a * b on the
  domain rows (the zkey has no C matrix); the quotient scalars are the evaluations of a*b - c on the odd
  coset of the 2n-domain (shift = a primitive 2n-th root), used as they are (the H basis absorbs 1/Z);
  the per-wire A, B1, B2 vectors hold points at infinity for absent wires, skipped with their scalars.
* bellperson (Filecoin's .params, BLS12-381 only): roots from the multiplicative generator 7, coset
  shift 7; c = C w; h = coset-iNTT((a*b - c) / Z(shift)) in coefficient form, of which the H MSM takes
  the first n - 1; the A and B vectors cover the inputs and the aux wires in each matrix's density.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..curves import Curve
from .keys import BELLPERSON, SNARKJS, ProvingKey

BELLPERSON_GENERATOR = 7  # blstrs' / bellperson's multiplicative generator of BLS12-381's Fr


@dataclass(frozen=True)
class MsmSpec:
    """One witness-side MSM: the result's name, its group, the key vector, where its scalars come from."""

    name: str  # "a", "b1", "b2", "l"
    group: int
    bases: str
    scalars: str  # "w" (all wires), "aux" (the private wires), "a"/"b" (a bellperson index of wires)
    skip_infinity: bool = False


class KeyStyle:
    name: str
    c_is_ab: bool  # the C evaluations are a * b (no C matrix in the key)
    h_in_coefficients: bool  # the H scalars are coefficients of h (divide by Z, coset iNTT, n - 1 terms)
    witness_msms: tuple[MsmSpec, ...]

    def root_generator(self, curve: Curve) -> int:
        raise NotImplementedError

    def coset_shift(self, curve: Curve, log_n: int) -> int:
        raise NotImplementedError

    def check_curve(self, curve: Curve) -> None:
        """Raise ValueError when this style does not exist on ``curve``."""


class SnarkjsStyle(KeyStyle):
    name = SNARKJS
    c_is_ab = True
    h_in_coefficients = False
    # G2 first: on the CPU it is the longest, and the G1 MSMs and the quotient overlap with it
    witness_msms = (
        MsmSpec("b2", 2, "b2", "w", skip_infinity=True),
        MsmSpec("a", 1, "a", "w", skip_infinity=True),
        MsmSpec("b1", 1, "b1", "w", skip_infinity=True),
        MsmSpec("l", 1, "l", "aux"),
    )

    def root_generator(self, curve: Curve) -> int:
        return curve.root_generator

    def coset_shift(self, curve: Curve, log_n: int) -> int:
        return curve.root_of_unity(log_n + 1)


class BellpersonStyle(KeyStyle):
    name = BELLPERSON
    c_is_ab = False
    h_in_coefficients = True
    witness_msms = (
        MsmSpec("b2", 2, "b2", "b"),
        MsmSpec("a", 1, "a", "a"),
        MsmSpec("b1", 1, "b1", "b"),
        MsmSpec("l", 1, "l", "aux"),
    )

    def root_generator(self, curve: Curve) -> int:
        return BELLPERSON_GENERATOR

    def coset_shift(self, curve: Curve, log_n: int) -> int:
        return BELLPERSON_GENERATOR

    def check_curve(self, curve: Curve) -> None:
        if not curve.bellperson:
            raise ValueError(f"bellperson-style keys exist only on BLS12-381, not on {curve}")


STYLES: dict[str, KeyStyle] = {SNARKJS: SnarkjsStyle(), BELLPERSON: BellpersonStyle()}


def style_of(pk: ProvingKey | str) -> KeyStyle:
    return STYLES[pk if isinstance(pk, str) else pk.style]
