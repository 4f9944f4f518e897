"""Bench-only CUDA kernels: ``probe.cu`` (multiply-rate probes, test and benchmark bases), loaded as
module "probe" through the production build (cuzk/backends/gpu/build.py), never by the prover.

Importing this package registers the module; its headers come from cuzk/backends/gpu/kernels.
"""

from __future__ import annotations

from pathlib import Path

from ...backends.gpu import build

PROBE = Path(__file__).resolve().parent / "probe.cu"
MODULES = ("probe",)

build.register_module("probe", PROBE)
