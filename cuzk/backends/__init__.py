"""Proving backends: the primitives the Groth16 recipe (:mod:`cuzk.groth16.prover`) runs on.

``cpu`` (numba kernels and the curve's CPU point library) and ``gpu`` (CUDA kernels compiled with
NVRTC, in ``gpu/kernels`` next to their wrappers). Both implement :class:`cuzk.groth16.backend.Backend`;
a backend never imports the prover.
"""

from __future__ import annotations

import threading

from .. import CuzkError
from ..groth16.backend import Backend

_backends: dict[str, Backend] = {}
_lock = threading.Lock()


def gpu_available() -> bool:
    """True when CuPy imports and sees at least one CUDA device."""
    from . import gpu

    return gpu.available()


def get_backend(name: str = "cpu") -> Backend:
    """The process-wide backend "cpu" or "gpu", or "auto" (the GPU when CuPy sees one, else the CPU)."""
    if name == "auto":
        name = "gpu" if gpu_available() else "cpu"
    with _lock:
        be = _backends.get(name)
        if be is None:
            if name == "cpu":
                from .cpu import CpuBackend

                be = CpuBackend()
            elif name == "gpu":
                from .gpu.backend import GpuBackend

                be = GpuBackend()
            else:
                raise CuzkError(f"unknown backend {name!r}: expected cpu, gpu or auto")
            _backends[name] = be
        return be
