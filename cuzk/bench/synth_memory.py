"""Where a Python circuit's synthesis holds its memory, phase by phase (BENCHMARKS.md section 6):

    python -m cuzk.bench.synth_memory cuzk.circuit.examples:MerkleInclusion --circuit-params JSON [--json F]

Runs, in one process and in this order: the recording's synthesize (the constraint-system calls, with
the recording's per-block work), its ``finish`` (the CSR matrices), one witness and one mat-vec
(A.w, B.w, C.w), and reports for each phase the peak resident memory (Linux's VmHWM, reset before the
phase through /proc/self/clear_refs) and the resident memory after it, with the bytes the recording
holds between the phases (its pending chunks and blocks) and the matrices' bytes. Sampling instead of
the kernel's high-water mark would miss the short peaks of a sort.
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import time
from typing import Any

import numpy as np


def _status(field: str) -> float:
    """A /proc/self/status memory field in MiB."""
    with open("/proc/self/status", encoding="ascii") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    raise RuntimeError(f"/proc/self/status has no {field}")


def _reset_peak() -> None:
    with open("/proc/self/clear_refs", "w", encoding="ascii") as fh:
        fh.write("5")  # "reset the peak resident set size" (Linux >= 4.0)


def _held(obj: Any) -> int:
    """Bytes of the numpy arrays reachable from nested lists / tuples / dicts / dataclasses (views counted
    once)."""
    seen: set[int] = set()
    total = 0
    stack = [obj]
    while stack:
        x = stack.pop()
        if isinstance(x, np.ndarray):
            base = x
            while isinstance(base.base, np.ndarray):
                base = base.base
            if id(base) not in seen:
                seen.add(id(base))
                total += base.nbytes
        elif isinstance(x, (list, tuple)):
            stack.extend(x)
        elif isinstance(x, dict):
            stack.extend(x.values())
        elif hasattr(x, "__dataclass_fields__"):
            stack.extend(vars(x).values())
    return total


def run(spec: str, params: Any, seed: int = 0) -> dict[str, Any]:
    from ..circuit.circuit import CircuitSpec, witness
    from ..circuit.cs import RecordingCS

    circuit = CircuitSpec.parse(spec, params).load()
    inputs = circuit.partition_inputs(circuit.sample_inputs(seed))[0]
    phases: dict[str, dict[str, float]] = {}
    gc.collect()
    base = _status("VmRSS")

    def phase(name: str, t0: float, **extra: float) -> None:
        phases[name] = {
            "s": time.perf_counter() - t0,
            "peak_rss_mib": _status("VmHWM"),
            "rss_after_mib": _status("VmRSS"),
            **extra,
        }
        print(f"{name:<12} {phases[name]}", file=sys.stderr, flush=True)

    cs = RecordingCS(circuit.curve_)
    _reset_peak()
    t = time.perf_counter()
    circuit.synthesize(cs, None)
    held = _held([cs.__dict__[k] for k in vars(cs) if k.startswith("_") and k not in ("_path",)])
    phase("synthesize", t, recording_held_mib=held / 2**20)
    _reset_peak()
    t = time.perf_counter()
    pce = cs.finish()
    layout = cs.layout()
    del cs
    gc.collect()
    nnz = [m.nnz for m in (pce.A, pce.B, pce.C)]
    phase("finish", t, matrices_mib=pce.memory_bytes() / 2**20)
    _reset_peak()
    t = time.perf_counter()
    w = witness(circuit, inputs, layout)
    phase("witness", t, witness_mib=w.nbytes / 2**20)
    _reset_peak()
    t = time.perf_counter()
    abc = pce.evaluate(w)
    phase("matvec", t)
    bad = pce.unsatisfied(w)
    del abc
    return {
        "circuit": spec,
        "params": circuit.params,
        "constraints": layout.n_constraints,
        "wires": layout.n_wires,
        "nnz": nnz,
        "nnz_per_constraint": sum(nnz) / max(1, layout.n_constraints),
        "matrix_kind": type(pce.A).__name__,
        "rss_before_mib": base,
        "phases": phases,
        "satisfied": bool(bad.size == 0),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("circuit")
    ap.add_argument("--circuit-params", metavar="JSON")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", help="also write the figures here")
    a = ap.parse_args(argv)
    r = run(a.circuit, a.circuit_params, a.seed)
    if a.json:
        with open(a.json, "w", encoding="utf-8") as fh:
            json.dump(r, fh, indent=1)
    print(json.dumps(r, indent=1))
    return 0 if r["satisfied"] else 1


if __name__ == "__main__":
    sys.exit(main())
