"""The proving engine: circuits, SRS tiers, the durable journal and the proving pipeline.

Pipeline (one partition = one Groth16 proof; a job has one or more partitions)::

    submit -> journal -> Scheduler (priority heap, batch collector, working-memory budget)
      -> synthesis workers (partition_workers): witness (.wtns parsed at submit, or the circuit's wasm),
         constraint check against the R1CS (names the violated constraint)
      -> ProverQueue (bounded: a synthesis worker keeps its result, and so its permit, until it is taken)
      -> prover workers, one set per device (GPU: gpu_workers_per_device each, kernels serialized per
         device; no GPU: cpu_workers on the CPU backend), each: SRS acquire (HOT on its device),
         prove_start (CPU: mat-vec, NTTs, the five MSMs submitted to the MSM pool)
      -> finalizer pool: prove_finish (MSM results, assembly, pairing self-check), SRS release, result.
         Each device has ``finalizer_threads`` slots: a prover takes one before prove_start and the
         finalizer gives it back after prove_finish, so no device runs ahead of its finalizers (on the
         CPU backend that would queue ever more MSMs in the pool, and a CRITICAL arrival's MSMs behind
         them); the pool has ``finalizer_threads`` threads per device.

A partition counts as in flight (``in_flight()``; a clean drain waits for 0 before closing the journal)
from the moment the scheduler hands it out until its result is journaled.

Cancellation marks the job; every stage boundary checks the mark (queued items are dropped, in-flight
ones stop at the next boundary and free their memory and SRS reference). Results and state changes are
journaled; a restart re-queues what had not finished.
"""

from __future__ import annotations

import collections
import hashlib
import itertools
import json
import logging
import os
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from .. import CuzkError
from ..groth16 import formats
from ..groth16 import prover as gprover
from ..r1cs.binfile import FormatError
from ..timing import Timer
from . import srs as srsmod
from .config import (
    PRIORITY_NAMES,
    CircuitConfig,
    Config,
    load_config,
    machine_memory,
    validate_circuit,
)
from .errors import (
    AlreadyExists,
    EngineError,
    FailedPrecondition,
    InvalidArgument,
    NotFound,
    ResourceExhausted,
    Unavailable,
)
from .journal import Journal
from .metrics import Metrics
from .registry import Circuit, same_spec
from .scheduler import ProverQueue, Scheduler, WorkItem
from .timeline import Timeline

log = logging.getLogger("cuzk.engine")

QUEUED, RUNNING, COMPLETED, FAILED, CANCELLED = "queued", "running", "completed", "failed", "cancelled"
FINAL_STATES = (COMPLETED, FAILED, CANCELLED)


class JobFailure(CuzkError):
    pass


@dataclass
class Part:
    index: int
    kind: str  # "wtns" | "inputs"
    witness: object = None  # parsed Montgomery witness (wtns)
    inputs: dict | None = None
    stage: str = "queued"
    synth_ms: float = 0.0
    witness_ms: float = 0.0
    check_ms: float = 0.0
    checked: bool = False  # the constraint check ran before proving
    srs_ms: float = 0.0
    compute_ms: float = 0.0
    finalize_ms: float = 0.0
    phases: dict | None = None
    result: dict | None = None
    device: str = ""


class Job:
    def __init__(
        self,
        job_id: str,
        request_id: str,
        circuit: Circuit,
        priority: int,
        parts: list[Part],
        submitted_at: float,
        request_hash: str,
        attempts: int = 0,
    ):
        self.job_id = job_id
        self.request_id = request_id
        self.circuit = circuit
        self.priority = priority
        self.parts = parts
        self.n_parts = len(parts)
        self.submitted_at = submitted_at
        self.request_hash = request_hash
        self.attempts = attempts
        self.state = QUEUED
        self.cancelled = False
        self.final = False
        self.done = threading.Event()
        self.result: dict | None = None
        self.error = ""
        self.batch: tuple[str, int, str] | None = None
        self.in_batch = None
        self.dispatch_order = 0
        self.started_at = 0.0
        self.remaining = len(parts)
        self.part_bytes = circuit.working_bytes()
        self.journaled_start = False


def _rss() -> int:
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


class _Device:
    def __init__(self, name: str, ordinal: int, kind: str):
        self.name = name
        self.ordinal = ordinal
        self.kind = kind  # "cpu" | "gpu"
        self.lock = threading.Lock()  # GPU: serializes kernels on the device
        self.final_slots: threading.BoundedSemaphore | None = None  # set by the engine (finalizer_threads)
        self.allowed: frozenset[str] | None = None  # gpus.affinity: circuits this device proves (None: any)
        self.active = 0
        self.busy_s = 0.0
        self._since = 0.0
        self._mu = threading.Lock()

    def enter(self) -> None:
        with self._mu:
            if self.active == 0:
                self._since = time.monotonic()
            self.active += 1

    def leave(self) -> None:
        with self._mu:
            self.active -= 1
            if self.active == 0:
                self.busy_s += time.monotonic() - self._since

    def busy(self) -> float:
        with self._mu:
            return self.busy_s + ((time.monotonic() - self._since) if self.active else 0.0)


class _Worker:
    def __init__(self, wid: int, device: _Device):
        self.id = wid
        self.device = device
        self.current_job = ""
        self.current_circuit = ""
        self.busy_s = 0.0  # time spent on partitions (SRS acquire + prove_start), finished ones
        self.since = 0.0  # monotonic start of the partition in hand; 0 when idle
        self.started = 0

    def busy(self) -> float:
        since = self.since
        return self.busy_s + ((time.monotonic() - since) if since else 0.0)


class Engine:
    """``Engine(config)``, ``start()``, then submit / await_job / cancel / status ...; ``shutdown()``."""

    def __init__(self, config: Config | None = None):
        self.config = config or load_config()
        cfg = self.config
        self.metrics = Metrics()
        self.timeline = Timeline(cfg.logging.timeline)
        self.started_mono = time.monotonic()
        self.started_wall = time.time()
        self._lock = threading.RLock()
        self._submit_lock = threading.Lock()
        self.circuits: dict[str, Circuit] = {}
        self.active: dict[str, Job] = {}
        self._recent: collections.OrderedDict[str, dict] = collections.OrderedDict()
        self._by_request: dict[str, str] = {}
        self.totals = collections.Counter()
        self.draining = False
        self.stopped = threading.Event()
        self._threads: list[threading.Thread] = []
        self._started = False

        cfg.state_dir.mkdir(parents=True, exist_ok=True)
        if cfg.cpu.threads:
            os.environ["CUZK_CPU_THREADS"] = str(cfg.cpu.threads)
        mem = machine_memory()
        budget = cfg.memory.working_memory_budget or mem // 4
        self.scheduler = Scheduler(budget, cfg.scheduler.max_batch_size, cfg.scheduler.max_batch_wait_ms / 1e3, self.metrics, log)
        self._setup_devices()
        hot = {}
        for d in self.devices:
            if d.kind == "cpu":
                hot[d.name] = cfg.srs.hot_budget or mem // 3
            else:
                hot[d.name] = cfg.srs.hot_budget or self._gpu_mem(d.ordinal)[0] // 2
        self.srs = srsmod.SrsManager(cfg.srs_cache_dir, hot, cfg.srs.warm_budget or mem // 2, self.metrics)
        self.journal = Journal(cfg.journal_path, cfg.journal.synchronous)
        n_workers = len(self.workers)
        depth = cfg.pipeline.prover_queue_depth or n_workers
        self.prover_queue = ProverQueue(depth, affinity=len(self.devices) > 1)
        n_fin = max(1, cfg.pipeline.finalizer_threads)
        # proofs between prove_start and the end of prove_finish, per device: bounded, so a device's provers
        # cannot run ahead of the finalizers (on the CPU backend that would queue ever more MSMs in the pool)
        for d in self.devices:
            d.final_slots = threading.BoundedSemaphore(n_fin)
        self.n_finalizers = n_fin * len(self.devices)
        self.finalizers = ThreadPoolExecutor(self.n_finalizers, thread_name_prefix="cuzk-final")
        self.stage = collections.Counter()
        self.metrics.attach(self)

    # -- devices ------------------------------------------------------------------------------------
    def _setup_devices(self) -> None:
        cfg = self.config
        want = cfg.gpus.backend
        use_gpu = False
        if want in ("auto", "gpu"):
            from ..backends import gpu

            use_gpu = gpu.available()
            if want == "gpu" and not use_gpu:
                raise EngineError('gpus.backend = "gpu" but no CUDA GPU is visible (CuPy missing or no device)')
        self.devices: list[_Device] = []
        self.workers: list[_Worker] = []
        if use_gpu:
            import cupy

            count = cupy.cuda.runtime.getDeviceCount()
            ords = cfg.gpus.devices or list(range(count))
            for o in ords:
                if o >= count:
                    raise EngineError(f"gpus.devices: GPU {o} does not exist ({count} visible)")
            self.backend_name = "gpu"
            self.backend = gprover.get_backend("gpu")
            self.devices = [_Device(f"gpu:{o}", o, "gpu") for o in ords]
            for d in self.devices:
                d.allowed = cfg.gpus.affinity.get(d.ordinal)
            per = max(1, cfg.gpus.gpu_workers_per_device)
        else:
            self.backend_name = "cpu"
            self.backend = gprover.get_backend("cpu")
            self.devices = [_Device("cpu", -1, "cpu")]
            per = max(1, cfg.gpus.cpu_workers)
        wid = itertools.count()
        for d in self.devices:  # device-major worker ids
            for _ in range(per):
                self.workers.append(_Worker(next(wid), d))

    def _gpu_mem(self, ordinal: int) -> tuple[int, int]:
        import cupy

        with cupy.cuda.Device(ordinal):
            free, total = cupy.cuda.runtime.memGetInfo()
        return total, free

    def _gpu_name(self, ordinal: int) -> str:
        import cupy

        name = cupy.cuda.runtime.getDeviceProperties(ordinal)["name"]
        return name.decode() if isinstance(name, bytes) else str(name)

    # -- lifecycle ----------------------------------------------------------------------------------
    def start(self) -> Engine:
        if self._started:
            return self
        self._started = True
        cfg = self.config
        for cc in cfg.circuits:
            self._register(cc, "config")
        for spec in self.journal.circuits():
            cid = spec.get("id")
            if cid in self.circuits:
                if not same_spec(self.circuits[cid].spec, CircuitConfig(**spec)):
                    log.warning(
                        'event=circuit_conflict circuit=%s msg="the config file\'s definition wins over the RegisterCircuit one"',
                        cid,
                    )
                continue
            try:
                self._register(CircuitConfig(**spec), "rpc")
            except CuzkError as e:
                log.error("event=circuit_restore_failed circuit=%s error=%r", cid, str(e))
        self._recover()
        self.journal.purge_payloads()
        for i in range(max(1, cfg.synthesis.partition_workers)):
            self._spawn(self._synthesis_loop, f"cuzk-synth-{i}")
        for w in self.workers:
            self._spawn(self._prover_loop, f"cuzk-prove-{w.id}", w)
        self._spawn(self._gc_loop, "cuzk-gc")
        for cid in cfg.srs.preload:
            try:
                self.preload(cid)
            except CuzkError as e:
                log.error("event=preload_failed circuit=%s error=%r", cid, str(e))
        log.info(
            "event=engine_started backend=%s devices=%s workers=%d synthesis_workers=%d circuits=%d state_dir=%s",
            self.backend_name,
            ",".join(d.name for d in self.devices),
            len(self.workers),
            cfg.synthesis.partition_workers,
            len(self.circuits),
            cfg.state_dir,
        )
        return self

    def _spawn(self, fn, name, *args) -> None:
        t = threading.Thread(target=fn, args=args, name=name, daemon=True)
        t.start()
        self._threads.append(t)

    def in_flight(self) -> int:
        """Partitions between the scheduler's hand-out and their journaled result."""
        taken = self.scheduler.in_hand()  # first: an item moves from there into self.stage, never back
        with self._lock:
            return taken + sum(self.stage.values())

    def shutdown(self, drain_timeout: float = 30.0) -> bool:
        """Stop accepting; let in-flight partitions finish (at most ``drain_timeout`` s); queued jobs stay
        journaled for the next start. True if everything in flight finished."""
        if self.stopped.is_set():
            return True
        self.draining = True
        self.scheduler.close()  # no new work leaves the queue
        deadline = time.monotonic() + drain_timeout
        while self.in_flight() > 0 and time.monotonic() < deadline:
            time.sleep(0.02)
        clean = self.in_flight() == 0
        self.prover_queue.close()
        self.stopped.set()
        self.finalizers.shutdown(wait=clean, cancel_futures=not clean)
        with self._lock:
            left = [j for j in self.active.values() if not j.final]
        log.info("event=engine_stopped drained=%s in_flight_left=%d jobs_left_journaled=%d", clean, self.in_flight(), len(left))
        for j in left:
            j.done.set()  # wake awaiters; they answer UNAVAILABLE
        if clean:
            self.journal.close()
            self.timeline.close()
        return clean

    # -- circuits -----------------------------------------------------------------------------------
    def _register(self, cc: CircuitConfig, source: str) -> Circuit:
        """At start-up: circuits of the config file and those registered by RPC before (from the journal)."""
        c = Circuit(cc, source, calculators=self.config.synthesis.partition_workers)
        self._install(c)
        return c

    def _install(self, c: Circuit) -> None:
        with self._lock:
            self.srs.register(c)
            self.circuits[c.id] = c
        log.info(
            "event=circuit_registered circuit=%s source=%s constraints=%d wires=%d domain=2^%d partitions=%d key=%s",
            c.id,
            c.source,
            c.n_constraints,
            c.n_wires,
            c.domain_log,
            c.partitions,
            c.spec.key_path(),
        )

    def _check_replace(self, old: Circuit | None, cc: CircuitConfig, replace: bool) -> bool:
        """True if ``old`` already is ``cc``; raises if it may not be replaced. Caller holds ``_lock``."""
        if old is None:
            return False
        if same_spec(old.spec, cc):
            return True
        if not replace:
            raise AlreadyExists(
                f"circuit {cc.id!r} is already registered with a different definition (set replace to redefine it)"
            )
        if old.source == "config":
            raise FailedPrecondition(f"circuit {cc.id!r} comes from the config file; change it there")
        if any(j.circuit is old and not j.final for j in self.active.values()):
            raise FailedPrecondition(f"circuit {cc.id!r} has active jobs; redefine it when they finished")
        return False

    def register_circuit(self, spec: dict, replace: bool = False) -> tuple[Circuit, bool]:
        """Register (or, with ``replace``, redefine) a circuit at run time; persisted in the journal."""
        if self.draining:
            raise Unavailable("the daemon is shutting down")
        try:
            cc = validate_circuit(spec, "circuit")
        except CuzkError as e:
            raise InvalidArgument(str(e)) from None
        with self._lock:
            old = self.circuits.get(cc.id)
            if self._check_replace(old, cc, replace):
                return old, True
        c = Circuit(cc, "rpc", calculators=self.config.synthesis.partition_workers)  # reads / compiles: unlocked
        # check and replace at once, with submissions held off: no job can be accepted for the old definition
        # after the check (it would be proved with the new key)
        with self._submit_lock:
            with self._lock:
                old = self.circuits.get(cc.id)
                if self._check_replace(old, cc, replace):
                    return old, True
                self._install(c)
            self.journal.save_circuit(c.id, cc.as_dict())
        return c, False

    def circuit(self, cid: str) -> Circuit:
        with self._lock:
            c = self.circuits.get(cid)
            if c is None:
                known = ", ".join(sorted(self.circuits)) or "none"
                raise NotFound(f"unknown circuit {cid!r} (registered: {known})")
            return c

    def list_circuits(self) -> list[dict]:
        with self._lock:
            cs = list(self.circuits.values())
        out = []
        for c in cs:
            d = c.info()
            d["tier"] = self.srs.tier(c.id)
            out.append(d)
        return out

    # -- submission ---------------------------------------------------------------------------------
    @staticmethod
    def request_hash(circuit_id: str, payloads: list[tuple[str, bytes]]) -> str:
        h = hashlib.sha256(circuit_id.encode() + b"\0")
        for kind, data in payloads:
            h.update(kind.encode() + b"\0" + len(data).to_bytes(8, "little") + data)
        return h.hexdigest()

    def _parse_part(self, c: Circuit, i: int, kind: str, data: bytes, field: str) -> Part:
        if kind == "wtns":
            from ..r1cs.wtns import parse_wtns

            try:
                w = parse_wtns(data, field, expected_wires=c.n_wires)
            except FormatError as e:
                raise InvalidArgument(str(e).replace("the circuit has", f"circuit {c.id!r} has")) from None
            return Part(i, kind, witness=w)
        if not c.spec.wasm:
            raise InvalidArgument(f"{field}: circuit {c.id!r} has no wasm to compute a witness; send a .wtns witness")
        try:
            obj = json.loads(data.decode("utf-8"))
        except UnicodeDecodeError:
            raise InvalidArgument(f"{field}: not UTF-8 text") from None
        except json.JSONDecodeError as e:
            raise InvalidArgument(f"{field}: malformed JSON at line {e.lineno} column {e.colno}: {e.msg}") from None
        if not isinstance(obj, dict):
            raise InvalidArgument(f"{field}: expected a JSON object of input signals, got {type(obj).__name__}")
        return Part(i, kind, inputs=obj)

    def submit(
        self,
        circuit_id: str,
        payloads: list[tuple[str, bytes]],
        priority: int = 0,
        request_id: str = "",
        fields: list[str] | None = None,
    ) -> tuple[Job | dict, bool, int]:
        """Accept a job. ``payloads``: one (kind "wtns"|"inputs", bytes) per partition. Returns
        (job or the finished job's record, duplicate, queue position)."""
        if self.draining:
            self.metrics.rejected.labels(reason="draining").inc()
            raise Unavailable("the daemon is shutting down; submit again after it restarts")
        for _attempt in range(3):
            c = self.circuit(circuit_id)
            if not any(d.allowed is None or c.id in d.allowed for d in self.devices):
                raise FailedPrecondition(
                    f"circuit {c.id!r}: no device may prove it (gpus.affinity names it for none of "
                    f"{', '.join(d.name for d in self.devices)})"
                )
            if not payloads:
                raise InvalidArgument(
                    f"partitions: no witness or inputs_json given (circuit {c.id!r} takes "
                    f"{c.partitions} partition{'s' * (c.partitions != 1)})"
                )
            if len(payloads) != c.partitions:
                raise InvalidArgument(
                    f"partitions: {len(payloads)} given, circuit {c.id!r} has {c.partitions} partition{'s' * (c.partitions != 1)}"
                )
            if priority not in (0, 1, 2, 3, 4):
                raise InvalidArgument(f"priority: {priority} is not a priority (LOW 1 .. CRITICAL 4)")
            rhash = self.request_hash(c.id, payloads)
            if request_id:
                dup = self._duplicate(request_id, rhash)
                if dup is not None:
                    return dup, True, 0
            names = fields or [
                f"partitions[{i}].{'witness' if k == 'wtns' else 'inputs_json'}" for i, (k, _) in enumerate(payloads)
            ]
            parts = [self._parse_part(c, i, k, d, names[i]) for i, (k, d) in enumerate(payloads)]
            with self._submit_lock:
                with self._lock:
                    replaced = self.circuits.get(c.id) is not c
                if replaced:  # redefined (RegisterCircuit replace) while this request was parsed: again
                    continue
                job, pos = self._accept(c, parts, payloads, priority or c.spec.default_priority, request_id, rhash)
                if pos is None:
                    return job, True, 0
            log.info(
                "event=job_accepted job=%s circuit=%s priority=%s partitions=%d request_id=%s position=%d",
                job.job_id,
                c.id,
                PRIORITY_NAMES[job.priority],
                len(parts),
                request_id or "-",
                pos,
            )
            return job, False, pos
        raise Unavailable(f"circuit {circuit_id!r} is being redefined; submit again")

    def _accept(self, c: Circuit, parts: list[Part], payloads, prio: int, request_id: str, rhash: str):
        """Journal and queue the job (the caller holds ``_submit_lock``: the journal's order is the queue's).
        Returns (job, queue position), or (the earlier job or its record, None) for a duplicate request_id."""
        if request_id:
            dup = self._duplicate(request_id, rhash)
            if dup is not None:
                return dup, None
        with self._lock:
            mine = sum(1 for j in self.active.values() if j.circuit is c and not j.final)
            total = sum(1 for j in self.active.values() if not j.final)
        limit = c.spec.max_queue or self.config.scheduler.max_queue_per_circuit
        if mine >= limit:
            self.metrics.rejected.labels(reason="queue_full").inc()
            raise ResourceExhausted(f"circuit {c.id!r}: queue full ({mine} jobs active, max_queue {limit}); retry later")
        if total >= self.config.scheduler.max_pending:
            self.metrics.rejected.labels(reason="pending_full").inc()
            raise ResourceExhausted(
                f"daemon queue full ({total} jobs active, scheduler.max_pending {self.config.scheduler.max_pending}); retry later"
            )
        job_id = uuid.uuid4().hex
        now = time.time()
        try:
            self.journal.insert_job(job_id, request_id or None, rhash, c.id, prio, payloads, now)
        except Exception as e:
            self._journal_error(e, "cannot journal the job")
        job = Job(job_id, request_id, c, prio, parts, now, rhash)
        with self._lock:
            self.active[job_id] = job
            if request_id:
                self._by_request[request_id] = job_id
            pos = self._position(job)
        self.metrics.submitted.labels(circuit=c.id).inc()
        self.timeline.event("SUBMIT", job.job_id, detail=c.id)
        self.scheduler.push_job(job, c.spec.batchable)
        return job, pos

    def _journal_error(self, e: Exception, what: str):
        if self.draining:  # the journal closes at the end of a drain
            raise Unavailable("the daemon is shutting down; submit again after it restarts") from None
        raise EngineError(f"{what}: {e}") from None

    def _position(self, job: Job) -> int:
        return sum(
            1
            for j in self.active.values()
            if j is not job
            and not j.final
            and j.state == QUEUED
            and (j.priority > job.priority or (j.priority == job.priority and j.submitted_at <= job.submitted_at))
        )

    @staticmethod
    def _same_request(request_id: str, rhash: str, their_hash: str, their_job: str) -> None:
        if their_hash != rhash:
            raise AlreadyExists(f"request_id {request_id!r} was already used for a different request (job {their_job})")

    def _duplicate(self, request_id: str, rhash: str):
        with self._lock:
            jid = self._by_request.get(request_id)
            job = self.active.get(jid) if jid else None
        if job is not None:
            self._same_request(request_id, rhash, job.request_hash, job.job_id)
            return job
        try:
            row = self.journal.by_request(request_id)
        except Exception as e:
            self._journal_error(e, "cannot read the journal")
        if row is None:
            return None
        self._same_request(request_id, rhash, row["request_hash"], row["job_id"])
        return self._record_from_row(row)

    # -- recovery -----------------------------------------------------------------------------------
    def _recover(self) -> None:
        rows = self.journal.unfinished()
        for row in rows:
            jid = row["job_id"]
            c = self.circuits.get(row["circuit_id"])
            if c is None:
                self.journal.finish(jid, FAILED, time.time(), error=f"circuit {row['circuit_id']!r} is no longer registered")
                continue
            payloads = self.journal.payloads(jid)
            try:
                parts = [self._parse_part(c, i, k, d, f"partitions[{i}]") for i, (k, d) in enumerate(payloads)]
                if len(parts) != c.partitions:
                    raise InvalidArgument(f"{len(parts)} partitions journaled, circuit has {c.partitions}")
            except CuzkError as e:
                self.journal.finish(jid, FAILED, time.time(), error=f"cannot re-run after restart: {e}")
                continue
            job = Job(
                jid,
                row["request_id"] or "",
                c,
                row["priority"],
                parts,
                row["submitted_at"],
                row["request_hash"],
                attempts=row["attempts"],
            )
            with self._lock:
                self.active[jid] = job
                if job.request_id:
                    self._by_request[job.request_id] = jid
            self.journal.event(jid, "recovered", f"state was {row['state']}")
            self.metrics.recovered.inc()
            self.scheduler.push_job(job, c.spec.batchable)
        if rows:
            log.info("event=jobs_recovered count=%d", len(rows))

    # -- pipeline: synthesis --------------------------------------------------------------------------
    def _synthesis_loop(self) -> None:
        mode = self.config.synthesis.check_constraints
        check = mode == "always" or (mode == "auto" and self.backend_name == "cpu")
        while True:
            item = self.scheduler.take()
            if item is None:
                return
            job, part = item.job, item.job.parts[item.part]
            try:
                with self._lock:
                    live = not (job.final or job.cancelled)
                    if live:
                        self.stage["synthesis"] += 1
                        part.stage = "synthesis"
                        first = not job.journaled_start
                        job.journaled_start = True
                        if job.state == QUEUED:
                            job.state = RUNNING
                            job.started_at = time.time()
            finally:
                self.scheduler.settle()  # counted in self.stage now (or gone)
            if not live:
                self._part_dropped(item)
                continue
            self.timeline.event("SYNTH_START", job.job_id, part.index)
            try:
                self._synthesize(item, check, first)
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
                    self._leave_stage("synthesis")  # after the result is journaled
                continue
            # hold the result (and this worker) until the prover queue takes it
            with self._lock:
                part.stage = "prover_queue"
                self.stage["synthesis"] -= 1
                self.stage["prover_queue"] += 1
            if not self.prover_queue.put(item, abandon=lambda j=job: j.cancelled or j.final):
                self._part_dropped(item)
                self._leave_stage("prover_queue")

    def _synthesize(self, item: WorkItem, check: bool, first: bool) -> None:
        job, part = item.job, item.job.parts[item.part]
        if first:
            self.journal.mark_started(job.job_id, time.time())
        t0 = time.perf_counter()
        if part.witness is not None:
            w = part.witness
        else:
            try:
                w = job.circuit.witness_from_inputs(part.inputs)
            except CuzkError as e:
                raise JobFailure(f"partition {part.index}: {e}") from None
        t1 = time.perf_counter()
        if check:
            msg = job.circuit.violation(w)
            if msg:
                raise JobFailure(f"partition {part.index}: {msg}")
        if self.backend_name == "gpu" and self.config.gpus.pinned_witness:
            from ..backends.gpu.backend import to_pinned

            w = to_pinned(w)  # here, in parallel with the GPU's current proof, not inside the next one
            if part.witness is not None:
                part.witness = w  # one host copy per partition, as before
        t2 = time.perf_counter()
        part.witness_ms = (t1 - t0) * 1e3
        part.check_ms = (t2 - t1) * 1e3 if check else 0.0
        part.checked = check
        part.synth_ms = (t2 - t0) * 1e3
        item.witness = w

    def _leave_stage(self, name: str) -> None:
        with self._lock:
            self.stage[name] -= 1

    # -- pipeline: prover workers ---------------------------------------------------------------------
    def _prover_loop(self, worker: _Worker) -> None:
        dev = worker.device

        def resident(it):
            return dev.name in self.srs.resident_devices(it.job.circuit.id)

        allowed = None if dev.allowed is None else (lambda it: it.job.circuit.id in dev.allowed)
        while True:
            item = self.prover_queue.get(resident, allowed)
            if item is None:
                return
            job, part = item.job, item.job.parts[item.part]
            with self._lock:
                live = not (job.final or job.cancelled)
                if live:
                    self.stage["proving"] += 1
                    part.stage = "proving"
                    worker.current_job, worker.current_circuit = job.job_id, job.circuit.id
                self.stage["prover_queue"] -= 1
            if not live:
                self._part_dropped(item)
                continue
            try:
                if not self._prove(worker, item):
                    return  # stopping
            except Exception as e:
                log.exception("event=prover_error job=%s", job.job_id)
                self._part_failed(item, f"partition {part.index}: internal error in the prover: {e}")

    def _prove(self, worker: _Worker, item: WorkItem) -> bool:
        """SRS acquire and prove_start, then hand the partition to a finalizer. False if stopping."""
        job, part = item.job, item.job.parts[item.part]
        dev = worker.device
        got_slot = False
        while not got_slot and not self.stopped.is_set():
            got_slot = dev.final_slots.acquire(timeout=0.2)
        if not got_slot:  # stopping: leave the partition (its job stays journaled as running)
            worker.current_job = worker.current_circuit = ""
            try:
                self._part_dropped(item)
            finally:
                self._leave_stage("proving")
            return False
        dev.enter()
        worker.since = time.monotonic()
        handed = acquired = False
        failed = ""
        try:
            pk, part.srs_ms, _tier = self.srs.acquire(job.circuit.id, dev.name)
            acquired = True
            part.device = dev.name
            if job.cancelled or job.final:
                raise _Dropped()
            timer = Timer(f"{job.job_id}:{part.index}")
            t0 = time.perf_counter()
            if dev.kind == "gpu":
                import cupy

                with dev.lock, cupy.cuda.Device(dev.ordinal):
                    self.timeline.event("PROVE_START", job.job_id, part.index, dev.name)
                    try:
                        pending = gprover.prove_start(pk, item.witness, self.backend, label=timer.label, timer=timer)
                    finally:
                        self.timeline.event("PROVE_END", job.job_id, part.index, dev.name)
            else:
                self.timeline.event("PROVE_START", job.job_id, part.index, dev.name)
                try:
                    pending = gprover.prove_start(pk, item.witness, self.backend, label=timer.label, timer=timer)
                finally:
                    self.timeline.event("PROVE_END", job.job_id, part.index, dev.name)
            item.extra["start_ms"] = (time.perf_counter() - t0) * 1e3
            worker.started += 1
            if self.stopped.is_set():  # the drain deadline passed: the finalizers are gone; runs after a restart
                raise _Dropped()
            with self._lock:
                try:
                    fut = self.finalizers.submit(self._finalize, item, pending, dev)
                except RuntimeError:  # shut down since the check above: as above
                    raise _Dropped() from None
                self.stage["proving"] -= 1
                self.stage["finalizing"] += 1
                part.stage = "finalizing"
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
            worker.current_job = worker.current_circuit = ""
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
                        self._leave_stage("proving")
        return True

    def _release_proof(self, job: Job, dev: _Device, srs_ref: bool = True) -> None:
        """Give back what a partition holds from SRS acquire to the end of prove_finish: its SRS reference,
        its place on the device and its finalizer slot; each even if one before it raises."""
        try:
            if srs_ref:
                self.srs.release(job.circuit.id, dev.name)
        finally:
            try:
                dev.leave()
            finally:
                dev.final_slots.release()

    # -- pipeline: finalizers -------------------------------------------------------------------------
    def _finalize(self, item: WorkItem, pending, dev: _Device) -> None:
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
            self._leave_stage("finalizing")  # after the result is journaled

    def _finish_partition(self, item: WorkItem, pending, dev: _Device) -> None:
        job, part = item.job, item.job.parts[item.part]
        res = None
        try:
            if job.cancelled or job.final:  # stage boundary: only drain the MSMs in flight, no assembly / check
                try:
                    pending.backend.finish(pending.state, pending.timer)
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
        part.result = {
            "index": part.index,
            "proof": res.proof.to_bytes().hex(),
            "proof_json": json.dumps(formats.proof_to_json(res.proof)),
            "public": [str(x) for x in res.public],
            "phases": ph,
            "device": dev.name,
        }
        for k, v in ph.items():
            self.metrics.prover_phase.labels(phase=k).observe(v / 1e3)
        self.metrics.partitions.labels(circuit=job.circuit.id, device=dev.name).inc()
        with self._lock:
            # a cancel marks the job before it finishes it: a partition done after the mark is dropped, so
            # the job cannot complete under the cancel (which would then report CANCELLED wrongly)
            dropped = job.final or job.cancelled
            if not dropped:
                job.remaining -= 1
                complete = job.remaining == 0
        if dropped:
            self._part_dropped(item)
            return
        self._free(item)
        with self._lock:
            part.stage = "done"
            part.witness = None
        if complete:
            self._finish(job, COMPLETED)

    def _prove_finish(self, item: WorkItem, pending, dev: _Device):
        job, part = item.job, item.job.parts[item.part]
        try:
            if dev.kind == "gpu":
                import cupy

                with cupy.cuda.Device(dev.ordinal):
                    return gprover.prove_finish(pending)
            return gprover.prove_finish(pending)
        except gprover.ProofCheckError as e:
            why = None
            try:
                why = job.circuit.violation(item.witness)
            except Exception:
                pass
            raise JobFailure(f"partition {part.index}: proof self-check failed: {why or e}") from None

    # -- results --------------------------------------------------------------------------------------
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
        with self._lock:
            p.stage = "done"
            p.witness = None

    def _part_failed(self, item: WorkItem, msg: str) -> None:
        self._part_dropped(item)
        self._finish(item.job, FAILED, error=msg)

    def _timings(self, job: Job, now: float) -> dict:
        parts = job.parts
        phases: dict[str, float] = {}
        for p in parts:
            for k, v in (p.phases or {}).items():
                phases[k] = phases.get(k, 0.0) + v
        start = job.started_at or now
        return {
            "queue_wait_ms": max(0.0, (start - job.submitted_at) * 1e3),
            "srs_load_ms": sum(p.srs_ms for p in parts),
            "synthesis_ms": sum(p.synth_ms for p in parts),
            "gpu_compute_ms": sum(p.compute_ms for p in parts),
            "finalize_ms": sum(p.finalize_ms for p in parts),
            "total_ms": max(0.0, (now - job.submitted_at) * 1e3),
            "phases": phases,
        }

    def _record(self, job: Job, state: str, now: float, error: str = "") -> dict:
        t = self._timings(job, now)
        b = job.batch
        return {
            "job_id": job.job_id,
            "status": state.upper(),
            "circuit_id": job.circuit.id,
            "backend": self.backend_name,
            "error": error,
            "partitions": [p.result for p in job.parts] if state == COMPLETED else [],
            "timings": t,
            "batch_id": b[0] if b else "",
            "batch_size": b[1] if b else 0,
            "batch_flush": b[2] if b else "",
            "dispatch_order": job.dispatch_order,
            "submitted_at": job.submitted_at,
            "completed_at": now,
            "attempts": max(1, job.attempts + (1 if job.journaled_start else 0)),
            "priority": job.priority,
            "request_id": job.request_id,
        }

    def _finish(self, job: Job, state: str, error: str = "") -> bool:
        """Record the job's final state once; False if it had finished already (nothing done)."""
        with self._lock:
            if job.final:
                return False
            job.final = True
            job.state = state
            job.error = error
            if state != COMPLETED:  # partitions still queued never run: free their parsed witnesses now
                for p in job.parts:
                    if p.stage == "queued":
                        p.witness = p.inputs = None
        if state != COMPLETED:
            self.scheduler.drop_job(job)
        now = time.time()
        self.timeline.event("DONE", job.job_id, detail=state)
        rec = self._record(job, state, now, error)
        try:
            self.journal.finish(job.job_id, state, now, result=rec, error=error or None)
        except Exception as e:
            log.error("event=journal_error job=%s error=%r", job.job_id, str(e))
        job.result = rec
        with self._lock:
            self.active.pop(job.job_id, None)
            self._recent[job.job_id] = rec
            while len(self._recent) > 2000:
                self._recent.popitem(last=False)
            self.totals[state] += 1
        cid = job.circuit.id
        {COMPLETED: self.metrics.completed, FAILED: self.metrics.failed, CANCELLED: self.metrics.cancelled}[state].labels(
            circuit=cid
        ).inc()
        t = rec["timings"]
        if state == COMPLETED:
            for k in ("queue_wait_ms", "srs_load_ms", "synthesis_ms", "gpu_compute_ms", "finalize_ms", "total_ms"):
                self.metrics.phase.labels(phase=k[:-3]).observe(t[k] / 1e3)
            self.metrics.duration.labels(circuit=cid).observe(t["total_ms"] / 1e3)
            log.info(
                "event=job_completed job=%s circuit=%s partitions=%d total_ms=%.1f queue_ms=%.1f synth_ms=%.1f "
                "srs_ms=%.1f compute_ms=%.1f finalize_ms=%.1f",
                job.job_id,
                cid,
                job.n_parts,
                t["total_ms"],
                t["queue_wait_ms"],
                t["synthesis_ms"],
                t["srs_load_ms"],
                t["gpu_compute_ms"],
                t["finalize_ms"],
            )
        else:
            log.info("event=job_%s job=%s circuit=%s error=%s", state, job.job_id, cid, json.dumps(error))
        job.done.set()
        return True

    def _record_from_row(self, row: dict) -> dict:
        if row.get("result"):
            return json.loads(row["result"])
        return {
            "job_id": row["job_id"],
            "status": row["state"].upper(),
            "circuit_id": row["circuit_id"],
            "error": row.get("error") or "",
            "partitions": [],
            "timings": {},
            "submitted_at": row["submitted_at"],
            "completed_at": row.get("finished_at") or 0.0,
            "attempts": row.get("attempts") or 0,
            "dispatch_order": 0,
            "backend": self.backend_name,
            "batch_id": "",
            "batch_size": 0,
            "batch_flush": "",
        }

    # -- await / cancel -------------------------------------------------------------------------------
    def lookup(self, job_id: str) -> Job | dict:
        with self._lock:
            job = self.active.get(job_id)
            if job is not None:
                return job
            rec = self._recent.get(job_id)
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
        return self._record_from_row(row)

    def await_job(self, job_id: str, timeout_s: float | None = None, alive=lambda: True) -> dict:
        """The job's record once it finished; {"status": "TIMEOUT"} if ``timeout_s`` passed first."""
        j = self.lookup(job_id)
        if isinstance(j, dict):
            return j
        deadline = None if not timeout_s else time.monotonic() + timeout_s
        while True:
            wait = 0.25 if deadline is None else min(0.25, deadline - time.monotonic())
            if wait > 0 and j.done.wait(wait) and j.result is not None:
                return j.result
            if j.result is not None:
                return j.result
            if self.stopped.is_set():
                raise Unavailable(f"the daemon is shutting down; job {job_id} stays journaled and runs after a restart")
            if deadline is not None and time.monotonic() >= deadline:
                return {
                    "job_id": job_id,
                    "status": "TIMEOUT",
                    "circuit_id": j.circuit.id,
                    "error": "",
                    "partitions": [],
                    "timings": {},
                }
            if not alive():
                raise Unavailable("caller went away")

    def cancel(self, job_id: str) -> tuple[bool, bool, str]:
        """(was_running, cancelled, status after)."""
        j = self.lookup(job_id)
        if isinstance(j, dict):
            return False, False, j["status"]
        with self._lock:
            if j.final:
                return False, False, j.state.upper()
            j.cancelled = True
            was_running = any(p.stage != "queued" for p in j.parts)
        self.scheduler.remove_from_batch(j)
        if not self._finish(j, CANCELLED, error="cancelled by request"):
            return False, False, j.state.upper()  # its last partition completed (or one failed) first
        with self.scheduler.cv:
            self.scheduler.cv.notify_all()
        return was_running, True, "CANCELLED"

    # -- SRS ------------------------------------------------------------------------------------------
    def _pick_device(self, cid: str) -> _Device:
        """Where to make ``cid`` HOT: a device that already holds it, else the least loaded one that
        may prove it (gpus.affinity)."""
        ok = [d for d in self.devices if d.allowed is None or cid in d.allowed] or self.devices
        res = set(self.srs.resident_devices(cid))
        for d in ok:
            if d.name in res:
                return d
        return min(ok, key=lambda d: self.srs.hot_used(d.name))

    def preload(self, cid: str) -> tuple[bool, float, int]:
        self.circuit(cid)
        return self.srs.preload(cid, self._pick_device(cid).name)

    def evict(self, cid: str, to_tier: int = srsmod.WARM) -> tuple[bool, int, int]:
        self.circuit(cid)
        return self.srs.evict(cid, to_tier)

    # -- status ---------------------------------------------------------------------------------------
    def snapshot(self) -> dict:
        now = time.monotonic()
        up = now - self.started_mono
        with self._lock:
            jobs = list(self.active.values())
            stages = dict(self.stage)
            totals = dict(self.totals)
            circuits = list(self.circuits)
        batching = self.scheduler.batching()
        queues = []
        for cid in circuits:
            mine = [j for j in jobs if j.circuit.id == cid and not j.final]
            queues.append(
                {
                    "circuit_id": cid,
                    "pending": sum(1 for j in mine if j.state == QUEUED and j.in_batch is None),
                    "in_progress": sum(1 for j in mine if j.state == RUNNING),
                    "batching": batching.get(cid, 0),
                }
            )
        cfg = self.config
        caps = {
            "synthesis": cfg.synthesis.partition_workers,
            "prover_queue": self.prover_queue.capacity,
            "proving": len(self.workers),
            "finalizing": self.n_finalizers,
        }
        workers = []
        for w in self.workers:
            d = w.device
            info = {
                "worker_id": w.id,
                "device": d.name,
                "ordinal": d.ordinal,
                "backend": d.kind,
                "current_job": w.current_job,
                "current_circuit": w.current_circuit,
                "busy_ratio": min(1.0, w.busy() / up) if up > 0 else 0.0,
                "device_busy_ratio": min(1.0, d.busy() / up) if up > 0 else 0.0,
                "proofs_started": w.started,
                "name": "",
                "memory_total": 0,
                "memory_free": 0,
            }
            if d.kind == "gpu":
                try:
                    info["name"] = self._gpu_name(d.ordinal)
                    info["memory_total"], info["memory_free"] = self._gpu_mem(d.ordinal)
                except Exception:
                    pass
            else:
                from ..curve.msm import worker_count

                info["name"] = f"CPU backend ({worker_count()} MSM threads, {os.cpu_count()} cores)"
                info["memory_total"] = machine_memory()
            workers.append(info)
        return {
            "uptime_secs": up,
            "backend": self.backend_name,
            "draining": self.draining,
            "workers": workers,
            "queues": queues,
            "stages": {k: {"in_flight": max(0, stages.get(k, 0)), "capacity": v} for k, v in caps.items()},
            "srs": self.srs.status(),
            "srs_totals": self.srs.totals(),
            "srs_budgets": {"hot": self.srs.hot_budget, "warm": self.srs.warm_budget},
            "counters": {
                "total_completed": totals.get(COMPLETED, 0),
                "total_failed": totals.get(FAILED, 0),
                "total_cancelled": totals.get(CANCELLED, 0),
                "active_jobs": len(jobs),
                "queue_depth": sum(q["pending"] + q["batching"] for q in queues),
            },
            "memory": {
                "rss": _rss(),
                "working_used": self.scheduler.budget.used,
                "working_budget": self.scheduler.budget.total,
                "working_peak": self.scheduler.budget.peak,
            },
        }

    # -- housekeeping ---------------------------------------------------------------------------------
    def _gc_loop(self) -> None:
        retention = self.config.journal.retention
        period = max(0.5, min(10.0, retention / 4 if retention else 10.0))
        while not self.stopped.wait(period):
            try:
                cutoff = time.time() - retention
                self.journal.purge_payloads()
                n = self.journal.purge(cutoff)
                with self._lock:
                    for jid in [k for k, r in self._recent.items() if r.get("completed_at", 0) < cutoff]:
                        del self._recent[jid]
                    for rid in [r for r, jid in self._by_request.items() if jid not in self.active]:
                        del self._by_request[rid]
                if n:
                    log.info("event=journal_purge removed=%d", n)
            except Exception as e:
                if not self.stopped.is_set():
                    log.error("event=gc_error error=%r", str(e))


class _Dropped(Exception):
    pass


def _log_task_error(fut) -> None:
    """Done-callback of the finalizer tasks: an exception that escaped one is logged, not lost."""
    if fut.cancelled():
        return
    e = fut.exception()
    if e is not None:
        log.error("event=finalizer_task_error error=%r", str(e), exc_info=e)
