"""The gRPC servicer: maps ``cuzk.daemon.v1.ProvingEngine`` calls (cuzk's own API) onto the engine; the
original Curio daemon's ``cuzk.v1`` API is :mod:`.curio`.

Errors answer with a status code and a one-line message: unknown circuit or job -> NOT_FOUND, a
malformed request -> INVALID_ARGUMENT naming the field, queue full -> RESOURCE_EXHAUSTED, shutting down
-> UNAVAILABLE, a request_id reused for another request -> ALREADY_EXISTS, SRS in use or a missing /
corrupt key file -> FAILED_PRECONDITION, GPU out of memory -> RESOURCE_EXHAUSTED; any other failure is
the daemon's, not the caller's: INTERNAL.
A job that fails (violated constraint, missing input signal, ...) is not an RPC error: AwaitProof /
Prove answer status FAILED with the message.

Results come from the engine as :class:`~cuzk.engine.job.JobRecord`; :func:`record_to_pb` is the one
mapping of a record to protobuf.

RegisterCircuit (admin) names files under ``registration.roots`` or uploads their bytes (CircuitSpec's
``*_bytes``; RegisterCircuitStream for uploads larger than one message, its declared sizes checked against
``registration.max_upload_bytes`` before any data is read). ListCircuits shows server-side paths to admins
only (:func:`show_paths`).
"""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Callable
from typing import Any, TypeVar

import grpc

from .. import CuzkError
from ..engine.engine import Engine
from ..engine.errors import EngineError, InvalidArgument, ResourceExhausted
from ..engine.job import Job, JobRecord
from . import auth, protogen

log = logging.getLogger("cuzk.server")
pb, pb_grpc = protogen.load()

_STATUS = {
    "COMPLETED": pb.COMPLETED,
    "FAILED": pb.FAILED,
    "CANCELLED": pb.CANCELLED,
    "TIMEOUT": pb.TIMEOUT,
    "QUEUED": pb.QUEUED,
    "RUNNING": pb.RUNNING,
}
_TIER = {"HOT": pb.HOT, "WARM": pb.WARM, "COLD": pb.COLD}


def _is_gpu_oom(e: BaseException) -> bool:
    # cuzk.backends.gpu.runtime.GpuOutOfMemory imports only where CuPy exists: matched by name (or a marker)
    return getattr(e, "resource_exhausted", False) or any(k.__name__ == "GpuOutOfMemory" for k in type(e).__mro__)


R = TypeVar("R")


def _rpc(fn: Callable[[Any, Any, Any], R]) -> Callable[[Any, Any, Any], R]:
    @functools.wraps(fn)
    def wrapper(self: Any, request: Any, context: Any) -> R:
        try:
            return fn(self, request, context)
        except EngineError as e:
            context.abort(getattr(grpc.StatusCode, e.code), str(e))
        except CuzkError as e:
            if _is_gpu_oom(e):
                context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, str(e))
            log.error("event=rpc_error rpc=%s error=%r", fn.__name__, str(e))
            context.abort(grpc.StatusCode.INTERNAL, str(e))
        except Exception as e:
            log.exception("event=rpc_error rpc=%s", fn.__name__)
            context.abort(grpc.StatusCode.INTERNAL, f"internal error: {type(e).__name__}: {e}")
        raise AssertionError("context.abort returned")  # it raises

    return wrapper


def record_to_pb(rec: JobRecord) -> Any:
    """The AwaitProofResponse of a job's record."""
    r = pb.AwaitProofResponse(
        job_id=rec.job_id,
        status=_STATUS.get(rec.status, pb.UNKNOWN),
        error_message=rec.error,
        circuit_id=rec.circuit_id,
        backend=rec.backend,
        batch_id=rec.batch_id,
        batch_size=rec.batch_size,
        batch_flush=rec.batch_flush,
        dispatch_order=rec.dispatch_order,
        submitted_at=rec.submitted_at,
        completed_at=rec.completed_at,
        attempts=rec.attempts,
        deadline_ms=rec.deadline_ms,
        deadline={None: pb.DEADLINE_NONE, True: pb.DEADLINE_MET, False: pb.DEADLINE_MISSED}[rec.deadline_met],
        host=rec.host,
    )
    t = rec.timings
    if rec.status == "COMPLETED" and t is not None:
        r.queue_wait_ms = t.queue_wait_ms
        r.srs_load_ms = t.srs_load_ms
        r.synthesis_ms = t.synthesis_ms
        r.gpu_compute_ms = t.gpu_compute_ms
        r.finalize_ms = t.finalize_ms
        r.total_ms = t.total_ms
        for k, v in t.phases.items():
            r.phases_ms[k] = v
    for p in rec.partitions:
        pp = r.partitions.add(index=p.index, proof=p.proof, proof_json=p.proof_json, device=p.device)
        pp.public_signals.extend(str(x) for x in p.public)
        for k, v in p.phases.items():
            pp.phases_ms[k] = v
    r.proof = b"".join(p.proof for p in rec.partitions)
    if rec.partitions:
        r.public_signals.extend(str(x) for x in rec.partitions[0].public)
    return r


UPLOAD_FIELDS = ("r1cs", "zkey", "params", "wasm", "sym")  # CircuitSpec's <field>_bytes


def show_paths(ident: auth.Identity | None, peer: str) -> bool:
    """Whether a caller sees server-side paths (ListCircuits): an admin (a token, or the trusted unix socket);
    with authentication off, a caller on the unix socket (private by its mode) but not one on TCP. A submit
    token sees basenames."""
    if ident is not None:
        return ident.admin
    return peer.startswith("unix:")


def _payloads(req: Any) -> tuple[list[tuple[str, bytes]], list[str]]:
    single = req.witness or req.inputs_json
    if req.partitions and single:
        raise InvalidArgument("partitions: give either partitions or the single witness / inputs_json field, not both")
    if req.witness and req.inputs_json:
        raise InvalidArgument("witness: give either witness or inputs_json, not both")
    if req.partitions:
        out: list[tuple[str, bytes]] = []
        fields: list[str] = []
        for i, p in enumerate(req.partitions):
            which = p.WhichOneof("input")
            if which == "witness":
                out.append(("wtns", bytes(p.witness)))
                fields.append(f"partitions[{i}].witness")
            elif which == "inputs_json":
                out.append(("inputs", p.inputs_json.encode()))
                fields.append(f"partitions[{i}].inputs_json")
            elif which == "vanilla_proof":
                out.append(("vanilla", bytes(p.vanilla_proof)))
                fields.append(f"partitions[{i}].vanilla_proof")
            elif which in ("witness_path", "vanilla_proof_path"):
                path = getattr(p, which)
                if not path or len(path) > 4096:
                    raise InvalidArgument(f"partitions[{i}].{which}: expected a file path (at most 4096 characters)")
                out.append(("wtns_path" if which == "witness_path" else "vanilla_path", path.encode()))
                fields.append(f"partitions[{i}].{which}")
            else:
                raise InvalidArgument(f"partitions[{i}]: neither witness nor inputs_json is set")
        return out, fields
    if req.witness:
        return [("wtns", bytes(req.witness))], ["witness"]
    if req.inputs_json:
        return [("inputs", req.inputs_json.encode())], ["inputs_json"]
    return [], []


class ProvingEngineService(pb_grpc.ProvingEngineServicer):  # type: ignore[misc]  # generated, untyped
    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def _submit(self, req: Any) -> tuple[Job | JobRecord, bool, int]:
        if not req.circuit_id:
            raise InvalidArgument("circuit_id: required")
        payloads, fields = _payloads(req)
        return self.engine.submit(req.circuit_id, payloads, int(req.priority), req.request_id, fields)

    def _submit_response(self, job: Job | JobRecord, dup: bool, pos: int) -> Any:
        auth.note_owner(job.job_id)
        if isinstance(job, JobRecord):  # a duplicate of a finished request
            status, device = _STATUS.get(job.status, pb.UNKNOWN), ""
        else:
            status, device = _STATUS.get(job.state.name, pb.UNKNOWN), self.engine.assigned_device(job.circuit.id)
        return pb.SubmitProofResponse(job_id=job.job_id, queue_position=pos, assigned_gpu=device, duplicate=dup, status=status)

    @_rpc
    def SubmitProof(self, request: Any, context: Any) -> Any:
        return self._submit_response(*self._submit(request))

    @_rpc
    def SubmitProofStream(self, request_iterator: Any, context: Any) -> Any:
        """Inputs larger than one message, in chunks. Buffers grow as bytes arrive (never sized by the
        declared sizes, which are only checked against the limit and the bytes that came)."""
        first = next(iter(request_iterator), None)
        if first is None or not first.HasField("header"):
            raise InvalidArgument("header: the first chunk must carry the request (SubmitProofRequest) and the sizes")
        req = first.header
        if not req.circuit_id:
            raise InvalidArgument("header.circuit_id: required")
        if req.partitions or req.witness or req.inputs_json:
            raise InvalidArgument("header: leave partitions, witness and inputs_json empty; the inputs follow as data")
        sizes = list(first.sizes)
        if not sizes or len(sizes) > 4096:
            raise InvalidArgument(f"sizes: expected one entry per partition (1 to 4096), got {len(sizes)}")
        total = sum(int(x.size) for x in sizes)
        limit = int(self.engine.config.daemon.max_request_bytes)
        if total > limit:
            raise ResourceExhausted(f"sizes: the inputs total {total} bytes, above daemon.max_request_bytes ({limit})")
        bufs = [bytearray() for _ in sizes]
        part = 0

        def feed(data: bytes) -> None:
            nonlocal part
            view = memoryview(data)
            while view:
                while part < len(sizes) and len(bufs[part]) == sizes[part].size:
                    part += 1
                if part == len(sizes):
                    raise InvalidArgument(f"data: more bytes than the {total} the sizes declare")
                take = min(len(view), int(sizes[part].size) - len(bufs[part]))
                bufs[part] += view[:take]
                view = view[take:]

        feed(first.data)
        for chunk in request_iterator:
            if chunk.HasField("header") or chunk.sizes:
                raise InvalidArgument("header: only the first chunk carries it")
            feed(chunk.data)
        got = sum(len(b) for b in bufs)
        if got != total:
            raise InvalidArgument(f"data: {got} bytes arrived, the sizes declare {total}")

        def kind(x: Any) -> tuple[str, str]:
            return (
                ("vanilla", "vanilla_proof")
                if x.vanilla_proof
                else ("inputs", "inputs_json")
                if x.inputs_json
                else ("wtns", "witness")
            )

        payloads = [(kind(x)[0], bytes(b)) for x, b in zip(sizes, bufs, strict=True)]
        bufs.clear()
        fields = [f"partitions[{i}].{kind(x)[1]}" for i, x in enumerate(sizes)]
        return self._submit_response(*self.engine.submit(req.circuit_id, payloads, int(req.priority), req.request_id, fields))

    def _await(self, job_id: str, timeout_ms: int, context: Any) -> Any:
        t = timeout_ms / 1e3 if timeout_ms else None
        rem = context.time_remaining()
        if rem is not None:
            rem = max(0.001, rem - 0.05)
            t = rem if t is None else min(t, rem)
        return record_to_pb(self.engine.await_job(job_id, t, alive=context.is_active))

    @_rpc
    def AwaitProof(self, request: Any, context: Any) -> Any:
        if not request.job_id:
            raise InvalidArgument("job_id: required")
        return self._await(request.job_id, request.timeout_ms, context)

    @_rpc
    def Prove(self, request: Any, context: Any) -> Any:
        if not request.HasField("submit"):
            raise InvalidArgument("submit: required (the SubmitProofRequest)")
        job, dup, _pos = self._submit(request.submit)
        auth.note_owner(job.job_id)
        return pb.ProveResponse(result=self._await(job.job_id, request.timeout_ms, context), duplicate=dup)

    @_rpc
    def CancelProof(self, request: Any, context: Any) -> Any:
        if not request.job_id:
            raise InvalidArgument("job_id: required")
        auth.check_cancel(request.job_id)
        was, cancelled, status = self.engine.cancel(request.job_id)
        return pb.CancelProofResponse(was_running=was, cancelled=cancelled, status=_STATUS.get(status, pb.UNKNOWN))

    @_rpc
    def GetStatus(self, request: Any, context: Any) -> Any:
        s = self.engine.snapshot()
        r = pb.GetStatusResponse(
            total_proofs_completed=s["counters"]["total_completed"],
            total_proofs_failed=s["counters"]["total_failed"],
            total_proofs_cancelled=s["counters"]["total_cancelled"],
            uptime_seconds=int(s["uptime_secs"]),
            backend=s["backend"],
            rss_bytes=s["memory"]["rss"],
            working_memory_used_bytes=s["memory"]["working_used"],
            working_memory_budget_bytes=s["memory"]["working_budget"],
            draining=s["draining"],
            status_json=json.dumps(s),
        )
        for w in s["workers"]:
            r.gpus.add(
                ordinal=w["ordinal"],
                name=w["name"],
                vram_total_bytes=w["memory_total"],
                vram_free_bytes=w["memory_free"],
                current_job_id=w["current_job"],
                current_proof_kind=w["current_circuit"],
                worker_id=w["worker_id"],
                backend=w["backend"],
                busy_ratio=w["busy_ratio"],
                proofs_started=w["proofs_started"],
            )
        for e in s["srs"]:
            x = r.loaded_srs.add(
                circuit_id=e["circuit_id"],
                tier=_TIER[e["tier"]],
                size_bytes=e["size_bytes"],
                ref_count=e["ref_count"],
                hot_bytes=e["hot_bytes"],
                warm_bytes=e["warm_bytes"],
                cold_bytes=e["cold_bytes"],
                last_used_secs_ago=e["last_used_secs_ago"],
            )
            x.hot_devices.extend(e["hot_devices"])
        for q in s["queues"]:
            r.queues.add(proof_kind=q["circuit_id"], pending=q["pending"], in_progress=q["in_progress"], batching=q["batching"])
        for name, v in s["stages"].items():
            r.stages.add(name=name, in_flight=v["in_flight"], capacity=v["capacity"])
        return r

    @_rpc
    def GetMetrics(self, request: Any, context: Any) -> Any:
        return pb.GetMetricsResponse(prometheus_text=self.engine.metrics.text())

    @_rpc
    def PreloadSRS(self, request: Any, context: Any) -> Any:
        if not request.circuit_id:
            raise InvalidArgument("circuit_id: required")
        already, ms, prev = self.engine.preload(request.circuit_id)
        return pb.PreloadSRSResponse(already_loaded=already, load_time_ms=ms, previous_tier=prev)

    @_rpc
    def EvictSRS(self, request: Any, context: Any) -> Any:
        if not request.circuit_id:
            raise InvalidArgument("circuit_id: required")
        was, freed, tier = self.engine.evict(request.circuit_id, int(request.to_tier))
        return pb.EvictSRSResponse(was_loaded=was, freed_bytes=freed, tier=tier)

    @_rpc
    def RegisterCircuit(self, request: Any, context: Any) -> Any:
        if not request.HasField("circuit"):
            raise InvalidArgument("circuit: required (a CircuitSpec)")
        uploads = {k: getattr(request.circuit, f"{k}_bytes") for k in UPLOAD_FIELDS}
        return self._register(request, uploads)

    @_rpc
    def RegisterCircuitStream(self, request_iterator: Any, context: Any) -> Any:
        """Uploads larger than one message, in chunks; the declared sizes are checked against
        registration.max_upload_bytes before any data is read, and buffers grow as bytes arrive."""
        first = next(iter(request_iterator), None)
        if first is None or not first.HasField("header"):
            raise InvalidArgument("header: the first chunk must carry the request (RegisterCircuitRequest) and the files")
        req = first.header
        if not req.HasField("circuit"):
            raise InvalidArgument("header.circuit: required (a CircuitSpec)")
        if any(getattr(req.circuit, f"{k}_bytes") for k in UPLOAD_FIELDS):
            raise InvalidArgument("header.circuit: leave the *_bytes fields empty; the files' bytes follow as data")
        files = list(first.files)
        seen: set[str] = set()
        for i, f in enumerate(files):
            if f.field not in UPLOAD_FIELDS:
                raise InvalidArgument(f"files[{i}].field: {f.field!r} is not one of {', '.join(UPLOAD_FIELDS)}")
            if f.field in seen:
                raise InvalidArgument(f"files[{i}].field: {f.field} is given twice")
            seen.add(f.field)
        total = sum(int(f.size) for f in files)
        limit = int(self.engine.config.registration.max_upload_bytes)
        if limit and total > limit:
            big = max(files, key=lambda f: int(f.size))
            also = f" ({total} bytes in all)" if len(files) > 1 else ""
            raise ResourceExhausted(
                f"circuit.{big.field}_bytes: {int(big.size)} bytes{also}, above registration.max_upload_bytes ({limit})"
            )
        bufs = [bytearray() for _ in files]
        part = 0

        def feed(data: bytes) -> None:
            nonlocal part
            view = memoryview(data)
            while view:
                while part < len(files) and len(bufs[part]) == files[part].size:
                    part += 1
                if part == len(files):
                    raise InvalidArgument(f"data: more bytes than the {total} the files declare")
                take = min(len(view), int(files[part].size) - len(bufs[part]))
                bufs[part] += view[:take]
                view = view[take:]

        feed(first.data)
        for chunk in request_iterator:
            if chunk.HasField("header") or chunk.files:
                raise InvalidArgument("header: only the first chunk carries it")
            feed(chunk.data)
        got = sum(len(b) for b in bufs)
        if got != total:
            raise InvalidArgument(f"data: {got} bytes arrived, the files declare {total}")
        uploads = {f.field: bytes(b) for f, b in zip(files, bufs, strict=True)}
        bufs.clear()
        return self._register(req, uploads)

    def _register(self, request: Any, uploads: dict[str, bytes]) -> Any:
        c = request.circuit
        spec = {
            "id": c.id,
            "r1cs": c.r1cs,
            "zkey": c.zkey,
            "params": c.params,
            "wasm": c.wasm,
            "sym": c.sym,
            "default_priority": int(c.default_priority) or 2,
            "batchable": c.batchable,
            "partitions": c.partitions or 1,
            "max_queue": c.max_queue,
            "python": c.python,
            "python_params": c.python_params,
            "deadline": c.deadline_s,
        }
        if c.witness_timeout_s:  # 0: the default
            spec["witness_timeout"] = c.witness_timeout_s
        circuit, already = self.engine.register_circuit(spec, replace=request.replace, uploads=uploads)
        return pb.RegisterCircuitResponse(circuit=self._info(self.engine.circuit_info(circuit)), already_registered=already)

    @staticmethod
    def _info(d: dict[str, Any]) -> Any:
        s = d["spec"]
        spec = pb.CircuitSpec(
            id=s["id"],
            r1cs=s["r1cs"],
            zkey=s["zkey"],
            params=s["params"],
            wasm=s["wasm"],
            sym=s["sym"],
            default_priority=s["default_priority"],
            batchable=s["batchable"],
            partitions=s["partitions"],
            max_queue=s["max_queue"],
            python=s.get("python", ""),
            python_params=json.dumps(s["python_params"], sort_keys=True) if s.get("python_params") else "",
            deadline_s=s.get("deadline", 0.0),
            witness_timeout_s=s.get("witness_timeout", 0.0),
        )
        return pb.CircuitInfo(
            spec=spec,
            n_constraints=d["n_constraints"],
            n_wires=d["n_wires"],
            n_public=d["n_public"],
            domain_log=d["domain_log"],
            tier=d["tier"],
            source=d["source"],
            curve=d["curve"],
            version=d.get("version", ""),
            key_sha256=d.get("key_sha256", ""),
        )

    @_rpc
    def ListCircuits(self, request: Any, context: Any) -> Any:
        show = show_paths(auth.current(), context.peer())
        return pb.ListCircuitsResponse(circuits=[self._info(d) for d in self.engine.list_circuits(show)])
