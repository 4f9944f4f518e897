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


def settings_reference(name: str) -> list[tuple[str, object, str]]:
    """(key, default, what it does) of a backend's TOML table (``[gpu]``); empty for a backend without one."""
    if name != "gpu":
        return []
    import dataclasses

    from .gpu.config import GpuConfig

    def toml_default(f: dataclasses.Field) -> object:  # the value as the [gpu] table spells it
        if f.metadata.get("kind") == "module_defines":
            return {}
        if f.metadata.get("kind") == "defines":
            return ""
        return f.default

    return [(f.name, toml_default(f), f.metadata.get("doc", "")) for f in dataclasses.fields(GpuConfig)]


def check_settings(name: str, table: dict[str, object], prefix: str = "") -> None:
    """Validate a backend's TOML table without a device (ValueError naming the key, as ``prefix`` + key or
    "[gpu] key", and what is expected)."""
    if name == "gpu":
        from .gpu.config import GpuConfig

        GpuConfig.from_mapping(table, prefix=prefix or "[gpu] ")
    elif table:
        raise ValueError(f"[{name}]: this backend has no settings")


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
                if not gpu_available():
                    raise CuzkError(
                        "backend gpu: no CUDA device (CuPy is not installed or sees no GPU; "
                        "pip install -e '.[gpu]' on a machine with one, or use the cpu backend)"
                    )
                from .gpu.backend import GpuBackend

                be = GpuBackend()
            else:
                raise CuzkError(f"unknown backend {name!r}: expected cpu, gpu or auto")
            _backends[name] = be
        return be
