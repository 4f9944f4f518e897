"""The original Curio cuzk daemon's API (``cuzk.v1.ProvingEngine``), served beside ours on one listener.

Curio (``lib/cuzk/client.go``) is built from ``proto/curio/cuzk/v1/proving.proto`` (vendored verbatim); this
servicer answers that schema through the engine, so Curio's client works unchanged:

* a request names a proof kind and Filecoin's registered proof number; ``[curio] circuits`` maps
  ``<kind>_<registered_proof>`` (``porep_5``) to one of our registered circuits;
* PoRep (POREP_SEAL_COMMIT): ``vanilla_proof`` is the commit-phase-1 envelope
  ``{"SectorNum", "Phase1Out" (base64), "SectorSize"}``; its Phase1Out is either Filecoin's
  SealCommitPhase1Output JSON (read and checked by :mod:`cuzk.filecoin.c1`, its registered proof and
  sector size against the request's; each partition's openings become that partition's JSON inputs) or a
  binary vanilla proof the circuit's ``parse_binary`` reads (our ``.cvp``), given to every partition (each
  reads its own part). The C1 JSON is parsed here once rather than handed to PoRep's ``parse_binary`` per
  partition: a 32 GiB output (~51 MB, 10 partitions) is then parsed and journaled once, not ten times. One job, the
  circuit's partitions; the answer's ``proof`` is the partitions' 192-byte bellperson proofs, concatenated;
* WINDOW_POST_PARTITION / WINNING_POST mapped to our PoSt circuits (:mod:`cuzk.filecoin.post`): the
  request's bincode FallbackPoStSectorProofs, randomness, partition index and miner id (its prover id)
  become the circuit's inputs JSON, verified natively at submission;
* SNAP_DEALS_UPDATE, and PoSt kinds mapped to other circuits: served when mapped; the circuit's binary input
  is the request message itself (serialized, request id and priority cleared; for SnapDeals one copy per
  partition holding that partition's ``vanilla_proofs`` entry and its ``partition_index``), since such a
  circuit needs the request's commitments / randomness too;
* priority: the same enum values (unspecified: the original's default per kind: WinningPoSt CRITICAL,
  WindowPoSt HIGH, else NORMAL; values it does not know: NORMAL, as the original reads them);
* timings are integer milliseconds; ``GetStatus``'s queues carry ``pending`` (queued or held by a batch
  collector) and ``in_progress`` per circuit (Curio sums both over all queues for its back-pressure);
* retries: Curio retries a failed PoRep with the same ``request_id``. A repeated id is proved again (a
  finished job's result, failure or proof, is never handed to a retry); only a job of the same id and the
  same content still in flight is joined. ``AwaitProof`` / ``CancelProof`` accept the id ``SubmitProof``
  answered: the request id (as the original) or, without one, the engine's job id.

Errors: an unknown proof kind answers INVALID_ARGUMENT (as the original), a kind / registered proof with no
``[curio] circuits`` entry FAILED_PRECONDITION naming the key to add; a vanilla proof the circuit refuses
(malformed, or an opening that does not verify) is a FAILED result with ``error_message`` from ``Prove``
(Curio logs it), INVALID_ARGUMENT from ``SubmitProof`` (its response has no status).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import logging
import threading
import uuid
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from .. import CuzkError
from ..engine.config import CURIO_KINDS
from ..engine.engine import Engine
from ..engine.errors import FailedPrecondition, InvalidArgument, NotFound, ResourceExhausted
from ..engine.job import Job, JobRecord
from . import auth, protogen
from .service import _rpc

log = logging.getLogger("cuzk.server")
cpb, cpb_grpc = protogen.load_curio()

POREP, SNAP, WPOST, WINNING = 1, 2, 3, 4
KIND_NAMES = {POREP: "POREP_SEAL_COMMIT", SNAP: "SNAP_DEALS_UPDATE", WPOST: "WINDOW_POST_PARTITION", WINNING: "WINNING_POST"}
_KEY_OF = {v: k for k, v in CURIO_KINDS.items()}
# the original's Priority::default_for(kind) / from_proto
_DEFAULT_PRIORITY = {POREP: 2, SNAP: 2, WPOST: 3, WINNING: 4}
_STATUS = {"COMPLETED": 1, "FAILED": 2, "CANCELLED": 3, "TIMEOUT": 4}
_MAX_IDS = 100_000  # request ids remembered (for joining and AwaitProof by request id), oldest forgotten first


class ProofRefused(InvalidArgument):
    """The vanilla proof's content was refused (malformed, or it does not verify): a FAILED result in Prove."""


@dataclass
class Prepared:
    """A Curio request resolved to an engine submission."""

    kind: int
    circuit_id: str
    payloads: list[tuple[str, bytes]]
    fields: list[str]
    priority: int
    digest: str  # the request's content (request id and priority left out): what a retry must match


def kind_name(kind: int) -> str:
    return KIND_NAMES.get(kind, str(kind))


def _priority(kind: int, p: int) -> int:
    if p == 0:
        return _DEFAULT_PRIORITY[kind]
    return p if p in (1, 2, 3, 4) else 2


def _content_digest(req: Any) -> str:
    c = cpb.SubmitProofRequest()
    c.CopyFrom(req)
    c.request_id = ""
    c.priority = 0
    return hashlib.sha256(c.SerializeToString(deterministic=True)).hexdigest()


def unwrap_c1(data: bytes, sector_size: int = 0, sector_number: int = 0) -> bytes:
    """The commit-phase-1 output inside Curio's envelope ``{"SectorNum", "Phase1Out" (base64), "SectorSize"}``
    (what lotus-bench's commit2 input uses too); bytes that are not such an envelope are returned as they are."""
    head = data[:64].lstrip()
    if not head.startswith(b"{") or b"Phase1Out" not in data[:4096]:
        return data
    try:
        env = json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ProofRefused(f"vanilla_proof: not a JSON commit-phase-1 envelope: {e}") from None
    if not isinstance(env, dict) or not isinstance(env.get("Phase1Out"), str):
        return data  # a bare SealCommitPhase1Output that happens to mention the word
    try:
        inner = base64.b64decode(env["Phase1Out"], validate=True)
    except (binascii.Error, ValueError) as e:
        raise ProofRefused(f"vanilla_proof.Phase1Out: not base64: {e}") from None
    ss, sn = env.get("SectorSize"), env.get("SectorNum")
    if sector_size and isinstance(ss, int) and ss and ss != sector_size:
        raise ProofRefused(f"vanilla_proof.SectorSize: {ss}, the request's sector_size is {sector_size}")
    if sector_number and isinstance(sn, int) and sn != sector_number:
        raise ProofRefused(f"vanilla_proof.SectorNum: {sn}, the request's sector_number is {sector_number}")
    return inner


def _c1_partitions(data: bytes, n: int, circuit_id: str, registered_proof: int, sector_size: int) -> list[tuple[str, bytes]]:
    """Filecoin's SealCommitPhase1Output JSON (parsed and checked once, by :mod:`cuzk.filecoin.c1`) as the
    circuit's ``n`` partitions' inputs: one JSON openings object each, the PoRep circuit's ``parse_inputs``
    view (which verifies every opening natively at submission)."""
    try:
        from ..filecoin import c1
    except ImportError:
        raise ProofRefused(
            "vanilla_proof: a commit-phase-1 JSON output (SealCommitPhase1Output) needs cuzk.filecoin.c1, which this "
            "build does not have; send a binary vanilla proof (.cvp) in Phase1Out"
        ) from None
    try:
        out = c1.parse_c1(data)
    except CuzkError as e:
        raise ProofRefused(f"vanilla_proof: {e}") from None
    if out.proof_id != registered_proof:
        raise ProofRefused(
            f"vanilla_proof: a {out.registered_proof} output (registered proof {out.proof_id}), the request's "
            f"registered_proof is {registered_proof}"
        )
    if sector_size and out.sector_size != sector_size:
        raise ProofRefused(f"vanilla_proof: a {out.sector_size}-byte sector's output, the request's sector_size is {sector_size}")
    if len(out.openings) != n:
        raise ProofRefused(f"vanilla_proof: {len(out.openings)} partitions, circuit {circuit_id!r} has {n}")
    return [("inputs", json.dumps(o, separators=(",", ":")).encode()) for o in out.openings]


def _post_inputs(kind: int, req: Any) -> bytes:
    """A PoSt request's bincode sector proofs, randomness, partition and miner as the inputs JSON of our
    FallbackPoSt circuits (which verify them natively at submission)."""
    from ..filecoin import params as P
    from ..filecoin import post

    if len(req.randomness) != 32:
        raise InvalidArgument(f"randomness: expected 32 bytes, got {len(req.randomness)}")
    try:
        obj = post.post_from_bincode(
            post.WINDOW if kind == WPOST else post.WINNING,
            int(req.registered_proof),
            bytes(req.randomness),
            [bytes(v) for v in req.vanilla_proofs],
            int(req.partition_index),
            P.prover_id(int(req.miner_id)),
        )
    except ValueError as e:  # BincodeError, an unknown PoSt proof, a miner id out of range
        raise InvalidArgument(f"vanilla_proofs: {e}") from None
    return json.dumps(obj, separators=(",", ":")).encode()


class CurioService(cpb_grpc.ProvingEngineServicer):  # type: ignore[misc]  # generated, untyped
    """``cuzk.v1.ProvingEngine`` (the original's schema) through the engine."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._lock = threading.Lock()
        self._ids: OrderedDict[str, tuple[str, str]] = OrderedDict()  # request id -> (content digest, job id)

    # -- requests -------------------------------------------------------------------------------
    def circuit_for(self, kind: int, registered_proof: int) -> str:
        if kind not in KIND_NAMES:
            raise InvalidArgument(
                f"invalid proof_kind: {kind} (POREP_SEAL_COMMIT 1, SNAP_DEALS_UPDATE 2, WINDOW_POST_PARTITION 3, "
                "WINNING_POST 4); cuzk's own API is cuzk.daemon.v1.ProvingEngine"
            )
        table: dict[tuple[int, int], str] = self.engine.config.curio.circuits
        cid = table.get((kind, registered_proof))
        if cid is None:
            mapped = ", ".join(f"{_KEY_OF[k]}_{rp} = {c!r}" for (k, rp), c in sorted(table.items())) or "none"
            raise FailedPrecondition(
                f"no circuit proves {KIND_NAMES[kind]} registered_proof {registered_proof} here: add "
                f'{_KEY_OF[kind]}_{registered_proof} = "<circuit id>" to [curio] circuits (mapped: {mapped})'
            )
        try:
            self.engine.circuit(cid)
        except NotFound as e:
            raise FailedPrecondition(f"[curio] circuits maps {_KEY_OF[kind]}_{registered_proof} to {cid!r}: {e}") from None
        return cid

    def prepare(self, req: Any) -> Prepared:
        """Resolve the circuit and build the partitions' inputs (raises for a request it cannot serve)."""
        kind = int(req.proof_kind)
        cid = self.circuit_for(kind, int(req.registered_proof))
        n = self.engine.circuit(cid).partitions
        limit = int(self.engine.config.daemon.max_request_bytes)
        size = len(req.vanilla_proof) + sum(len(v) for v in req.vanilla_proofs)
        if size > limit:
            raise ResourceExhausted(f"vanilla proofs: {size} bytes, above daemon.max_request_bytes ({limit})")
        if kind == POREP:
            if not req.vanilla_proof:
                raise InvalidArgument("vanilla_proof: required for POREP_SEAL_COMMIT (the commit-phase-1 output)")
            if req.vanilla_proofs:
                raise InvalidArgument("vanilla_proofs: a POREP_SEAL_COMMIT request carries its proof in vanilla_proof")
            data = unwrap_c1(bytes(req.vanilla_proof), int(req.sector_size), int(req.sector_number))
            if data[:64].lstrip().startswith(b"{"):
                payloads = _c1_partitions(data, n, cid, int(req.registered_proof), int(req.sector_size))
                fields = ["vanilla_proof" if n == 1 else f"vanilla_proof (partition {i})" for i in range(n)]
            else:  # one binary vanilla proof: the engine hands it to every partition, each reads its own part
                payloads, fields = [("vanilla", data)], ["vanilla_proof"]
        elif kind == SNAP:
            if len(req.vanilla_proofs) != n:
                raise InvalidArgument(
                    f"vanilla_proofs: {len(req.vanilla_proofs)} given, circuit {cid!r} has {n} partition{'s' * (n != 1)}"
                )
            payloads, fields = [], []
            for i, v in enumerate(req.vanilla_proofs):
                part = cpb.SubmitProofRequest()
                part.CopyFrom(req)
                part.request_id, part.priority, part.partition_index = "", 0, i
                del part.vanilla_proofs[:]
                part.vanilla_proofs.append(v)
                payloads.append(("vanilla", part.SerializeToString(deterministic=True)))
                fields.append(f"vanilla_proofs[{i}]")
        else:
            if n != 1:
                raise FailedPrecondition(f"circuit {cid!r} has {n} partitions; a {KIND_NAMES[kind]} request is one proof")
            if not req.vanilla_proofs:
                raise InvalidArgument(f"vanilla_proofs: required for {KIND_NAMES[kind]} (one per sector)")
            from ..filecoin.post import FallbackPoSt

            if isinstance(self.engine.circuit(cid).python, FallbackPoSt):
                payloads, fields = [("inputs", _post_inputs(kind, req))], ["vanilla_proofs"]
                return Prepared(kind, cid, payloads, fields, _priority(kind, int(req.priority)), _content_digest(req))
            whole = cpb.SubmitProofRequest()
            whole.CopyFrom(req)
            whole.request_id, whole.priority = "", 0
            payloads, fields = [("vanilla", whole.SerializeToString(deterministic=True))], ["request"]
        return Prepared(kind, cid, payloads, fields, _priority(kind, int(req.priority)), _content_digest(req))

    def start(self, req: Any) -> tuple[str, int, bool]:
        """Submit (or join an in-flight job of the same request id and content): (job id, position, joined)."""
        prep = self.prepare(req)
        rid = req.request_id
        if rid:
            with self._lock:
                known = self._ids.get(rid)
            if known is not None and known[0] == prep.digest:
                try:
                    j = self.engine.lookup(known[1])
                except NotFound:
                    j = None
                if isinstance(j, Job) and not j.final:
                    log.info("event=curio_join request_id=%s job=%s", rid, j.job_id)
                    auth.note_owner(j.job_id)
                    return j.job_id, 0, True
        # a unique engine request id per attempt: journaled and logged, never deduplicated against an earlier try
        erid = f"curio:{rid}:{uuid.uuid4().hex[:12]}" if rid else ""
        try:
            job, _dup, pos = self.engine.submit(prep.circuit_id, prep.payloads, prep.priority, erid, prep.fields)
        except InvalidArgument as e:
            raise ProofRefused(str(e)) from None
        auth.note_owner(job.job_id)
        if rid:
            with self._lock:
                self._ids[rid] = (prep.digest, job.job_id)
                self._ids.move_to_end(rid)
                while len(self._ids) > _MAX_IDS:
                    self._ids.popitem(last=False)
        log.info(
            "event=curio_submit request_id=%s kind=%s registered_proof=%d circuit=%s job=%s",
            rid or "-",
            kind_name(prep.kind),
            int(req.registered_proof),
            prep.circuit_id,
            job.job_id,
        )
        return job.job_id, pos, False

    def resolve(self, job_id: str) -> str:
        """The engine job of an id SubmitProof answered (a request id, or the engine's job id)."""
        with self._lock:
            known = self._ids.get(job_id)
        return known[1] if known is not None else job_id

    # -- results --------------------------------------------------------------------------------
    @staticmethod
    def result(rec: JobRecord, shown_id: str) -> Any:
        r = cpb.AwaitProofResponse(job_id=shown_id, status=_STATUS.get(rec.status, 0), error_message=rec.error)
        if rec.status == "COMPLETED":
            r.proof = b"".join(p.proof for p in rec.partitions)
            t = rec.timings
            if t is not None:
                r.queue_wait_ms = round(t.queue_wait_ms)
                r.srs_load_ms = round(t.srs_load_ms)
                r.synthesis_ms = round(t.synthesis_ms)
                r.gpu_compute_ms = round(t.gpu_compute_ms)
                r.total_ms = round(t.total_ms)
        return r

    def _await(self, job_id: str, timeout_ms: int, context: Any) -> JobRecord:
        t = timeout_ms / 1e3 if timeout_ms else None
        rem = context.time_remaining()
        if rem is not None:
            rem = max(0.001, rem - 0.05)
            t = rem if t is None else min(t, rem)
        return self.engine.await_job(job_id, t, alive=context.is_active)

    # -- RPCs -----------------------------------------------------------------------------------
    @_rpc
    def SubmitProof(self, request: Any, context: Any) -> Any:
        job_id, pos, _joined = self.start(request)
        return cpb.SubmitProofResponse(
            job_id=request.request_id or job_id,
            queue_position=pos,
            assigned_gpu=self.engine.assigned_device(self.circuit_for(int(request.proof_kind), int(request.registered_proof))),
        )

    @_rpc
    def AwaitProof(self, request: Any, context: Any) -> Any:
        if not request.job_id:
            raise InvalidArgument("job_id: required")
        return self.result(self._await(self.resolve(request.job_id), request.timeout_ms, context), request.job_id)

    @_rpc
    def Prove(self, request: Any, context: Any) -> Any:
        if not request.HasField("submit"):
            raise InvalidArgument("missing submit field")
        req = request.submit
        try:
            job_id, _pos, _joined = self.start(req)
        except ProofRefused as e:
            log.info("event=curio_refused request_id=%s error=%r", req.request_id or "-", str(e))
            return cpb.ProveResponse(
                result=cpb.AwaitProofResponse(job_id=req.request_id, status=_STATUS["FAILED"], error_message=str(e))
            )
        return cpb.ProveResponse(result=self.result(self._await(job_id, 0, context), req.request_id or job_id))

    @_rpc
    def CancelProof(self, request: Any, context: Any) -> Any:
        if not request.job_id:
            raise InvalidArgument("job_id: required")
        jid = self.resolve(request.job_id)
        auth.check_cancel(jid)
        was, _cancelled, _status = self.engine.cancel(jid)
        return cpb.CancelProofResponse(was_running=was)

    @_rpc
    def GetStatus(self, request: Any, context: Any) -> Any:
        s = self.engine.snapshot()
        r = cpb.GetStatusResponse(
            total_proofs_completed=s["counters"]["total_completed"],
            total_proofs_failed=s["counters"]["total_failed"],
            uptime_seconds=int(s["uptime_secs"]),
        )
        for w in s["workers"]:
            if w["ordinal"] < 0:  # the CPU backend's workers: no GPU to report (as the original without GPUs)
                continue
            r.gpus.add(
                ordinal=w["ordinal"],
                name=w["name"],
                vram_total_bytes=w["memory_total"],
                vram_free_bytes=w["memory_free"],
                current_job_id=w["current_job"],
                current_proof_kind=w["current_circuit"],
            )
        for e in s["srs"]:
            r.loaded_srs.add(
                circuit_id=e["circuit_id"],
                tier={"HOT": 0, "WARM": 1, "COLD": 2}[e["tier"]],
                size_bytes=e["size_bytes"],
                ref_count=e["ref_count"],
            )
        for q in s["queues"]:
            r.queues.add(proof_kind=q["circuit_id"], pending=q["pending"] + q["batching"], in_progress=q["in_progress"])
        return r

    @_rpc
    def GetMetrics(self, request: Any, context: Any) -> Any:
        return cpb.GetMetricsResponse(prometheus_text=self.engine.metrics.text())

    @_rpc
    def PreloadSRS(self, request: Any, context: Any) -> Any:
        if not request.circuit_id:
            raise InvalidArgument("circuit_id: required")
        already, ms, _prev = self.engine.preload(request.circuit_id)
        return cpb.PreloadSrsResponse(already_loaded=already, load_time_ms=round(ms))

    @_rpc
    def EvictSRS(self, request: Any, context: Any) -> Any:
        if not request.circuit_id:
            raise InvalidArgument("circuit_id: required")
        was, freed, _tier = self.engine.evict(request.circuit_id)
        return cpb.EvictSrsResponse(was_loaded=was, freed_bytes=freed)
