"""GPU backend: CUDA kernels (``kernels/*.cu``, compiled at run time with NVRTC) and their wrappers.

Nothing here is imported by the CPU path; CuPy is imported only when a GPU operation is asked for.
"""

from __future__ import annotations

import functools


@functools.lru_cache(maxsize=1)
def available() -> bool:
    """True when CuPy imports and sees at least one CUDA device."""
    try:
        import cupy

        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:
        return False
