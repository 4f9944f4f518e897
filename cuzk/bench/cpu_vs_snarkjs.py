#!/usr/bin/env python3
"""cuzk (CPU backend) vs `snarkjs groth16 prove`, same zkey and witness, interleaved in one run.

For each circuit (shape x domain) it prepares once (synthetic circuit, witness, `cuzk setup` zkey;
cached under .cache/bench/) and then, REPS times in turn:
  1. snarkjs groth16 prove ZKEY WTNS ...      (one-shot process)
  2. cuzk prove ZKEY WTNS ...                 (one-shot process, includes key loading)
  3. a warm prove in a resident worker process that loaded the key once (the daemon case)
Wall time per run, peak RSS per process (wait4 ru_maxrss), medians, min-max spread and the ratios.

    python -m cuzk.bench.cpu_vs_snarkjs --domains 12 14 16 --shapes chain hash --reps 5
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

WORKER = r"""
import json, resource, sys, time
from cuzk.groth16 import zkey, prover, verifier
from cuzk.r1cs import wtns
pk = zkey.read_zkey(sys.argv[1]); pk.load_all()
w = wtns.read_wtns(sys.argv[2])
prover.prove(pk, w)  # warm-up: kernels loaded, pools started
print("ready", flush=True)
for line in sys.stdin:
    t = time.perf_counter(); res = prover.prove(pk, w); ms = (time.perf_counter() - t) * 1e3
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


def prepare(shape: str, log_n: int) -> Path:
    d = CACHE / f"{shape}-{log_n}"
    if (d / "circuit.zkey").exists():
        return d
    d.mkdir(parents=True, exist_ok=True)
    cuzk = [sys.executable, "-m", "cuzk"]
    subprocess.run(cuzk + ["synth-circuit", "--shape", shape, "--domain", str(log_n), "-o", str(d)], check=True)
    subprocess.run(
        cuzk + ["setup", str(d / "circuit.r1cs"), "-o", str(d / "circuit.zkey")], check=True, stderr=subprocess.DEVNULL
    )
    return d


def med_spread(xs: list[float]) -> str:
    return f"{statistics.median(xs):.3f} ({min(xs):.3f}-{max(xs):.3f})"


def bench_one(shape: str, log_n: int, reps: int) -> dict:
    d = prepare(shape, log_n)
    zk, wt = str(d / "circuit.zkey"), str(d / "witness.wtns")
    out = d / "out"
    out.mkdir(exist_ok=True)
    worker = subprocess.Popen([sys.executable, "-c", WORKER, zk, wt], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert worker.stdout.readline().strip() == "ready"
    sj, cz, warm = [], [], []
    sj_rss = cz_rss = warm_rss = 0
    phases = []
    for _ in range(reps):
        s, r = run_timed([str(SNARKJS), "groth16", "prove", zk, wt, str(out / "sp.json"), str(out / "sq.json")])
        sj.append(s)
        sj_rss = max(sj_rss, r)
        s, r = run_timed([sys.executable, "-m", "cuzk", "prove", "-q", zk, wt, str(out / "cp.json"), str(out / "cq.json")])
        cz.append(s)
        cz_rss = max(cz_rss, r)
        worker.stdin.write("go\n")
        worker.stdin.flush()
        rec = json.loads(worker.stdout.readline())
        warm.append(rec["ms"] / 1e3)
        warm_rss = max(warm_rss, rec["rss_kb"])
        phases.append(rec["phases"])
    worker.stdin.close()
    worker.wait()
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
        "shape": shape,
        "log_n": log_n,
        "reps": reps,
        "snarkjs": sj,
        "cuzk_cli": cz,
        "cuzk_warm": warm,
        "rss_mb": {"snarkjs": sj_rss / 1024, "cuzk_cli": cz_rss / 1024, "cuzk_warm": warm_rss / 1024},
        "ratio_cli": statistics.median(cz) / ms,
        "ratio_warm": statistics.median(warm) / ms,
        "warm_phases_median": {k: statistics.median(p[k] for p in phases) for k in phases[0]},
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--domains", type=int, nargs="+", default=[12, 14, 16])
    ap.add_argument("--shapes", nargs="+", default=["chain", "hash"])
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--json", default=str(ROOT / "bench" / "results" / "cpu_vs_snarkjs.json"))
    a = ap.parse_args()
    rows = []
    for log_n in a.domains:
        for shape in a.shapes:
            rows.append(bench_one(shape, log_n, a.reps))
            r = rows[-1]
            print(
                f"{shape} 2^{log_n}: snarkjs {med_spread(r['snarkjs'])} s, cuzk cli {med_spread(r['cuzk_cli'])} s "
                f"({r['ratio_cli']:.2f}x), warm {med_spread(r['cuzk_warm'])} s ({r['ratio_warm']:.2f}x)",
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
    print("| shape | domain | snarkjs s | cuzk CLI s | ratio | cuzk warm s | ratio | RSS MB snarkjs / CLI / warm |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        rs = r["rss_mb"]
        print(
            f"| {r['shape']} | 2^{r['log_n']} | {med_spread(r['snarkjs'])} | {med_spread(r['cuzk_cli'])} | {r['ratio_cli']:.2f}x | "
            f"{med_spread(r['cuzk_warm'])} | {r['ratio_warm']:.2f}x | {rs['snarkjs']:.0f} / {rs['cuzk_cli']:.0f} / {rs['cuzk_warm']:.0f} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
