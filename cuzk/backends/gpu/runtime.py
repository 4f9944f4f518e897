"""Kernel launches with errors that name the operation, and device-memory helpers."""

from __future__ import annotations

from contextlib import contextmanager

import cupy
import numpy as np

from ... import CuzkError
from . import config
from .build import curve_of, load_module

BLOCK = 256


class GpuError(CuzkError):
    """A CUDA error, named with the operation and sizes that caused it."""


class GpuOutOfMemory(GpuError):
    pass


_kernels: dict[tuple, object] = {}


def env_choice(name: str, choices: tuple[str, ...]) -> str:
    """The switch behind environment variable ``name`` in the process-wide config (config.py), in its
    environment spelling. Kept for callers that still name a switch by its variable (backend.py's
    CUZK_UPLOAD_COPY); the config has validated it against the same choices."""
    value = config.current().env_value(name)
    if value not in choices:
        raise ValueError(f"{name}={value!r}: expected {' or '.join(choices)}")
    return value


def kernel(module: str, name: str, curve=None):
    """A kernel of ``module`` built with the configured #defines (GpuConfig.defines) for ``curve``
    (default BLS12-381), for the current device."""
    dev = cupy.cuda.Device().id
    defines = config.current().defines(module)
    cname = None if curve is None else curve_of(curve).name
    key = (module, defines, cname, name, dev)
    k = _kernels.get(key)
    if k is None:
        k = load_module(module, defines, cname).get_function(name)
        _kernels[key] = k
    return k


def launch(
    module: str, name: str, grid: int | tuple[int, int], block: int, args: tuple, op: str, shared: int = 0, curve=None
) -> None:
    """Launch a kernel; ``grid`` is x or (x, y) blocks. With GpuConfig.sync_launch (CUZK_SYNC_LAUNCH=1)
    wait for it, so that an asynchronous fault (illegal address) is reported against the kernel that made
    it, with its grid and argument shapes (debugging only)."""
    g = tuple(int(x) for x in grid) if isinstance(grid, tuple) else (int(grid),)
    if min(g) <= 0:
        return
    try:
        kernel(module, name, curve)(g, (int(block),), args, shared_mem=shared)
        if config.current().sync_launch:
            cupy.cuda.get_current_stream().synchronize()
    except (cupy.cuda.driver.CUDADriverError, cupy.cuda.runtime.CUDARuntimeError) as e:
        shapes = ", ".join(f"{a.shape}" if hasattr(a, "shape") else repr(a) for a in args)
        raise GpuError(f"{op}: kernel {module}.{name} (grid {g} x {block}, args {shapes}) failed: {e}") from None


def grid_for(n: int, block: int = BLOCK) -> int:
    return (int(n) + block - 1) // block


@contextmanager
def op_errors(op: str):
    """Turn CUDA errors and allocation failures inside the block into GpuError naming ``op``."""
    try:
        yield
    except cupy.cuda.memory.OutOfMemoryError as e:
        raise GpuOutOfMemory(f"{op}: out of GPU memory ({e})") from None
    except (cupy.cuda.driver.CUDADriverError, cupy.cuda.runtime.CUDARuntimeError) as e:
        # debugging (CUZK_SYNC_LAUNCH=1): keep the call that saw the error in the traceback
        raise GpuError(f"{op}: CUDA error: {e}") from (e if config.current().sync_launch else None)


def synchronize(op: str) -> None:
    with op_errors(op):
        cupy.cuda.get_current_stream().synchronize()


def u32(x: int) -> np.uint32:
    return np.uint32(x)
