"""Seal time per phase: ``python -m cuzk.bench.seal_bench [--sizes 2KiB 8MiB] [--reps 3]``.

Seals random fr32-valid sectors (SDR PoRep V1.1: tree_d, the parent cache, the layers' labels, tree_c,
the replica and tree_r_last) and prints the median and min-max of each phase and of the whole seal.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time


def main(argv: list[str] | None = None) -> int:
    from ..cli.filecoin import parse_size
    from ..cli.porep import sector_data
    from ..filecoin import params as P
    from ..filecoin.seal import seal

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", nargs="+", default=["2KiB", "8MiB"])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--json", help="write the figures here")
    a = ap.parse_args(argv)
    out = {}
    for text in a.sizes:
        size = parse_size(text, "--sizes")
        proof_id = P.PARAMS[size].seal_proof_ids["V1_1"]
        data = sector_data(size, None, 1)
        small = P.PARAMS[2048].seal_proof_ids["V1_1"]
        seal(sector_data(2048, None, 1), small, bytes(32), 1, bytes(32))  # warm-up: the numba kernels (any size)
        runs: list[dict[str, float]] = []
        for r in range(a.reps):
            t: dict[str, float] = {}
            t0 = time.perf_counter()
            seal(data, proof_id, bytes(32), 2 + r, bytes(32), timings=t)
            t["total"] = time.perf_counter() - t0
            runs.append(t)
        row = {k: (statistics.median(x[k] for x in runs), min(x[k] for x in runs), max(x[k] for x in runs)) for k in runs[0]}
        out[text] = row
        print(f"{text}: " + ", ".join(f"{k} {m:.3f} s ({lo:.3f}-{hi:.3f})" for k, (m, lo, hi) in row.items()), flush=True)
    if a.json:
        with open(a.json, "w", encoding="utf-8") as fh:
            json.dump(out, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
