"""The PostgreSQL store of the journal (``journal.url = "postgresql://..."``): the same tables as the SQLite
store (:mod:`.sqlite`), in a database that many daemons share (issue 23), through psycopg 3 and a
connection pool.

The schema is created and migrated by ``cuzk journal migrate`` (:func:`migrate`), never by the daemon:
the versions applied are rows of ``schema_version``, and a daemon refuses (one line) a database whose
version is not the one it was built for.

SQL kept to what YugabyteDB (YSQL) and CockroachDB also accept (NOTES.md, "Cluster journal"): plain
tables with BIGSERIAL/TEXT/BYTEA/DOUBLE PRECISION columns, partial indexes, ``INSERT ... ON CONFLICT
(..) DO UPDATE SET .. WHERE ..`` (the conditional upsert of ``take_task``), ``RETURNING``, ``= ANY(array)``,
``||`` and ``COALESCE``, correlated subqueries, ``SELECT ... FOR UPDATE SKIP LOCKED``; no LISTEN/NOTIFY, advisory locks,
stored procedures, DELETE ... USING or transactional-DDL assumptions (every migration statement is
``IF NOT EXISTS``, so a migration cut short runs again). Transactions that lose a serialization conflict
(SQLSTATE 40001, CockroachDB's retry error; 40P01) are retried.

The SQL itself is written once, in :mod:`.base` (``?`` placeholders); :class:`_PgTx` runs it here (``?`` ->
``%s``, lists as ``= ANY(%s)``, row locks ``FOR UPDATE SKIP LOCKED``).

Times are unix seconds (DOUBLE PRECISION) as in SQLite; leases use the database's clock when the caller
gives no ``now`` (hosts' clocks may differ, the database's is one).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

from ... import CuzkError, __version__
from .base import JournalSchemaMismatch, JournalStore, Tx

if TYPE_CHECKING:
    import psycopg

T = TypeVar("T")

SCHEMA_VERSION = 3

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
    # the cluster's state (issue 23): hosts and their heartbeats, cluster-wide periodic tasks
    2: [
        """CREATE TABLE IF NOT EXISTS hosts (
            host TEXT PRIMARY KEY,
            first_seen DOUBLE PRECISION NOT NULL,
            last_seen DOUBLE PRECISION NOT NULL,
            info TEXT NOT NULL
        )""",
        """CREATE TABLE IF NOT EXISTS cluster_tasks (
            name TEXT PRIMARY KEY,
            host TEXT NOT NULL,
            until DOUBLE PRECISION NOT NULL
        )""",
        "CREATE INDEX IF NOT EXISTS jobs_finished ON jobs (finished_at)",
    ],
    # claims walk one circuit's queue at a time; a submission's limit counts stop at the limit (BENCHMARKS 11)
    3: [
        "CREATE INDEX IF NOT EXISTS jobs_queue_circuit ON jobs (circuit_id, priority DESC, seq) WHERE state = 'queued'",
        "CREATE INDEX IF NOT EXISTS jobs_unfinished ON jobs (circuit_id) WHERE state IN ('queued', 'running')",
    ],
}

_VERSION_TABLE = """CREATE TABLE IF NOT EXISTS schema_version (
    version INTEGER PRIMARY KEY,
    applied_at DOUBLE PRECISION NOT NULL,
    cuzk TEXT NOT NULL
)"""

_NOW = "SELECT CAST(EXTRACT(EPOCH FROM CURRENT_TIMESTAMP) AS DOUBLE PRECISION)"


def _q(sql: str) -> str:
    """The shared SQL (``?`` placeholders) in psycopg's spelling (``%s``; a literal ``%`` doubled)."""
    return sql.replace("%", "%%").replace("?", "%s")


class _PgTx(Tx):
    """A cursor in a transaction (or an autocommit read), for the SQL of :class:`~.base.JournalStore`."""

    lock = " FOR UPDATE SKIP LOCKED"

    def __init__(self, cur: psycopg.Cursor[Any]) -> None:
        self.cur = cur

    def x(self, sql: str, args: Sequence[Any] = ()) -> psycopg.Cursor[Any]:
        return self.cur.execute(_q(sql), args)

    def many(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        if rows:
            self.cur.executemany(_q(sql), rows)

    def any_of(self, expr: str, values: Sequence[Any]) -> tuple[str, list[Any]]:
        if not values:
            return "1 = 0", []
        return f"({expr}) = ANY(?)", [list(values)]

    def now(self, now: float | None = None) -> float:
        if now is not None:
            return now
        r = self.cur.execute(_NOW).fetchone()
        assert r is not None
        return float(r[0])


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
        self._RACE_LOST = (self._errors.UniqueViolation,)
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

    def _tx(self, fn: Callable[[Tx], T], tries: int = 8) -> T:
        """``fn(tx)`` in one transaction, retried when it loses a serialization conflict or a deadlock."""
        for i in range(tries):
            try:
                with self._pool.connection() as conn, conn.transaction(), conn.cursor() as cur:
                    return fn(_PgTx(cur))
            except (self._errors.SerializationFailure, self._errors.DeadlockDetected):
                if i == tries - 1:
                    raise
                time.sleep(0.005 * (2**i))
        raise AssertionError("unreachable")

    def _ro(self, fn: Callable[[Tx], T]) -> T:
        with self._pool.connection() as conn, conn.cursor() as cur:
            return fn(_PgTx(cur))

    def purge_payloads(self) -> int:
        """Delete the payloads of finished jobs (one statement: the files named by the rows it deleted)."""
        files: list[str] = []

        def fn(t: Tx) -> int:
            files.clear()
            rows = t.x(
                "DELETE FROM payloads WHERE EXISTS (SELECT 1 FROM jobs WHERE jobs.job_id = payloads.job_id AND "
                "jobs.state IN ('completed','failed','cancelled')) RETURNING file"
            ).fetchall()
            files.extend(r[0] for r in rows if r[0])
            return len(rows)

        n = self._tx(fn)
        self._unlink(files)
        return n
