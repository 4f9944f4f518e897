"""End-to-end throughput of a cluster (issue 23): 1, 2, 4 daemon processes on one PostgreSQL journal.

For each daemon count: a fresh database (``cuzk journal migrate``), that many ``cuzk daemon`` processes
(CPU backend, one worker each, the same small development circuit), ``--jobs`` proofs submitted
round-robin through every host's socket by one client, then each awaited through the *next* host (so
awaits of jobs proved elsewhere go through the journal). Reports jobs/s from the first submission to
the last completion, how the jobs spread over the hosts, and checks from the journal that every job was
claimed and completed exactly once and every proof verifies.

The circuit is tiny on purpose: the proof costs a few ms, so what is measured is the cluster's own
per-job path (submit, claim, adopt, prove, fenced finish, await through the journal). On a machine with
fewer cores than daemons the daemons share them, which the table states (``nproc``).

    python -m cuzk.bench.cluster_daemons [--daemons 1,2,4] [--jobs 200] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any


def _config(base: Path, name: str, url: str, r1cs: str, zkey: str) -> Path:
    cfg = base / f"{name}.toml"
    cfg.write_text(f"""
[daemon]
state_dir = "{base}/{name}"
listen = "unix://{base}/{name}.sock"
[gpus]
backend = "cpu"
[synthesis]
partition_workers = 1
[journal]
url = "{url}"
[cluster]
host = "{name}"
poll = "50ms"
[logging]
file = "{base}/{name}.log"
[[circuits]]
id = "h8"
r1cs = "{r1cs}"
zkey = "{zkey}"
""")
    return cfg


def run_once(srv: Any, n_daemons: int, jobs: int, dev: Any, base: Path) -> dict[str, Any]:
    import psycopg

    from ..engine.journal.postgres import migrate
    from ..groth16 import formats, verifier
    from ..server.client import start_daemon_process

    url = srv.create_db()
    migrate(url)
    names = [f"d{n_daemons}-{i}" for i in range(n_daemons)]
    procs, clients = [], []
    try:
        for name in names:
            cfg = _config(base, name, url, dev.r1cs, dev.key)
            p, c = start_daemon_process(cfg, f"unix://{base}/{name}.sock", base / f"{name}.err")
            procs.append(p)
            clients.append(c)
        witness = [dev.witness(i) for i in range(16)]
        # every host's key HOT (else the hosts without it wait cluster.affinity_delay before claiming:
        # SRS affinity), then warm-up proofs (first-use costs), not timed
        for c in clients:
            c.preload("h8")
        for i, c in enumerate(clients):
            c.prove("h8", witness=witness[i % 16], timeout_ms=120_000)
        t0 = time.perf_counter()
        ids = [clients[i % n_daemons].submit("h8", witness=witness[i % 16]).job_id for i in range(jobs)]
        t_sub = time.perf_counter() - t0
        results = [clients[(i + 1) % n_daemons].await_proof(j, timeout_ms=600_000) for i, j in enumerate(ids)]
        elapsed = time.perf_counter() - t0
        vk = formats.read_vk_json(Path(dev.folder) / "verification_key.json")
        ok = all(
            r.status == "COMPLETED" and verifier.verify(vk, r.public[0], formats.Proof.from_bytes(r.proofs[0], vk.curve))
            for r in results
        )
        with psycopg.connect(url) as conn:
            ev = Counter((j, e) for j, e in conn.execute("SELECT job_id, event FROM events WHERE job_id = ANY(%s)", (ids,)))
        once = all(ev[(j, "claimed")] == 1 and ev[(j, "completed")] == 1 for j in ids)
        by_host = Counter(r.host for r in results)
        lat = [(r.completed_at - r.submitted_at) * 1e3 for r in results if r.completed_at and r.submitted_at]
        return {
            "daemons": n_daemons,
            "jobs": jobs,
            "seconds": elapsed,
            "submit_seconds": t_sub,
            "jobs_per_s": jobs / elapsed,
            "by_host": dict(sorted(by_host.items())),
            "submit_to_done_ms_median": statistics.median(lat) if lat else float("nan"),
            "verified": ok,
            "exactly_once": once,
        }
    finally:
        for c in clients:
            c.close()
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in procs:
            try:
                p.wait(60)
            except subprocess.TimeoutExpired:
                p.kill()
        srv.drop_db(url)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    ap.add_argument("--daemons", default="1,2,4", help="daemon counts")
    ap.add_argument("--jobs", type=int, default=200, help="proofs per daemon count")
    ap.add_argument("--durable", action="store_true", help="PostgreSQL with its default fsync (else fsync off)")
    ap.add_argument("--json", type=Path, help="write the results here")
    a = ap.parse_args(argv)
    from ..engine.devcircuit import make_dev_circuit
    from ..engine.journal.pgserver import PgServer, why_unavailable

    why = why_unavailable()
    if why:
        print(f"cluster_daemons: no PostgreSQL: {why}", file=sys.stderr)
        return 2
    base = Path(tempfile.mkdtemp(prefix="czd", dir="/tmp"))  # short: unix socket paths
    srv = PgServer(durable=a.durable).start()
    rows = []
    try:
        dev = make_dev_circuit(base / "h8", "hash", 8)
        for n in (int(x) for x in a.daemons.split(",")):
            r = run_once(srv, n, a.jobs, dev, base)
            rows.append(r)
            print(
                f"{n} daemon(s): {r['jobs']} jobs in {r['seconds']:.2f} s = {r['jobs_per_s']:.1f} jobs/s "
                f"(submit-to-done median {r['submit_to_done_ms_median']:.0f} ms; by host {r['by_host']}; "
                f"verified {r['verified']}, exactly once {r['exactly_once']})",
                flush=True,
            )
    finally:
        srv.stop()
        shutil.rmtree(base, ignore_errors=True)
    res = {"nproc": os.cpu_count(), "loadavg": os.getloadavg(), "durable": a.durable, "rows": rows}
    if a.json:
        a.json.parent.mkdir(parents=True, exist_ok=True)
        a.json.write_text(json.dumps(res, indent=1))
    return 0 if all(r["verified"] and r["exactly_once"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
