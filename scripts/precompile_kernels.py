#!/usr/bin/env python3
"""Compile the CUDA kernel cache with NVRTC on a machine without a GPU (needs `pip install -e .[nvrtc]`).

The cache key depends on the source, the curve's constants, options, architecture and NVRTC version,
never on the machine, so cubins built here load on any device of that architecture with the same NVRTC
(cuzk/bench/device_run.sh carries the folder to the lent GPU instead of spending device time compiling).

    python scripts/precompile_kernels.py [--arch 90] [--curve bls12_381 ...] [--modules msm ntt ...]
        [--variant NAME=VALUE,NAME=VALUE ...] [-j 2]

Builds every production module and the bench-only probe module for each --curve (default BLS12-381,
what the prover runs today), with the #defines the GPU configuration gives each module (the defaults,
or CUZK_* overrides in the environment: cuzk/backends/gpu/config.py), plus each --variant's #defines
(e.g. the register caps: --variant CUZK_ACC_MINB=4,CUZK_ACC2_MINB=3).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import cuzk.bench.kernels  # registers the bench-only "probe" module
from cuzk.backends.gpu import build, config
from cuzk.curves import names as curve_names


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--arch", default="90")
    ap.add_argument("--curve", nargs="+", default=[build.DEFAULT_CURVE], choices=curve_names())
    ap.add_argument("--variant", action="append", default=[], help="extra #defines for a build, e.g. CUZK_ACC_MINB=4")
    ap.add_argument("--modules", nargs="*", default=list(build.MODULES + cuzk.bench.kernels.MODULES))
    ap.add_argument("-j", type=int, default=2)
    a = ap.parse_args()
    cfg = config.current()
    variants = [tuple(tuple(kv.split("=", 1)) for kv in v.split(",") if kv) for v in a.variant]
    jobs = []
    for curve in a.curve:
        for defs in [None, *variants]:
            for m in a.modules:
                job = build.job_for(m, a.arch, cfg.defines(m) if defs is None else defs, curve)
                if job not in jobs:
                    jobs.append(job)
    jobs.sort(key=lambda j: j.module != "msm")  # the slow builds first: the workers finish together
    t = time.time()
    failed = 0
    for r in build.compile_many(jobs, a.j):
        what = f"{r.job.module} {r.job.curve} {dict(r.job.defines) or 'default'}"
        if r.error:
            failed += 1
            print(f"{what}: FAILED ({r.seconds:.1f} s)\n{r.error}", flush=True)
        else:
            print(f"{what}: {Path(r.cubin).name} ({r.seconds:.1f} s)", flush=True)
    print(f"{len(jobs)} builds in {time.time() - t:.1f} s, {failed} failed", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
