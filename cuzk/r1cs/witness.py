"""Witness calculation for circom 2 circuits: runs circom's ``--wasm`` output on wasmtime (no Node).

Protocol (circom 2.x ``witness_calculator.js``). The module imports four host functions from
``runtime`` (``exceptionHandler(code)``, ``printErrorMessage()``, ``writeBufferMessage()``,
``showSharedRWMemory()``) and exports its own ``memory``. A calculation is::

    init(sanityCheck)
    for each input signal name (relative to main, e.g. "arr", "p.x", "q[0].x"):
        h = FNV-1a-64(name); size = getInputSignalSize(h >> 32, h & 0xffffffff)
        for k < size: write the element (8 little-endian u32 limbs) to the shared buffer,
                      setInputSignal(h >> 32, h & 0xffffffff, k)
    # setting the last input runs the circuit
    for i < getWitnessSize(): getWitness(i) copies wire i to the shared buffer

The shared buffer is 32 bytes of the module's memory at ``getSharedRWMemoryStart()`` (what
``readSharedRWMemory``/``writeSharedRWMemory`` index as u32 words), so we move a whole element
with one memory copy. A call from Python into wasm costs ~20-30 us through wasmtime-py's public
API, which would make one call per wire the bottleneck (~2 s for 2^16 wires). So by default a tiny
helper module, instantiated in the same store, imports the circuit's ``memory``,
``getWitness`` and ``setInputSignal`` and runs those loops inside wasm, copying elements between
the circuit's memory and its own second memory (multi-memory); Python then reads one block per
chunk. ``fast=False`` uses the plain one-call-per-wire path (same results; tests check both).

Compiling a circuit's wasm (0.2-1 s for 2 MB depending on the machine, more for big circuits) is
cached on disk with ``Module.serialize()``: files are keyed by sha256 of the wasm bytes, the wasmtime
version and the machine, under ``$CUZK_CACHE_DIR/wasm`` or ``~/.cache/cuzk/wasm`` (``cache_dir=False`` disables).

Input JSON follows snarkjs / circom's generated ``witness_calculator.js``: values are integers,
decimal strings or ``0x`` hex strings (negative values are reduced mod r); arrays of numbers, nested
to any depth, are flattened row-major into one signal; nested objects become ``a.b`` and arrays of
objects ``a[0].b`` (circom 2.2 buses). All user mistakes raise :class:`CuzkError` subclasses with a
one-line message naming the wasm file or input file and the signal.
"""

from __future__ import annotations

import atexit
import hashlib
import json
import logging
import numbers
import os
import platform
import re
import tempfile
import threading
import time
import weakref
from collections.abc import Callable
from pathlib import Path

import numpy as np
import wasmtime

from .. import CuzkError, curves
from .binfile import FormatError
from .wtns import wtns_bytes

__all__ = [
    "InputError",
    "WitnessCalculator",
    "WitnessError",
    "flatten_inputs",
    "fnv1a64",
    "load_inputs_json",
]

_logger = logging.getLogger("cuzk.witness")


class InputError(CuzkError):
    """The inputs do not fit the circuit: unknown signal, wrong element count, bad value."""


class WitnessError(CuzkError):
    """The circuit rejected the inputs while computing the witness (failed assert, ...)."""


# ---------------------------------------------------------------------------------------------
# names and values

_FNV_OFFSET = 0xCBF29CE484222325
_FNV_PRIME = 0x100000001B3
_M64 = (1 << 64) - 1


def fnv1a64(name: str) -> int:
    """64-bit FNV-1a of the UTF-8 bytes of ``name`` (circom's input-signal hash)."""
    h = _FNV_OFFSET
    for b in name.encode("utf-8"):
        h = ((h ^ b) * _FNV_PRIME) & _M64
    return h


def _i32(x: int) -> int:
    """An unsigned 32-bit value as the signed i32 wasmtime-py expects."""
    x &= 0xFFFFFFFF
    return x - (1 << 32) if x >= 1 << 31 else x


_DEC = re.compile(r"[+-]?[0-9]+")
_HEX = re.compile(r"([+-]?)0[xX]([0-9a-fA-F]+)")


def _short(v: object) -> str:
    s = repr(v)
    return s if len(s) <= 40 else s[:37] + "..."


def _value(v: object, name: str, k: int, n: int, prime: int) -> int:
    where = f"input '{name}'" + (f" element {k}" if n > 1 else "")
    if isinstance(v, (bool, np.bool_)):
        raise InputError(f"{where}: boolean {v} is not a field element (use 0 or 1)")
    if isinstance(v, numbers.Integral):
        return int(v) % prime
    if isinstance(v, str):
        s = v.strip()
        if _DEC.fullmatch(s):
            return int(s, 10) % prime
        m = _HEX.fullmatch(s)
        if m:
            x = int(m.group(2), 16)
            return (-x if m.group(1) == "-" else x) % prime
    elif isinstance(v, float) and v.is_integer() and abs(v) <= 2**53:
        return int(v) % prime
    raise InputError(f"{where}: {_short(v)} is not a field element (expected an integer, a decimal string or a 0x-hex string)")


def _leaves(value, acc: list) -> list:
    if isinstance(value, np.ndarray):
        value = value.tolist()
    if isinstance(value, (list, tuple)):
        for x in value:
            _leaves(x, acc)
    else:
        acc.append(value)
    return acc


def flatten_inputs(inputs: dict, prime: int) -> list[tuple[str, list[int]]]:
    """snarkjs-style inputs -> [(qualified signal name, values reduced mod ``prime``)], in input order.

    ``{"a": 1, "arr": [[1, 2], [3, 4]], "p": {"x": 1}, "q": [{"x": 1}, {"x": 2}]}`` gives
    ``a``, ``arr`` (4 values, row-major), ``p.x``, ``q[0].x``, ``q[1].x``.
    """
    if not isinstance(inputs, dict):
        raise InputError(f"inputs must be an object mapping signal names to values, got {type(inputs).__name__}")
    out: dict[str, list[int]] = {}

    def leaf(prefix: str, value) -> None:
        if prefix in out:
            raise InputError(f"input signal '{prefix}' is given twice")
        flat = _leaves(value, [])
        out[prefix] = [_value(v, prefix, k, len(flat), prime) for k, v in enumerate(flat)]

    def walk(prefix: str, value) -> None:
        if isinstance(value, dict):
            for key, sub in value.items():
                if not isinstance(key, str) or not key:
                    where = f" in '{prefix}'" if prefix else ""
                    raise InputError(f"input signal name {key!r}{where} must be a non-empty string")
                walk(f"{prefix}.{key}" if prefix else key, sub)
        elif isinstance(value, (list, tuple, np.ndarray)):
            flat = _leaves(value, [])
            objs = sum(isinstance(x, dict) for x in flat)
            if objs == 0:
                leaf(prefix, value)
            elif objs == len(flat):
                walk_list(prefix, value)
            else:
                raise InputError(f"input '{prefix}': array mixes objects and numbers")
        else:
            leaf(prefix, value)

    def walk_list(prefix: str, value) -> None:
        if isinstance(value, np.ndarray):
            value = value.tolist()
        if isinstance(value, (list, tuple)):
            for i, x in enumerate(value):
                walk_list(f"{prefix}[{i}]", x)
        else:
            walk(prefix, value)

    walk("", inputs)
    for name in out:  # "p" and "p.x" (or "q" and "q[0].x") would set the same elements twice
        for i, ch in enumerate(name):
            if ch in ".[" and name[:i] in out:
                raise InputError(f"input '{name}' overlaps input '{name[:i]}'")
    return list(out.items())


class _DuplicateKey(Exception):
    pass


def _no_duplicates(pairs):
    d = {}
    for k, v in pairs:
        if k in d:
            raise _DuplicateKey(k)
        d[k] = v
    return d


def _no_constant(name: str):
    raise ValueError(f"{name} is not a number")


def load_inputs_json(path: str | os.PathLike) -> dict:
    """Read a snarkjs-style ``input.json``; malformed files raise a one-line error naming the file."""
    try:
        raw = Path(path).read_bytes()
    except OSError as e:
        raise CuzkError(f"{path}: cannot read input file: {e.strerror or e}") from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise FormatError(f"{path}: input file is not UTF-8 text (byte {e.start})") from None
    try:
        data = json.loads(text, object_pairs_hook=_no_duplicates, parse_constant=_no_constant)
    except json.JSONDecodeError as e:
        raise FormatError(f"{path}:{e.lineno}:{e.colno}: malformed JSON: {e.msg}") from None
    except _DuplicateKey as e:
        raise FormatError(f"{path}: malformed JSON: duplicate key {e.args[0]!r}") from None
    except (ValueError, RecursionError) as e:
        raise FormatError(f"{path}: malformed JSON: {e}") from None
    if not isinstance(data, dict):
        raise FormatError(f"{path}: input JSON must be an object mapping signal names to values, got {type(data).__name__}")
    return data


# ---------------------------------------------------------------------------------------------
# engine, module cache, helper module

_LOCK = threading.Lock()
_HELPER: bytes | bool | None = None  # the serialized helper module, or False when this wasmtime can't build it

_HELPER_WAT = """
(module
  (import "c" "memory" (memory $cm 0))
  (import "c" "getWitness" (func $getWitness (param i32)))
  (import "c" "setInputSignal" (func $setInputSignal (param i32 i32 i32)))
  (memory $hm (export "mem") 0)
  ;; wires [start, end) -> $hm[(i - start) * 32], through the shared buffer at $shared
  (func (export "dump") (param $start i32) (param $end i32) (param $shared i32)
    (local $i i32)
    (local.set $i (local.get $start))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $i) (local.get $end)))
        (call $getWitness (local.get $i))
        (memory.copy $hm $cm
          (i32.shl (i32.sub (local.get $i) (local.get $start)) (i32.const 5))
          (local.get $shared) (i32.const 32))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $next))))
  ;; elements [start, end) of signal (hmsb, hlsb) from $hm[(k - start) * 32]
  (func (export "set") (param $hmsb i32) (param $hlsb i32) (param $start i32) (param $end i32)
                       (param $shared i32)
    (local $k i32)
    (local.set $k (local.get $start))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $k) (local.get $end)))
        (memory.copy $cm $hm
          (local.get $shared)
          (i32.shl (i32.sub (local.get $k) (local.get $start)) (i32.const 5)) (i32.const 32))
        (call $setInputSignal (local.get $hmsb) (local.get $hlsb) (local.get $k))
        (local.set $k (i32.add (local.get $k) (i32.const 1)))
        (br $next))))
)
"""

_CHUNK = 1 << 16  # elements moved per helper call (2 MiB of helper memory)


def _engine() -> wasmtime.Engine:
    """An engine of its own for each calculator: its epoch can then be advanced past the deadline of
    that calculator's store alone (a cancelled job's calculation, see _Ticker)."""
    cfg = wasmtime.Config()
    cfg.epoch_interruption = True
    return wasmtime.Engine(cfg)


# Deadlines (issue 19): every engine runs with epoch interruption; one daemon thread advances the epoch
# of every live calculator's engine every _TICK seconds and each store's deadline is a number of ticks
# from now, so a wasm that loops forever traps within a tick of its deadline and frees the thread that
# called it. A calculation started under ``witness_deadline(seconds, stop)`` is also stopped within a
# tick of ``stop()`` turning true (the job was cancelled): the ticker advances that engine to the deadline.
# Engine.increment_epoch is made to be called from another thread; nothing else of a store is touched.
_TICK = 0.02
DEFAULT_TIMEOUT = 60.0  # seconds of one calculation when the caller gives none
_INIT_TIMEOUT = 60.0  # the small calls made while loading a module (version, prime, sizes)
_deadline = threading.local()  # .seconds, .stop: the calling thread's deadline (witness_deadline)


class _Ticker:
    def __init__(self) -> None:
        self._calcs: weakref.WeakSet[WitnessCalculator] = weakref.WeakSet()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()

    def add(self, calc: WitnessCalculator) -> None:
        with self._lock:
            self._calcs.add(calc)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="cuzk-wasm-epoch", daemon=True)
                self._thread.start()
                atexit.register(self._join)

    def _run(self) -> None:
        while not self._stop.wait(_TICK):
            with self._lock:
                calcs = list(self._calcs)
            for c in calcs:
                c._tick()

    def _join(self) -> None:
        # stopped before the interpreter finalizes: a daemon thread that wakes during finalization is
        # ended by pthread_exit, whose forced unwind walks numba's JIT frame registrations, freed by
        # then (the test suite's process died of SIGBUS at exit in _Unwind_Find_FDE from this thread)
        self._stop.set()
        if self._thread is not None:
            self._thread.join(1.0)


_TICKER = _Ticker()


def _ticks(seconds: float) -> int:
    return max(1, int(-(-seconds // _TICK)) + 1)


class witness_deadline:
    """``with witness_deadline(2.0, stop): calc.calculate(...)``: calculations made by this thread inside
    the block stop with a WitnessError after ``seconds`` (0 or less: the calculator's own timeout), or
    within a tick of ``stop()`` returning true (optional; called from the ticker thread)."""

    def __init__(self, seconds: float, stop: Callable[[], bool] | None = None):
        self.seconds = seconds
        self.stop = stop

    def __enter__(self) -> witness_deadline:
        self._prev = (getattr(_deadline, "seconds", None), getattr(_deadline, "stop", None))
        _deadline.seconds = self.seconds if self.seconds > 0 else None
        _deadline.stop = self.stop
        return self

    def __exit__(self, *exc: object) -> None:
        _deadline.seconds, _deadline.stop = self._prev


def _fmt_seconds(s: float) -> str:
    return f"{s:g}s" if s >= 1 else f"{s * 1e3:g}ms"


def _helper_module(engine: wasmtime.Engine):
    """The helper module in ``engine`` (compiled once, then deserialized into each calculator's engine)."""
    global _HELPER
    with _LOCK:
        if _HELPER is None:
            try:
                _HELPER = bytes(wasmtime.Module(engine, wasmtime.wat2wasm(_HELPER_WAT)).serialize())
            except Exception as e:  # e.g. a wasmtime without multi-memory
                _logger.debug("witness helper module unavailable (%s); using one call per wire", e)
                _HELPER = False
        if not _HELPER:
            return None
        assert isinstance(_HELPER, bytes)
        return wasmtime.Module.deserialize(engine, _HELPER)


def _wasmtime_version() -> str:
    try:
        from importlib.metadata import version

        return version("wasmtime")
    except Exception:
        return "unknown"


def default_cache_dir() -> Path:
    root = os.environ.get("CUZK_CACHE_DIR")
    return Path(root) / "wasm" if root else Path.home() / ".cache" / "cuzk" / "wasm"


def _first_line(err: BaseException) -> str:
    """The informative line of a wasmtime error (its "Caused by:" line when it has one)."""
    lines = [ln.strip() for ln in str(err).splitlines() if ln.strip()]
    for i, ln in enumerate(lines[:-1]):
        if ln == "Caused by:":
            return lines[i + 1].removeprefix("0: ").strip()
    return lines[0] if lines else type(err).__name__


def _compile(engine, wasm: bytes, name: str) -> wasmtime.Module:
    try:
        return wasmtime.Module(engine, wasm)
    except wasmtime.WasmtimeError as e:
        raise FormatError(f"{name}: not a valid WebAssembly module: {_first_line(e)}") from None


def _load_module(engine, wasm: bytes, name: str, cache_dir) -> tuple[wasmtime.Module, bool | None]:
    """(module, cache_hit); cache_hit is None when caching is off."""
    if cache_dir is False:
        return _compile(engine, wasm, name), None
    try:
        cdir = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    except RuntimeError:  # no home directory
        return _compile(engine, wasm, name), None
    h = hashlib.sha256()
    h.update(f"cuzk-wasm-v1\0epoch\0{_wasmtime_version()}\0{platform.machine()}\0".encode())
    h.update(wasm)
    path = cdir / f"{h.hexdigest()}.cwasm"
    if path.is_file():
        try:
            # read, not mapped (deserialize_file maps the file): a cache file rewritten in place under a
            # live module turned its unwind tables into SIGBUS for the next thread that unwound
            return wasmtime.Module.deserialize(engine, path.read_bytes()), True
        except Exception as e:  # stale or damaged entry: recompile and replace it
            _logger.debug("ignoring unusable wasm cache entry %s: %s", path, _first_line(e))
    module = _compile(engine, wasm, name)
    try:
        cdir.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=cdir, prefix=".tmp-", suffix=".cwasm")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(module.serialize())
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise
    except (OSError, wasmtime.WasmtimeError) as e:
        _logger.debug("cannot write wasm cache entry %s: %s", path, e)
    return module, False


# ---------------------------------------------------------------------------------------------
# the calculator

_RUNTIME_IMPORTS = {
    "exceptionHandler": 1,
    "printErrorMessage": 0,
    "writeBufferMessage": 0,
    "showSharedRWMemory": 0,
}
_REQUIRED_EXPORTS = (
    "memory",
    "getVersion",
    "getFieldNumLen32",
    "getRawPrime",
    "readSharedRWMemory",
    "getSharedRWMemoryStart",
    "init",
    "setInputSignal",
    "getInputSize",
    "getWitnessSize",
    "getWitness",
    "getMessageChar",
)
_CODES = {
    1: "signal not found",
    2: "too many signals set",
    3: "signal already set",
    4: "assert failed",
    5: "not enough memory",
    6: "input signal array access exceeds the size",
    7: "out of bounds array access",
}


def _hint(name: str) -> str:
    if name.startswith("main."):
        return " (names are relative to main: drop the 'main.' prefix)"
    if name.endswith("]") or "." in name:
        return ' (give an array input whole, e.g. "a": [[1, 2], [3, 4]]; a bus as an object or by field, e.g. "p.x")'
    return ""


_WASM_ERRORS = (wasmtime.WasmtimeError, wasmtime.Trap)  # Trap is not a WasmtimeError


class _CircomException(Exception):
    """Raised by our exceptionHandler import; wasmtime-py re-raises it at the outer call."""

    def __init__(self, code: int):
        super().__init__(code)
        self.code = code


class WitnessCalculator:
    """A compiled circom 2 witness generator, reusable for many :meth:`calculate` calls.

    ``wasm_path_or_bytes``: the ``<circuit>_js/<circuit>.wasm`` written by ``circom --wasm`` (or its
    bytes). ``cache_dir``: where compiled modules are cached (None: the default location, False: no
    cache). ``sym_path``: the circuit's ``.sym`` file, used only to name missing inputs in errors
    (found next to the wasm by default). ``fast``: move data through the in-wasm helper loop.
    ``log``: called with each line the circuit prints with ``log(...)`` (default: the
    ``cuzk.witness`` logger at INFO); the lines of the last calculation are also in ``.logs``.
    """

    def __init__(
        self,
        wasm_path_or_bytes: str | os.PathLike | bytes,
        cache_dir: str | os.PathLike | bool | None = None,
        *,
        sym_path: str | os.PathLike | None = None,
        fast: bool = True,
        log: Callable[[str], None] | None = None,
        timeout: float = DEFAULT_TIMEOUT,
    ):
        self.timeout = timeout  # seconds per calculation (witness_deadline overrides it per thread)
        if isinstance(wasm_path_or_bytes, (bytes, bytearray, memoryview)):
            wasm = bytes(wasm_path_or_bytes)
            self.path: str | None = None
            self.name = "<wasm>"
        else:
            self.path = os.fspath(wasm_path_or_bytes)
            self.name = self.path
            try:
                wasm = Path(self.path).read_bytes()
            except OSError as e:
                raise CuzkError(f"{self.path}: cannot read witness wasm: {e.strerror or e}") from None
        if wasm[:4] != b"\0asm":
            raise FormatError(f"{self.name}: not a WebAssembly binary (expected circom's <circuit>_js/<circuit>.wasm)")
        self.wasm_sha256 = hashlib.sha256(wasm).hexdigest()
        self._sym_path = os.fspath(sym_path) if sym_path is not None else None
        self._log_cb = log
        self.logs: list[str] = []
        self._lock = threading.Lock()
        self._engine = _engine()
        self._epoch = 0  # ticks given to this engine (by _tick and _interrupt, under _tick_lock)
        self._tick_lock = threading.Lock()
        self._until = 0  # the running calculation's deadline in ticks (0: none running)
        self._stop_cb: Callable[[], bool] | None = None
        self._stopped = False
        _TICKER.add(self)
        t0 = time.perf_counter()
        self._module, self.cache_hit = _load_module(self._engine, wasm, self.name, cache_dir)
        self.load_seconds = time.perf_counter() - t0
        self._check_interface()
        self._helper_mod = _helper_module(self._engine) if fast else None
        self._store = None
        self._instantiate()

        try:
            ver = self._call("getVersion")
            self.version = (
                ver,
                self._call("getMinorVersion") if "getMinorVersion" in self._f else 0,
                self._call("getPatchVersion") if "getPatchVersion" in self._f else 0,
            )
            n32 = self._call("getFieldNumLen32")
            self._call("getRawPrime")
            prime = self._read_shared() if n32 == 8 else None
            self.n_wires = self._call("getWitnessSize")
            self.n_inputs = self._call("getInputSize")
        except (*_WASM_ERRORS, _CircomException) as e:
            raise FormatError(f"{self.name}: not a circom witness generator: {_first_line(e)}") from None
        if ver != 2:
            raise FormatError(f"{self.name}: circom wasm version {ver}, expected 2 (circom 2.x)")
        curve = curves.by_scalar_prime(prime) if prime is not None else None
        if curve is None:
            what = f"a {4 * n32}-byte field" if prime is None else f"prime {prime:#x}"
            known = " or ".join(f"{c.title} (--prime {c.circom_prime})" for c in curves.all_curves())
            raise FormatError(f"{self.name}: circuit compiled for {what}, not the scalar field of {known}")
        self.curve = curve

    # -- setup ------------------------------------------------------------------------------------

    def _check_interface(self) -> None:
        for imp in self._module.imports:
            arity = _RUNTIME_IMPORTS.get(imp.name) if imp.module == "runtime" else None
            ty = imp.type
            if arity is None or not isinstance(ty, wasmtime.FuncType) or len(ty.params) != arity or ty.results:
                raise FormatError(f"{self.name}: not a circom 2 witness generator: unexpected import {imp.module}.{imp.name}")
        exports = {e.name: e.type for e in self._module.exports}
        for name in _REQUIRED_EXPORTS:
            kind = wasmtime.MemoryType if name == "memory" else wasmtime.FuncType
            if not isinstance(exports.get(name), kind):
                raise FormatError(f"{self.name}: not a circom 2 witness generator: no export '{name}'")

    def _message(self, caller) -> str:
        get = caller.get("getMessageChar")
        chars = []
        while len(chars) < 100_000:
            c = get(caller) & 0xFF
            if c == 0:
                break
            chars.append(c)
        return bytes(chars).decode("latin-1")

    def _instantiate(self) -> None:
        self._store = None
        store = wasmtime.Store(self._engine)
        store.set_epoch_deadline(_ticks(_INIT_TIMEOUT))

        def exception_handler(code):
            raise _CircomException(code)

        def print_error_message(caller):
            self._errors.append(self._message(caller))

        def write_buffer_message(caller):
            msg = self._message(caller)
            if msg == "\n":
                self._emit_log()
            else:
                self._logbuf.append(msg)

        def show_shared_rw_memory(caller):
            mem = caller.get("memory")
            start = caller.get("getSharedRWMemoryStart")(caller) & 0xFFFFFFFF
            self._logbuf.append(str(int.from_bytes(mem.read(caller, start, start + 32), "little")))

        none, one = [], [wasmtime.ValType.i32()]
        hosts = {
            "exceptionHandler": wasmtime.Func(store, wasmtime.FuncType(one, none), exception_handler),
            "printErrorMessage": wasmtime.Func(store, wasmtime.FuncType(none, none), print_error_message, access_caller=True),
            "writeBufferMessage": wasmtime.Func(store, wasmtime.FuncType(none, none), write_buffer_message, access_caller=True),
            "showSharedRWMemory": wasmtime.Func(store, wasmtime.FuncType(none, none), show_shared_rw_memory, access_caller=True),
        }
        self._errors: list[str] = []
        self._logbuf: list[str] = []
        try:
            inst = wasmtime.Instance(store, self._module, [hosts[i.name] for i in self._module.imports])
        except (*_WASM_ERRORS, _CircomException) as e:
            raise FormatError(f"{self.name}: cannot instantiate the witness wasm: {_first_line(e)}") from None
        ex = inst.exports(store)
        self._f = {e.name: ex[e.name] for e in self._module.exports if isinstance(ex[e.name], wasmtime.Func)}
        self._mem = ex["memory"]
        self._store = store
        self._shared = self._call("getSharedRWMemoryStart")
        self._hmem = None
        if self._helper_mod is not None:
            try:
                h = wasmtime.Instance(
                    store,
                    self._helper_mod,
                    [self._mem, self._f["getWitness"], self._f["setInputSignal"]],
                )
            except wasmtime.WasmtimeError as e:
                _logger.debug("witness helper did not link (%s); using one call per wire", e)
                self._helper_mod = None
            else:
                hx = h.exports(store)
                self._hmem, self._hdump, self._hset = hx["mem"], hx["dump"], hx["set"]

    def _call(self, name: str, *args: int) -> int:
        r = self._f[name](self._store, *args)
        return r & 0xFFFFFFFF if r is not None else 0

    def _read_shared(self) -> int:
        return int.from_bytes(self._mem.read(self._store, self._shared, self._shared + 32), "little")

    def _helper_room(self, n_elems: int) -> None:
        need = -(-32 * n_elems // 65536)
        have = self._hmem.size(self._store)
        if need > have:
            self._hmem.grow(self._store, need - have)

    def _emit_log(self) -> None:
        line = " ".join(self._logbuf)
        self._logbuf = []
        self.logs.append(line)
        if self._log_cb is not None:
            self._log_cb(line)
        else:
            _logger.info("%s: %s", self.name, line)

    # -- calculation ------------------------------------------------------------------------------

    def calculate_canonical(self, inputs: dict, sanity_check: bool = False) -> np.ndarray:
        """The witness as canonical (not Montgomery) limbs, shape (n_wires, 4) uint64, w[0] = 1."""
        signals = flatten_inputs(inputs, self.curve.r)
        with self._lock:
            if self._store is None:
                self._instantiate()
            ok = False
            seconds = getattr(_deadline, "seconds", None) or self.timeout
            self._t_start, self._t_limit = time.monotonic(), seconds
            n = _ticks(seconds)
            with self._tick_lock:
                self._store.set_epoch_deadline(n)
                self._until, self._stop_cb, self._stopped = self._epoch + n, getattr(_deadline, "stop", None), False
            try:
                out = self._run(signals, sanity_check)
                ok = True
                return out
            finally:
                with self._tick_lock:
                    self._until, self._stop_cb = 0, None
                if not ok:  # the instance may be mid-computation: start the next call afresh
                    self._store = None

    def _tick(self) -> None:
        """One tick of the epoch (the ticker thread); a running calculation whose stop callback turned
        true gets its engine advanced to the deadline at once."""
        with self._tick_lock:
            self._engine.increment_epoch()
            self._epoch += 1
            stop = self._stop_cb
        if stop is None or self._stopped:
            return
        try:
            stopping = bool(stop())
        except Exception:  # a broken callback must not stop the ticker
            _logger.debug("witness stop callback failed", exc_info=True)
            return
        if stopping:
            with self._tick_lock:
                if self._stop_cb is stop:
                    self._stopped = True
                    while self._epoch < self._until:
                        self._engine.increment_epoch()
                        self._epoch += 1

    def calculate(self, inputs: dict, sanity_check: bool = False) -> np.ndarray:
        """The witness (all wires, w[0] = 1) as a Montgomery Fr vector."""
        return self.curve.fr.to_mont(self.calculate_canonical(inputs, sanity_check))

    def calculate_wtns_bytes(self, inputs: dict, sanity_check: bool = False) -> bytes:
        """The ``.wtns`` file contents (identical to ``snarkjs wtns calculate``)."""
        return wtns_bytes(self.calculate(inputs, sanity_check), self.curve)

    def _run(self, signals: list[tuple[str, list[int]]], sanity_check: bool) -> np.ndarray:
        self._errors.clear()
        self._logbuf = []
        self.logs = []
        name = None
        try:
            self._call("init", 1 if sanity_check else 0)
            total = 0
            for name, vals in signals:
                h = fnv1a64(name)
                hm, hl = _i32(h >> 32), _i32(h)
                if "getInputSignalSize" in self._f:
                    size = self._f["getInputSignalSize"](self._store, hm, hl)
                    # unknown names give a negative size, or 0 (outputs, parts of arrays or
                    # sub-buses, ...); a real input of size 0 (signal input a[0]) takes []
                    if size < 0 or (size == 0 and vals):
                        raise InputError(f"{self.name}: '{name}' is not an input signal of the circuit{_hint(name)}")
                    if size != len(vals):
                        raise InputError(
                            f"{self.name}: input signal '{name}' has {size} element{'s' * (size != 1)}, {len(vals)} given"
                        )
                self._set(hm, hl, vals)
                total += len(vals)
            name = None
            n_in = self._call("getInputSize")
            if total != n_in:
                raise InputError(self._missing_message(total, n_in, {s for s, _ in signals}))
            return self._read_witness()
        except _CircomException as e:
            raise self._circuit_error(e.code, name) from None
        except _WASM_ERRORS as e:
            if isinstance(e, wasmtime.Trap) and self._stopped:
                raise WitnessError("witness: stopped (the job was cancelled)") from None
            if isinstance(e, wasmtime.Trap) and time.monotonic() - self._t_start >= self._t_limit * 0.9:
                raise WitnessError(f"witness: the circuit's wasm ran past its {_fmt_seconds(self._t_limit)} deadline") from None
            where = f" while setting input '{name}'" if name else ""
            msgs = "; ".join(m.strip() for m in self._errors if m.strip())
            raise WitnessError(
                f"{self.name}: witness calculation trapped{where}: {_first_line(e)}" + (f" ({msgs})" if msgs else "")
            ) from None

    def _set(self, hm: int, hl: int, vals: list[int]) -> None:
        data = b"".join(v.to_bytes(32, "little") for v in vals)
        if self._hmem is not None:
            for k0 in range(0, len(vals), _CHUNK):
                k1 = min(len(vals), k0 + _CHUNK)
                self._helper_room(k1 - k0)
                self._hmem.write(self._store, data[32 * k0 : 32 * k1], 0)
                self._hset(self._store, hm, hl, k0, k1, self._shared)
        else:
            set_input, mem, store, shared = self._f["setInputSignal"], self._mem, self._store, self._shared
            for k in range(len(vals)):
                mem.write(store, data[32 * k : 32 * k + 32], shared)
                set_input(store, hm, hl, k)

    def _read_witness(self) -> np.ndarray:
        n = self.n_wires
        out = np.empty((n, 4), dtype=np.uint64)
        store, shared = self._store, self._shared
        if self._hmem is not None:
            for i0 in range(0, n, _CHUNK):
                i1 = min(n, i0 + _CHUNK)
                self._helper_room(i1 - i0)
                self._hdump(store, i0, i1, shared)
                buf = self._hmem.read(store, 0, 32 * (i1 - i0))
                out[i0:i1] = np.frombuffer(buf, dtype="<u8").reshape(i1 - i0, 4)
        else:
            get, mem = self._f["getWitness"], self._mem
            parts = []
            for i in range(n):
                get(store, i)
                parts.append(mem.read(store, shared, shared + 32))
            out[:] = np.frombuffer(b"".join(parts), dtype="<u8").reshape(n, 4)
        if n and (out[0, 0] != 1 or out[0, 1:].any()):
            raise WitnessError(f"{self.name}: witness wire 0 is not 1: the circuit did not run to completion")
        return out

    def _circuit_error(self, code: int, name: str | None) -> CuzkError:
        msgs = "; ".join(m.strip() for m in self._errors if m.strip())
        detail = f": {msgs}" if msgs else ""
        what = _CODES.get(code, f"unknown circom runtime error code {code}")
        if name is not None and code in (1, 2, 3, 6):
            if code == 3:
                return InputError(
                    f"{self.name}: input signal '{name}' is set twice (does it overlap another given input?){detail}"
                )
            if code == 2:
                return InputError(
                    f"{self.name}: too many input values: '{name}' goes past the circuit's {self.n_inputs} inputs "
                    f"(does it overlap another given input?){detail}"
                )
            return InputError(f"{self.name}: input signal '{name}': {what}{detail}")
        return WitnessError(f"{self.name}: witness calculation failed: {what}{detail}")

    # -- naming missing inputs ------------------------------------------------------------------

    def _find_sym(self) -> str | None:
        if self._sym_path is not None:
            return self._sym_path
        if self.path is None:
            return None
        p = Path(self.path)
        cands = [p.with_suffix(".sym")]
        if p.parent.name.endswith("_js"):
            cands.insert(0, p.parent.parent / (p.stem + ".sym"))
        for c in cands:
            if c.is_file():
                return str(c)
        return None

    def _input_leaves(self) -> list[str]:
        """Names of the main component's input signals (leaf fields), from the .sym file."""
        from .sym import iter_sym

        sym = self._find_sym()
        if sym is None:
            return []
        main_comp = None
        bases: dict[str, None] = {}
        for e in iter_sym(sym):
            if not e.name.startswith("main."):
                continue
            rest = e.name[5:]
            if main_comp is None:
                if "." in rest:
                    continue
                main_comp = e.component
            if e.component != main_comp:
                continue
            bases[re.sub(r"(\[\d+\])+$", "", rest)] = None
            if len(bases) > 20000:
                break
        leaves = []
        for b in bases:
            h = fnv1a64(b)
            if self._f["getInputSignalSize"](self._store, _i32(h >> 32), _i32(h)) > 0:
                leaves.append(b)
        return leaves

    def _missing_message(self, total: int, n_in: int, given: set[str]) -> str:
        msg = f"{self.name}: inputs set {total} of {n_in}: {n_in - total} input value{'s' * (n_in - total != 1)} missing"
        if total > n_in or "getInputSignalSize" not in self._f:
            return msg
        try:
            leaves = self._input_leaves()
        except Exception as e:  # the hint is best effort; never hide the real error
            _logger.debug("cannot name missing inputs: %s", e)
            return msg

        def covered(leaf: str) -> bool:
            return any(leaf == g or leaf.startswith(g + ".") or leaf.startswith(g + "[") for g in given)

        missing = [x for x in leaves if not covered(x)]
        if missing:
            shown = ", ".join(f"'{x}'" for x in missing[:8]) + (", ..." if len(missing) > 8 else "")
            msg += f" (not given: {shown})"
        return msg

    def __repr__(self) -> str:
        return f"WitnessCalculator({self.name!r}, n_wires={self.n_wires}, n_inputs={self.n_inputs})"
