"""Poseidon hashing as Filecoin does it (neptune, HashType::MerkleTree), for BLS12-381 Fr: one hash on
Python ints, and batches of N hashes at once with a numba kernel (the fast path for witnesses and trees).

The permutation is the plain one (neptune's ``hash_correct``): R_F/2 full rounds, R_P partial rounds,
R_F/2 full rounds, each ARK, S-box x^5 (all elements / element 0), MDS. State[0] is the domain tag
2^arity - 1, state[1..] the inputs; the hash is state[1]. Parameters: :mod:`.poseidon_params`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numba as nb
import numpy as np

from ..field import mont4
from .lc import FieldArray
from .poseidon_params import PoseidonParams, R, params

__all__ = ["permute", "poseidon_hash", "poseidon_hash_batch", "poseidon_trace"]


def permute(state: list[int], P: PoseidonParams) -> list[int]:
    """The plain permutation on Python ints (reference; one state of t elements)."""
    s = [x % R for x in state]
    t = P.t
    for rnd in range(P.n_rounds):
        rc = P.rc(rnd)
        s = [(x + c) % R for x, c in zip(s, rc, strict=True)]
        if P.is_full(rnd):
            s = [pow(x, 5, R) for x in s]
        else:
            s[0] = pow(s[0], 5, R)
        s = [sum(P.mds[i][j] * s[j] for j in range(t)) % R for i in range(t)]
    return s


def poseidon_hash(values: Sequence[int], arity: int | None = None) -> int:
    """One Merkle-tree Poseidon hash of ``arity`` (default: len(values)) field elements."""
    arity = len(values) if arity is None else arity
    if len(values) != arity:
        raise ValueError(f"Poseidon of arity {arity}: got {len(values)} values")
    P = params(arity)
    return permute([P.domain_tag, *[int(v) for v in values]], P)[1]


# ---------------------------------------------------------------------------------------------
# batches: one numba kernel runs whole permutations, instances in parallel

_CHUNK = 256


@nb.njit(inline="always", cache=True)
def _mul_into(dst, i, a, ia, b, ib, p0, p1, p2, p3, inv):
    r = mont4.mul(a[ia, 0], a[ia, 1], a[ia, 2], a[ia, 3], b[ib, 0], b[ib, 1], b[ib, 2], b[ib, 3], p0, p1, p2, p3, inv)
    dst[i, 0], dst[i, 1], dst[i, 2], dst[i, 3] = r


@nb.njit(parallel=True, cache=True)
def _k_poseidon(inp, tag, rc, mds, half, r_p, trace, want_trace, out, m):
    """inp (N, arity, 4) -> out (N, 4); with want_trace, trace[k, s] = (x^2, x^4, x^5) of every S-box s
    whose input is not constant (all but round 0's element 0), in round order."""
    p0, p1, p2, p3, inv = m[0], m[1], m[2], m[3], m[4]
    n = inp.shape[0]
    t = mds.shape[0]
    n_rounds = rc.shape[0]
    n_chunks = (n + _CHUNK - 1) // _CHUNK
    for c in nb.prange(n_chunks):
        s = np.empty((t, 4), dtype=np.uint64)
        u = np.empty((t, 4), dtype=np.uint64)
        x2 = np.empty((1, 4), dtype=np.uint64)
        x4 = np.empty((1, 4), dtype=np.uint64)
        for k in range(c * _CHUNK, min(n, (c + 1) * _CHUNK)):
            for w in range(4):
                s[0, w] = tag[w]
            for i in range(1, t):
                for w in range(4):
                    s[i, w] = inp[k, i - 1, w]
            si = 0
            for rnd in range(n_rounds):
                # ARK
                for i in range(t):
                    r = mont4.add(
                        s[i, 0],
                        s[i, 1],
                        s[i, 2],
                        s[i, 3],
                        rc[rnd, i, 0],
                        rc[rnd, i, 1],
                        rc[rnd, i, 2],
                        rc[rnd, i, 3],
                        p0,
                        p1,
                        p2,
                        p3,
                    )
                    s[i, 0], s[i, 1], s[i, 2], s[i, 3] = r
                # S-boxes
                n_sb = t if (rnd < half or rnd >= half + r_p) else 1
                for i in range(n_sb):
                    _mul_into(x2, 0, s, i, s, i, p0, p1, p2, p3, inv)
                    _mul_into(x4, 0, x2, 0, x2, 0, p0, p1, p2, p3, inv)
                    _mul_into(s, i, x4, 0, s, i, p0, p1, p2, p3, inv)
                    if want_trace and (rnd > 0 or i > 0):
                        for w in range(4):
                            trace[k, si, 0, w] = x2[0, w]
                            trace[k, si, 1, w] = x4[0, w]
                            trace[k, si, 2, w] = s[i, w]
                        si += 1
                # MDS
                for i in range(t):
                    a0 = a1 = a2 = a3 = np.uint64(0)
                    for j in range(t):
                        q = mont4.mul(
                            mds[i, j, 0],
                            mds[i, j, 1],
                            mds[i, j, 2],
                            mds[i, j, 3],
                            s[j, 0],
                            s[j, 1],
                            s[j, 2],
                            s[j, 3],
                            p0,
                            p1,
                            p2,
                            p3,
                            inv,
                        )
                        a0, a1, a2, a3 = mont4.add(a0, a1, a2, a3, q[0], q[1], q[2], q[3], p0, p1, p2, p3)
                    u[i, 0], u[i, 1], u[i, 2], u[i, 3] = a0, a1, a2, a3
                for i in range(t):
                    for w in range(4):
                        s[i, w] = u[i, w]
            for w in range(4):
                out[k, w] = s[1, w]


def _as_mont(inputs: FieldArray | np.ndarray, arity: int | None) -> np.ndarray:
    mont = inputs.mont if isinstance(inputs, FieldArray) else np.asarray(inputs)
    if mont.ndim != 3 or mont.shape[2] != 4 or mont.dtype != np.uint64:
        raise ValueError(f"Poseidon batch: expected (N, arity, 4) uint64 Montgomery values, got {mont.shape} {mont.dtype}")
    if arity is not None and mont.shape[1] != arity:
        raise ValueError(f"Poseidon batch of arity {arity}: inputs have {mont.shape[1]} per hash")
    return np.ascontiguousarray(mont)


def _run(mont: np.ndarray, want_trace: bool) -> tuple[np.ndarray, np.ndarray]:
    P = params(mont.shape[1])
    n = mont.shape[0]
    out = np.empty((n, 4), dtype=np.uint64)
    trace = np.empty((n if want_trace else 0, P.n_sboxes - 1, 3, 4), dtype=np.uint64)
    _k_poseidon(mont, P.tag_mont, P.rc_mont, P.mds_mont, P.half_full, P.r_p, trace, want_trace, out, P.field.m)
    return out, trace


def poseidon_hash_batch(inputs: FieldArray | np.ndarray, arity: int | None = None) -> np.ndarray:
    """N Merkle-tree Poseidon hashes at once: inputs (N, arity, 4) Montgomery (or a FieldArray of shape
    (N, arity)) -> (N, 4) Montgomery."""
    return _run(_as_mont(inputs, arity), False)[0]


def poseidon_trace(inputs: FieldArray | np.ndarray, arity: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The hashes (N, 4) and every non-constant S-box's (x^2, x^4, x^5), (N, t * R_F + R_P - 1, 3, 4),
    Montgomery: the witness of the circuit gadget."""
    return _run(_as_mont(inputs, arity), True)
