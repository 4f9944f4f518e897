"""cuzk: a persistent, GPU-resident Groth16 proving engine for BLS12-381.

Layers (imports flow one way): field/curve -> r1cs -> groth16 -> gpu -> engine -> server -> cli/bench.
"""

__version__ = "0.1.0"


class CuzkError(Exception):
    """An error caused by the user's input or environment.

    The command line prints ``str(err)`` as a single line and exits non-zero; no traceback.
    """
