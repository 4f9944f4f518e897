"""BLS12-381 fields: constants, vectorised Fr arithmetic (numba), NTTs."""

import numba as _numba

# The daemon calls numba's parallel kernels from several threads at once; the "workqueue" layer
# aborts on that, so require a thread-safe layer: OpenMP (libgomp, present wherever gcc is) or TBB.
_numba.config.THREADING_LAYER = "threadsafe"
