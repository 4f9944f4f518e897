"""Proving backends: the primitives the Groth16 recipe (:mod:`cuzk.groth16.prover`) runs on.

``cpu`` (numba kernels and the curve's CPU point library) and ``gpu`` (CUDA kernels compiled with
NVRTC, in ``gpu/kernels`` next to their wrappers). A backend never imports the prover.
"""
