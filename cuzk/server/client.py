"""Python client of the proving daemon.

    with Client("unix:///run/cuzk.sock") as c:
        res = c.prove("my-circuit", witness=open("w.wtns", "rb").read())
        res.proofs[0]      # 192-byte proof of partition 0
        res.proof_json[0]  # snarkjs proof.json (dict)
        res.public[0]      # public signals (ints)
        res.timings        # queue_wait_ms, srs_load_ms, synthesis_ms, gpu_compute_ms, finalize_ms, total_ms

RPC errors raise :class:`DaemonError` (``.code`` is the gRPC status name); ``prove(check=True)`` and
``result.check()`` raise :class:`JobFailed` for a job that FAILED or was CANCELLED.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field

import grpc

from .. import CuzkError
from . import protogen

pb, pb_grpc = protogen.load()

_PRIO = {"": 0, "unspecified": 0, "low": 1, "normal": 2, "high": 3, "critical": 4}
_TIERS = {"hot": 0, "warm": 1, "cold": 2}
TIER_NAMES = {0: "HOT", 1: "WARM", 2: "COLD"}


class DaemonError(CuzkError):
    def __init__(self, code: str, message: str):
        super().__init__(f"daemon: {code}: {message}")
        self.code = code
        self.details = message


class JobFailed(CuzkError):
    def __init__(self, result: ProofResult):
        super().__init__(f"job {result.job_id} {result.status}: {result.error}")
        self.result = result


def default_address() -> str:
    env = os.environ.get("CUZK_ADDR")
    if env:
        return env
    from ..engine.config import load_config

    return load_config().listen


def _target(address: str) -> str:
    from .daemon import client_target

    return client_target(address)


def priority_value(p) -> int:
    if isinstance(p, int):
        return p
    try:
        return _PRIO[str(p).strip().lower()]
    except KeyError:
        raise CuzkError(f"unknown priority {p!r}: expected low, normal, high or critical") from None


@dataclass
class SubmitResult:
    job_id: str
    queue_position: int
    duplicate: bool
    assigned_gpu: str
    status: str


@dataclass
class ProofResult:
    job_id: str
    status: str
    error: str
    proofs: list[bytes]
    proof_json: list[dict]
    public: list[list[int]]
    timings: dict[str, float]
    phases: dict[str, float]
    circuit_id: str = ""
    backend: str = ""
    batch_id: str = ""
    batch_size: int = 0
    batch_flush: str = ""
    dispatch_order: int = 0
    submitted_at: float = 0.0
    completed_at: float = 0.0
    attempts: int = 0
    deadline_ms: float = 0.0  # the circuit's deadline (0 = none)
    deadline_met: bool | None = None  # None: no deadline (or not finished)
    partition_phases: list[dict] = field(default_factory=list)
    devices: list[str] = field(default_factory=list)
    host: str = ""  # the daemon that proved it, in a cluster

    @property
    def ok(self) -> bool:
        return self.status == "COMPLETED"

    @property
    def proof(self) -> bytes:
        return b"".join(self.proofs)

    def check(self) -> ProofResult:
        if not self.ok:
            raise JobFailed(self)
        return self

    @staticmethod
    def from_pb(r) -> ProofResult:
        return ProofResult(
            job_id=r.job_id,
            status=pb.JobStatus.Name(r.status),
            error=r.error_message,
            proofs=[p.proof for p in r.partitions],
            proof_json=[json.loads(p.proof_json) for p in r.partitions],
            public=[[int(x) for x in p.public_signals] for p in r.partitions],
            timings={
                "queue_wait_ms": r.queue_wait_ms,
                "srs_load_ms": r.srs_load_ms,
                "synthesis_ms": r.synthesis_ms,
                "gpu_compute_ms": r.gpu_compute_ms,
                "finalize_ms": r.finalize_ms,
                "total_ms": r.total_ms,
            },
            phases=dict(r.phases_ms),
            circuit_id=r.circuit_id,
            backend=r.backend,
            batch_id=r.batch_id,
            batch_size=r.batch_size,
            batch_flush=r.batch_flush,
            dispatch_order=r.dispatch_order,
            submitted_at=r.submitted_at,
            completed_at=r.completed_at,
            attempts=r.attempts,
            deadline_ms=r.deadline_ms,
            deadline_met={pb.DEADLINE_MET: True, pb.DEADLINE_MISSED: False}.get(r.deadline),
            partition_phases=[dict(p.phases_ms) for p in r.partitions],
            devices=[p.device for p in r.partitions],
            host=r.host,
        )


def _partition(x):
    if isinstance(x, tuple) and len(x) == 2 and x[0] == "vanilla":  # ("vanilla", bytes): a binary input
        return pb.PartitionInput(vanilla_proof=bytes(x[1]))
    if isinstance(x, tuple) and len(x) == 2 and x[0] in ("witness_path", "vanilla_proof_path"):  # by reference
        return pb.PartitionInput(**{x[0]: str(x[1])})
    if isinstance(x, (bytes, bytearray, memoryview)):
        return pb.PartitionInput(witness=bytes(x))
    if isinstance(x, dict):
        return pb.PartitionInput(inputs_json=json.dumps(x))
    if isinstance(x, str):
        return pb.PartitionInput(inputs_json=x)
    raise CuzkError(f"partition input must be .wtns bytes or inputs (dict or JSON text), got {type(x).__name__}")


def _read(path: str, what: str) -> bytes:
    try:
        with open(os.path.expanduser(path), "rb") as fh:
            return fh.read()
    except OSError as e:
        raise CuzkError(f"{what}: cannot read {path}: {e.strerror or e}") from None


class _CallDetails(grpc.ClientCallDetails):  # type: ignore[misc]
    def __init__(self, d, metadata):
        self.method, self.timeout, self.credentials = d.method, d.timeout, d.credentials
        self.wait_for_ready, self.compression = getattr(d, "wait_for_ready", None), getattr(d, "compression", None)
        self.metadata = metadata


class _BearerToken(
    grpc.UnaryUnaryClientInterceptor,  # type: ignore[misc]
    grpc.UnaryStreamClientInterceptor,  # type: ignore[misc]
    grpc.StreamUnaryClientInterceptor,  # type: ignore[misc]
    grpc.StreamStreamClientInterceptor,  # type: ignore[misc]
):
    """Adds ``authorization: Bearer <token>`` to every call."""

    def __init__(self, token: str) -> None:
        self._md = ("authorization", f"Bearer {token}")

    def _d(self, d):
        return _CallDetails(d, [*(d.metadata or ()), self._md])

    def intercept_unary_unary(self, cont, d, req):
        return cont(self._d(d), req)

    def intercept_unary_stream(self, cont, d, req):
        return cont(self._d(d), req)

    def intercept_stream_unary(self, cont, d, it):
        return cont(self._d(d), it)

    def intercept_stream_stream(self, cont, d, it):
        return cont(self._d(d), it)


class Client:
    def __init__(
        self,
        address: str | None = None,
        timeout: float | None = None,
        max_message_bytes: int = 1 << 30,
        *,
        token: str | None = None,
        ca: str | None = None,
        cert: str | None = None,
        key: str | None = None,
        server_name: str | None = None,
    ):
        """``token`` (default $CUZK_TOKEN) is sent as ``authorization: Bearer``; ``ca`` (default $CUZK_CA,
        a PEM file) turns TLS on for a TCP address; ``cert``/``key`` (PEM files) are the client certificate
        for mutual TLS; ``server_name`` overrides the name checked in the server's certificate."""
        self.address = address or default_address()
        self.timeout = timeout
        token = token if token is not None else os.environ.get("CUZK_TOKEN") or None
        ca = ca if ca is not None else os.environ.get("CUZK_CA") or None
        opts: list[tuple[str, object]] = [
            ("grpc.max_send_message_length", max_message_bytes),
            ("grpc.max_receive_message_length", max_message_bytes),
        ]
        target = _target(self.address)
        if (ca or cert) and not target.startswith("unix:"):
            creds = grpc.ssl_channel_credentials(
                root_certificates=_read(ca, "ca") if ca else None,
                private_key=_read(key, "key") if key else None,
                certificate_chain=_read(cert, "cert") if cert else None,
            )
            if server_name:
                opts.append(("grpc.ssl_target_name_override", server_name))
            self.channel = grpc.secure_channel(target, creds, options=opts)
        else:
            self.channel = grpc.insecure_channel(target, options=opts)
        ch = grpc.intercept_channel(self.channel, _BearerToken(token)) if token else self.channel
        self.stub = pb_grpc.ProvingEngineStub(ch)

    def close(self) -> None:
        self.channel.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _call(self, name: str, req, timeout: float | None = None):
        try:
            return getattr(self.stub, name)(req, timeout=timeout if timeout is not None else self.timeout)
        except grpc.RpcError as e:
            raise DaemonError(e.code().name, e.details() or "") from None

    def wait_ready(self, timeout: float = 30.0) -> None:
        try:
            grpc.channel_ready_future(self.channel).result(timeout=timeout)
        except grpc.FutureTimeoutError:
            raise DaemonError("UNAVAILABLE", f"no daemon answered at {self.address} within {timeout:.0f} s") from None

    @staticmethod
    def _request(circuit_id, witness=None, inputs=None, partitions=None, priority=0, request_id=""):
        req = pb.SubmitProofRequest(circuit_id=circuit_id, priority=priority_value(priority), request_id=request_id)
        if partitions is not None:
            req.partitions.extend(_partition(x) for x in partitions)
        if witness is not None:
            req.witness = bytes(witness)
        if inputs is not None:
            req.inputs_json = inputs if isinstance(inputs, str) else json.dumps(inputs)
        return req

    STREAM_ABOVE = 64 << 20  # requests above this go through SubmitProofStream (the daemon's default limit is 128 MiB)
    CHUNK = 16 << 20

    def submit(
        self, circuit_id: str, witness: bytes | None = None, inputs=None, partitions=None, priority=0, request_id: str = ""
    ) -> SubmitResult:
        req = self._request(circuit_id, witness, inputs, partitions, priority, request_id)
        r = (
            self._call("SubmitProofStream", self._chunks(req))
            if req.ByteSize() > self.STREAM_ABOVE
            else self._call("SubmitProof", req)
        )
        return SubmitResult(r.job_id, r.queue_position, r.duplicate, r.assigned_gpu, pb.JobStatus.Name(r.status))

    def _chunks(self, req):
        """A SubmitProofRequest as SubmitProofStream chunks: the header and sizes, then the inputs' bytes."""
        if req.partitions:
            parts = [(p.WhichOneof("input"), p.witness or p.vanilla_proof or p.inputs_json.encode()) for p in req.partitions]
        elif req.witness:
            parts = [("witness", req.witness)]
        else:
            parts = [("inputs_json", req.inputs_json.encode())]
        header = pb.SubmitProofRequest(circuit_id=req.circuit_id, priority=req.priority, request_id=req.request_id)
        sizes = [
            pb.StreamedPartition(inputs_json=k == "inputs_json", vanilla_proof=k == "vanilla_proof", size=len(d))
            for k, d in parts
        ]

        def gen():
            yield pb.SubmitProofChunk(header=header, sizes=sizes)
            for _j, d in parts:
                view = memoryview(d)
                for i in range(0, len(view), self.CHUNK):
                    yield pb.SubmitProofChunk(data=bytes(view[i : i + self.CHUNK]))

        return gen()

    def await_proof(self, job_id: str, timeout_ms: int = 0, rpc_timeout: float | None = None) -> ProofResult:
        r = self._call("AwaitProof", pb.AwaitProofRequest(job_id=job_id, timeout_ms=timeout_ms), rpc_timeout)
        return ProofResult.from_pb(r)

    def prove(
        self,
        circuit_id: str,
        witness: bytes | None = None,
        inputs=None,
        partitions=None,
        priority=0,
        request_id: str = "",
        timeout_ms: int = 0,
        check: bool = True,
    ) -> ProofResult:
        sub = self._request(circuit_id, witness, inputs, partitions, priority, request_id)
        if sub.ByteSize() > self.STREAM_ABOVE:  # too large for Prove's one message: stream, then await
            r = self._call("SubmitProofStream", self._chunks(sub))
            res = self.await_proof(r.job_id, timeout_ms)
        else:
            res = ProofResult.from_pb(self._call("Prove", pb.ProveRequest(submit=sub, timeout_ms=timeout_ms)).result)
        return res.check() if check else res

    def cancel(self, job_id: str) -> dict:
        r = self._call("CancelProof", pb.CancelProofRequest(job_id=job_id))
        return {"was_running": r.was_running, "cancelled": r.cancelled, "status": pb.JobStatus.Name(r.status)}

    def status(self) -> dict:
        r = self._call("GetStatus", pb.GetStatusRequest())
        d = json.loads(r.status_json) if r.status_json else {}
        d["_pb"] = r
        return d

    def metrics(self) -> str:
        return self._call("GetMetrics", pb.GetMetricsRequest()).prometheus_text

    def preload(self, circuit_id: str) -> dict:
        r = self._call("PreloadSRS", pb.PreloadSRSRequest(circuit_id=circuit_id))
        return {"already_loaded": r.already_loaded, "load_time_ms": r.load_time_ms, "previous_tier": TIER_NAMES[r.previous_tier]}

    def evict(self, circuit_id: str, to_tier: str | int = "WARM") -> dict:
        t = to_tier if isinstance(to_tier, int) else _TIERS[to_tier.lower()]
        r = self._call("EvictSRS", pb.EvictSRSRequest(circuit_id=circuit_id, to_tier=t))
        return {"was_loaded": r.was_loaded, "freed_bytes": r.freed_bytes, "tier": TIER_NAMES[r.tier]}

    def register(
        self,
        id: str,
        r1cs: str = "",
        zkey: str = "",
        params: str = "",
        wasm: str = "",
        sym: str = "",
        default_priority=0,
        batchable: bool = False,
        partitions: int = 1,
        max_queue: int = 0,
        replace: bool = False,
        python: str = "",
        python_params: dict | None = None,
        deadline_s: float = 0.0,
        witness_timeout_s: float = 0.0,
        upload: bool = False,
    ) -> dict:
        """Register (``replace``: redefine) a circuit. The files are paths on the daemon's machine, under its
        ``registration.roots``; with ``upload`` they are read here and their bytes sent (the daemon stores
        them; at most its ``registration.max_upload_bytes`` in all), through RegisterCircuitStream when they
        are larger than one message."""
        files = {"r1cs": r1cs, "zkey": zkey, "params": params, "wasm": wasm, "sym": sym}
        spec = pb.CircuitSpec(
            id=id,
            default_priority=priority_value(default_priority),
            batchable=batchable,
            partitions=partitions,
            max_queue=max_queue,
            python=python,
            python_params=json.dumps(python_params) if python_params else "",
            deadline_s=deadline_s,
            witness_timeout_s=witness_timeout_s,
        )
        data: dict[str, bytes] = {}
        for k, path in files.items():
            if not path:
                continue
            if upload:
                data[k] = _read(path, k)
            else:
                setattr(spec, k, os.path.abspath(path))
        req = pb.RegisterCircuitRequest(circuit=spec, replace=replace)
        if sum(len(d) for d in data.values()) > self.STREAM_ABOVE:
            r = self._call("RegisterCircuitStream", self._upload_chunks(req, data))
        else:
            for k, d in data.items():
                setattr(req.circuit, f"{k}_bytes", d)  # (the request holds a copy of spec)
            r = self._call("RegisterCircuit", req)
        return _info(r.circuit) | {"already_registered": r.already_registered}

    def _upload_chunks(self, req, data: dict[str, bytes]):
        """A RegisterCircuitRequest and its uploads as RegisterCircuitStream chunks."""
        files = [pb.UploadedFile(field=k, size=len(d)) for k, d in data.items()]

        def gen():
            yield pb.RegisterCircuitChunk(header=req, files=files)
            for d in data.values():
                view = memoryview(d)
                for i in range(0, len(view), self.CHUNK):
                    yield pb.RegisterCircuitChunk(data=bytes(view[i : i + self.CHUNK]))

        return gen()

    def list_circuits(self) -> list[dict]:
        return [_info(c) for c in self._call("ListCircuits", pb.ListCircuitsRequest()).circuits]


def _info(c) -> dict:
    s = c.spec
    return {
        "id": s.id,
        "r1cs": s.r1cs,
        "zkey": s.zkey,
        "params": s.params,
        "wasm": s.wasm,
        "sym": s.sym,
        "default_priority": pb.Priority.Name(s.default_priority),
        "batchable": s.batchable,
        "partitions": s.partitions,
        "max_queue": s.max_queue,
        "python": s.python,
        "python_params": json.loads(s.python_params) if s.python_params else {},
        "deadline_s": s.deadline_s,
        "witness_timeout_s": s.witness_timeout_s,
        "version": c.version,
        "key_sha256": c.key_sha256,
        "n_constraints": c.n_constraints,
        "n_wires": c.n_wires,
        "n_public": c.n_public,
        "domain_log": c.domain_log,
        "curve": c.curve,
        "tier": TIER_NAMES[c.tier],
        "source": c.source,
    }


def start_daemon_process(
    config: str | os.PathLike[str],
    address: str,
    stderr_path: str | os.PathLike[str],
    timeout: float = 120.0,
    args: list[str] | tuple[str, ...] = (),
):
    """``cuzk daemon --config CONFIG`` as a process of its own session (so it can be signalled alone), its
    stderr appended to ``stderr_path``; returns (the process, a Client of ``address``) once the daemon
    answers a status call. A daemon that exits first, or does not answer within ``timeout`` s, raises
    with the end of its stderr. ``args``: more options of ``cuzk daemon`` (e.g. ``--set KEY=VALUE``)."""
    import subprocess
    import sys
    import time

    with open(stderr_path, "ab") as err:
        p = subprocess.Popen(
            [sys.executable, "-m", "cuzk", "daemon", "--config", str(config), *args],
            stdout=subprocess.DEVNULL,
            stderr=err,
            start_new_session=True,
        )
    c = Client(address)
    end = time.monotonic() + timeout
    while True:
        if p.poll() is not None:
            c.close()
            with open(stderr_path, "rb") as fh:
                tail = fh.read().decode(errors="replace")[-3000:]
            raise DaemonError("UNAVAILABLE", f"daemon exited {p.returncode}: {tail}")
        try:
            c.wait_ready(1.0)
            c.status()
            return p, c
        except DaemonError:
            if time.monotonic() > end:
                p.kill()
                c.close()
                raise


class DaemonProcess:
    """A daemon run as a process (:func:`start_daemon_process`) with its client ``c``: stopped with SIGTERM
    (it drains) or killed with SIGKILL (tests of crash recovery)."""

    def __init__(
        self,
        config: str | os.PathLike[str],
        address: str,
        stderr_path: str | os.PathLike[str],
        timeout: float = 120.0,
        args: list[str] | tuple[str, ...] = (),
    ):
        self.p, self.c = start_daemon_process(config, address, stderr_path, timeout, args)

    def kill9(self) -> None:
        import signal

        os.kill(self.p.pid, signal.SIGKILL)
        self.p.wait(30)
        self.c.close()

    def stop(self, timeout: float = 60.0) -> None:
        import signal

        if self.p.poll() is None:
            self.p.send_signal(signal.SIGTERM)
            self.p.wait(timeout)
        self.c.close()
