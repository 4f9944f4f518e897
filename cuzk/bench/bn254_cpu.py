"""Benchmark of cuzk's BN254 CPU point library (cuzk.curve.bn254), with arkworks BLS12-381 and py_ecc
for reference.

    .venv/bin/python -m cuzk.bench.bn254_cpu [--repeat 5] [--sizes 12,14,16] [--only msm,pairing,...] [--json OUT]

Every row: median and spread (min..max) of --repeat timed runs after one untimed warm-up (numba
compilation, caches). The load average is printed before and after: the CI-class machine is shared,
and a busy neighbour shows up as a wide spread.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import platform
import secrets
import statistics
import time
from pathlib import Path

import numpy as np

from cuzk.curve import _bn254_msm as ms
from cuzk.curve import bn254 as L

R = L.R


def limbs(values) -> np.ndarray:
    return np.array([[(v >> (64 * i)) & (2**64 - 1) for i in range(4)] for v in values], dtype=np.uint64).reshape(-1, 4)


def random_scalars(n: int) -> np.ndarray:
    return limbs([secrets.randbelow(R) for _ in range(n)])


def small_scalars(n: int) -> np.ndarray:
    """The shape of a circuit witness: half 0/1, the rest below 2^16."""
    rng = np.random.default_rng(1)
    v = rng.integers(0, 2, n, dtype=np.uint64)
    big = rng.random(n) < 0.5
    v[big] = rng.integers(0, 1 << 16, int(big.sum()), dtype=np.uint64)
    out = np.zeros((n, 4), dtype=np.uint64)
    out[:, 0] = v
    return out


def timeit(fn, repeat: int) -> dict:
    """Wall time, and CPU time of the whole process (all threads): on a shared machine the CPU time of
    a 1-thread run is the cleaner number; wall / CPU shows how much of the machine the run got."""
    fn()  # warm-up
    ts, cs = [], []
    for _ in range(repeat):
        c = time.process_time()
        t = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t)
        cs.append(time.process_time() - c)
    return {
        "median_s": statistics.median(ts),
        "min_s": min(ts),
        "max_s": max(ts),
        "cpu_median_s": statistics.median(cs),
        "runs": repeat,
    }


def fmt(s: float) -> str:
    return f"{s * 1e3:9.2f} ms" if s < 10 else f"{s:9.2f} s "


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--sizes", default="12,14,16", help="log2 MSM sizes")
    ap.add_argument("--only", default="", help="comma list of: msm, pairing, fixed, arkworks, pyecc")
    ap.add_argument("--threads", default="", help="comma list of thread counts for the MSM rows (default: 1 and all)")
    ap.add_argument("--json", default="")
    args = ap.parse_args(argv)
    only = set(filter(None, args.only.split(",")))

    def want(k):
        return not only or k in only

    ncpu = ms.cpu_count()
    threads = [int(t) for t in args.threads.split(",") if t] or sorted({1, ncpu})
    sizes = [int(s) for s in args.sizes.split(",") if s]
    rows = []
    print(f"# {platform.node()} {platform.processor() or platform.machine()}, {ncpu} threads, load {os.getloadavg()}")

    def record(name, res, **extra):
        res = {"name": name, **res, **extra}
        rows.append(res)
        print(
            f"{name:42s} {fmt(res['median_s'])}  [{fmt(res['min_s']).strip()} .. {fmt(res['max_s']).strip()}]"
            f"  cpu {fmt(res['cpu_median_s']).strip()}",
            flush=True,
        )

    nmax = 1 << max(sizes) if sizes else 0
    if want("msm") and sizes:
        for group in (1, 2):
            cls = L.G1Point if group == 1 else L.G2Point
            bases = L.fixed_base_mul(group, cls(), random_scalars(nmax))
            sc_rand = random_scalars(nmax)
            sc_small = small_scalars(nmax)
            for lg in sizes:
                n = 1 << lg
                for th in threads:
                    record(
                        f"G{group} MSM 2^{lg} random, {th} thr",
                        timeit(functools.partial(L.msm, group, bases, sc_rand[:n], threads=th), args.repeat),
                        group=group,
                        log_n=lg,
                        threads=th,
                        scalars="random",
                    )
                    record(
                        f"G{group} MSM 2^{lg} 0/1/small, {th} thr",
                        timeit(functools.partial(L.msm, group, bases, sc_small[:n], threads=th), args.repeat),
                        group=group,
                        log_n=lg,
                        threads=th,
                        scalars="small",
                    )
    if want("pairing"):
        g1, g2 = L.G1Point(), L.G2Point()
        a, b, c = (secrets.randbelow(R) for _ in range(3))
        p1 = [g1 * a, g1 * b, g1 * c, -(g1 * ((a + b + c) % R))]
        p2 = [g2, g2, g2, g2]
        assert L.GT.pairing_check(p1, p2)
        record("pairing_check, 4 pairs", timeit(lambda: L.GT.pairing_check(p1, p2), max(args.repeat, 20)))
        record("GT.pairing", timeit(lambda: L.GT.pairing(p1[0], g2), max(args.repeat, 20)))
        record("G1 point * scalar", timeit(lambda: g1 * a, max(args.repeat, 20)))
        record("G2 point * scalar", timeit(lambda: g2 * a, max(args.repeat, 20)))
    if want("fixed"):
        for group in (1, 2):
            cls = L.G1Point if group == 1 else L.G2Point
            base = cls() * secrets.randbelow(R)
            sc = random_scalars(1 << 16)
            for th in threads:
                record(
                    f"G{group} fixed_base_mul 2^16, {th} thr",
                    timeit(functools.partial(L.fixed_base_mul, group, base, sc, threads=th), max(1, args.repeat // 2)),
                    group=group,
                    threads=th,
                )
    if want("arkworks") and sizes:
        try:
            import py_arkworks_bls12381 as ark
        except ImportError:
            print("arkworks: py_arkworks_bls12381 not installed")
        else:
            n = nmax
            # distinct bases by repeated addition (arkworks' scalar multiplication would take minutes)
            g = ark.G1Point()
            pts = [g]
            step = g * ark.Scalar(secrets.randbelow(2**128))
            for _ in range(n - 1):
                pts.append(pts[-1] + step)
            scs = [ark.Scalar.from_le_bytes_mod_order(secrets.token_bytes(32)) for _ in range(n)]
            for lg in sizes:
                m = 1 << lg
                record(
                    f"BLS12-381 G1 MSM 2^{lg} (arkworks, 1 thr)",
                    timeit(functools.partial(ark.G1Point.multiexp_unchecked, pts[:m], scs[:m]), max(1, args.repeat // 2)),
                )
    if want("pyecc"):
        from py_ecc import optimized_bn128 as ob

        record("py_ecc optimized_bn128 pairing", timeit(lambda: ob.pairing(ob.G2, ob.G1), 2))
    print(f"# load after: {os.getloadavg()}")
    if args.json:
        Path(args.json).write_text(json.dumps({"machine": platform.node(), "threads": ncpu, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
