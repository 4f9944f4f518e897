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
from typing import Any

from .formats import Proof
from .keys import VerifyingKey


def _public_ok(vk: VerifyingKey, public: list[int]) -> bool:
    r = vk.curve.r
    return len(public) == vk.n_public and all(0 <= x < r for x in public)


def _points_ok(vk: VerifyingKey, p: Proof) -> bool:
    # point objects are always on their curve; the subgroup check is what a decoder may skip; a proof of
    # another curve than the key's is simply invalid
    if p.curve != vk.curve:
        return False
    return bool(p.a.is_in_subgroup() and p.b.is_in_subgroup() and p.c.is_in_subgroup())


def public_commitment(vk: VerifyingKey, public: list[int]) -> Any:
    if not public:
        return vk.ic[0]
    lib = vk.curve.lib
    return vk.ic[0] + lib.G1Point.multiexp_unchecked(vk.ic[1:], [lib.Scalar(x) for x in public])


def verify(vk: VerifyingKey, public: list[int], proof: Proof) -> bool:
    """True iff the proof is valid for these public signals."""
    if not _public_ok(vk, public) or not _points_ok(vk, proof):
        return False
    cpub = public_commitment(vk, public)
    return bool(vk.curve.lib.GT.pairing_check([-proof.a, cpub, proof.c, vk.alpha1], [proof.b, vk.gamma2, vk.delta2, vk.beta2]))


def verify_batch(vk: VerifyingKey, items: list[tuple[list[int], Proof]]) -> bool:
    """True iff every (public, proof) pair is valid (probabilistic, error <= 2^-128)."""
    if not items:
        return True
    if len(items) == 1:
        return verify(vk, *items[0])
    lib = vk.curve.lib
    g1s, g2s = [], []
    acc_pub = lib.G1Point.identity()
    acc_c = lib.G1Point.identity()
    rho_sum = 0
    for public, proof in items:
        if not _public_ok(vk, public) or not _points_ok(vk, proof):
            return False
        rho = secrets.randbits(128) | 1
        rs = lib.Scalar(rho)
        g1s.append(-(proof.a * rs))
        g2s.append(proof.b)
        acc_pub = acc_pub + public_commitment(vk, public) * rs
        acc_c = acc_c + proof.c * rs
        rho_sum = (rho_sum + rho) % vk.curve.r
    g1s += [acc_pub, acc_c, vk.alpha1 * lib.Scalar(rho_sum)]
    g2s += [vk.gamma2, vk.delta2, vk.beta2]
    return bool(lib.GT.pairing_check(g1s, g2s))
