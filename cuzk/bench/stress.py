"""``cuzk-bench stress``: a mix of proof kinds against one daemon, the way a storage provider's node
loads it (PoRep partitions at NORMAL, WindowPoSt at HIGH, WinningPoSt at CRITICAL with its deadline).

    cuzk-bench stress --job porep=porep.cvp --job window=window.cvp:2 --job winning=winning.cvp:1 \\
        -c 30 -j 4 [--rate 0.5] [--seed 0] [--json out.json] [--require-deadlines]

``--job CIRCUIT=FILE[+FILE...][:WEIGHT]``: a registered circuit, its input files (one per partition:
.cvp vanilla proofs, .wtns witnesses or inputs .json) and its share of the jobs (default 1). The COUNT
jobs are drawn by weight from a seeded generator and submitted by CONC client threads, as fast as
they finish or (``--rate``) at Poisson arrivals of that many jobs per second. Each job goes at its
circuit's configured priority. Reported per circuit: jobs, completed, failed, client latency p50 / p95 /
max, mean queue wait, and deadlines met / missed (circuits with a configured deadline); then the
throughput of the whole run. Exit 1 when a job failed (or, with ``--require-deadlines``, missed its
deadline).
"""

from __future__ import annotations

import json
import random
import statistics
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from .. import CuzkError
from ..cli.main import EXIT_INVALID, EXIT_OK, _inputs


@dataclass
class Kind:
    circuit: str
    files: list[str]
    weight: float
    payload: list = field(default_factory=list)
    latency: list[float] = field(default_factory=list)
    queue_ms: list[float] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    met: int = 0
    missed: int = 0


def parse_job(spec: str) -> Kind:
    """``CIRCUIT=FILE[+FILE...][:WEIGHT]`` -> Kind (one-line errors naming the spec)."""
    cid, eq, rest = spec.partition("=")
    if not eq or not cid or not rest:
        raise CuzkError(f"--job {spec!r}: expected CIRCUIT=FILE[+FILE...][:WEIGHT]")
    weight = 1.0
    files, colon, w = rest.rpartition(":")
    if colon and w and all(ch.isdigit() or ch == "." for ch in w):
        try:
            weight = float(w)
        except ValueError:
            raise CuzkError(f"--job {spec!r}: weight {w!r} is not a number") from None
        if not weight > 0:
            raise CuzkError(f"--job {spec!r}: weight must be positive")
    else:
        files = rest
    paths = [f for f in files.split("+") if f]
    if not paths:
        raise CuzkError(f"--job {spec!r}: no input file")
    return Kind(cid, paths, weight)


def _pct(xs: list[float], q: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, round(q * (len(s) - 1)))]


def run_stress(addr: str | None, kinds: list[Kind], count: int, concurrency: int, rate: float, seed: int) -> dict:
    from ..server.client import Client

    for k in kinds:
        k.payload = _inputs(k.files)
    rng = random.Random(seed)
    order = rng.choices(kinds, weights=[k.weight for k in kinds], k=count)
    starts, t = [], 0.0
    for _ in order:  # arrival times (all 0 without --rate: the threads pace themselves)
        if rate > 0:
            t += rng.expovariate(rate)
        starts.append(t)
    lock = threading.Lock()
    done = [0]
    t0 = time.perf_counter()

    def one(i: int) -> None:
        k = order[i]
        wait = t0 + starts[i] - time.perf_counter()
        if wait > 0:
            time.sleep(wait)
        with Client(addr) as c:
            t = time.perf_counter()
            res = c.prove(k.circuit, partitions=k.payload, request_id=str(uuid.uuid4()), check=False)
            wall = time.perf_counter() - t
        with lock:
            done[0] += 1
            if res.ok:
                k.latency.append(wall)
                k.queue_ms.append(res.timings.get("queue_wait_ms", 0.0))
            else:
                k.failed.append(f"{res.job_id}: {res.status} {res.error}")
            if res.deadline_met is True:
                k.met += 1
            elif res.deadline_met is False:
                k.missed += 1
            flag = "" if res.deadline_met is None else (" deadline met" if res.deadline_met else " DEADLINE MISSED")
            print(f"[{done[0]}/{count}] {k.circuit}: {res.status} {wall:.3f} s{flag}", flush=True)

    with ThreadPoolExecutor(max_workers=concurrency) as ex:
        list(ex.map(one, range(count)))
    total = time.perf_counter() - t0
    rows = []
    for k in kinds:
        lat = k.latency
        rows.append(
            {
                "circuit": k.circuit,
                "jobs": len(lat) + len(k.failed),
                "completed": len(lat),
                "failed": len(k.failed),
                "p50_s": statistics.median(lat) if lat else None,
                "p95_s": _pct(lat, 0.95) if lat else None,
                "max_s": max(lat) if lat else None,
                "queue_wait_ms_mean": statistics.mean(k.queue_ms) if k.queue_ms else None,
                "deadlines_met": k.met,
                "deadlines_missed": k.missed,
                "errors": k.failed[:5],
            }
        )
    ok = sum(r["completed"] for r in rows)
    return {"total_s": total, "completed": ok, "jobs": count, "proofs_per_min": 60 * ok / total if total else 0.0, "kinds": rows}


def _fmt(x: float | None, spec: str = ".3f") -> str:
    return "-" if x is None else format(x, spec)


def cmd_stress(a) -> int:
    kinds = [parse_job(s) for s in a.job]
    if len({k.circuit for k in kinds}) != len(kinds):
        raise CuzkError("--job: each circuit once (give it a weight instead of repeating it)")
    out = run_stress(a.addr, kinds, a.count, a.concurrency, a.rate, a.seed)
    print(
        f"\n{'circuit':<16} {'jobs':>5} {'ok':>5} {'fail':>5} {'p50 s':>8} {'p95 s':>8} {'max s':>8} {'queue ms':>9} {'deadline met/missed':>20}"
    )
    for r in out["kinds"]:
        dl = f"{r['deadlines_met']}/{r['deadlines_missed']}" if r["deadlines_met"] or r["deadlines_missed"] else "-"
        print(
            f"{r['circuit']:<16} {r['jobs']:>5} {r['completed']:>5} {r['failed']:>5} {_fmt(r['p50_s']):>8} "
            f"{_fmt(r['p95_s']):>8} {_fmt(r['max_s']):>8} {_fmt(r['queue_wait_ms_mean'], '.0f'):>9} {dl:>20}"
        )
        for e in r["errors"]:
            print(f"  failed: {e}")
    print(f"total {out['total_s']:.2f} s: {out['completed']}/{out['jobs']} completed, {out['proofs_per_min']:.2f} proofs/min")
    if a.json:
        with open(a.json, "w") as fh:
            json.dump(
                {**out, "argv": {"job": a.job, "count": a.count, "concurrency": a.concurrency, "rate": a.rate}}, fh, indent=1
            )
    bad = any(r["failed"] for r in out["kinds"]) or (a.require_deadlines and any(r["deadlines_missed"] for r in out["kinds"]))
    return EXIT_INVALID if bad else EXIT_OK


def add_parser(sub) -> None:
    s = sub.add_parser("stress", help="a weighted mix of circuits (proof kinds) at once: latency, deadlines, throughput")
    s.add_argument("--job", action="append", required=True, metavar="CIRCUIT=FILE[+FILE...][:WEIGHT]")
    s.add_argument("-c", "--count", type=int, default=20)
    s.add_argument("-j", "--concurrency", type=int, default=4)
    s.add_argument("--rate", type=float, default=0.0, help="Poisson arrivals, jobs per second (0: back to back)")
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--json", help="write the figures here")
    s.add_argument("--require-deadlines", action="store_true", help="a missed deadline also exits 1")
    s.set_defaults(fn=cmd_stress)
