"""The engine's table of jobs: the live ones, the records of recently finished ones, the request-id index,
and the one place a job is finished (:meth:`JobTable.finish`: journal, record, metrics, awaiters).

:attr:`JobTable.lock` is the engine's lock. It guards the table, every job's mutable fields, the
pipeline's stage counters and the circuit registry together, because the checks that matter span them
(a partition enters a stage only if its job is still live; a circuit is replaced only if no live job
uses it).
"""

from __future__ import annotations

import collections
import json
import logging
import threading
import time
from collections.abc import Callable

from .errors import AlreadyExists, EngineError, NotFound, Unavailable
from .job import FINAL_STATES, Job, JobRecord, JobState, PartStage
from .journal import JournalStore
from .metrics import Metrics
from .scheduler import Scheduler
from .timeline import Timeline

log = logging.getLogger("cuzk.engine")

RECENT_RECORDS = 2000  # finished jobs' records kept in memory (older ones are read from the journal)


class JobTable:
    def __init__(self, journal: JournalStore, scheduler: Scheduler, metrics: Metrics, timeline: Timeline, backend: str) -> None:
        self.lock = threading.RLock()
        self.journal = journal
        self.scheduler = scheduler
        self.metrics = metrics
        self.timeline = timeline
        self.backend = backend  # the backend's name, for records
        self.active: dict[str, Job] = {}
        self.recent: collections.OrderedDict[str, JobRecord] = collections.OrderedDict()
        self.by_request: dict[str, str] = {}
        self.totals: collections.Counter[JobState] = collections.Counter()
        self.draining = False  # set by the engine's shutdown: journal errors then mean "shutting down"
        self.on_finished: Callable[[], None] | None = None  # the engine's housekeeping: delete the payload now
        self.host = ""  # cluster mode: this daemon's name (records say who proved a job)
        self.fence_retry_s = 30.0  # cluster mode: how long a fenced result write is retried (the lease)

    # -- membership -------------------------------------------------------------------------------
    def add(self, job: Job) -> int:
        """A job accepted (or recovered) enters the table; returns its queue position."""
        with self.lock:
            self.active[job.job_id] = job
            if job.request_id:
                self.by_request[job.request_id] = job.job_id
            return self.position(job)

    def position(self, job: Job) -> int:
        """Queued jobs ahead of ``job`` (higher priority, or the same and earlier). Caller holds the lock."""
        return sum(
            1
            for j in self.active.values()
            if j is not job
            and j.state is JobState.QUEUED
            and (j.priority > job.priority or (j.priority == job.priority and j.submitted_at <= job.submitted_at))
        )

    def live(self) -> list[Job]:
        with self.lock:
            return [j for j in self.active.values() if not j.final]

    # -- finishing --------------------------------------------------------------------------------
    def finish(self, job: Job, state: JobState, error: str = "") -> bool:
        """Record the job's final state once; False if it had finished already (nothing done)."""
        with self.lock:
            if not job.finish(state, error):
                return False
            if state is not JobState.COMPLETED:  # partitions still queued never run: free their parsed witnesses now
                for p in job.parts:
                    if p.stage is PartStage.QUEUED:
                        p.witness = p.inputs = None
        if state is not JobState.COMPLETED:
            self.scheduler.drop_job(job)
        now = time.time()
        self.timeline.event("DONE", job.job_id, detail=state.value)
        full = JobRecord.finished(job, self.backend, now, self.host)
        rec: JobRecord | None = full
        if job.claim_token is None:
            try:
                self.journal.finish(job.job_id, state.value, now, result=full.to_json(), error=error or None)
            except Exception as e:
                log.error("event=journal_error job=%s error=%r", job.job_id, str(e))
        elif not self._finish_fenced(job, state, now, full.to_json(), error):
            rec = self._lost_record(job)
        job.result = rec
        with self.lock:
            self.active.pop(job.job_id, None)
            self._remember(job.job_id, rec)
            self.totals[state] += 1
        if rec is not None and not job.lost:
            self._observe(job, rec)
        job.done.set()
        if self.on_finished is not None:
            self.on_finished()
        return True

    def _remember(self, job_id: str, rec: JobRecord | None) -> None:
        """Keep a finished job's record for lookups (the newest RECENT_RECORDS); under the lock."""
        if rec is not None:
            self.recent[job_id] = rec
            while len(self.recent) > RECENT_RECORDS:
                self.recent.popitem(last=False)

    def _finish_fenced(self, job: Job, state: JobState, now: float, result: str, error: str) -> bool:
        """Cluster mode: write the result under this host's claim (its fencing token). A database that does
        not answer is retried for up to a lease (after that another host has the job). False when the
        claim is no longer current: the job was given to another host or finished elsewhere (nothing
        written, the job marked lost)."""
        deadline = time.monotonic() + self.fence_retry_s
        wait = 0.05
        while True:
            try:
                ok = self.journal.finish(job.job_id, state.value, now, result=result, error=error or None, token=job.claim_token)
                break
            except Exception as e:
                if time.monotonic() >= deadline:
                    log.error(
                        'event=journal_error job=%s error=%r msg="result not written; the lease runs out"', job.job_id, str(e)
                    )
                    ok = False
                    break
                log.warning("event=journal_retry job=%s error=%r", job.job_id, str(e))
                time.sleep(wait)
                wait = min(1.0, wait * 2)
        if not ok:
            job.lost = True
            log.warning(
                'event=result_fenced job=%s state=%s msg="this host\'s claim is no longer current; nothing written"',
                job.job_id,
                state.value,
            )
        return ok

    def _lost_record(self, job: Job) -> JobRecord | None:
        """The journal's record of a job this host lost: final there (proved or cancelled elsewhere), or
        None while another host has it."""
        try:
            row = self.journal.get(job.job_id)
        except Exception:
            return None
        if row is None or row["state"] not in FINAL_STATES:
            return None
        return JobRecord.of_row(row, self.backend)

    def drop_lost(self, job: Job, why: str) -> bool:
        """Cluster mode: this host no longer holds the job (its lease expired, it was cancelled through
        another host, or a draining host gave it back): it leaves this daemon without a journal write; its
        partitions leave the pipeline at the next stage boundary; local awaiters read the journal."""
        with self.lock:
            if job.final:
                return False
            job.lost = True
            job.cancelled = True
            job.finish(JobState.CANCELLED, why)
            for p in job.parts:
                if p.stage is PartStage.QUEUED:
                    p.witness = p.inputs = None
            self.active.pop(job.job_id, None)
        self.scheduler.remove_from_batch(job)
        self.scheduler.drop_job(job)
        job.result = self._lost_record(job)
        with self.lock:
            self._remember(job.job_id, job.result)
        job.done.set()
        self.timeline.event("DONE", job.job_id, detail="lost")
        return True

    def _observe(self, job: Job, rec: JobRecord) -> None:
        """Metrics and the log line of a finished job."""
        cid = job.circuit.id
        counter = {
            JobState.COMPLETED: self.metrics.completed,
            JobState.FAILED: self.metrics.failed,
            JobState.CANCELLED: self.metrics.cancelled,
        }[rec.state]
        counter.labels(circuit=cid).inc()
        if rec.deadline_met is not None:
            self.metrics.deadlines.labels(circuit=cid, outcome="met" if rec.deadline_met else "missed").inc()
            if not rec.deadline_met:
                log.warning(
                    "event=deadline_missed job=%s circuit=%s state=%s elapsed_ms=%.1f deadline_ms=%.1f",
                    job.job_id,
                    cid,
                    rec.state.value,
                    (rec.completed_at - rec.submitted_at) * 1e3,
                    rec.deadline_ms,
                )
        if rec.state is not JobState.COMPLETED or rec.timings is None:
            log.info("event=job_%s job=%s circuit=%s error=%s", rec.state.value, job.job_id, cid, json.dumps(rec.error))
            return
        t = rec.timings
        for stage, ms in t.by_stage().items():
            self.metrics.phase.labels(phase=stage).observe(ms / 1e3)
        self.metrics.duration.labels(circuit=cid).observe(t.total_ms / 1e3)
        log.info(
            "event=job_completed job=%s circuit=%s partitions=%d total_ms=%.1f queue_ms=%.1f synth_ms=%.1f "
            "srs_ms=%.1f compute_ms=%.1f finalize_ms=%.1f",
            job.job_id,
            cid,
            job.n_parts,
            t.total_ms,
            t.queue_wait_ms,
            t.synthesis_ms,
            t.srs_load_ms,
            t.gpu_compute_ms,
            t.finalize_ms,
        )

    # -- lookups ----------------------------------------------------------------------------------
    def lookup(self, job_id: str) -> Job | JobRecord:
        """The live job, or the finished job's record (from memory, else from the journal)."""
        with self.lock:
            job = self.active.get(job_id)
            if job is not None:
                return job
            rec = self.recent.get(job_id)
            if rec is not None:
                return rec
        try:
            row = self.journal.get(job_id)
        except Exception:
            raise Unavailable("the daemon is shutting down") from None
        if row is None:
            raise NotFound(f"unknown job {job_id!r} (never submitted, or finished longer ago than the retention period)")
        if row["state"] not in FINAL_STATES:
            raise Unavailable(f"job {job_id} is journaled but not running in this daemon (it is shutting down)")
        return JobRecord.of_row(row, self.backend)

    def duplicate(self, request_id: str, request_hash: str) -> Job | JobRecord | None:
        """The job (or record) an earlier request with ``request_id`` made; None if there is none.
        Raises AlreadyExists if that request was a different one."""
        with self.lock:
            jid = self.by_request.get(request_id)
            job = self.active.get(jid) if jid else None
        if job is not None:
            _same_request(request_id, request_hash, job.request_hash, job.job_id)
            return job
        try:
            row = self.journal.by_request(request_id)
        except Exception as e:
            self.journal_error(e, "cannot read the journal")
        if row is None:
            return None
        _same_request(request_id, request_hash, row["request_hash"], row["job_id"])
        return JobRecord.of_row(row, self.backend)

    def journal_error(self, e: Exception, what: str) -> None:
        """Raise the error a failed journal access means for a caller."""
        if self.draining:  # the journal closes at the end of a drain
            raise Unavailable("the daemon is shutting down; submit again after it restarts") from None
        raise EngineError(f"{what}: {e}") from None

    # -- housekeeping -----------------------------------------------------------------------------
    def expire(self, cutoff: float) -> None:
        """Forget records that finished before ``cutoff`` (unix time) and request ids of gone jobs."""
        with self.lock:
            for jid in [k for k, r in self.recent.items() if r.completed_at < cutoff]:
                del self.recent[jid]
            for rid in [r for r, jid in self.by_request.items() if jid not in self.active]:
                del self.by_request[rid]


def _same_request(request_id: str, request_hash: str, their_hash: str, their_job: str) -> None:
    if their_hash != request_hash:
        raise AlreadyExists(f"request_id {request_id!r} was already used for a different request (job {their_job})")
