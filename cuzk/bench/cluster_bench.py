"""Benchmark of the cluster journal (issue 23): the PostgreSQL store against the SQLite store.

Starts a throw-away PostgreSQL (:mod:`cuzk.engine.journal.pgserver`: initdb in /tmp, a unix socket; by
default *durable*: PostgreSQL's own fsync / synchronous_commit, as SQLite's ``synchronous = full``) and
measures, with the journal's own methods (``cuzk.engine.journal``), what a cluster daemon calls:

1. **ops**: per-operation latency, both stores interleaved in blocks (the order alternating per block):
   submit (``insert_job``, one payload), claim (``claim(.., limit=1)`` exactly as ``ClusterMember.claim_some``
   calls it: keys, hot, cold_after_s, one_circuit), heartbeat (one held job, and 8), fenced finish,
   ``host_beat``, ``expire_leases`` (nothing expired), the await poll (``get``), the cluster submit's
   queue reads (``count_unfinished`` x2 capped at the limits + ``count_queued_ahead``) and ``purge_payloads``;
2. **claimers**: 1, 2, 4 OS processes, each its own store (connection), claim limit 1 + fenced finish
   until the queue is empty; claims/s, and every job claimed exactly once (rows, tokens, claimed events);
3. **depth**: claim + finish at 100 / 10,000 / 100,000 queued jobs (bulk-loaded with COPY / executemany,
   payload rows of ``--depth-payload`` bytes), EXPLAIN ANALYZE of the claim's SELECT, and the queue
   reads of the cluster submit path at that depth;
4. **per proof**: statements and transactions of each call on the daemon's path (counted by wrapping the
   store's transaction runner), cross-checked with pg_stat_statements / pg_stat_database over a run.

    python -m cuzk.bench.cluster_bench [--ops 2000] [--json bench/results/cluster-2core.json]
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing as mp
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ..engine.journal import JournalStore, SqliteJournal
from ..engine.journal.base import Tx
from ..engine.journal.pgserver import PgServer, db_name, why_unavailable

CIRCUIT, VERSION = "bench", "v1"
KEYS = [f"{CIRCUIT}@{VERSION}", f"{CIRCUIT}@*"]  # what ClusterMember.keys() gives for one loaded circuit
HOT = [CIRCUIT]
LEASE_S, AFFINITY_S = 30.0, 2.0  # the config's defaults (cluster.lease, cluster.affinity_delay)
RESULT = json.dumps({"proof": "ab" * 192, "public": ["1" * 70] * 4, "timings": {"x": 1.0} | {f"t{i}": i for i in range(20)}})


# -- stores -----------------------------------------------------------------------------------------------
def open_store(kind: str, where: str, synchronous: str = "full", pool_size: int = 4) -> JournalStore:
    if kind == "sqlite":
        return SqliteJournal(where, synchronous)
    from ..engine.journal.postgres import PostgresJournal

    return PostgresJournal(where, spill_dir=Path(tempfile.gettempdir()) / "cuzk-bench-spill", pool_size=pool_size)


def new_pg_db(srv: PgServer) -> str:
    from ..engine.journal.postgres import migrate

    url = srv.create_db()
    migrate(url)
    return url


def submit(store: JournalStore, payload: bytes, priority: int = 2, circuit: str = CIRCUIT) -> str:
    jid = uuid.uuid4().hex
    store.insert_job(jid, None, "h" * 64, circuit, priority, [("wtns", payload)], time.time(), VERSION)
    return jid


# the engine's defaults (scheduler.max_queue_per_circuit, scheduler.max_pending): the submit's counts stop there
MAX_QUEUE_PER_CIRCUIT = 1000
MAX_PENDING = 10_000


def claim1(store: JournalStore, host: str) -> Any:
    """ClusterMember.claim_some's call, limit 1."""
    return store.claim(host, None, 1, LEASE_S, keys=KEYS, hot=HOT, cold_after_s=AFFINITY_S, one_circuit=True)


def submit_reads(store: JournalStore) -> tuple[int, int, Any]:
    """What Engine._accept_shared reads before and after the insert: the queue limits and the position."""
    return (
        store.count_unfinished(CIRCUIT, cap=MAX_QUEUE_PER_CIRCUIT),
        store.count_unfinished(cap=MAX_PENDING),
        store.count_queued_ahead(2, MAX_PENDING),
    )


def adopt_reads(store: JournalStore, job_id: str) -> tuple[Any, Any]:
    """What ClusterMember._adopt reads of a claimed job: its row and its inputs."""
    return store.get(job_id), store.payloads(job_id)


def bulk_fill(kind: str, store: JournalStore, n: int, payload_bytes: int) -> float:
    """``n`` queued jobs (priority 2, one in ten 3; one payload of ``payload_bytes``; an accepted event each),
    loaded in one go through the store's connection; seconds taken."""
    t0 = time.perf_counter()
    now = time.time() - 3600
    blob = os.urandom(payload_bytes)
    ids = [uuid.uuid4().hex for _ in range(n)]
    jobs = [(j, "h" * 64, CIRCUIT, 3 if i % 10 == 0 else 2, 1, "queued", now + i * 1e-3, VERSION) for i, j in enumerate(ids)]
    cols = "(job_id, request_hash, circuit_id, priority, n_partitions, state, submitted_at, version)"
    if kind == "sqlite":
        db = store._db  # type: ignore[attr-defined]
        with store._lock:  # type: ignore[attr-defined]
            db.execute("BEGIN IMMEDIATE")
            db.executemany(f"INSERT INTO jobs {cols} VALUES (?, ?, ?, ?, ?, ?, ?, ?)", jobs)
            db.executemany("INSERT INTO payloads (job_id, part, kind, data) VALUES (?, 0, 'wtns', ?)", [(j, blob) for j in ids])
            db.executemany("INSERT INTO events (job_id, event, at) VALUES (?, 'accepted', ?)", [(j, now) for j in ids])
            db.execute("COMMIT")
            db.execute("ANALYZE")
    else:
        with store._pool.connection() as conn, conn.transaction(), conn.cursor() as cur:  # type: ignore[attr-defined]
            with cur.copy(f"COPY jobs {cols} FROM STDIN") as cp:
                for r in jobs:
                    cp.write_row(r)
            with cur.copy("COPY payloads (job_id, part, kind, data) FROM STDIN") as cp:
                for j in ids:
                    cp.write_row((j, 0, "wtns", blob))
            with cur.copy("COPY events (job_id, event, at) FROM STDIN") as cp:
                for j in ids:
                    cp.write_row((j, "accepted", now))
        with store._pool.connection() as conn:  # type: ignore[attr-defined]
            conn.execute("ANALYZE jobs")  # what autovacuum does within a minute of such a load
            conn.execute("ANALYZE payloads")
            conn.execute("ANALYZE events")
    return time.perf_counter() - t0


# -- statistics ---------------------------------------------------------------------------------------------
def pct(xs: Sequence[float], p: float) -> float:
    s = sorted(xs)
    return s[max(0, math.ceil(p / 100 * len(s)) - 1)] if s else float("nan")


def summary(ms: Sequence[float]) -> dict[str, float]:
    return {"n": len(ms), "median_ms": statistics.median(ms), "p99_ms": pct(ms, 99), "min_ms": min(ms), "max_ms": max(ms)}


def timed(out: list[float], fn: Callable[..., Any], *args: Any, **kw: Any) -> Any:
    t = time.perf_counter()
    r = fn(*args, **kw)
    out.append((time.perf_counter() - t) * 1e3)
    return r


# -- counting statements and transactions -------------------------------------------------------------------
class Counter:
    def __init__(self) -> None:
        self.tx = 0  # store calls (one transaction each; a _ro read of several statements: one each in autocommit)
        self.stmts = 0
        self.log: list[tuple[str, Sequence[Any]]] | None = None

    def take(self) -> tuple[int, int]:
        out = (self.tx, self.stmts)
        self.tx = self.stmts = 0
        return out


class _CountTx(Tx):
    def __init__(self, inner: Tx, c: Counter, pg: bool) -> None:
        self.inner, self.c, self.pg = inner, c, pg
        self.lock = inner.lock

    def x(self, sql: str, args: Sequence[Any] = ()) -> Any:
        self.c.stmts += 1
        if self.c.log is not None:
            self.c.log.append((sql, args))
        return self.inner.x(sql, args)

    def many(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        self.c.stmts += len(rows)
        self.inner.many(sql, rows)

    def any_of(self, expr: str, values: Sequence[Any]) -> tuple[str, list[Any]]:
        return self.inner.any_of(expr, values)

    def now(self, now: float | None = None) -> float:
        if now is None and self.pg:
            self.c.stmts += 1  # the database's clock: one SELECT
        return self.inner.now(now)


def counting(store: JournalStore, pg: bool) -> Counter:
    """Wrap ``store``'s transaction runners so that its calls and statements are counted."""
    c = Counter()
    for name in ("_tx", "_ro"):
        orig = getattr(store, name)

        def run(fn: Callable[[Tx], Any], *a: Any, _orig: Any = orig, **k: Any) -> Any:
            c.tx += 1
            return _orig(lambda t: fn(_CountTx(t, c, pg)), *a, **k)

        setattr(store, name, run)
    return c


# -- 1. per-operation latency -------------------------------------------------------------------------------
OPS = (
    "submit",
    "claim",
    "heartbeat_1",
    "heartbeat_8",
    "finish",
    "host_beat",
    "expire_leases",
    "await_poll",
    "submit_reads",
    "purge_payloads",
)


def bench_ops(stores: dict[str, JournalStore], n: int, block: int, payload: int, log: Callable[[str], None]) -> dict[str, Any]:
    lat: dict[str, dict[str, list[float]]] = {k: {op: [] for op in OPS} for k in stores}
    blob = os.urandom(payload)
    info = {"state": "up", "pid": 1, "devices": ["gpu0"], "circuits": [CIRCUIT], "hot": HOT, "held_jobs": 2}
    order = list(stores)
    for b in range(math.ceil(n / block)):
        for name in order if b % 2 == 0 else order[::-1]:
            s, L, host = stores[name], lat[name], f"bench-{name}"
            ids = [timed(L["submit"], submit, s, blob) for _ in range(block)]
            claims = []
            for _ in ids:
                got = timed(L["claim"], claim1, s, host)
                assert len(got) == 1, got
                claims.append(got[0])
            for cl in claims:
                timed(L["heartbeat_1"], s.heartbeat, host, {cl.job_id: cl.token})
            for i in range(0, len(claims) - 7, 8):
                toks = {c.job_id: c.token for c in claims[i : i + 8]}
                kept = timed(L["heartbeat_8"], s.heartbeat, host, toks)
                assert kept == set(toks)
            for cl in claims:
                timed(L["await_poll"], s.get, cl.job_id)
                ok = timed(L["finish"], s.finish, cl.job_id, "completed", time.time(), result=RESULT, token=cl.token)
                assert ok
            for _ in range(max(1, block // 5)):
                timed(L["host_beat"], s.host_beat, host, info)
                timed(L["expire_leases"], s.expire_leases)
                timed(L["submit_reads"], submit_reads, s)
            timed(L["purge_payloads"], s.purge_payloads)
        log(f"  ops: block {b + 1}/{math.ceil(n / block)}")
    out: dict[str, Any] = {}
    for op in OPS:
        row: dict[str, Any] = {k: summary(lat[k][op]) for k in stores}
        if "postgres" in row and "sqlite" in row:
            row["ratio_median"] = row["postgres"]["median_ms"] / row["sqlite"]["median_ms"]
            row["ratio_p99"] = row["postgres"]["p99_ms"] / row["sqlite"]["p99_ms"]
        out[op] = row
    return out


def pg_roundtrip(store: JournalStore, n: int) -> dict[str, Any]:
    """One empty query on a held connection (what the pool's ``check_connection`` sends at every checkout),
    and a checkout + ``SELECT 1`` through the store's pool."""
    empty: list[float] = []
    checkout: list[float] = []
    pool = store._pool  # type: ignore[attr-defined]
    with pool.connection() as conn:
        for _ in range(n):
            timed(empty, lambda: conn.execute(""))
    for _ in range(n):

        def one() -> None:
            with pool.connection() as conn:
                conn.execute("SELECT 1").fetchone()

        timed(checkout, one)
    return {"empty_query": summary(empty), "checkout_select1": summary(checkout)}


def bench_big_submit(stores: dict[str, JournalStore], n: int, payload: int) -> dict[str, Any]:
    blob = os.urandom(payload)
    lat: dict[str, list[float]] = {k: [] for k in stores}
    order = list(stores)
    for i in range(n):
        for name in order if i % 2 == 0 else order[::-1]:
            s = stores[name]
            jid = timed(lat[name], submit, s, blob)
            cl = claim1(s, "big")
            assert cl and cl[0].job_id == jid
            s.finish(jid, "completed", time.time(), result=RESULT, token=cl[0].token)
            s.purge_payloads()
    out: dict[str, Any] = {k: summary(v) for k, v in lat.items()}
    if "postgres" in out and "sqlite" in out:
        out["ratio_median"] = out["postgres"]["median_ms"] / out["sqlite"]["median_ms"]
    out["payload_bytes"] = payload
    return out


# -- 2. claimers in separate processes ----------------------------------------------------------------------
def _claimer(kind: str, where: str, host: str, ready: Any, go: Any, q: Any) -> None:
    s = open_store(kind, where, pool_size=1)
    ready.release()
    go.wait()
    t0 = time.time()
    ids: list[str] = []
    lat: list[float] = []
    refused = 0
    while True:
        t = time.perf_counter()
        got = claim1(s, host)
        if not got:
            break
        cl = got[0]
        if not s.finish(cl.job_id, "completed", time.time(), result=RESULT, token=cl.token):
            refused += 1
        lat.append((time.perf_counter() - t) * 1e3)
        ids.append(cl.job_id)
    t1 = time.time()
    s.close()
    q.put({"host": host, "ids": ids, "lat": lat, "t0": t0, "t1": t1, "refused": refused})


def verify_once(kind: str, store: JournalStore, jobs: int, claimed_ids: list[str]) -> dict[str, Any]:
    """Every job claimed exactly once: the rows (state, token), the claimed events and the processes' lists."""

    def fn(t: Tx) -> dict[str, Any]:
        states = dict(t.x("SELECT state, COUNT(*) FROM jobs GROUP BY state").fetchall())
        tokens = dict(t.x("SELECT claim_token, COUNT(*) FROM jobs GROUP BY claim_token").fetchall())
        ev = t.x("SELECT COUNT(*), COUNT(DISTINCT job_id) FROM events WHERE event = 'claimed'").fetchone()
        done = t.x("SELECT COUNT(*) FROM events WHERE event = 'completed'").fetchone()
        return {
            "states": {str(k): int(v) for k, v in states.items()},
            "tokens": {str(k): int(v) for k, v in tokens.items()},
            "claimed_events": int(ev[0]),
            "claimed_jobs": int(ev[1]),
            "completed_events": int(done[0]),
        }

    r = store._ro(fn)
    r["claims_reported"] = len(claimed_ids)
    r["distinct_reported"] = len(set(claimed_ids))
    r["exactly_once"] = (
        r["states"] == {"completed": jobs}
        and r["tokens"] == {"1": jobs}
        and r["claimed_events"] == r["claimed_jobs"] == jobs
        and r["completed_events"] == jobs
        and r["claims_reported"] == r["distinct_reported"] == jobs
    )
    return r


def bench_claimers(
    kind: str, make: Callable[[], tuple[str, JournalStore]], procs: int, jobs: int, payload: int, log: Callable[[str], None]
) -> dict[str, Any]:
    where, store = make()
    fill_s = bulk_fill(kind, store, jobs, payload)
    ctx = mp.get_context("spawn")
    ready, go, q = ctx.Semaphore(0), ctx.Event(), ctx.Queue()
    ps = [ctx.Process(target=_claimer, args=(kind, where, f"h{i}", ready, go, q)) for i in range(procs)]
    for p in ps:
        p.start()
    for _ in ps:
        ready.acquire(timeout=120)
    t0 = time.time()
    go.set()
    res = [q.get(timeout=600) for _ in ps]
    for p in ps:
        p.join(timeout=30)
    wall = max(r["t1"] for r in res) - t0
    ids = [i for r in res for i in r["ids"]]
    lat = [x for r in res for x in r["lat"]]
    check = verify_once(kind, store, jobs, ids)
    store.close()
    out = {
        "store": kind,
        "processes": procs,
        "jobs": jobs,
        "fill_s": fill_s,
        "wall_s": wall,
        "claims_per_s": jobs / wall,
        "per_process": [len(r["ids"]) for r in res],
        "finish_refused": sum(r["refused"] for r in res),
        "claim_finish": summary(lat),
        "check": check,
    }
    log(f"  claimers {kind} x{procs}: {jobs / wall:.0f} claims/s, exactly once: {check['exactly_once']}")
    return out


# -- 3. queue depth -----------------------------------------------------------------------------------------
def explain_claim(store: JournalStore) -> list[str]:
    """EXPLAIN ANALYZE of the claim's SELECT (as the store sends it), rolled back."""
    from ..engine.journal.postgres import _q

    c = counting(store, True)
    c.log = []
    got = claim1(store, "explain")
    sel = next((sql, a) for sql, a in c.log if sql.startswith("SELECT") and "FOR UPDATE" in sql)
    if got:  # give the claimed job back (attempts unchanged)
        store.release("explain", got[0].job_id, got[0].token)
    with store._pool.connection() as conn, conn.cursor() as cur:  # type: ignore[attr-defined]
        cur.execute("BEGIN")
        rows = cur.execute("EXPLAIN (ANALYZE, BUFFERS) " + _q(sel[0]), sel[1]).fetchall()
        cur.execute("ROLLBACK")
    return [str(r[0]) for r in rows]


def bench_depth(
    kind: str, make: Callable[[], tuple[str, JournalStore]], depth: int, n: int, payload: int, log: Callable[[str], None]
) -> dict[str, Any]:
    where, store = make()
    fill_s = bulk_fill(kind, store, depth, payload)
    out: dict[str, Any] = {"store": kind, "depth": depth, "fill_s": fill_s}
    if kind == "postgres":
        out["explain"] = explain_claim(store)
    host = "d"
    cf: list[float] = []
    cl_only: list[float] = []
    reads: list[float] = []
    ins: list[float] = []
    blob = os.urandom(payload)
    for i in range(n):
        t = time.perf_counter()
        got = timed(cl_only, claim1, store, host)
        assert got, "queue ran dry"
        assert store.finish(got[0].job_id, "completed", time.time(), result=RESULT, token=got[0].token)
        cf.append((time.perf_counter() - t) * 1e3)
        timed(ins, submit, store, blob)  # one in for each one out: the depth stays
        if i % 10 == 0:
            timed(reads, submit_reads, store)
    # a host that proves only a circuit whose jobs all wait behind the whole queue (another circuit's):
    # the claim walks that circuit's index (jobs_queue_circuit), not the queue ahead of it
    behind: list[float] = []
    for _ in range(min(n, 100)):
        submit(store, blob, circuit="behind")
    for _ in range(min(n, 100)):
        got = timed(
            behind,
            store.claim,
            host,
            None,
            1,
            LEASE_S,
            keys=["behind@v1"],
            hot=["behind"],
            cold_after_s=AFFINITY_S,
            one_circuit=True,
        )
        assert got and got[0].circuit_id == "behind"
        store.finish(got[0].job_id, "completed", time.time(), result=RESULT, token=got[0].token)
    out |= {
        "claim_finish": summary(cf),
        "claim": summary(cl_only),
        "claim_behind": summary(behind),
        "submit_reads": summary(reads),
        "submit": summary(ins),
    }
    if kind == "postgres":
        out["explain_after"] = explain_claim(store)
    store.close()
    log(f"  depth {kind} {depth}: claim+finish median {out['claim_finish']['median_ms']:.2f} ms")
    return out


# -- 4. operations per proof --------------------------------------------------------------------------------
def count_path(store: JournalStore, pg: bool, jobs: int) -> dict[str, Any]:
    """Statements / store calls of each step of a job's life in cluster mode, on one store."""
    c = counting(store, pg)
    blob = os.urandom(4096)
    steps: dict[str, list[tuple[int, int]]] = {}

    def step(name: str, fn: Callable[..., Any], *args: Any, **kw: Any) -> Any:
        c.take()
        r = fn(*args, **kw)
        steps.setdefault(name, []).append(c.take())
        return r

    info = {"state": "up"}
    for _ in range(jobs):
        # Engine._accept_shared: two counts, the insert, the queue figures
        step(
            "submit: count_unfinished x2 + count_queued_ahead (capped)",
            submit_reads,
            store,
        )
        step("submit: insert_job (1 partition)", submit, store, blob)
        # ClusterMember.claim_some + _adopt
        cl = step("claim (limit 1)", claim1, store, "p")[0]
        step("adopt: get + payloads", adopt_reads, store, cl.job_id)
        # Engine._await_journal on the front door: one read per poll
        step("await poll (get)", store.get, cl.job_id)
        step("finish (fenced)", store.finish, cl.job_id, "completed", time.time(), result=RESULT, token=cl.token)
        step("purge_payloads (after each finish)", store.purge_payloads)
        # ClusterMember._beat_once, every lease/4 per host (not per job)
        step("beat: heartbeat (2 held)", store.heartbeat, "p", {cl.job_id: 99, "x": 1})
        step("beat: expire_leases", store.expire_leases)
        step("beat: host_beat", store.host_beat, "p", info)
        step("beat: take_task", store.take_task, "retention", "p", 60.0)
        step("idle claim (empty queue)", claim1, store, "p")
    return {k: {"calls": v[-1][0], "statements": v[-1][1]} for k, v in steps.items()}


def pg_stats_run(srv: PgServer, jobs: int) -> dict[str, Any]:
    """pg_stat_statements and pg_stat_database around ``jobs`` jobs through submit (with the cluster
    submit's reads), claim, adopt, finish, purge_payloads: statements and commits per job."""
    import psycopg

    url = new_pg_db(srv)
    dbname = db_name(url)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
    store = open_store("postgres", url, pool_size=1)
    blob = os.urandom(4096)
    time.sleep(1.2)

    def db_stats() -> tuple[int, int]:
        with psycopg.connect(url, autocommit=True) as conn:
            r = conn.execute("SELECT xact_commit, xact_rollback FROM pg_stat_database WHERE datname = %s", (dbname,)).fetchone()
            assert r is not None
            return int(r[0]), int(r[1])

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SELECT pg_stat_statements_reset()")
    before = db_stats()
    for _ in range(jobs):
        store.count_unfinished(CIRCUIT, cap=MAX_QUEUE_PER_CIRCUIT)
        store.count_unfinished(cap=MAX_PENDING)
        jid = submit(store, blob)
        store.count_queued_ahead(2, MAX_PENDING)
        cl = claim1(store, "p")[0]
        store.get(jid)
        store.payloads(jid)
        store.finish(jid, "completed", time.time(), result=RESULT, token=cl.token)
        store.purge_payloads()
    store.close()  # its backends report their counters when they exit
    time.sleep(1.5)
    after = db_stats()
    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT s.calls, s.query FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid "
            "WHERE d.datname = %s ORDER BY s.calls DESC",
            (dbname,),
        ).fetchall()
    stmts = [(int(n), " ".join(str(q).split())[:110]) for n, q in rows if "pg_stat" not in str(q) and "xact_commit" not in str(q)]
    # the two db_stats() reads after `before` count too (one commit each)
    return {
        "jobs": jobs,
        "commits_per_job": (after[0] - before[0] - 2) / jobs,
        "statements_per_job": sum(n for n, _q in stmts) / jobs,
        "by_statement": stmts,
    }


# -- capacity on paper ------------------------------------------------------------------------------------
def capacity(res: dict[str, Any], gpu_s: float, poll_s: float, lease_s: float, payload_mb: float) -> dict[str, Any]:
    """Database load per H200 host proving one partition per ``gpu_s`` seconds, and hosts per PostgreSQL."""
    per = res["per_proof"]["postgres"]
    job_calls = sum(
        v["calls"]
        for k, v in per.items()
        if not k.startswith("beat") and k not in ("idle claim (empty queue)", "await poll (get)")
    )
    polls = 1 + math.ceil(math.log2(max(1.0, poll_s / 0.02))) + max(0.0, (gpu_s - 0.3) / poll_s)  # 20 ms doubling to poll_s
    beat_calls = sum(v["calls"] for k, v in per.items() if k.startswith("beat"))
    calls_per_job = job_calls + polls * per["await poll (get)"]["calls"]
    jobs_per_s = 1.0 / gpu_s
    host_calls_per_s = calls_per_job * jobs_per_s + beat_calls / (lease_s / 4)
    best = max(
        (r for r in res["claimers"] if r["store"] == "postgres"),
        key=lambda r: r["claims_per_s"],
    )
    # one claim+finish cycle = 2 write transactions (+ the pool's check round trip each)
    writes_per_s = 2 * best["claims_per_s"]
    write_calls_per_job = 4  # insert_job, claim, finish, purge_payloads
    hosts_by_writes = writes_per_s / (write_calls_per_job * jobs_per_s)
    ops = res["ops"]
    db_ms_per_job = (
        sum(ops[o]["postgres"]["median_ms"] for o in ("submit", "claim", "finish", "purge_payloads", "submit_reads"))
        + polls * ops["await_poll"]["postgres"]["median_ms"]
    )
    return {
        "gpu_s_per_partition": gpu_s,
        "jobs_per_s_per_host": jobs_per_s,
        "await_polls_per_job": polls,
        "store_calls_per_job": calls_per_job,
        "background_calls_per_host_per_s": beat_calls / (lease_s / 4),
        "store_calls_per_s_per_host": host_calls_per_s,
        "write_tx_per_s_per_host": write_calls_per_job * jobs_per_s + 3 / (lease_s / 4),
        "measured_claim_finish_per_s_best": best["claims_per_s"],
        "measured_claimers_best": best["processes"],
        "hosts_by_measured_writes": hosts_by_writes,
        "client_ms_per_job_serial": db_ms_per_job,
        "payload_mb_per_job": payload_mb,
        "payload_mb_per_s_per_host": payload_mb * jobs_per_s,
    }


# -- output -------------------------------------------------------------------------------------------------
def machine() -> dict[str, Any]:
    cpu = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "nproc": os.cpu_count(),
        "cpu": cpu,
        "loadavg_start": list(os.getloadavg()),
        "python": platform.python_version(),
        "date_utc": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }


def print_report(res: dict[str, Any]) -> None:
    m = res["machine"]
    print(f"\nmachine: {m['nproc']} cores, {m['cpu']}, load {m['loadavg_start']} -> {m.get('loadavg_end')}")
    print(
        f"PostgreSQL {res['postgres_version']} ({'durable' if res['args']['durable'] else 'fsync off'}), "
        f"SQLite {res['sqlite_version']} (synchronous={res['args']['sqlite_sync']})"
    )
    print(f"\n1. per operation, {res['args']['ops']} ops each, payload {res['args']['payload']} B (ms)")
    print(f"{'op':16} {'pg med':>8} {'pg p99':>8} {'sq med':>8} {'sq p99':>8} {'ratio med':>9} {'ratio p99':>9}")
    for op, r in res["ops"].items():
        p, s = r["postgres"], r["sqlite"]
        print(
            f"{op:16} {p['median_ms']:8.3f} {p['p99_ms']:8.3f} {s['median_ms']:8.3f} {s['p99_ms']:8.3f} "
            f"{r['ratio_median']:9.2f} {r['ratio_p99']:9.2f}"
        )
    b = res.get("big_submit")
    if b:
        print(
            f"submit {b['payload_bytes']} B: pg {b['postgres']['median_ms']:.1f} ms (p99 {b['postgres']['p99_ms']:.1f}), "
            f"sqlite {b['sqlite']['median_ms']:.1f} ms (p99 {b['sqlite']['p99_ms']:.1f}), ratio {b['ratio_median']:.2f}"
        )
    rt = res.get("pg_roundtrip")
    if rt:
        print(
            f"pg round trip (empty query, the pool's check): median {rt['empty_query']['median_ms']:.3f} ms; "
            f"checkout + SELECT 1: {rt['checkout_select1']['median_ms']:.3f} ms"
        )
    print("\n2. claimers (claim limit 1 + fenced finish per job, separate processes)")
    print(f"{'store':9} {'procs':>5} {'jobs':>6} {'claims/s':>9} {'med ms':>7} {'p99 ms':>7} {'per process':>22} exactly once")
    for r in res["claimers"]:
        cf = r["claim_finish"]
        print(
            f"{r['store']:9} {r['processes']:5d} {r['jobs']:6d} {r['claims_per_s']:9.0f} {cf['median_ms']:7.2f} "
            f"{cf['p99_ms']:7.2f} {r['per_process']!s:>22} {r['check']['exactly_once']}"
        )
    print("\n3. queue depth (ms)")
    print(
        f"{'store':9} {'depth':>7} {'claim+fin med':>13} {'p99':>7} {'claim med':>9} {'behind med':>10} "
        f"{'submit reads med':>16} {'submit med':>10}"
    )
    for r in res["depth"]:
        print(
            f"{r['store']:9} {r['depth']:7d} {r['claim_finish']['median_ms']:13.2f} {r['claim_finish']['p99_ms']:7.2f} "
            f"{r['claim']['median_ms']:9.2f} {r['claim_behind']['median_ms']:10.2f} {r['submit_reads']['median_ms']:16.2f} "
            f"{r['submit']['median_ms']:10.2f}"
        )
    for r in res["depth"]:
        if r["store"] == "postgres":
            print(f"  EXPLAIN claim at depth {r['depth']}: " + " | ".join(x.strip() for x in r["explain"][:3]))
    print("\n4. store calls / statements per step (PostgreSQL)")
    for k, v in res["per_proof"]["postgres"].items():
        print(f"  {k:44} calls {v['calls']:2d}  statements {v['statements']:2d}")
    ps = res.get("pg_stats")
    if ps:
        print(
            f"  pg_stat over {ps['jobs']} jobs: {ps['commits_per_job']:.1f} commits/job, {ps['statements_per_job']:.1f} statements/job"
        )
    c = res["capacity"]
    print("\ncapacity (on paper)")
    for k, v in c.items():
        print(f"  {k:36} {v:.3f}" if isinstance(v, float) else f"  {k:36} {v}")


def save(path: Path | None, res: dict[str, Any]) -> None:
    """Write the results so far (a part that fails later leaves the earlier ones)."""
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(res, indent=1, default=str))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    ap.add_argument("--ops", type=int, default=2000, help="operations of each kind per store (part 1)")
    ap.add_argument("--block", type=int, default=50, help="jobs per interleaved block (part 1)")
    ap.add_argument("--payload", type=int, default=64 << 10, help="submit payload bytes (part 1)")
    ap.add_argument("--big-payload", type=int, default=2 << 20, help="a larger submit payload (0 = skip)")
    ap.add_argument("--big-n", type=int, default=20, help="submits of --big-payload per store")
    ap.add_argument("--claim-jobs", type=int, default=2000, help="jobs per claimer run (part 2)")
    ap.add_argument("--procs", default="1,2,4", help="claimer process counts (part 2)")
    ap.add_argument("--claim-stores", default="postgres,sqlite", help="stores for part 2")
    ap.add_argument("--depths", default="100,10000,100000", help="queue depths (part 3)")
    ap.add_argument("--depth-n", type=int, default=300, help="claim+finish cycles per depth (part 3)")
    ap.add_argument("--depth-payload", type=int, default=4096, help="payload bytes of the bulk-loaded jobs (part 3)")
    ap.add_argument("--depth-stores", default="postgres,sqlite", help="stores for part 3")
    ap.add_argument("--count-jobs", type=int, default=50, help="jobs of the pg_stat run (part 4; 0 = skip)")
    ap.add_argument("--sqlite-sync", choices=("full", "normal"), default="full")
    ap.add_argument("--no-durable", dest="durable", action="store_false", help="PostgreSQL with fsync off (as the tests)")
    ap.add_argument("--gpu-s", type=float, default=2.5, help="GPU seconds per 130M partition (capacity)")
    ap.add_argument("--job-mb", type=float, default=1.6, help="input MB per partition job (capacity)")
    ap.add_argument("--only", default="ops,big,claimers,depth,count", help="parts to run")
    ap.add_argument("--json", type=Path, help="write the results here")
    ap.add_argument("-q", "--quiet", action="store_true")
    a = ap.parse_args(argv)
    why = why_unavailable()
    if why:
        print(f"cluster_bench: no PostgreSQL: {why}", file=sys.stderr)
        return 2
    only = set(a.only.split(","))

    def log(msg: str) -> None:
        if not a.quiet:
            print(msg, file=sys.stderr, flush=True)

    import sqlite3

    import psycopg

    res: dict[str, Any] = {"machine": machine(), "args": {k: str(v) if isinstance(v, Path) else v for k, v in vars(a).items()}}
    res["sqlite_version"] = sqlite3.sqlite_version
    srv = PgServer(durable=a.durable, settings={"shared_preload_libraries": "pg_stat_statements"}).start()
    tmp = Path(tempfile.mkdtemp(prefix="cuzk-cbench-"))
    try:
        with psycopg.connect(srv.url(), autocommit=True) as conn:
            v = conn.execute("SHOW server_version").fetchone()
            res["postgres_version"] = str(v[0]) if v else "?"

        def make(kind: str) -> Callable[[], tuple[str, JournalStore]]:
            def f() -> tuple[str, JournalStore]:
                if kind == "postgres":
                    url = new_pg_db(srv)
                    return url, open_store(kind, url)
                p = str(tmp / f"{uuid.uuid4().hex}.sqlite")
                return p, open_store(kind, p, a.sqlite_sync)

            return f

        if only & {"ops", "big"}:
            stores = {k: make(k)()[1] for k in ("postgres", "sqlite")}
            if "ops" in only:
                log("1. per-operation latency")
                res["ops"] = bench_ops(stores, a.ops, a.block, a.payload, log)
            if "big" in only and a.big_payload:
                res["big_submit"] = bench_big_submit(stores, a.big_n, a.big_payload)
                res["pg_roundtrip"] = pg_roundtrip(stores["postgres"], 500)
            for s in stores.values():
                s.close()
        if "claimers" in only:
            save(a.json, res)
            log("2. claimers")
            res["claimers"] = [
                bench_claimers(k, make(k), int(n), a.claim_jobs, 1024, log)
                for n in a.procs.split(",")
                for k in a.claim_stores.split(",")
            ]
        if "depth" in only:
            save(a.json, res)
            log("3. queue depth")
            res["depth"] = [
                bench_depth(k, make(k), int(d), a.depth_n, a.depth_payload, log)
                for d in a.depths.split(",")
                for k in a.depth_stores.split(",")
            ]
        if "count" in only:
            save(a.json, res)
            log("4. operations per proof")
            res["per_proof"] = {k: count_path(make(k)()[1], k == "postgres", 3) for k in ("postgres", "sqlite")}
            if a.count_jobs:
                res["pg_stats"] = pg_stats_run(srv, a.count_jobs)
        if {"ops", "claimers", "count"} <= only:
            res["capacity"] = capacity(res, a.gpu_s, 0.25, LEASE_S, a.job_mb)
        res["machine"]["loadavg_end"] = list(os.getloadavg())
    finally:
        srv.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    save(a.json, res)
    if {"ops", "claimers", "depth", "count"} <= only:
        print_report(res)
    else:
        print(json.dumps({k: v for k, v in res.items() if k not in ("args",)}, indent=1, default=str)[:20000])
    return 0


if __name__ == "__main__":
    sys.exit(main())
