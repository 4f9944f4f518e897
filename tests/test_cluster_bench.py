"""The cluster journal benchmark (cuzk.bench.cluster_bench, issue 23) with tiny counts against the session's
PostgreSQL: its claimers (separate processes) claim every job exactly once, and its other parts run."""

from __future__ import annotations

import pytest

from cuzk.bench import cluster_bench as cb


def _pg(pg_server):
    def make():
        url = cb.new_pg_db(pg_server)
        return url, cb.open_store("postgres", url)

    return make


@pytest.mark.parametrize("procs", [1, 3])
def test_claimers_claim_each_job_exactly_once(pg_server, procs):
    r = cb.bench_claimers("postgres", _pg(pg_server), procs, 60, 256, lambda _m: None)
    c = r["check"]
    assert c["exactly_once"], c
    assert c["states"] == {"completed": 60} and c["tokens"] == {"1": 60}
    assert c["claimed_events"] == c["claimed_jobs"] == 60
    assert sum(r["per_process"]) == 60 and len(r["per_process"]) == procs
    assert r["finish_refused"] == 0 and r["claims_per_s"] > 0


def test_ops_depth_and_counts(pg_server, tmp_path):
    make = _pg(pg_server)
    stores = {"postgres": make()[1], "sqlite": cb.open_store("sqlite", str(tmp_path / "j.sqlite"), "normal")}
    ops = cb.bench_ops(stores, 8, 8, 1024, lambda _m: None)
    for s in stores.values():
        s.close()
    assert ops["claim"]["postgres"]["n"] == ops["finish"]["sqlite"]["n"] == 8
    assert ops["heartbeat_8"]["postgres"]["n"] == 1 and ops["claim"]["ratio_median"] > 0
    d = cb.bench_depth("postgres", make, 300, 10, 128, lambda _m: None)
    assert d["claim_finish"]["n"] == 10
    assert any("jobs_queue" in line for line in d["explain"]), d["explain"]
    per = cb.count_path(make()[1], True, 1)
    # the claim: the database's clock, the SELECT .. FOR UPDATE SKIP LOCKED, the UPDATE, the event
    assert per["claim (limit 1)"] == {"calls": 1, "statements": 4}
    assert per["finish (fenced)"] == {"calls": 1, "statements": 2}


def test_daemons_bench_two_hosts_prove_every_job_once(pg_server, tmp_path_factory):
    import shutil
    import tempfile
    from pathlib import Path

    from cuzk.bench import cluster_daemons
    from cuzk.engine.devcircuit import make_dev_circuit

    dev = make_dev_circuit(tmp_path_factory.mktemp("cd") / "h8", "hash", 8)
    base = Path(tempfile.mkdtemp(prefix="czt", dir="/tmp"))  # short: unix socket paths
    try:
        r = cluster_daemons.run_once(pg_server, 2, 8, dev, base)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    assert r["verified"] and r["exactly_once"] and r["jobs_per_s"] > 0
    assert sum(r["by_host"].values()) == 8 and set(r["by_host"]) <= {"d2-0", "d2-1"}
