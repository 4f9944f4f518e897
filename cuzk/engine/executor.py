"""The executor: the devices the engine proves on, the prover workers bound to them, the finalizer pool.

It is built from the backend's device list (``backend.devices()``, narrowed to ``gpus.devices`` when that
names GPU ordinals). Each :class:`ProvingDevice` pairs the backend's
:class:`~cuzk.groth16.backend.Device` with what the engine keeps per device: finalizer slots, the
circuits it may prove (``gpus.affinity``), its HOT SRS budget and its busy time. Each :class:`Worker` is
the state of one prover thread (the loop itself is in :mod:`cuzk.engine.pipeline`).

Nothing here touches a device directly: discovery, memory and titles come from the backend.
"""

from __future__ import annotations

import contextlib
import itertools
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from .. import CuzkError
from ..backends import get_backend, gpu_available
from ..groth16.backend import Backend, Device
from .config import Config
from .errors import EngineError
from .srs import SrsManager


def open_backend(name: str, gpu_settings: dict[str, Any] | None = None) -> Backend:
    """The backend ``gpus.backend`` names ("auto", "cpu", "gpu"), with the GPU one set up from the [gpu]
    table; an EngineError if it cannot run here."""
    if name == "gpu" and not gpu_available():  # asked for explicitly: no silent fall-back to the CPU
        raise EngineError('gpus.backend = "gpu" but no CUDA GPU is visible (CuPy missing or no device)')
    try:
        backend: Backend = get_backend(name)
    except CuzkError as e:
        raise EngineError(f"gpus.backend = {name!r}: {e}") from None
    if backend.name == "gpu":
        try:
            backend.configure(gpu_settings or {})
        except ValueError as e:
            raise EngineError(str(e)) from None
    return backend


def select_devices(backend: Backend, ordinals: list[int]) -> list[Device]:
    """The backend's devices, or the GPUs ``ordinals`` names in that order (``gpus.devices``: GPU ordinals;
    ignored by a backend without GPUs)."""
    found = backend.devices()
    gpus = {d.ordinal: d for d in found if d.kind == "gpu"}
    if ordinals and gpus:
        for o in ordinals:
            if o not in gpus:
                raise EngineError(f"gpus.devices: GPU {o} does not exist ({len(gpus)} visible)")
        found = [gpus[o] for o in ordinals]
    if not found:
        raise EngineError(f"gpus.backend: the {backend.name} backend has no device to prove on (is a GPU visible?)")
    return found


class ProvingDevice:
    """One device proofs run on, with the engine's per-device state."""

    def __init__(self, device: Device, finalizer_slots: int, allowed: frozenset[str] | None, hot_budget: int) -> None:
        self.device = device
        # proofs between prove_start and the end of prove_finish: bounded, so the device's provers cannot run
        # ahead of its finalizers (on the CPU backend that would queue ever more MSMs in the pool)
        self.final_slots = threading.BoundedSemaphore(finalizer_slots)
        self.allowed = allowed  # circuits this device proves (gpus.affinity); None: any
        self.hot_budget = hot_budget  # bytes of HOT SRS
        # a GPU runs one prove_start at a time (its kernels and memory plan assume the device to themselves);
        # the CPU backend's workers overlap, sharing the cores through the MSM pool
        self._exclusive = threading.Lock() if device.kind == "gpu" else None
        self.active = 0  # partitions between SRS acquire and the end of prove_finish
        self.busy_s = 0.0
        self._since = 0.0
        self._mu = threading.Lock()

    @property
    def name(self) -> str:
        return self.device.name

    @property
    def kind(self) -> str:
        return self.device.kind

    @property
    def ordinal(self) -> int:
        return self.device.ordinal

    def may_prove(self, circuit_id: str) -> bool:
        return self.allowed is None or circuit_id in self.allowed

    def exclusive(self) -> contextlib.AbstractContextManager[object]:
        """Held around prove_start: the device's lock on a GPU, nothing on the CPU."""
        return self._exclusive if self._exclusive is not None else contextlib.nullcontext()

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
        """Seconds with at least one partition on the device."""
        with self._mu:
            return self.busy_s + ((time.monotonic() - self._since) if self.active else 0.0)


class Worker:
    """One prover thread's state: its device, the partition in hand, its busy time."""

    def __init__(self, worker_id: int, device: ProvingDevice) -> None:
        self.id = worker_id
        self.device = device
        self.current_job = ""
        self.current_circuit = ""
        self.busy_s = 0.0  # time spent on partitions (SRS acquire + prove_start), finished ones
        self.since = 0.0  # monotonic start of the partition in hand; 0 when idle
        self.started = 0

    def busy(self) -> float:
        since = self.since
        return self.busy_s + ((time.monotonic() - since) if since else 0.0)

    def take(self, job_id: str, circuit_id: str) -> None:
        self.current_job, self.current_circuit = job_id, circuit_id

    def idle(self) -> None:
        self.current_job = self.current_circuit = ""


class Executor:
    """Owns the devices, the workers (device-major ids) and the finalizer pool."""

    def __init__(self, config: Config, backend: Backend, machine_memory: int) -> None:
        cfg = config
        self.backend = backend
        n_fin = max(1, cfg.pipeline.finalizer_threads)
        self.devices: list[ProvingDevice] = []
        for d in select_devices(backend, list(cfg.gpus.devices)):
            if d.kind == "gpu":
                allowed = cfg.gpus.affinity.get(d.ordinal)
                budget = cfg.srs.hot_budget or backend.memory(d).total // 2
            else:  # affinity names GPUs; the CPU's HOT tier is host memory
                allowed = None
                budget = cfg.srs.hot_budget or machine_memory // 3
            self.devices.append(ProvingDevice(d, n_fin, allowed, budget))
        ids = itertools.count()
        self.workers: list[Worker] = []
        for dev in self.devices:
            per = cfg.gpus.gpu_workers_per_device if dev.kind == "gpu" else cfg.gpus.cpu_workers
            self.workers += [Worker(next(ids), dev) for _ in range(max(1, per))]
        # finalizer_threads per device: every device's finalizer slots can be busy at once
        self.n_finalizers = n_fin * len(self.devices)
        self.finalizers = ThreadPoolExecutor(self.n_finalizers, thread_name_prefix="cuzk-final")

    def hot_budgets(self) -> dict[Device, int]:
        return {d.device: d.hot_budget for d in self.devices}

    def may_prove(self, circuit_id: str) -> bool:
        return any(d.may_prove(circuit_id) for d in self.devices)

    def home_for(self, circuit_id: str, srs: SrsManager) -> ProvingDevice:
        """Where to make ``circuit_id`` HOT: a device that already holds it, else the least loaded one that
        may prove it."""
        ok = [d for d in self.devices if d.may_prove(circuit_id)] or self.devices
        resident = set(srs.resident_devices(circuit_id))
        for d in ok:
            if d.device in resident:
                return d
        return min(ok, key=lambda d: srs.hot_used(d.device))

    def shutdown(self, clean: bool) -> None:
        """Stop the finalizer pool: after a clean drain it is idle; otherwise its queued tasks are dropped."""
        self.finalizers.shutdown(wait=clean, cancel_futures=not clean)
