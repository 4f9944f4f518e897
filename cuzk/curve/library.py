"""What a CPU point library provides, and the thread pool the libraries share.

A curve descriptor names its library (:attr:`cuzk.curves.Curve.cpu_library`); the rest of cuzk reaches
group arithmetic only through it. A library is a module with:

* ``G1Point``, ``G2Point``, ``GT``, ``Scalar``: py-arkworks-bls12381's Python API (``G1Point()`` is the
  generator, ``identity()``, ``+ - *``, ``is_in_subgroup()``, ``to_xy_bytes_le()`` /
  ``from_xy_bytes_unchecked_le()`` (on-curve checked), ``multiexp_unchecked()``; ``GT.pairing()``,
  ``GT.pairing_check()``, ``str(gt)`` the hex of the 12 Fq coefficients in arkworks' order);
* ``load_bases(group, raw, n, what)``: a LEM point vector in the form ``msm`` wants (validated);
* ``msm_submit(group, bases, scalars, index=None)``: start sum_i scalars[i] * bases[index[i]] (scalars
  canonical (k, 4) uint64 limbs; ``index`` None = the first k bases) and return a future;
* ``fixed_base_mul(group, base, scalars)``: scalars[i] * base for many canonical scalars, as LEM rows.

``cuzk.curve.arkworks_bls12_381`` wraps arkworks (BLS12-381); ``cuzk.curve.bn254`` is cuzk's own numba
library (BN254).
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import Future, ThreadPoolExecutor

_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def worker_count() -> int:
    """Threads for CPU MSMs: CUZK_CPU_THREADS, else the cores this process may use."""
    env = os.environ.get("CUZK_CPU_THREADS")
    if env:
        return max(1, int(env))
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1))


def pool() -> ThreadPoolExecutor:
    """The shared pool of MSM worker threads (the libraries release the GIL inside their kernels)."""
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=worker_count(), thread_name_prefix="cuzk-msm")
        return _pool


class Done:
    """A future that is already resolved."""

    def __init__(self, value):
        self.value = value

    def result(self, timeout=None):
        return self.value


class SumOf:
    """A future for the sum of partial results (chunks of one MSM on the pool)."""

    def __init__(self, identity, futures: list[Future]):
        self.identity = identity
        self.futures = futures

    def result(self, timeout=None):
        acc = self.identity
        for f in self.futures:
            acc = acc + f.result(timeout)
        return acc


_driver: ThreadPoolExecutor | None = None


def _driver_pool() -> ThreadPoolExecutor:
    """One thread that runs the MSMs of libraries whose ``msm`` blocks and uses every core itself:
    one MSM at a time, each as fast as the machine allows, in submission order."""
    global _driver
    with _pool_lock:
        if _driver is None:
            _driver = ThreadPoolExecutor(max_workers=1, thread_name_prefix="cuzk-msm-driver")
        return _driver


def submit_msm(lib, group: int, bases, scalars, index=None):
    """Start an MSM through ``lib`` (canonical scalars; ``index`` maps scalars to bases, None = the first
    len(scalars) bases) and return a future."""
    if hasattr(lib, "msm_submit"):
        return lib.msm_submit(group, bases, scalars, index)
    if index is not None:  # a library without index support: zero scalars where no index points
        import numpy as np

        full = np.zeros((len(bases), 4), dtype=np.uint64)
        full[index] = scalars
        scalars = full
    return _driver_pool().submit(lib.msm, group, bases, scalars)
