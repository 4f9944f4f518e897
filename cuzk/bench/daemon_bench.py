"""Proving-daemon benchmark (CPU backend unless a GPU is visible and --backend gpu).

Three measurements, each against a real daemon serving gRPC on a unix socket in this process:

1. throughput and latency: proofs/s and client-side Prove latency percentiles with 1, 4, 16 concurrent
   clients (one connection each) on a synthetic hash circuit of 2^--tp-domain;
2. overhead: the daemon path (client Prove -> gRPC -> journal -> scheduler -> synthesis -> prover ->
   finalizer -> response) vs a direct in-process ``prover.prove`` of the same key (HOT: objects loaded)
   and witness, at 2^--ov-domain, interleaved runs, medians compared;
3. SRS tiers: first-proof latency after EvictSRS to COLD (parse the zkey, write the WARM file, build the
   HOT objects), to WARM (mmap the WARM file, build objects) and with the SRS HOT.

    .venv/bin/python -m cuzk.bench.daemon_bench                # full run (~4 min on 2 cores)
    .venv/bin/python -m cuzk.bench.daemon_bench --quick        # small sizes, a smoke test
    .venv/bin/python -m cuzk.bench.daemon_bench --json out.json
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import datetime
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("TQDM_DISABLE", "1")  # no progress bars from the dev setup

from cuzk.backends import get_backend
from cuzk.engine.config import load_config
from cuzk.engine.devcircuit import make_dev_circuit
from cuzk.groth16 import formats, prover, verifier
from cuzk.groth16.zkey import read_zkey
from cuzk.r1cs.wtns import parse_wtns
from cuzk.server.client import Client
from cuzk.server.daemon import Daemon
from cuzk.server.logs import setup_logging


def pct(xs, p):
    xs = sorted(xs)
    if not xs:
        return float("nan")
    k = (len(xs) - 1) * p / 100
    lo, hi = int(k), min(len(xs) - 1, int(k) + 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def start_daemon(tmp: Path, backend: str, **over):
    o = {
        "daemon.state_dir": str(tmp / "state"),
        "daemon.listen": f"unix://{tmp}/b.sock",
        "gpus.backend": backend,
        "journal.synchronous": "full",
        "registration.roots": [str(tmp)],
    }
    o.update(over)
    d = Daemon(load_config(overrides=o)).start()
    return d, Client(d.address)


def bench_throughput(tmp: Path, log_n: int, clients: list[int], per_client: int, backend: str) -> list[dict]:
    dc = make_dev_circuit(tmp / f"tp{log_n}", "hash", log_n)
    vk = formats.read_vk_json(dc.folder / "verification_key.json")
    nmax = max(clients) * per_client
    wits = [dc.witness(1000 + i) for i in range(nmax)]
    d, c = start_daemon(tmp / "tp", backend)
    rows = []
    try:
        c.register("tp", dc.r1cs, zkey=dc.key)
        c.preload("tp")
        c.prove("tp", witness=wits[0])  # warm-up (numba, pools)
        for n in clients:
            jobs = n * per_client
            lat = []

            def client(k):
                out = []
                with Client(d.address) as cc:
                    for j in range(per_client):
                        w = wits[(k * per_client + j) % len(wits)]
                        t = time.perf_counter()
                        r = cc.prove("tp", witness=w)
                        out.append((time.perf_counter() - t, r))
                return out

            t0 = time.perf_counter()
            with cf.ThreadPoolExecutor(n) as ex:
                results = [x for part in ex.map(client, range(n)) for x in part]
            wall = time.perf_counter() - t0
            for dt, r in results:
                assert verifier.verify(vk, r.public[0], formats.Proof.from_bytes(r.proofs[0]))
                lat.append(dt)
            rows.append(
                {
                    "clients": n,
                    "proofs": jobs,
                    "wall_s": wall,
                    "proofs_per_s": jobs / wall,
                    "p50_ms": pct(lat, 50) * 1e3,
                    "p90_ms": pct(lat, 90) * 1e3,
                    "p99_ms": pct(lat, 99) * 1e3,
                    "max_ms": max(lat) * 1e3,
                }
            )
            print(
                f"  throughput 2^{log_n}: {n:>2} clients, {jobs} proofs: {jobs / wall:.2f} proofs/s, "
                f"p50 {rows[-1]['p50_ms']:.0f} ms, p99 {rows[-1]['p99_ms']:.0f} ms",
                flush=True,
            )
    finally:
        c.close()
        d.stop(30)
    return rows


def bench_overhead_and_tiers(tmp: Path, log_n: int, runs: int, tier_runs: int, backend: str) -> tuple[dict, list[dict]]:
    t = time.perf_counter()
    dc = make_dev_circuit(tmp / f"ov{log_n}", "hash", log_n)
    print(f"  setup 2^{log_n}: {time.perf_counter() - t:.1f} s", flush=True)
    wbytes = [dc.witness(2000 + i) for i in range(runs + 1)]
    ws = [parse_wtns(b) for b in wbytes]
    pk = read_zkey(dc.key)
    be = get_backend(backend)
    be.load_key(pk)
    d, c = start_daemon(tmp / "ov", backend)
    direct, daemon_lat, server_total = [], [], []
    try:
        c.register("ov", dc.r1cs, zkey=dc.key)
        c.preload("ov")
        c.prove("ov", witness=wbytes[-1])  # warm-up both paths
        prover.prove(pk, ws[-1], be)
        for i in range(runs):
            t = time.perf_counter()
            prover.prove(pk, ws[i], be)
            direct.append(time.perf_counter() - t)
            t = time.perf_counter()
            r = c.prove("ov", witness=wbytes[i])
            daemon_lat.append(time.perf_counter() - t)
            server_total.append(r.timings["total_ms"] / 1e3)
            print(
                f"  overhead run {i}: direct {direct[-1]:.3f} s, daemon {daemon_lat[-1]:.3f} s "
                f"(+{100 * (daemon_lat[-1] / direct[-1] - 1):.1f}%)",
                flush=True,
            )
        md, mc = statistics.median(direct), statistics.median(daemon_lat)
        ov = {
            "domain_log": log_n,
            "runs": runs,
            "direct_median_s": md,
            "daemon_median_s": mc,
            "daemon_server_total_median_s": statistics.median(server_total),
            "overhead_pct": 100 * (mc / md - 1),
            "overhead_pct_paired_median": 100 * statistics.median(b / a - 1 for a, b in zip(direct, daemon_lat)),
            "direct_s": direct,
            "daemon_s": daemon_lat,
        }
        tiers = []
        for rep in range(tier_runs):
            for tier in ("COLD", "WARM", "HOT"):
                if tier != "HOT":
                    c.evict("ov", tier)
                t = time.perf_counter()
                r = c.prove("ov", witness=wbytes[rep % runs])
                lat = time.perf_counter() - t
                tiers.append(
                    {
                        "tier": tier,
                        "latency_s": lat,
                        "srs_load_ms": r.timings["srs_load_ms"],
                        "compute_ms": r.timings["gpu_compute_ms"],
                    }
                )
                print(f"  first proof from {tier}: {lat:.3f} s (srs_load {r.timings['srs_load_ms']:.0f} ms)", flush=True)
    finally:
        c.close()
        d.stop(60)
    return ov, tiers


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tp-domain", type=int, default=12)
    ap.add_argument("--clients", default="1,4,16")
    ap.add_argument("--per-client", type=int, default=2)
    ap.add_argument("--ov-domain", type=int, default=16)
    ap.add_argument("--ov-runs", type=int, default=3)
    ap.add_argument("--tier-runs", type=int, default=1)
    ap.add_argument("--backend", default="cpu", choices=["cpu", "gpu"])
    ap.add_argument("--quick", action="store_true", help="2^10 / 2^12, one run each")
    ap.add_argument("--json", help="write the results here")
    a = ap.parse_args()
    if a.quick:
        a.tp_domain, a.ov_domain, a.ov_runs, a.per_client = 10, 12, 2, 1
    setup_logging("warning")
    tmp = Path(tempfile.mkdtemp(prefix="czb", dir="/tmp"))
    started = datetime.datetime.now(datetime.UTC)
    print(
        f"cuzk daemon benchmark, {started:%Y-%m-%d %H:%M} UTC, {platform.processor() or platform.machine()}, "
        f"{os.cpu_count()} cores, backend {a.backend}",
        flush=True,
    )
    try:
        tp = bench_throughput(tmp, a.tp_domain, [int(x) for x in a.clients.split(",")], a.per_client, a.backend)
        ov, tiers = bench_overhead_and_tiers(tmp, a.ov_domain, a.ov_runs, a.tier_runs, a.backend)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print()
    print(f"| clients | proofs | proofs/s | p50 ms | p90 ms | p99 ms |   (hash circuit 2^{a.tp_domain}, {a.backend})")
    print("|---|---|---|---|---|---|")
    for r in tp:
        print(
            f"| {r['clients']} | {r['proofs']} | {r['proofs_per_s']:.2f} | {r['p50_ms']:.0f} | {r['p90_ms']:.0f} | {r['p99_ms']:.0f} |"
        )
    print()
    print(
        f"overhead at 2^{ov['domain_log']}: direct prover.prove median {ov['direct_median_s']:.3f} s, "
        f"daemon Prove median {ov['daemon_median_s']:.3f} s -> {ov['overhead_pct']:+.1f}%; median of the paired "
        f"differences {ov['overhead_pct_paired_median']:+.1f}% ({ov['runs']} interleaved runs)"
    )
    print()
    print(f"| SRS tier before the proof | first-proof latency s | srs_load ms |   (2^{ov['domain_log']})")
    print("|---|---|---|")
    for t in tiers:
        print(f"| {t['tier']} | {t['latency_s']:.3f} | {t['srs_load_ms']:.0f} |")
    if a.json:
        Path(a.json).write_text(
            json.dumps(
                {
                    "date": started.isoformat(),
                    "backend": a.backend,
                    "throughput": tp,
                    "overhead": ov,
                    "tiers": tiers,
                    "argv": sys.argv[1:],
                },
                indent=1,
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
