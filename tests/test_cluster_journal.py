"""Issue 23, items 1 and 2 (the store level): one journal interface, two stores (SQLite, PostgreSQL), the
PostgreSQL schema made and versioned by `cuzk journal migrate`, and claims with leases and fencing tokens on
both stores. PostgreSQL is a real server (tests/pg.py), never a mock; where none can run, its cases skip."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

import pytest

from cuzk.engine.config import ConfigError, load_config
from cuzk.engine.devcircuit import make_dev_circuit
from cuzk.engine.journal import JournalSchemaMismatch, JournalStore, open_journal


def add(j: JournalStore, jid: str, circuit: str = "c", priority: int = 2, at: float | None = None) -> None:
    j.insert_job(jid, None, "h-" + jid, circuit, priority, [("wtns", b"w-" + jid.encode())], at or time.time())


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cuzk", *args], capture_output=True, text=True, timeout=120)


# -- claims, leases, fencing (both stores) ----------------------------------------------------------


def test_claim_order_priority_then_fifo_and_circuit_filter(store):
    j = store()
    for i, (jid, prio) in enumerate([("n1", 2), ("l1", 1), ("n2", 2), ("c1", 4), ("h1", 3), ("n3", 2)]):
        add(j, jid, priority=prio, at=100.0 + i)
    add(j, "other", circuit="d", priority=4)
    got = j.claim("A", ["c"], 3, 30, now=1000.0)
    assert [c.job_id for c in got] == ["c1", "h1", "n1"]
    assert all(c.token == 1 and c.lease_until == 1030.0 and c.circuit_id == "c" and c.attempts == 0 for c in got)
    assert [c.job_id for c in j.claim("B", ["c"], 10, 30, now=1000.0)] == ["n2", "n3", "l1"]
    assert j.claim("B", ["c"], 10, 30, now=1000.0) == []
    assert j.claim("B", [], 10, 30) == [] and j.claim("B", ["c", "d"], 0, 30) == []
    assert [c.job_id for c in j.claim("B", None, 5, 30, now=1000.0)] == ["other"]
    row = j.get("c1")
    assert row["state"] == "running" and row["claim_host"] == "A" and row["claim_token"] == 1 and row["started_at"] == 1000.0
    assert ("c1", "claimed") in j.events("c1")


def test_heartbeat_expiry_and_fencing(store):
    j = store(max_attempts=3)
    add(j, "a")
    add(j, "b")
    (ca,) = j.claim("A", ["c"], 1, 10, now=1000.0)
    (cb,) = j.claim("B", ["c"], 1, 10, now=1000.0)
    assert (ca.job_id, cb.job_id) == ("a", "b")
    # A renews its lease; B stops heart-beating; a heartbeat with a wrong token or host renews nothing
    assert j.heartbeat("A", {"a": ca.token}, now=1008.0) == {"a"}
    assert j.heartbeat("A", {"b": cb.token}, now=1008.0) == set()
    assert j.heartbeat("B", {"b": cb.token + 1}, now=1008.0) == set()
    assert j.get("a")["lease_until"] == 1018.0
    assert j.expire_leases(now=1009.0) == []  # b's lease ends at 1010
    assert j.expire_leases(now=1011.0) == [("b", "queued")]
    rb = j.get("b")
    assert rb["state"] == "queued" and rb["attempts"] == 1 and rb["claim_host"] is None
    assert j.heartbeat("B", {"b": cb.token}, now=1012.0) == set()  # B learns it lost b
    # the late result of the expired claim is refused, before and after another host claims the job
    assert not j.finish("b", "completed", 1012.0, result='{"late": 1}', token=cb.token)
    (cb2,) = j.claim("A", ["c"], 1, 10, now=1013.0)
    assert cb2.job_id == "b" and cb2.token == cb.token + 1 and cb2.attempts == 1
    assert not j.finish("b", "completed", 1014.0, result='{"late": 1}', token=cb.token)
    assert j.get("b")["result"] is None and j.get("b")["state"] == "running"
    assert j.finish("b", "completed", 1015.0, result='{"ok": 1}', token=cb2.token)
    assert not j.finish("b", "completed", 1016.0, result='{"again": 1}', token=cb2.token)  # exactly one result
    assert j.get("b")["result"] == '{"ok": 1}'
    assert [e for _, e in j.events("b")].count("completed") == 1
    assert [e for _, e in j.events("b")] == ["accepted", "claimed", "expired", "claimed", "completed"]
    # a finished job's lease never expires
    assert j.finish("a", "completed", 1017.0, result="{}", token=ca.token)
    assert j.expire_leases(now=5000.0) == []


def test_expired_past_max_attempts_fails_and_release_keeps_attempts(store):
    j = store(max_attempts=2)
    add(j, "x")
    (c1,) = j.claim("A", None, 1, 5, now=0.0)
    assert j.expire_leases(now=10.0) == [("x", "queued")]
    (c2,) = j.claim("B", None, 1, 5, now=11.0)
    assert j.expire_leases(now=20.0) == [("x", "failed")]
    row = j.get("x")
    assert row["state"] == "failed" and row["attempts"] == 2 and "quarantined after 2 attempts" in row["error"]
    assert "last host B" in row["error"]
    assert not j.finish("x", "completed", 21.0, result="{}", token=c2.token)
    # a draining host gives a claim back: queued again, attempts unchanged, its token no longer current
    add(j, "y")
    (cy,) = j.claim("A", None, 1, 5, now=30.0)
    assert not j.release("B", "y", cy.token) and not j.release("A", "y", cy.token + 1)
    assert j.release("A", "y", cy.token)
    assert j.get("y")["state"] == "queued" and j.get("y")["attempts"] == 0
    assert not j.finish("y", "completed", 31.0, result="{}", token=cy.token)
    # the one-daemon path is untouched by leases: mark_started jobs never expire
    add(j, "z")
    j.mark_started("z", 40.0)
    assert j.expire_leases(now=1e12) == [] and j.get("z")["state"] == "running"
    assert [c.job_id for c in j.claim("A", None, 5, 5, now=50.0)] == ["y"]


def test_concurrent_claimers_never_share_a_job(store):
    n_jobs, n_threads = 120, 4
    j0 = store()
    for i in range(n_jobs):
        add(j0, f"j{i:03d}", priority=1 + i % 4)
    stores = [store() for _ in range(n_threads)]  # one connection (pool) each
    got: dict[int, list[str]] = {i: [] for i in range(n_threads)}
    errors: list[BaseException] = []

    def work(i: int) -> None:
        try:
            while True:
                cl = stores[i].claim(f"host{i}", ["c"], 3, 60)
                if not cl:
                    return
                got[i].extend(c.job_id for c in cl)
                for c in cl:
                    assert stores[i].finish(c.job_id, "completed", time.time(), result="{}", token=c.token)
        except BaseException as e:
            errors.append(e)

    ts = [threading.Thread(target=work, args=(i,)) for i in range(n_threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(60)
    assert not errors, errors
    every = [x for v in got.values() for x in v]
    assert len(every) == n_jobs and len(set(every)) == n_jobs
    assert all(j0.get(f"j{i:03d}")["claim_token"] == 1 for i in range(n_jobs))  # each claimed exactly once


def test_store_interface_round_trip(store):
    """The rest of the interface behaves the same on both stores (circuits, versions, file hashes, purge)."""
    j = store()
    j.save_circuit("x", {"id": "x", "r1cs": "/a"})
    j.save_circuit("x", {"id": "x", "r1cs": "/b"})
    assert j.circuits() == [{"id": "x", "r1cs": "/b"}]
    j.save_version("x", "v1", {"id": "x"}, "k1", {"r1cs": "s1"}, "rpc")
    j.save_version("x", "v2", {"id": "x"}, "k2", {"r1cs": "s2"}, "rpc")
    v = j.version("x", "v1")
    assert v["spec"] == {"id": "x"} and v["files"] == {"r1cs": "s1"} and v["key_sha256"] == "k1" and v["source"] == "rpc"
    assert j.version("x", "nope") is None and len(j.version_specs()) == 2
    j.insert_job("q", None, "h", "x", 2, [("wtns", b"")], 1.0, "v1")  # an unfinished job keeps v1
    assert j.prune_versions({("x", "v2")}) == 0 and j.prune_versions(set()) == 1
    assert j.version("x", "v1") is not None and j.version("x", "v2") is None
    assert j.file_hash("/p", "s") is None
    j.save_file_hash("/p", "s", "abc")
    j.save_file_hash("/p", "s2", "def")
    assert j.file_hash("/p", "s") is None and j.file_hash("/p", "s2") == "def"
    j.event("q", "note", "hello")
    assert ("q", "note") in j.events()
    assert [r["job_id"] for r in j.unfinished()] == ["q"]
    j.close()
    j2 = store()  # reopened: everything is still there
    assert j2.get("q")["version"] == "v1" and j2.circuits() == [{"id": "x", "r1cs": "/b"}]


# -- claim filters: keys, SRS affinity, one circuit per batch (both stores) ---------------------------


def addv(j: JournalStore, jid: str, circuit: str, version: str | None, priority: int = 2, at: float = 100.0) -> None:
    j.insert_job(jid, None, "h-" + jid, circuit, priority, [("wtns", b"w")], at, version)


def ids(claims) -> list[str]:
    return [c.job_id for c in claims]


def test_claim_keys_match_circuit_and_version_null_version_is_star(store):
    j = store()
    for i, (jid, cid, ver) in enumerate([("c1", "c", "v1"), ("c2", "c", "v2"), ("cn", "c", None), ("d1", "d", "v1")]):
        addv(j, jid, cid, ver, at=100.0 + i)
    assert j.claim("A", None, 10, 30, now=1000.0, keys=[]) == []
    # "c@*" is the key of a job of no version, not a wildcard over c's versions
    assert ids(j.claim("A", None, 10, 30, now=1000.0, keys=["c@v1", "c@*", "x@v1"])) == ["c1", "cn"]
    # keys and circuit_ids together: both must allow the job
    assert j.claim("A", ["c"], 10, 30, now=1000.0, keys=["d@v1"]) == []
    got = j.claim("A", ["d"], 10, 30, 1000.0, keys=["d@v1", "c@v2"])  # now given positionally, the old form
    assert ids(got) == ["d1"] and got[0].version == "v1"
    assert ids(j.claim("A", None, 10, 30, now=1000.0, keys=["c@v2"])) == ["c2"]
    assert j.get("cn")["state"] == "running" and j.get("cn")["version"] is None


def test_claim_affinity_delays_cold_circuits_but_never_urgent_jobs(store):
    j = store()
    addv(j, "c-norm", "c", "v1", priority=2, at=100.0)
    addv(j, "c-crit", "c", "v1", priority=4, at=101.0)
    addv(j, "c-high", "c", "v1", priority=3, at=102.0)
    addv(j, "d-norm", "d", "v1", priority=1, at=103.0)
    # host B has d's key hot, not c's: before c's jobs waited 10 s it takes only c's CRITICAL job and its own d
    got = j.claim("B", None, 10, 30, now=105.0, hot=["d"], cold_after_s=10.0)
    assert ids(got) == ["c-crit", "d-norm"]
    for c in got:
        assert j.release("B", c.job_id, c.token)
    # urgent_priority moves the line: at 5 even CRITICAL waits
    assert ids(j.claim("B", None, 10, 30, now=105.0, hot=["d"], cold_after_s=10.0, urgent_priority=5)) == ["d-norm"]
    # no circuit hot here at all (an empty hot list): only what waited long enough, at the boundary included
    assert ids(j.claim("B", None, 10, 30, now=110.0, hot=[], cold_after_s=10.0)) == ["c-crit", "c-norm"]
    assert j.claim("B", None, 10, 30, now=111.9, hot=[], cold_after_s=10.0) == []
    # a host with c hot takes it at once; hot=None is no affinity filter
    assert ids(j.claim("A", None, 10, 30, now=105.0, hot=["c"], cold_after_s=10.0)) == ["c-high"]
    addv(j, "e", "e", None, at=1000.0)
    assert ids(j.claim("A", None, 10, 30, now=1000.0, hot=None, cold_after_s=10.0)) == ["e"]


def test_claim_one_circuit_takes_the_head_then_its_circuit_and_version(store):
    j = store()
    order = [
        ("a1", "c", "v1", 2), ("b1", "d", "v1", 3), ("a2", "c", "v1", 2), ("a3", "c", "v2", 2),
        ("a4", "c", "v1", 1), ("b2", "d", "v1", 3), ("a5", "c", "v1", 2), ("n1", "e", None, 0),
        ("n2", "e", None, 0), ("n3", "e", "v", 0),
    ]  # fmt: skip
    for i, (jid, cid, ver, prio) in enumerate(order):
        addv(j, jid, cid, ver, priority=prio, at=100.0 + i)
    assert ids(j.claim("A", None, 3, 30, now=1000.0, one_circuit=True)) == ["b1", "b2"]  # d has only two
    got = j.claim("A", None, 3, 30, now=1000.0, one_circuit=True)
    assert ids(got) == ["a1", "a2", "a5"]  # c@v1 by priority then FIFO, up to the limit
    assert len({c.token for c in got}) == 1 and all(j.get(c.job_id)["state"] == "running" for c in got)
    assert ids(j.claim("A", None, 5, 30, now=1000.0, one_circuit=True)) == ["a3"]  # c@v2: a version of its own
    assert ids(j.claim("A", None, 5, 30, now=1000.0, one_circuit=True)) == ["a4"]
    assert ids(j.claim("A", None, 5, 30, now=1000.0, one_circuit=True)) == ["n1", "n2"]  # no version: NULL = NULL
    assert ids(j.claim("A", None, 1, 30, now=1000.0, one_circuit=True)) == ["n3"]
    assert j.claim("A", None, 5, 30, now=1000.0, one_circuit=True) == []
    assert [e for _, e in j.events()].count("claimed") == len(order)
    # the rest of the batch obeys the same filters: a cold circuit's CRITICAL head comes alone
    for i, (jid, prio) in enumerate([("x1", 2), ("x2", 4), ("x3", 2), ("x4", 4)]):
        addv(j, jid, "x", "v1", priority=prio, at=2000.0 + i)
    assert ids(j.claim("B", None, 2, 30, now=2005.0, hot=["y"], cold_after_s=60.0, one_circuit=True)) == ["x2", "x4"]
    assert j.claim("B", None, 4, 30, now=2005.0, hot=["y"], cold_after_s=60.0, one_circuit=True) == []
    assert ids(j.claim("B", ["x"], 4, 30, now=2005.0, keys=["x@v1"], one_circuit=True)) == ["x1", "x3"]


def test_concurrent_one_circuit_batches_are_whole_and_disjoint(store):
    n_jobs, n_threads = 90, 4
    j0 = store()
    kinds = [("c", "v1"), ("c", "v2"), ("d", None)]
    for i in range(n_jobs):
        cid, ver = kinds[i % 3]
        addv(j0, f"j{i:03d}", cid, ver, priority=1 + i % 2, at=100.0 + i)
    stores = [store() for _ in range(n_threads)]
    batches: list[list[tuple[str, str, str | None]]] = []
    errors: list[BaseException] = []
    lock = threading.Lock()

    def work(i: int) -> None:
        try:
            while True:
                cl = stores[i].claim(f"host{i}", None, 4, 60, keys=["c@v1", "c@v2", "d@*"], one_circuit=True)
                if not cl:
                    return
                with lock:
                    batches.append([(c.job_id, c.circuit_id, c.version) for c in cl])
        except BaseException as e:
            errors.append(e)

    ts = [threading.Thread(target=work, args=(i,)) for i in range(n_threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(60)
    assert not errors, errors
    every = [jid for b in batches for jid, _, _ in b]
    assert len(every) == n_jobs and len(set(every)) == n_jobs
    assert all(len({(c, v) for _, c, v in b}) == 1 and 1 <= len(b) <= 4 for b in batches)


# -- the cluster's state: hosts, cluster-wide tasks, queue figures (both stores) ----------------------


def test_hosts_beat_list_held_and_forget(store):
    j = store()
    j.host_beat("B", {"gpus": 1}, now=105.0)
    j.host_beat("A", {"gpus": 2, "circuits": ["c"]}, now=100.0)
    j.host_beat("A", {"gpus": 3}, now=110.0)
    add(j, "x")
    add(j, "y")
    add(j, "z")
    claims = j.claim("A", None, 2, 30, now=1000.0)
    hs = j.hosts()
    assert [h["host"] for h in hs] == ["A", "B"]
    a, b = hs
    assert (a["first_seen"], a["last_seen"], a["info"], a["held"]) == (100.0, 110.0, {"gpus": 3}, 2)
    assert (b["first_seen"], b["last_seen"], b["info"], b["held"]) == (105.0, 105.0, {"gpus": 1}, 0)
    assert abs(a["now"] - time.time()) < 5 and a["now"] == b["now"]  # the store's clock (this machine's here)
    assert j.finish(claims[0].job_id, "completed", 1001.0, result="{}", token=claims[0].token)
    assert j.release("A", claims[1].job_id, claims[1].token)
    assert [h["held"] for h in j.hosts()] == [0, 0]
    j.host_beat("B", {"gpus": 1})  # the store's clock
    b = j.hosts()[1]
    assert b["first_seen"] == 105.0 and abs(b["last_seen"] - b["now"]) < 5
    assert j.forget_host("B") and not j.forget_host("B") and [h["host"] for h in j.hosts()] == ["A"]


def test_take_task_once_per_period_for_one_host(store):
    j = store()
    assert j.take_task("gc", "A", 60, now=1000.0)
    assert not j.take_task("gc", "B", 60, now=1010.0)  # A holds it until 1060
    assert not j.take_task("gc", "A", 60, now=1030.0)  # A too: once per period
    assert j.take_task("other", "B", 60, now=1030.0)  # tasks are independent
    assert j.take_task("gc", "B", 60, now=1060.0)  # the period ended: the next asker takes it
    assert not j.take_task("gc", "A", 60, now=1100.0)
    assert j.take_task("gc", "A", 5, now=1200.0)
    # the store's clock when no now is given
    assert j.take_task("clock", "A", 3600) and not j.take_task("clock", "B", 3600) and not j.take_task("clock", "A", 3600)


def test_take_task_raced_by_many_hosts_has_one_winner_per_period(store):
    n_threads, rounds = 4, 15
    stores = [store() for _ in range(n_threads)]  # a connection (pool) each: hosts racing
    barrier = threading.Barrier(n_threads)
    won: dict[tuple[str, int], list[int]] = {}
    errors: list[BaseException] = []
    lock = threading.Lock()

    def work(i: int) -> None:
        try:
            for r in range(rounds):
                # an existing row whose period ended (every host may update it) ...
                barrier.wait(30)
                if stores[i].take_task("shared", f"host{i}", 10, now=1000.0 + 10 * r):
                    with lock:
                        won.setdefault(("shared", r), []).append(i)
                # ... and a row no one made yet (every host inserts it), on the store's clock
                barrier.wait(30)
                if stores[i].take_task(f"fresh{r}", f"host{i}", 3600):
                    with lock:
                        won.setdefault(("fresh", r), []).append(i)
        except BaseException as e:
            errors.append(e)
            barrier.abort()

    ts = [threading.Thread(target=work, args=(i,)) for i in range(n_threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(120)
    assert not errors, errors
    assert sorted(won) == sorted([("shared", r) for r in range(rounds)] + [("fresh", r) for r in range(rounds)])
    assert all(len(w) == 1 for w in won.values()), won


def test_queue_counts_unfinished_and_finished_since(store):
    j = store()
    for jid, cid, prio in [("a", "c", 2), ("b", "c", 2), ("c", "c", 4), ("d", "d", 2), ("e", "d", 2), ("f", "d", 1)]:
        add(j, jid, circuit=cid, priority=prio)
    assert j.queue_counts() == [("c", 2, "queued", 2), ("c", 4, "queued", 1), ("d", 1, "queued", 1), ("d", 2, "queued", 2)]
    cl = {c.job_id: c for c in j.claim("A", None, 3, 30, now=1000.0)}  # c (4), a, b
    assert sorted(cl) == ["a", "b", "c"]
    assert j.finish("a", "completed", 500.0, result="{}", token=cl["a"].token)
    assert j.finish("c", "failed", 600.0, error="boom", token=cl["c"].token)
    assert j.finish("d", "cancelled", 700.0)
    assert j.queue_counts() == [("c", 2, "running", 1), ("d", 1, "queued", 1), ("d", 2, "queued", 1)]
    assert (j.count_unfinished(), j.count_unfinished("c"), j.count_unfinished("d"), j.count_unfinished("x")) == (3, 1, 2, 0)
    assert j.finished_since(0.0) == [("c", "completed", 1), ("c", "failed", 1), ("d", "cancelled", 1)]
    assert j.finished_since(600.0) == [("c", "failed", 1), ("d", "cancelled", 1)]  # at or after
    assert j.finished_since(700.5) == []


def test_store_now_is_the_store_clock(store):
    j = store()
    t0 = time.time()
    assert abs(j.store_now() - t0) < 5  # PostgreSQL's clock is this machine's here
    if store.kind == "postgres":  # the database's clock: the same for every connection, not the caller's
        import psycopg

        with psycopg.connect(store.url) as c:
            db = c.execute("SELECT CAST(EXTRACT(EPOCH FROM CURRENT_TIMESTAMP) AS DOUBLE PRECISION)").fetchone()[0]
        assert abs(j.store_now() - db) < 5


def test_sqlite_journal_of_before_the_cluster_tables_gains_them(tmp_path):
    import sqlite3

    from cuzk.engine.journal import SqliteJournal

    j = SqliteJournal(tmp_path / "journal.sqlite")
    add(j, "old")
    j.close()
    db = sqlite3.connect(str(tmp_path / "journal.sqlite"))
    db.executescript("DROP TABLE hosts; DROP TABLE cluster_tasks; DROP INDEX jobs_finished;")
    db.close()
    j = SqliteJournal(tmp_path / "journal.sqlite")
    j.host_beat("A", {"x": 1}, now=5.0)
    assert j.take_task("gc", "A", 10, now=5.0) and j.hosts()[0]["info"] == {"x": 1}
    assert j.get("old")["state"] == "queued"


def test_postgres_sql_adapter():
    from cuzk.engine.journal.postgres import _q

    assert (
        _q("SELECT 1 WHERE a LIKE 'x%' AND b = ? AND c IN (?, ?)") == "SELECT 1 WHERE a LIKE 'x%%' AND b = %s AND c IN (%s, %s)"
    )


# -- PostgreSQL: schema, migrate, config -----------------------------------------------------------


def test_migrate_creates_is_idempotent_and_versions_are_checked(pg_url, tmp_path):
    import psycopg

    from cuzk.engine.journal.postgres import SCHEMA_VERSION, PostgresJournal, migrate

    with pytest.raises(JournalSchemaMismatch, match=r"has no cuzk schema: run `cuzk journal migrate --url URL`"):
        PostgresJournal(pg_url, tmp_path)
    r = cli("journal", "migrate", "--url", pg_url)
    assert r.returncode == 0 and f"schema version 0 -> {SCHEMA_VERSION}" in r.stdout, r.stdout + r.stderr
    r = cli("journal", "migrate", "--url", pg_url)
    assert r.returncode == 0 and "nothing to do" in r.stdout, r.stdout + r.stderr
    assert migrate(pg_url) == (SCHEMA_VERSION, SCHEMA_VERSION)
    with psycopg.connect(pg_url) as c:
        assert c.execute("SELECT version FROM schema_version ORDER BY version").fetchall() == [
            (v,) for v in range(1, SCHEMA_VERSION + 1)
        ]
        tables = {r[0] for r in c.execute("SELECT table_name FROM information_schema.tables WHERE table_schema='public'")}
    assert {"jobs", "payloads", "events", "circuits", "circuit_versions", "file_hashes", "schema_version"} <= tables
    assert {"hosts", "cluster_tasks"} <= tables
    PostgresJournal(pg_url, tmp_path).close()
    # a newer schema (a newer cuzk migrated it): refused by the daemon and by migrate, in one line
    with psycopg.connect(pg_url, autocommit=True) as c:
        c.execute("INSERT INTO schema_version (version, applied_at, cuzk) VALUES (%s, 0, 'future')", (SCHEMA_VERSION + 1,))
    with pytest.raises(JournalSchemaMismatch, match=f"has schema version {SCHEMA_VERSION + 1}, this cuzk needs {SCHEMA_VERSION}"):
        PostgresJournal(pg_url, tmp_path)
    r = cli("journal", "migrate", "--url", pg_url)
    assert r.returncode != 0 and "newer than this cuzk" in r.stderr and "Traceback" not in r.stderr


def test_migrate_upgrades_a_v1_database_to_the_current_version(pg_url, tmp_path):
    """A database made by the first cuzk with a PostgreSQL journal (schema version 1: MIGRATIONS[1] only)
    gains the cluster tables (2) and the per-circuit queue indexes (3) through `cuzk journal migrate`, its
    rows kept; until then the daemon refuses it."""
    import psycopg

    from cuzk.engine.journal.postgres import _VERSION_TABLE, MIGRATIONS, SCHEMA_VERSION, PostgresJournal

    assert SCHEMA_VERSION == 3
    with psycopg.connect(pg_url, autocommit=True) as c:
        c.execute(_VERSION_TABLE)
        for stmt in MIGRATIONS[1]:
            c.execute(stmt)
        c.execute("INSERT INTO schema_version (version, applied_at, cuzk) VALUES (1, 0, 'v1')")
        c.execute(
            "INSERT INTO jobs (job_id, request_hash, circuit_id, priority, n_partitions, state, submitted_at) "
            "VALUES ('old', 'h', 'c', 2, 1, 'queued', 1.0)"
        )
        tables = {r[0] for r in c.execute("SELECT table_name FROM information_schema.tables WHERE table_schema='public'")}
    assert "jobs" in tables and "hosts" not in tables and "cluster_tasks" not in tables
    with pytest.raises(JournalSchemaMismatch, match="has schema version 1, this cuzk needs 3: run `cuzk journal migrate"):
        PostgresJournal(pg_url, tmp_path)
    r = cli("journal", "migrate", "--url", pg_url)
    assert r.returncode == 0 and "schema version 1 -> 3" in r.stdout, r.stdout + r.stderr
    with psycopg.connect(pg_url) as c:
        assert c.execute("SELECT version, cuzk FROM schema_version ORDER BY version").fetchall()[0] == (1, "v1")
        assert [v for (v,) in c.execute("SELECT version FROM schema_version ORDER BY version")] == [1, 2, 3]
        idx = {r[0] for r in c.execute("SELECT indexname FROM pg_indexes WHERE tablename = 'jobs'")}
    assert {"jobs_finished", "jobs_queue_circuit", "jobs_unfinished"} <= idx
    j = PostgresJournal(pg_url, tmp_path)
    try:
        assert j.get("old")["state"] == "queued"
        j.host_beat("A", {"v": 2})
        assert [h["host"] for h in j.hosts()] == ["A"] and j.take_task("gc", "A", 60)
        assert [c.job_id for c in j.claim("A", None, 5, 30, keys=["c@*"], one_circuit=True)] == ["old"]
    finally:
        j.close()
    r = cli("journal", "migrate", "--url", pg_url)
    assert r.returncode == 0 and "nothing to do" in r.stdout


def test_migrate_cli_errors_are_one_line(tmp_path):
    r = cli("journal", "migrate", "--url", "mysql://x/y")
    assert r.returncode != 0 and "Traceback" not in r.stderr and "scheme 'mysql'" in r.stderr
    r = cli("journal", "migrate")
    assert r.returncode != 0 and "either --url" in r.stderr
    r = cli("journal", "migrate", "--url", f"postgresql://nobody@/nodb?host={tmp_path}&connect_timeout=2")
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert r.returncode != 0 and len(lines) == 1 and "cannot connect" in lines[0], r.stderr


def test_journal_url_config_validation():
    for bad, msg in (
        ("mysql://h/db", "scheme 'mysql'"),
        ("postgresql://h:notaport/db", "does not parse"),
        ("postgresql://h", "names no database"),
    ):
        with pytest.raises(ConfigError, match="journal.url") as ei:
            load_config(text=f'[journal]\nurl = "{bad}"\n')
        assert msg in str(ei.value) and "\n" not in str(ei.value)
    with pytest.raises(ConfigError) as ei:
        load_config(text='[journal]\nurl = "mysql://user:s3cret@h/db"\n')
    assert "s3cret" not in str(ei.value)
    assert load_config(text='[journal]\nurl = "postgresql://u:p@db.example:5433/cuzk?sslmode=require"\n').journal.url
    assert load_config(text="").journal.url == ""


def test_redact_hides_the_password():
    from cuzk.engine.journal.postgres import redact

    assert redact("postgresql://u:s3cret@h:5432/db") == "postgresql://u:***@h:5432/db"
    assert redact("postgresql://u@h/db") == "postgresql://u@h/db"


# -- a daemon on the PostgreSQL journal ---------------------------------------------------------------


@pytest.fixture(scope="module")
def dev(tmp_path_factory):
    return make_dev_circuit(tmp_path_factory.mktemp("cj-circuits") / "h8", "hash", 8)


def test_daemon_on_postgres_proves_and_recovers_after_restart(dev, pg_url):
    from cuzk.engine.journal.postgres import migrate
    from cuzk.groth16 import formats, verifier
    from cuzk.server.client import Client
    from cuzk.server.daemon import Daemon

    tmp = tempfile.mkdtemp(prefix="czc", dir="/tmp")
    cfg_path = Path(tmp) / "cuzk.toml"
    cfg_path.write_text(f"""
[daemon]
state_dir = "{tmp}/state"
listen = "unix://{tmp}/d.sock"
[gpus]
backend = "cpu"
[synthesis]
partition_workers = 1
[journal]
url = "{pg_url}"
[[circuits]]
id = "h8"
r1cs = "{dev.r1cs}"
zkey = "{dev.key}"
""")
    over: dict = {}
    try:
        # an unmigrated database: the daemon refuses to start, one line naming the fix
        r = cli("daemon", "--config", str(cfg_path))
        lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
        assert r.returncode != 0 and len(lines) == 1 and "cuzk journal migrate" in lines[0], r.stderr
        migrate(pg_url)
        vk = formats.read_vk_json(Path(dev.folder) / "verification_key.json")

        d = Daemon(load_config(str(cfg_path), overrides=over)).start()
        c = Client(d.address)
        try:
            res = c.prove("h8", witness=dev.witness(3), request_id="pg-1")
            assert res.status == "COMPLETED"
            proof = formats.Proof.from_bytes(res.proofs[0], vk.curve)
            assert verifier.verify(vk, res.public[0], proof)
            done = res.job_id
            assert d.engine.journal.get(done)["state"] == "completed"
        finally:
            c.close()
            d.stop(10)
        # jobs left queued by that run (journaled, never started), then a restart: claimed and proved (on a
        # PostgreSQL journal the daemon is a cluster member: queued jobs are the cluster's, claimed with a lease)
        j = open_journal(load_config(str(cfg_path), overrides=over))
        queued = [uuid.uuid4().hex for _ in range(2)]
        for i, jid in enumerate(queued):
            j.insert_job(jid, None, "h", "h8", 2, [("wtns", dev.witness(10 + i))], time.time())
        j.close()
        d = Daemon(load_config(str(cfg_path), overrides=over)).start()
        c = Client(d.address)
        try:
            for jid in queued:
                res = c.await_proof(jid, timeout_ms=60_000)
                assert res.status == "COMPLETED"
                assert verifier.verify(vk, res.public[0], formats.Proof.from_bytes(res.proofs[0], vk.curve))
            again = c.prove("h8", witness=dev.witness(3), request_id="pg-1")  # the request id maps to the first job
            assert again.job_id == done
            ev = d.engine.journal.events()
            for jid in queued:
                assert [e for k, e in ev if k == jid].count("completed") == 1
                assert "claimed" in [e for k, e in ev if k == jid]
            assert not (Path(tmp) / "state" / "journal.sqlite").exists()  # nothing went to a SQLite journal
        finally:
            c.close()
            d.stop(10)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
