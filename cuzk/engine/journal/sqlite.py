"""Durable job journal: SQLite in WAL mode, in the daemon's state folder (the one-host store of
:class:`~.base.JournalStore`; :mod:`.postgres` is the cluster's).

Tables
  jobs      one row per accepted job: ids, circuit, priority, state (queued, running, completed, failed,
            cancelled), times, attempts, and when finished the result (JSON: proofs, public signals,
            timings) or the error; a claimed job also its claim (claim_token: the fencing token,
            claim_host, lease_until, lease_s; :meth:`.base.JournalStore.claim`).
  payloads  the request's partition inputs (witness bytes or inputs JSON), written in the same
            transaction as the job row (so a restart can re-run it) and deleted as soon as the job
            finished (by the housekeeping thread, off the critical path; ``secure_delete`` zeroes the
            freed pages and the WAL is checkpointed and truncated: no witness outlives its job). Inputs above 64 MiB are
            files in ``<journal>.payloads/`` (fsync'd before the row that names them), the row keeps
            the name: SQLite refuses values over 1 GB.
  events    an append-only log of state changes (accepted, started, recovered, completed, failed,
            cancelled): an audit trail that also lets tests check "completed exactly once".
  circuits  circuits registered through the RegisterCircuit RPC (config circuits come from the file).
  circuit_versions  the definition of each circuit version (:attr:`Circuit.version`: its files' SHA-256,
            Python class and parameters) that is current or that an unfinished job was accepted for
            (``jobs.version``): a job recovered after a restart is proved with its own version's key, or
            fails if that version's files are gone or changed. Rows no one needs are pruned.
  file_hashes  SHA-256 of circuit files by path and stamp (device, inode, size, mtime, ctime): a restart
            does not read every key again to know its version.
  hosts, cluster_tasks  the cluster's state (issue 23; :mod:`.base`): kept in both stores' schema, so the
            methods behave the same on one host.

A job is acknowledged to the client only after its row and payload are committed, so nothing
accepted is lost by a crash (``synchronous = full`` also survives power loss; ``normal`` survives a
killed process). Finished jobs are deleted ``retention`` seconds after they finished.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from .base import JournalDamaged, JournalStore, Tx

T = TypeVar("T")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    job_id TEXT NOT NULL UNIQUE,
    request_id TEXT,
    request_hash TEXT NOT NULL,
    circuit_id TEXT NOT NULL,
    priority INTEGER NOT NULL,
    n_partitions INTEGER NOT NULL,
    state TEXT NOT NULL,
    submitted_at REAL NOT NULL,
    started_at REAL,
    finished_at REAL,
    attempts INTEGER NOT NULL DEFAULT 0,
    error TEXT,
    result TEXT,
    version TEXT,
    claim_token INTEGER NOT NULL DEFAULT 0,
    claim_host TEXT,
    lease_until REAL,
    lease_s REAL
);
CREATE UNIQUE INDEX IF NOT EXISTS jobs_request ON jobs(request_id) WHERE request_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS jobs_state ON jobs(state);
CREATE INDEX IF NOT EXISTS jobs_queue ON jobs(priority DESC, seq) WHERE state = 'queued';
CREATE INDEX IF NOT EXISTS jobs_finished ON jobs(finished_at);
CREATE INDEX IF NOT EXISTS jobs_queue_circuit ON jobs(circuit_id, priority DESC, seq) WHERE state = 'queued';
CREATE INDEX IF NOT EXISTS jobs_unfinished ON jobs(circuit_id) WHERE state IN ('queued', 'running');
CREATE TABLE IF NOT EXISTS payloads (
    job_id TEXT NOT NULL,
    part INTEGER NOT NULL,
    kind TEXT NOT NULL,
    data BLOB NOT NULL,
    PRIMARY KEY (job_id, part)
);
CREATE TABLE IF NOT EXISTS events (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    job_id TEXT NOT NULL,
    event TEXT NOT NULL,
    at REAL NOT NULL,
    detail TEXT
);
CREATE INDEX IF NOT EXISTS events_job ON events(job_id);
CREATE TABLE IF NOT EXISTS circuits (
    id TEXT PRIMARY KEY,
    spec TEXT NOT NULL,
    registered_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS circuit_versions (
    circuit_id TEXT NOT NULL,
    version TEXT NOT NULL,
    spec TEXT NOT NULL,
    key_sha256 TEXT NOT NULL,
    files TEXT NOT NULL,
    source TEXT NOT NULL,
    registered_at REAL NOT NULL,
    PRIMARY KEY (circuit_id, version)
);
CREATE TABLE IF NOT EXISTS file_hashes (
    path TEXT PRIMARY KEY,
    stamp TEXT NOT NULL,
    sha256 TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS hosts (
    host TEXT PRIMARY KEY,
    first_seen REAL NOT NULL,
    last_seen REAL NOT NULL,
    info TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS cluster_tasks (
    name TEXT PRIMARY KEY,
    host TEXT NOT NULL,
    until REAL NOT NULL
);
"""


# what a journal must hold for this daemon to use it: table -> columns ("file" of payloads and "version" of
# jobs are added to older journals at open, the tables they lack are created)
EXPECTED = {
    "jobs": {
        "seq", "job_id", "request_id", "request_hash", "circuit_id", "priority", "n_partitions", "state",
        "submitted_at", "started_at", "finished_at", "attempts", "error", "result",
    },
    "payloads": {"job_id", "part", "kind", "data"},
    "events": {"id", "job_id", "event", "at", "detail"},
    "circuits": {"id", "spec", "registered_at"},
    "circuit_versions": {"circuit_id", "version", "spec", "key_sha256", "files", "source", "registered_at"},
    "file_hashes": {"path", "stamp", "sha256"},
}  # fmt: skip


def check_db(db: sqlite3.Connection) -> list[str]:
    """Problems of an open journal (empty: sound): SQLite's quick_check (every page readable, b-trees
    well formed) and the schema. Reads only."""
    problems: list[str] = []
    try:
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'").fetchall()}
        for t, cols in EXPECTED.items():
            if t not in tables:  # created at open (CREATE TABLE IF NOT EXISTS)
                continue
            have = {r[1] for r in db.execute(f"PRAGMA table_info({t})").fetchall()}
            if cols - have:
                problems.append(f"table {t} lacks column(s) {', '.join(sorted(cols - have))}")
        rows = [r[0] for r in db.execute("PRAGMA quick_check(20)").fetchall()]
        if rows != ["ok"]:
            problems.extend(str(r) for r in rows)
    except sqlite3.Error as e:
        problems.append(str(e))
    return problems


def private_file(path: Path) -> None:
    """Create ``path`` (if missing) readable by its owner only; tighten an existing one."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        os.fchmod(fd, 0o600)
    finally:
        os.close(fd)


# columns added to jobs since the first journals (added at open, with their definition)
_ADDED_JOB_COLUMNS = {
    "version": "TEXT",  # jobs pinned to circuit versions
    "claim_token": "INTEGER NOT NULL DEFAULT 0",  # claims (issue 23)
    "claim_host": "TEXT",
    "lease_until": "REAL",
    "lease_s": "REAL",
}


class _SqliteTx(Tx):
    """The connection, for the SQL of :class:`~.base.JournalStore` (written for SQLite already: ``?``)."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    def x(self, sql: str, args: Sequence[Any] = ()) -> sqlite3.Cursor:
        return self.db.execute(sql, args)

    def many(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        if rows:
            self.db.executemany(sql, rows)

    def any_of(self, expr: str, values: Sequence[Any]) -> tuple[str, list[Any]]:
        if not values:
            return "1 = 0", []
        return f"({expr}) IN ({','.join('?' * len(values))})", list(values)

    def now(self, now: float | None = None) -> float:
        return time.time() if now is None else now


class SqliteJournal(JournalStore):
    _RACE_LOST = (sqlite3.IntegrityError,)

    def __init__(self, path: str | Path, synchronous: str = "full", max_attempts: int = 3) -> None:
        self.path = Path(path)
        self.max_attempts = max_attempts
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fresh = not self.path.exists() or self.path.stat().st_size == 0
        if not fresh:  # SQLite gives the WAL and SHM files the database file's mode
            try:
                os.chmod(self.path, 0o600)
            except OSError:
                pass
        else:
            private_file(self.path)
        self._db = sqlite3.connect(str(self.path), check_same_thread=False, isolation_level=None, timeout=30)
        if not fresh:  # refused before anything is written to it: the damaged file stays as it was
            problems = check_db(self._db)
            if problems:
                self._db.close()
                d = self.path.parent
                raise JournalDamaged(
                    f"journal {self.path} is damaged ({problems[0]}); it is left untouched: "
                    f"`cuzk journal check {d}` lists what is wrong, `cuzk journal salvage {d}` copies what is "
                    "readable into a fresh journal (the damaged file is kept beside it)"
                )
        self._lock = threading.Lock()
        with self._lock:
            self._db.execute("PRAGMA secure_delete=ON")  # freed pages (finished jobs' witnesses) are zeroed
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute(f"PRAGMA synchronous={'FULL' if synchronous == 'full' else 'NORMAL'}")
            self._db.execute("PRAGMA foreign_keys=OFF")
            cols = {r[1] for r in self._db.execute("PRAGMA table_info(jobs)").fetchall()}
            for c, decl in _ADDED_JOB_COLUMNS.items():
                if cols and c not in cols:  # a journal written before the column existed
                    self._db.execute(f"ALTER TABLE jobs ADD COLUMN {c} {decl}")
            self._db.executescript(_SCHEMA)
            cols = {r[1] for r in self._db.execute("PRAGMA table_info(payloads)").fetchall()}
            if "file" not in cols:  # a journal written before payload files existed
                self._db.execute("ALTER TABLE payloads ADD COLUMN file TEXT")
        # payloads above SPILL_BYTES live in files beside the journal (SQLite refuses values over 1 GB,
        # and a 130M-constraint witness is 4.2 GB); the row keeps their kind and file name
        self.spill_dir = self.path.parent / (self.path.name + ".payloads")

    @property
    def where(self) -> str:
        return str(self.path)

    def close(self) -> None:
        with self._lock:
            try:
                self._db.close()
            except sqlite3.Error:
                pass

    def _tx(self, fn: Callable[[Tx], T]) -> T:
        """``fn(tx)`` in one immediate transaction (rolled back if it raises)."""
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                out = fn(_SqliteTx(self._db))
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")
            return out

    def _ro(self, fn: Callable[[Tx], T]) -> T:
        with self._lock:
            return fn(_SqliteTx(self._db))

    def purge_payloads(self) -> int:
        """Delete the payloads of finished jobs (they are never needed again). Driven by the payloads table,
        which holds only unfinished and just-finished jobs (each looked up by its unique job_id), not by
        the jobs table, which holds every finished job of the retention period."""

        done = "(SELECT state FROM jobs WHERE jobs.job_id = payloads.job_id) IN ('completed','failed','cancelled')"

        def fn(t: Tx) -> int:
            files.extend(r[0] for r in t.x(f"SELECT file FROM payloads WHERE file IS NOT NULL AND {done}").fetchall())
            return int(t.x(f"DELETE FROM payloads WHERE {done}").rowcount)

        files: list[str] = []
        n = self._tx(fn)
        self._unlink(files)
        if n:
            self.checkpoint()
        return n

    def checkpoint(self) -> None:
        """Copy the WAL into the database and truncate it: deleted payloads' old pages leave the WAL
        (with ``secure_delete`` their pages in the database are zeroed)."""
        with self._lock:
            try:
                self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
            except sqlite3.Error:
                pass


Journal = SqliteJournal  # the name every caller used before there were two stores
