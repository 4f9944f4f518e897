"""The proving engine: a small facade over its parts, and the API the gRPC service calls.

``Engine(config).start()``; then submit / await_job / cancel / lookup, register_circuit / circuit /
list_circuits, preload / evict, snapshot; ``shutdown()``. The parts, each owning one concern:

* :mod:`.job`: a job's state machine (:class:`JobState`), its partitions, its record (:class:`JobRecord`);
* :mod:`.jobtable`: live jobs, finished jobs' records, request ids; the one place a job finishes;
* :mod:`.executor`: the backend's devices, the prover workers, the finalizer pool;
* :mod:`.pipeline`: the synthesis, prover and finalizer loops;
* :mod:`.scheduler` (priority, batches, memory budget), :mod:`.srs` (key tiers), :mod:`.journal`
  (durability), :mod:`.registry` (circuits), :mod:`.status` (snapshot, gauges).

What the facade itself does: circuit registration (files named under ``registration.roots`` or uploaded),
request validation and acceptance (journaled before it is acknowledged), recovery of journaled jobs at
start, the drain at shutdown, and the housekeeping thread that expires old results.

Key pinning (issue 19): a job is bound to the circuit version it was accepted for (``job.circuit``, a
:class:`Circuit` whose ``version`` hashes its files and whose ``srs_key`` names its key in the SRS
manager) and proved and verified with that version's key. ``register_circuit(replace=True)`` installs a
new version for new submissions; the old one stays (``_retired``) until its last accepted job finished,
then its key and witness processes are released. The journal records each job's version and keeps the
definitions of versions with unfinished jobs, so a restart recovers each job onto its own version (or
fails it, naming why, if that version's files are gone or changed). The engine reaches devices only through the backend
(``cuzk.backends.get_backend(gpus.backend)``).
"""

from __future__ import annotations

import collections
import dataclasses
import fcntl
import hashlib
import json
import logging
import os
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .. import CuzkError
from ..r1cs.binfile import FormatError
from . import srs as srsmod
from . import switches
from .cluster import ClusterMember
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
    FailedPrecondition,
    InvalidArgument,
    NotFound,
    ResourceExhausted,
    Unavailable,
)
from .executor import Executor, open_backend
from .job import Job, JobRecord, JobState, Part, PartStage
from .jobtable import JobTable
from .journal import JournalStore, open_journal
from .journal.base import died_error
from .metrics import Metrics
from .pipeline import Pipeline
from .registry import (
    PATH_KEYS,
    Circuit,
    FileHasher,
    PermissionDenied,
    check_registration,
    check_under_roots,
    same_spec,
    sha256_file,
)
from .scheduler import ProverQueue, Scheduler
from .status import attach_metrics, snapshot
from .timeline import Timeline

log = logging.getLogger("cuzk.engine")

__all__ = ["Engine", "Job", "JobRecord", "JobState", "Part"]


def lock_state_dir(state_dir: Path) -> int:
    """Take the state folder's exclusive lock (``daemon.lock``, holding our pid); the fd keeps it. A second
    daemon on the same folder gets a CuzkError naming the holder's pid."""
    path = state_dir / "daemon.lock"
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        try:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "unknown"
        finally:
            os.close(fd)
        raise CuzkError(
            f"state folder {state_dir} is in use by another cuzk daemon (pid {holder}); stop it or use another daemon.state_dir"
        ) from None
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    return fd


class Engine:
    """``Engine(config)``, ``start()``, then submit / await_job / cancel / status ...; ``shutdown()``."""

    def __init__(self, config: Config | None = None) -> None:
        self.config = config or load_config()
        cfg = self.config
        self.metrics = Metrics()
        self.timeline = Timeline(cfg.logging.timeline)
        self.started_mono = time.monotonic()
        self.started_wall = time.time()
        self._submit_lock = threading.Lock()  # journal order = queue order; no submit during a circuit swap
        self.circuits: dict[str, Circuit] = {}  # guarded by table.lock
        self._retired: list[Circuit] = []  # replaced versions that accepted jobs still use (table.lock)
        self._register_lock = threading.RLock()  # one registration at a time (and the uploads' garbage collection)
        self.upload_dir = cfg.state_dir / "circuits"  # RegisterCircuit uploads, named by their SHA-256
        self.stopped = threading.Event()
        self._threads: list[threading.Thread] = []
        self._started = False

        # the optimization switches (cuzk.engine.switches): GPU config and synthesis, the environment over
        # both; a bad value fails here, before the state folder is locked
        for o in switches.env_overrides(switches.apply(cfg)):
            log.warning(
                "event=switch_env_override key=%s variable=%s value=%r configured=%r",
                o.switch.key,
                o.switch.env,
                o.value,
                o.configured,
            )

        cfg.state_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        try:
            os.chmod(cfg.state_dir, 0o700)  # private: the journal holds witnesses (secret inputs) until jobs finish
        except OSError as e:
            log.warning("event=state_dir_not_private state_dir=%s error=%r", cfg.state_dir, e.strerror)
        self._lock_fd = lock_state_dir(cfg.state_dir)  # one daemon per state folder, before the journal opens
        if cfg.cpu.threads:  # read when the CPU backend's MSM pool is made
            os.environ["CUZK_CPU_THREADS"] = str(cfg.cpu.threads)
        mem = machine_memory()
        self.backend = open_backend(cfg.gpus.backend, cfg.gpu)
        self.executor = Executor(cfg, self.backend, mem)
        budget = cfg.memory.working_memory_budget or mem // 4
        self.scheduler = Scheduler(budget, cfg.scheduler.max_batch_size, cfg.scheduler.max_batch_wait_ms / 1e3, self.metrics, log)
        self.srs = srsmod.SrsManager(
            cfg.srs_cache_dir, self.backend, self.executor.hot_budgets(), cfg.srs.warm_budget or mem // 2, self.metrics
        )
        try:
            self.journal: JournalStore = open_journal(cfg)
        except BaseException:
            self._release_lock()
            raise
        self.hasher = FileHasher(self.journal.file_hash, self.journal.save_file_hash)
        self._gc_wake = threading.Event()  # a job finished: delete its payload now
        self._backlog: collections.deque[Job] = collections.deque()  # recovered, payload not parsed yet
        self._loaded: list[Job] = []  # recovered and parsed, not finished
        self._refill_lock = threading.Lock()
        self._recover_budget = cfg.scheduler.max_queue_bytes or budget
        depth = cfg.pipeline.prover_queue_depth or len(self.executor.workers)
        self.prover_queue = ProverQueue(depth, affinity=len(self.executor.devices) > 1)
        self.table = JobTable(self.journal, self.scheduler, self.metrics, self.timeline, self.backend.name)
        self.table.on_finished = self._job_finished
        self.pipeline = Pipeline(
            cfg,
            self.table,
            self.scheduler,
            self.prover_queue,
            self.executor,
            self.srs,
            self.journal,
            self.metrics,
            self.timeline,
            self.stopped,
        )
        # cluster mode (issue 23): a PostgreSQL journal is a queue that several daemons claim work from
        self.cluster: ClusterMember | None = ClusterMember(self) if cfg.journal.url else None
        attach_metrics(self.metrics, self)

    def _job_finished(self) -> None:
        self._gc_wake.set()  # delete its payload now
        if self.cluster is not None:
            self.cluster.wake.set()  # room to claim more

    @property
    def backend_name(self) -> str:
        return self.backend.name

    @property
    def draining(self) -> bool:
        return self.table.draining

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
        if self.cluster is None:
            self._recover()  # a cluster's unfinished jobs are the cluster's: hosts claim them (leases)
        self._reap_retired()  # restored versions whose jobs all failed at recovery
        self._prune()
        self.journal.purge_payloads()
        for i in range(max(1, cfg.synthesis.partition_workers)):
            self._spawn(self.pipeline.synthesis_loop, f"cuzk-synth-{i}")
        for w in self.executor.workers:
            self._spawn(self.pipeline.prover_loop, f"cuzk-prove-{w.id}", w)
        self._spawn(self._gc_loop, "cuzk-gc")
        if self.cluster is not None:
            self.cluster.start()
        for cid in cfg.srs.preload:
            try:
                self.preload(cid)
            except CuzkError as e:
                log.error("event=preload_failed circuit=%s error=%r", cid, str(e))
        log.info(
            "event=engine_started backend=%s devices=%s workers=%d synthesis_workers=%d circuits=%d state_dir=%s",
            self.backend.name,
            ",".join(d.name for d in self.executor.devices),
            len(self.executor.workers),
            cfg.synthesis.partition_workers,
            len(self.circuits),
            cfg.state_dir,
        )
        return self

    def _spawn(self, fn: Callable[..., None], name: str, *args: Any) -> None:
        t = threading.Thread(target=fn, args=args, name=name, daemon=True)
        t.start()
        self._threads.append(t)

    def in_flight(self) -> int:
        """Partitions between the scheduler's hand-out and their journaled result."""
        return self.pipeline.in_flight()

    def shutdown(self, drain_timeout: float = 30.0) -> bool:
        """Stop accepting; let in-flight partitions finish (at most ``drain_timeout`` s); queued jobs stay
        journaled for the next start. True if everything in flight finished."""
        if self.stopped.is_set():
            return True
        self.table.draining = True
        if self.cluster is not None:
            self.cluster.stop_claiming()
        self.scheduler.close()  # no new work leaves the queue
        if self.cluster is not None:
            self.cluster.give_back(only_unstarted=True)  # another host proves them now, not after our restart
        deadline = time.monotonic() + drain_timeout
        while self.in_flight() > 0 and time.monotonic() < deadline:
            time.sleep(0.02)
        clean = self.in_flight() == 0
        if self.cluster is not None:
            self.cluster.give_back(only_unstarted=False)  # in flight past the drain timeout: rerun elsewhere
            self.cluster.stop()
        self.prover_queue.close()
        self.stopped.set()
        self.executor.shutdown(clean)
        left = self.table.live()
        log.info("event=engine_stopped drained=%s in_flight_left=%d jobs_left_journaled=%d", clean, self.in_flight(), len(left))
        for j in left:
            j.done.set()  # wake awaiters; they answer UNAVAILABLE
        with self.table.lock:
            every = [*self.circuits.values(), *self._retired]
        for c in every:
            c.close()  # Python circuits' witness processes
        self._gc_wake.set()
        if clean:
            self.journal.close()
            self.timeline.close()
        self._release_lock()  # the process exits next (an unclean stop's threads are daemon threads)
        return clean

    def _release_lock(self) -> None:
        fd, self._lock_fd = self._lock_fd, -1
        if fd >= 0:
            os.close(fd)  # releases the flock (an unclean stop keeps it until the process exits)

    # -- circuits -----------------------------------------------------------------------------------
    def _new_circuit(self, cc: CircuitConfig, source: str) -> Circuit:
        syn = self.config.synthesis
        return Circuit(cc, source, syn.partition_workers, syn.python_processes, self.hasher)

    def _register(self, cc: CircuitConfig, source: str) -> Circuit:
        """At start-up: circuits of the config file and those registered by RPC before (from the journal)."""
        c = self._new_circuit(cc, source)
        self._install(c)
        return c

    def _install(self, c: Circuit) -> None:
        """``c`` becomes the circuit its id names (for new submissions); its version's definition is
        journaled (a job accepted for it can be recovered onto it)."""
        with self.table.lock:
            self.srs.register(c)
            self.circuits[c.id] = c
        self.journal.save_version(c.id, c.version, c.spec.as_dict(), c.key_hash, c.file_hashes, c.source)
        log.info(
            "event=circuit_registered circuit=%s source=%s version=%s constraints=%d wires=%d domain=2^%d partitions=%d key=%s",
            c.id,
            c.source,
            c.version,
            c.n_constraints,
            c.n_wires,
            c.domain_log,
            c.partitions,
            c.spec.key_path(),
        )

    def _check_replace(self, old: Circuit | None, cc: CircuitConfig, replace: bool) -> bool:
        """True if ``old`` already is ``cc``; raises if it may not be replaced. Caller holds the lock."""
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
        return False

    def _retire(self, old: Circuit) -> None:
        """``old`` was replaced: released now if no accepted job uses it, else after its last one."""
        with self.table.lock:
            busy = sum(1 for j in self.table.active.values() if j.circuit is old and not j.final)
            if busy:
                self._retired.append(old)
        if busy:
            log.info("event=circuit_version_retired circuit=%s version=%s jobs=%d", old.id, old.version, busy)
        else:
            self._drop_version(old)

    def _reap_retired(self) -> None:
        """Release the replaced versions whose last job finished."""
        with self.table.lock:
            if not self._retired:
                return
            live = {id(j.circuit) for j in self.table.active.values() if not j.final}
            done = [c for c in self._retired if id(c) not in live]
            self._retired = [c for c in self._retired if id(c) in live]
        for c in done:
            self._drop_version(c)

    def _drop_version(self, c: Circuit) -> None:
        self.srs.unregister(c)  # its key's HOT copies and cache file, unless the current version shares the key
        c.close()
        log.info("event=circuit_version_released circuit=%s version=%s", c.id, c.version)
        self._prune()

    def _prune(self) -> None:
        """Forget circuit versions no one needs (journal rows, uploaded files)."""
        with self.table.lock:
            keep = {(c.id, c.version) for c in [*self.circuits.values(), *self._retired]}
        try:
            self.journal.prune_versions(keep)
            self._gc_uploads()
        except Exception as e:  # housekeeping: never the caller's failure
            log.error("event=prune_error error=%r", str(e))

    # -- uploads --------------------------------------------------------------------------------------
    def _upload_paths(self, spec: dict[str, Any], uploads: dict[str, bytes]) -> dict[str, str]:
        """Where each uploaded file is stored (named by its SHA-256), after the request's checks: a field
        given as a path and as bytes, the total size against ``registration.max_upload_bytes``."""
        if not uploads:
            return {}
        for k in uploads:
            if k not in PATH_KEYS:
                raise InvalidArgument(f"circuit.{k}_bytes: not a circuit file (one of {', '.join(PATH_KEYS)})")
            if spec.get(k):
                raise InvalidArgument(f"circuit.{k}: give a path or {k}_bytes (an upload), not both")
        limit = int(self.config.registration.max_upload_bytes)
        if not limit:
            raise PermissionDenied(
                f"circuit.{next(iter(uploads))}_bytes: uploads are off (registration.max_upload_bytes = 0); name files "
                "under registration.roots"
            )
        total = sum(len(d) for d in uploads.values())
        if total > limit:
            big = max(uploads, key=lambda k: len(uploads[k]))
            also = f" ({total} bytes uploaded in all)" if len(uploads) > 1 else ""
            raise ResourceExhausted(
                f"circuit.{big}_bytes: {len(uploads[big])} bytes{also}, above registration.max_upload_bytes ({limit})"
            )
        return {k: str(self.upload_dir / f"{hashlib.sha256(d).hexdigest()}.{k}") for k, d in uploads.items()}

    def _store_uploads(self, uploads: dict[str, bytes], paths: dict[str, str]) -> None:
        """Write the uploads (0600, in a 0700 folder under the state folder); a file already there with the
        same contents is kept."""
        if not uploads:
            return
        d = self.upload_dir
        d.mkdir(mode=0o700, exist_ok=True)
        os.chmod(d, 0o700)
        for k, data in uploads.items():
            path = Path(paths[k])
            sha = path.name.partition(".")[0]
            if path.is_file() and not path.is_symlink():
                try:
                    if sha256_file(str(path)) == sha:
                        os.chmod(path, 0o600)
                        self.hasher.remember(str(path), sha)
                        continue
                except OSError:
                    pass
            tmp = d / f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp"
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
            try:
                with os.fdopen(fd, "wb") as fh:
                    fh.write(data)
                    fh.flush()
                    os.fsync(fh.fileno())
                os.replace(tmp, path)
            except BaseException:
                try:
                    os.unlink(tmp)
                except OSError:
                    pass
                raise
            self.hasher.remember(str(path), sha)
        fd = os.open(d, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def _gc_uploads(self) -> None:
        """Delete uploaded files no circuit (current, replaced but in use, or journaled) names."""
        if not self.upload_dir.is_dir() or not self._register_lock.acquire(blocking=False):
            return  # a registration in progress collects when it is done
        try:
            with self.table.lock:
                specs = [c.spec.as_dict() for c in [*self.circuits.values(), *self._retired]]
            specs += self.journal.circuits() + self.journal.version_specs()
            named = {os.path.realpath(sp[k]) for sp in specs for k in PATH_KEYS if sp.get(k)}
            for f in self.upload_dir.iterdir():
                if os.path.realpath(f) in named:
                    continue
                try:
                    f.unlink()
                    log.info("event=upload_removed file=%s", f.name)
                except OSError:
                    pass
        finally:
            self._register_lock.release()

    # -- registration -----------------------------------------------------------------------------
    def register_circuit(
        self, spec: dict[str, Any], replace: bool = False, uploads: dict[str, bytes] | None = None
    ) -> tuple[Circuit, bool]:
        """Register (or, with ``replace``, redefine) a circuit at run time; persisted in the journal.
        ``uploads``: files' bytes by field (r1cs, zkey, params, wasm, sym) instead of paths in ``spec``;
        stored under the state folder and checked like named files. Returns (the circuit, whether it was
        registered like this already). A replacement applies to jobs submitted after it: every job
        accepted before is still proved and verified with the version it was accepted for."""
        if self.draining:
            raise Unavailable("the daemon is shutting down")
        uploads = {k: bytes(v) for k, v in (uploads or {}).items() if v}
        with self._register_lock:
            paths = self._upload_paths(spec, uploads)
            try:
                cc = validate_circuit(dict(spec) | paths, "circuit")
            except CuzkError as e:
                raise InvalidArgument(str(e)) from None
            reg = self.config.registration  # RPC registrations are untrusted: files under the roots, allowed modules
            check_registration(spec, cc, list(reg.roots), list(reg.python_modules))  # uploads are not server-side paths
            with self.table.lock:
                old = self.circuits.get(cc.id)
                if old is not None and self._check_replace(old, cc, replace):
                    return old, True
            try:
                self._store_uploads(uploads, paths)
                c = self._new_circuit(cc, "rpc")
            except InvalidArgument as e:
                msg = str(e)
                for k, path in paths.items():  # name the upload, not where the daemon put it
                    msg = msg.replace(f"{path}: ", "").replace(path, "the upload").replace(f".{k}: ", f".{k}_bytes: ")
                self._gc_uploads()
                raise InvalidArgument(msg) from None
            except BaseException:
                self._gc_uploads()
                raise
            # swap with submissions held off: a job accepted from now on is for the new version, every job
            # accepted before keeps the old one (the journal has its version too)
            with self._submit_lock:
                with self.table.lock:
                    old = self.circuits.get(cc.id)
                    same = old is not None and self._check_replace(old, cc, replace)
                if same:
                    c.close()
                    assert old is not None
                    return old, True
                self._install(c)
                self.journal.save_circuit(c.id, cc.as_dict())
            if old is not None:
                self._retire(old)
            self._prune()
        return c, False

    def circuit(self, cid: str) -> Circuit:
        with self.table.lock:
            c = self.circuits.get(cid)
            if c is None:
                known = ", ".join(sorted(self.circuits)) or "none"
                raise NotFound(f"unknown circuit {cid!r} (registered: {known})")
            return c

    def circuit_info(self, c: Circuit, show_paths: bool = True) -> dict[str, Any]:
        """The circuit's description (``Circuit.info``) with its SRS tier; ``show_paths`` False (a caller
        that is not an admin) names its files by basename only."""
        return c.info(show_paths) | {"tier": self.srs.tier(c.id)}

    def list_circuits(self, show_paths: bool = True) -> list[dict[str, Any]]:
        with self.table.lock:
            cs = list(self.circuits.values())
        return [self.circuit_info(c, show_paths) for c in cs]

    # -- submission ---------------------------------------------------------------------------------
    @staticmethod
    def request_hash(circuit_id: str, payloads: list[tuple[str, bytes]]) -> str:
        h = hashlib.sha256(circuit_id.encode() + b"\0")
        for kind, data in payloads:
            h.update(kind.encode() + b"\0" + len(data).to_bytes(8, "little") + data)
        return h.hexdigest()

    def _reference(self, kind: str, data: bytes, field: str) -> tuple[tuple[str, bytes], tuple[str, bytes]]:
        """(the journaled form, the input itself) of one partition's input. An input given by reference
        (``wtns_path`` / ``vanilla_path``: a file under ``inputs.roots``, which every host of a cluster
        mounts) is read here once and journaled as its path with the bytes' size and SHA-256, so the host
        that proves it reads the same bytes or fails the job saying the file changed. Other inputs are
        both forms as they are."""
        if not kind.endswith("_path"):
            return (kind, data), (kind, data)
        path = data.decode("utf-8", errors="replace")
        real = self._input_path(path, field)
        try:
            size = os.path.getsize(real)
        except OSError as e:
            raise InvalidArgument(f"{field}: {path}: cannot read: {e.strerror}") from None
        limit = int(self.config.inputs.max_file_bytes)
        if size > limit:
            raise ResourceExhausted(f"{field}: {path}: {size} bytes, above inputs.max_file_bytes ({limit})")
        blob = self._read_input(real, path, size, field)
        if len(blob) > limit:  # grew since it was measured
            raise ResourceExhausted(f"{field}: {path}: {len(blob)} bytes, above inputs.max_file_bytes ({limit})")
        ref = {"path": real, "size": len(blob), "sha256": hashlib.sha256(blob).hexdigest()}
        return (kind, json.dumps(ref).encode()), (kind.removesuffix("_path"), blob)

    def _input_path(self, path: str, field: str) -> str:
        return check_under_roots(path, list(self.config.inputs.roots), field, "inputs.roots")

    @staticmethod
    def _read_input(real: str, shown: str, size: int, field: str) -> bytes:
        """Up to ``size`` + 1 bytes of an input file (one more than expected shows that it grew)."""
        try:
            with open(real, "rb") as fh:
                return fh.read(size + 1)
        except OSError as e:
            raise InvalidArgument(f"{field}: {shown}: cannot read: {e.strerror}") from None

    def _dereference(self, kind: str, data: bytes, field: str) -> tuple[str, bytes]:
        """The bytes of a journaled reference (:meth:`_reference`), checked again (roots, size, SHA-256)."""
        if not kind.endswith("_path"):
            return kind, data
        ref = json.loads(data)
        blob = self._read_input(self._input_path(ref["path"], field), ref["path"], int(ref["size"]), field)
        if len(blob) != ref["size"] or hashlib.sha256(blob).hexdigest() != ref["sha256"]:
            raise InvalidArgument(f"{field}: {ref['path']}: the file changed since the job was submitted")
        return kind.removesuffix("_path"), blob

    def _parse_part(self, c: Circuit, i: int, kind: str, data: bytes, field: str) -> Part:
        kind, data = self._dereference(kind, data, field)
        if kind == "wtns":
            from ..r1cs.wtns import parse_wtns

            try:
                w = parse_wtns(data, field, expected_wires=c.n_wires, curve=c.curve, expected_what=f"circuit {c.id!r}")
            except FormatError as e:
                raise InvalidArgument(str(e).replace("the circuit has", f"circuit {c.id!r} has")) from None
            return Part(i, kind, witness=w)
        if kind == "vanilla":
            if c.python is None:
                raise InvalidArgument(f"{field}: circuit {c.id!r} is not a Python circuit; it takes no binary inputs")
            return Part(i, kind, inputs=c.parse_python_inputs(c.parse_python_binary(data, field, i), field))
        if not c.takes_inputs():
            raise InvalidArgument(f"{field}: circuit {c.id!r} has no wasm to compute a witness; send a .wtns witness")
        obj = self._json(data, field)
        if c.python is not None:
            return Part(i, kind, inputs=c.parse_python_inputs(obj, field))
        if not isinstance(obj, dict):
            raise InvalidArgument(f"{field}: expected a JSON object of input signals, got {type(obj).__name__}")
        return Part(i, kind, inputs=obj)

    @staticmethod
    def _json(data: bytes, field: str) -> Any:
        """Untrusted JSON with limits (issue 19): at most 64 levels of nesting (measured before parsing),
        numbers and numeric strings of at most 100 digits; INVALID_ARGUMENT otherwise."""
        from ..json_limits import MAX_DEPTH, max_nesting

        max_digits = 100
        depth = max_nesting(data)
        if depth > MAX_DEPTH:
            raise InvalidArgument(f"{field}: JSON nested {depth} levels deep, at most {MAX_DEPTH}")

        def number(s: str) -> Any:
            if len(s) > max_digits + 2:
                raise InvalidArgument(f"{field}: a number of {len(s)} characters, at most {max_digits} digits")
            return int(s) if s.lstrip("-").isdigit() else float(s)

        try:
            obj = json.loads(data.decode("utf-8"), parse_int=number, parse_float=number)
        except UnicodeDecodeError:
            raise InvalidArgument(f"{field}: not UTF-8 text") from None
        except json.JSONDecodeError as e:
            raise InvalidArgument(f"{field}: malformed JSON at line {e.lineno} column {e.colno}: {e.msg}") from None
        except (ValueError, RecursionError) as e:
            raise InvalidArgument(f"{field}: unreadable JSON: {e}") from None
        stack = [obj]
        while stack:  # numeric strings ("123...", "0x...") of more than max_digits digits
            v = stack.pop()
            if isinstance(v, dict):
                stack.extend(v.values())
            elif isinstance(v, list):
                stack.extend(v)
            elif isinstance(v, str) and len(v) > max_digits + 3:
                t = v.strip().lstrip("+-")
                hexa = t[:2].lower() == "0x"
                t = t[2:] if hexa else t
                if t and (all(ch in "0123456789abcdefABCDEF" for ch in t) if hexa else t.isdigit()):
                    raise InvalidArgument(f"{field}: a number of {len(v)} characters, at most {max_digits} digits")
        return obj

    def _split_request(self, c: Circuit, payloads: list[tuple[str, bytes]], field: str) -> list[tuple[str, bytes]]:
        """A multi-partition Python circuit takes one request with one inputs object for all its
        partitions: split it (the circuit's partition_inputs) into one payload per partition. One
        binary vanilla proof given for all partitions (Filecoin's commit-phase-1 output) becomes the
        same bytes for each: partition i reads its own part of them."""
        if c.python is None or c.partitions == 1 or len(payloads) != 1:
            return payloads
        if payloads[0][0] == "vanilla":
            return payloads * c.partitions
        if payloads[0][0] != "inputs":
            return payloads
        parts = c.split_python_inputs(self._json(payloads[0][1], field), field)
        return [("inputs", json.dumps(p, separators=(",", ":")).encode()) for p in parts]

    def submit(
        self,
        circuit_id: str,
        payloads: list[tuple[str, bytes]],
        priority: int = 0,
        request_id: str = "",
        fields: list[str] | None = None,
    ) -> tuple[Job | JobRecord, bool, int]:
        """Accept a job. ``payloads``: one (kind "wtns"|"inputs", bytes) per partition. Returns
        (the job, or the finished job's record for a duplicate request_id; duplicate; queue position)."""
        if self.draining:
            self.metrics.rejected.labels(reason="draining").inc()
            raise Unavailable("the daemon is shutting down; submit again after it restarts")
        for _attempt in range(3):
            c = self.circuit(circuit_id)
            if not self.executor.may_prove(c.id):
                raise FailedPrecondition(
                    f"circuit {c.id!r}: no device may prove it (gpus.affinity names it for none of "
                    f"{', '.join(d.name for d in self.executor.devices)})"
                )
            if not payloads:
                raise InvalidArgument(
                    f"partitions: no witness or inputs_json given (circuit {c.id!r} takes "
                    f"{c.partitions} partition{'s' * (c.partitions != 1)})"
                )
            n_given = len(payloads)
            payloads = self._split_request(c, payloads, (fields or ["partitions[0].inputs_json"])[0])
            if fields is not None and len(payloads) != n_given:
                fields = [f"{fields[0]} (partition {i})" for i in range(len(payloads))]
            if len(payloads) != c.partitions:
                raise InvalidArgument(
                    f"partitions: {len(payloads)} given, circuit {c.id!r} has {c.partitions} partition{'s' * (c.partitions != 1)}"
                )
            if priority not in (0, 1, 2, 3, 4):
                raise InvalidArgument(f"priority: {priority} is not a priority (LOW 1 .. CRITICAL 4)")
            refs = [
                self._reference(k, d, (fields or [])[i] if fields and i < len(fields) else f"partitions[{i}]")
                for i, (k, d) in enumerate(payloads)
            ]
            journaled = [r[0] for r in refs]
            inputs = [r[1] for r in refs]  # a file named by reference: its bytes, read once above
            rhash = self.request_hash(c.id, journaled)
            if request_id:
                dup = self.table.duplicate(request_id, rhash)
                if dup is not None:
                    return dup, True, 0
            names = fields or [
                f"partitions[{i}].{'witness' if k == 'wtns' else 'inputs_json'}" for i, (k, _) in enumerate(inputs)
            ]
            parts = [self._parse_part(c, i, k, d, names[i]) for i, (k, d) in enumerate(inputs)]
            with self._submit_lock:
                with self.table.lock:
                    replaced = self.circuits.get(c.id) is not c
                if replaced:  # redefined (RegisterCircuit replace) while this request was parsed: again
                    continue
                job, pos = self._accept(c, parts, journaled, priority or c.spec.default_priority, request_id, rhash)
                if pos is None:
                    return job, True, 0
            assert isinstance(job, Job) or self.cluster is not None  # cluster mode: the QUEUED record
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

    def _accept(
        self, c: Circuit, parts: list[Part], payloads: list[tuple[str, bytes]], prio: int, request_id: str, rhash: str
    ) -> tuple[Job | JobRecord, int | None]:
        """Journal and queue the job (the caller holds ``_submit_lock``: the journal's order is the queue's).
        Returns (job, queue position), or (the earlier job or its record, None) for a duplicate request_id."""
        if request_id:
            dup = self.table.duplicate(request_id, rhash)
            if dup is not None:
                return dup, None
        if self.cluster is not None:
            return self._accept_shared(c, payloads, prio, request_id, rhash)
        with self.table.lock:  # a circuit's queue counts the jobs of all its versions
            mine = sum(1 for j in self.table.active.values() if j.circuit.id == c.id and not j.final)
            total = sum(1 for j in self.table.active.values() if not j.final)
        limit = c.spec.max_queue or self.config.scheduler.max_queue_per_circuit
        if mine >= limit:
            self.metrics.rejected.labels(reason="queue_full").inc()
            raise ResourceExhausted(f"circuit {c.id!r}: queue full ({mine} jobs active, max_queue {limit}); retry later")
        if total >= self.config.scheduler.max_pending:
            self.metrics.rejected.labels(reason="pending_full").inc()
            raise ResourceExhausted(
                f"daemon queue full ({total} jobs active, scheduler.max_pending {self.config.scheduler.max_pending}); retry later"
            )
        cap = self.config.scheduler.max_queue_bytes
        nbytes = sum(len(d) for _k, d in payloads)
        if cap:
            with self.table.lock:
                queued = sum(j.input_bytes for j in self.table.active.values() if not j.final)
            if queued + nbytes > cap:
                self.metrics.rejected.labels(reason="bytes_full").inc()
                raise ResourceExhausted(
                    f"daemon queue full: {queued} input bytes active + {nbytes} submitted exceed "
                    f"scheduler.max_queue_bytes {cap}; retry later"
                )
        job_id, now = self._journal_new(c, payloads, prio, request_id, rhash)
        job = Job(job_id, request_id, c, prio, parts, now, rhash)
        job.input_bytes = nbytes
        pos = self.table.add(job)
        self.metrics.submitted.labels(circuit=c.id).inc()
        self.timeline.event("SUBMIT", job.job_id, detail=c.id)
        self.scheduler.push_job(job, c.spec.batchable)
        return job, pos

    def _journal_new(
        self, c: Circuit, payloads: list[tuple[str, bytes]], prio: int, request_id: str, rhash: str
    ) -> tuple[str, float]:
        """Journal a new job (a new id, accepted now); a journal that fails raises what JobTable.journal_error says."""
        job_id = uuid.uuid4().hex
        now = time.time()
        try:
            self.journal.insert_job(job_id, request_id or None, rhash, c.id, prio, payloads, now, c.version)
        except Exception as e:
            self.table.journal_error(e, "cannot journal the job")
        return job_id, now

    def _accept_shared(
        self, c: Circuit, payloads: list[tuple[str, bytes]], prio: int, request_id: str, rhash: str
    ) -> tuple[JobRecord, int]:
        """Cluster mode: journal the job in the shared queue (any host may claim it, this one included);
        the queue limits count the cluster's unfinished jobs. Returns (its QUEUED record, position)."""
        sched = self.config.scheduler
        assert self.cluster is not None
        try:
            limit = c.spec.max_queue or sched.max_queue_per_circuit
            mine = self.journal.count_unfinished(c.id, cap=limit)
            total = self.journal.count_unfinished(cap=sched.max_pending)
        except Exception as e:
            self.table.journal_error(e, "cannot read the journal")
        if mine >= limit:
            self.metrics.rejected.labels(reason="queue_full").inc()
            raise ResourceExhausted(
                f"circuit {c.id!r}: queue full ({mine} jobs active in the cluster, max_queue {limit}); retry later"
            )
        if total >= sched.max_pending:
            self.metrics.rejected.labels(reason="pending_full").inc()
            raise ResourceExhausted(
                f"cluster queue full ({total} jobs active, scheduler.max_pending {sched.max_pending}); retry later"
            )
        inline = self.journal.SPILL_BYTES
        big = next((i for i, (_k, d) in enumerate(payloads) if len(d) > inline), None)
        if big is not None and self.cluster.shared_dir is None:
            self.metrics.rejected.labels(reason="input_too_large").inc()
            raise ResourceExhausted(
                f"partitions[{big}]: {len(payloads[big][1])} bytes, above cluster.inline_bytes ({inline}) and no "
                "cluster.shared_dir is set for larger inputs"
            )
        job_id, now = self._journal_new(c, payloads, prio, request_id, rhash)
        try:  # the position is advice: counted up to max_pending, and left out if the journal just failed
            pos = max(0, self.journal.count_queued_ahead(prio, sched.max_pending) - 1)
        except Exception:
            pos = 0
        self.metrics.submitted.labels(circuit=c.id).inc()
        self.timeline.event("SUBMIT", job_id, detail=c.id)
        self.cluster.wake.set()
        rec = JobRecord(
            job_id=job_id,
            state=JobState.QUEUED,
            circuit_id=c.id,
            backend=self.backend.name,
            submitted_at=now,
            priority=prio,
            request_id=request_id,
            deadline_ms=c.spec.deadline * 1e3,
        )
        return rec, pos

    def assigned_device(self, circuit_id: str) -> str:
        """The device a new job of the circuit is likely to run on: one holding its key HOT, or the only
        device; "" when that is not known yet."""
        devs = self.srs.resident_devices(circuit_id)
        if devs:
            return devs[0].name
        return self.executor.devices[0].name if len(self.executor.devices) == 1 else ""

    # -- recovery -----------------------------------------------------------------------------------
    def _recover(self) -> None:
        """Queue again what the journal holds unfinished (from a crash or a drain that left it). Every job
        enters the table at once (awaitable, cancellable, counted) but its payload is read and parsed only
        when :meth:`_refill` moves it to the scheduler: parsed recovered inputs stay within a budget."""
        rows = self.journal.unfinished()
        max_attempts = self.config.journal.max_attempts
        versions: dict[tuple[str, str], Circuit | str] = {}
        for row in rows:
            jid = row["job_id"]
            n = row["attempts"]
            if max_attempts and n >= max_attempts:  # begun n times, never finished: the daemon died in it
                err = died_error(n)
                self.journal.quarantine(jid, err)
                log.error("event=job_quarantined job=%s circuit=%s attempts=%d", jid, row["circuit_id"], n)
                continue
            c = self._recovery_circuit(row, versions)
            if isinstance(c, str):
                self.journal.finish(jid, JobState.FAILED.value, time.time(), error=c)
                log.error("event=job_not_recovered job=%s circuit=%s error=%r", jid, row["circuit_id"], c)
                continue
            if row["n_partitions"] != c.partitions:
                err = f"cannot re-run after restart: {row['n_partitions']} partitions journaled, circuit has {c.partitions}"
                self.journal.finish(jid, JobState.FAILED.value, time.time(), error=err)
                continue
            parts = [Part(i, "wtns") for i in range(row["n_partitions"])]  # filled by _refill
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
            self.table.add(job)
            self.journal.event(jid, "recovered", f"state was {row['state']}")
            self.metrics.recovered.inc()
            self._backlog.append(job)
        if rows:
            log.info("event=jobs_recovered count=%d", len(rows))
        self._refill()

    def _recovery_circuit(self, row: dict[str, Any], versions: dict[tuple[str, str], Circuit | str]) -> Circuit | str:
        """The circuit version a recovered job was accepted for (the current one, or an older one restored
        from the journal); a one-line reason for failing the job if it cannot be proved with it."""
        cid, ver = row["circuit_id"], row.get("version")
        c = self.circuits.get(cid)
        if c is None:
            return f"circuit {cid!r} is no longer registered"
        if not ver or ver == c.version:  # a journal from before versions: the circuit as it is now
            return c
        if (cid, ver) not in versions:
            versions[(cid, ver)] = self._restore_version(cid, ver)
        return versions[(cid, ver)]

    def _restore_version(self, cid: str, ver: str) -> Circuit | str:
        where = f"cannot re-run after restart: circuit {cid!r} version {ver} (the one the job was accepted for)"
        row = self.journal.version(cid, ver)
        if row is None:
            return f"{where} is no longer known"
        try:
            c = self._new_circuit(CircuitConfig(**row["spec"]), row["source"])
        except (CuzkError, TypeError) as e:
            return f"{where} cannot be loaded: {e}; it is not proved with another key"
        if c.version != ver:
            c.close()
            changed = [f"{k} {row['spec'].get(k)}" for k, h in row["files"].items() if c.file_hashes.get(k) != h]
            key = (
                f"key sha256 now {c.key_hash[:16]}, accepted with {row['key_sha256'][:16]}"
                if c.key_hash != row["key_sha256"]
                else "the key is unchanged"
            )
            what = ", ".join(changed) or "its definition"
            return f"{where}: its files changed since the job was accepted ({what}; {key}); it is not proved with another key"
        with self.table.lock:
            self.srs.register(c, current=False)
            self._retired.append(c)
        log.info("event=circuit_version_restored circuit=%s version=%s current=%s", cid, ver, self.circuits[cid].version)
        return c

    def _refill(self) -> None:
        """Parse recovered jobs' payloads and queue them, in journal order, while the parsed payloads of
        recovered jobs not yet finished stay under the budget (``scheduler.max_queue_bytes``, else the
        working-memory budget; always at least one job). Called at start and whenever a job finished."""
        with self._refill_lock:
            self._loaded = [j for j in self._loaded if not j.final]
            held = sum(j.input_bytes for j in self._loaded)
            while self._backlog and (not self._loaded or held < self._recover_budget):
                job = self._backlog.popleft()
                if job.final:  # cancelled while waiting
                    continue
                c = job.circuit
                try:
                    payloads = self.journal.payloads(job.job_id)  # a payload file gone: this job fails, the rest run
                    parts = [self._parse_part(c, i, k, d, f"partitions[{i}]") for i, (k, d) in enumerate(payloads)]
                    if len(parts) != len(job.parts):
                        raise InvalidArgument(f"{len(parts)} partition payloads journaled, circuit has {len(job.parts)}")
                except CuzkError as e:
                    self.table.finish(job, JobState.FAILED, error=f"cannot re-run after restart: {e}")
                    continue
                with self.table.lock:
                    if job.final:
                        continue
                    for p, q in zip(job.parts, parts, strict=True):
                        p.kind, p.witness, p.inputs = q.kind, q.witness, q.inputs
                    job.input_bytes = sum(len(d) for _k, d in payloads)
                del payloads, parts
                held += job.input_bytes
                self._loaded.append(job)
                self.scheduler.push_job(job, c.spec.batchable)

    # -- results, await, cancel -----------------------------------------------------------------------
    def lookup(self, job_id: str) -> Job | JobRecord:
        """The live job, or the finished job's record. In a cluster, a job held by another host (or still
        queued) is the journal's record of it as of now (state QUEUED or RUNNING, ``host`` the holder)."""
        if self.cluster is None:
            return self.table.lookup(job_id)
        with self.table.lock:
            j = self.table.active.get(job_id) or self.table.recent.get(job_id)
        if j is not None:
            return j
        return self._journal_record(job_id)

    def _journal_record(self, job_id: str) -> JobRecord:
        try:
            row = self.journal.get(job_id)
        except Exception as e:
            raise Unavailable(f"the journal does not answer: {e}") from None
        if row is None:
            raise NotFound(f"unknown job {job_id!r} (never submitted, or finished longer ago than the retention period)")
        return JobRecord.of_row(row, self.backend.name)

    def await_job(self, job_id: str, timeout_s: float | None = None, alive: Callable[[], bool] = lambda: True) -> JobRecord:
        """The job's record once it finished; a record with ``timed_out`` if ``timeout_s`` passed first."""
        j = self.lookup(job_id)
        if isinstance(j, JobRecord) and (j.state.final or self.cluster is None):
            return j
        deadline = None if not timeout_s else time.monotonic() + timeout_s
        while isinstance(j, Job):
            wait = 0.25 if deadline is None else min(0.25, deadline - time.monotonic())
            if wait > 0:
                j.done.wait(wait)
            if j.result is not None:
                return j.result
            if j.lost:  # cluster mode: another host has it now; the journal says when it is done
                break
            if self.stopped.is_set():
                raise Unavailable(f"the daemon is shutting down; job {job_id} stays journaled and runs after a restart")
            if deadline is not None and time.monotonic() >= deadline:
                return JobRecord.timeout(j)
            if not alive():
                raise Unavailable("caller went away")
        return self._await_journal(job_id, deadline, alive)

    def _await_journal(self, job_id: str, deadline: float | None, alive: Callable[[], bool]) -> JobRecord:
        """Cluster mode: wait for a job held by another host by reading its row every ``cluster.poll``
        (quicker at first). A journal that does not answer is retried until the deadline (a database
        restart is not the caller's failure), or for a minute without one."""
        assert self.cluster is not None
        wait = min(0.02, self.cluster.poll_s)
        down_since: float | None = None
        while True:
            try:
                rec = self._journal_record(job_id)
                down_since = None
            except Unavailable:
                now = time.monotonic()
                down_since = down_since or now
                if now - down_since > 60 and deadline is None:
                    raise
                rec = None
            if rec is not None and rec.state.final:
                return rec
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                if rec is None:
                    raise Unavailable(f"the journal did not answer before the await's deadline (job {job_id})")
                return dataclasses.replace(rec, timed_out=True)
            if self.stopped.is_set():
                raise Unavailable(f"the daemon is shutting down; job {job_id} is proved by the cluster, await it elsewhere")
            if not alive():
                raise Unavailable("caller went away")
            time.sleep(wait if left is None else max(0.0, min(wait, left)))
            wait = min(self.cluster.poll_s, wait * 2)

    def cancel(self, job_id: str) -> tuple[bool, bool, str]:
        """(was_running, cancelled, status after)."""
        j = self.lookup(job_id)
        if isinstance(j, JobRecord):
            if self.cluster is None or j.state.final:
                return False, False, j.status
            return self._cancel_shared(j)
        with self.table.lock:
            if j.final:
                return False, False, j.state.name
            j.cancelled = True
            was_running = any(p.stage is not PartStage.QUEUED for p in j.parts)
        self.scheduler.remove_from_batch(j)
        if not self.table.finish(j, JobState.CANCELLED, error="cancelled by request"):
            return False, False, j.state.name  # its last partition completed (or one failed) first
        if j.lost and j.result is not None and j.result.state is not JobState.CANCELLED:
            return False, False, j.result.status  # finished elsewhere first
        with self.scheduler.cv:
            self.scheduler.cv.notify_all()
        return was_running, True, JobState.CANCELLED.name

    def _cancel_shared(self, rec: JobRecord) -> tuple[bool, bool, str]:
        """Cluster mode: cancel a job queued in the journal or held by another host: its final state is
        written now (if it is not final yet); the holder drops it at its next heartbeat."""
        err = "cancelled by request"
        now = time.time()
        done = dataclasses.replace(rec, state=JobState.CANCELLED, error=err, completed_at=now)
        try:
            ok = self.journal.finish(rec.job_id, JobState.CANCELLED.value, now, result=done.to_json(), error=err)
        except Exception as e:
            raise Unavailable(f"the journal does not answer: {e}") from None
        if not ok:
            return False, False, self._journal_record(rec.job_id).status
        log.info("event=job_cancelled job=%s held_by=%s", rec.job_id, rec.host or "-")
        return rec.state is JobState.RUNNING, True, JobState.CANCELLED.name

    # -- SRS ------------------------------------------------------------------------------------------
    def preload(self, cid: str) -> tuple[bool, float, int]:
        """Make the circuit's key HOT (on a device that holds it, else the least loaded one that may
        prove it). Returns (already HOT, ms, tier before)."""
        self.circuit(cid)
        return self.srs.preload(cid, self.executor.home_for(cid, self.srs).device)

    def evict(self, cid: str, to_tier: int = srsmod.WARM) -> tuple[bool, int, int]:
        self.circuit(cid)
        return self.srs.evict(cid, to_tier)

    # -- status ---------------------------------------------------------------------------------------
    def snapshot(self) -> dict[str, Any]:
        return snapshot(self)

    # -- housekeeping ---------------------------------------------------------------------------------
    def _gc_loop(self) -> None:
        """Delete finished jobs' payloads, and results older than ``journal.retention``."""
        retention = self.config.journal.retention
        period = max(0.5, min(10.0, retention / 4 if retention else 10.0))
        next_purge = time.monotonic() + period
        while not self.stopped.is_set():
            self._gc_wake.wait(max(0.0, next_purge - time.monotonic()))
            self._gc_wake.clear()
            if self.stopped.is_set():
                break
            try:
                if self._backlog:
                    self._refill()
                self._reap_retired()  # replaced versions whose last job finished
                self.journal.purge_payloads()  # as soon as a job finished: witnesses do not outlive their job
                if time.monotonic() < next_purge:
                    continue
                next_purge = time.monotonic() + period
                cutoff = time.time() - retention
                n = self.journal.purge(cutoff) if self.cluster is None else 0  # a cluster's: once per cluster
                self.table.expire(cutoff)
                if n:
                    log.info("event=journal_purge removed=%d", n)
            except Exception as e:
                if not self.stopped.is_set():
                    log.error("event=gc_error error=%r", str(e))
