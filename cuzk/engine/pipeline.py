"""The proving pipeline: the synthesis, prover and finalizer loops, and the stage counts between them.

One partition = one Groth16 proof::

    Scheduler.take()  (priority heap, batch collector, working-memory budget)
      -> synthesis loop (``synthesis.partition_workers`` threads): the witness (.wtns parsed at submit, or
         the circuit's wasm), the constraint check against the R1CS (names the violated constraint), the
         backend's host-side witness preparation (pinned memory on a GPU)
      -> ProverQueue (bounded: a synthesis worker keeps its result, and so its memory, until it is taken)
      -> prover loop (one thread per Worker of the executor): a finalizer slot of its device, SRS acquire
         (HOT on its device), prove_start with the device current (a GPU: one at a time)
      -> finalizer (the executor's pool): prove_finish (MSM results, assembly, pairing self-check), SRS
         release, the partition's result; the job completes with its last partition.

Each device has ``finalizer_threads`` slots: a prover takes one before prove_start and the finalizer gives
it back after prove_finish, so no device runs ahead of its finalizers (on the CPU backend that would queue
ever more MSMs in the pool, and a CRITICAL arrival's MSMs behind them).

A partition counts as in flight (:meth:`Pipeline.in_flight`; a clean drain waits for 0 before closing
the journal) from the moment the scheduler hands it out until its result is journaled. Cancellation
marks the job; every stage boundary checks the mark (a partition of a cancelled or finished job is
dropped, freeing its memory and SRS reference).
"""

from __future__ import annotations

import collections
import json
import logging
import threading
import time
from concurrent.futures import Future

from .. import CuzkError
from ..groth16 import formats
from ..groth16 import prover as gprover
from ..groth16.backend import Backend
from ..r1cs.witness import witness_deadline
from ..timing import Timer
from .config import Config
from .executor import Executor, ProvingDevice, Worker
from .job import Job, JobState, PartitionResult, PartStage
from .jobtable import JobTable
from .journal import JournalStore
from .metrics import Metrics
from .scheduler import ProverQueue, Scheduler, WorkItem
from .srs import SrsManager
from .timeline import Timeline

log = logging.getLogger("cuzk.engine")


class _TimelineTimer(Timer):
    """The prover's phase timer that also writes each phase to the timeline (PHASE, ``<phase>=<ms>``) as it is
    reported, for the trace of ``cuzk-bench timeline --trace``; "total" is left out (the stages show it)."""

    def __init__(self, label: str, timeline: Timeline, job: str, part: int, device: str):
        super().__init__(label)
        self._tl, self._job, self._part, self._dev = timeline, job, part, device

    def record(self, phase: str, ms: float, **extra: object) -> None:
        super().record(phase, ms, **extra)
        if phase != "total":
            self._tl.event("PHASE", self._job, self._part, self._dev, f"{phase}={ms:.3f}")


# the stages a partition is counted in while in flight (status "stages", in this order)
IN_FLIGHT_STAGES = (PartStage.SYNTHESIS, PartStage.PROVER_QUEUE, PartStage.PROVING, PartStage.FINALIZING)


class JobFailure(CuzkError):
    """A partition failed for a reason that is the request's (a violated constraint, a missing input);
    the message is the job's error."""


class _Dropped(Exception):
    """The partition leaves the pipeline without a result (its job is cancelled or final, or the engine
    is stopping)."""


class Pipeline:
    def __init__(
        self,
        config: Config,
        table: JobTable,
        scheduler: Scheduler,
        prover_queue: ProverQueue,
        executor: Executor,
        srs: SrsManager,
        journal: JournalStore,
        metrics: Metrics,
        timeline: Timeline,
        stopped: threading.Event,
    ) -> None:
        self.config = config
        self.table = table
        self.lock = table.lock  # the engine's lock: stage counts change with the job checks they depend on
        self.scheduler = scheduler
        self.prover_queue = prover_queue
        self.executor = executor
        self.backend: Backend = executor.backend
        self.srs = srs
        self.journal = journal
        self.metrics = metrics
        self.timeline = timeline
        self.stopped = stopped  # set when the engine stops: provers stop waiting for finalizer slots
        self.stage: collections.Counter[str] = collections.Counter()  # partitions per in-flight stage
        mode = config.synthesis.check_constraints
        # "auto": check up front on the CPU, where a wasted proof costs seconds; on a GPU only after a failed
        # self-check (to name the violated constraint)
        self.check_upfront = mode == "always" or (mode == "auto" and self.backend.name == "cpu")

    def in_flight(self) -> int:
        """Partitions between the scheduler's hand-out and their journaled result."""
        taken = self.scheduler.in_hand()  # first: an item moves from there into self.stage, never back
        with self.lock:
            return taken + sum(self.stage.values())

    def _enter(self, item: WorkItem, stage: PartStage, leaving: PartStage | None = None) -> bool:
        """Move the partition into ``stage`` (out of ``leaving``) if its job is live; False if it is not
        (then it has only left ``leaving``). Caller holds the lock."""
        job = item.job
        if leaving is not None:
            self.stage[leaving] -= 1
        if job.abandoned():
            return False
        self.stage[stage] += 1
        job.parts[item.part].stage = stage
        return True

    def _leave_stage(self, stage: PartStage) -> None:
        with self.lock:
            self.stage[stage] -= 1

    # -- synthesis --------------------------------------------------------------------------------
    def synthesis_loop(self) -> None:
        while True:
            item = self.scheduler.take()
            if item is None:
                return
            job, part = item.job, item.job.parts[item.part]
            try:
                with self.lock:
                    live = self._enter(item, PartStage.SYNTHESIS)
                    if live:
                        first = not job.journaled_start
                        job.journaled_start = True
                        job.start(time.time())
            finally:
                self.scheduler.settle()  # counted in self.stage now (or gone)
            if not live:
                self._part_dropped(item)
                continue
            self.timeline.event("SYNTH_START", job.job_id, part.index, detail=f"worker={threading.current_thread().name}")
            try:
                self._synthesize(item, first)
                self.timeline.event("SYNTH_END", job.job_id, part.index)
            except Exception as e:
                self.timeline.event("SYNTH_END", job.job_id, part.index, detail="failed")
                if isinstance(e, JobFailure):
                    msg = str(e)
                else:
                    log.exception("event=synthesis_error job=%s", job.job_id)
                    msg = f"partition {part.index}: internal error in synthesis: {e}"
                try:
                    self._part_failed(item, msg)
                finally:
                    self._leave_stage(PartStage.SYNTHESIS)  # after the result is journaled
                continue
            # hold the result (and this worker) until the prover queue takes it
            with self.lock:
                part.stage = PartStage.PROVER_QUEUE
                self.stage[PartStage.SYNTHESIS] -= 1
                self.stage[PartStage.PROVER_QUEUE] += 1
            if not self.prover_queue.put(item, abandon=job.abandoned):
                self._part_dropped(item)
                self._leave_stage(PartStage.PROVER_QUEUE)

    def _synthesize(self, item: WorkItem, first: bool) -> None:
        job, part = item.job, item.job.parts[item.part]
        if first:
            self.journal.mark_started(job.job_id, time.time())
        t0 = time.perf_counter()
        if part.witness is not None:
            w = part.witness
        else:
            assert part.inputs is not None  # a part has one of the two until it leaves the queue
            try:
                with witness_deadline(getattr(job.circuit.spec, "witness_timeout", 0.0), job.abandoned):
                    w = job.circuit.witness_from_inputs(part.inputs)
            except CuzkError as e:
                raise JobFailure(f"partition {part.index}: {e}") from None
        t1 = time.perf_counter()
        check = self.check_upfront
        if check:
            msg = job.circuit.violation(w, part.inputs)
            if msg:
                raise JobFailure(f"partition {part.index}: {msg}")
        if self.config.gpus.pinned_witness:
            w = self.backend.prepare_witness(w)  # here, in parallel with the device's current proof, not inside the next one
            if part.witness is not None:
                part.witness = w  # one host copy per partition
        t2 = time.perf_counter()
        part.witness_ms = (t1 - t0) * 1e3
        part.check_ms = (t2 - t1) * 1e3 if check else 0.0
        part.checked = check
        part.synth_ms = (t2 - t0) * 1e3
        item.witness = w

    # -- provers ----------------------------------------------------------------------------------
    def prover_loop(self, worker: Worker) -> None:
        dev = worker.device

        def resident(it: WorkItem) -> bool:
            return dev.device in self.srs.resident_devices(it.job.circuit.srs_key)

        def allowed(it: WorkItem) -> bool:
            return dev.may_prove(it.job.circuit.id)

        while True:
            item = self.prover_queue.get(resident, None if dev.allowed is None else allowed)
            if item is None:
                return
            job, part = item.job, item.job.parts[item.part]
            with self.lock:
                live = self._enter(item, PartStage.PROVING, leaving=PartStage.PROVER_QUEUE)
                if live:
                    worker.take(job.job_id, job.circuit.id)
            if not live:
                self._part_dropped(item)
                continue
            try:
                if not self._prove(worker, item):
                    return  # stopping
            except Exception as e:
                log.exception("event=prover_error job=%s", job.job_id)
                self._part_failed(item, f"partition {part.index}: internal error in the prover: {e}")

    def _prove(self, worker: Worker, item: WorkItem) -> bool:
        """SRS acquire and prove_start, then hand the partition to a finalizer. False if stopping."""
        job, part = item.job, item.job.parts[item.part]
        dev = worker.device
        got_slot = False
        while not got_slot and not self.stopped.is_set():
            got_slot = dev.final_slots.acquire(timeout=0.2)
        if not got_slot:  # stopping: leave the partition (its job stays journaled as running)
            worker.idle()
            try:
                self._part_dropped(item)
            finally:
                self._leave_stage(PartStage.PROVING)
            return False
        dev.enter()
        worker.since = time.monotonic()
        handed = acquired = False
        failed = ""
        try:
            # the key of the circuit version the job was accepted for (a replacement does not change it)
            pk, part.srs_ms, _tier = self.srs.acquire(job.circuit.srs_key, dev.device)
            acquired = True
            part.device = dev.name
            if job.abandoned():
                raise _Dropped()
            assert item.witness is not None  # synthesis made it
            timer = _TimelineTimer(f"{job.job_id}:{part.index}", self.timeline, job.job_id, part.index, dev.name)
            t0 = time.perf_counter()
            with dev.exclusive(), self.backend.use(dev.device):
                self.timeline.event("PROVE_START", job.job_id, part.index, dev.name)
                try:
                    pending = gprover.prove_start(
                        pk, item.witness, self.backend, device=dev.device, label=timer.label, timer=timer
                    )
                finally:
                    self.timeline.event("PROVE_END", job.job_id, part.index, dev.name)
            item.extra["start_ms"] = (time.perf_counter() - t0) * 1e3
            worker.started += 1
            if self.stopped.is_set():  # the drain deadline passed: the finalizers are gone; runs after a restart
                raise _Dropped()
            with self.lock:
                try:
                    fut = self.executor.finalizers.submit(self._finalize, item, pending, dev)
                except RuntimeError:  # shut down since the check above: as above
                    raise _Dropped() from None
                self.stage[PartStage.PROVING] -= 1
                self.stage[PartStage.FINALIZING] += 1
                part.stage = PartStage.FINALIZING
            handed = True
            fut.add_done_callback(_log_task_error)
        except _Dropped:
            pass
        except CuzkError as e:
            failed = f"partition {part.index}: {e}"
        except Exception as e:
            log.exception("event=prove_start_error job=%s", job.job_id)
            failed = f"partition {part.index}: internal error in prove_start: {e}"
        finally:
            worker.busy_s += time.monotonic() - worker.since
            worker.since = 0.0
            worker.idle()
            if not handed:
                try:
                    self._release_proof(job, dev, srs_ref=acquired)
                finally:
                    try:
                        if failed:
                            self._part_failed(item, failed)
                        else:
                            self._part_dropped(item)
                    finally:
                        self._leave_stage(PartStage.PROVING)
        return True

    def _release_proof(self, job: Job, dev: ProvingDevice, srs_ref: bool = True) -> None:
        """Give back what a partition holds from SRS acquire to the end of prove_finish: its SRS reference,
        its place on the device and its finalizer slot; each even if one before it raises."""
        try:
            if srs_ref:
                self.srs.release(job.circuit.srs_key, dev.device)
        finally:
            try:
                dev.leave()
            finally:
                dev.final_slots.release()

    # -- finalizers -------------------------------------------------------------------------------
    def _finalize(self, item: WorkItem, pending: gprover.PendingProof, dev: ProvingDevice) -> None:
        """A finalizer task: nothing escapes it (the partition would never leave the pipeline)."""
        part = item.job.parts[item.part]
        try:
            self._finish_partition(item, pending, dev)
        except JobFailure as e:
            self._part_failed(item, str(e))
        except BaseException as e:
            log.exception("event=finalize_error job=%s", item.job.job_id)
            self._part_failed(item, f"partition {part.index}: internal error in prove_finish: {e}")
        finally:
            self._leave_stage(PartStage.FINALIZING)  # after the result is journaled

    def _finish_partition(self, item: WorkItem, pending: gprover.PendingProof, dev: ProvingDevice) -> None:
        job, part = item.job, item.job.parts[item.part]
        res = None
        try:
            if job.abandoned():  # stage boundary: only wait for the MSMs in flight, no assembly / check
                try:
                    gprover.abandon(pending)
                except Exception:
                    pass
            else:
                t0 = time.perf_counter()
                self.timeline.event("FINALIZE_START", job.job_id, part.index, dev.name)
                try:
                    res = self._prove_finish(item, pending, dev)
                finally:
                    self.timeline.event("FINALIZE_END", job.job_id, part.index, dev.name)
                finish_ms = (time.perf_counter() - t0) * 1e3
        finally:
            self._release_proof(job, dev)
        if res is None:
            self._part_dropped(item)
            return
        ph = dict(res.timings)
        fin = ph.get("finalize", 0.0) + ph.get("verify", 0.0)
        part.finalize_ms = fin
        part.compute_ms = item.extra.get("start_ms", 0.0) + max(0.0, finish_ms - fin)
        ph["witness"] = part.witness_ms
        if part.checked:
            ph["constraint_check"] = part.check_ms
        ph["srs_load"] = part.srs_ms
        part.phases = ph
        part.result = PartitionResult(
            index=part.index,
            proof=res.proof.to_bytes(),
            proof_json=json.dumps(formats.proof_to_json(res.proof)),  # the text every answer and the journal use
            public=tuple(res.public),
            phases=ph,
            device=dev.name,
        )
        for k, v in ph.items():
            self.metrics.prover_phase.labels(phase=k).observe(v / 1e3)
        self.metrics.partitions.labels(circuit=job.circuit.id, device=dev.name).inc()
        with self.lock:
            # a cancel marks the job before it finishes it: a partition done after the mark is dropped, so
            # the job cannot complete under the cancel (which would then report CANCELLED wrongly)
            dropped = job.abandoned()
            if not dropped:
                job.remaining -= 1
                complete = job.remaining == 0
        if dropped:
            self._part_dropped(item)
            return
        self._free(item)
        with self.lock:
            part.stage = PartStage.DONE
            part.witness = None
        if complete:
            self.table.finish(job, JobState.COMPLETED)

    def _prove_finish(self, item: WorkItem, pending: gprover.PendingProof, dev: ProvingDevice) -> gprover.ProveResult:
        job, part = item.job, item.job.parts[item.part]
        try:
            with self.backend.use(dev.device):
                return gprover.prove_finish(pending)
        except gprover.ProofCheckError as e:
            why = None
            try:
                if item.witness is not None:
                    why = job.circuit.violation(item.witness)
            except Exception:  # the diagnosis is best effort: the self-check's failure is the error
                pass
            raise JobFailure(f"partition {part.index}: proof self-check failed: {why or e}") from None

    # -- leaving the pipeline ---------------------------------------------------------------------
    def _free(self, item: WorkItem) -> None:
        """Return the partition's working memory to the budget (once) and drop its witness."""
        n, item.nbytes = item.nbytes, 0
        if n:
            self.scheduler.release(n)
        item.witness = None

    def _part_dropped(self, item: WorkItem) -> None:
        """A partition of a cancelled / already failed job (or one left by a stop) leaves the pipeline."""
        self._free(item)
        p = item.job.parts[item.part]
        with self.lock:
            p.stage = PartStage.DONE
            p.witness = None

    def _part_failed(self, item: WorkItem, msg: str) -> None:
        self._part_dropped(item)
        self.table.finish(item.job, JobState.FAILED, error=msg)


def _log_task_error(fut: Future[None]) -> None:
    """Done-callback of the finalizer tasks: an exception that escaped one is logged, not lost."""
    if fut.cancelled():
        return
    e = fut.exception()
    if e is not None:
        log.error("event=finalizer_task_error error=%r", str(e), exc_info=e)
