"""Python circuits: the base class, specs that name them, and recordings cached on disk.

A circuit is a subclass of :class:`Circuit` with a ``synthesize(cs, inputs)`` method written against
:mod:`cuzk.circuit.cs`; its constructor takes the circuit's parameters (sizes: the topology), the
per-proof ``inputs`` come from a JSON object (``None`` while recording). A spec
``"package.module:ClassName"`` plus a parameter object names a circuit in the CLI, the daemon's config
and RegisterCircuit.

Recording (the constraints, as the pre-compiled evaluator) runs once per topology and is cached under
``$CUZK_CACHE_DIR/circuits`` keyed by a SHA-256 of the class's name, the source of its module and of the
modules beside it, the source of cuzk's constraint-system and gadget modules, the parameters and the
curve: an edited circuit or gadget can never reuse a stale recording (the original daemon lost hours to a
stale build cache).
"""

from __future__ import annotations

import hashlib
import importlib
import inspect
import json
import logging
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .. import CuzkError, __version__, curves
from ..curves import Curve
from ..r1cs.pce import PCE, IndexedCSR
from .cs import ConstraintSystem, Layout, RecordingCS, TestCS, WitnessCS, configure_switches, configured_switches

log = logging.getLogger("cuzk.circuit")


class CircuitError(CuzkError):
    """A circuit spec that does not load, or inputs the circuit refuses."""


def field_element(x: Any, where: str, below: int) -> int:
    """An input given as a decimal / 0x string or an integer, in [0, below): the one reader of field
    elements in circuits' JSON inputs (CircuitError naming ``where`` otherwise; long strings refused
    before they are parsed)."""
    if isinstance(x, bool) or not isinstance(x, (int, str)):
        raise CircuitError(f"{where}: expected a field element (decimal string), got {type(x).__name__}")
    if isinstance(x, str):
        if len(x) > 80:
            raise CircuitError(f"{where}: {len(x)} characters is too long for a field element")
        try:
            x = int(x, 0)
        except ValueError:
            raise CircuitError(f"{where}: {x!r} is not an integer") from None
    if not 0 <= x < below:
        raise CircuitError(f"{where}: out of range")
    return x


class Circuit:
    """Subclass and define :meth:`synthesize`; keep every topology-changing parameter in ``params``."""

    curve: str = "bls12_381"  # the curve name (cuzk.curves)

    def __init__(self, **params: Any):
        self.params = params

    def synthesize(self, cs: ConstraintSystem, inputs: Any) -> None:
        raise NotImplementedError

    def parse_inputs(self, obj: Any) -> Any:
        """The JSON inputs of one proof as :meth:`synthesize` wants them (default: as they are); raise
        CircuitError with a one-line message for bad inputs."""
        return obj

    def parse_binary(self, data: bytes, partition: int = 0) -> Any:
        """Partition ``partition``'s inputs given as bytes (a request's ``vanilla_proof``) as the JSON
        object :meth:`parse_inputs` takes; circuits with a binary input format override this (a format
        holding every partition, such as Filecoin's commit-phase-1 output, is read for the one named)."""
        raise CircuitError(f"{type(self).__name__} takes no binary inputs; send inputs_json")

    def partition_inputs(self, obj: Any) -> list[Any]:
        """A request's inputs split per partition (a multi-partition circuit proves them in one request):
        by default a JSON array is one input object per partition, anything else one partition."""
        return list(obj) if isinstance(obj, list) else [obj]

    def sample_inputs(self, seed: int = 0) -> Any:
        """Valid random inputs of one request (JSON-ready), for demos, tests and ``cuzk-bench synth``;
        circuits that can make them override this."""
        raise CircuitError(f"{type(self).__name__} cannot make sample inputs")

    def split_units(self) -> int:
        """How many independent units (PoRep's challenges) the circuit batches, for a witness computed in
        parts (:mod:`cuzk.circuit.split`); 0 (the default): it cannot be split."""
        return 0

    def split(self, inputs: Any, lo: int, hi: int) -> tuple[Any, dict[str, Any]]:
        """The JSON inputs and the parameters of the same circuit class proving units ``[lo, hi)`` only:
        its allocations must be this circuit's with the per-unit blocks' leading dimension made
        ``hi - lo`` (checked, :mod:`cuzk.circuit.split`), and ``parse_inputs`` of the parts must accept
        exactly when ``parse_inputs`` of the whole does. CircuitError for inputs that cannot be split (the
        message ``parse_inputs`` would give)."""
        raise CircuitError(f"{type(self).__name__} cannot be split")

    @property
    def curve_(self) -> Curve:
        return curves.get(self.curve)


@dataclass(frozen=True)
class CircuitSpec:
    target: str  # "package.module:ClassName"
    params: tuple[tuple[str, Any], ...] = ()

    @staticmethod
    def parse(target: str, params: Any = None) -> CircuitSpec:
        if isinstance(params, str):
            try:
                params = json.loads(params) if params.strip() else {}
            except json.JSONDecodeError as e:
                raise CircuitError(f"circuit {target}: parameters are not valid JSON: {e.msg}") from None
        if params is None:
            params = {}
        if not isinstance(params, dict):
            raise CircuitError(f"circuit {target}: parameters must be a JSON object, got {type(params).__name__}")
        return CircuitSpec(target, tuple(sorted(params.items())))

    def load(self) -> Circuit:
        mod_name, sep, cls_name = self.target.partition(":")
        if not sep or not mod_name or not cls_name:
            raise CircuitError(f"circuit spec {self.target!r}: expected package.module:ClassName")
        try:
            mod = importlib.import_module(mod_name)
        except ImportError as e:
            raise CircuitError(f"circuit spec {self.target!r}: cannot import {mod_name}: {e}") from None
        cls = getattr(mod, cls_name, None)
        if not (isinstance(cls, type) and issubclass(cls, Circuit)):
            raise CircuitError(f"circuit spec {self.target!r}: {cls_name} is not a cuzk.circuit.Circuit subclass in {mod_name}")
        try:
            return cls(**dict(self.params))
        except TypeError as e:
            raise CircuitError(f"circuit spec {self.target!r}: bad parameters: {e}") from None


def looks_like_spec(arg: str) -> bool:
    """A command-line argument naming a Python circuit rather than a file."""
    return ":" in arg and not os.path.exists(arg) and "/" not in arg.split(":", 1)[0]


# ---------------------------------------------------------------------------------------------
# recordings


@dataclass
class Recording:
    pce: PCE
    layout: Layout
    key: str
    cached: bool = False  # loaded from the disk cache


def _sources(circuit: Circuit) -> list[str]:
    """Every source file a recording depends on: the circuit's module and its siblings, and cuzk's
    constraint-system and gadget modules."""
    files: set[Path] = set()
    mod_file = inspect.getsourcefile(type(circuit))
    if mod_file:
        p = Path(mod_file).resolve()
        files.update(p.parent.glob("*.py"))
    here = Path(__file__).resolve().parent
    files.update(here.rglob("*.py"))
    return sorted(str(f) for f in files)


# the on-disk form of a recording, part of its key (and of its meta, checked on load): 2 = a coefficient
# index per non-zero and one table of coefficients (1, before: 32-byte values per non-zero)
RECORDING_FORMAT = 2


def recording_key(circuit: Circuit) -> str:
    h = hashlib.sha256()
    h.update(
        f"{type(circuit).__module__}:{type(circuit).__qualname__}\0{circuit.curve}\0{__version__}\0"
        f"format {RECORDING_FORMAT}\0".encode()
    )
    h.update(json.dumps(circuit.params, sort_keys=True, default=str).encode() + b"\0")
    for f in _sources(circuit):
        h.update(f.encode() + b"\0")
        h.update(Path(f).read_bytes())
        h.update(b"\0")
    return h.hexdigest()[:32]


def cache_dir() -> Path:
    root = os.environ.get("CUZK_CACHE_DIR")
    return (Path(root) if root else Path.home() / ".cache" / "cuzk") / "circuits"


_lock = threading.Lock()


def record(circuit: Circuit, cache: bool | Path = True) -> Recording:
    """The circuit's constraints as the prover's evaluator: from the disk cache, or recorded now."""
    curve = circuit.curve_
    key = recording_key(circuit)
    folder = (cache if isinstance(cache, Path) else cache_dir()) if cache else None
    path = folder / f"{key}.npz" if folder else None
    if path is not None and path.exists():
        try:
            return _load(path, curve, key)
        except (OSError, ValueError, KeyError):
            pass  # a damaged cache file: record again and replace it
    cs = RecordingCS(curve)
    circuit.synthesize(cs, None)
    pce = cs.finish()
    rec = Recording(pce, cs.layout(), key)
    if path is not None:
        with _lock:
            _save(path, rec)
    return rec


def _save(path: Path, rec: Recording) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    arrays: dict[str, np.ndarray] = {}
    for name, m in (("A", rec.pce.A), ("B", rec.pce.B), ("C", rec.pce.C)):
        if not isinstance(m, IndexedCSR) or ("table" in arrays and m.table is not arrays["table"]):
            raise TypeError("a recording's matrices are IndexedCSRs sharing one coefficient table")
        arrays[f"{name}_row_ptr"], arrays[f"{name}_cols"], arrays[f"{name}_coef"] = m.row_ptr, m.cols, m.coef
        arrays["table"] = m.table
    meta = {
        "format": RECORDING_FORMAT,
        "n_inputs": rec.layout.n_inputs,
        "n_aux": rec.layout.n_aux,
        "n_constraints": rec.layout.n_constraints,
    }
    arrays["meta"] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
    tmp = path.with_suffix(f".tmp{os.getpid()}.npz")
    np.savez(tmp, **arrays)
    os.replace(tmp, path)


def _load(path: Path, curve: Curve, key: str) -> Recording:
    with np.load(path) as z:
        meta = json.loads(bytes(z["meta"]).decode())
        if meta.get("format") != RECORDING_FORMAT:
            raise ValueError(f"{path}: recording format {meta.get('format')}, expected {RECORDING_FORMAT}")
        layout = Layout(meta["n_inputs"], meta["n_aux"], meta["n_constraints"])
        table = z["table"]
        mats = [IndexedCSR(z[f"{m}_row_ptr"], z[f"{m}_cols"], z[f"{m}_coef"], table, layout.n_wires, curve.fr) for m in "ABC"]
    pce = PCE(*mats, n_wires=layout.n_wires, n_public=layout.n_inputs - 1, field=curve.fr)
    return Recording(pce, layout, key, cached=True)


# ---------------------------------------------------------------------------------------------
# witnesses


def witness(circuit: Circuit, inputs: Any, layout: Layout | None = None) -> np.ndarray:
    """The Montgomery witness of one proof (ONE, public inputs, private variables) from its JSON inputs."""
    cs = WitnessCS(circuit.curve_, layout)
    circuit.synthesize(cs, circuit.parse_inputs(inputs))
    return cs.witness()


def check(circuit: Circuit, inputs: Any) -> str | None:
    """None when the JSON inputs satisfy every constraint, else the first unsatisfied one, by namespace path."""
    cs = TestCS(circuit.curve_)
    circuit.synthesize(cs, circuit.parse_inputs(inputs))
    return cs.which_is_unsatisfied()


# ---------------------------------------------------------------------------------------------
# witnesses in worker processes


def layout_of(circuit: Circuit, cache: bool | Path = True) -> Layout:
    """The recording's layout, read from the disk cache without loading the matrices (recorded first
    when missing)."""
    folder = (cache if isinstance(cache, Path) else cache_dir()) if cache else None
    if folder is not None:
        path = folder / f"{recording_key(circuit)}.npz"
        try:
            with np.load(path) as z:  # an npz member is read on access: only the small meta member here
                meta = json.loads(bytes(z["meta"]).decode())
            return Layout(meta["n_inputs"], meta["n_aux"], meta["n_constraints"])
        except (OSError, ValueError, KeyError):
            pass
    return record(circuit, cache).layout


_worker: tuple[Circuit, Layout] | None = None
_worker_blocks: list[Any] | None = None  # the circuit's allocation blocks (cuzk.circuit.split), made on first use


def _worker_init(
    target: str, params: dict[str, Any], threads: int, cache_root: str | None, switches: dict[str, str] | None = None
) -> None:
    global _worker
    if cache_root:
        os.environ["CUZK_CACHE_DIR"] = cache_root
    if switches:  # the parent's configured synthesis switches (its environment's overrides are inherited)
        configure_switches(switches)
    import numba

    numba.set_num_threads(max(1, min(threads, numba.config.NUMBA_NUM_THREADS)))
    circuit = CircuitSpec.parse(target, params).load()
    _worker = (circuit, layout_of(circuit))


def _worker_witness(inputs: Any) -> np.ndarray:
    assert _worker is not None
    circuit, layout = _worker
    return witness(circuit, inputs, layout)


def _worker_part(
    sub_inputs: Any, sub_params: dict[str, Any], lo: int, hi: int, target: tuple[int, int, int], with_globals: bool
) -> str:
    """Units [lo, hi) of one witness computed here and written into the shared witness ``target``; the
    digest of the part's global values."""
    global _worker_blocks
    from .split import alloc_blocks, check_blocks, compute_part, open_shared, write_part

    assert _worker is not None
    circuit, layout = _worker
    if _worker_blocks is None:
        blocks = alloc_blocks(circuit)
        check_blocks(blocks, layout)
        _worker_blocks = blocks
    cs, runs = compute_part(circuit, _worker_blocks, layout, sub_inputs, sub_params, lo, hi)
    mm, out = open_shared(target)
    try:
        return write_part(out, cs, runs, with_globals)
    finally:
        del out
        try:
            mm.close()
        except BufferError:  # a traceback still holds the array: the mapping goes with it
            pass


def _worker_check(sub_inputs: Any, sub_params: dict[str, Any]) -> None:
    """``parse_inputs`` of one part's inputs (its checks) in the circuit of that part."""
    assert _worker is not None
    type(_worker[0])(**sub_params).parse_inputs(sub_inputs)


class WitnessPool:
    """Witnesses of one Python circuit computed in ``processes`` worker processes.

    A Python circuit's witness is one Python thread issuing numpy calls: threads share the GIL, so the
    daemon's synthesis threads could not use more than one core for such circuits. The workers are spawned
    (not forked: the parent has numba and gRPC threads), load the circuit once, and read the recording's
    layout from the disk cache. Errors raised by the circuit come back as the same exception type.

    :meth:`submit` computes a whole witness in one worker; it comes back pickled through a pipe (32 bytes
    per wire: ~0.3 s for 2^24 wires). :meth:`witness` does the same unless the circuit splits
    (:meth:`Circuit.split_units`, :mod:`cuzk.circuit.split`) and there are two workers or more: then one
    witness is computed in parts, a range of units per worker, each writing its part straight into one
    shared buffer (no copy back), so one partition uses every worker; several witnesses in flight share
    the workers (:meth:`parts_for`: each part repeats the circuit's fixed per-call cost, so a loaded pool
    computes witnesses whole). A circuit whose allocations turn out not to split
    (:class:`~cuzk.circuit.split.SplitError`) is logged once and computed whole from then on. :meth:`check` runs the circuit's input checks (``parse_inputs``; PoRep's native opening checks)
    in parts the same way.
    """

    def __init__(self, spec: CircuitSpec, processes: int, threads_per_process: int = 1):
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        self.spec = spec
        self.processes = max(1, processes)
        root = os.environ.get("CUZK_CACHE_DIR")
        self._pool = ProcessPoolExecutor(
            self.processes,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=_worker_init,
            initargs=(spec.target, dict(spec.params), threads_per_process, root, configured_switches()),
        )
        self._circuit: Circuit | None = None
        self._layout: Layout | None = None
        self._lock = threading.Lock()
        self.split_refused: str | None = None  # why this circuit's witnesses are computed whole
        self._in_flight = 0  # witness() calls in progress

    def submit(self, inputs: Any) -> Any:
        """A future of the witness of one proof's JSON inputs (computed whole, in one worker)."""
        return self._pool.submit(_worker_witness, inputs)

    def _parent(self) -> tuple[Circuit, Layout]:
        with self._lock:
            if self._circuit is None or self._layout is None:
                circuit = self.spec.load()
                self._layout = layout_of(circuit)
                self._circuit = circuit
            return self._circuit, self._layout

    def splits(self) -> bool:
        """Whether :meth:`witness` and :meth:`check` work in parts."""
        return self.processes > 1 and self.split_refused is None and self._parent()[0].split_units() > 1

    def _parts(self, inputs: Any, parts: int = 0) -> list[tuple[int, int, Any, dict[str, Any]]]:
        from .split import split_ranges

        circuit = self._parent()[0]
        ranges = split_ranges(circuit.split_units(), parts or self.processes)
        return [(lo, hi, *circuit.split(inputs, lo, hi)) for lo, hi in ranges]

    def parts_for(self, in_flight: int) -> int:
        """Parts per witness while ``in_flight`` witnesses (this one included) are being computed: the
        processes shared among them. Each part repeats the circuit's fixed per-call Python cost (every
        gadget call is made once per part, whatever its size), so one witness alone takes every process
        (latency) and many at once are computed whole, one per process (no repeated cost: throughput)."""
        return max(1, self.processes // max(1, in_flight))

    @staticmethod
    def _gather(futures: list[Any]) -> list[Any]:
        """Every future's result once all are done (none still writes), or the first range's error."""
        from concurrent.futures import wait

        wait(futures)
        return [f.result() for f in futures]

    def split_witness(self, inputs: Any, parts: int = 0) -> np.ndarray:
        """The witness computed in ``parts`` parts (default: one per process) by the workers (SplitError
        if the circuit does not split)."""
        from .split import SharedWitness, SplitError, same_globals

        circuit, layout = self._parent()
        parts = min(parts or self.processes, circuit.split_units())
        if parts < 2:
            raise SplitError(f"{type(circuit).__name__}: {circuit.split_units()} units in {parts} part: nothing to split")
        with SharedWitness(layout.n_wires) as buf:
            futures = [
                self._pool.submit(_worker_part, si, sp, lo, hi, buf.ref, lo == 0) for lo, hi, si, sp in self._parts(inputs, parts)
            ]
            same_globals(self._gather(futures))
            return buf.array()

    def witness(self, inputs: Any) -> np.ndarray:
        """One witness: in parts when the circuit splits (as many as :meth:`parts_for` gives while other
        witnesses are in flight), else whole in one worker."""
        with self._lock:
            self._in_flight += 1
            parts = self.parts_for(self._in_flight)
        try:
            if parts >= 2 and self.splits():
                from .split import SplitError

                try:
                    return self.split_witness(inputs, parts)
                except (SplitError, OSError) as e:  # the circuit does not split (or no shared buffer): whole from now on
                    self.split_refused = f"{type(e).__name__}: {e}"
                    log.warning("event=split_witness_refused circuit=%s reason=%s", self.spec.target, self.split_refused)
            w: np.ndarray = self.submit(inputs).result()
            return w
        finally:
            with self._lock:
                self._in_flight -= 1

    def check(self, inputs: Any) -> None:
        """The circuit's ``parse_inputs`` of the inputs (CircuitError if it refuses them): in parts in the
        workers when the circuit splits, else in this thread."""
        if not self.splits():
            self._parent()[0].parse_inputs(inputs)
            return
        self._gather([self._pool.submit(_worker_check, si, sp) for _, _, si, sp in self._parts(inputs)])

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)
