"""The synthesis benchmarks of BENCHMARKS.md section 6, each case in its own process (clean peak RSS):

    python -m cuzk.bench.synth_suite [--sizes 20 24] [--switches] [--out DIR] [--repeat 3] [--processes N]

Cases: a SHA-256-heavy circuit (binary SHA-256-254 Merkle paths: 2^20 = depth 11 x 3 challenges,
2^24 = depth 30 x 18 challenges, the shape of a 32 GiB sector's data-tree paths) and a Poseidon-heavy one
(arity-8 Poseidon Merkle paths of depth 10: 2^20 = 256 challenges, 2^22 = 1024, 2^24 = 4096). With
``--switches``, each synthesis switch measured alone against the default on the same circuit: the
recording's LC storage (flat arrays vs a dict per row, recording time and peak memory, at 2^18) and the
witness buffers (pre-sized vs growing, witness time, at 2^20). ``--processes N`` passes ``--processes N``
to each default case (the timed witness computed in N parts by N worker processes, checked equal to the
single-process one; per core = constraints / (witness + mat-vec) / max(N, threads); the run column shows
N and the pool's first witness). ``--instances N``: each default case as N independent instances at once,
one process and one numba thread each (N partitions synthesized side by side, as a PoRep's partitions are
on a many-core host): after one untimed run that records the circuit into the shared disk cache, the N
processes start together; per core = each instance's constraints / (witness + mat-vec), reported as the
median and range over the instances, and the host's total = the sum. Prints one table; ``--out`` keeps
each case's JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

MERKLE = "cuzk.circuit.examples:MerkleInclusion"
CASES = {
    ("sha256", 18): {"depth": 4, "challenges": 2, "hash": "sha256"},
    ("sha256", 20): {"depth": 11, "challenges": 3, "hash": "sha256"},
    ("sha256", 22): {"depth": 30, "challenges": 5, "hash": "sha256"},
    ("sha256", 24): {"depth": 30, "challenges": 18, "hash": "sha256"},
    ("poseidon", 18): {"depth": 10, "challenges": 64},
    ("poseidon", 20): {"depth": 10, "challenges": 256},
    ("poseidon", 22): {"depth": 10, "challenges": 1024},
    ("poseidon", 24): {"depth": 10, "challenges": 4096},
}


def one(kind: str, log: int, repeat: int, out: Path, env: dict[str, str], extra: list[str], tag: str) -> dict:
    path = out / f"{kind}-log{log}-{tag.replace('=', '-')}.json"
    cmd = [sys.executable, "-m", "cuzk.bench.main", "synth", MERKLE, "--circuit-params", json.dumps(CASES[kind, log])]
    cmd += ["--repeat", str(repeat), "-q", "--json", str(path), *extra]
    r = subprocess.run(cmd, check=False, env=env, capture_output=True, text=True)
    if r.returncode != 0:
        return {"error": (r.stderr.strip().splitlines() or ["killed"])[-1], "rc": r.returncode}
    return json.loads(path.read_text())


def row(kind: str, log: int, tag: str, r: dict) -> str:
    if "error" in r:
        return f"| {kind} | 2^{log} | {tag} | failed: {r['error']} (rc {r['rc']}) |||||||"
    w, m = r["witness_ms"], r["matvec_ms"]
    if r.get("processes", 1) > 1:
        tag = f"{tag}, {r['processes']} processes ({r['parts']} parts), first {r['first_witness_s']:.1f} s, cores {r['cores']}"
    return (
        f"| {kind} | 2^{log} | {tag} | {r['constraints']:,} | {r['recording']['ms'] / 1e3:.1f} | "
        f"{w['median']:.0f} ± {w['spread'] / 2:.0f} | {m['median']:.0f} ± {m['spread'] / 2:.0f} | "
        f"{r['constraints_per_s_per_core'] / 1e6:.3f} | {r['peak_rss_mib'] / 1024:.1f} | {r['peak_python_alloc_mib']:.0f} |"
    )


def concurrent(kind: str, log: int, n: int, repeat: int, out: Path, env: dict[str, str]) -> str:
    """``n`` one-core instances of a case at once (see the module's doc); one table row."""
    warm = one(kind, log, 1, out, env, ["--threads", "1", "--no-trace"], "warm")  # records into the cache
    if "error" in warm:
        return row(kind, log, "instances (warm-up)", warm)
    procs = []
    for i in range(n):
        path = out / f"{kind}-log{log}-instance{i}.json"
        cmd = [sys.executable, "-m", "cuzk.bench.main", "synth", MERKLE, "--circuit-params", json.dumps(CASES[kind, log])]
        cmd += ["--repeat", str(repeat), "-q", "--threads", "1", "--no-trace", "--seed", str(i), "--json", str(path)]
        procs.append((path, subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)))
    res, failed = [], []
    for path, p in procs:
        _out, err = p.communicate()
        if p.returncode == 0:
            res.append(json.loads(path.read_text()))
        else:
            failed.append((err.strip().splitlines() or ["killed"])[-1])
    if not res:
        return f"| {kind} | 2^{log} | {n} instances | failed: {failed[0]} |||||||"
    per_core = sorted(r["constraints_per_s"] / 1e6 for r in res)
    w = sorted(r["witness_ms"]["median"] for r in res)
    m = sorted(r["matvec_ms"]["median"] for r in res)
    med = per_core[len(per_core) // 2]
    return (
        f"| {kind} | 2^{log} | {len(res)} instances x 1 core{f' ({len(failed)} failed: {failed[0]})' if failed else ''} | "
        f"{res[0]['constraints']:,} | {warm['recording']['ms'] / 1e3:.1f} | {w[len(w) // 2]:.0f} ({w[0]:.0f}-{w[-1]:.0f}) | "
        f"{m[len(m) // 2]:.0f} ({m[0]:.0f}-{m[-1]:.0f}) | {med:.3f} ({per_core[0]:.3f}-{per_core[-1]:.3f}); host {sum(per_core):.2f} | "
        f"{max(r['peak_rss_mib'] for r in res) / 1024:.1f} | - |"
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[20], help="log2 sizes of the two circuits (18 20 22 24)")
    ap.add_argument("--kinds", nargs="+", default=["sha256", "poseidon"])
    ap.add_argument("--switches", action="store_true", help="also measure each synthesis switch alone")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", help="folder for the JSON of each case")
    ap.add_argument("--threads", type=int, help="numba threads of each case (default: all cores)")
    ap.add_argument("--no-trace", action="store_true", help="skip each case's traced witness (peak Python MiB reads 0)")
    ap.add_argument(
        "--processes", type=int, default=0, metavar="N", help="the default cases' witness in N parts by N worker processes"
    )
    ap.add_argument("--instances", type=int, default=0, metavar="N", help="each default case as N concurrent one-core instances")
    a = ap.parse_args(argv)
    out = Path(a.out or tempfile.mkdtemp(prefix="cuzk-synth-"))
    out.mkdir(parents=True, exist_ok=True)
    cache = tempfile.mkdtemp(prefix="cuzk-synth-cache-")
    env = dict(os.environ, CUZK_CACHE_DIR=cache)
    threads = ["--threads", str(a.threads)] if a.threads else []
    processes = ["--processes", str(a.processes)] if a.processes > 1 else []
    processes += ["--no-trace"] if a.no_trace else []
    lines = [
        "| circuit | size | run | constraints | recording s | witness ms | mat-vec ms | M constraints/s/core | peak RSS GiB | peak Python MiB |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for log in a.sizes:
        for kind in a.kinds:
            if (kind, log) in CASES and a.instances > 0:
                lines.append(concurrent(kind, log, a.instances, a.repeat, out, env))
                print(lines[-1], flush=True)
            elif (kind, log) in CASES:
                tag = f"processes={a.processes}" if a.processes > 1 else "default"
                r = one(kind, log, a.repeat, out, env, ["--record", *threads, *processes], tag)
                lines.append(row(kind, log, "default", r))
                print(lines[-1], flush=True)
    if a.switches:
        for kind in a.kinds:
            for storage in ("arrays", "dicts"):
                r = one(
                    kind, 18, 1, out, env, ["--record", "--lc-storage", storage, "--no-trace", *threads], f"lc_storage={storage}"
                )
                lines.append(row(kind, 18, f"lc_storage={storage}", r))
                print(lines[-1], flush=True)
            for buf in ("presized", "growing"):
                r = one(
                    kind,
                    20,
                    max(a.repeat, 5),
                    out,
                    env,
                    ["--witness-buffer", buf, "--no-trace", *threads],
                    f"witness_buffer={buf}",
                )
                lines.append(row(kind, 20, f"witness_buffer={buf}", r))
                print(lines[-1], flush=True)
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
