"""CPU multi-scalar multiplication through arkworks, spread over a thread pool.

The arkworks binding's ``multiexp_unchecked`` runs single-threaded but releases the GIL, so an MSM is
cut into one chunk per worker thread and the partial sums are added (measured on 2 cores: two 2^15 MSMs
in 0.67 s on two threads vs 1.55 s one after the other). Zero scalars are dropped before the call.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np
from py_arkworks_bls12381 import Scalar

from ..field import fr

_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def worker_count() -> int:
    env = os.environ.get("CUZK_CPU_THREADS")
    if env:
        return max(1, int(env))
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1))


def pool() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=worker_count(), thread_name_prefix="cuzk-msm")
        return _pool


def scalars_from_fr(v: np.ndarray) -> tuple[np.ndarray, list[Scalar]]:
    """(indices of non-zero entries, their arkworks Scalars) of a Montgomery Fr vector."""
    canon = fr.from_mont(np.ascontiguousarray(v))
    nz = np.flatnonzero(canon.any(axis=1))
    raw = canon[nz].tobytes()
    from_le = Scalar.from_le_bytes
    return nz, [from_le(raw[32 * i : 32 * i + 32]) for i in range(nz.shape[0])]


class PendingMSM:
    """An MSM in flight on the pool: ``result()`` waits and sums the chunks."""

    def __init__(self, group, futures: list[Future]):
        self.group = group
        self.futures = futures

    def result(self):
        acc = self.group.identity()
        for f in self.futures:
            acc = acc + f.result()
        return acc


def msm_submit(group, points: list, v: np.ndarray, chunks: int | None = None) -> PendingMSM:
    """Start sum_i v[i] * points[i] (v a Montgomery Fr vector, len(v) <= len(points))."""
    if v.shape[0] > len(points):
        raise ValueError(f"MSM with {v.shape[0]} scalars but only {len(points)} bases")
    nz, scalars = scalars_from_fr(v)
    if not scalars:
        return PendingMSM(group, [])
    bases = [points[i] for i in nz.tolist()]
    k = max(1, min(chunks or worker_count(), len(scalars) // 256 or 1))
    step = -(-len(scalars) // k)
    ex = pool()
    futs = [ex.submit(group.multiexp_unchecked, bases[i : i + step], scalars[i : i + step]) for i in range(0, len(scalars), step)]
    return PendingMSM(group, futs)


def scalar(x: int) -> Scalar:
    return Scalar.from_le_bytes((x % fr.R).to_bytes(32, "little"))
