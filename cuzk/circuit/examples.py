"""Example circuits written in Python: the demo and test circuits, and the synthesis benchmarks.

* :class:`Cube` — x^3 + x + 5 = y, the smallest useful circuit (y public, x private).

Each takes its topology as parameters (``CircuitSpec("cuzk.circuit.examples:Cube", {...})``), reads its
per-proof inputs from a JSON object, and can make valid random inputs (:meth:`Circuit.sample_inputs`).
"""

from __future__ import annotations

import random
from typing import Any

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
