"""Jobs: one proving request's state machine, its partitions, and its record.

A :class:`Job` is one accepted request; each :class:`Part` is one of its partitions (one Groth16 proof).
The job's :class:`JobState` changes only through :meth:`Job.move_to`, which allows exactly the moves in
:data:`TRANSITIONS`::

    QUEUED --> RUNNING --> COMPLETED
      |           |------> FAILED
      |           '------> CANCELLED
      |------------------> CANCELLED   (cancelled before any partition started)
      '------------------> FAILED      (failed before any partition started)

COMPLETED, FAILED and CANCELLED are final: a job reaches one of them once, and never leaves it.

A :class:`JobRecord` is THE record of a job as the world outside the pipeline sees it: the engine builds
it when the job finishes (or when an await times out), the journal stores it (:meth:`JobRecord.to_json`,
the row format every journal so far has used, so old journals stay readable), and the gRPC service maps
it to protobuf. In it a proof stays bytes and its snarkjs JSON is the text made once by the finalizer.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import numpy.typing as npt

from .errors import EngineError

if TYPE_CHECKING:
    from .registry import Circuit
    from .scheduler import Batch

Witness = npt.NDArray[np.uint64]  # Montgomery Fr vector, shape (n_wires, 4)


class JobState(StrEnum):
    """A job's state; the values are the journal's ``state`` column, the names the API's status."""

    QUEUED = "queued"
    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"

    @property
    def final(self) -> bool:
        return not TRANSITIONS[self]


TRANSITIONS: dict[JobState, frozenset[JobState]] = {
    JobState.QUEUED: frozenset({JobState.RUNNING, JobState.CANCELLED, JobState.FAILED}),
    JobState.RUNNING: frozenset({JobState.COMPLETED, JobState.FAILED, JobState.CANCELLED}),
    JobState.COMPLETED: frozenset(),
    JobState.FAILED: frozenset(),
    JobState.CANCELLED: frozenset(),
}

FINAL_STATES = frozenset(s for s in JobState if s.final)


class IllegalTransition(EngineError):
    """A move the state machine does not allow: a bug in the engine, never the caller's doing."""


class PartStage(StrEnum):
    """Where a partition is in the pipeline. The four middle stages are the ones counted in flight
    (status "stages"; a clean drain waits until they are empty)."""

    QUEUED = "queued"
    SYNTHESIS = "synthesis"
    PROVER_QUEUE = "prover_queue"
    PROVING = "proving"
    FINALIZING = "finalizing"
    DONE = "done"


@dataclass
class Part:
    """One partition of a job: its input, where it is, and what its stages measured."""

    index: int
    kind: str  # "wtns" (a parsed witness) | "inputs" (input signals for the circuit's wasm)
    witness: Witness | None = None
    inputs: dict[str, Any] | None = None
    stage: PartStage = PartStage.QUEUED
    synth_ms: float = 0.0
    witness_ms: float = 0.0
    check_ms: float = 0.0
    checked: bool = False  # the constraint check ran before proving
    srs_ms: float = 0.0
    compute_ms: float = 0.0
    finalize_ms: float = 0.0
    phases: dict[str, float] | None = None
    result: PartitionResult | None = None
    device: str = ""


class Job:
    """One accepted request. The identity fields are set once; the rest (state, cancel mark, parts'
    stages, counters) change under the engine's lock (:attr:`JobTable.lock`)."""

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
    ) -> None:
        self.job_id = job_id
        self.request_id = request_id
        self.circuit = circuit
        self.priority = priority
        self.parts = parts
        self.n_parts = len(parts)
        self.submitted_at = submitted_at
        self.request_hash = request_hash
        self.attempts = attempts  # runs begun before this one (from the journal)
        self.input_bytes = 0  # the request's payload bytes (scheduler.max_queue_bytes counts them)
        self.part_bytes = circuit.working_bytes()
        self._state = JobState.QUEUED
        self.error = ""
        # a cancel was requested: every stage boundary drops the job's partitions from then on (set
        # before the job is finished, so a partition completing meanwhile cannot complete the job)
        self.cancelled = False
        self.done = threading.Event()  # set once the job is final and its record is in ``result``
        self.result: JobRecord | None = None
        self.batch: tuple[str, int, str] | None = None  # (batch id, size, why it was released)
        self.in_batch: Batch | None = None  # the batch collector holds it
        self.dispatch_order = 0
        self.started_at = 0.0
        self.remaining = len(parts)
        self.journaled_start = False
        # cluster mode (issue 23): the fencing token of this host's claim on the job, and whether the claim
        # was lost (lease expired, cancelled through another host): the journal's row is the truth then
        self.claim_token: int | None = None
        self.lost = False
        self.deadline_ms = circuit.spec.deadline * 1e3  # as configured when the job was accepted (or recovered)

    @property
    def state(self) -> JobState:
        return self._state

    @property
    def final(self) -> bool:
        return self._state.final

    def abandoned(self) -> bool:
        """Cancelled or final: its partitions leave the pipeline at the next stage boundary."""
        return self.cancelled or self.final

    def move_to(self, to: JobState) -> None:
        """The one place a job's state changes; refuses what :data:`TRANSITIONS` does not allow."""
        if to not in TRANSITIONS[self._state]:
            raise IllegalTransition(f"job {self.job_id}: {self._state.name} -> {to.name} is not a job state transition")
        self._state = to

    def start(self, now: float) -> bool:
        """The first partition entered synthesis: QUEUED -> RUNNING. False if it had started already."""
        if self._state is not JobState.QUEUED:
            return False
        self.move_to(JobState.RUNNING)
        self.started_at = now
        return True

    def finish(self, state: JobState, error: str = "") -> bool:
        """Move to the final ``state`` once; False (nothing changed) if the job was final already."""
        if self.final:
            return False
        if not state.final:
            raise IllegalTransition(f"job {self.job_id}: finish with {state.name}, which is not a final state")
        self.move_to(state)
        self.error = error
        return True

    def attempts_so_far(self) -> int:
        """Runs begun, this one included (at least 1 for a record)."""
        return max(1, self.attempts + (1 if self.journaled_start else 0))


# -- the record --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Timings:
    """Where a job's time went (ms; the stage sums are over its partitions) and every prover phase."""

    queue_wait_ms: float = 0.0
    srs_load_ms: float = 0.0
    synthesis_ms: float = 0.0
    gpu_compute_ms: float = 0.0  # prover compute: GPU kernels, or the CPU's mat-vecs, NTTs and MSMs
    finalize_ms: float = 0.0  # proof assembly and self-check
    total_ms: float = 0.0
    phases: Mapping[str, float] = field(default_factory=dict)

    STAGES: ClassVar[tuple[str, ...]] = ("queue_wait", "srs_load", "synthesis", "gpu_compute", "finalize", "total")

    @classmethod
    def of(cls, job: Job, now: float) -> Timings:
        parts = job.parts
        phases: dict[str, float] = {}
        for p in parts:
            for k, v in (p.phases or {}).items():
                phases[k] = phases.get(k, 0.0) + v
        start = job.started_at or now
        return cls(
            queue_wait_ms=max(0.0, (start - job.submitted_at) * 1e3),
            srs_load_ms=sum(p.srs_ms for p in parts),
            synthesis_ms=sum(p.synth_ms for p in parts),
            gpu_compute_ms=sum(p.compute_ms for p in parts),
            finalize_ms=sum(p.finalize_ms for p in parts),
            total_ms=max(0.0, (now - job.submitted_at) * 1e3),
            phases=phases,
        )

    def by_stage(self) -> dict[str, float]:
        """{"queue_wait": ms, ..., "total": ms}."""
        return {s: float(getattr(self, f"{s}_ms")) for s in self.STAGES}

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {f"{s}_ms": ms for s, ms in self.by_stage().items()}
        d["phases"] = dict(self.phases)
        return d

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Timings | None:
        if not d:  # a record without timings (a job that never ran, a journal row without a result)
            return None
        kw = {f"{s}_ms": float(d.get(f"{s}_ms", 0.0)) for s in cls.STAGES}
        return cls(**kw, phases={str(k): float(v) for k, v in (d.get("phases") or {}).items()})


@dataclass(frozen=True)
class PartitionResult:
    """One partition's proof."""

    index: int
    proof: bytes  # the compressed proof (192 bytes on BLS12-381)
    proof_json: str  # snarkjs proof.json, as text
    public: tuple[int, ...]  # public signals
    phases: Mapping[str, float]  # prover phases (ms), with witness, constraint_check, srs_load
    device: str  # the device that proved it ("cpu", "gpu:0")

    def to_json(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "proof": self.proof.hex(),
            "proof_json": self.proof_json,
            "public": [str(x) for x in self.public],
            "phases": dict(self.phases),
            "device": self.device,
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> PartitionResult:
        return cls(
            index=int(d["index"]),
            proof=bytes.fromhex(d["proof"]),
            proof_json=d["proof_json"] if isinstance(d["proof_json"], str) else json.dumps(d["proof_json"]),
            public=tuple(int(x) for x in d["public"]),
            phases={str(k): float(v) for k, v in (d.get("phases") or {}).items()},
            device=str(d.get("device", "")),
        )


@dataclass(frozen=True)
class JobRecord:
    """A finished job (or, with ``timed_out``, an await that ended first), as answered and journaled."""

    job_id: str
    state: JobState
    circuit_id: str
    backend: str = ""
    error: str = ""
    partitions: tuple[PartitionResult, ...] = ()  # in partition order; only for COMPLETED
    timings: Timings | None = None
    batch_id: str = ""
    batch_size: int = 0
    batch_flush: str = ""
    dispatch_order: int = 0
    submitted_at: float = 0.0
    completed_at: float = 0.0
    attempts: int = 0
    priority: int = 0
    request_id: str = ""
    timed_out: bool = False  # an await's deadline passed first; ``state`` is the job's as of then
    deadline_ms: float = 0.0  # the circuit's submit-to-proof deadline when the job was accepted; 0 = none
    host: str = ""  # the daemon that proved it, in a cluster (cluster.host); "" for one daemon

    @property
    def deadline_met(self) -> bool | None:
        """None without a deadline or before the job is final; True when it completed in time (a job
        that failed or was cancelled missed it)."""
        if self.deadline_ms <= 0 or self.timed_out or not self.state.final:
            return None
        return self.state is JobState.COMPLETED and (self.completed_at - self.submitted_at) * 1e3 <= self.deadline_ms

    @property
    def status(self) -> str:
        """The API's status: the state's name, or TIMEOUT."""
        return "TIMEOUT" if self.timed_out else self.state.name

    @classmethod
    def finished(cls, job: Job, backend: str, now: float, host: str = "") -> JobRecord:
        """The record of a job that has just reached its final state."""
        b = job.batch
        return cls(
            job_id=job.job_id,
            state=job.state,
            circuit_id=job.circuit.id,
            backend=backend,
            error=job.error,
            partitions=tuple(p.result for p in job.parts if p.result is not None) if job.state is JobState.COMPLETED else (),
            timings=Timings.of(job, now),
            batch_id=b[0] if b else "",
            batch_size=b[1] if b else 0,
            batch_flush=b[2] if b else "",
            dispatch_order=job.dispatch_order,
            submitted_at=job.submitted_at,
            completed_at=now,
            attempts=job.attempts_so_far(),
            priority=job.priority,
            request_id=job.request_id,
            deadline_ms=job.deadline_ms,
            host=host,
        )

    @classmethod
    def timeout(cls, job: Job) -> JobRecord:
        return cls(job_id=job.job_id, state=job.state, circuit_id=job.circuit.id, timed_out=True)

    @classmethod
    def of_row(cls, row: Mapping[str, Any], backend: str) -> JobRecord:
        """The record of a finished job's journal row: its stored result, or (a row finished without
        one, e.g. failed at recovery) what the row itself says."""
        if row.get("result"):
            return cls.from_json(row["result"])
        return cls(
            job_id=row["job_id"],
            state=JobState(row["state"]),
            circuit_id=row["circuit_id"],
            backend=backend,
            error=row.get("error") or "",
            submitted_at=row["submitted_at"],
            completed_at=row.get("finished_at") or 0.0,
            attempts=row.get("attempts") or 0,
            priority=row.get("priority") or 0,
            request_id=row.get("request_id") or "",
            host=row.get("claim_host") or "",
        )

    def to_json(self) -> str:
        """The journal's ``result`` column (the same shape as every earlier version wrote; the deadline
        fields only for a circuit with a deadline)."""
        d = {
            "job_id": self.job_id,
            "status": self.state.name,
            "circuit_id": self.circuit_id,
            "backend": self.backend,
            "error": self.error,
            "partitions": [p.to_json() for p in self.partitions],
            "timings": self.timings.to_json() if self.timings is not None else {},
            "batch_id": self.batch_id,
            "batch_size": self.batch_size,
            "batch_flush": self.batch_flush,
            "dispatch_order": self.dispatch_order,
            "submitted_at": self.submitted_at,
            "completed_at": self.completed_at,
            "attempts": self.attempts,
            "priority": self.priority,
            "request_id": self.request_id,
        }
        if self.deadline_ms > 0:
            d.update(deadline_ms=self.deadline_ms, deadline_met=self.deadline_met)
        if self.host:
            d["host"] = self.host
        return json.dumps(d)

    @classmethod
    def from_json(cls, text: str) -> JobRecord:
        d = json.loads(text)
        return cls(
            job_id=d["job_id"],
            state=JobState(d["status"].lower()),
            circuit_id=d.get("circuit_id", ""),
            backend=d.get("backend", ""),
            error=d.get("error") or "",
            partitions=tuple(PartitionResult.from_json(p) for p in d.get("partitions") or ()),
            timings=Timings.from_json(d.get("timings") or {}),
            batch_id=d.get("batch_id", ""),
            batch_size=d.get("batch_size", 0),
            batch_flush=d.get("batch_flush", ""),
            dispatch_order=d.get("dispatch_order", 0),
            submitted_at=d.get("submitted_at", 0.0),
            completed_at=d.get("completed_at", 0.0),
            attempts=d.get("attempts", 0),
            priority=d.get("priority", 0),
            request_id=d.get("request_id", ""),
            deadline_ms=d.get("deadline_ms", 0.0),
            host=d.get("host", ""),
        )
