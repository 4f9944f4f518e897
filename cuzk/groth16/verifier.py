"""Groth16 verification: one proof, or many proofs against one key in a single batched check.

Single: e(-A, B) * e(IC_0 + sum_i x_i IC_i, gamma2) * e(C, delta2) * e(alpha1, beta2) == 1.

Batched (random linear combination with fresh 128-bit weights rho_k): the product over k of the single
equations raised to rho_k collapses to one multi-pairing of N + 3 terms:
prod_k e(-rho_k A_k, B_k) * e(sum rho_k cpub_k, gamma2) * e(sum rho_k C_k, delta2) * e((sum rho_k) alpha1, beta2).
A batch that passes is valid except with probability about 2^-128; one that fails is re-checked proof by
proof by the caller when it needs to know which.
"""

from __future__ import annotations

import secrets

from py_arkworks_bls12381 import GT, G1Point

from ..curve.msm import scalar
from ..field.constants import R
from .formats import Proof
from .keys import VerifyingKey


def _public_ok(vk: VerifyingKey, public: list[int]) -> bool:
    return len(public) == vk.n_public and all(0 <= x < R for x in public)


def _points_ok(p: Proof) -> bool:
    # arkworks objects are always on the curve; the subgroup check is what a decoder may skip
    return p.a.is_in_subgroup() and p.b.is_in_subgroup() and p.c.is_in_subgroup()


def public_commitment(vk: VerifyingKey, public: list[int]) -> G1Point:
    if not public:
        return vk.ic[0]
    return vk.ic[0] + G1Point.multiexp_unchecked(vk.ic[1:], [scalar(x) for x in public])


def verify(vk: VerifyingKey, public: list[int], proof: Proof) -> bool:
    """True iff the proof is valid for these public signals."""
    if not _public_ok(vk, public) or not _points_ok(proof):
        return False
    cpub = public_commitment(vk, public)
    return GT.pairing_check([-proof.a, cpub, proof.c, vk.alpha1], [proof.b, vk.gamma2, vk.delta2, vk.beta2])


def verify_batch(vk: VerifyingKey, items: list[tuple[list[int], Proof]]) -> bool:
    """True iff every (public, proof) pair is valid (probabilistic, error <= 2^-128)."""
    if not items:
        return True
    if len(items) == 1:
        return verify(vk, *items[0])
    g1s, g2s = [], []
    acc_pub = G1Point.identity()
    acc_c = G1Point.identity()
    rho_sum = 0
    for public, proof in items:
        if not _public_ok(vk, public) or not _points_ok(proof):
            return False
        rho = secrets.randbits(128) | 1
        rs = scalar(rho)
        g1s.append(-(proof.a * rs))
        g2s.append(proof.b)
        acc_pub = acc_pub + public_commitment(vk, public) * rs
        acc_c = acc_c + proof.c * rs
        rho_sum = (rho_sum + rho) % R
    g1s += [acc_pub, acc_c, vk.alpha1 * scalar(rho_sum)]
    g2s += [vk.gamma2, vk.delta2, vk.beta2]
    return GT.pairing_check(g1s, g2s)
