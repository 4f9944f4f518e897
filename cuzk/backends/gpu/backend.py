"""The GPU prover backend: a/b/c, H and every G1 MSM on the device; B_G2 on the device or on CPU threads.

``start`` runs the GPU part (upload of the witness, sparse mat-vecs, NTTs, MSMs) and returns; when
B_G2 runs on the CPU ("A4" in the original daemon's numbering) it is left running on the MSM thread
pool so that ``finish`` only waits for it. The SRS, the constraint matrices and the NTT twiddles stay
resident on the device, attached to the key (one copy per device).

Switches (environment): ``CUZK_B_G2=gpu|cpu`` (default gpu), ``CUZK_PINNED=1|0`` (witness upload
through a pinned staging buffer; default 1), ``CUZK_NTT_BATCH=1|0`` (a, b, c in one batched NTT launch
per pass, phase ``ntt_abc``, or one after the other, phases ``ntt_a/b/c``; default 1),
``CUZK_MSM_WINDOW`` (force a window size), ``CUZK_UPLOAD_COPY=single|parallel`` (the copy into the
pinned staging buffer on one thread or on every core; default single until measured on the device).
"""

from __future__ import annotations

import os
import threading
import time

import cupy
import numpy as np

from ...field import fr
from ...groth16.keys import SNARKJS, ProvingKey
from ...groth16.quotient import coset_params
from ...timing import Timer
from . import msm as gmsm
from . import ntt as gntt
from .runtime import BLOCK, env_choice, grid_for, launch, op_errors

_GROUP = {"a": 1, "b1": 1, "l": 1, "h": 1, "b2": 2}


class DeviceKey:
    """Per-device resident copy of a proving key's SRS vectors and matrices."""

    def __init__(self, pk: ProvingKey, device: int, points: dict | None = None):
        """``points``: vectors already on the device (from the GPU setup) instead of uploading pk.raw."""
        self.device = device
        with cupy.cuda.Device(device), op_errors(f"uploading the SRS of {pk.source} to GPU {device}"):
            self.points = (
                points if points is not None else {name: gmsm.upload_points(pk.raw[name], g) for name, g in _GROUP.items()}
            )
            self.mats = {}
            for key, m in (("A", pk.A), ("B", pk.B), ("C", pk.C)):
                if m is not None:
                    self.mats[key] = (cupy.asarray(m.row_ptr), cupy.asarray(m.cols), cupy.asarray(m.vals), m.n_rows)
            if pk.style != SNARKJS:
                n_in = pk.n_public + 1
                aux_idx = lambda d: np.flatnonzero(d).astype(np.int64) + n_in  # noqa: E731
                self.a_index = cupy.asarray(np.concatenate([np.arange(n_in), aux_idx(pk.a_aux_density)]))
                self.b_index = cupy.asarray(np.concatenate([np.flatnonzero(pk.b_inp_density), aux_idx(pk.b_aux_density)]))
        self.nbytes = sum(int(a.nbytes) for a in self.points.values()) + sum(
            int(x.nbytes) for v in self.mats.values() for x in v[:3]
        )


_key_lock = threading.Lock()


def device_key(pk: ProvingKey, device: int | None = None) -> DeviceKey:
    dev = cupy.cuda.Device().id if device is None else device
    key = ("gpu", dev)
    with _key_lock:
        dk = pk._objs.get(key)
        if dk is None:
            dk = DeviceKey(pk, dev)
            pk._objs[key] = dk
    return dk


def evict_device_key(pk: ProvingKey, device: int) -> int:
    dk = pk._objs.pop(("gpu", device), None)
    return dk.nbytes if dk else 0


class _Events:
    """CUDA-event phase timing on the current stream."""

    def __init__(self, timer: Timer):
        self.timer = timer
        self.marks: list[tuple[str, cupy.cuda.Event, cupy.cuda.Event]] = []

    def phase(self, name: str):
        ev = self

        class _Ctx:
            def __enter__(self):
                self.start = cupy.cuda.Event()
                self.start.record()

            def __exit__(self, exc_type, *exc):
                if exc_type is not None:  # no CUDA calls on the way out: they would replace the real error
                    return False
                end = cupy.cuda.Event()
                end.record()
                ev.marks.append((name, self.start, end))

        return _Ctx()

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
    """dst[:] = src, on every core (CUZK_UPLOAD_COPY=parallel, the default for Fr vectors: 2^26 witness
    upload 272 -> 102 ms on the H200, 2026-12-03) or on one thread (single)."""
    if env_choice("CUZK_UPLOAD_COPY", ("parallel", "single")) == "parallel" and src.ndim == 2 and src.shape[1:] == (4,):
        return fr.copy_into(dst, src)
    np.copyto(dst, src)
    return dst


def upload_fr(v: np.ndarray) -> cupy.ndarray:
    """Host Fr vector -> device: one DMA when ``v`` is already page-locked (``to_pinned``), else through
    a reused pinned staging buffer unless CUZK_PINNED=0."""
    if os.environ.get("CUZK_PINNED", "1") == "0":
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


def spmv(mat, w: cupy.ndarray, out: cupy.ndarray) -> cupy.ndarray:
    """out[:rows] = M w (out is zeroed by the caller beyond the matrix's rows)."""
    row_ptr, cols, vals, rows = mat
    launch(
        "fr_ops",
        "spmv_csr",
        grid_for(rows),
        BLOCK,
        (row_ptr, cols, vals, w, out, np.uint32(rows)),
        f"sparse mat-vec of {rows} rows",
    )
    return out


def _ew(name: str, *arrays, n: int):
    launch("fr_ops", name, grid_for(n), BLOCK, (*arrays, np.uint32(n)), f"{name} of {n} elements")


class GpuBackend:
    name = "gpu"

    def __init__(self):
        self.b_g2_on = os.environ.get("CUZK_B_G2", "gpu")
        # a, b, c transformed in one batched launch per NTT pass (1) or one after the other (0)
        self.ntt_batch = os.environ.get("CUZK_NTT_BATCH", "1") == "1"

    def start(self, pk: ProvingKey, w: np.ndarray, timer: Timer):
        t_start = time.perf_counter()
        ev = _Events(timer)
        dk = device_key(pk)
        n = pk.domain_size
        with op_errors(f"GPU prove (key {pk.source})"):
            with ev.phase("upload"):
                wd = upload_fr(w)
            with ev.phase("spmv"):
                abc = cupy.zeros((3, n, 4), dtype=cupy.uint64)
                a, b, c = abc[0], abc[1], abc[2]
                spmv(dk.mats["A"], wd, a)
                spmv(dk.mats["B"], wd, b)
                if "C" in dk.mats:
                    spmv(dk.mats["C"], wd, c)
                else:
                    _ew("fr_mul", a, b, c, n=n)
            gen, shift = coset_params(pk.style, pk.domain_log)
            dom = gntt.domain(pk.domain_log, gen)
            if self.ntt_batch:
                with ev.phase("ntt_abc"):
                    dom.evals_to_coset(abc, shift)
            else:
                for name, x in (("a", a), ("b", b), ("c", c)):
                    with ev.phase(f"ntt_{name}"):
                        dom.evals_to_coset(x, shift)
            with ev.phase("ntt_h"):
                h = cupy.empty((n, 4), dtype=cupy.uint64)  # a fresh vector, so a/b/c can be freed now
                _ew("fr_mul_sub", a, b, c, h, n=n)
                if pk.style != SNARKJS:
                    from ...field.constants import R

                    z_inv = pow((pow(shift, n, R) - 1) % R, -1, R)
                    dom.coset_intt(h, shift, scale=z_inv)  # Z(shift w^i) = shift^n - 1: one constant
                    h = h[: n - 1]
            del a, b, c, abc
            if pk.style == SNARKJS:
                sc = {"a": wd, "b": wd, "l": wd[pk.n_public + 1 :]}
            else:
                sc = {"a": wd[dk.a_index], "b": wd[dk.b_index], "l": wd[pk.n_public + 1 :]}
            pending_b2 = None
            if self.b_g2_on == "cpu":
                from ...groth16.prover import CpuBackend, msm_jobs

                pending_b2 = CpuBackend().submit(pk, msm_jobs(pk, w)["b2"])
            res = {}
            for name, scal_key, bases_key in (("a", "a", "a"), ("b1", "b", "b1"), ("l", "l", "l"), ("h", None, "h")):
                with ev.phase(f"msm_{'b_g1' if name == 'b1' else name}"):
                    s = h if scal_key is None else sc[scal_key]
                    res[name] = gmsm.msm(1, dk.points[bases_key], cupy.ascontiguousarray(s))
            if pending_b2 is None:
                with ev.phase("msm_b_g2"):
                    res["b2"] = gmsm.msm(2, dk.points["b2"], cupy.ascontiguousarray(sc["b"]))
            ev.flush()
        # wall time of the whole GPU part (upload to the last G1/G2 MSM result on the host)
        timer.record("gpu_part", (time.perf_counter() - t_start) * 1e3)
        return {"res": res, "pending_b2": pending_b2, "t_b2": timer.elapsed_ms()}

    def finish(self, state, timer: Timer) -> dict[str, object]:
        res = state["res"]
        if state["pending_b2"] is not None:
            res["b2"] = state["pending_b2"].result()
            timer.record("msm_b_g2", timer.elapsed_ms() - state["t_b2"])
        return res
