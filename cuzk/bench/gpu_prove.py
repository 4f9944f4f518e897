"""End-to-end GPU Groth16 proving: synthetic circuits, GPU dev setup, per-phase breakdown.

For each case (shape:log2 size): build the circuit and its witness (cuzk.r1cs.synthetic), make keys
with the GPU setup (bellperson style for porep shapes, snarkjs style for dense), prove once to warm up,
then --reps times on the GPU backend; report the median total and phases (CUDA events), peak GPU
memory and host RSS. The CPU backend on small cases gives the ratio. Every proof is verified.

    python -m cuzk.bench.gpu_prove --cases dense:20 dense:22 porep:24 --cpu-cases dense:16 --reps 3 [--b-g2 gpu cpu]
    (porep:130M proves a 130,278,860-constraint circuit: a PoRep partition, domain 2^27)
    python -m cuzk.bench.gpu_prove --curve bn254 --cases hash:22 --cpu-cases --reps 3
    (--curve: the circuits' curve; bellperson keys exist on BLS12-381 only, so BN254 porep shapes get
    snarkjs keys)
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import resource
import statistics
import sys
import time
from pathlib import Path

import cupy

from ..backends import get_backend
from ..backends.gpu import config
from ..backends.gpu import setup as gsetup
from ..curves import Curve
from ..curves import get as get_curve
from ..groth16 import prover, verifier
from ..r1cs import synthetic
from ..timing import Timer


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


def _prove(pk, wit, backend: str, b_g2: str):
    """One proof on ``backend`` with B_G2 placed by the GPU configuration's b_g2 switch."""
    with config.using(dataclasses.replace(config.current(), b_g2=b_g2)):
        return prover.prove(pk, wit, get_backend(backend))


def run_case(
    spec: str, backend: str, reps: int, b_g2: list[str], cpu_b_g2_shapes: list[str], witness_modes: list[str], curve: Curve
) -> dict:
    shape, n, label = parse_case(spec)
    if shape not in cpu_b_g2_shapes:  # a dense full-scalar G2 MSM on CPU threads would take minutes
        b_g2 = [x for x in b_g2 if x != "cpu"] or ["gpu"]
    print(f"{label}: synthesizing {n} constraints", flush=True)
    t = time.perf_counter()
    circ = synthetic.make(shape, n, seed=1, curve=curve)
    t_synth = time.perf_counter() - t
    style = "bellperson" if shape == "porep" and curve.bellperson else "snarkjs"
    pool = cupy.get_default_memory_pool()
    tm = Timer()
    t = time.perf_counter()
    print(f"{label}: {t_synth:.1f} s; GPU setup", flush=True)
    pk = gsetup.setup(
        circ.pce, style, timer=tm, quiet=True, host_copy=True if backend == "cpu" else ({"b2"} if "cpu" in b_g2 else False)
    )
    t_setup = time.perf_counter() - t
    if backend == "cpu":
        from ..backends.gpu.backend import evict_device_key

        evict_device_key(pk, cupy.cuda.Device().id)
        pool.free_all_blocks()
        get_backend("cpu").load_key(pk)
    # configurations (GPU backend only: B_G2 placement x witness memory) are interleaved rep by rep; the
    # first one is the main figure. "pinned": the witness already in page-locked memory, as the daemon's
    # synthesis workers leave it with gpus.pinned_witness (the copy is made here, outside the timing)
    witnesses = {"pageable": circ.witness}
    if backend == "gpu" and "pinned" in witness_modes:
        from ..backends.gpu.backend import to_pinned

        witnesses["pinned"] = to_pinned(circ.witness)
    if backend == "cpu":
        configs = {"": ("gpu", circ.witness)}
    else:
        configs = {
            f"b_g2={x}" + ("" if len(witness_modes) == 1 else f" witness={wm}"): (x, witnesses[wm])
            for x in b_g2
            for wm in witness_modes
        }
    for x, wit in configs.values():  # warm-up
        res = _prove(pk, wit, backend, x)
        assert verifier.verify(pk.vk, res.public, res.proof)
    runs = {k: [] for k in configs}
    peak = 0
    for _ in range(reps):
        for k, (x, wit) in configs.items():
            res = _prove(pk, wit, backend, x)
            assert verifier.verify(pk.vk, res.public, res.proof)
            runs[k].append(res.timings)
            peak = max(peak, pool.total_bytes())
    main_key = next(iter(configs))
    phases = runs[main_key]
    totals = [p["total"] / 1e3 for p in phases]
    med = {k: statistics.median(p[k] for p in phases) for k in phases[0]}
    row = {
        "curve": curve.name,
        "case": label,
        "backend": backend,
        "constraints": circ.pce.n_constraints,
        "domain_log": pk.domain_log,
        "synth_s": t_synth,
        "setup_s": t_setup,
        "setup_phases_ms": tm.phases,
        "total_s": {"median": statistics.median(totals), "min": min(totals), "max": max(totals), "runs": totals},
        "phases_ms": med,
        "gpu_pool_peak_gib": peak / 2**30,
        "host_rss_gib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20,
    }
    row["gpu_part_s"] = med.get("gpu_part", 0.0) / 1e3  # the CPU backend has no GPU part
    if len(runs) > 1:
        row["placements"] = {
            k: {
                "total_median_s": statistics.median(p["total"] for p in v) / 1e3,
                "gpu_part_median_s": statistics.median(p["gpu_part"] for p in v) / 1e3,
                # B_G2 on CPU threads has no phase of its own (it finishes inside "msm")
                "msm_b_g2_median_ms": statistics.median(p.get("msm_b_g2", math.nan) for p in v),
                "upload_median_ms": statistics.median(p["upload"] for p in v),
            }
            for k, v in runs.items()
        }
        for k, v in row["placements"].items():
            print(
                f"    {k}: total {v['total_median_s']:.3f} s, GPU part {v['gpu_part_median_s']:.3f} s, "
                f"msm_b_g2 {v['msm_b_g2_median_ms']:.1f} ms, upload {v['upload_median_ms']:.1f} ms",
                flush=True,
            )
    print(
        f"{curve.name} {label:<14} {backend}: total {row['total_s']['median']:.3f} s ({min(totals):.3f}-{max(totals):.3f}), "
        f"GPU part {row['gpu_part_s']:.3f} s, setup {t_setup:.1f} s, synth {t_synth:.1f} s, "
        f"GPU pool {row['gpu_pool_peak_gib']:.1f} GiB, RSS {row['host_rss_gib']:.1f} GiB",
        flush=True,
    )
    print("    " + " ".join(f"{k}={v:.1f}" for k, v in med.items()), flush=True)
    del pk, circ, witnesses, configs
    pool.free_all_blocks()
    return row


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--cases", nargs="*", default=["dense:20", "dense:22", "dense:24", "dense:26", "porep:24", "porep:26", "porep:130M"]
    )
    ap.add_argument("--cpu-cases", nargs="*", default=["dense:16", "dense:18", "dense:20"])
    ap.add_argument("--curve", default="bls12_381", help="bls12_381 (default) or bn254")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--json", default="")
    ap.add_argument(
        "--witness",
        nargs="+",
        default=["pageable"],
        choices=["pageable", "pinned"],
        help="witness memory to compare on the GPU backend (interleaved): pageable numpy, or already "
        "page-locked as the daemon's gpus.pinned_witness leaves it",
    )
    ap.add_argument(
        "--cpu-b-g2-shapes",
        nargs="*",
        default=["porep"],
        help="shapes on which B_G2 on CPU threads is compared (sparse 0/1 witnesses)",
    )
    ap.add_argument(
        "--b-g2",
        nargs="+",
        default=["gpu", "cpu"],
        choices=["gpu", "cpu"],
        help="B_G2 placements to compare on the GPU backend (interleaved; the first is the main row)",
    )
    a = ap.parse_args()
    rows, failed = [], 0
    for backend, cases, reps in (("gpu", a.cases, a.reps), ("cpu", a.cpu_cases, 1)):
        for c in cases:
            try:
                rows.append(run_case(c, backend, reps, a.b_g2, a.cpu_b_g2_shapes, a.witness, get_curve(a.curve)))
            except Exception as e:  # one failing case must not lose the others' figures
                failed += 1
                print(f"{c} {backend}: FAILED: {type(e).__name__}: {e}", flush=True)
                rows.append({"case": c, "backend": backend, "error": f"{type(e).__name__}: {e}"})
                cupy.get_default_memory_pool().free_all_blocks()
            if a.json:  # after every case: a run cut short by the time limit keeps what it measured
                Path(a.json).write_text(json.dumps(rows, indent=1))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
