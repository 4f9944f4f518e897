#!/usr/bin/env python3
"""cuzk (CPU backend) vs snarkjs, same zkey and witness, interleaved in one run, on each curve.

For each circuit (curve x shape x domain) it prepares once (synthetic circuit, witness, `cuzk setup`
zkey; cached under .cache/bench/) and then, REPS times in turn:
  1. snarkjs groth16 prove ZKEY WTNS ...      (one-shot process)
  2. cuzk prove ZKEY WTNS ...                 (one-shot process, includes key loading)
  3. a warm snarkjs prove in a resident node process (snarkjs_warm.js: snarkjs, its curve and worker
     threads loaded once, zkey and witness in memory)
  4. a warm cuzk prove in a resident worker process that loaded the key once (the daemon case)
Wall time per run, peak RSS per process (wait4 ru_maxrss), medians, min-max spread and the ratios
(both warm figures are compared: the issue's target is cuzk warm <= 0.3x snarkjs warm).

    python -m cuzk.bench.cpu_vs_snarkjs --curves bn254 bls12_381 --domains 12 14 16 --shapes chain hash --reps 5
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SNARKJS = ROOT / "node_modules" / ".bin" / "snarkjs"
CACHE = ROOT / ".cache" / "bench"

SNARKJS_WARM = Path(__file__).resolve().parent / "snarkjs_warm.js"

WORKER = r"""
import json, resource, sys, time
from cuzk.backends import get_backend
from cuzk.groth16 import zkey, prover
from cuzk.r1cs import wtns
be = get_backend("cpu")
pk = zkey.read_zkey(sys.argv[1]); be.load_key(pk)
w = wtns.read_wtns(sys.argv[2], curve=pk.curve)
prover.prove(pk, w, be)  # warm-up: kernels loaded, pools started
print("ready", flush=True)
for line in sys.stdin:
    t = time.perf_counter(); res = prover.prove(pk, w, be); ms = (time.perf_counter() - t) * 1e3
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"ms": ms, "rss_kb": rss, "phases": res.timings}), flush=True)
"""


def run_timed(cmd: list[str]) -> tuple[float, int]:
    """Wall seconds and peak RSS (KiB) of a child process."""
    t = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t
    err = p.stderr.read().decode() if p.stderr else ""
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"{cmd[0]} failed: {err[-2000:]}")
    return wall, ru.ru_maxrss


def prepare(curve: str, shape: str, log_n: int) -> Path:
    d = CACHE / f"{curve}-{shape}-{log_n}"
    if (d / "circuit.zkey").exists():
        return d
    d.mkdir(parents=True, exist_ok=True)
    cuzk = [sys.executable, "-m", "cuzk"]
    synth = ["synth-circuit", "--curve", curve, "--shape", shape, "--domain", str(log_n), "-o", str(d)]
    subprocess.run(cuzk + synth, check=True)
    subprocess.run(
        cuzk + ["setup", str(d / "circuit.r1cs"), "-o", str(d / "circuit.zkey")], check=True, stderr=subprocess.DEVNULL
    )
    return d


def med_spread(xs: list[float]) -> str:
    return f"{statistics.median(xs):.3f} ({min(xs):.3f}-{max(xs):.3f})"


class Resident:
    """A resident prover process answering one JSON line per "go" line."""

    def __init__(self, cmd: list[str]):
        self.p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert self.p.stdin and self.p.stdout
        self.stdin, self.stdout = self.p.stdin, self.p.stdout
        line = self.stdout.readline().strip()
        if line != "ready":
            raise RuntimeError(f"{cmd[0]} did not start: {line!r}")

    def prove(self) -> dict:
        self.stdin.write("go\n")
        self.stdin.flush()
        return json.loads(self.stdout.readline())

    def close(self) -> None:
        self.stdin.close()
        self.p.wait()


def bench_one(curve: str, shape: str, log_n: int, reps: int) -> dict:
    d = prepare(curve, shape, log_n)
    zk, wt = str(d / "circuit.zkey"), str(d / "witness.wtns")
    out = d / "out"
    out.mkdir(exist_ok=True)
    worker = Resident([sys.executable, "-c", WORKER, zk, wt])
    sj_worker = Resident(["node", str(SNARKJS_WARM), str(ROOT / "node_modules" / "snarkjs"), zk, wt])
    sj, cz, warm, sj_warm = [], [], [], []
    sj_rss = cz_rss = warm_rss = sj_warm_rss = 0
    phases = []
    for _ in range(reps):
        s, r = run_timed([str(SNARKJS), "groth16", "prove", zk, wt, str(out / "sp.json"), str(out / "sq.json")])
        sj.append(s)
        sj_rss = max(sj_rss, r)
        s, r = run_timed([sys.executable, "-m", "cuzk", "prove", "-q", zk, wt, str(out / "cp.json"), str(out / "cq.json")])
        cz.append(s)
        cz_rss = max(cz_rss, r)
        rec = sj_worker.prove()
        sj_warm.append(rec["ms"] / 1e3)
        sj_warm_rss = max(sj_warm_rss, rec["rss_kb"])
        rec = worker.prove()
        warm.append(rec["ms"] / 1e3)
        warm_rss = max(warm_rss, rec["rss_kb"])
        phases.append(rec["phases"])
    worker.close()
    sj_worker.close()
    # both proofs of the last round must verify with snarkjs's verifier
    vk = str(d / "verification_key.json")
    for p, q in (("sp", "sq"), ("cp", "cq")):
        v = subprocess.run(
            [str(SNARKJS), "groth16", "verify", vk, str(out / f"{q}.json"), str(out / f"{p}.json")],
            capture_output=True,
            text=True,
            check=False,
        )
        assert v.returncode == 0, v.stdout + v.stderr
    ms = statistics.median(sj)
    return {
        "curve": curve,
        "shape": shape,
        "log_n": log_n,
        "reps": reps,
        "snarkjs": sj,
        "cuzk_cli": cz,
        "cuzk_warm": warm,
        "snarkjs_warm": sj_warm,
        "rss_mb": {
            "snarkjs": sj_rss / 1024,
            "cuzk_cli": cz_rss / 1024,
            "snarkjs_warm": sj_warm_rss / 1024,
            "cuzk_warm": warm_rss / 1024,
        },
        "ratio_cli": statistics.median(cz) / ms,
        "ratio_warm": statistics.median(warm) / ms,
        "ratio_warm_warm": statistics.median(warm) / statistics.median(sj_warm),
        "warm_phases_median": {k: statistics.median(p[k] for p in phases) for k in phases[0]},
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--curves", nargs="+", default=["bn254", "bls12_381"])
    ap.add_argument("--domains", type=int, nargs="+", default=[12, 14, 16])
    ap.add_argument("--shapes", nargs="+", default=["chain", "hash"])
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--json", default=str(ROOT / "bench" / "results" / "cpu_vs_snarkjs.json"))
    a = ap.parse_args()
    rows = []
    for curve in a.curves:
        for log_n in a.domains:
            for shape in a.shapes:
                rows.append(bench_one(curve, shape, log_n, a.reps))
                r = rows[-1]
                print(
                    f"{curve} {shape} 2^{log_n}: snarkjs {med_spread(r['snarkjs'])} s, cuzk cli {med_spread(r['cuzk_cli'])} s "
                    f"({r['ratio_cli']:.2f}x); warm: snarkjs {med_spread(r['snarkjs_warm'])} s, cuzk {med_spread(r['cuzk_warm'])} s "
                    f"({r['ratio_warm_warm']:.2f}x)",
                    flush=True,
                )
    meta = {
        "date": date.today().isoformat(),
        "machine": f"{platform.machine()} {os.cpu_count()} cpus, {platform.processor() or platform.platform()}",
        "command": " ".join(["python", "-m", "cuzk.bench.cpu_vs_snarkjs"] + sys.argv[1:]),
    }
    Path(a.json).parent.mkdir(parents=True, exist_ok=True)
    Path(a.json).write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))
    print()
    print(
        "| curve | shape | domain | snarkjs CLI s | cuzk CLI s | ratio | snarkjs warm s | cuzk warm s | ratio "
        "| RSS MB snarkjs CLI / cuzk CLI / snarkjs warm / cuzk warm |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        rs = r["rss_mb"]
        print(
            f"| {r['curve']} | {r['shape']} | 2^{r['log_n']} | {med_spread(r['snarkjs'])} | {med_spread(r['cuzk_cli'])} | "
            f"{r['ratio_cli']:.2f}x | {med_spread(r['snarkjs_warm'])} | {med_spread(r['cuzk_warm'])} | {r['ratio_warm_warm']:.2f}x | "
            f"{rs['snarkjs']:.0f} / {rs['cuzk_cli']:.0f} / {rs['snarkjs_warm']:.0f} / {rs['cuzk_warm']:.0f} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
