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
"""

from __future__ import annotations

import abc
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ... import CuzkError

Row = dict[str, Any]  # a jobs row by column name

FINAL = ("completed", "failed", "cancelled")


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


def lost_error(attempts: int, host: str | None) -> str:
    """The error of a job FAILED because its lease expired ``attempts`` times."""
    return (
        f"quarantined after {attempts} attempts: the lease of the host proving it expired {attempts} times "
        f"(last host {host or '?'}); it may crash whichever host proves it"
    )


class JournalStore(abc.ABC):
    """What the engine needs of a journal; :class:`~.sqlite.SqliteJournal` and
    :class:`~.postgres.PostgresJournal` implement it."""

    SPILL_BYTES = 64 << 20  # payloads above this are files in ``spill_dir`` (both stores refuse values over 1 GB)
    spill_dir: Path
    max_attempts: int = 3

    # -- lifecycle --------------------------------------------------------------------------------
    @abc.abstractmethod
    def close(self) -> None: ...

    @property
    @abc.abstractmethod
    def where(self) -> str:
        """Where the journal is, for messages (a path, or the database URL without its password)."""

    # -- jobs -------------------------------------------------------------------------------------
    @abc.abstractmethod
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
        """Journal an accepted job and its inputs in one transaction (state queued, event accepted)."""

    @abc.abstractmethod
    def by_request(self, request_id: str) -> Row | None: ...

    @abc.abstractmethod
    def get(self, job_id: str) -> Row | None: ...

    @abc.abstractmethod
    def payloads(self, job_id: str) -> list[tuple[str, bytes]]:
        """A job's partition inputs; a payload file that is missing or unreadable raises CuzkError."""

    @abc.abstractmethod
    def mark_started(self, job_id: str, at: float) -> None:
        """The one-daemon path: the job runs (attempts + 1, event started)."""

    @abc.abstractmethod
    def finish(
        self,
        job_id: str,
        state: str,
        at: float,
        result: str | None = None,
        error: str | None = None,
        token: int | None = None,
    ) -> bool:
        """Record the final state once; False if nothing was written (the job had finished, or ``token`` is
        given and is not the job's current claim)."""

    @abc.abstractmethod
    def unfinished(self) -> list[Row]: ...

    @abc.abstractmethod
    def event(self, job_id: str, event: str, detail: str | None = None) -> None: ...

    @abc.abstractmethod
    def events(self, job_id: str | None = None) -> list[tuple[str, str]]: ...

    @abc.abstractmethod
    def purge(self, older_than: float) -> int:
        """Delete jobs (and their events and payloads) that finished before ``older_than``."""

    @abc.abstractmethod
    def purge_payloads(self) -> int:
        """Delete the payloads of finished jobs."""

    def checkpoint(self) -> None:  # noqa: B027 (a store without a WAL of its own has nothing to do)
        """Let deleted payloads leave the store's logs (SQLite: truncate the WAL)."""

    def quarantine(self, job_id: str, error: str) -> None:
        """FAIL a job the daemon died in too often (at recovery, before it is queued)."""
        import time

        self.finish(job_id, "failed", time.time(), error=error)

    # -- claims (issue 23) ------------------------------------------------------------------------
    @abc.abstractmethod
    def claim(
        self, host: str, circuit_ids: Sequence[str] | None, limit: int, lease_s: float, now: float | None = None
    ) -> list[Claim]:
        """Take up to ``limit`` queued jobs of ``circuit_ids`` (None: any circuit), highest priority first,
        FIFO within a priority; each becomes running under ``host`` with a lease until ``now + lease_s``
        and a new fencing token."""

    @abc.abstractmethod
    def heartbeat(self, host: str, tokens: Mapping[str, int], now: float | None = None) -> set[str]:
        """Renew the leases ``host`` holds (job id -> token) by their length; the ids still held (a job
        missing from the answer was lost: expired, taken by another host, or finished)."""

    @abc.abstractmethod
    def expire_leases(self, now: float | None = None, max_attempts: int | None = None) -> list[tuple[str, str]]:
        """Give back the claims whose lease ended before ``now``: queued again with attempts + 1, or FAILED
        once attempts reach ``max_attempts`` (default: the store's). Returns (job id, new state)."""

    @abc.abstractmethod
    def release(self, host: str, job_id: str, token: int) -> bool:
        """Put a claimed job back in the queue unproved (a draining host), attempts unchanged."""

    # -- circuits ---------------------------------------------------------------------------------
    @abc.abstractmethod
    def save_circuit(self, cid: str, spec: dict[str, Any]) -> None: ...

    @abc.abstractmethod
    def circuits(self) -> list[dict[str, Any]]: ...

    @abc.abstractmethod
    def save_version(
        self, cid: str, version: str, spec: dict[str, Any], key_sha256: str, files: dict[str, str], source: str
    ) -> None: ...

    @abc.abstractmethod
    def version(self, cid: str, version: str) -> dict[str, Any] | None: ...

    @abc.abstractmethod
    def version_specs(self) -> list[dict[str, Any]]: ...

    @abc.abstractmethod
    def prune_versions(self, keep: set[tuple[str, str]]) -> int: ...

    # -- file hashes ------------------------------------------------------------------------------
    @abc.abstractmethod
    def file_hash(self, path: str, stamp: str) -> str | None: ...

    @abc.abstractmethod
    def save_file_hash(self, path: str, stamp: str, sha256: str) -> None: ...

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
