"""The CPU backend: numba kernels for the field work, the curve's point library for the MSMs.

A key is made resident once per process (the library's bases for each vector: arkworks objects for
BLS12-381, the LEM arrays themselves for BN254's numba library) and shared by every CPU device the
engine defines; it is dropped when the last of them evicts it. The recipe submits the witness MSMs
before computing the quotient (``msm_before_quotient``): they run on the MSM thread pool while the
NTTs use the cores between them.
"""

from __future__ import annotations

import contextlib
import os
import threading
import weakref
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..curve import library
from ..curve.points import PointError
from ..field.ntt import domain
from ..groth16.backend import Device, Memory
from ..groth16.keys import VECTOR_GROUPS, ProvingKey
from ..timing import Timer

CPU = Device("cpu", "cpu")

# resident bytes per point of a library's bases (measured: an arkworks G1 object and its list slot
# ~190 B, G2 ~340 B; the numba library keeps the LEM rows)
_OBJECT_BYTES = {"cuzk.curve.arkworks_bls12_381": {1: 200, 2: 350}}


class CpuKey:
    """A proving key resident for the CPU: the library's bases per vector, and the index of the points
    that are not at infinity in the vectors snarkjs pads with them."""

    def __init__(self, pk: ProvingKey):
        lib = pk.curve.lib
        self.bases = {}
        for name, g in VECTOR_GROUPS.items():
            what = f"{pk.source}: {name} points"
            try:
                self.bases[name] = lib.load_bases(g, pk.raw[name], pk.count(name), what)
            except PointError:
                raise
            except ValueError as e:  # a library's own error for a bad point: the same one-line error as ours
                raise PointError(str(e) if str(e).startswith(what) else f"{what}: {e}") from None
        self.finite = {name: np.flatnonzero(pk.nonzero_mask(name)) for name in ("a", "b1", "b2")}
        self.nbytes = resident_bytes(pk)
        self.holders: set[str] = set()


def resident_bytes(pk: ProvingKey) -> int:
    per = _OBJECT_BYTES.get(pk.curve.cpu_library)
    total = 0
    for name, g in VECTOR_GROUPS.items():
        total += pk.count(name) * (per[g] if per else pk.curve.point_bytes(g))
    return total


class CpuSession:
    """One proof on the CPU (see :class:`cuzk.groth16.backend.ProofSession`)."""

    def __init__(self, pk: ProvingKey, key: CpuKey, timer: Timer):
        self.pk, self.key, self.timer = pk, key, timer
        self.fr = pk.curve.fr
        self.lib = pk.curve.lib

    def phase(self, name: str) -> contextlib.AbstractContextManager[None]:
        return self.timer.phase(name)

    def upload(self, w: np.ndarray) -> np.ndarray:
        return w

    def matvec(self, matrix: str, w: np.ndarray) -> np.ndarray:
        m = getattr(self.pk, matrix)
        n = self.pk.domain_size
        if m.n_rows > n:
            raise ValueError(f"{self.pk.source}: matrix {matrix} has {m.n_rows} rows, beyond the domain of {n}")
        out = self.fr.zeros(n)
        m.matvec(w, out=out[: m.n_rows], field=self.fr)
        return out

    def mul(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return self.fr.mul(a, b)

    def _domain(self, generator: int):
        return domain(self.fr, self.pk.domain_log, generator)

    def evals_to_coset(self, vectors: Sequence[np.ndarray], generator: int, shift: int) -> None:
        dom = self._domain(generator)
        for i, x in enumerate(vectors):  # a, b, c of each proof of a batch in turn
            with self.timer.phase(f"ntt_{'abc'[i % 3]}"):
                dom.intt(x, inplace=True)
                dom.coset_ntt(x, shift, inplace=True)

    def mul_sub(self, a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
        return self.fr.mul_sub(a, b, c)

    def coset_intt(self, xs: Sequence[np.ndarray], generator: int, shift: int, scale: int) -> None:
        dom = self._domain(generator)
        for x in xs:
            dom.coset_intt(x, shift, inplace=True, scale=scale)

    def gather(self, w: np.ndarray, which: str) -> np.ndarray:
        return w[self.pk.scalar_index(which)]

    def head(self, x: np.ndarray, n: int) -> np.ndarray:
        return x[:n]

    def tail(self, x: np.ndarray, start: int) -> np.ndarray:
        return x[start:]

    def msm(self, group: int, bases: str, scalars: np.ndarray, skip_infinity: bool = False, label: str = ""):
        canon = self.fr.from_mont(np.ascontiguousarray(scalars))
        index = None
        if skip_infinity:
            index = self.key.finite[bases]
            index = index[index < canon.shape[0]]
            canon = canon[index]
        return library.submit_msm(self.lib, group, self.key.bases[bases], canon, index)

    def submitted(self) -> None:
        pass

    def close(self) -> None:
        pass


class CpuBackend:
    name = "cpu"
    msm_before_quotient = True

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._keys: weakref.WeakKeyDictionary[ProvingKey, CpuKey] = weakref.WeakKeyDictionary()

    def configure(self, settings: Any) -> None:
        if settings:
            raise ValueError("the CPU backend has no settings table")

    # ---- devices
    def devices(self) -> list[Device]:
        return [CPU]

    def use(self, device: Device | None) -> contextlib.AbstractContextManager[None]:
        return contextlib.nullcontext()

    def memory(self, device: Device) -> Memory:
        info = _meminfo()
        total = info.get("MemTotal", 0)
        return Memory(total, info.get("MemAvailable", total))

    def device_title(self, device: Device) -> str:
        return f"CPU backend ({library.worker_count()} MSM threads, {os.cpu_count()} cores)"

    def prepare_witness(self, w: Any) -> Any:
        return w

    # ---- keys
    def load_key(self, pk: ProvingKey, device: Device | None = None) -> int:
        name = (device or CPU).name
        with self._lock:
            key = self._keys.get(pk)
        if key is None:
            key = CpuKey(pk)  # outside the lock: decoding a large key takes seconds
            with self._lock:
                key = self._keys.setdefault(pk, key)
        with self._lock:
            key.holders.add(name)
        return key.nbytes

    def evict_key(self, pk: ProvingKey, device: Device | None = None) -> int:
        name = (device or CPU).name
        with self._lock:
            key = self._keys.get(pk)
            if key is None:
                return 0
            key.holders.discard(name)
            if key.holders:
                return 0
            del self._keys[pk]
            return key.nbytes

    def resident_bytes_estimate(self, pk: ProvingKey) -> int:
        return resident_bytes(pk)

    def resident(self, pk: ProvingKey) -> CpuKey:
        """The key's resident form (made now if it is not resident)."""
        with self._lock:
            key = self._keys.get(pk)
        if key is None:
            self.load_key(pk, CPU)
            with self._lock:
                key = self._keys[pk]
        return key

    def begin(self, pk: ProvingKey, timer: Timer, device: Device | None = None, batch: int = 1) -> CpuSession:
        return CpuSession(pk, self.resident(pk), timer)  # a batch's MSMs share the one MSM thread pool


def _meminfo() -> dict[str, int]:
    out: dict[str, int] = {}
    with contextlib.suppress(OSError), open("/proc/meminfo") as fh:
        for line in fh:
            k, _, v = line.partition(":")
            parts = v.split()
            if parts:
                out[k] = int(parts[0]) * (1024 if len(parts) > 1 and parts[1] == "kB" else 1)
    if not out:
        pages, size = os.sysconf("SC_PHYS_PAGES"), os.sysconf("SC_PAGE_SIZE")
        out["MemTotal"] = pages * size
    return out
