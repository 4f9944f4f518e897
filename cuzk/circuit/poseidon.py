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

__all__ = ["permute", "permute_optimized", "poseidon_hash", "poseidon_hash_batch", "poseidon_trace"]


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


def permute_optimized(state: list[int], P: PoseidonParams) -> list[int]:
    """The same permutation in its optimized form (:meth:`PoseidonParams.optimized`): cheap partial rounds."""
    opt = P.optimized()
    s = [x % R for x in state]
    h = P.half_full
    for rnd in range(P.n_rounds):
        rc = opt.round_constants[rnd]
        if P.is_full(rnd):
            s = [pow((x + c) % R, 5, R) for x, c in zip(s, rc, strict=True)]
            s = [sum(a * b for a, b in zip(row, s, strict=True)) % R for row in opt.matrices[rnd]]
        else:
            x0 = pow((s[0] + rc[0]) % R, 5, R)
            row, col = opt.sparse_row[rnd - h], opt.sparse_col[rnd - h]
            s = [(row[0] * x0 + sum(a * b for a, b in zip(row[1:], s[1:], strict=True))) % R] + [
                (col[i] * x0 + s[i]) % R for i in range(1, P.t)
            ]
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
def _mul(a, b, m):
    """Montgomery product of two 4-limb rows (1-d views)."""
    return mont4.mul(a[0], a[1], a[2], a[3], b[0], b[1], b[2], b[3], m[0], m[1], m[2], m[3], m[4])


@nb.njit(inline="always", cache=True)
def _add(a, b, m):
    """Sum of two 4-limb values (tuples)."""
    return mont4.add(a[0], a[1], a[2], a[3], b[0], b[1], b[2], b[3], m[0], m[1], m[2], m[3])


@nb.njit(inline="always", cache=True)
def _put(dst, v):
    dst[0], dst[1], dst[2], dst[3] = v[0], v[1], v[2], v[3]


@nb.njit(parallel=True, cache=True)
def _k_poseidon(inp, tag, rc, mats, sp_row, sp_col, half, r_p, trace, want_trace, out, m):
    """inp (N, arity, 4) -> out (N, 4), the optimized form (PoseidonParams.optimized(): rc, dense mats of
    the full rounds, sparse rows / columns of the partial rounds). With want_trace, trace[k, s] = (x^2,
    x^4, x^5) of every S-box s whose input is not constant (all but round 0's element 0), in round order
    (the S-box inputs are the plain permutation's)."""
    n = inp.shape[0]
    t = mats.shape[1]
    n_rounds = rc.shape[0]
    zero = (np.uint64(0), np.uint64(0), np.uint64(0), np.uint64(0))
    for c in nb.prange((n + _CHUNK - 1) // _CHUNK):
        s = np.empty((t, 4), dtype=np.uint64)
        u = np.empty((t, 4), dtype=np.uint64)
        x2 = np.empty(4, dtype=np.uint64)
        x4 = np.empty(4, dtype=np.uint64)
        for k in range(c * _CHUNK, min(n, (c + 1) * _CHUNK)):
            s[0] = tag
            s[1:] = inp[k]
            si = 0
            for rnd in range(n_rounds):
                full = rnd < half or rnd >= half + r_p
                n_sb = t if full else 1
                for i in range(n_sb):  # ARK (a partial round: element 0 only) and S-box
                    _put(s[i], _add(s[i], rc[rnd, i], m))
                    _put(x2, _mul(s[i], s[i], m))
                    _put(x4, _mul(x2, x2, m))
                    _put(s[i], _mul(x4, s[i], m))
                    if want_trace and (rnd > 0 or i > 0):
                        trace[k, si, 0] = x2
                        trace[k, si, 1] = x4
                        trace[k, si, 2] = s[i]
                        si += 1
                if full:  # dense matrix
                    for i in range(t):
                        acc = zero
                        for j in range(t):
                            acc = _add(acc, _mul(mats[rnd, i, j], s[j], m), m)
                        _put(u[i], acc)
                    s[:] = u
                else:  # sparse: s[0] = row . s, s[i] += col[i] * s[0]
                    pr = rnd - half
                    acc = zero
                    for j in range(t):
                        acc = _add(acc, _mul(sp_row[pr, j], s[j], m), m)
                    for i in range(1, t):
                        _put(s[i], _add(s[i], _mul(sp_col[pr, i], s[0], m), m))
                    _put(s[0], acc)
            out[k] = s[1]


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
    opt = P.optimized()
    _k_poseidon(
        mont,
        P.tag_mont,
        opt.rc_mont,
        opt.mat_mont,
        opt.row_mont,
        opt.col_mont,
        P.half_full,
        P.r_p,
        trace,
        want_trace,
        out,
        P.field.m,
    )
    return out, trace


def poseidon_hash_batch(inputs: FieldArray | np.ndarray, arity: int | None = None) -> np.ndarray:
    """N Merkle-tree Poseidon hashes at once: inputs (N, arity, 4) Montgomery (or a FieldArray of shape
    (N, arity)) -> (N, 4) Montgomery."""
    return _run(_as_mont(inputs, arity), False)[0]


def poseidon_trace(inputs: FieldArray | np.ndarray, arity: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The hashes (N, 4) and every non-constant S-box's (x^2, x^4, x^5), (N, t * R_F + R_P - 1, 3, 4),
    Montgomery: the witness of the circuit gadget."""
    return _run(_as_mont(inputs, arity), True)
