"""``cuzk cluster status``: the hosts of a cluster (daemons sharing one PostgreSQL journal, issue 23), their
devices, leases and heartbeats, the queue per circuit and priority, and the throughput, read from the
journal itself (no daemon needed: a cluster with every host down still shows its queue).

The journal is ``--url postgresql://...`` or the ``journal.url`` of ``--config FILE``. ``--json`` prints
the same as one JSON object (what the HTTP ``/status`` page of each host shows under ``cluster``).
"""

from __future__ import annotations

import json
import time

from .. import CuzkError


def _url(a) -> str:
    if a.url:
        return str(a.url)
    if a.config:
        from ..engine.config import load_config

        url = load_config(a.config).journal.url
        if not url:
            raise CuzkError(f"{a.config}: journal.url is not set (a daemon on a SQLite journal is not a cluster)")
        return str(url)
    raise CuzkError("cuzk cluster status: give --url postgresql://... or --config FILE (its journal.url)")


def cmd_status(a) -> int:
    from pathlib import Path

    from ..engine.cluster import cluster_view
    from ..engine.config import check_journal_url
    from ..engine.journal.postgres import PostgresJournal

    url = _url(a)
    check_journal_url(url, "--url")
    j = PostgresJournal(url, spill_dir=Path("/nonexistent"), pool_size=1)  # reads only: never spills
    try:
        view = cluster_view(j, a.window)
    finally:
        j.close()
    if a.json:
        print(json.dumps(view, indent=2, sort_keys=True))
        return 0
    print(f"cluster journal {j.where} at {time.strftime('%Y-%m-%d %H:%M:%S')}")
    hosts = view["hosts"]
    print(f"\nhosts ({len(hosts)}):")
    print(f"  {'host':<40} {'state':<9} {'heartbeat':>9} {'held':>5} {'claimed':>8} {'done':>6}  devices / hot keys")
    for h in hosts:
        print(
            f"  {h['host'][-40:]:<40} {h['state']:<9} {h['heartbeat_age_s']:>8.1f}s {h['held']:>5} {h['claimed_total']:>8} "
            f"{h['completed_total']:>6}  {','.join(h['devices']) or '-'} / {','.join(h['hot']) or '-'}"
            + (f"  journal error: {h['db_error']}" if h["db_error"] else "")
        )
    print("\nqueue (unfinished jobs):")
    if not view["queues"]:
        print("  empty")
    for q in view["queues"]:
        by = ", ".join(f"p{p}: {n}" for p, n in sorted(q["queued_by_priority"].items(), reverse=True)) or "-"
        print(f"  {q['circuit_id']:<24} queued {q.get('queued', 0):>6} ({by})  running {q.get('running', 0):>5}")
    fin = view["finished_last"]
    print(f"\nfinished in the last {fin['window_s']:.0f} s: {view['throughput_per_s']:.3f} completed/s")
    for cid, by in sorted(fin["by_circuit"].items()):
        print(f"  {cid:<24} " + ", ".join(f"{k} {v}" for k, v in sorted(by.items())))
    return 0


def add_parsers(sub) -> None:
    s = sub.add_parser("cluster", help="a cluster of daemons sharing one PostgreSQL journal: its hosts, queue, throughput")
    csub = s.add_subparsers(dest="cluster_verb", required=True)
    st = csub.add_parser("status", help="hosts (devices, leases, heartbeats; lost ones), queue per circuit and priority")
    st.add_argument("--url", default="", help="the cluster's journal: postgresql://...")
    st.add_argument("--config", default="", help="a daemon's config file (its journal.url)")
    st.add_argument("--window", type=float, default=60.0, help="seconds of finished jobs the throughput counts (default 60)")
    st.add_argument("--json", action="store_true", help="one JSON object")
    st.set_defaults(fn=cmd_status)
