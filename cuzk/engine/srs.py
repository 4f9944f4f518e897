"""SRS manager: each circuit's proving key in three tiers, with budgets, LRU eviction and refcounts.

* **COLD**: only the ``.zkey`` / ``.params`` on disk. Promotion to WARM parses it once (zkey coefficient
  section -> CSR; params: zcash big-endian points -> LEM, which is the slow part) and writes a native
  cache file.
* **WARM**: the cache file ``<param_cache>/<circuit>-<source id>.srs`` in the device layout: the raw LEM
  point vectors (what the GPU kernels and the zkey use), the evaluation matrices (CSR) and densities,
  64-byte aligned, mapped with mmap; a ProvingKey is built over the mapping without copying. The file is
  keyed by the key's contents (its SHA-256, and the circuit's for bellperson params), so it survives
  restarts and is rebuilt when the key changes.
* **HOT**: resident for a device, through the backend (``backend.load_key(pk, device)``): point objects
  for the CPU backend (one copy per key, shared by its CPU devices), GPU memory for a GPU. Promotion from
  WARM is a copy of the mapped vectors (plus object construction on the CPU). Devices are the backend's
  :class:`~cuzk.groth16.backend.Device` objects; their ``name`` is what status and logs show.

Budgets: ``hot_budget`` per device, ``warm_budget`` for all cache files. When a promotion would exceed a
budget, least recently used entries that no proof is using (reference count 0) are evicted
(HOT -> WARM drops the resident copy; WARM -> COLD unmaps and deletes the cache file). An SRS in use is
never evicted; if everything resident is in use the promotion goes ahead over budget and the excess is
evicted as soon as the proofs release their references.

Versions (issue 19, key pinning): entries are keyed by ``<circuit id>@<key version>``
(:attr:`Circuit.srs_key`), and a circuit id names its current version. A circuit replaced while jobs
accepted for it are queued or in flight keeps its entry (its jobs acquire it by key) until the engine
unregisters the old version after its last job; then the entry's HOT copies and cache file go. Versions
with the same key share one entry. Preload, evict, tier and metrics address circuits by id (the current
version); status lists every entry with its version.
"""

from __future__ import annotations

import json
import logging
import mmap
import os
import struct
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import CuzkError, curves
from ..curve import points as pts
from ..groth16.backend import Backend, Device
from ..groth16.keys import ProvingKey, VerifyingKey
from ..r1cs.pce import CSR
from .errors import FailedPrecondition, NotFound
from .metrics import Metrics

if TYPE_CHECKING:
    from .registry import Circuit

log = logging.getLogger("cuzk.srs")

HOT, WARM, COLD = 0, 1, 2
TIER_NAMES = {HOT: "HOT", WARM: "WARM", COLD: "COLD"}
MAGIC = b"CUZKSRS1"
_ALIGN = 64


# ---------------------------------------------------------------------------------------------
# the WARM cache file


def write_warm(path: str | Path, pk: ProvingKey, meta: dict[str, Any]) -> int:
    """Write ``pk`` as a cache file (atomically); returns its size."""
    vk = pk.vk
    curve = pk.curve
    arrays: list[tuple[str, Any, str, tuple[int, ...]]] = []
    for name in ("a", "b1", "b2", "l", "h"):
        arrays.append((f"raw.{name}", pk.raw[name], "u1", (len(pk.raw[name]),)))
    g1 = pts.to_lem(curve, 1, [vk.alpha1, vk.beta1, vk.delta1, *vk.ic])
    g2 = pts.to_lem(curve, 2, [vk.beta2, vk.gamma2, vk.delta2])
    arrays.append(("vk.g1", g1, "u1", (len(g1),)))
    arrays.append(("vk.g2", g2, "u1", (len(g2),)))
    ncols: dict[str, int] = {}
    for mname in ("A", "B", "C"):
        m = getattr(pk, mname)
        if m is None:
            continue
        ncols[mname] = m.n_cols
        arrays.append((f"{mname}.row_ptr", np.ascontiguousarray(m.row_ptr, dtype=np.int64), "<i8", m.row_ptr.shape))
        arrays.append((f"{mname}.cols", np.ascontiguousarray(m.cols, dtype=np.uint32), "<u4", m.cols.shape))
        arrays.append((f"{mname}.vals", np.ascontiguousarray(m.vals, dtype=np.uint64), "<u8", m.vals.shape))
    for dname in ("a_aux_density", "b_inp_density", "b_aux_density"):
        d = getattr(pk, dname)
        if d is not None:
            arrays.append((dname, np.ascontiguousarray(d, dtype=np.bool_), "|b1", d.shape))
    layout: dict[str, list[Any]] = {}
    off = 0
    for name, data, dtype, shape in arrays:
        nbytes = memoryview(data).nbytes
        layout[name] = [off, nbytes, dtype, list(shape)]
        off += -(-nbytes // _ALIGN) * _ALIGN
    header = dict(
        meta,
        version=1,
        curve=curve.name,
        style=pk.style,
        n_vars=pk.n_vars,
        n_public=pk.n_public,
        domain_log=pk.domain_log,
        n_ic=len(vk.ic),
        n_cols=ncols,
        arrays=layout,
    )
    hjson = json.dumps(header).encode()
    body_start = -(-(len(MAGIC) + 8 + len(hjson)) // 4096) * 4096
    path = Path(path)
    tmp = path.with_suffix(path.suffix + f".tmp{os.getpid()}")
    with open(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "wb") as fh:  # private (issue 19)
        fh.write(MAGIC + struct.pack("<Q", len(hjson)) + hjson)
        fh.write(b"\0" * (body_start - fh.tell()))
        for name, data, _dtype, _shape in arrays:
            o = body_start + layout[name][0]
            if fh.tell() < o:
                fh.write(b"\0" * (o - fh.tell()))
            fh.write(memoryview(data).cast("B"))
        fh.flush()
        os.fsync(fh.fileno())
        size = fh.tell()
    os.replace(tmp, path)
    return size


def read_warm_header(path: str | Path) -> dict[str, Any] | None:
    try:
        with open(path, "rb") as fh:
            head = fh.read(16)
            if len(head) < 16 or head[:8] != MAGIC:
                return None
            (n,) = struct.unpack("<Q", head[8:])
            header: dict[str, Any] = json.loads(fh.read(n))
            return header
    except (OSError, ValueError):
        return None


def map_warm(path: str | Path) -> tuple[ProvingKey, dict[str, Any]]:
    """A ProvingKey whose vectors and matrices are views of the mapped cache file (no parse, no copy)."""
    path = Path(path)
    with open(path, "rb") as fh:
        mm = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_COPY)  # private, writable views; pages shared until written
    (n,) = struct.unpack("<Q", mm[8:16])
    header: dict[str, Any] = json.loads(bytes(mm[16 : 16 + n]))
    body = -(-(len(MAGIC) + 8 + n) // 4096) * 4096
    mv = memoryview(mm)
    # files from before keys had curves were all BLS12-381 (the only curve cuzk had)
    curve = curves.get(header.get("curve", "bls12_381"))

    def buf(name: str) -> memoryview:
        off, nbytes, _dt, _shape = header["arrays"][name]
        return mv[body + off : body + off + nbytes]

    def arr(name: str) -> np.ndarray:
        off, nbytes, dt, shape = header["arrays"][name]
        a = np.frombuffer(mm, dtype=np.dtype(dt), count=int(np.prod(shape)) if shape else 0, offset=body + off)
        return a.reshape(shape)

    what = f"{path}: verifying key"
    n_ic = header["n_ic"]
    g1 = pts.from_lem(curve, 1, buf("vk.g1"), 3 + n_ic, what)
    g2 = pts.from_lem(curve, 2, buf("vk.g2"), 3, what)
    vk = VerifyingKey(g1[0], g2[0], g2[1], g2[2], g1[3:], beta1=g1[1], delta1=g1[2])
    raw = {name: buf(f"raw.{name}") for name in ("a", "b1", "b2", "l", "h")}
    mats = {}
    for mname, ncols in header["n_cols"].items():
        mats[mname] = CSR(arr(f"{mname}.row_ptr"), arr(f"{mname}.cols"), arr(f"{mname}.vals"), ncols, curve.fr)

    def dens(d: str) -> np.ndarray | None:
        return arr(d) if d in header["arrays"] else None

    pk = ProvingKey(
        header["style"],
        header["n_vars"],
        header["n_public"],
        header["domain_log"],
        vk,
        raw,
        mats["A"],
        mats["B"],
        mats.get("C"),
        a_aux_density=dens("a_aux_density"),
        b_inp_density=dens("b_inp_density"),
        b_aux_density=dens("b_aux_density"),
        source=header.get("source", str(path)),
    )
    pk.keep_alive(mm)  # the mapping lives as long as the key
    return pk, header


# ---------------------------------------------------------------------------------------------
# manager


class Entry:
    """One key in the tiers: its COLD file, its WARM cache file and mapping, its HOT devices. Keyed by
    ``<circuit id>@<key version>`` (:attr:`Circuit.srs_key`): a replaced circuit's old key keeps its own
    entry while jobs accepted for it are proved, beside the new one."""

    def __init__(self, circuit: Circuit) -> None:
        self.circuit = circuit
        self.id = circuit.id
        self.key = circuit.srs_key
        self.version = self.key.partition("@")[2]
        self.key_path = circuit.spec.key_path()
        self.key_format = circuit.spec.key_format()
        self.cold_bytes = os.stat(self.key_path).st_size
        self.source_id = self.version  # the key's contents (the WARM file is built from them)
        self.owners: set[Circuit] = {circuit}  # circuit versions using this key (jobs are bound to them)
        self.pk: ProvingKey | None = None  # WARM (mapped)
        self.warm_path: Path | None = None
        self.warm_bytes = 0
        self.hot: dict[Device, int] = {}  # device -> resident bytes
        self.refs: dict[Device, int] = {}  # device -> proofs using the key there
        self.last_used = 0.0
        self.lock = threading.Lock()  # serializes promotions of this entry
        self.loading = 0
        self.retired = False  # no circuit version uses it: dropped when its last reference goes

    def tier(self) -> int:
        if self.hot:
            return HOT
        if self.pk is not None or (self.warm_path is not None and self.warm_path.exists()):
            return WARM
        return COLD

    def refcount(self) -> int:
        return sum(self.refs.values())


class SrsManager:
    def __init__(
        self,
        cache_dir: str | Path,
        backend: Backend,
        hot_budget: dict[Device, int],
        warm_budget: int,
        metrics: Metrics | None = None,
    ) -> None:
        self.cache_dir = Path(cache_dir)
        self.cache_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.backend = backend  # makes keys resident on its devices (HOT)
        self.hot_budget = dict(hot_budget)
        self.warm_budget = warm_budget
        self.metrics = metrics
        self._lock = threading.RLock()
        self._entries: dict[str, Entry] = {}  # by Entry.key (id@version)
        self._current: dict[str, str] = {}  # circuit id -> the key of its current version

    # -- registry ---------------------------------------------------------------------------------
    def register(self, circuit: Circuit, current: bool = True) -> None:
        """Add the circuit version's key (a version with the same key shares its entry and loaded tiers).
        ``current``: the circuit id names this version from now on (preload, evict, tier, status); a key
        no version uses any more is dropped (its HOT copies and cache file go) once no proof holds it.
        The entries of other versions stay until :meth:`unregister`."""
        new = Entry(circuit)
        path = self.cache_dir / f"{new.id}-{new.source_id}.srs"
        h = read_warm_header(path)
        with self._lock:
            e = self._entries.get(new.key)
            if e is None:
                e = new
                if h is not None and h.get("source_id") == e.source_id:
                    e.warm_path = path
                    e.warm_bytes = path.stat().st_size
                self._entries[e.key] = e
            e.owners.add(circuit)
            e.retired = False
            if current:
                prev = self._current.get(e.id)
                self._current[e.id] = e.key
                if prev is not None and prev != e.key:
                    self._retire(self._entries[prev])
            live = {self.cache_dir / f"{x.id}-{x.source_id}.srs" for x in self._entries.values()}  # (being written too)
        # remove stale cache files of this circuit (older keys no version uses)
        for stale in self.cache_dir.glob(f"{new.id}-*.srs"):
            if stale == path or stale in live:
                continue
            sh = read_warm_header(stale)
            if sh is not None and sh.get("circuit_id") == new.id:
                try:
                    stale.unlink()
                except OSError:
                    pass

    def unregister(self, circuit: Circuit) -> None:
        """The circuit version is gone (replaced, and its last job finished): its key goes with it unless
        another version (the current one among them) uses it; a proof still holding it delays that to its
        release."""
        with self._lock:
            e = self._entries.get(circuit.srs_key)
            if e is None:
                return
            e.owners.discard(circuit)
            if e.circuit is circuit and e.owners:  # not kept alive by its key's entry
                e.circuit = next(iter(e.owners))
            self._retire(e)

    def _retire(self, e: Entry) -> None:
        """Drop ``e`` if no version uses it and it is not current (now, or at its last release). Caller holds
        self._lock."""
        if e.owners or self._current.get(e.id) == e.key:
            return
        e.retired = True
        if e.refcount() or e.loading:
            return
        for dev in list(e.hot):
            self._drop_hot(e, dev, reason="retired")
        if e.warm_path is not None:
            self._drop_warm(e, reason="retired")
        e.pk = None
        self._entries.pop(e.key, None)
        log.info("event=srs_version_dropped circuit=%s version=%s", e.id, e.version)

    def versions(self, cid: str) -> list[str]:
        """The key versions of circuit ``cid`` held (the current one first)."""
        with self._lock:
            cur = self._current.get(cid)
            rest = sorted(k for k, e in self._entries.items() if e.id == cid and k != cur)
            return [k.partition("@")[2] for k in ([cur] if cur else []) + rest]

    def _find(self, name: str) -> Entry | None:
        """The entry ``name`` names: a key (``id@version``) or a circuit id (its current version). Caller
        holds self._lock."""
        key = name if "@" in name else self._current.get(name, "")
        return self._entries.get(key)

    def _entry(self, name: str) -> Entry:
        with self._lock:
            e = self._find(name)
        if e is None:
            raise NotFound(f"unknown circuit {name!r}")
        return e

    def tier(self, name: str) -> int:
        return self._entry(name).tier()

    def resident_devices(self, name: str) -> list[Device]:
        with self._lock:
            e = self._find(name)
            return list(e.hot) if e else []

    # -- budgets ----------------------------------------------------------------------------------
    def _used(self, tier: int, device: Device | None = None) -> int:
        """Bytes in ``tier`` (HOT: on ``device``, or on all devices when None). Caller holds self._lock."""
        if tier == HOT:
            return sum((e.hot.get(device, 0) if device is not None else sum(e.hot.values())) for e in self._entries.values())
        return sum(e.warm_bytes for e in self._entries.values() if e.warm_path is not None)

    def hot_used(self, device: Device) -> int:
        with self._lock:
            return self._used(HOT, device)

    def _evict_hot_for(self, device: Device, need: int, exclude: Entry | None) -> None:
        budget = self.hot_budget.get(device)
        if budget is None:
            return
        while True:
            with self._lock:
                used = self._used(HOT, device)
                if used + need <= budget:
                    return
                cands = [
                    e
                    for e in self._entries.values()
                    if e is not exclude and device in e.hot and not e.refs.get(device) and not e.loading
                ]
                if not cands:
                    if need:
                        log.warning(
                            "event=srs_over_budget tier=HOT device=%s used=%d need=%d budget=%d (all in use)",
                            device.name,
                            used,
                            need,
                            budget,
                        )
                    return
                victim = min(cands, key=lambda e: e.last_used)
                self._drop_hot(victim, device, reason="budget")

    def _evict_warm_for(self, need: int, exclude: Entry | None) -> None:
        while True:
            with self._lock:
                used = self._used(WARM)
                if used + need <= self.warm_budget:
                    return
                cands = [
                    e
                    for e in self._entries.values()
                    if e is not exclude and e.warm_path is not None and not e.hot and not e.refcount() and not e.loading
                ]
                if not cands:
                    if need:
                        log.warning("event=srs_over_budget tier=WARM used=%d need=%d budget=%d", used, need, self.warm_budget)
                    return
                victim = min(cands, key=lambda e: e.last_used)
                self._drop_warm(victim, reason="budget")

    def _drop_hot(self, e: Entry, device: Device, reason: str) -> int:
        """Caller holds self._lock; the entry has no reference on ``device``."""
        freed = e.hot.pop(device, 0)
        if e.pk is not None:
            # the backend frees its copy for the device (the CPU backend's shared copy goes with its last
            # device); the mapped vectors of the WARM key stay
            self.backend.evict_key(e.pk, device)
        if self.metrics:
            self.metrics.srs_evictions.labels(tier="HOT", reason=reason).inc()
        log.info("event=srs_evict circuit=%s from=HOT device=%s bytes=%d reason=%s", e.id, device.name, freed, reason)
        return freed

    def _drop_warm(self, e: Entry, reason: str) -> int:
        freed = e.warm_bytes
        e.pk = None  # the mapping closes with the key's last reference
        if e.warm_path is not None:
            try:
                e.warm_path.unlink()
            except OSError:
                pass
        e.warm_path = None
        e.warm_bytes = 0
        if self.metrics:
            self.metrics.srs_evictions.labels(tier="WARM", reason=reason).inc()
        log.info("event=srs_evict circuit=%s from=WARM bytes=%d reason=%s", e.id, freed, reason)
        return freed

    # -- promotion --------------------------------------------------------------------------------
    def _ensure_warm(self, e: Entry) -> ProvingKey:
        """Caller holds e.lock."""
        if e.pk is not None:
            return e.pk
        t0 = time.perf_counter()
        src = "WARM"
        if e.warm_path is None or not e.warm_path.exists():
            src = "COLD"
            pk = self._parse_cold(e)
            path = self.cache_dir / f"{e.id}-{e.source_id}.srs"
            est = pk.raw_bytes() + sum(m.memory_bytes() for m in (pk.A, pk.B, pk.C) if m is not None)
            self._evict_warm_for(est, e)
            size = write_warm(path, pk, {"circuit_id": e.id, "source": e.key_path, "source_id": e.source_id})
            del pk
            with self._lock:
                e.warm_path, e.warm_bytes = path, size
        pk, _hdr = map_warm(e.warm_path)
        with self._lock:
            e.pk = pk
        if self.metrics:
            self.metrics.srs_loads.labels(tier="WARM", source=src).inc()
        log.info(
            "event=srs_load circuit=%s to=WARM from=%s ms=%.1f bytes=%d",
            e.id,
            src,
            (time.perf_counter() - t0) * 1e3,
            e.warm_bytes,
        )
        return pk

    def _parse_cold(self, e: Entry) -> ProvingKey:
        changed = e.circuit.key_unchanged()  # the file is read now: it must still be this version's key
        if changed:
            raise FailedPrecondition(f"circuit {e.id!r} (key version {e.version}): {changed}")
        try:
            if e.key_format == "zkey":
                from ..groth16.zkey import read_zkey

                return read_zkey(e.key_path)
            from ..groth16.params import read_params

            return read_params(e.key_path, e.circuit.pce)
        except (CuzkError, OSError, ValueError) as err:  # the key file is missing or corrupt: not the caller's fault
            why = f"{err.filename}: {err.strerror}" if isinstance(err, OSError) and err.strerror else str(err)
            raise FailedPrecondition(f"circuit {e.id!r}: cannot load its proving key: {why}") from None

    def _promote_hot(self, e: Entry, pk: ProvingKey, device: Device) -> int:
        """Make room within the device's budget, then make the key resident there; its resident bytes."""
        self._evict_hot_for(device, self.backend.resident_bytes_estimate(pk), e)
        with self.backend.use(device):
            return self.backend.load_key(pk, device)

    def acquire(self, name: str, device: Device) -> tuple[ProvingKey, float, int]:
        """Make the key ``name`` (a circuit version's ``srs_key``, or a circuit id: its current version) HOT
        on ``device`` and take a reference. Returns (key, load ms, tier before)."""
        e = self._entry(name)
        t0 = time.perf_counter()
        with self._lock:
            e.loading += 1
        try:
            with e.lock:
                prev = e.tier() if device not in e.hot else HOT
                if device not in e.hot:
                    pk = self._ensure_warm(e)
                    t1 = time.perf_counter()
                    nbytes = self._promote_hot(e, pk, device)
                    with self._lock:
                        e.hot[device] = nbytes
                    if self.metrics:
                        self.metrics.srs_loads.labels(tier="HOT", source=TIER_NAMES[prev]).inc()
                    log.info(
                        "event=srs_load circuit=%s to=HOT device=%s from=%s ms=%.1f bytes=%d",
                        e.id,
                        device.name,
                        TIER_NAMES[prev],
                        (time.perf_counter() - t1) * 1e3,
                        nbytes,
                    )
                with self._lock:
                    e.refs[device] = e.refs.get(device, 0) + 1
                    e.last_used = time.monotonic()
                    assert e.pk is not None  # made WARM above, and referenced now: eviction skips it
                    pk = e.pk
        finally:
            with self._lock:
                e.loading -= 1
                if e.retired:
                    self._retire(e)
        return pk, (time.perf_counter() - t0) * 1e3, prev

    def release(self, name: str, device: Device) -> None:
        with self._lock:
            e = self._find(name)
            if e is None:
                return
            n = e.refs.get(device, 0) - 1
            if n <= 0:
                e.refs.pop(device, None)
            else:
                e.refs[device] = n
            e.last_used = time.monotonic()
            if e.retired:
                self._retire(e)
        self._evict_hot_for(device, 0, None)

    def preload(self, cid: str, device: Device) -> tuple[bool, float, int]:
        """(already HOT, ms, tier before)."""
        e = self._entry(cid)
        already = device in e.hot
        pk, ms, prev = self.acquire(e.key, device)
        self.release(e.key, device)
        return already, ms, prev

    def evict(self, cid: str, to_tier: int = WARM) -> tuple[bool, int, int]:
        """(was loaded above ``to_tier``, bytes freed, tier after). Refuses while a proof holds a reference."""
        e = self._entry(cid)
        to_tier = WARM if to_tier == HOT else to_tier
        with e.lock, self._lock:
            if e.refcount():
                raise FailedPrecondition(
                    f"circuit {cid!r}: its SRS is in use by {e.refcount()} proof(s); try again when they finish"
                )
            was = e.tier() < to_tier
            freed = 0
            for dev in list(e.hot):
                freed += self._drop_hot(e, dev, reason="rpc")
            if to_tier == COLD and e.warm_path is not None:
                freed += self._drop_warm(e, reason="rpc")
            return was, freed, e.tier()

    # -- status -----------------------------------------------------------------------------------
    def status(self) -> list[dict[str, Any]]:
        now = time.monotonic()
        out = []
        with self._lock:
            for e in self._entries.values():
                t = e.tier()
                hot = sum(e.hot.values())
                size = hot if t == HOT else (e.warm_bytes if t == WARM else e.cold_bytes)
                out.append(
                    {
                        "circuit_id": e.id,
                        "version": e.version,
                        "current": self._current.get(e.id) == e.key,
                        "tier": TIER_NAMES[t],
                        "tier_code": t,
                        "size_bytes": size,
                        "ref_count": e.refcount(),
                        "hot_bytes": hot,
                        "warm_bytes": e.warm_bytes,
                        "cold_bytes": e.cold_bytes,
                        "hot_devices": sorted(d.name for d in e.hot),
                        "last_used_secs_ago": (now - e.last_used) if e.last_used else -1.0,
                    }
                )
        return out

    def totals(self) -> dict[str, int]:
        with self._lock:
            return {"HOT": self._used(HOT), "WARM": self._used(WARM)}

    def budgets(self) -> dict[str, object]:
        """{"hot": {device name: bytes}, "warm": bytes}."""
        return {"hot": {d.name: b for d, b in self.hot_budget.items()}, "warm": self.warm_budget}
