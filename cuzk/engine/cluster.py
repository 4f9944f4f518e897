"""Cluster mode (issue 23): this daemon as one host of many that share one PostgreSQL journal.

With ``journal.url`` set, a daemon no longer queues what it accepts: a submission is a row in the shared
journal (state queued) and every host *claims* work from there (:class:`ClusterMember`), the way Curio's
machines claim tasks from their shared database. What this module adds to the engine:

* **claiming** (one thread): whenever fewer than ``cluster.claim_ahead`` claimed partitions wait to start
  here, take the head of the queue (highest priority, FIFO) and up to a batch of more jobs of the same
  circuit version (``JournalStore.claim(one_circuit=True)``), among the circuit versions this host can
  prove; jobs of circuits whose key is not HOT here only after ``cluster.affinity_delay`` (CRITICAL ones at
  once: SRS affinity). A claimed job enters the local scheduler like a submitted one;
* **leases** (one thread): every quarter of ``cluster.lease`` renew the leases of the jobs held; a job
  missing from the renewal's answer was lost (the lease ran out while the database was unreachable, it
  was cancelled through another host) and leaves this daemon (``JobTable.drop_lost``). The same thread
  gives back the leases that ran out anywhere (``expire_leases``: the job is queued again with its
  attempts raised, or failed after ``journal.max_attempts``), writes this host's row (devices, circuits,
  HOT keys, jobs held) and, once per cluster per period, runs the journal's retention;
* **fencing**: a result is written with the claim's token (``JobTable._finish_fenced``), so a host that
  comes back after its lease expired writes nothing: exactly one result per job;
* **drain**: a stopping host claims no more, gives back (``release``) the jobs it holds that have not
  started, lets the ones in flight finish within the drain timeout and gives back the rest.

Any host is a front door (:mod:`.engine`): a submission is journaled by the host that received it; an
await on a job proved elsewhere polls the journal every ``cluster.poll`` (no LISTEN/NOTIFY: YugabyteDB and
CockroachDB lack it); a cancel of a job held elsewhere writes the final state, and the holder drops the
job at its next heartbeat (within a quarter lease).
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import CuzkError
from .job import Job, JobState, PartStage
from .journal import Claim

if TYPE_CHECKING:
    from .engine import Engine
    from .registry import Circuit

log = logging.getLogger("cuzk.engine")

RETENTION_TASK = "retention"


def default_host(state_dir: os.PathLike[str] | str) -> str:
    """``<hostname>:<state folder>``: unique per daemon (one daemon per state folder) and stable across
    restarts, so a restarted daemon is recognised in ``cuzk cluster status``."""
    return f"{socket.gethostname()}:{os.path.abspath(os.fspath(state_dir))}"


class ClusterMember:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        cfg = engine.config
        cc = cfg.cluster
        self.host: str = cc.host or default_host(cfg.state_dir)
        self.lease_s: float = float(cc.lease)
        self.beat_s = self.lease_s / 4
        self.poll_s: float = max(0.01, float(cc.poll))
        self.affinity_delay: float = float(cc.affinity_delay)
        workers = max(1, len(engine.executor.workers))
        self.claim_ahead: int = int(cc.claim_ahead) or 2 * workers
        self.max_batch = max(1, int(cfg.scheduler.max_batch_size))
        self.held: dict[str, Job] = {}  # claimed by this host, under engine.table.lock
        self.wake = threading.Event()  # something to claim may be there (a local submission, a job finished)
        self.claiming = True
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self.db_error = ""  # the last database error of the claim / lease threads ("" while it answers)
        self.claims = 0  # jobs claimed by this host since it started
        self.lost = 0  # jobs this host lost (lease expired, cancelled elsewhere)
        self.started_at = time.time()
        j = engine.journal
        j.SPILL_BYTES = int(cc.inline_bytes)
        # inputs above inline_bytes: files every host reads (the shared folder), else refused at submission
        self.shared_dir = Path(os.path.expanduser(cc.shared_dir)) if cc.shared_dir else None
        if self.shared_dir is not None:
            j.spill_dir = self.shared_dir / "payloads"
        engine.table.host = self.host
        engine.table.fence_retry_s = self.lease_s

    # -- lifecycle ----------------------------------------------------------------------------------
    def start(self) -> None:
        for jid, state in self.engine.journal.requeue_unleased(self.engine.config.journal.max_attempts):
            log.warning("event=unleased_job_found job=%s now=%s", jid, state)
        self._beat_once()
        for fn, name in ((self._claim_loop, "cuzk-cluster-claim"), (self._lease_loop, "cuzk-cluster-lease")):
            t = threading.Thread(target=fn, name=name, daemon=True)
            t.start()
            self._threads.append(t)
        log.info(
            "event=cluster_joined host=%s journal=%s lease_s=%.1f claim_ahead=%d affinity_delay_s=%.1f",
            self.host,
            self.engine.journal.where,
            self.lease_s,
            self.claim_ahead,
            self.affinity_delay,
        )

    def stop_claiming(self) -> None:
        self.claiming = False
        self.wake.set()

    def give_back(self, only_unstarted: bool) -> int:
        """Release the jobs held here (all, or those with no partition started) to the queue, attempts
        unchanged: another host proves them."""
        table = self.engine.table
        with table.lock:
            jobs = [
                j
                for j in self.held.values()
                if not j.final and (not only_unstarted or all(p.stage is PartStage.QUEUED for p in j.parts))
            ]
        n = 0
        for job in jobs:
            assert job.claim_token is not None
            if not table.drop_lost(job, "given back by a draining host"):
                continue
            try:
                if self.engine.journal.release(self.host, job.job_id, job.claim_token):
                    n += 1
            except Exception as e:  # the lease runs out instead
                log.error("event=release_failed job=%s error=%r", job.job_id, str(e))
        if n:
            log.info("event=jobs_given_back host=%s count=%d", self.host, n)
        return n

    def stop(self) -> None:
        """After the drain: stop the threads and say so in this host's row."""
        self.claiming = False
        self._stop.set()
        self.wake.set()
        for t in self._threads:
            t.join(timeout=5)
        try:
            self.engine.journal.host_beat(self.host, self.info(state="stopped"))
        except Exception as e:
            log.warning("event=host_beat_failed host=%s error=%r", self.host, str(e))

    # -- what this host can prove -------------------------------------------------------------------
    def _provable(self) -> list[Circuit]:
        e = self.engine
        with e.table.lock:
            cs = [*e.circuits.values(), *e._retired]
        return [c for c in cs if e.executor.may_prove(c.id)]

    def keys(self) -> list[str]:
        """``circuit@version`` of every circuit version this host can prove (``circuit@*``: a job journaled
        without a version, by a daemon from before versions, is proved with the current one)."""
        out = set()
        with self.engine.table.lock:
            current = set(self.engine.circuits)
        for c in self._provable():
            out.add(f"{c.id}@{c.version}")
            if c.id in current:
                out.add(f"{c.id}@*")
        return sorted(out)

    def hot(self) -> list[str]:
        srs = self.engine.srs
        return sorted({c.id for c in self._provable() if srs.resident_devices(c.srs_key)})

    def unstarted(self) -> int:
        """Claimed partitions that have not entered synthesis."""
        with self.engine.table.lock:
            return sum(1 for j in self.held.values() if not j.final for p in j.parts if p.stage is PartStage.QUEUED)

    def info(self, state: str = "") -> dict[str, Any]:
        e = self.engine
        with e.table.lock:
            held = [j for j in self.held.values() if not j.final]
        return {
            "state": state or ("draining" if e.draining else "up"),
            "pid": os.getpid(),
            "listen": e.config.listen,
            "backend": e.backend.name,
            "devices": [d.name for d in e.executor.devices],
            "workers": len(e.executor.workers),
            "circuits": sorted(c.id for c in self._provable()),
            "hot": self.hot(),
            "held_jobs": len(held),
            "held_partitions": sum(j.n_parts for j in held),
            "claimed_total": self.claims,
            "lost_total": self.lost,
            "completed_total": int(sum(v for s, v in e.table.totals.items() if s is JobState.COMPLETED)),
            "started_at": self.started_at,
            "lease_s": self.lease_s,
            "db_error": self.db_error,
        }

    # -- claiming -----------------------------------------------------------------------------------
    def _claim_loop(self) -> None:
        while not self._stop.is_set():
            self.wake.wait(self.poll_s)
            self.wake.clear()
            if not self.claiming or self._stop.is_set():
                continue
            try:
                self.claim_some()
                self._db_ok()
            except Exception as e:
                self._db_failed("claim", e)
                self._stop.wait(min(1.0, self.poll_s * 4))

    def claim_some(self) -> int:
        """Claim until ``claim_ahead`` partitions wait here (or the queue has nothing this host may take).
        Returns the jobs claimed."""
        got = 0
        while self.claiming and not self.engine.stopped.is_set():
            room = self.claim_ahead - self.unstarted()
            if room <= 0:
                break
            keys = self.keys()
            if not keys:
                break
            claims = self.engine.journal.claim(
                self.host,
                None,
                min(room, self.max_batch),
                self.lease_s,
                keys=keys,
                hot=self.hot() if self.affinity_delay > 0 else None,
                cold_after_s=self.affinity_delay,
                one_circuit=True,
            )
            if not claims:
                break
            for cl in claims:
                self._adopt(cl)
            got += len(claims)
        return got

    def _circuit_for(self, cl: Claim) -> Circuit | None:
        e = self.engine
        with e.table.lock:
            cur = e.circuits.get(cl.circuit_id)
            if cur is not None and (cl.version is None or cl.version == cur.version):
                return cur
            for c in e._retired:
                if c.id == cl.circuit_id and c.version == cl.version:
                    return c
        return None

    def _adopt(self, cl: Claim) -> None:
        """A claimed job enters this daemon: its inputs read from the journal and parsed, queued locally.
        Inputs that cannot be read or parsed fail the job (under the claim): no host could prove it."""
        e = self.engine
        self.claims += 1
        jid = cl.job_id
        c = self._circuit_for(cl)
        row = e.journal.get(jid)
        if c is None or row is None:  # the circuit version was replaced since the claim's keys were read
            e.journal.release(self.host, jid, cl.token)
            return
        try:
            payloads = e.journal.payloads(jid)
            parts = [e._parse_part(c, i, k, d, f"partitions[{i}]") for i, (k, d) in enumerate(payloads)]
            if len(parts) != cl.n_partitions:
                raise CuzkError(f"{len(parts)} partition payloads journaled, circuit has {cl.n_partitions}")
        except CuzkError as ex:
            err = f"cannot prove on host {self.host}: {ex}"
            e.journal.finish(jid, JobState.FAILED.value, time.time(), error=err, token=cl.token)
            log.error("event=claimed_job_failed job=%s circuit=%s error=%r", jid, cl.circuit_id, err)
            return
        job = Job(
            jid,
            row.get("request_id") or "",
            c,
            cl.priority,
            parts,
            cl.submitted_at,
            row["request_hash"],
            attempts=cl.attempts,
        )
        job.claim_token = cl.token
        job.journaled_start = True  # the claim journaled the start; attempts count lost leases here
        job.input_bytes = sum(len(d) for _k, d in payloads)
        with e.table.lock:
            self.held[jid] = job
        e.table.add(job)
        e.timeline.event("CLAIM", jid, detail=c.id)
        log.info(
            "event=job_claimed job=%s circuit=%s priority=%d partitions=%d attempts=%d host=%s",
            jid,
            c.id,
            cl.priority,
            cl.n_partitions,
            cl.attempts,
            self.host,
        )
        e.scheduler.push_job(job, c.spec.batchable)

    # -- leases -------------------------------------------------------------------------------------
    def _lease_loop(self) -> None:
        while not self._stop.wait(self.beat_s):
            try:
                self._beat_once()
                self._db_ok()
            except Exception as e:
                self._db_failed("heartbeat", e)

    def _beat_once(self) -> None:
        e = self.engine
        with e.table.lock:
            for jid in [k for k, j in self.held.items() if j.final]:
                del self.held[jid]
            tokens = {k: j.claim_token for k, j in self.held.items() if j.claim_token is not None}
        kept = e.journal.heartbeat(self.host, tokens) if tokens else set()
        for jid in set(tokens) - kept:
            with e.table.lock:
                job = self.held.pop(jid, None)
            if job is not None and e.table.drop_lost(job, "this host's claim was lost (lease expired or cancelled elsewhere)"):
                self.lost += 1
                log.warning("event=claim_lost job=%s host=%s", jid, self.host)
        for jid, state in e.journal.expire_leases():
            log.warning("event=lease_expired job=%s now=%s", jid, state)
            if state == "queued":
                self.wake.set()
        e.journal.host_beat(self.host, self.info())
        self._retention()

    def _retention(self) -> None:
        """The journal's retention, once per cluster per period (whichever host takes the task)."""
        e = self.engine
        retention = float(e.config.journal.retention)
        period = max(0.5, min(60.0, retention / 4 if retention else 60.0))
        if not e.journal.take_task(RETENTION_TASK, self.host, period):
            return
        n = e.journal.purge(time.time() - retention)
        if n:
            log.info("event=journal_purge removed=%d host=%s", n, self.host)

    # -- database health ------------------------------------------------------------------------------
    def _db_ok(self) -> None:
        if self.db_error:
            log.info("event=journal_reconnected host=%s", self.host)
            self.db_error = ""

    def _db_failed(self, what: str, e: Exception) -> None:
        first = _first_line(e)
        if first != self.db_error:
            log.error("event=journal_unreachable host=%s during=%s error=%r", self.host, what, first)
        self.db_error = first

    # -- status ---------------------------------------------------------------------------------------
    def status(self) -> dict[str, Any]:
        """This host and the cluster as the journal sees it (``cuzk cluster status``, /status, metrics)."""
        out: dict[str, Any] = {"host": self.host, "local": self.info()}
        try:
            out |= cluster_view(self.engine.journal)
        except Exception as e:
            out["error"] = _first_line(e)
        return out


def _first_line(e: Exception) -> str:
    return (str(e).strip().splitlines() or [type(e).__name__])[0]


def cluster_view(journal: Any, window_s: float = 60.0) -> dict[str, Any]:
    """The cluster from its journal: hosts (each up, draining, stopped or lost: no heartbeat for a whole
    lease), the queue per circuit and priority, and the jobs finished in the last ``window_s`` seconds."""
    hosts = []
    for h in journal.hosts():
        info = h.get("info") or {}
        age = h["now"] - h["last_seen"]
        lease = float(info.get("lease_s") or 30.0)
        state = info.get("state", "up")
        if state != "stopped" and age > lease:
            state = "lost"
        hosts.append(
            {
                "host": h["host"],
                "state": state,
                "heartbeat_age_s": round(age, 3),
                "held": h["held"],
                "devices": info.get("devices", []),
                "backend": info.get("backend", ""),
                "circuits": info.get("circuits", []),
                "hot": info.get("hot", []),
                "listen": info.get("listen", ""),
                "claimed_total": info.get("claimed_total", 0),
                "completed_total": info.get("completed_total", 0),
                "db_error": info.get("db_error", ""),
            }
        )
    queues: dict[str, dict[str, Any]] = {}
    for cid, prio, state, n in journal.queue_counts():
        q = queues.setdefault(cid, {"circuit_id": cid, "queued": 0, "running": 0, "queued_by_priority": {}})
        q[state] = q.get(state, 0) + n
        if state == "queued":
            q["queued_by_priority"][str(prio)] = q["queued_by_priority"].get(str(prio), 0) + n
    now = journal.store_now()
    done: dict[str, dict[str, int]] = {}
    for cid, state, n in journal.finished_since(now - window_s):
        done.setdefault(cid, {})[state] = n
    return {
        "hosts": hosts,
        "queues": sorted(queues.values(), key=lambda q: q["circuit_id"]),
        "finished_last": {"window_s": window_s, "by_circuit": done},
        "throughput_per_s": sum(d.get("completed", 0) for d in done.values()) / window_s,
    }
