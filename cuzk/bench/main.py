"""``cuzk-bench``: load and timing tool for a running proving daemon (the original cuzk-bench's verbs).

    cuzk-bench single CIRCUIT INPUT [INPUT ...]          one Prove; timings and the proof
    cuzk-bench batch CIRCUIT INPUT -c COUNT -j CONC      COUNT Proves, CONC at a time; throughput
    cuzk-bench batch --dev porep:24 --sizes 1 2 3        in process: proofs of one circuit batched in one pass
    cuzk-bench status | metrics | preload CIRCUIT
    cuzk-bench timeline FILE [--png OUT.png] [--trace OUT.json] [--gap-ms MS]
                                                         utilization, idle gaps per device, waterfall, Perfetto trace
    cuzk-bench compare OLD.json NEW.json [--threshold 0.03]   phases slower beyond the noise: exit 1 (a CI guard)
    cuzk-bench synth package.module:Class [--circuit-params JSON]   synthesis alone (no daemon)
    cuzk-bench gen-vanilla --sector-size 2KiB --out DIR [--keys]   vanilla proofs of every kind (+ config)
    cuzk-bench ablate --python pkg.mod:Class [--switch KEY[=VALUE]] [--runs 5]   = cuzk tune (each switch alone)
    cuzk-bench stress --job CIRCUIT=FILE[:WEIGHT] ... -c COUNT -j CONC   a mix of proof kinds at once

INPUT is a .wtns witness, an inputs .json file or a .cvp vanilla proof, one per partition of the circuit. Every proof the
daemon returns is checked: a batch with any failed job exits 1. The daemon address comes from --addr or
CUZK_ADDR (see ``cuzk daemon``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

from .. import CuzkError
from ..cli.main import EXIT_INVALID, EXIT_OK, EXIT_USAGE, _err, _inputs, _print_timings, run_verb
from .batch_prove import add_arguments as add_batch_dev


def _client(addr: str | None):
    from ..server.client import Client

    return Client(addr)


def cmd_single(a) -> int:
    with _client(a.addr) as c:
        t = time.perf_counter()
        res = c.prove(a.circuit, partitions=_inputs(a.input), priority=a.priority, request_id=str(uuid.uuid4()), check=False)
        wall = time.perf_counter() - t
    print("=== Proof Result ===")
    print(f"status:  {res.status}")
    print(f"job_id:  {res.job_id}")
    if not res.ok:
        print(f"error:   {res.error}")
        return EXIT_INVALID
    tm = res.timings
    print(
        f"timings: total={tm['total_ms']:.1f} ms (queue={tm['queue_wait_ms']:.1f}, srs={tm['srs_load_ms']:.1f}, "
        f"synth={tm['synthesis_ms']:.1f}, gpu={tm['gpu_compute_ms']:.1f}, finalize={tm['finalize_ms']:.1f}); backend {res.backend}"
    )
    print(f"wall:    {wall * 1e3:.1f} ms (client side)")
    if a.verbose:
        _print_timings(res.phases)
    proof = res.proof
    text = proof.hex() if len(proof) <= 256 else proof[:128].hex() + "..."
    print(f"proof:   {len(proof)} bytes: {text}")
    return EXIT_OK


def _stats(xs: list[float]) -> str:
    if not xs:
        return "-"
    return f"avg {statistics.mean(xs):.3f} s, min {min(xs):.3f}, max {max(xs):.3f}, p50 {statistics.median(xs):.3f}"


def cmd_batch(a) -> int:
    if a.dev:
        from .batch_prove import run

        return run(a)
    if not a.circuit or not a.input:
        _err("batch: a CIRCUIT and at least one INPUT expected (or --dev SHAPE:LOG2 for in-process batches)")
        return EXIT_USAGE
    payload = _inputs(a.input)
    walls: list[float] = []
    proves: list[float] = []
    failed: list[str] = []
    lock = threading.Lock()
    done = [0]

    def one(i: int):
        with _client(a.addr) as c:  # a connection per proof, as concurrent clients would have
            t = time.perf_counter()
            res = c.prove(a.circuit, partitions=payload, priority=a.priority, request_id=str(uuid.uuid4()), check=False)
            wall = time.perf_counter() - t
        with lock:
            done[0] += 1
            if res.ok:
                walls.append(wall)
                proves.append(res.timings["gpu_compute_ms"] / 1e3)
            else:
                failed.append(f"{res.job_id}: {res.status} {res.error}")
            print(
                f"[{done[0]}/{a.count}] {res.status} - {wall:.3f} s (prove={res.timings['gpu_compute_ms']:.0f} ms, "
                f"queue={res.timings['queue_wait_ms']:.0f} ms)",
                flush=True,
            )

    t0 = time.perf_counter()
    with ThreadPoolExecutor(max_workers=a.concurrency) as ex:
        list(ex.map(one, range(a.count)))
    total = time.perf_counter() - t0
    ok = len(walls)
    print(f"\ntotal {total:.3f} s: {ok} completed, {len(failed)} failed")
    print(f"wall:  {_stats(walls)}")
    print(f"prove: {_stats(proves)}")
    if ok:
        print(f"throughput: {ok / total:.3f} proofs/s = {60 * ok / total:.2f} proofs/min; {total / ok:.3f} s/proof")
    for f in failed:
        print(f"failed: {f}")
    return EXIT_OK if not failed else EXIT_INVALID


def cmd_status(a) -> int:
    from ..cli.main import cmd_status as cli_status

    return cli_status(argparse.Namespace(addr=a.addr, json=a.json))


def cmd_metrics(a) -> int:
    with _client(a.addr) as c:
        sys.stdout.write(c.metrics())
    return EXIT_OK


def cmd_preload(a) -> int:
    with _client(a.addr) as c:
        r = c.preload(a.circuit)
    if r.get("already_loaded"):
        print(f"{a.circuit} already loaded")
    else:
        print(f"{a.circuit} loaded in {r.get('load_time_ms', 0):.0f} ms")
    return EXIT_OK


def cmd_timeline(a) -> int:
    from ..engine import timeline as tl

    try:
        with open(a.file) as fh:
            lines = fh.readlines()
    except OSError as e:
        raise CuzkError(f"{a.file}: cannot read: {e.strerror}") from None
    an = tl.analyze(lines)
    if not an.intervals:
        raise CuzkError(f"{a.file}: no TIMELINE events (set logging.timeline in the daemon config, or CUZK_TIMELINE=1)")
    kinds = {k: sum(1 for iv in an.intervals if iv.kind == k) for k in ("SYNTH", "PROVE", "FINALIZE")}
    print(
        f"span {an.span_ms / 1e3:.3f} s; partitions: {kinds['SYNTH']} synthesized, {kinds['PROVE']} proved, "
        f"{kinds['FINALIZE']} finalized; mean synthesis concurrency {an.mean_synthesis_concurrency:.2f}"
    )
    for d, u in an.device_utilization.items():
        print(f"  {d}: busy {an.device_busy_ms[d] / 1e3:.3f} s = {100 * u:.1f}% of the span")
    for d, g in tl.gap_summary(an, a.gap_ms).items():
        where = f" (after {g['largest_after']}, before {g['largest_before']})" if g["count"] else ""
        print(
            f"  {d}: idle between jobs {g['total_ms'] / 1e3:.3f} s in {g['count']} gaps, largest "
            f"{g['largest_ms'] / 1e3:.3f} s{where}; {len(g['shaded'])} gaps >= {a.gap_ms:g} ms"
        )
    if an.job_latency_ms:
        lat = sorted(an.job_latency_ms.values())
        print(f"  jobs: {len(lat)}, latency p50 {statistics.median(lat) / 1e3:.3f} s, max {lat[-1] / 1e3:.3f} s")
    if a.png:
        tl.plot(an, a.png, gap_ms=a.gap_ms)
        print(f"wrote {a.png}")
    if a.trace:
        trace = tl.chrome_trace(an)
        with open(a.trace, "w", encoding="utf-8") as fh:
            json.dump(trace, fh)
        n = sum(1 for e in trace["traceEvents"] if e["ph"] == "X")
        print(f"wrote {a.trace}: {n} events (open in https://ui.perfetto.dev or chrome://tracing)")
    return EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="cuzk-bench", description="load and timing tool for a running cuzk daemon")
    p.add_argument("-a", "--addr", default=None, help="daemon address (unix:///path or host:port; default $CUZK_ADDR)")
    p.add_argument("--token", default=None, help="bearer token (default: $CUZK_TOKEN)")
    p.add_argument("--ca", default=None, help="CA bundle (PEM): TLS to a TCP address (default: $CUZK_CA)")
    sub = p.add_subparsers(dest="cmd", required=True, metavar="COMMAND")
    s = sub.add_parser("single", help="one proof: timings split and the proof")
    s.add_argument("circuit")
    s.add_argument("input", nargs="+", help=".wtns or inputs .json, one per partition")
    s.add_argument("--priority", default="normal")
    s.add_argument("-v", "--verbose", action="store_true", help="also print every prover phase")
    s.set_defaults(fn=cmd_single)
    s = sub.add_parser(
        "batch",
        help="COUNT proofs, CONCURRENCY at a time: throughput and latency; or (--dev) proofs batched in one pass",
    )
    s.add_argument("circuit", nargs="?")
    s.add_argument("input", nargs="*")
    s.add_argument("-c", "--count", type=int, default=3)
    s.add_argument("-j", "--concurrency", type=int, default=1)
    s.add_argument("--priority", default="normal")
    add_batch_dev(s)
    s.set_defaults(fn=cmd_batch)
    s = sub.add_parser("status", help="daemon status")
    s.add_argument("--json", action="store_true")
    s.set_defaults(fn=cmd_status)
    s = sub.add_parser("metrics", help="Prometheus metrics text")
    s.set_defaults(fn=cmd_metrics)
    s = sub.add_parser("timeline", help="device utilization and a waterfall PNG from a daemon's TIMELINE file")
    s.add_argument("file", help="the daemon's logging.timeline file (or a log with TIMELINE lines)")
    s.add_argument("--png", help="write the waterfall plot here (needs matplotlib: pip install -e '.[plot]')")
    s.add_argument("--trace", help="write a Chrome / Perfetto trace JSON here (Trace Event Format)")
    s.add_argument(
        "--gap-ms", type=float, default=5.0, help="shade device idle gaps between jobs of at least this long (default 5)"
    )
    s.set_defaults(fn=cmd_timeline)
    s = sub.add_parser("preload", help="load a circuit's SRS into the HOT tier")
    s.add_argument("circuit")
    s.set_defaults(fn=cmd_preload)
    from .compare import add_parser as add_compare
    from .gen_vanilla import add_parser as add_gen_vanilla
    from .stress import add_parser as add_stress
    from .synth import add_parser as add_synth
    from .tune import add_parser as add_ablate

    add_synth(sub)
    add_gen_vanilla(sub)
    add_stress(sub)
    add_compare(sub)
    add_ablate(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    a = build_parser().parse_args(argv)
    if a.token:  # the Client takes $CUZK_TOKEN / $CUZK_CA by default
        os.environ["CUZK_TOKEN"] = a.token
    if a.ca:
        os.environ["CUZK_CA"] = a.ca
    if getattr(a, "count", 1) < 1 or getattr(a, "concurrency", 1) < 1:
        _err("--count and --concurrency must be at least 1")
        return EXIT_USAGE
    return run_verb(a.fn, a)


if __name__ == "__main__":
    sys.exit(main())
