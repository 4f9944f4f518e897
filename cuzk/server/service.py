"""The gRPC servicer: maps ``cuzk.v1.ProvingEngine`` calls onto the engine.

Errors answer with a status code and a one-line message: unknown circuit or job -> NOT_FOUND, a
malformed request -> INVALID_ARGUMENT naming the field, queue full -> RESOURCE_EXHAUSTED, shutting down
-> UNAVAILABLE, a request_id reused for another request -> ALREADY_EXISTS, SRS in use or a missing /
corrupt key file -> FAILED_PRECONDITION, GPU out of memory -> RESOURCE_EXHAUSTED; any other failure is
the daemon's, not the caller's: INTERNAL.
A job that fails (violated constraint, missing input signal, ...) is not an RPC error: AwaitProof /
Prove answer status FAILED with the message.
"""

from __future__ import annotations

import functools
import json
import logging

import grpc

from .. import CuzkError
from ..engine.engine import Job
from ..engine.errors import EngineError, InvalidArgument
from . import protogen

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


def _rpc(fn):
    @functools.wraps(fn)
    def wrapper(self, request, context):
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

    return wrapper


def record_to_pb(rec: dict):
    r = pb.AwaitProofResponse(
        job_id=rec.get("job_id", ""),
        status=_STATUS.get(rec.get("status", ""), pb.UNKNOWN),
        error_message=rec.get("error") or "",
        circuit_id=rec.get("circuit_id", ""),
        backend=rec.get("backend", ""),
        batch_id=rec.get("batch_id", ""),
        batch_size=rec.get("batch_size", 0),
        batch_flush=rec.get("batch_flush", ""),
        dispatch_order=rec.get("dispatch_order", 0),
        submitted_at=rec.get("submitted_at", 0.0),
        completed_at=rec.get("completed_at", 0.0),
        attempts=rec.get("attempts", 0),
    )
    t = rec.get("timings") or {}
    if rec.get("status") == "COMPLETED":
        r.queue_wait_ms = t.get("queue_wait_ms", 0.0)
        r.srs_load_ms = t.get("srs_load_ms", 0.0)
        r.synthesis_ms = t.get("synthesis_ms", 0.0)
        r.gpu_compute_ms = t.get("gpu_compute_ms", 0.0)
        r.finalize_ms = t.get("finalize_ms", 0.0)
        r.total_ms = t.get("total_ms", 0.0)
        for k, v in (t.get("phases") or {}).items():
            r.phases_ms[k] = v
    proofs = []
    for p in rec.get("partitions") or []:
        pp = r.partitions.add(
            index=p["index"], proof=bytes.fromhex(p["proof"]), proof_json=p["proof_json"], device=p.get("device", "")
        )
        pp.public_signals.extend(p["public"])
        for k, v in (p.get("phases") or {}).items():
            pp.phases_ms[k] = v
        proofs.append(pp.proof)
    r.proof = b"".join(proofs)
    if rec.get("partitions"):
        r.public_signals.extend(rec["partitions"][0]["public"])
    return r


def _payloads(req) -> tuple[list[tuple[str, bytes]], list[str]]:
    single = req.witness or req.inputs_json
    if req.partitions and single:
        raise InvalidArgument("partitions: give either partitions or the single witness / inputs_json field, not both")
    if req.witness and req.inputs_json:
        raise InvalidArgument("witness: give either witness or inputs_json, not both")
    if req.partitions:
        out, fields = [], []
        for i, p in enumerate(req.partitions):
            which = p.WhichOneof("input")
            if which == "witness":
                out.append(("wtns", bytes(p.witness)))
                fields.append(f"partitions[{i}].witness")
            elif which == "inputs_json":
                out.append(("inputs", p.inputs_json.encode()))
                fields.append(f"partitions[{i}].inputs_json")
            else:
                raise InvalidArgument(f"partitions[{i}]: neither witness nor inputs_json is set")
        return out, fields
    if req.witness:
        return [("wtns", bytes(req.witness))], ["witness"]
    if req.inputs_json:
        return [("inputs", req.inputs_json.encode())], ["inputs_json"]
    return [], []


class ProvingEngineService(pb_grpc.ProvingEngineServicer):
    def __init__(self, engine):
        self.engine = engine

    def _submit(self, req):
        if not req.circuit_id:
            raise InvalidArgument("circuit_id: required")
        payloads, fields = _payloads(req)
        job, dup, pos = self.engine.submit(req.circuit_id, payloads, int(req.priority), req.request_id, fields)
        return job, dup, pos

    def _submit_response(self, job, dup, pos):
        if isinstance(job, Job):
            jid = job.job_id
            status = pb.RUNNING if job.state == "running" else pb.QUEUED
            if job.final:
                status = _STATUS.get(job.state.upper(), pb.UNKNOWN)
            devs = self.engine.srs.resident_devices(job.circuit.id)
            gpu = devs[0] if devs else (self.engine.devices[0].name if len(self.engine.devices) == 1 else "")
        else:
            jid, status, gpu = job["job_id"], _STATUS.get(job["status"], pb.UNKNOWN), ""
        return pb.SubmitProofResponse(job_id=jid, queue_position=pos, assigned_gpu=gpu, duplicate=dup, status=status)

    @_rpc
    def SubmitProof(self, request, context):
        return self._submit_response(*self._submit(request))

    def _await(self, job_id: str, timeout_ms: int, context):
        t = timeout_ms / 1e3 if timeout_ms else None
        rem = context.time_remaining()
        if rem is not None:
            rem = max(0.001, rem - 0.05)
            t = rem if t is None else min(t, rem)
        return record_to_pb(self.engine.await_job(job_id, t, alive=context.is_active))

    @_rpc
    def AwaitProof(self, request, context):
        if not request.job_id:
            raise InvalidArgument("job_id: required")
        return self._await(request.job_id, request.timeout_ms, context)

    @_rpc
    def Prove(self, request, context):
        if not request.HasField("submit"):
            raise InvalidArgument("submit: required (the SubmitProofRequest)")
        job, dup, _pos = self._submit(request.submit)
        jid = job.job_id if isinstance(job, Job) else job["job_id"]
        return pb.ProveResponse(result=self._await(jid, request.timeout_ms, context), duplicate=dup)

    @_rpc
    def CancelProof(self, request, context):
        if not request.job_id:
            raise InvalidArgument("job_id: required")
        was, cancelled, status = self.engine.cancel(request.job_id)
        return pb.CancelProofResponse(was_running=was, cancelled=cancelled, status=_STATUS.get(status, pb.UNKNOWN))

    @_rpc
    def GetStatus(self, request, context):
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
    def GetMetrics(self, request, context):
        return pb.GetMetricsResponse(prometheus_text=self.engine.metrics.text())

    @_rpc
    def PreloadSRS(self, request, context):
        if not request.circuit_id:
            raise InvalidArgument("circuit_id: required")
        already, ms, prev = self.engine.preload(request.circuit_id)
        return pb.PreloadSRSResponse(already_loaded=already, load_time_ms=ms, previous_tier=prev)

    @_rpc
    def EvictSRS(self, request, context):
        if not request.circuit_id:
            raise InvalidArgument("circuit_id: required")
        was, freed, tier = self.engine.evict(request.circuit_id, int(request.to_tier))
        return pb.EvictSRSResponse(was_loaded=was, freed_bytes=freed, tier=tier)

    @_rpc
    def RegisterCircuit(self, request, context):
        if not request.HasField("circuit"):
            raise InvalidArgument("circuit: required (a CircuitSpec)")
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
        }
        circuit, already = self.engine.register_circuit(spec, replace=request.replace)
        return pb.RegisterCircuitResponse(
            circuit=self._info(circuit.info() | {"tier": self.engine.srs.tier(circuit.id)}), already_registered=already
        )

    @staticmethod
    def _info(d: dict):
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
        )
        return pb.CircuitInfo(
            spec=spec,
            n_constraints=d["n_constraints"],
            n_wires=d["n_wires"],
            n_public=d["n_public"],
            domain_log=d["domain_log"],
            tier=d["tier"],
            source=d["source"],
        )

    @_rpc
    def ListCircuits(self, request, context):
        return pb.ListCircuitsResponse(circuits=[self._info(d) for d in self.engine.list_circuits()])
