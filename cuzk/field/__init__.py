"""BLS12-381 fields: constants, vectorised Fr arithmetic (numba), NTTs."""
