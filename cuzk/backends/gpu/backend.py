"""The GPU backend: the recipe's primitives on CUDA devices, keys resident in device memory.

Per proof (a :class:`GpuSession`): the witness is uploaded (one DMA when it is already in page-locked
memory, else through a reused pinned staging buffer), a, b, c come from sparse mat-vecs into one
(3, n) slab so the quotient's NTTs run as one batched launch per pass, h = a*b - c goes to a slab of its
own (the a, b, c slab is freed before the MSMs take their memory, the h slab once they have run), and
every MSM runs on the device (a batch of proofs of one circuit shares the slabs and the NTT launches);
B_G2 may run on
CPU threads instead ("A4" in the original daemon's numbering), left in flight for the recipe to collect.
Phases are timed with CUDA events and recorded when the last MSM has been submitted.

Device keys (the SRS vectors, the constraint matrices, the bellperson scalar indices) belong to this
backend, one per (key, device), never to :class:`~cuzk.groth16.keys.ProvingKey`.

Every curve of cuzk.curves runs here: the kernels are built from the curve's preamble, the key's
curve picks them. Switches come from the process-wide :class:`~cuzk.backends.gpu.config.GpuConfig`
(the daemon's ``[gpu]`` table; environment variables override it for benchmarks): ``b_g2`` (gpu|cpu),
``pinned``, ``upload_copy`` (parallel|single: the copy into the pinned stage), ``ntt_batch`` (a, b, c in
one batched NTT launch per pass, phase ``ntt_abc``, or one after the other, phases ``ntt_a/b/c``),
``msm_table`` (precomputed multiples of the H bases built when the key becomes resident).
"""

from __future__ import annotations

import contextlib
import threading
import time
import weakref
from collections.abc import Iterator, Sequence
from typing import Any

import cupy
import numpy as np

from ...curve import library
from ...curves import Curve
from ...field.prime import copy_into
from ...groth16.backend import Device, Memory
from ...groth16.keys import VECTOR_GROUPS, ProvingKey
from ...timing import Timer
from . import config
from . import msm as gmsm
from . import ntt as gntt
from .runtime import BLOCK, grid_for, launch, op_errors


class DeviceKey:
    """A proving key resident on one GPU: its SRS vectors and matrices (and bellperson indices)."""

    def __init__(self, pk: ProvingKey, device: int, points: dict | None = None):
        """``points``: vectors already on the device (from the GPU setup) instead of uploading pk.raw."""
        self.device = device
        with cupy.cuda.Device(device), op_errors(f"uploading the SRS of {pk.source} to GPU {device}"):
            self.points = (
                points
                if points is not None
                else {name: gmsm.upload_points(pk.raw[name], g, pk.curve) for name, g in VECTOR_GROUPS.items()}
            )
            self.mats = {}
            for key, m in (("A", pk.A), ("B", pk.B), ("C", pk.C)):
                if m is not None:
                    self.mats[key] = (cupy.asarray(m.row_ptr), cupy.asarray(m.cols), cupy.asarray(m.vals), m.n_rows)
            self.index = {}
            if pk.a_aux_density is not None:
                self.index = {which: cupy.asarray(pk.scalar_index(which)) for which in ("a", "b")}
            self.tables: dict[str, gmsm.BaseTable] = {}
            if config.current().msm_table == "auto":
                self._table_h(pk)
        self.nbytes = (
            sum(int(a.nbytes) for a in self.points.values())
            + sum(int(x.nbytes) for v in self.mats.values() for x in v[:3])
            + sum(int(a.nbytes) for a in self.index.values())
            + sum(t.extra_bytes for t in self.tables.values())
        )

    def _table_h(self, pk: ProvingKey) -> None:
        """Precomputed multiples of the H bases (gpu.msm_table = "auto"): the one MSM whose scalars are
        full-size in both key styles. As many copies as fit in the free memory left after a reserve for
        the proofs' working memory (TABLE_RESERVE_PER_ROW x the domain, plus a tenth of the device), and
        at most half the free memory (other keys may follow); none when not one copy fits or the H vector
        is short (TABLE_MIN_BASES)."""
        h = self.points.get("h")
        if h is None or h.shape[0] < TABLE_MIN_BASES:
            return
        free, total = cupy.cuda.runtime.memGetInfo()
        budget = min(free - TABLE_RESERVE_PER_ROW * pk.domain_size - total // 10, free // 2)
        c, k = gmsm.plan_table(int(h.shape[0]), max(0, budget), pk.curve)
        if k < 2:
            return
        table = gmsm.build_table(h, c, k, pk.curve)
        self.tables["h"] = table
        self.points["h"] = table.bases  # the plain vector is copy 0 of the table


# bytes per domain row a proof needs on the device beyond the key (a, b, c slab and h: 128; the MSM's
# sorted entries, cursor and partials at ~13 windows: ~150), with margin; and the shortest H vector worth
# a table (below it the MSM is launch-bound)
TABLE_RESERVE_PER_ROW = 384
TABLE_MIN_BASES = 1 << 16


_keys_lock = threading.Lock()
# per key: {device ordinal: DeviceKey}; weak on the key, so a key nobody holds leaves the device with it
_device_keys: weakref.WeakKeyDictionary[ProvingKey, dict[int, DeviceKey]] = weakref.WeakKeyDictionary()


def device_key(pk: ProvingKey, device: int | None = None) -> DeviceKey:
    """The key resident on ``device`` (the current device when None), uploaded on first use."""
    dev = cupy.cuda.Device().id if device is None else device
    with _keys_lock:
        dk = _device_keys.get(pk, {}).get(dev)
        if dk is None:
            with cupy.cuda.Device(dev):
                dk = DeviceKey(pk, dev)
            _device_keys.setdefault(pk, {})[dev] = dk
    return dk


def adopt_device_key(pk: ProvingKey, device: int, dk: DeviceKey) -> None:
    """Record a key built on the device (the GPU setup) as resident there."""
    with _keys_lock:
        _device_keys.setdefault(pk, {})[device] = dk


def evict_device_key(pk: ProvingKey, device: int) -> int:
    with _keys_lock:
        dk = _device_keys.get(pk, {}).pop(device, None)
    return dk.nbytes if dk else 0


def resident_devices(pk: ProvingKey) -> list[int]:
    with _keys_lock:
        return sorted(_device_keys.get(pk, {}))


class _Events:
    """CUDA-event phase timing on the current stream."""

    def __init__(self, timer: Timer):
        self.timer = timer
        self.marks: list[tuple[str, cupy.cuda.Event, cupy.cuda.Event]] = []

    @contextlib.contextmanager
    def phase(self, name: str) -> Iterator[None]:
        start = cupy.cuda.Event()
        start.record()
        yield  # an exception passes straight through: no CUDA call on the way out would replace it
        end = cupy.cuda.Event()
        end.record()
        self.marks.append((name, start, end))

    def flush(self) -> None:
        for name, a, b in self.marks:
            b.synchronize()
            self.timer.record(name, cupy.cuda.get_elapsed_time(a, b))
        self.marks.clear()


_pinned_lock = threading.Lock()
_pinned: dict[int, tuple[object, np.ndarray]] = {}


def is_pinned(v: np.ndarray) -> bool:
    """Whether ``v``'s memory is page-locked host memory: an array over CuPy pinned memory (what
    ``to_pinned`` makes), or memory CUDA reports as host memory mapped for the device. A wrong "yes"
    would only cost speed: the upload from pageable memory is then a synchronous copy, still correct."""
    b = v
    while isinstance(b, np.ndarray):
        b = b.base
    if isinstance(b, memoryview):
        b = b.obj
    if isinstance(b, cupy.cuda.PinnedMemoryPointer):
        return True
    try:
        attrs = cupy.cuda.runtime.pointerGetAttributes(v.ctypes.data)
    except cupy.cuda.runtime.CUDARuntimeError:
        return False
    kind = getattr(attrs, "type", getattr(attrs, "memoryType", None))  # not exposed by every CuPy
    if kind is not None:
        return kind == 1  # cudaMemoryTypeHost
    return bool(attrs.devicePointer) and bool(attrs.hostPointer)


def to_pinned(v: np.ndarray) -> np.ndarray:
    """A copy of ``v`` in page-locked host memory (CuPy's pinned pool; returned to it when the array is
    gone). The daemon's synthesis workers call it (``gpus.pinned_witness``) so that the copy happens
    off the GPU's critical path and the upload is one DMA."""
    mem = cupy.cuda.alloc_pinned_memory(max(1, v.nbytes))
    out = np.frombuffer(mem, dtype=v.dtype, count=v.size).reshape(v.shape)
    return _host_copy(out, v)


def _host_copy(dst: np.ndarray, src: np.ndarray) -> np.ndarray:
    """dst[:] = src, on every core (upload_copy = parallel, the default for field vectors: 2^26 witness
    upload 272 -> 102 ms on the H200, 2026-12-03) or on one thread (single)."""
    if config.current().upload_copy == "parallel" and src.ndim == 2 and src.shape[1:] == (4,):
        return copy_into(dst, src)
    np.copyto(dst, src)
    return dst


def upload_fr(v: np.ndarray) -> cupy.ndarray:
    """Host field vector -> device: one DMA when ``v`` is already page-locked (``to_pinned``), else through
    a reused pinned staging buffer unless the config's ``pinned`` is off (CUZK_PINNED=0)."""
    if not config.current().pinned:
        return cupy.asarray(v)
    if v.flags.c_contiguous and is_pinned(v):
        out = cupy.empty(v.shape, dtype=cupy.uint64)
        out.set(v)
        cupy.cuda.get_current_stream().synchronize()  # the caller may reuse or free v afterwards
        return out
    nbytes = v.nbytes
    with _pinned_lock:
        dev = cupy.cuda.Device().id
        buf = _pinned.get(dev)
        if buf is None or buf[1].nbytes < nbytes:
            mem = cupy.cuda.alloc_pinned_memory(max(nbytes, 1 << 20))
            buf = (mem, np.frombuffer(mem, dtype=np.uint8, count=max(nbytes, 1 << 20)))
            _pinned[dev] = buf
        stage = buf[1][:nbytes].view(np.uint64).reshape(v.shape)
        _host_copy(stage, v)
        out = cupy.empty(v.shape, dtype=cupy.uint64)
        out.set(stage)
        cupy.cuda.get_current_stream().synchronize()  # the staging buffer is reused by the next upload
        return out


def spmv(mat, w: cupy.ndarray, out: cupy.ndarray, curve: Curve) -> cupy.ndarray:
    """out[:rows] = M w (out is zeroed by the caller beyond the matrix's rows)."""
    row_ptr, cols, vals, rows = mat
    op = f"sparse mat-vec of {rows} rows"
    launch("fr_ops", "spmv_csr", grid_for(rows), BLOCK, (row_ptr, cols, vals, w, out, np.uint32(rows)), op, curve=curve)
    return out


def _ew(name: str, *arrays, n: int, curve: Curve) -> None:
    launch("fr_ops", name, grid_for(n), BLOCK, (*arrays, np.uint32(n)), f"{name} of {n} elements", curve=curve)


class GpuSession:
    """One proof, or a batch of proofs of one circuit, on one GPU (see
    :class:`cuzk.groth16.backend.ProofSession`). A batch's a, b, c share one (3 x batch, n) slab (one
    set of NTT launches for all), its h vectors one (batch, n) slab (one coset iNTT); its MSMs run one
    after the other (on parallel streams they measured 1.01x: the device is already busy, NOTES.md)."""

    def __init__(self, backend: GpuBackend, pk: ProvingKey, dk: DeviceKey, timer: Timer, batch: int = 1):
        self.backend, self.pk, self.dk, self.timer = backend, pk, dk, timer
        self.curve = pk.curve
        self.ev = _Events(timer)
        self.t0 = time.perf_counter()
        self.n = pk.domain_size
        self.batch = max(1, batch)
        self._slab: cupy.ndarray | None = None  # (3 x batch, n, 4): a, b, c of each proof, so the NTTs batch
        self._rows = 0
        self._h: cupy.ndarray | None = None  # (batch, n, 4): h of each proof, so the coset iNTT batches
        self._h_rows = 0

    def phase(self, name: str) -> contextlib.AbstractContextManager[None]:
        return self.ev.phase(name)

    def _row(self) -> cupy.ndarray:
        rows = 3 * self.batch
        if self._slab is None or self._rows == rows:
            self._slab, self._rows = cupy.zeros((rows, self.n, 4), dtype=cupy.uint64), 0
        v = self._slab[self._rows]
        self._rows += 1
        return v

    def upload(self, w: np.ndarray) -> cupy.ndarray:
        return upload_fr(w)

    def matvec(self, matrix: str, w: cupy.ndarray) -> cupy.ndarray:
        return spmv(self.dk.mats[matrix], w, self._row(), self.curve)

    def mul(self, a: cupy.ndarray, b: cupy.ndarray) -> cupy.ndarray:
        out = self._row()
        _ew("fr_mul", a, b, out, n=self.n, curve=self.curve)
        return out

    @staticmethod
    def _rows_of(slab: cupy.ndarray | None, vectors: Sequence[cupy.ndarray]) -> bool:
        """Whether ``vectors`` are all the rows of ``slab``, in order (one batched launch serves them)."""
        return (
            slab is not None
            and len(vectors) == slab.shape[0]
            and all(v.data.ptr == slab[i].data.ptr and v.shape == slab[i].shape for i, v in enumerate(vectors))
        )

    def evals_to_coset(self, vectors: Sequence[cupy.ndarray], generator: int, shift: int) -> None:
        dom = gntt.domain(self.pk.domain_log, generator, self.curve)
        if config.current().ntt_batch and self._rows_of(self._slab, vectors):
            with self.ev.phase("ntt_abc"):
                dom.evals_to_coset(self._slab, shift)
            return
        for i, x in enumerate(vectors):
            with self.ev.phase(f"ntt_{'abc'[i % 3]}"):
                dom.evals_to_coset(x, shift)

    def mul_sub(self, a: cupy.ndarray, b: cupy.ndarray, c: cupy.ndarray) -> cupy.ndarray:
        if self._h is None or self._h_rows == self.batch:
            self._h, self._h_rows = cupy.empty((self.batch, self.n, 4), dtype=cupy.uint64), 0
        h = self._h[self._h_rows]
        self._h_rows += 1
        _ew("fr_mul_sub", a, b, c, h, n=self.n, curve=self.curve)
        if self._h_rows == self.batch:
            self._slab = None  # every a, b, c is dead: their memory goes back before the MSMs
        return h

    def coset_intt(self, xs: Sequence[cupy.ndarray], generator: int, shift: int, scale: int) -> None:
        dom = gntt.domain(self.pk.domain_log, generator, self.curve)
        if config.current().ntt_batch and self._rows_of(self._h, xs):
            dom.coset_intt(self._h, shift, scale=scale)
            return
        for x in xs:
            dom.coset_intt(x, shift, scale=scale)

    def gather(self, w: cupy.ndarray, which: str) -> cupy.ndarray:
        return w[self.dk.index[which]]

    def head(self, x: cupy.ndarray, n: int) -> cupy.ndarray:
        return x[:n]

    def tail(self, x: cupy.ndarray, start: int) -> cupy.ndarray:
        return x[start:]

    def msm(self, group: int, bases: str, scalars: cupy.ndarray, skip_infinity: bool = False, label: str = ""):
        if group == 2 and config.current().b_g2 == "cpu":
            from ..cpu import CpuSession

            cpu = self.backend.cpu()
            host = cupy.asnumpy(scalars)
            return CpuSession(self.pk, cpu.resident(self.pk), self.timer).msm(group, bases, host, skip_infinity, label)
        name = {"b1": "b_g1", "b2": "b_g2"}.get(label, label)
        with self.ev.phase(f"msm_{name}"):
            table = self.dk.tables.get(bases)
            pts_ = self.dk.points[bases]
            return library.Done(gmsm.msm(group, pts_, cupy.ascontiguousarray(scalars), curve=self.curve, table=table))

    def submitted(self) -> None:
        # the MSMs have run (synchronously; B_G2 on CPU threads has its own host copy): h goes back to the
        # pool now, not when the finalizer closes the session while the device starts the next proof
        self._slab = self._h = None
        self.ev.flush()
        # wall time of the whole GPU part (upload to the last MSM result on the host)
        self.timer.record("gpu_part", (time.perf_counter() - self.t0) * 1e3)

    def close(self) -> None:
        self._slab = self._h = None


class GpuBackend:
    name = "gpu"
    msm_before_quotient = False

    def __init__(self) -> None:
        self._cpu = None

    def configure(self, settings: Any) -> None:
        """The daemon's [gpu] table over the defaults, the environment's CUZK_* variables over both."""
        config.configure(config.GpuConfig.from_env(config.GpuConfig.from_mapping(settings or {})))

    def cpu(self):
        """The CPU backend B_G2 runs on when the config's b_g2 is "cpu"."""
        if self._cpu is None:
            from ..cpu import CpuBackend

            self._cpu = CpuBackend()
        return self._cpu

    # ---- devices
    def devices(self) -> list[Device]:
        return [Device(f"gpu:{i}", "gpu", i) for i in range(cupy.cuda.runtime.getDeviceCount())]

    def use(self, device: Device | None) -> contextlib.AbstractContextManager[Any]:
        if device is None or device.ordinal < 0:
            return contextlib.nullcontext()
        return cupy.cuda.Device(device.ordinal)

    def memory(self, device: Device) -> Memory:
        with cupy.cuda.Device(device.ordinal):
            free, total = cupy.cuda.runtime.memGetInfo()
        return Memory(int(total), int(free))

    def device_title(self, device: Device) -> str:
        name = cupy.cuda.runtime.getDeviceProperties(device.ordinal)["name"]
        return name.decode() if isinstance(name, bytes) else str(name)

    def prepare_witness(self, w: np.ndarray) -> np.ndarray:
        return to_pinned(w)

    # ---- keys
    def _ordinal(self, device: Device | None) -> int:
        return cupy.cuda.Device().id if device is None or device.ordinal < 0 else device.ordinal

    def load_key(self, pk: ProvingKey, device: Device | None = None) -> int:
        return device_key(pk, self._ordinal(device)).nbytes

    def evict_key(self, pk: ProvingKey, device: Device | None = None) -> int:
        return evict_device_key(pk, self._ordinal(device))

    def resident_bytes_estimate(self, pk: ProvingKey) -> int:
        return pk.raw_bytes() + pk.matrix_bytes()

    def begin(self, pk: ProvingKey, timer: Timer, device: Device | None = None, batch: int = 1) -> GpuSession:
        dev = self._ordinal(device)
        with cupy.cuda.Device(dev):
            return GpuSession(self, pk, device_key(pk, dev), timer, batch)
