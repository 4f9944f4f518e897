"""Circuits written in Python: the constraint-system API, the gadgets, and circuits' recordings.

``cs.py`` (the interface and its recording, witness-only and test implementations), ``lc.py`` (batches
of variables, linear combinations, field-element arrays), ``circuit.py`` (the Circuit base class, specs
``package.module:ClassName``, recordings cached on disk, witness worker processes), ``split.py`` (one
witness computed in parts over a batched circuit's units), ``gadgets/`` (booleans and bits, numbers,
32-bit words, SHA-256, Poseidon, Merkle paths).
"""

from .cs import ConstraintSystem, Layout, RecordingCS, SynthesisError, TestCS, WitnessCS
from .lc import LC, FieldArray, Var, concat, lc_sum, stack

__all__ = [
    "LC",
    "ConstraintSystem",
    "FieldArray",
    "Layout",
    "RecordingCS",
    "SynthesisError",
    "TestCS",
    "Var",
    "WitnessCS",
    "concat",
    "lc_sum",
    "stack",
]
