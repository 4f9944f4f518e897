"""The PostgreSQL store of the journal (``journal.url = "postgresql://..."``): the same tables as the SQLite
store (:mod:`.sqlite`), in a database that many daemons share (issue 23), through psycopg 3 and a
connection pool.

The schema is created and migrated by ``cuzk journal migrate`` (:func:`migrate`), never by the daemon:
the versions applied are rows of ``schema_version``, and a daemon refuses (one line) a database whose
version is not the one it was built for.

SQL kept to what YugabyteDB (YSQL) and CockroachDB also accept (NOTES.md, "Cluster journal"): plain
tables with BIGSERIAL/TEXT/BYTEA/DOUBLE PRECISION columns, partial indexes, ``INSERT ... ON CONFLICT``,
``RETURNING``, ``= ANY(array)``, ``SELECT ... FOR UPDATE SKIP LOCKED``; no LISTEN/NOTIFY, advisory locks,
stored procedures, DELETE ... USING or transactional-DDL assumptions (every migration statement is
``IF NOT EXISTS``, so a migration cut short runs again). Transactions that lose a serialization conflict
(SQLSTATE 40001, CockroachDB's retry error; 40P01) are retried.

Times are unix seconds (DOUBLE PRECISION) as in SQLite; leases use the database's clock when the caller
gives no ``now`` (hosts' clocks may differ, the database's is one).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

from ... import CuzkError, __version__
from .base import FINAL, Claim, JournalSchemaMismatch, JournalStore, Row, lost_error

if TYPE_CHECKING:
    import psycopg

T = TypeVar("T")

SCHEMA_VERSION = 1

# version -> its statements (each idempotent: IF NOT EXISTS)
MIGRATIONS: dict[int, list[str]] = {
    1: [
        """CREATE TABLE IF NOT EXISTS jobs (
            seq BIGSERIAL PRIMARY KEY,
            job_id TEXT NOT NULL UNIQUE,
            request_id TEXT,
            request_hash TEXT NOT NULL,
            circuit_id TEXT NOT NULL,
            priority INTEGER NOT NULL,
            n_partitions INTEGER NOT NULL,
            state TEXT NOT NULL,
            submitted_at DOUBLE PRECISION NOT NULL,
            started_at DOUBLE PRECISION,
            finished_at DOUBLE PRECISION,
            attempts INTEGER NOT NULL DEFAULT 0,
            error TEXT,
            result TEXT,
            version TEXT,
            claim_token BIGINT NOT NULL DEFAULT 0,
            claim_host TEXT,
            lease_until DOUBLE PRECISION,
            lease_s DOUBLE PRECISION
        )""",
        "CREATE UNIQUE INDEX IF NOT EXISTS jobs_request ON jobs (request_id) WHERE request_id IS NOT NULL",
        "CREATE INDEX IF NOT EXISTS jobs_state ON jobs (state)",
        "CREATE INDEX IF NOT EXISTS jobs_queue ON jobs (priority DESC, seq) WHERE state = 'queued'",
        "CREATE INDEX IF NOT EXISTS jobs_leases ON jobs (lease_until) WHERE state = 'running'",
        """CREATE TABLE IF NOT EXISTS payloads (
            job_id TEXT NOT NULL,
            part INTEGER NOT NULL,
            kind TEXT NOT NULL,
            data BYTEA NOT NULL,
            file TEXT,
            PRIMARY KEY (job_id, part)
        )""",
        """CREATE TABLE IF NOT EXISTS events (
            id BIGSERIAL PRIMARY KEY,
            job_id TEXT NOT NULL,
            event TEXT NOT NULL,
            at DOUBLE PRECISION NOT NULL,
            detail TEXT
        )""",
        "CREATE INDEX IF NOT EXISTS events_job ON events (job_id)",
        """CREATE TABLE IF NOT EXISTS circuits (
            id TEXT PRIMARY KEY,
            spec TEXT NOT NULL,
            registered_at DOUBLE PRECISION NOT NULL
        )""",
        """CREATE TABLE IF NOT EXISTS circuit_versions (
            circuit_id TEXT NOT NULL,
            version TEXT NOT NULL,
            spec TEXT NOT NULL,
            key_sha256 TEXT NOT NULL,
            files TEXT NOT NULL,
            source TEXT NOT NULL,
            registered_at DOUBLE PRECISION NOT NULL,
            PRIMARY KEY (circuit_id, version)
        )""",
        """CREATE TABLE IF NOT EXISTS file_hashes (
            path TEXT PRIMARY KEY,
            stamp TEXT NOT NULL,
            sha256 TEXT NOT NULL
        )""",
    ],
}

_VERSION_TABLE = """CREATE TABLE IF NOT EXISTS schema_version (
    version INTEGER PRIMARY KEY,
    applied_at DOUBLE PRECISION NOT NULL,
    cuzk TEXT NOT NULL
)"""

_NOT_FINAL = "state NOT IN ('completed','failed','cancelled')"
_NOW = "SELECT CAST(EXTRACT(EPOCH FROM CURRENT_TIMESTAMP) AS DOUBLE PRECISION)"


def redact(url: str) -> str:
    """``url`` without its password (for messages and logs)."""
    try:
        p = urlsplit(url)
    except ValueError:
        return "postgresql://..."
    if p.password is None:
        return url
    netloc = p.netloc.rsplit("@", 1)
    user = (p.username or "") + ":***"
    return urlunsplit((p.scheme, f"{user}@{netloc[-1]}", p.path, p.query, p.fragment))


def _psycopg() -> Any:
    try:
        import psycopg
    except ImportError:  # pragma: no cover - a core dependency
        raise CuzkError("journal.url needs psycopg 3 (pip install 'psycopg[binary]' psycopg-pool)") from None
    return psycopg


def _connect(url: str) -> psycopg.Connection[Any]:
    pg = _psycopg()
    try:
        conn: psycopg.Connection[Any] = pg.connect(url, autocommit=True, connect_timeout=10)
    except pg.Error as e:
        first = (str(e).strip().splitlines() or [type(e).__name__])[0]
        raise CuzkError(f"journal {redact(url)}: cannot connect: {first}") from None
    return conn


def schema_version(conn: psycopg.Connection[Any]) -> int:
    """The database's schema version (0: none, no ``schema_version`` table)."""
    pg = _psycopg()
    try:
        with conn.transaction():
            row = conn.execute("SELECT MAX(version) FROM schema_version").fetchone()
    except pg.errors.UndefinedTable:
        return 0
    return int(row[0]) if row and row[0] is not None else 0


def migrate(url: str) -> tuple[int, int]:
    """Create or bring the schema up to :data:`SCHEMA_VERSION`; (version before, version after). A database
    newer than this cuzk is refused (nothing written)."""
    conn = _connect(url)
    try:
        before = schema_version(conn)
        if before > SCHEMA_VERSION:
            raise JournalSchemaMismatch(
                f"journal {redact(url)}: schema version {before} is newer than this cuzk's ({SCHEMA_VERSION}): run the newer cuzk"
            )
        conn.execute(_VERSION_TABLE)
        for v in range(before + 1, SCHEMA_VERSION + 1):
            for stmt in MIGRATIONS[v]:
                conn.execute(stmt)
            conn.execute(
                "INSERT INTO schema_version (version, applied_at, cuzk) VALUES (%s, %s, %s) ON CONFLICT (version) DO NOTHING",
                (v, time.time(), __version__),
            )
        return before, schema_version(conn)
    finally:
        conn.close()


class PostgresJournal(JournalStore):
    def __init__(self, url: str, spill_dir: Path, max_attempts: int = 3, pool_size: int = 8) -> None:
        self.url = url
        self.spill_dir = Path(spill_dir)
        self.max_attempts = max_attempts
        self._errors = _psycopg().errors
        conn = _connect(url)
        try:
            have = schema_version(conn)
        finally:
            conn.close()
        if have != SCHEMA_VERSION:
            what = "has no cuzk schema" if have == 0 else f"has schema version {have}, this cuzk needs {SCHEMA_VERSION}"
            raise JournalSchemaMismatch(
                f"journal {redact(url)} {what}: run `cuzk journal migrate --url URL` (with the newest cuzk of the cluster)"
            )
        from psycopg_pool import ConnectionPool

        self._pool: ConnectionPool[Any] = ConnectionPool(
            url,
            min_size=1,
            max_size=pool_size,
            kwargs={"autocommit": True},
            check=ConnectionPool.check_connection,  # a connection the server dropped is replaced, not used
            open=False,
            name="cuzk-journal",
        )
        self._pool.open(wait=True, timeout=30)

    @property
    def where(self) -> str:
        return redact(self.url)

    def close(self) -> None:
        self._pool.close()

    def _tx(self, fn: Callable[[psycopg.Cursor[Any]], T], tries: int = 8) -> T:
        """``fn(cursor)`` in one transaction, retried when it loses a serialization conflict or a deadlock."""
        for i in range(tries):
            try:
                with self._pool.connection() as conn, conn.transaction(), conn.cursor() as cur:
                    return fn(cur)
            except (self._errors.SerializationFailure, self._errors.DeadlockDetected):
                if i == tries - 1:
                    raise
                time.sleep(0.005 * (2**i))
        raise AssertionError("unreachable")

    def _read(self, sql: str, args: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with self._pool.connection() as conn:
            return list(conn.execute(sql, args).fetchall())

    def _row(self, sql: str, args: Sequence[Any]) -> Row | None:
        with self._pool.connection() as conn, conn.cursor() as cur:
            cur.execute(sql, args)
            r = cur.fetchone()
            if r is None:
                return None
            return dict(zip([c.name for c in cur.description or ()], r))

    @staticmethod
    def _now(cur: psycopg.Cursor[Any], now: float | None) -> float:
        if now is not None:
            return now
        r = cur.execute(_NOW).fetchone()
        assert r is not None
        return float(r[0])

    # -- jobs -------------------------------------------------------------------------------------
    def insert_job(
        self,
        job_id: str,
        request_id: str | None,
        request_hash: str,
        circuit_id: str,
        priority: int,
        payloads: list[tuple[str, bytes]],
        submitted_at: float,
        version: str | None = None,
    ) -> None:
        files = self._spill(job_id, payloads)

        def fn(cur: psycopg.Cursor[Any]) -> None:
            cur.execute(
                "INSERT INTO jobs (job_id, request_id, request_hash, circuit_id, priority, n_partitions, state, "
                "submitted_at, version) VALUES (%s, %s, %s, %s, %s, %s, 'queued', %s, %s)",
                (job_id, request_id or None, request_hash, circuit_id, priority, len(payloads), submitted_at, version),
            )
            cur.executemany(
                "INSERT INTO payloads (job_id, part, kind, data, file) VALUES (%s, %s, %s, %s, %s)",
                [(job_id, i, k, b"" if files[i] else d, files[i]) for i, (k, d) in enumerate(payloads)],
            )
            cur.execute("INSERT INTO events (job_id, event, at) VALUES (%s, 'accepted', %s)", (job_id, submitted_at))

        try:
            self._tx(fn)
        except BaseException:
            self._unlink([f for f in files if f])
            raise

    def by_request(self, request_id: str) -> Row | None:
        return self._row("SELECT * FROM jobs WHERE request_id = %s", (request_id,))

    def get(self, job_id: str) -> Row | None:
        return self._row("SELECT * FROM jobs WHERE job_id = %s", (job_id,))

    def payloads(self, job_id: str) -> list[tuple[str, bytes]]:
        rows = self._read("SELECT kind, data, file FROM payloads WHERE job_id = %s ORDER BY part", (job_id,))
        return self._read_payloads([(k, d, f) for k, d, f in rows])

    def mark_started(self, job_id: str, at: float) -> None:
        def fn(cur: psycopg.Cursor[Any]) -> None:
            cur.execute(
                "UPDATE jobs SET state='running', started_at=COALESCE(started_at, %s), attempts=attempts+1 "
                "WHERE job_id=%s AND state IN ('queued','running')",
                (at, job_id),
            )
            cur.execute("INSERT INTO events (job_id, event, at) VALUES (%s, 'started', %s)", (job_id, at))

        self._tx(fn)

    def finish(
        self,
        job_id: str,
        state: str,
        at: float,
        result: str | None = None,
        error: str | None = None,
        token: int | None = None,
    ) -> bool:
        assert state in FINAL

        def fn(cur: psycopg.Cursor[Any]) -> bool:
            if token is None:
                cur.execute(
                    "UPDATE jobs SET state=%s, finished_at=%s, result=%s, error=%s, lease_until=NULL "
                    f"WHERE job_id=%s AND {_NOT_FINAL}",
                    (state, at, result, error, job_id),
                )
            else:
                cur.execute(
                    "UPDATE jobs SET state=%s, finished_at=%s, result=%s, error=%s, lease_until=NULL "
                    "WHERE job_id=%s AND state='running' AND claim_token=%s",
                    (state, at, result, error, job_id, token),
                )
            if cur.rowcount == 0:
                return False
            cur.execute("INSERT INTO events (job_id, event, at, detail) VALUES (%s, %s, %s, %s)", (job_id, state, at, error))
            return True

        return self._tx(fn)

    def unfinished(self) -> list[Row]:
        with self._pool.connection() as conn, conn.cursor() as cur:
            cur.execute("SELECT * FROM jobs WHERE state IN ('queued','running') ORDER BY seq")
            cols = [c.name for c in cur.description or ()]
            return [dict(zip(cols, r)) for r in cur.fetchall()]

    def event(self, job_id: str, event: str, detail: str | None = None) -> None:
        self._tx(
            lambda cur: cur.execute(
                "INSERT INTO events (job_id, event, at, detail) VALUES (%s, %s, %s, %s)", (job_id, event, time.time(), detail)
            )
        )

    def events(self, job_id: str | None = None) -> list[tuple[str, str]]:
        if job_id is None:
            rows = self._read("SELECT job_id, event FROM events ORDER BY id")
        else:
            rows = self._read("SELECT job_id, event FROM events WHERE job_id=%s ORDER BY id", (job_id,))
        return [(a, b) for a, b in rows]

    def purge(self, older_than: float) -> int:
        files: list[str] = []

        def fn(cur: psycopg.Cursor[Any]) -> int:
            cur.execute(
                "SELECT job_id FROM jobs WHERE state IN ('completed','failed','cancelled') AND finished_at < %s", (older_than,)
            )
            ids = [r[0] for r in cur.fetchall()]
            for i in range(0, len(ids), 500):
                chunk = ids[i : i + 500]
                cur.execute("DELETE FROM jobs WHERE job_id = ANY(%s)", (chunk,))
                cur.execute("DELETE FROM events WHERE job_id = ANY(%s)", (chunk,))
                cur.execute("DELETE FROM payloads WHERE job_id = ANY(%s) RETURNING file", (chunk,))
                files.extend(r[0] for r in cur.fetchall() if r[0])
            return len(ids)

        n = self._tx(fn)
        self._unlink(files)
        return n

    def purge_payloads(self) -> int:
        files: list[str] = []

        def fn(cur: psycopg.Cursor[Any]) -> int:
            cur.execute(
                "DELETE FROM payloads WHERE EXISTS (SELECT 1 FROM jobs WHERE jobs.job_id = payloads.job_id AND "
                "jobs.state IN ('completed','failed','cancelled')) RETURNING file"
            )
            rows = cur.fetchall()
            files.extend(r[0] for r in rows if r[0])
            return len(rows)

        n = self._tx(fn)
        self._unlink(files)
        return n

    # -- claims (issue 23) ------------------------------------------------------------------------
    def claim(
        self, host: str, circuit_ids: Sequence[str] | None, limit: int, lease_s: float, now: float | None = None
    ) -> list[Claim]:
        if limit <= 0 or (circuit_ids is not None and not circuit_ids):
            return []

        def fn(cur: psycopg.Cursor[Any]) -> list[Claim]:
            at = self._now(cur, now)
            where, args = "state = 'queued'", []
            if circuit_ids is not None:
                where += " AND circuit_id = ANY(%s)"
                args.append(list(circuit_ids))
            cur.execute(
                "SELECT job_id, claim_token, circuit_id, priority, n_partitions, version, submitted_at, attempts FROM jobs "
                f"WHERE {where} ORDER BY priority DESC, seq LIMIT %s FOR UPDATE SKIP LOCKED",
                (*args, limit),
            )
            rows = cur.fetchall()
            if not rows:
                return []
            ids = [r[0] for r in rows]
            cur.execute(
                "UPDATE jobs SET state='running', claim_token=claim_token+1, claim_host=%s, lease_until=%s, lease_s=%s, "
                "started_at=COALESCE(started_at, %s) WHERE job_id = ANY(%s)",
                (host, at + lease_s, lease_s, at, ids),
            )
            cur.executemany(
                "INSERT INTO events (job_id, event, at, detail) VALUES (%s, 'claimed', %s, %s)", [(j, at, host) for j in ids]
            )
            return [Claim(j, tok + 1, cid, prio, n, ver, sub, att, at + lease_s) for j, tok, cid, prio, n, ver, sub, att in rows]

        return self._tx(fn)

    def heartbeat(self, host: str, tokens: Mapping[str, int], now: float | None = None) -> set[str]:
        if not tokens:
            return set()

        def fn(cur: psycopg.Cursor[Any]) -> set[str]:
            at = self._now(cur, now)
            kept = set()
            for jid, tok in tokens.items():
                cur.execute(
                    "UPDATE jobs SET lease_until = %s + lease_s WHERE job_id=%s AND claim_token=%s AND claim_host=%s "
                    "AND state='running' AND lease_until IS NOT NULL",
                    (at, jid, tok, host),
                )
                if cur.rowcount:
                    kept.add(jid)
            return kept

        return self._tx(fn)

    def expire_leases(self, now: float | None = None, max_attempts: int | None = None) -> list[tuple[str, str]]:
        limit = self.max_attempts if max_attempts is None else max_attempts

        def fn(cur: psycopg.Cursor[Any]) -> list[tuple[str, str]]:
            at = self._now(cur, now)
            cur.execute(
                "SELECT job_id, attempts, claim_host FROM jobs WHERE state='running' AND lease_until < %s "
                "ORDER BY seq FOR UPDATE SKIP LOCKED",
                (at,),
            )
            out = []
            for jid, att, host in cur.fetchall():
                n = att + 1
                if n >= limit:
                    err = lost_error(n, host)
                    cur.execute(
                        "UPDATE jobs SET state='failed', attempts=%s, finished_at=%s, error=%s, lease_until=NULL WHERE job_id=%s",
                        (n, at, err, jid),
                    )
                    cur.execute("INSERT INTO events (job_id, event, at, detail) VALUES (%s, 'failed', %s, %s)", (jid, at, err))
                    out.append((jid, "failed"))
                else:
                    cur.execute(
                        "UPDATE jobs SET state='queued', attempts=%s, claim_host=NULL, lease_until=NULL WHERE job_id=%s",
                        (n, jid),
                    )
                    cur.execute(
                        "INSERT INTO events (job_id, event, at, detail) VALUES (%s, 'expired', %s, %s)", (jid, at, f"host {host}")
                    )
                    out.append((jid, "queued"))
            return out

        return self._tx(fn)

    def release(self, host: str, job_id: str, token: int) -> bool:
        def fn(cur: psycopg.Cursor[Any]) -> bool:
            cur.execute(
                "UPDATE jobs SET state='queued', claim_host=NULL, lease_until=NULL WHERE job_id=%s AND claim_token=%s "
                "AND claim_host=%s AND state='running'",
                (job_id, token, host),
            )
            if not cur.rowcount:
                return False
            cur.execute(
                "INSERT INTO events (job_id, event, at, detail) VALUES (%s, 'released', %s, %s)", (job_id, time.time(), host)
            )
            return True

        return self._tx(fn)

    # -- circuits ---------------------------------------------------------------------------------
    def save_circuit(self, cid: str, spec: dict[str, Any]) -> None:
        self._tx(
            lambda cur: cur.execute(
                "INSERT INTO circuits (id, spec, registered_at) VALUES (%s, %s, %s) ON CONFLICT (id) DO UPDATE SET "
                "spec = EXCLUDED.spec, registered_at = EXCLUDED.registered_at",
                (cid, json.dumps(spec), time.time()),
            )
        )

    def circuits(self) -> list[dict[str, Any]]:
        return [json.loads(r[0]) for r in self._read("SELECT spec FROM circuits ORDER BY registered_at")]

    def save_version(
        self, cid: str, version: str, spec: dict[str, Any], key_sha256: str, files: dict[str, str], source: str
    ) -> None:
        self._tx(
            lambda cur: cur.execute(
                "INSERT INTO circuit_versions (circuit_id, version, spec, key_sha256, files, source, registered_at) "
                "VALUES (%s, %s, %s, %s, %s, %s, %s) ON CONFLICT (circuit_id, version) DO UPDATE SET spec = EXCLUDED.spec, "
                "key_sha256 = EXCLUDED.key_sha256, files = EXCLUDED.files, source = EXCLUDED.source, "
                "registered_at = EXCLUDED.registered_at",
                (cid, version, json.dumps(spec), key_sha256, json.dumps(files), source, time.time()),
            )
        )

    def version(self, cid: str, version: str) -> dict[str, Any] | None:
        row = self._row("SELECT * FROM circuit_versions WHERE circuit_id=%s AND version=%s", (cid, version))
        if row is None:
            return None
        row["spec"], row["files"] = json.loads(row["spec"]), json.loads(row["files"])
        return row

    def version_specs(self) -> list[dict[str, Any]]:
        return [json.loads(r[0]) for r in self._read("SELECT spec FROM circuit_versions")]

    def prune_versions(self, keep: set[tuple[str, str]]) -> int:
        def fn(cur: psycopg.Cursor[Any]) -> int:
            cur.execute(
                "SELECT circuit_id, version FROM circuit_versions v WHERE NOT EXISTS (SELECT 1 FROM jobs j WHERE "
                "j.circuit_id = v.circuit_id AND j.version = v.version AND j.state IN ('queued','running'))"
            )
            gone = [(c, v) for c, v in cur.fetchall() if (c, v) not in keep]
            if gone:
                cur.executemany("DELETE FROM circuit_versions WHERE circuit_id=%s AND version=%s", gone)
            return len(gone)

        return self._tx(fn)

    # -- file hashes ------------------------------------------------------------------------------
    def file_hash(self, path: str, stamp: str) -> str | None:
        rows = self._read("SELECT sha256 FROM file_hashes WHERE path=%s AND stamp=%s", (path, stamp))
        return str(rows[0][0]) if rows else None

    def save_file_hash(self, path: str, stamp: str, sha256: str) -> None:
        self._tx(
            lambda cur: cur.execute(
                "INSERT INTO file_hashes (path, stamp, sha256) VALUES (%s, %s, %s) ON CONFLICT (path) DO UPDATE SET "
                "stamp = EXCLUDED.stamp, sha256 = EXCLUDED.sha256",
                (path, stamp, sha256),
            )
        )
