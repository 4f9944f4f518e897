#!/usr/bin/env python3
"""End-to-end GPU Groth16 proving: synthetic circuits, GPU dev setup, per-phase breakdown.

For each case (shape:log2 size): build the circuit and its witness (cuzk.r1cs.synthetic), make keys
with the GPU setup (bellperson style for porep shapes, snarkjs style for dense), prove once to warm up,
then --reps times on the GPU backend; report the median total and phases (CUDA events), peak GPU
memory and host RSS. The CPU backend on small cases gives the ratio. Every proof is verified.

    python bench/gpu_prove.py --cases dense:20 dense:22 porep:24 --cpu-cases dense:16 --reps 3
    (porep:130M proves a 130,278,860-constraint circuit: a PoRep partition, domain 2^27)
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import sys
import time
from pathlib import Path

import cupy

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from cuzk.groth16 import prover, verifier  # noqa: E402
from cuzk.gpu import setup as gsetup  # noqa: E402
from cuzk.r1cs import synthetic  # noqa: E402
from cuzk.timing import Timer  # noqa: E402


def parse_case(spec: str) -> tuple[str, int, str]:
    shape, size = spec.split(":")
    if size.upper().endswith("M"):
        n = int(float(size[:-1]) * 1e6)
        if n == 130_000_000:
            n = 130_278_869  # the PoRep 32 GiB partition's constraint count
        label = f"{shape} {size}"
    else:
        n = synthetic.fit_domain(shape, int(size))
        label = f"{shape} 2^{size}"
    return shape, n, label


def run_case(spec: str, backend: str, reps: int) -> dict:
    shape, n, label = parse_case(spec)
    t = time.perf_counter()
    circ = synthetic.make(shape, n, seed=1)
    t_synth = time.perf_counter() - t
    style = "bellperson" if shape == "porep" else "snarkjs"
    pool = cupy.get_default_memory_pool()
    tm = Timer()
    t = time.perf_counter()
    pk = gsetup.setup(circ.pce, style, timer=tm, quiet=True, host_copy=(backend == "cpu"))
    t_setup = time.perf_counter() - t
    if backend == "cpu":
        from cuzk.gpu.backend import evict_device_key

        evict_device_key(pk, cupy.cuda.Device().id)
        pool.free_all_blocks()
        pk.load_all()
    res = prover.prove(pk, circ.witness, backend=backend)  # warm-up
    assert verifier.verify(pk.vk, res.public, res.proof)
    totals, phases = [], []
    peak = 0
    for _ in range(reps):
        res = prover.prove(pk, circ.witness, backend=backend)
        assert verifier.verify(pk.vk, res.public, res.proof)
        totals.append(res.timings["total"] / 1e3)
        phases.append(res.timings)
        peak = max(peak, pool.total_bytes())
    med = {k: statistics.median(p[k] for p in phases) for k in phases[0]}
    row = {
        "case": label, "backend": backend, "constraints": circ.pce.n_constraints, "domain_log": pk.domain_log,
        "synth_s": t_synth, "setup_s": t_setup, "setup_phases_ms": tm.phases,
        "total_s": {"median": statistics.median(totals), "min": min(totals), "max": max(totals), "runs": totals},
        "phases_ms": med, "gpu_pool_peak_gib": peak / 2**30,
        "host_rss_gib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20,
    }
    gpu_part = sum(v for k, v in med.items() if k not in ("finalize", "verify", "total"))
    row["gpu_part_s"] = gpu_part / 1e3
    print(f"{label:<14} {backend}: total {row['total_s']['median']:.3f} s ({min(totals):.3f}-{max(totals):.3f}), "
          f"GPU part {row['gpu_part_s']:.3f} s, setup {t_setup:.1f} s, synth {t_synth:.1f} s, "
          f"GPU pool {row['gpu_pool_peak_gib']:.1f} GiB, RSS {row['host_rss_gib']:.1f} GiB", flush=True)
    print("    " + " ".join(f"{k}={v:.1f}" for k, v in med.items()), flush=True)
    del pk, circ
    pool.free_all_blocks()
    return row


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", nargs="*", default=["dense:20", "dense:22", "dense:24", "dense:26", "porep:24", "porep:26", "porep:130M"])
    ap.add_argument("--cpu-cases", nargs="*", default=["dense:16", "dense:18", "dense:20"])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--json", default="")
    a = ap.parse_args()
    rows = []
    for c in a.cases:
        rows.append(run_case(c, "gpu", a.reps))
    for c in a.cpu_cases:
        rows.append(run_case(c, "cpu", 1))
    if a.json:
        Path(a.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
