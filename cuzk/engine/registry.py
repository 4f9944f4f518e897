"""Circuit registry: what a request's ``circuit_id`` names.

A circuit is its R1CS (the PCE: constraint checks, and the wire densities bellperson keys need), its
proving key (snarkjs .zkey or bellperson .params; the SRS manager owns the loaded forms), and optionally
the circom witness generator (wasm) and signal names (sym). Registration checks the files and that the
key belongs to the circuit (curve, wire and public-signal counts), so a mismatch is reported at once
rather than on the first proof.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import queue
import struct
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import CuzkError, curves
from ..curves import Curve
from ..r1cs.binfile import Reader, open_binfile
from ..r1cs.witness import WitnessCalculator
from .config import CircuitConfig
from .errors import EngineError, InvalidArgument

if TYPE_CHECKING:
    from ..circuit.circuit import Circuit as PyCircuit
    from ..circuit.circuit import WitnessPool
    from ..circuit.cs import Layout

log = logging.getLogger("cuzk.engine")


PATH_KEYS = ("r1cs", "zkey", "params", "wasm", "sym")


class PermissionDenied(EngineError):
    """A RegisterCircuit request names a file or module the registration policy does not allow."""

    code = "PERMISSION_DENIED"


def _under(path: str, root: str) -> bool:
    root = root.rstrip(os.sep) or os.sep
    return path == root or path.startswith(root if root == os.sep else root + os.sep)


def check_under_roots(given: str, roots: list[str], field: str, setting: str) -> str:
    """``given`` resolved (symlinks), if it lies under one of ``roots`` and has no ".." component;
    PermissionDenied naming the field, the path and the setting otherwise."""
    if ".." in given.replace("\\", "/").split("/"):
        raise PermissionDenied(f"{field}: {given}: a path with a '..' component is refused")
    if not roots:
        raise PermissionDenied(f"{field}: {given}: no server-side file may be named ({setting} is empty)")
    resolved = os.path.realpath(given)
    if not any(_under(resolved, os.path.realpath(r)) for r in roots):
        shown = given if resolved == given else f"{given} (resolved: {resolved})"
        raise PermissionDenied(f"{field}: {shown} is outside the allowed folders ({setting}: {', '.join(roots)})")
    return resolved


def module_allowed(module: str, prefixes: list[str]) -> bool:
    """``module`` matches a prefix ending in "." (its submodules) or names the prefix's module or one of
    its submodules."""
    for p in prefixes:
        if p.endswith("."):
            if module.startswith(p):
                return True
        elif module == p or module.startswith(p + "."):
            return True
    return False


def check_registration(raw: dict[str, Any], cc: CircuitConfig, roots: list[str], python_modules: list[str]) -> None:
    """The policy for circuits registered by RPC (untrusted; config-file circuits are not checked): each
    file the request names must lie under one of ``roots`` once symlinks are resolved, and a path with a
    ".." component is refused before resolving; a Python circuit's module must match ``python_modules``.
    Messages name the path and the roots, never a file's contents."""
    where = f"circuit {cc.id!r}"
    for k in PATH_KEYS:
        given = raw.get(k)
        if not given or not isinstance(given, str):
            continue
        if ".." in given.replace("\\", "/").split("/"):
            raise PermissionDenied(f"{where}.{k}: {given}: a path with a '..' component is refused")
        if not roots:
            raise PermissionDenied(
                f"{where}.{k}: {given}: RegisterCircuit may not name server-side files "
                "(registration.roots is empty: the daemon's operator lists the allowed folders there)"
            )
        resolved = os.path.realpath(getattr(cc, k))
        if not any(_under(resolved, os.path.realpath(r)) for r in roots):
            shown = given if resolved == given else f"{given} (resolved: {resolved})"
            raise PermissionDenied(
                f"{where}.{k}: {shown} is outside the allowed folders (registration.roots: {', '.join(roots)})"
            )
    if cc.python:
        module = cc.python.partition(":")[0]
        if not module_allowed(module, python_modules):
            raise PermissionDenied(
                f"{where}.python: module {module!r} is not allowed for RegisterCircuit "
                f"(registration.python_modules: {', '.join(python_modules) or 'none'})"
            )


def sha256_file(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 22):
            h.update(chunk)
    return h.hexdigest()


def file_stamp(st: os.stat_result) -> str:
    """What identifies a file's contents without reading them: a write changes the size, the mtime or the
    ctime (which no one can set back), a replacement the inode."""
    return f"{st.st_dev}:{st.st_ino}:{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}"


class FileHasher:
    """SHA-256 of files, remembered by :func:`file_stamp`: a file is read again only when it changed.
    ``load(path, stamp)`` / ``save(path, stamp, sha256)`` persist what is known (the engine keeps it in the
    journal, so a restart does not hash every key again)."""

    def __init__(
        self,
        load: Callable[[str, str], str | None] | None = None,
        save: Callable[[str, str, str], None] | None = None,
    ) -> None:
        self._known: dict[tuple[str, str], str] = {}
        self._lock = threading.Lock()
        self._load, self._save = load, save

    def remember(self, path: str, sha256: str) -> None:
        """``path`` (as it is now) holds contents of this SHA-256 (a file the caller has just written)."""
        real = os.path.realpath(path)
        stamp = file_stamp(os.stat(real))
        with self._lock:
            self._known[(real, stamp)] = sha256
        if self._save is not None:
            self._save(real, stamp, sha256)

    def __call__(self, path: str) -> str:
        """The file's SHA-256 (hex); OSError if it cannot be read."""
        real = os.path.realpath(path)
        stamp = file_stamp(os.stat(real))
        with self._lock:
            h = self._known.get((real, stamp))
        if h is None and self._load is not None:
            h = self._load(real, stamp)
        if h is None:
            h = sha256_file(real)
            if file_stamp(os.stat(real)) != stamp:  # written to while it was read: whatever it is now is unknown
                raise OSError(f"{real} changed while it was read")
            if self._save is not None:
                self._save(real, stamp, h)
        with self._lock:
            self._known[(real, stamp)] = h
        return h


DEFAULT_HASHER = FileHasher()

# the files whose contents make a circuit version (what a job is proved with); sym only names signals
VERSION_FILES = ("r1cs", "zkey", "params", "wasm")


def _exists(path: str, what: str, where: str) -> None:
    if not path:
        return
    if not os.path.isfile(path):
        raise InvalidArgument(f"{where}.{what}: {path}: no such file")


class Circuit:
    """A registered circuit: its R1CS, its key's header facts, its witness calculators."""

    def __init__(
        self,
        spec: CircuitConfig,
        source: str = "config",
        calculators: int = 2,
        python_processes: int = 0,
        hasher: FileHasher | None = None,
    ) -> None:
        self.spec = spec
        self.id = spec.id
        self.source = source
        where = f"circuit {spec.id!r}"
        for k in ("r1cs", "zkey", "params", "wasm", "sym"):
            _exists(getattr(spec, k), k, where)
        self.python: PyCircuit | None = None
        self.layout: Layout | None = None
        self._python_processes = python_processes
        self._pool: WitnessPool | None = None
        self._pool_lock = threading.Lock()
        self._partitions = max(1, spec.partitions)
        if spec.python:
            self._record_python(where)
        else:
            from ..r1cs.r1cs import read_r1cs

            try:
                r1cs = read_r1cs(spec.r1cs)
            except CuzkError as e:
                raise InvalidArgument(f"{where}.r1cs: {e}") from None
            self.pce = r1cs.pce
            self.curve: Curve = r1cs.curve
            self.n_wires = r1cs.n_wires
            self.n_public = r1cs.n_public
            self.n_constraints = r1cs.n_constraints
        self.domain_log = self._check_key(where)
        self.hasher = hasher or DEFAULT_HASHER
        self.file_hashes = self._hash_files(where)
        self.key_hash = self.file_hashes[spec.key_format()]
        self.version = self._version()
        self.srs_key = f"{self.id}@{self._srs_version()}"
        self._names: dict[int, str] | None = None
        self._names_lock = threading.Lock()
        self._calc_max = max(1, calculators)
        self._calc_made = 0
        self._calcs: queue.Queue[WitnessCalculator] = queue.Queue()
        self._calc_lock = threading.Lock()
        if spec.wasm:
            self._put_calc(self._new_calc())  # compile now: a bad wasm is a registration error

    def _record_python(self, where: str) -> None:
        """A Python circuit: load the class, and its recording (from the disk cache when the circuit's
        sources and parameters are unchanged) is the evaluator."""
        from ..circuit.circuit import CircuitSpec, record

        try:
            self.python = CircuitSpec.parse(self.spec.python, self.spec.python_params).load()
            self.curve = self.python.curve_
            rec = record(self.python)
        except CuzkError as e:
            raise InvalidArgument(f"{where}.python: {e}") from None
        except Exception as e:  # the circuit's own code failed while recording
            log.warning("event=python_circuit_record_failed circuit=%s", self.spec.id, exc_info=True)
            raise InvalidArgument(f"{where}.python: {self.spec.python} failed to record: {type(e).__name__}: {e}") from None
        self.pce, self.layout = rec.pce, rec.layout
        self.n_wires = rec.layout.n_wires
        self.n_public = rec.layout.n_inputs - 1
        self.n_constraints = rec.layout.n_constraints
        declared = getattr(self.python, "partitions", 1)
        if isinstance(declared, int) and declared > 1:
            if self.spec.partitions > 1 and self.spec.partitions != declared:
                raise InvalidArgument(f"{where}.partitions: {self.spec.partitions}, but {self.spec.python} has {declared}")
            self._partitions = declared
        log.info(
            "event=python_circuit_recorded circuit=%s spec=%s cached=%s key=%s",
            self.spec.id,
            self.spec.python,
            rec.cached,
            rec.key,
        )

    # -- version ----------------------------------------------------------------------------------
    def _hash_files(self, where: str) -> dict[str, str]:
        out = {}
        for k in VERSION_FILES:
            path = getattr(self.spec, k)
            if path:
                try:
                    out[k] = self.hasher(path)
                except OSError as e:
                    raise InvalidArgument(f"{where}.{k}: {path}: cannot read: {e.strerror or e}") from None
        return out

    def _version(self) -> str:
        """What a job is proved with: the files' contents (r1cs, key, wasm), the Python circuit and its
        parameters, the partitions. Priorities, deadlines, queue limits and paths are not part of it."""
        d = {
            "files": self.file_hashes,
            "python": self.spec.python,
            "python_params": self.spec.python_params,
            "partitions": self.partitions,
        }
        return hashlib.sha256(json.dumps(d, sort_keys=True, default=str).encode()).hexdigest()[:16]

    def _srs_version(self) -> str:
        """The loaded key's identity: the key file's contents (and for bellperson params, whose densities
        come from the circuit, the circuit's)."""
        fmt = self.spec.key_format()
        d: dict[str, Any] = {"format": fmt, "key": self.key_hash}
        if fmt == "params":
            d["circuit"] = self.file_hashes.get("r1cs") or [self.spec.python, self.spec.python_params]
        return hashlib.sha256(json.dumps(d, sort_keys=True, default=str).encode()).hexdigest()[:16]

    def key_unchanged(self) -> str | None:
        """None if the key file still holds the key this circuit was registered with, else why not (one
        line): a job is never proved with another key than its version's."""
        path = self.spec.key_path()
        try:
            now = self.hasher(path)
        except OSError as e:
            return f"its proving key {path} cannot be read: {e.strerror or e}"
        if now != self.key_hash:
            return (
                f"its proving key {path} changed since it was registered (sha256 {now[:16]}, registered "
                f"{self.key_hash[:16]}); register the circuit again"
            )
        return None

    # -- key header -------------------------------------------------------------------------------
    def _check_key(self, where: str) -> int:
        if self.spec.zkey:
            path = self.spec.zkey
            try:
                bf = open_binfile(path, "zkey", (1,))
                try:
                    r2 = Reader(bf.section(2, "groth16 header"), bf, 2, "groth16 header")
                    n8q = r2.u32("n8q")
                    q = r2.integer(n8q, "q") if 0 < n8q <= 64 else -1
                    n8r = r2.u32("n8r")
                    r2.bytes(n8r, "r")
                    n_vars, n_public, domain = r2.u32("nVars"), r2.u32("nPublic"), r2.u32("domainSize")
                finally:
                    bf.close()
            except CuzkError as e:
                raise InvalidArgument(f"{where}.zkey: {e}") from None
            key_curve = curves.by_base_prime(q)
            if key_curve is None:
                raise InvalidArgument(f"{where}.zkey: {path}: the key's base field (n8q = {n8q}) is not a supported curve's")
            if key_curve != self.curve:
                raise InvalidArgument(f"{where}.zkey: {path} is a {key_curve} key but the {self._what} is over {self.curve}")
            if n_vars != self.n_wires or n_public != self.n_public:
                raise InvalidArgument(
                    f"{where}.zkey: {path} is for a circuit of {n_vars} wires / {n_public} public signals, "
                    f"the {self._what} has {self.n_wires} / {self.n_public} (is it the key of another circuit?)"
                )
            if domain < 2 or domain & (domain - 1):
                raise InvalidArgument(f"{where}.zkey: {path}: domainSize {domain} is not a power of two")
            return domain.bit_length() - 1
        path = self.spec.params
        if not self.curve.bellperson:
            raise InvalidArgument(
                f"{where}.params: bellperson parameters are BLS12-381 keys, but the {self._what} is over {self.curve}"
            )
        try:
            with open(path, "rb") as fh:
                head = fh.read(868)
        except OSError as e:
            raise InvalidArgument(f"{where}.params: {path}: cannot read: {e.strerror}") from None
        if len(head) < 868:
            raise InvalidArgument(f"{where}.params: {path}: truncated ({len(head)} bytes), not bellperson parameters")
        (n_ic,) = struct.unpack(">I", head[864:868])
        if n_ic != self.n_public + 1:
            raise InvalidArgument(
                f"{where}.params: {path}: ic has {n_ic} points, the circuit has "
                f"{self.n_public + 1} inputs (is it the key of another circuit?)"
            )
        rows = self.n_constraints + self.n_public + 1
        return max(1, (rows - 1).bit_length())

    @property
    def _what(self) -> str:
        return "python circuit" if self.python is not None else "r1cs"

    # -- sizes ------------------------------------------------------------------------------------
    @property
    def partitions(self) -> int:
        return self._partitions

    @property
    def domain_size(self) -> int:
        return 1 << self.domain_log

    def working_bytes(self) -> int:
        """Estimated host memory of one partition in flight: the witness, a/b/c and the quotient
        (32 B per element), and the MSMs' scalar objects and base lists (~480 B per wire)."""
        n = max(self.n_wires, self.domain_size)
        return 32 * self.n_wires + 4 * 32 * self.domain_size + 480 * n

    # -- witnesses --------------------------------------------------------------------------------
    def _new_calc(self) -> WitnessCalculator:
        try:
            calc = WitnessCalculator(self.spec.wasm, sym_path=self.spec.sym or None, log=lambda line: None)
        except CuzkError as e:
            raise InvalidArgument(f"circuit {self.id!r}.wasm: {e}") from None
        if calc.curve != self.curve:
            raise InvalidArgument(f"circuit {self.id!r}.wasm: computes {calc.curve} witnesses, the r1cs is over {self.curve}")
        if calc.n_wires != self.n_wires:
            raise InvalidArgument(f"circuit {self.id!r}.wasm: computes {calc.n_wires} wires, the r1cs has {self.n_wires}")
        with self._calc_lock:
            self._calc_made += 1
        return calc

    def _put_calc(self, calc: WitnessCalculator) -> None:
        self._calcs.put(calc)

    def takes_inputs(self) -> bool:
        return bool(self.spec.wasm) or self.python is not None

    def parse_python_inputs(self, obj: Any, field: str) -> Any:
        """A Python circuit's inputs checked at submission (the circuit's parse_inputs); the JSON object
        itself is kept (and journaled): the witness parses it again."""
        assert self.python is not None
        try:
            if self._python_processes > 1 and self.python.split_units() > 1:
                self._check_in_parts(obj)  # the same checks, a range of units per worker process
            else:
                self.python.parse_inputs(obj)
            return obj
        except CuzkError as e:
            raise InvalidArgument(f"{field}: {e}") from None
        except Exception as e:
            raise InvalidArgument(f"{field}: {self.spec.python} refused the inputs: {type(e).__name__}: {e}") from None

    def _check_in_parts(self, obj: Any) -> None:
        from concurrent.futures.process import BrokenProcessPool

        assert self.python is not None
        try:
            self._witness_pool().check(obj)
        except BrokenProcessPool:  # a worker died: a fresh pool for the next job, the check done here
            self.close()
            self.python.parse_inputs(obj)

    def parse_python_binary(self, data: bytes, field: str, partition: int = 0) -> Any:
        """A Python circuit's binary inputs (a vanilla proof) of one partition as its JSON inputs (the
        circuit's parse_binary)."""
        assert self.python is not None
        try:
            return self.python.parse_binary(bytes(data), partition)
        except CuzkError as e:
            raise InvalidArgument(f"{field}: {e}") from None
        except ValueError as e:  # format errors of the circuit's own readers
            raise InvalidArgument(f"{field}: {e}") from None

    def split_python_inputs(self, obj: Any, field: str) -> list[Any]:
        """One request's inputs of a multi-partition Python circuit, one object per partition."""
        assert self.python is not None
        try:
            parts = self.python.partition_inputs(obj)
        except CuzkError as e:
            raise InvalidArgument(f"{field}: {e}") from None
        except Exception as e:
            raise InvalidArgument(f"{field}: {self.spec.python} could not split the inputs: {type(e).__name__}: {e}") from None
        if len(parts) != self.partitions:
            raise InvalidArgument(
                f"{field}: the inputs make {len(parts)} partition(s), circuit {self.id!r} has {self.partitions}"
            )
        return parts

    def _witness_pool(self) -> WitnessPool:
        with self._pool_lock:
            if self._pool is None:
                from ..circuit.circuit import CircuitSpec, WitnessPool

                spec = CircuitSpec.parse(self.spec.python, self.spec.python_params)
                self._pool = WitnessPool(spec, self._python_processes)
            return self._pool

    def close(self) -> None:
        """Stop the circuit's witness processes (engine shutdown, or the circuit redefined)."""
        with self._pool_lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.close()

    def _python_witness(self, inputs: Any) -> np.ndarray:
        from concurrent.futures.process import BrokenProcessPool

        from ..circuit.circuit import witness

        assert self.python is not None
        try:
            if self._python_processes > 0:
                return self._witness_pool().witness(inputs)
            return witness(self.python, inputs, self.layout)
        except BrokenProcessPool:  # a worker died (killed, out of memory): not the request's fault
            self.close()  # a fresh pool for the next job
            raise OSError(f"circuit {self.id!r}: a witness worker process died") from None
        except CuzkError as e:
            raise InvalidArgument(str(e)) from None
        except Exception as e:  # the circuit's code failed on these inputs: the request's failure
            log.warning("event=python_witness_failed circuit=%s", self.id, exc_info=True)
            raise InvalidArgument(f"{self.spec.python} failed on these inputs: {type(e).__name__}: {e}") from None

    def witness_from_inputs(self, inputs: Any) -> np.ndarray:
        """Montgomery witness computed by the Python circuit or the circuit's wasm (one calculator per
        concurrent caller)."""
        if self.python is not None:
            return self._python_witness(inputs)
        if not self.spec.wasm:
            raise InvalidArgument(f"circuit {self.id!r} has no wasm: send a witness (.wtns) instead of inputs_json")
        try:
            calc = self._calcs.get_nowait()
        except queue.Empty:
            with self._calc_lock:
                make = self._calc_made < self._calc_max
            calc = self._new_calc() if make else self._calcs.get()
        try:
            w: np.ndarray = calc.calculate(inputs)
            return w
        finally:
            self._put_calc(calc)

    def signal_names(self) -> dict[int, str]:
        with self._names_lock:
            if self._names is None:
                self._names = {}
                if self.spec.sym:
                    from ..r1cs.sym import read_sym

                    try:
                        self._names = read_sym(self.spec.sym)
                    except CuzkError:
                        self._names = {}
            return self._names

    def violation(self, w: np.ndarray, inputs: Any = None) -> str | None:
        """None if ``w`` satisfies every constraint, else a one-line description of the first violated
        constraint (its index and the signals it involves, named from the .sym when there is one; for a
        Python circuit given its inputs, by the namespace path of the failing enforce)."""
        bad = self.pce.unsatisfied(w)
        if bad.size == 0:
            return None
        first = int(bad[0])
        if self.python is not None and inputs is not None:
            from ..circuit.circuit import check

            try:
                where = check(self.python, inputs)
            except Exception:
                where = None
            if where:
                return f"the witness violates {where}; {bad.size} of {self.n_constraints} constraints fail"
        wires: set[int] = set()
        for m in (self.pce.A, self.pce.B, self.pce.C):
            wires.update(int(c) for c in m.cols[m.row_ptr[first] : m.row_ptr[first + 1]])
        wires.discard(0)
        names = self.signal_names()
        shown = [names.get(wi, f"wire {wi}") for wi in sorted(wires)][:8]
        desc = f"constraint {first}"
        if shown:
            desc += f" (signals {', '.join(shown)}{', ...' if len(wires) > 8 else ''})"
        return f"the witness violates {desc}; {bad.size} of {self.n_constraints} constraints fail"

    def info(self, show_paths: bool = True) -> dict[str, Any]:
        """The circuit's description; without ``show_paths`` (a caller that is not an admin), its files
        are named by their basename only (server-side folders are not disclosed)."""
        spec = self.spec.as_dict() | {"partitions": self.partitions}  # a Python circuit may declare them
        if not show_paths:
            for k in PATH_KEYS:
                spec[k] = os.path.basename(spec[k]) if spec[k] else ""
        return {
            "id": self.id,
            "version": self.version,
            "key_sha256": self.key_hash,
            "curve": self.curve.name,
            "n_constraints": self.n_constraints,
            "n_wires": self.n_wires,
            "n_public": self.n_public,
            "domain_log": self.domain_log,
            "partitions": self.partitions,
            "batchable": self.spec.batchable,
            "source": self.source,
            "spec": spec,
        }


def same_spec(a: CircuitConfig, b: CircuitConfig) -> bool:
    return a.as_dict() == b.as_dict()
