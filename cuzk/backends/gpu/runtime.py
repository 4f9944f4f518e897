"""Kernel launches with errors that name the operation, and device-memory helpers."""

from __future__ import annotations

import os
from contextlib import contextmanager

import cupy
import numpy as np

from ... import CuzkError
from .build import MODULES, load_module

BLOCK = 256


class GpuError(CuzkError):
    """A CUDA error, named with the operation and sizes that caused it."""


class GpuOutOfMemory(GpuError):
    pass


_kernels: dict[tuple, object] = {}


# Kernel variants (#defines) per module, e.g. {"msm": (("CUZK_MUL_PTX", "1"),)}: set by benchmarks, or from
# the environment: CUZK_KERNEL_DEFINES="CUZK_MUL_PTX=1,CUZK_ACC_MINB=3" for every module, and
# CUZK_KERNEL_DEFINES_<MODULE> (e.g. CUZK_KERNEL_DEFINES_MSM) for one module, in its place (bisecting a
# fault down to one module).
def _env_defines(module: str) -> tuple[tuple[str, str], ...]:
    spec = os.environ.get(f"CUZK_KERNEL_DEFINES_{module.upper()}", os.environ.get("CUZK_KERNEL_DEFINES", ""))
    return tuple(tuple(kv.split("=", 1)) for kv in spec.split(",") if kv)  # type: ignore[misc]


VARIANTS: dict[str, tuple[tuple[str, str], ...]] = {m: _env_defines(m) for m in MODULES}


def env_choice(name: str, choices: tuple[str, ...]) -> str:
    """A host-side switch read from the environment: one of ``choices``, the first when unset."""
    value = os.environ.get(name, choices[0])
    if value not in choices:
        raise ValueError(f"{name}={value!r}: expected {' or '.join(choices)}")
    return value


def kernel(module: str, name: str):
    dev = cupy.cuda.Device().id
    defines = VARIANTS.get(module, ())
    key = (module, defines, name, dev)
    k = _kernels.get(key)
    if k is None:
        k = load_module(module, defines).get_function(name)
        _kernels[key] = k
    return k


# CUZK_SYNC_LAUNCH=1: wait for every kernel at its launch, so an asynchronous fault (illegal address)
# is reported against the kernel that made it, with its grid and argument shapes (debugging only).
SYNC_LAUNCH = os.environ.get("CUZK_SYNC_LAUNCH", "0") == "1"


def launch(module: str, name: str, grid: int | tuple[int, int], block: int, args: tuple, op: str, shared: int = 0) -> None:
    """Launch a kernel; ``grid`` is x or (x, y) blocks."""
    g = tuple(int(x) for x in grid) if isinstance(grid, tuple) else (int(grid),)
    if min(g) <= 0:
        return
    try:
        kernel(module, name)(g, (int(block),), args, shared_mem=shared)
        if SYNC_LAUNCH:
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
        raise GpuError(f"{op}: CUDA error: {e}") from (e if SYNC_LAUNCH else None)


def synchronize(op: str) -> None:
    with op_errors(op):
        cupy.cuda.get_current_stream().synchronize()


def u32(x: int) -> np.uint32:
    return np.uint32(x)
