"""The journal's interface (:class:`JournalStore`), shared by its two stores: SQLite (:mod:`.sqlite`, one host,
the default) and PostgreSQL (:mod:`.postgres`, ``journal.url``: one queue for many daemons).

What both stores hold: jobs (state, result or error, attempts), their partition inputs until they finish
(payloads; inputs above ``SPILL_BYTES`` are files in ``spill_dir``), an append-only event log, circuits
registered by RPC, circuit versions, and file hashes. See :mod:`.sqlite` for the tables.

Claims (issue 23): a host takes queued jobs with :meth:`JournalStore.claim` (highest priority first, FIFO
within a priority), each with a lease of ``lease_s`` seconds it renews with :meth:`JournalStore.heartbeat`,
and a fencing token: the job's claim counter, raised by every claim. :meth:`JournalStore.finish` with a
token writes the result only while that token is current (the job still running under that claim), so a
host whose lease expired (:meth:`JournalStore.expire_leases` put the job back in the queue, or another
host holds it now) writes nothing. ``attempts`` counts runs lost: a claim that expires raises it, and past
``max_attempts`` the job is FAILED instead of queued again (as today's restart quarantines a job the
daemon died in; :meth:`JournalStore.mark_started`, the one-daemon path, counts runs begun).

Cluster state (issue 23), on both stores: ``hosts`` (one row per daemon: first and last heartbeat, what it
reports, as JSON; :meth:`JournalStore.host_beat`, :meth:`JournalStore.hosts`) and ``cluster_tasks`` (which
host runs a cluster-wide periodic task, until when: :meth:`JournalStore.take_task`).

Each method has one body, here: its SQL is written once with ``?`` placeholders and run through the store's
:class:`Tx` (SQLite: the connection, under BEGIN IMMEDIATE for writes; PostgreSQL: a cursor in a transaction,
``?`` turned into ``%s``). A :class:`Tx` also spells what the two dialects write differently: a list test
(:meth:`Tx.any_of`: ``x IN (?, ?)`` / ``x = ANY(?)``), row locks (:attr:`Tx.lock`: `` FOR UPDATE SKIP
LOCKED`` on PostgreSQL; SQLite has one writer at a time) and the clock (:meth:`Tx.now`: the database's on
PostgreSQL, hosts' clocks differ). A store gives its write and read runners (``_tx``, ``_ro``).
"""

from __future__ import annotations

import abc
import json
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar

from ... import CuzkError

Row = dict[str, Any]  # a jobs row by column name
T = TypeVar("T")

FINAL = ("completed", "failed", "cancelled")
_FINAL_SQL = "('completed','failed','cancelled')"
_UNFINISHED_SQL = "('queued','running')"
# what a host's ``keys`` name: "circuit_id@version", "circuit_id@*" for a job of no version
KEY_EXPR = "circuit_id || '@' || COALESCE(version, '*')"
_CLAIM_COLS = "job_id, claim_token, circuit_id, priority, n_partitions, version, submitted_at, attempts"


class JournalDamaged(CuzkError):
    """The journal file is not a sound journal of this daemon; it was left as it is."""


class JournalSchemaMismatch(CuzkError):
    """A PostgreSQL journal whose schema is older or newer than this cuzk's (``cuzk journal migrate``)."""


@dataclass(frozen=True)
class Claim:
    """A job a host claimed: prove it, renew the lease, and finish it with ``token``."""

    job_id: str
    token: int  # the fencing token: the job's claim counter after this claim
    circuit_id: str
    priority: int
    n_partitions: int
    version: str | None
    submitted_at: float
    attempts: int  # runs lost before this claim
    lease_until: float  # unix time (the store's clock)


def died_error(attempts: int) -> str:
    """The error of a job FAILED because the daemon of one host stopped while proving it ``attempts`` times."""
    return f"quarantined after {attempts} attempts: the daemon stopped while proving it {attempts} times"


def lost_error(attempts: int, host: str | None) -> str:
    """The error of a job FAILED because its lease expired ``attempts`` times."""
    return (
        f"quarantined after {attempts} attempts: the lease of the host proving it expired {attempts} times "
        f"(last host {host or '?'}); it may crash whichever host proves it"
    )


class Cursor(Protocol):
    """What a statement gives back (sqlite3's and psycopg's cursors are both one)."""

    @property
    def rowcount(self) -> int: ...

    @property
    def description(self) -> Any: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...


class Tx(abc.ABC):
    """One transaction (or one read) of a store, for the SQL written once in :class:`JournalStore`:
    ``?`` placeholders, lists through :meth:`any_of`, row locks through :attr:`lock`."""

    lock = ""  # appended to a SELECT whose rows this transaction updates (PostgreSQL: FOR UPDATE SKIP LOCKED)

    @abc.abstractmethod
    def x(self, sql: str, args: Sequence[Any] = ()) -> Cursor:
        """Run one statement (``?`` placeholders); its cursor (read it before the next statement)."""

    @abc.abstractmethod
    def many(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        """Run one statement for each of ``rows`` (nothing when there are none)."""

    @abc.abstractmethod
    def any_of(self, expr: str, values: Sequence[Any]) -> tuple[str, list[Any]]:
        """A condition "``expr`` is one of ``values``" and its arguments (none of them: false)."""

    @abc.abstractmethod
    def now(self, now: float | None = None) -> float:
        """``now``, or the store's clock when None (PostgreSQL: the database's; SQLite: this host's)."""

    def rows(self, sql: str, args: Sequence[Any] = ()) -> list[Row]:
        cur = self.x(sql, args)
        cols = [d[0] for d in cur.description or ()]
        return [dict(zip(cols, r)) for r in cur.fetchall()]

    def row(self, sql: str, args: Sequence[Any] = ()) -> Row | None:
        rows = self.rows(sql, args)
        return rows[0] if rows else None


class JournalStore(abc.ABC):
    """What the engine needs of a journal; :class:`~.sqlite.SqliteJournal` and
    :class:`~.postgres.PostgresJournal` implement it: each gives its transaction runners (``_tx``, ``_ro``)
    and :class:`Tx`, the methods are written once, here."""

    SPILL_BYTES = 64 << 20  # payloads above this are files in ``spill_dir`` (both stores refuse values over 1 GB)
    spill_dir: Path
    max_attempts: int = 3
    # the store's error for an INSERT that lost a race for a unique key (take_task answers False on it)
    _RACE_LOST: tuple[type[BaseException], ...] = ()

    # -- lifecycle --------------------------------------------------------------------------------
    @abc.abstractmethod
    def close(self) -> None: ...

    @property
    @abc.abstractmethod
    def where(self) -> str:
        """Where the journal is, for messages (a path, or the database URL without its password)."""

    # -- the store's runners ----------------------------------------------------------------------
    @abc.abstractmethod
    def _tx(self, fn: Callable[[Tx], T]) -> T:
        """``fn(tx)`` in one write transaction, rolled back if it raises (PostgreSQL: run again when it
        loses a serialization conflict or a deadlock, so ``fn`` may run more than once)."""

    @abc.abstractmethod
    def _ro(self, fn: Callable[[Tx], T]) -> T:
        """``fn(tx)`` for reads, outside a write transaction."""

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
        """Journal an accepted job and its inputs in one transaction (state queued, event accepted);
        ``version``: the circuit version (:attr:`Circuit.version`) the job is proved with."""
        files = self._spill(job_id, payloads)  # written and fsync'd before the row that names them

        def fn(t: Tx) -> None:
            t.x(
                "INSERT INTO jobs (job_id, request_id, request_hash, circuit_id, priority, n_partitions, state, "
                "submitted_at, version) VALUES (?, ?, ?, ?, ?, ?, 'queued', ?, ?)",
                (job_id, request_id or None, request_hash, circuit_id, priority, len(payloads), submitted_at, version),
            )
            t.many(
                "INSERT INTO payloads (job_id, part, kind, data, file) VALUES (?, ?, ?, ?, ?)",
                [(job_id, i, k, b"" if files[i] else d, files[i]) for i, (k, d) in enumerate(payloads)],
            )
            t.x("INSERT INTO events (job_id, event, at) VALUES (?, 'accepted', ?)", (job_id, submitted_at))

        try:
            self._tx(fn)
        except BaseException:
            self._unlink([f for f in files if f])
            raise

    def by_request(self, request_id: str) -> Row | None:
        return self._ro(lambda t: t.row("SELECT * FROM jobs WHERE request_id = ?", (request_id,)))

    def get(self, job_id: str) -> Row | None:
        return self._ro(lambda t: t.row("SELECT * FROM jobs WHERE job_id = ?", (job_id,)))

    def payloads(self, job_id: str) -> list[tuple[str, bytes]]:
        """A job's partition inputs; a payload file that is missing or unreadable raises CuzkError."""
        rows = self._ro(
            lambda t: t.x("SELECT kind, data, file FROM payloads WHERE job_id = ? ORDER BY part", (job_id,)).fetchall()
        )
        return self._read_payloads([(k, d, f) for k, d, f in rows])

    def mark_started(self, job_id: str, at: float) -> None:
        """The one-daemon path: the job runs (attempts + 1, event started)."""

        def fn(t: Tx) -> None:
            t.x(
                "UPDATE jobs SET state='running', started_at=COALESCE(started_at, ?), attempts=attempts+1 "
                f"WHERE job_id=? AND state IN {_UNFINISHED_SQL}",
                (at, job_id),
            )
            t.x("INSERT INTO events (job_id, event, at) VALUES (?, 'started', ?)", (job_id, at))

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
        """Record the final state once, with the job's record (``JobRecord.to_json``); False if nothing was
        written (the job had finished, or ``token`` is given and is not the job's current claim)."""
        assert state in FINAL
        extra: tuple[Any, ...] = ()
        if token is None:
            cond = f"state NOT IN {_FINAL_SQL}"
        else:  # fenced: only the claim that holds the job now
            cond, extra = "state='running' AND claim_token=?", (token,)

        def fn(t: Tx) -> bool:
            cur = t.x(
                f"UPDATE jobs SET state=?, finished_at=?, result=?, error=?, lease_until=NULL WHERE job_id=? AND {cond}",
                (state, at, result, error, job_id, *extra),
            )
            if cur.rowcount == 0:
                return False
            # the payload is deleted later by purge_payloads (off the result's critical path: deleting a
            # multi-MB blob costs more than the rest of this transaction)
            t.x("INSERT INTO events (job_id, event, at, detail) VALUES (?, ?, ?, ?)", (job_id, state, at, error))
            return True

        return self._tx(fn)

    def unfinished(self) -> list[Row]:
        return self._ro(lambda t: t.rows(f"SELECT * FROM jobs WHERE state IN {_UNFINISHED_SQL} ORDER BY seq"))

    def event(self, job_id: str, event: str, detail: str | None = None) -> None:
        self._tx(
            lambda t: t.x(
                "INSERT INTO events (job_id, event, at, detail) VALUES (?, ?, ?, ?)", (job_id, event, time.time(), detail)
            )
        )

    def events(self, job_id: str | None = None) -> list[tuple[str, str]]:
        if job_id is None:
            rows = self._ro(lambda t: t.x("SELECT job_id, event FROM events ORDER BY id").fetchall())
        else:
            rows = self._ro(lambda t: t.x("SELECT job_id, event FROM events WHERE job_id=? ORDER BY id", (job_id,)).fetchall())
        return [(a, b) for a, b in rows]

    def purge(self, older_than: float) -> int:
        """Delete jobs (and their events and payloads) that finished before ``older_than`` (unix time)."""
        files: list[str] = []

        def fn(t: Tx) -> int:
            files.clear()  # (run again after a serialization conflict)
            ids = [
                r[0]
                for r in t.x(f"SELECT job_id FROM jobs WHERE state IN {_FINAL_SQL} AND finished_at < ?", (older_than,)).fetchall()
            ]
            for i in range(0, len(ids), 500):
                cond, args = t.any_of("job_id", ids[i : i + 500])
                files.extend(r[0] for r in t.x(f"SELECT file FROM payloads WHERE file IS NOT NULL AND {cond}", args).fetchall())
                t.x(f"DELETE FROM jobs WHERE {cond}", args)
                t.x(f"DELETE FROM events WHERE {cond}", args)
                t.x(f"DELETE FROM payloads WHERE {cond}", args)
            return len(ids)

        n = self._tx(fn)
        self._unlink(files)  # after the commit: a crash in between leaves a file, never a row without one
        return n

    @abc.abstractmethod
    def purge_payloads(self) -> int:
        """Delete the payloads of finished jobs."""

    def checkpoint(self) -> None:  # noqa: B027 (a store without a WAL of its own has nothing to do)
        """Let deleted payloads leave the store's logs (SQLite: truncate the WAL)."""

    def quarantine(self, job_id: str, error: str) -> None:
        """FAIL a job the daemon died in too often (at recovery, before it is queued)."""
        self.finish(job_id, "failed", time.time(), error=error)

    # -- claims (issue 23) ------------------------------------------------------------------------
    def claim(
        self,
        host: str,
        circuit_ids: Sequence[str] | None,
        limit: int,
        lease_s: float,
        now: float | None = None,
        *,
        keys: Sequence[str] | None = None,
        hot: Sequence[str] | None = None,
        cold_after_s: float = 0.0,
        urgent_priority: int = 4,
        one_circuit: bool = False,
    ) -> list[Claim]:
        """Take up to ``limit`` queued jobs, highest priority first, FIFO within a priority; each becomes
        running under ``host`` with a lease until ``now + lease_s`` and a new fencing token.

        Which jobs: of ``circuit_ids`` (None: any circuit); with ``keys`` ("circuit_id@version" this host
        can prove, "circuit_id@*" for a job of no version), only those; with ``hot`` (the circuits whose key
        is resident here), a job of another circuit only once it waited ``cold_after_s`` (submitted at or
        before ``now - cold_after_s``) or has priority ``urgent_priority`` or more: hosts with the key hot
        claim first. ``one_circuit``: the head job (under the same filters), then up to ``limit - 1`` more
        of its circuit and version: one batch of one circuit."""
        if limit <= 0 or (circuit_ids is not None and not circuit_ids) or (keys is not None and not keys):
            return []

        def fn(t: Tx) -> list[Claim]:
            # PostgreSQL: FOR UPDATE SKIP LOCKED (several hosts claim at once, each skips the others' rows);
            # SQLite: one writer at a time (BEGIN IMMEDIATE), the select and the update are one step
            at = t.now(now)
            conds, args = ["state = 'queued'"], []
            if circuit_ids is not None:
                c, a = t.any_of("circuit_id", list(circuit_ids))
                conds.append(c)
                args += a
            if keys is not None:
                c, a = t.any_of(KEY_EXPR, list(keys))
                conds.append(c)
                args += a
            if hot is not None:
                c, a = t.any_of("circuit_id", list(hot))
                conds.append(f"({c} OR submitted_at <= ? OR priority >= ?)")
                args += [*a, at - cold_after_s, urgent_priority]
            where = " AND ".join(conds)
            tail = " ORDER BY priority DESC, seq LIMIT ?" + t.lock
            sql = f"SELECT {_CLAIM_COLS}, seq FROM jobs WHERE {where}"
            # one index walk per circuit this host proves (jobs_queue_circuit), so a queue whose head is
            # of circuits this host lacks is never walked row by row; the heads are then merged in order
            circuits = sorted(set(circuit_ids if circuit_ids is not None else [k.rsplit("@", 1)[0] for k in keys or []]))
            if circuits:
                found = [r for cid in circuits for r in t.x(sql + " AND circuit_id = ?" + tail, (*args, cid, limit)).fetchall()]
            else:
                found = t.x(sql + tail, (*args, limit)).fetchall()
            found.sort(key=lambda r: (-r[3], r[8]))
            if one_circuit and found:  # the head, then more of its circuit and version: one batch
                cid, ver = found[0][2], found[0][5]
                batch = [r for r in found if r[2] == cid and r[5] == ver][:limit]
                if len(batch) < limit and (not circuits or sum(r[2] == cid for r in found) >= limit):
                    # more of it may lie beyond what was fetched (rows this transaction locked are not
                    # skipped by SKIP LOCKED: left out by id)
                    same = " AND circuit_id = ? AND " + ("version IS NULL" if ver is None else "version = ?")
                    more = [cid] if ver is None else [cid, ver]
                    c, a = t.any_of("job_id", [r[0] for r in batch])
                    q = sql + same + f" AND NOT ({c})" + tail
                    batch += t.x(q, (*args, *more, *a, limit - len(batch))).fetchall()
                found = batch
            rows = [r[:8] for r in found[:limit]]  # rows fetched but not taken stay queued (unlocked at commit)
            if not rows:
                return []
            ids = [r[0] for r in rows]
            c, a = t.any_of("job_id", ids)
            t.x(
                "UPDATE jobs SET state='running', claim_token=claim_token+1, claim_host=?, lease_until=?, lease_s=?, "
                f"started_at=COALESCE(started_at, ?) WHERE {c}",
                (host, at + lease_s, lease_s, at, *a),
            )
            t.many("INSERT INTO events (job_id, event, at, detail) VALUES (?, 'claimed', ?, ?)", [(j, at, host) for j in ids])
            return [Claim(j, tok + 1, cid, prio, n, ver, sub, att, at + lease_s) for j, tok, cid, prio, n, ver, sub, att in rows]

        return self._tx(fn)

    def heartbeat(self, host: str, tokens: Mapping[str, int], now: float | None = None) -> set[str]:
        """Renew the leases ``host`` holds (job id -> token) by their length; the ids still held (a job
        missing from the answer was lost: expired, taken by another host, or finished)."""
        if not tokens:
            return set()

        def fn(t: Tx) -> set[str]:
            at = t.now(now)
            kept = set()
            for jid, tok in tokens.items():
                cur = t.x(
                    "UPDATE jobs SET lease_until = ? + lease_s WHERE job_id=? AND claim_token=? AND claim_host=? "
                    "AND state='running' AND lease_until IS NOT NULL",
                    (at, jid, tok, host),
                )
                if cur.rowcount:
                    kept.add(jid)
            return kept

        return self._tx(fn)

    def expire_leases(self, now: float | None = None, max_attempts: int | None = None) -> list[tuple[str, str]]:
        """Give back the claims whose lease ended before ``now``: queued again with attempts + 1, or FAILED
        once attempts reach ``max_attempts`` (default: the store's). Returns (job id, new state).
        PostgreSQL: rows another host is expiring are skipped (several hosts may run this at once)."""
        limit = self.max_attempts if max_attempts is None else max_attempts

        def fn(t: Tx) -> list[tuple[str, str]]:
            at = t.now(now)
            rows = t.x(
                "SELECT job_id, attempts, claim_host FROM jobs WHERE state='running' AND lease_until IS NOT NULL "
                "AND lease_until < ? ORDER BY seq" + t.lock,
                (at,),
            ).fetchall()
            out = []
            for jid, att, host in rows:
                n = att + 1
                if n >= limit:
                    err = lost_error(n, host)
                    t.x(
                        "UPDATE jobs SET state='failed', attempts=?, finished_at=?, error=?, lease_until=NULL WHERE job_id=?",
                        (n, at, err, jid),
                    )
                    t.x("INSERT INTO events (job_id, event, at, detail) VALUES (?, 'failed', ?, ?)", (jid, at, err))
                    out.append((jid, "failed"))
                else:
                    t.x("UPDATE jobs SET state='queued', attempts=?, claim_host=NULL, lease_until=NULL WHERE job_id=?", (n, jid))
                    t.x("INSERT INTO events (job_id, event, at, detail) VALUES (?, 'expired', ?, ?)", (jid, at, f"host {host}"))
                    out.append((jid, "queued"))
            return out

        return self._tx(fn)

    def requeue_unleased(self, max_attempts: int | None = None, now: float | None = None) -> list[tuple[str, str]]:
        """Jobs left RUNNING with no lease by a daemon of one host (``mark_started``: the journal was that
        daemon's before it joined a cluster, and it stopped while proving them): queued again for any host
        to claim, or FAILED (quarantined) once begun ``max_attempts`` times. Run by each host as it joins;
        rows another host is handling are skipped. Returns (job id, new state)."""
        limit = self.max_attempts if max_attempts is None else max_attempts

        def fn(t: Tx) -> list[tuple[str, str]]:
            at = t.now(now)
            rows = t.x(
                "SELECT job_id, attempts FROM jobs WHERE state='running' AND lease_until IS NULL AND claim_host IS NULL "
                "ORDER BY seq" + t.lock
            ).fetchall()
            out = []
            for jid, n in rows:
                if limit and n >= limit:
                    err = died_error(n)
                    t.x("UPDATE jobs SET state='failed', finished_at=?, error=? WHERE job_id=?", (at, err, jid))
                    t.x("INSERT INTO events (job_id, event, at, detail) VALUES (?, 'failed', ?, ?)", (jid, at, err))
                    out.append((jid, "failed"))
                else:
                    t.x("UPDATE jobs SET state='queued' WHERE job_id=?", (jid,))
                    t.x("INSERT INTO events (job_id, event, at, detail) VALUES (?, 'requeued', ?, ?)", (jid, at, "unleased"))
                    out.append((jid, "queued"))
            return out

        return self._tx(fn)

    def release(self, host: str, job_id: str, token: int) -> bool:
        """Put a claimed job back in the queue unproved (a draining host), attempts unchanged."""

        def fn(t: Tx) -> bool:
            cur = t.x(
                "UPDATE jobs SET state='queued', claim_host=NULL, lease_until=NULL WHERE job_id=? AND claim_token=? "
                "AND claim_host=? AND state='running'",
                (job_id, token, host),
            )
            if not cur.rowcount:
                return False
            t.x("INSERT INTO events (job_id, event, at, detail) VALUES (?, 'released', ?, ?)", (job_id, time.time(), host))
            return True

        return self._tx(fn)

    # -- the cluster: hosts, cluster-wide tasks, queue figures (issue 23) ---------------------------
    def host_beat(self, host: str, info: dict[str, Any], now: float | None = None) -> None:
        """Record that ``host`` is alive (last_seen = ``now`` or the store's clock; first_seen kept) and what
        it reports (``info``, replaced)."""

        def fn(t: Tx) -> None:
            at = t.now(now)
            t.x(
                "INSERT INTO hosts (host, first_seen, last_seen, info) VALUES (?, ?, ?, ?) ON CONFLICT (host) DO UPDATE "
                "SET last_seen = excluded.last_seen, info = excluded.info",
                (host, at, at, json.dumps(info, sort_keys=True, default=str)),
            )

        self._tx(fn)

    def hosts(self) -> list[dict[str, Any]]:
        """Every host's row, by host: host, first_seen, last_seen, info (a dict), held (its jobs running under
        a claim) and now (the store's clock at this read: staleness without trusting the caller's clock)."""

        def fn(t: Tx) -> tuple[float, list[Any]]:
            at = t.now()
            rows = t.x(
                "SELECT h.host, h.first_seen, h.last_seen, h.info, (SELECT COUNT(*) FROM jobs j WHERE j.state = 'running' "
                "AND j.claim_host = h.host) FROM hosts h"
            ).fetchall()
            return at, rows

        at, rows = self._ro(fn)
        out = [
            {"host": h, "first_seen": float(f), "last_seen": float(s), "info": _json_dict(i), "held": int(n), "now": at}
            for h, f, s, i, n in rows
        ]
        return sorted(out, key=lambda r: str(r["host"]))

    def forget_host(self, host: str) -> bool:
        """Delete ``host``'s row; False if there was none."""
        return bool(self._tx(lambda t: t.x("DELETE FROM hosts WHERE host = ?", (host,)).rowcount) > 0)

    def take_task(self, name: str, host: str, period_s: float, now: float | None = None) -> bool:
        """True if ``host`` may run the cluster-wide task ``name`` now: the task is taken (until ``now +
        period_s``) when no host holds it or its period has ended; until then every host, ``host`` too, gets
        False. One statement (an upsert whose update applies only to an ended period), so of hosts asking at
        once exactly one wins."""

        def fn(t: Tx) -> bool:
            at = t.now(now)
            cur = t.x(
                "INSERT INTO cluster_tasks (name, host, until) VALUES (?, ?, ?) ON CONFLICT (name) DO UPDATE "
                "SET host = excluded.host, until = excluded.until WHERE cluster_tasks.until <= ?",
                (name, host, at + period_s, at),
            )
            return bool(cur.rowcount > 0)  # inserted or updated: 1; the period runs: 0

        try:
            return self._tx(fn)
        except self._RACE_LOST:  # another host inserted the row between our look and our insert
            return False

    def queue_counts(self) -> list[tuple[str, int, str, int]]:
        """(circuit id, priority, state, jobs) over queued and running jobs, sorted."""
        rows = self._ro(
            lambda t: t.x(
                f"SELECT circuit_id, priority, state, COUNT(*) FROM jobs WHERE state IN {_UNFINISHED_SQL} "
                "GROUP BY circuit_id, priority, state"
            ).fetchall()
        )
        return sorted((str(c), int(p), str(s), int(n)) for c, p, s, n in rows)

    def count_unfinished(self, circuit_id: str | None = None, cap: int | None = None) -> int:
        """Queued and running jobs (of ``circuit_id``, else of every circuit), counted up to ``cap`` (a
        submission only asks whether a limit is reached: the count stops there, so its cost does not grow
        with the queue's depth)."""
        args: list[Any] = []
        sql = f"SELECT 1 FROM jobs WHERE state IN {_UNFINISHED_SQL}"
        if circuit_id is not None:
            sql, args = sql + " AND circuit_id = ?", [circuit_id]
        if cap is not None:
            sql, args = sql + " LIMIT ?", [*args, int(cap)]
        return int(self._ro(lambda t: t.x(f"SELECT COUNT(*) FROM ({sql}) s", tuple(args)).fetchone()[0]))

    def count_queued_ahead(self, priority: int, cap: int) -> int:
        """Queued jobs of ``priority`` or higher (a new job's queue position), counted up to ``cap``."""
        sql = "SELECT COUNT(*) FROM (SELECT 1 FROM jobs WHERE state = 'queued' AND priority >= ? LIMIT ?) s"
        return int(self._ro(lambda t: t.x(sql, (priority, int(cap))).fetchone()[0]))

    def finished_since(self, since: float) -> list[tuple[str, str, int]]:
        """(circuit id, final state, jobs) of the jobs that finished at or after ``since``, sorted."""
        rows = self._ro(
            lambda t: t.x(
                f"SELECT circuit_id, state, COUNT(*) FROM jobs WHERE state IN {_FINAL_SQL} AND finished_at >= ? "
                "GROUP BY circuit_id, state",
                (since,),
            ).fetchall()
        )
        return sorted((str(c), str(s), int(n)) for c, s, n in rows)

    def store_now(self) -> float:
        """The store's clock (PostgreSQL: the database's, one for every host; SQLite: this host's)."""
        return self._ro(lambda t: t.now())

    # -- circuits ---------------------------------------------------------------------------------
    def save_circuit(self, cid: str, spec: dict[str, Any]) -> None:
        self._tx(
            lambda t: t.x(
                "INSERT INTO circuits (id, spec, registered_at) VALUES (?, ?, ?) ON CONFLICT (id) DO UPDATE SET "
                "spec = excluded.spec, registered_at = excluded.registered_at",
                (cid, json.dumps(spec), time.time()),
            )
        )

    def circuits(self) -> list[dict[str, Any]]:
        rows = self._ro(lambda t: t.x("SELECT spec FROM circuits ORDER BY registered_at").fetchall())
        return [json.loads(r[0]) for r in rows]

    # -- circuit versions -------------------------------------------------------------------------
    def save_version(
        self, cid: str, version: str, spec: dict[str, Any], key_sha256: str, files: dict[str, str], source: str
    ) -> None:
        self._tx(
            lambda t: t.x(
                "INSERT INTO circuit_versions (circuit_id, version, spec, key_sha256, files, source, registered_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (circuit_id, version) DO UPDATE SET spec = excluded.spec, "
                "key_sha256 = excluded.key_sha256, files = excluded.files, source = excluded.source, "
                "registered_at = excluded.registered_at",
                (cid, version, json.dumps(spec), key_sha256, json.dumps(files), source, time.time()),
            )
        )

    def version(self, cid: str, version: str) -> dict[str, Any] | None:
        """A circuit version's row: spec and files (decoded), key_sha256, source; None if not kept."""
        row = self._ro(lambda t: t.row("SELECT * FROM circuit_versions WHERE circuit_id=? AND version=?", (cid, version)))
        if row is None:
            return None
        row["spec"], row["files"] = json.loads(row["spec"]), json.loads(row["files"])
        return row

    def version_specs(self) -> list[dict[str, Any]]:
        return [json.loads(r[0]) for r in self._ro(lambda t: t.x("SELECT spec FROM circuit_versions").fetchall())]

    def prune_versions(self, keep: set[tuple[str, str]]) -> int:
        """Delete the circuit versions that are not in ``keep`` ((circuit id, version)) and that no
        unfinished job was accepted for."""

        def fn(t: Tx) -> int:
            rows = t.x(
                "SELECT circuit_id, version FROM circuit_versions v WHERE NOT EXISTS (SELECT 1 FROM jobs j WHERE "
                f"j.circuit_id = v.circuit_id AND j.version = v.version AND j.state IN {_UNFINISHED_SQL})"
            ).fetchall()
            gone = [(c, v) for c, v in rows if (c, v) not in keep]
            t.many("DELETE FROM circuit_versions WHERE circuit_id=? AND version=?", gone)
            return len(gone)

        return self._tx(fn)

    # -- file hashes ------------------------------------------------------------------------------
    def file_hash(self, path: str, stamp: str) -> str | None:
        r = self._ro(lambda t: t.x("SELECT sha256 FROM file_hashes WHERE path=? AND stamp=?", (path, stamp)).fetchone())
        return str(r[0]) if r else None

    def save_file_hash(self, path: str, stamp: str, sha256: str) -> None:
        self._tx(
            lambda t: t.x(
                "INSERT INTO file_hashes (path, stamp, sha256) VALUES (?, ?, ?) ON CONFLICT (path) DO UPDATE SET "
                "stamp = excluded.stamp, sha256 = excluded.sha256",
                (path, stamp, sha256),
            )
        )

    # -- payload files (shared) -------------------------------------------------------------------
    def _spill(self, job_id: str, payloads: list[tuple[str, bytes]]) -> list[str | None]:
        """Write the payloads above SPILL_BYTES to files (fsync'd, and their names, before the row that
        names them); their names, None for the others."""
        out: list[str | None] = []
        for i, (_k, d) in enumerate(payloads):
            if len(d) <= self.SPILL_BYTES:
                out.append(None)
                continue
            self.spill_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
            name = f"{job_id}.{i}"
            tmp = self.spill_dir / (name + ".tmp")
            with open(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "wb") as fh:
                fh.write(d)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, self.spill_dir / name)
            out.append(name)
        if any(out):
            fd = os.open(self.spill_dir, os.O_RDONLY)
            try:
                os.fsync(fd)  # the names, durable before the row that points at them
            finally:
                os.close(fd)
        return out

    def _unlink(self, names: list[str]) -> None:
        for n in names:
            try:
                os.unlink(self.spill_dir / n)
            except FileNotFoundError:
                pass

    def _read_payloads(self, rows: list[tuple[str, bytes, str | None]]) -> list[tuple[str, bytes]]:
        out = []
        for k, d, f in rows:
            data = bytes(d)
            if f:
                try:
                    data = (self.spill_dir / f).read_bytes()
                except OSError as e:
                    raise CuzkError(f"payload file {self.spill_dir / f}: {e.strerror}") from None
            out.append((k, data))
        return out


def _json_dict(text: str | None) -> dict[str, Any]:
    """A hosts row's info (a JSON object; anything else reads as an empty one)."""
    try:
        v = json.loads(text) if text else {}
    except ValueError:
        return {}
    return v if isinstance(v, dict) else {}
