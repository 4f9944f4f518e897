"""Queues of the pipeline: the priority scheduler (with the batch collector and the working-memory
budget) in front of the synthesis workers, and the bounded prover queue behind them.

Ordering everywhere is ``(-priority, unit sequence, index in unit, partition)``: CRITICAL > HIGH >
NORMAL > LOW, FIFO within a class (by the time the job, or its batch, entered the queue), a job's
partitions in order. A CRITICAL arrival therefore goes ahead of every queued job and of every
synthesized partition waiting for a prover; running work is never interrupted.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .job import Job, Witness
    from .metrics import Metrics

CRITICAL = 4


@dataclass(order=True)
class WorkItem:
    """One partition of a job on its way through the pipeline, ordered by ``key``."""

    key: tuple[int, int, int, int]  # (-priority, unit sequence, index in unit, partition)
    job: Job = field(compare=False)
    part: int = field(compare=False)
    nbytes: int = field(compare=False, default=0)  # working memory reserved for it (0 once returned)
    witness: Witness | None = field(compare=False, default=None)  # from synthesis on
    extra: dict[str, Any] = field(compare=False, default_factory=dict)


class Budget:
    """Working-memory accounting (bytes); guarded by the scheduler's condition."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.used = 0
        self.peak = 0

    def fits(self, n: int) -> bool:
        # an item larger than the whole budget still runs when nothing else is in flight
        return self.used + n <= self.total or self.used == 0


class Batch:
    def __init__(self, circuit_id: str, now: float) -> None:
        self.circuit_id = circuit_id
        self.jobs: list[Job] = []
        self.first_at = now
        self.priority = 0
        self.id = "b-" + uuid.uuid4().hex[:12]


class Scheduler:
    def __init__(
        self,
        budget_bytes: int,
        max_batch_size: int,
        max_batch_wait_s: float,
        metrics: Metrics | None = None,
        log: logging.Logger | None = None,
    ) -> None:
        self.cv = threading.Condition()
        self._heap: list[WorkItem] = []
        self._seq = itertools.count(1)
        self.budget = Budget(budget_bytes)
        self.max_batch_size = max(1, max_batch_size)
        self.max_batch_wait = max_batch_wait_s
        self._batches: dict[str, Batch] = {}
        self.closed = False
        self.metrics = metrics
        self.log = log
        self._dispatch_order = itertools.count(1)
        self._in_hand = 0  # items handed out by take() that the taker has not settled yet
        self._timer = threading.Thread(target=self._batch_timer, name="cuzk-batch-timer", daemon=True)
        self._timer.start()

    # -- intake -----------------------------------------------------------------------------------
    def push_job(self, job: Job, batchable: bool) -> None:
        """Queue a job (all its partitions), through the batch collector when it is batchable."""
        with self.cv:
            for b in list(self._batches.values()):
                if b.priority < job.priority:
                    self._flush(b, "preempt")
            if batchable and self.max_batch_size > 1 and job.priority < CRITICAL:
                found = self._batches.get(job.circuit.id)
                if found is None:
                    found = self._batches[job.circuit.id] = Batch(job.circuit.id, time.monotonic())
                b = found
                b.jobs.append(job)
                b.priority = max(b.priority, job.priority)
                job.in_batch = b
                if len(b.jobs) >= self.max_batch_size:
                    self._flush(b, "size")
                else:
                    self.cv.notify_all()  # the timer recomputes its deadline
                return
            self._push_unit([job], None, "")

    def _push_unit(self, jobs: list[Job], batch: Batch | None, reason: str) -> None:
        unit = next(self._seq)
        for idx, job in enumerate(jobs):
            prio = batch.priority if batch is not None else job.priority
            job.in_batch = None
            if batch is not None:
                job.batch = (batch.id, len(jobs), reason)
            for p in range(job.n_parts):
                heapq.heappush(self._heap, WorkItem((-prio, unit, idx, p), job, p, job.part_bytes))
        self.cv.notify_all()

    def _flush(self, b: Batch, reason: str) -> None:
        """Caller holds cv."""
        self._batches.pop(b.circuit_id, None)
        live = [j for j in b.jobs if not j.cancelled]
        if live:
            self._push_unit(live, b, reason)
            if self.metrics:
                self.metrics.batches.labels(reason=reason).inc()
                self.metrics.batch_size.observe(len(live))
            if self.log:
                self.log.info("event=batch_flush batch=%s circuit=%s size=%d reason=%s", b.id, b.circuit_id, len(live), reason)

    def remove_from_batch(self, job: Job) -> bool:
        with self.cv:
            b = getattr(job, "in_batch", None)
            if b is not None and job in b.jobs:
                b.jobs.remove(job)
                if not b.jobs:
                    self._batches.pop(b.circuit_id, None)
                job.in_batch = None
                return True
            return False

    def _batch_timer(self) -> None:
        with self.cv:
            while not self.closed:
                now = time.monotonic()
                deadline = None
                for b in list(self._batches.values()):
                    due = b.first_at + self.max_batch_wait
                    if due <= now:
                        self._flush(b, "timeout")
                    elif deadline is None or due < deadline:
                        deadline = due
                self.cv.wait(None if deadline is None else max(0.001, deadline - now))

    # -- synthesis side -----------------------------------------------------------------------------
    def _head(self) -> WorkItem | None:
        while self._heap:
            it = self._heap[0]
            if it.job.cancelled or it.job.final:
                heapq.heappop(self._heap)
                continue
            return it
        return None

    def take(self) -> WorkItem | None:
        """Block until the highest-priority item fits the memory budget; reserve it. None on close.
        The item counts in ``in_hand()`` until the caller calls ``settle()`` (after it has counted it in a
        stage of its own, or dropped it), so nothing between here and there is invisible to a drain."""
        with self.cv:
            while True:
                if self.closed:
                    return None
                it = self._head()
                if it is not None and self.budget.fits(it.nbytes):
                    heapq.heappop(self._heap)
                    self._in_hand += 1
                    self.budget.used += it.nbytes
                    self.budget.peak = max(self.budget.peak, self.budget.used)
                    job = it.job
                    if job.dispatch_order == 0:
                        job.dispatch_order = next(self._dispatch_order)
                    return it
                self.cv.wait()

    def settle(self) -> None:
        with self.cv:
            self._in_hand -= 1

    def in_hand(self) -> int:
        with self.cv:
            return self._in_hand

    def drop_job(self, job: Job) -> None:
        """Remove a finished (cancelled, failed) job's queued partitions now, not when they reach the head."""
        with self.cv:
            n = len(self._heap)
            self._heap = [it for it in self._heap if it.job is not job]
            if len(self._heap) != n:
                heapq.heapify(self._heap)

    def release(self, nbytes: int) -> None:
        with self.cv:
            self.budget.used -= nbytes
            self.cv.notify_all()

    def close(self) -> None:
        with self.cv:
            self.closed = True
            self.cv.notify_all()

    # -- inspection ---------------------------------------------------------------------------------
    def batching(self) -> dict[str, int]:
        with self.cv:
            return {cid: len(b.jobs) for cid, b in self._batches.items()}


class ProverQueue:
    """Bounded priority queue of synthesized partitions; ``get`` prefers items whose SRS is already
    resident on the worker's device (within the best priority class present)."""

    def __init__(self, capacity: int, affinity: bool = False) -> None:
        self.capacity = max(1, capacity)
        self.affinity = affinity  # only meaningful with several devices
        self.cv = threading.Condition()
        self._items: list[WorkItem] = []
        self.closed = False

    def put(self, item: WorkItem, abandon: Callable[[], bool] = lambda: False) -> bool:
        """Block while full; False (not queued) if ``abandon()`` turns true or the queue closes."""
        with self.cv:
            while len(self._items) >= self.capacity:
                if self.closed or abandon():
                    return False
                self.cv.wait(0.2)
            if self.closed or abandon():
                return False
            heapq.heappush(self._items, item)
            self.cv.notify_all()
            return True

    def get(
        self, resident: Callable[[WorkItem], bool] = lambda item: False, allowed: Callable[[WorkItem], bool] | None = None
    ) -> WorkItem | None:
        """The next item in priority order that ``allowed`` accepts (None: any), preferring, within
        the best priority class present, one whose SRS is ``resident`` on the caller's device."""
        with self.cv:
            while True:
                if self.closed:  # stopping: what is left stays journaled and runs after a restart
                    return None
                pick = self._pick(resident, allowed)
                if pick is not None:
                    self.cv.notify_all()
                    return pick
                self.cv.wait(0.5 if allowed is not None else None)

    def _pick(self, resident: Callable[[WorkItem], bool], allowed: Callable[[WorkItem], bool] | None) -> WorkItem | None:
        """Caller holds cv."""
        if not self._items:
            return None
        if not self.affinity and allowed is None:
            return heapq.heappop(self._items)
        candidates = [it for it in sorted(self._items) if allowed is None or allowed(it)]
        if not candidates:
            return None
        best = candidates[0].key[0]
        pick = candidates[0]
        if self.affinity:
            pick = next((it for it in candidates if it.key[0] == best and resident(it)), pick)
        self._items.remove(pick)
        heapq.heapify(self._items)
        return pick

    def __len__(self) -> int:
        with self.cv:
            return len(self._items)

    def close(self) -> None:
        with self.cv:
            self.closed = True
            self.cv.notify_all()
