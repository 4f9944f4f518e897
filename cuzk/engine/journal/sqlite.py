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

A job is acknowledged to the client only after its row and payload are committed, so nothing
accepted is lost by a crash (``synchronous = full`` also survives power loss; ``normal`` survives a
killed process). Finished jobs are deleted ``retention`` seconds after they finished.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from .base import FINAL, Claim, JournalDamaged, JournalStore, Row, lost_error

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


class SqliteJournal(JournalStore):
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

    def _tx(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """``fn(db)`` in one immediate transaction (rolled back if it raises)."""
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                out = fn(self._db)
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")
            return out

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
        """``version``: the circuit version (:attr:`Circuit.version`) the job is proved with."""
        files = self._spill(job_id, payloads)  # written and fsync'd before the row that names them

        def fn(db: sqlite3.Connection) -> None:
            db.execute(
                "INSERT INTO jobs (job_id, request_id, request_hash, circuit_id, priority, n_partitions, state, "
                "submitted_at, version) VALUES (?, ?, ?, ?, ?, ?, 'queued', ?, ?)",
                (job_id, request_id or None, request_hash, circuit_id, priority, len(payloads), submitted_at, version),
            )
            db.executemany(
                "INSERT INTO payloads (job_id, part, kind, data, file) VALUES (?, ?, ?, ?, ?)",
                [(job_id, i, k, sqlite3.Binary(b"" if files[i] else d), files[i]) for i, (k, d) in enumerate(payloads)],
            )
            db.execute("INSERT INTO events (job_id, event, at) VALUES (?, 'accepted', ?)", (job_id, submitted_at))

        try:
            self._tx(fn)
        except BaseException:
            self._unlink([f for f in files if f])
            raise

    def by_request(self, request_id: str) -> Row | None:
        with self._lock:
            cur = self._db.execute("SELECT * FROM jobs WHERE request_id = ?", (request_id,))
            return _row(cur)

    def get(self, job_id: str) -> Row | None:
        with self._lock:
            cur = self._db.execute("SELECT * FROM jobs WHERE job_id = ?", (job_id,))
            return _row(cur)

    def payloads(self, job_id: str) -> list[tuple[str, bytes]]:
        """A job's partition inputs; a payload file that is missing or unreadable raises CuzkError."""
        with self._lock:
            rows = self._db.execute("SELECT kind, data, file FROM payloads WHERE job_id = ? ORDER BY part", (job_id,)).fetchall()
        return self._read_payloads(rows)

    def mark_started(self, job_id: str, at: float) -> None:
        def fn(db: sqlite3.Connection) -> None:
            db.execute(
                "UPDATE jobs SET state='running', started_at=COALESCE(started_at, ?), attempts=attempts+1 "
                "WHERE job_id=? AND state IN ('queued','running')",
                (at, job_id),
            )
            db.execute("INSERT INTO events (job_id, event, at) VALUES (?, 'started', ?)", (job_id, at))

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
        """Record the final state once, with the job's record (``JobRecord.to_json``); False if the job had
        already finished, or ``token`` is not its current claim (nothing written)."""
        assert state in FINAL

        def fn(db: sqlite3.Connection) -> bool:
            if token is None:
                cur = db.execute(
                    "UPDATE jobs SET state=?, finished_at=?, result=?, error=?, lease_until=NULL WHERE job_id=? AND "
                    "state NOT IN ('completed','failed','cancelled')",
                    (state, at, result, error, job_id),
                )
            else:  # fenced: only the claim that holds the job now
                cur = db.execute(
                    "UPDATE jobs SET state=?, finished_at=?, result=?, error=?, lease_until=NULL WHERE job_id=? AND "
                    "state='running' AND claim_token=?",
                    (state, at, result, error, job_id, token),
                )
            if cur.rowcount == 0:
                return False
            # the payload is deleted later by purge_payloads (off the result's critical path: deleting a
            # multi-MB blob costs more than the rest of this transaction)
            db.execute("INSERT INTO events (job_id, event, at, detail) VALUES (?, ?, ?, ?)", (job_id, state, at, error))
            return True

        return self._tx(fn)

    def unfinished(self) -> list[Row]:
        with self._lock:
            cur = self._db.execute("SELECT * FROM jobs WHERE state IN ('queued','running') ORDER BY seq")
            cols = [c[0] for c in cur.description]
            return [dict(zip(cols, r)) for r in cur.fetchall()]

    def event(self, job_id: str, event: str, detail: str | None = None) -> None:
        self._tx(
            lambda db: db.execute(
                "INSERT INTO events (job_id, event, at, detail) VALUES (?, ?, ?, ?)", (job_id, event, time.time(), detail)
            )
        )

    def events(self, job_id: str | None = None) -> list[tuple[str, str]]:
        with self._lock:
            if job_id is None:
                rows = self._db.execute("SELECT job_id, event FROM events ORDER BY id").fetchall()
            else:
                rows = self._db.execute("SELECT job_id, event FROM events WHERE job_id=? ORDER BY id", (job_id,)).fetchall()
        return [(a, b) for a, b in rows]

    def purge(self, older_than: float) -> int:
        """Delete jobs (and their events) that finished before ``older_than`` (unix time)."""

        def fn(db: sqlite3.Connection) -> int:
            ids = [
                r[0]
                for r in db.execute(
                    "SELECT job_id FROM jobs WHERE state IN ('completed','failed','cancelled') AND finished_at < ?", (older_than,)
                ).fetchall()
            ]
            for i in range(0, len(ids), 500):
                chunk = ids[i : i + 500]
                marks = ",".join("?" * len(chunk))
                db.execute(f"DELETE FROM jobs WHERE job_id IN ({marks})", chunk)
                db.execute(f"DELETE FROM events WHERE job_id IN ({marks})", chunk)
                files.extend(
                    r[0] for r in db.execute(f"SELECT file FROM payloads WHERE file IS NOT NULL AND job_id IN ({marks})", chunk)
                )
                db.execute(f"DELETE FROM payloads WHERE job_id IN ({marks})", chunk)
            return len(ids)

        files: list[str] = []
        n = self._tx(fn)
        self._unlink(files)  # after the commit: a crash in between leaves a file, never a row without one
        return n

    def purge_payloads(self) -> int:
        """Delete the payloads of finished jobs (they are never needed again). Driven by the payloads table,
        which holds only unfinished and just-finished jobs (each looked up by its unique job_id), not by
        the jobs table, which holds every finished job of the retention period."""

        done = "(SELECT state FROM jobs WHERE jobs.job_id = payloads.job_id) IN ('completed','failed','cancelled')"

        def fn(db: sqlite3.Connection) -> int:
            files.extend(r[0] for r in db.execute(f"SELECT file FROM payloads WHERE file IS NOT NULL AND {done}"))
            return int(db.execute(f"DELETE FROM payloads WHERE {done}").rowcount)

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

    # -- claims (issue 23) ------------------------------------------------------------------------
    def claim(
        self, host: str, circuit_ids: Sequence[str] | None, limit: int, lease_s: float, now: float | None = None
    ) -> list[Claim]:
        if limit <= 0 or (circuit_ids is not None and not circuit_ids):
            return []
        at = time.time() if now is None else now

        def fn(db: sqlite3.Connection) -> list[Claim]:
            # one writer at a time (BEGIN IMMEDIATE): the select and the update are one step, as FOR UPDATE
            # SKIP LOCKED makes them on PostgreSQL
            where, args = "state='queued'", []
            if circuit_ids is not None:
                where += f" AND circuit_id IN ({','.join('?' * len(circuit_ids))})"
                args = list(circuit_ids)
            rows = db.execute(
                "SELECT job_id, claim_token, circuit_id, priority, n_partitions, version, submitted_at, attempts FROM jobs "
                f"WHERE {where} ORDER BY priority DESC, seq LIMIT ?",
                (*args, limit),
            ).fetchall()
            out = []
            for jid, tok, cid, prio, n, ver, sub, att in rows:
                db.execute(
                    "UPDATE jobs SET state='running', claim_token=?, claim_host=?, lease_until=?, lease_s=?, "
                    "started_at=COALESCE(started_at, ?) WHERE job_id=?",
                    (tok + 1, host, at + lease_s, lease_s, at, jid),
                )
                db.execute("INSERT INTO events (job_id, event, at, detail) VALUES (?, 'claimed', ?, ?)", (jid, at, host))
                out.append(Claim(jid, tok + 1, cid, prio, n, ver, sub, att, at + lease_s))
            return out

        return self._tx(fn)

    def heartbeat(self, host: str, tokens: Mapping[str, int], now: float | None = None) -> set[str]:
        at = time.time() if now is None else now

        def fn(db: sqlite3.Connection) -> set[str]:
            kept = set()
            for jid, tok in tokens.items():
                cur = db.execute(
                    "UPDATE jobs SET lease_until = ? + lease_s WHERE job_id=? AND claim_token=? AND claim_host=? "
                    "AND state='running' AND lease_until IS NOT NULL",
                    (at, jid, tok, host),
                )
                if cur.rowcount:
                    kept.add(jid)
            return kept

        return self._tx(fn) if tokens else set()

    def expire_leases(self, now: float | None = None, max_attempts: int | None = None) -> list[tuple[str, str]]:
        at = time.time() if now is None else now
        limit = self.max_attempts if max_attempts is None else max_attempts

        def fn(db: sqlite3.Connection) -> list[tuple[str, str]]:
            rows = db.execute(
                "SELECT job_id, attempts, claim_host FROM jobs WHERE state='running' AND lease_until IS NOT NULL "
                "AND lease_until < ? ORDER BY seq",
                (at,),
            ).fetchall()
            out = []
            for jid, att, host in rows:
                n = att + 1
                if n >= limit:
                    err = lost_error(n, host)
                    db.execute(
                        "UPDATE jobs SET state='failed', attempts=?, finished_at=?, error=?, lease_until=NULL WHERE job_id=?",
                        (n, at, err, jid),
                    )
                    db.execute("INSERT INTO events (job_id, event, at, detail) VALUES (?, 'failed', ?, ?)", (jid, at, err))
                    out.append((jid, "failed"))
                else:
                    db.execute(
                        "UPDATE jobs SET state='queued', attempts=?, claim_host=NULL, lease_until=NULL WHERE job_id=?",
                        (n, jid),
                    )
                    db.execute(
                        "INSERT INTO events (job_id, event, at, detail) VALUES (?, 'expired', ?, ?)", (jid, at, f"host {host}")
                    )
                    out.append((jid, "queued"))
            return out

        return self._tx(fn)

    def release(self, host: str, job_id: str, token: int) -> bool:
        def fn(db: sqlite3.Connection) -> bool:
            cur = db.execute(
                "UPDATE jobs SET state='queued', claim_host=NULL, lease_until=NULL WHERE job_id=? AND claim_token=? "
                "AND claim_host=? AND state='running'",
                (job_id, token, host),
            )
            if not cur.rowcount:
                return False
            db.execute("INSERT INTO events (job_id, event, at, detail) VALUES (?, 'released', ?, ?)", (job_id, time.time(), host))
            return True

        return self._tx(fn)

    # -- circuits ---------------------------------------------------------------------------------
    def save_circuit(self, cid: str, spec: dict[str, Any]) -> None:
        self._tx(
            lambda db: db.execute(
                "INSERT OR REPLACE INTO circuits (id, spec, registered_at) VALUES (?, ?, ?)", (cid, json.dumps(spec), time.time())
            )
        )

    def circuits(self) -> list[dict[str, Any]]:
        with self._lock:
            rows = self._db.execute("SELECT spec FROM circuits ORDER BY registered_at").fetchall()
        return [json.loads(r[0]) for r in rows]

    # -- circuit versions -------------------------------------------------------------------------
    def save_version(
        self, cid: str, version: str, spec: dict[str, Any], key_sha256: str, files: dict[str, str], source: str
    ) -> None:
        self._tx(
            lambda db: db.execute(
                "INSERT OR REPLACE INTO circuit_versions (circuit_id, version, spec, key_sha256, files, source, registered_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                (cid, version, json.dumps(spec), key_sha256, json.dumps(files), source, time.time()),
            )
        )

    def version(self, cid: str, version: str) -> dict[str, Any] | None:
        """A circuit version's row: spec and files (decoded), key_sha256, source; None if not kept."""
        with self._lock:
            cur = self._db.execute("SELECT * FROM circuit_versions WHERE circuit_id=? AND version=?", (cid, version))
            row = _row(cur)
        if row is None:
            return None
        row["spec"], row["files"] = json.loads(row["spec"]), json.loads(row["files"])
        return row

    def version_specs(self) -> list[dict[str, Any]]:
        with self._lock:
            rows = self._db.execute("SELECT spec FROM circuit_versions").fetchall()
        return [json.loads(r[0]) for r in rows]

    def prune_versions(self, keep: set[tuple[str, str]]) -> int:
        """Delete the circuit versions that are not in ``keep`` ((circuit id, version)) and that no
        unfinished job was accepted for."""

        def fn(db: sqlite3.Connection) -> int:
            rows = db.execute(
                "SELECT circuit_id, version FROM circuit_versions v WHERE NOT EXISTS (SELECT 1 FROM jobs j WHERE "
                "j.circuit_id = v.circuit_id AND j.version = v.version AND j.state IN ('queued','running'))"
            ).fetchall()
            gone = [(c, v) for c, v in rows if (c, v) not in keep]
            db.executemany("DELETE FROM circuit_versions WHERE circuit_id=? AND version=?", gone)
            return len(gone)

        return self._tx(fn)

    # -- file hashes ------------------------------------------------------------------------------
    def file_hash(self, path: str, stamp: str) -> str | None:
        with self._lock:
            r = self._db.execute("SELECT sha256 FROM file_hashes WHERE path=? AND stamp=?", (path, stamp)).fetchone()
        return r[0] if r else None

    def save_file_hash(self, path: str, stamp: str, sha256: str) -> None:
        self._tx(
            lambda db: db.execute(
                "INSERT OR REPLACE INTO file_hashes (path, stamp, sha256) VALUES (?, ?, ?)", (path, stamp, sha256)
            )
        )


def _row(cur: sqlite3.Cursor) -> Row | None:
    r = cur.fetchone()
    if r is None:
        return None
    return dict(zip([c[0] for c in cur.description], r))


Journal = SqliteJournal  # the name every caller used before there were two stores
