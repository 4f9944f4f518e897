"""The quotient (H) scalars of a Groth16 proof, for both parameter styles, on the CPU.

snarkjs: for X in (a, b, c): X_odd = NTT(iNTT(X) * omega_2n^k), the evaluations on the odd coset of
the 2n-domain; d = A_odd * B_odd - C_odd (no division: the zkey's H basis absorbs Z). Roots from 5.

bellperson: X_g = NTT(iNTT(X) * g^k) on the coset g = 7; h = iNTT_g((A_g * B_g - C_g) / (g^n - 1)), in
coefficient form; the H MSM uses its first n - 1 coefficients. Roots from 7.
"""

from __future__ import annotations

import numpy as np

from ..field import fr
from ..field.constants import BELLPERSON_GENERATOR, SNARKJS_ROOT_GENERATOR, R, root_of_unity
from ..field.ntt import domain
from ..timing import Timer
from .keys import SNARKJS


def pad(v: np.ndarray, n: int) -> np.ndarray:
    if v.shape[0] == n:
        return v
    if v.shape[0] > n:
        raise ValueError(f"evaluation vector of {v.shape[0]} rows exceeds the domain of {n}")
    out = fr.zeros(n)
    out[: v.shape[0]] = v
    return out


def coset_params(style: str, log_n: int) -> tuple[int, int]:
    """(root generator, coset shift) for a parameter style."""
    if style == SNARKJS:
        return SNARKJS_ROOT_GENERATOR, root_of_unity(log_n + 1, SNARKJS_ROOT_GENERATOR)
    return BELLPERSON_GENERATOR, BELLPERSON_GENERATOR


def quotient_scalars(
    style: str, log_n: int, a: np.ndarray, b: np.ndarray, c: np.ndarray, timer: Timer | None = None
) -> np.ndarray:
    """H-MSM scalars (Montgomery Fr vector: n entries for snarkjs, n - 1 for bellperson)."""
    timer = timer or Timer()
    n = 1 << log_n
    gen, shift = coset_params(style, log_n)
    dom = domain(log_n, gen)
    evals = []
    for name, v in (("a", a), ("b", b), ("c", c)):
        x = pad(v, n).copy()
        with timer.phase(f"ntt_{name}"):
            dom.intt(x, inplace=True)
            dom.coset_ntt(x, shift, inplace=True)
        evals.append(x)
    with timer.phase("ntt_h"):
        h = fr.mul_sub(evals[0], evals[1], evals[2], out=evals[0])
        if style != SNARKJS:
            z_inv = pow((pow(shift, n, R) - 1) % R, -1, R)
            fr.scale(h, z_inv, out=h)
            dom.coset_intt(h, shift, inplace=True)
            h = h[: n - 1]
    return h
