"""Daemon configuration (TOML, read with tomllib).

Every key is optional and documented in :data:`SCHEMA` (the single source: the loader, the defaults,
``cuzk daemon --print-config`` and the example file ``cuzk/engine/cuzk.example.toml`` all follow it;
a test checks that the example mentions every key). Unknown keys are reported as warnings, never
silently ignored. Sizes are ``"512MiB"``, ``"2GiB"``, ``"1GB"``, ``"auto"`` or a plain byte count;
durations ``"250ms"``, ``"30s"``, ``"5m"``, ``"24h"``, ``"7d"`` or plain seconds. Relative paths are
resolved against the config file's folder; ``~`` is expanded.
"""

from __future__ import annotations

import json
import os
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import CuzkError
from ..backends import check_settings, settings_reference


class ConfigError(CuzkError):
    pass


PRIORITIES = {"low": 1, "normal": 2, "high": 3, "critical": 4}
PRIORITY_NAMES = {v: k.upper() for k, v in PRIORITIES.items()}

# (section, key, default, kind, doc). kind: str, int, bool, size, duration, list, table, float, priority
SCHEMA: list[tuple[str, str, object, str, str]] = [
    (
        "daemon",
        "listen",
        "",
        "str",
        'gRPC endpoint: "unix:///path/cuzk.sock" (socket file mode 0600) or "host:port" / "tcp://host:port". '
        "Default: unix://<state_dir>/cuzk.sock",
    ),
    (
        "daemon",
        "state_dir",
        "",
        "str",
        "folder for the journal, the socket and the WARM SRS cache. Default: $CUZK_STATE_DIR or ~/.local/state/cuzk",
    ),
    (
        "daemon",
        "http_listen",
        "",
        "str",
        'HTTP endpoint for GET /metrics (Prometheus) and GET /status (JSON), e.g. "127.0.0.1:9821"; "" = off. '
        "A non-loopback address needs http_allow_remote",
    ),
    ("daemon", "http_allow_remote", False, "bool", "allow http_listen on a non-loopback address"),
    ("daemon", "max_message_bytes", "128MiB", "size", "gRPC max message size, both directions"),
    (
        "daemon",
        "max_request_bytes",
        "16GiB",
        "size",
        "largest request (all partitions' inputs) accepted through SubmitProofStream, in chunks of at most max_message_bytes",
    ),
    ("daemon", "grpc_threads", 64, "int", "gRPC server threads (each AwaitProof / Prove in progress holds one)"),
    (
        "daemon",
        "drain_timeout",
        "60s",
        "duration",
        "on SIGTERM/SIGINT: stop accepting, let in-flight work finish for at most this long (queued jobs stay "
        "journaled and run after a restart), then exit",
    ),
    (
        "memory",
        "working_memory_budget",
        "auto",
        "size",
        "cap on the estimated working memory of partitions in flight (witness, a/b/c, quotient, MSM scalars); "
        '"auto" = a quarter of the machine\'s memory',
    ),
    ("gpus", "backend", "auto", "str", '"auto" (GPU when one is visible, else CPU), "gpu" or "cpu"'),
    ("gpus", "devices", [], "list", "GPU ordinals to use; [] = every visible GPU"),
    (
        "gpus",
        "affinity",
        {},
        "table",
        'which circuits each GPU proves, e.g. {0 = "circuit-a", 1 = "any"} or {0 = ["a", "b"]}; a GPU not '
        "named takes any circuit; ignored on the CPU backend",
    ),
    (
        "gpus",
        "gpu_workers_per_device",
        2,
        "int",
        "prover workers per GPU (one runs kernels while the other prepares; kernels are serialized per device)",
    ),
    (
        "gpus",
        "pinned_witness",
        False,
        "bool",
        "GPU backend: synthesis workers copy each witness into page-locked memory, so the upload in the "
        "prover is one DMA instead of a copy through a staging buffer on the GPU's critical path",
    ),
    (
        "gpus",
        "cpu_workers",
        1,
        "int",
        "prover workers of the CPU backend (its MSMs already use every core through the MSM thread pool)",
    ),
    ("cpu", "threads", 0, "int", "MSM thread-pool size (CUZK_CPU_THREADS); 0 = all cores"),
    (
        "scheduler",
        "max_batch_size",
        1,
        "int",
        "batch collector for batchable circuits: release a batch at this many jobs (1 = no batching; a batch's "
        "proofs run one after another on its device: proving them in one GPU pass measured no faster, BENCHMARKS 12c)",
    ),
    ("scheduler", "max_batch_wait_ms", 1000, "int", "... or when its first job has waited this long"),
    (
        "scheduler",
        "max_queue_per_circuit",
        1000,
        "int",
        "jobs of one circuit that may be active (queued or in flight) before SubmitProof answers RESOURCE_EXHAUSTED",
    ),
    ("scheduler", "max_pending", 10000, "int", "active jobs of all circuits together (RESOURCE_EXHAUSTED beyond)"),
    (
        "scheduler",
        "max_queue_bytes",
        0,
        "int",
        "input bytes (witnesses, inputs JSON) of all active jobs together before SubmitProof answers "
        "RESOURCE_EXHAUSTED; 0 = no limit",
    ),
    (
        "synthesis",
        "partition_workers",
        2,
        "int",
        "synthesis workers (witness from .wtns or wasm, constraint check); each holds its result until the prover queue takes it",
    ),
    (
        "synthesis",
        "python_processes",
        0,
        "int",
        "Python circuits: worker processes per circuit computing witnesses (a Python witness holds the GIL, so "
        "the synthesis threads alone use one core for them); 0 = in the synthesis threads",
    ),
    (
        "synthesis",
        "check_constraints",
        "auto",
        "str",
        '"always": check every witness against the circuit\'s R1CS before proving; "on_failure": only when a '
        'proof fails its self-check (no cost on the success path); "auto": always on the CPU backend (a wasted '
        "CPU proof costs seconds), on_failure on GPUs. Either way a violation fails the job naming the "
        "constraint and its signals",
    ),
    (
        "synthesis",
        "lc_storage",
        "arrays",
        "str",
        "optimization switch (`cuzk config switches`): how a Python circuit's recording holds its linear "
        'combinations: "arrays" (flat parallel arrays, sorted and merged in blocks) or "dicts" (one dict per row); '
        "CUZK_LC_STORAGE overrides",
    ),
    (
        "synthesis",
        "witness_buffer",
        "presized",
        "str",
        'optimization switch: a Python circuit\'s witness buffers "presized" from the recorded layout (an '
        'over-long witness is refused at once) or "growing"; CUZK_WITNESS_BUFFER overrides',
    ),
    (
        "test",
        "delay_ms",
        0,
        "int",
        "tests only (a hidden switch, honoured only when CUZK_TEST_SWITCHES=1): every proof sleeps this long in "
        "the prover (phase test_delay), a deliberately slow configuration for `cuzk tune`'s tests",
    ),
    (
        "test",
        "noop",
        False,
        "bool",
        "tests only (a hidden switch, honoured only when CUZK_TEST_SWITCHES=1): read by the prover and changes "
        "nothing, the no-op reference for `cuzk tune`'s tests",
    ),
    ("pipeline", "prover_queue_depth", 0, "int", "synthesized partitions waiting for a prover worker; 0 = one per prover worker"),
    (
        "pipeline",
        "finalizer_threads",
        2,
        "int",
        "threads running prove_finish (MSM wait, assembly, self-check), per device; also the proofs in flight "
        "between prove_start and prove_finish per device",
    ),
    ("srs", "param_cache", "", "str", "folder of the WARM tier's cache files; default <state_dir>/srs"),
    (
        "srs",
        "hot_budget",
        "auto",
        "size",
        'bytes of HOT SRS per device (GPU memory, or arkworks objects for the CPU backend); "auto" = half of the '
        "device memory / a third of the machine's memory",
    ),
    ("srs", "warm_budget", "auto", "size", 'bytes of WARM cache files kept; "auto" = a half of the machine\'s memory'),
    ("srs", "preload", [], "list", "circuit ids made HOT at start-up"),
    (
        "security",
        "tls_cert",
        "",
        "str",
        'PEM server certificate (chain) for TLS on the TCP gRPC listener and the HTTP endpoint; "" = no TLS. '
        "The unix socket never uses TLS (it is private by its file mode)",
    ),
    ("security", "tls_key", "", "str", "PEM private key of tls_cert"),
    (
        "security",
        "tls_client_ca",
        "",
        "str",
        'PEM CA bundle: when set, clients must present a certificate it signed (mutual TLS); "" = not asked',
    ),
    (
        "security",
        "tokens_file",
        "",
        "str",
        "bearer-token file (SHA-256 hashes, mode 0600; managed by `cuzk token add|list|revoke`); when set, every "
        'gRPC call on TCP and every HTTP request needs "authorization: Bearer <token>"; "" = no authentication',
    ),
    (
        "security",
        "unix_trusted",
        True,
        "bool",
        "calls on the unix socket without a token are trusted as admin (the socket is 0600 in a 0700 folder: "
        "only the daemon's user can connect; this is how Curio, which sends no token, connects). A token sent on "
        "the socket is still checked. false = tokens required on the socket too",
    ),
    (
        "security",
        "insecure",
        False,
        "bool",
        "allow a non-loopback gRPC/HTTP listener without both TLS and tokens (warned at every start)",
    ),
    ("security", "http_read_timeout", "10s", "duration", "HTTP endpoint: a connection idle this long is closed"),
    ("security", "http_max_connections", 32, "int", "HTTP endpoint: connections served at once; more are closed at once"),
    (
        "registration",
        "roots",
        [],
        "list",
        "folders whose files RegisterCircuit (the RPC) may name (r1cs, keys, wasm, sym), symlinks resolved; a "
        "path with a .. component or outside every root is refused; [] = the RPC may not name server-side files "
        "(circuits of the config file are trusted and not checked)",
    ),
    (
        "registration",
        "python_modules",
        ["cuzk."],
        "list",
        'module-name prefixes a Python circuit registered by RPC may import (python = "pkg.mod:Class"; "cuzk." '
        'allows cuzk\'s own circuits, "mypkg" exactly mypkg, "mypkg." its submodules); config-file circuits are trusted',
    ),
    (
        "registration",
        "max_upload_bytes",
        "256MiB",
        "size",
        "RegisterCircuit may upload a circuit's files (r1cs, key, wasm, sym) instead of naming server-side paths: "
        "at most this many bytes in all per request (stored under <state_dir>/circuits, 0600, named by their "
        "SHA-256; RegisterCircuitStream carries uploads larger than daemon.max_message_bytes); 0 = uploads refused",
    ),
    ("journal", "path", "", "str", "SQLite journal (WAL) of accepted jobs and results; default <state_dir>/journal.sqlite"),
    (
        "journal",
        "url",
        "",
        "str",
        'PostgreSQL journal shared by a cluster of daemons: "postgresql://[user[:password]@][host][:port]/dbname[?options]" '
        '(schema made by `cuzk journal migrate --url URL`); "" = the SQLite journal (journal.path)',
    ),
    ("journal", "retention", "24h", "duration", "finished results stay retrievable by job id for this long"),
    ("journal", "synchronous", "full", "str", 'SQLite synchronous mode: "full" (fsync per commit) or "normal"'),
    (
        "journal",
        "max_attempts",
        3,
        "int",
        "runs of a job the daemon may die in; a job begun this many times is FAILED (quarantined) at the next start",
    ),
    (
        "inputs",
        "roots",
        [],
        "list",
        "folders whose files a request may name as a partition's input (witness_path, vanilla_proof_path) instead "
        "of sending the bytes; symlinks resolved, .. refused; in a cluster every host mounts them at the same path "
        "(the host that proves the job reads the file, checked against the size and SHA-256 taken at submission); "
        "[] = inputs by reference are refused",
    ),
    ("inputs", "max_file_bytes", "8GiB", "size", "largest input file a request may name (inputs.roots)"),
    (
        "cluster",
        "host",
        "",
        "str",
        "this daemon's name in a cluster (journal.url set): claims, leases and `cuzk cluster status` name it; "
        '"" = <hostname>:<state_dir> (unique per daemon, the same after a restart)',
    ),
    (
        "cluster",
        "lease",
        "30s",
        "duration",
        "a claimed job's lease: renewed every quarter of it; a host that stops renewing (killed, cut off) loses its "
        "jobs this long after its last heartbeat, and another host proves them",
    ),
    (
        "cluster",
        "poll",
        "250ms",
        "duration",
        "how often an idle host looks for queued work, and an AwaitProof for a job proved elsewhere re-reads it",
    ),
    (
        "cluster",
        "claim_ahead",
        0,
        "int",
        "partitions a host holds claimed but not started (beyond those in flight); 0 = 2 per prover worker",
    ),
    (
        "cluster",
        "affinity_delay",
        "2s",
        "duration",
        "SRS affinity: a host without the circuit's key HOT claims its jobs only after they waited this long "
        "(CRITICAL ones at once), so a host with the key takes them first; 0 = off",
    ),
    (
        "cluster",
        "inline_bytes",
        "64MiB",
        "size",
        "inputs up to this size travel in the database; larger ones are files in cluster.shared_dir",
    ),
    (
        "cluster",
        "shared_dir",
        "",
        "str",
        'a folder every host of the cluster mounts, for inputs above cluster.inline_bytes; "" = such inputs are '
        "refused (RESOURCE_EXHAUSTED naming the limit)",
    ),
    ("logging", "level", "info", "str", "debug, info, warning, error"),
    ("logging", "format", "kv", "str", '"kv" (key=value) or "json" (one object per line)'),
    ("logging", "file", "", "str", 'log file; "" = stderr'),
    (
        "logging",
        "timeline",
        "",
        "str",
        'file that receives one TIMELINE CSV line per pipeline event (cuzk-bench timeline reads it); "" = off '
        "(CUZK_TIMELINE=1 also writes them to stderr)",
    ),
    (
        "curio",
        "enabled",
        True,
        "bool",
        "also serve the original Curio cuzk daemon's API (gRPC cuzk.v1.ProvingEngine, proto/curio/cuzk/v1/proving.proto) "
        "on daemon.listen, beside cuzk's own (cuzk.daemon.v1), so Curio's client works unchanged",
    ),
    (
        "curio",
        "circuits",
        {},
        "table",
        "which registered circuit proves a Curio request: <kind>_<registered_proof> = circuit id, kind one of porep "
        "(POREP_SEAL_COMMIT), snap (SNAP_DEALS_UPDATE), wpost (WINDOW_POST_PARTITION), winning (WINNING_POST), "
        'registered_proof Filecoin\'s number, e.g. {porep_5 = "porep-2k"} (RegisteredSealProof 5 = StackedDrg2KiBV1_1); '
        "a request with no entry is refused naming the key it needs",
    ),
]

CIRCUIT_KEYS: list[tuple[str, object, str, str]] = [
    ("id", "", "str", "circuit id used in requests (required)"),
    ("r1cs", "", "str", "circom .r1cs (this or python): constraint checks and bellperson densities"),
    ("python", "", "str", "a Python circuit, package.module:ClassName (this or r1cs; recorded once, cached)"),
    ("python_params", {}, "params", "the Python circuit's parameters (a table; by RPC a JSON object)"),
    ("zkey", "", "str", "snarkjs proving key (this or params)"),
    ("params", "", "str", "bellperson .params (this or zkey)"),
    ("wasm", "", "str", "circom witness generator, needed for requests that send inputs_json"),
    ("sym", "", "str", "circom .sym, to name the signals of a violated constraint"),
    ("default_priority", "normal", "priority", "priority of requests that leave it unspecified"),
    (
        "deadline",
        "0s",
        "duration",
        "submit-to-proof time a job of this circuit must meet (a WinningPoSt's epoch); each job's status says met or "
        "missed; 0 = none",
    ),
    (
        "witness_timeout",
        "60s",
        "duration",
        "longest one wasm witness calculation may run (a looping or too-slow wasm fails its own job and frees "
        "its worker); 0 = the default 60s; at most 1h",
    ),
    ("batchable", False, "bool", "jobs may be collected into batches (scheduler.max_batch_*)"),
    ("partitions", 1, "int", "proofs per request (each request carries one witness/inputs per partition)"),
    ("max_queue", 0, "int", "active jobs of this circuit; 0 = scheduler.max_queue_per_circuit"),
]

WITNESS_TIMEOUT_DEFAULT = 60.0  # seconds (a circuit's witness_timeout of 0)
WITNESS_TIMEOUT_MAX = 3600.0

_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]i?b?|b)?\s*$", re.IGNORECASE)
_UNITS = {
    "": 1,
    "b": 1,
    "k": 1e3,
    "kb": 1e3,
    "kib": 1024,
    "m": 1e6,
    "mb": 1e6,
    "mib": 1024**2,
    "g": 1e9,
    "gb": 1e9,
    "gib": 1024**3,
    "t": 1e12,
    "tb": 1e12,
    "tib": 1024**4,
}
_DUR = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?\s*$", re.IGNORECASE)
_DUR_UNITS = {"": 1.0, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def parse_size(v: object, where: str) -> int | None:
    """Bytes; None for "auto"."""
    if isinstance(v, bool):
        raise ConfigError(f'{where}: expected a size like "2GiB", got {v!r}')
    if isinstance(v, int):
        if v < 0:
            raise ConfigError(f"{where}: negative size {v}")
        return v
    if isinstance(v, str):
        if v.strip().lower() == "auto":
            return None
        m = _SIZE.match(v)
        if m:
            return int(float(m.group(1)) * _UNITS[(m.group(2) or "").lower()])
    raise ConfigError(f'{where}: expected a size like "512MiB", "2GiB", "auto" or a byte count, got {v!r}')


def parse_duration(v: object, where: str) -> float:
    """Seconds."""
    if isinstance(v, bool):
        raise ConfigError(f'{where}: expected a duration like "30s", got {v!r}')
    if isinstance(v, (int, float)):
        if v < 0:
            raise ConfigError(f"{where}: negative duration {v}")
        if not float(v) < float("inf"):  # NaN or infinite (a double from an RPC)
            raise ConfigError(f"{where}: expected a finite duration, got {v}")
        return float(v)
    if isinstance(v, str):
        m = _DUR.match(v)
        if m:
            return float(m.group(1)) * _DUR_UNITS[(m.group(2) or "").lower()]
    raise ConfigError(f'{where}: expected a duration like "250ms", "30s", "5m", "24h" or seconds, got {v!r}')


def parse_priority(v: object, where: str) -> int:
    if isinstance(v, int) and not isinstance(v, bool) and 1 <= v <= 4:
        return v
    if isinstance(v, str) and v.strip().lower() in PRIORITIES:
        return PRIORITIES[v.strip().lower()]
    raise ConfigError(f"{where}: expected a priority (low, normal, high, critical), got {v!r}")


def parse_affinity(table: dict[Any, Any], where: str) -> dict[int, frozenset[str] | None]:
    """{ordinal: allowed circuit ids, or None for "any"} from the TOML table (keys are strings there)."""
    out: dict[int, frozenset[str] | None] = {}
    for k, v in table.items():
        try:
            o = int(k)
        except (TypeError, ValueError):
            o = -1
        if o < 0 or isinstance(k, bool):
            raise ConfigError(f"{where}: key {k!r} is not a GPU ordinal (an integer >= 0)")
        ids = [v] if isinstance(v, str) else v
        if not isinstance(ids, list) or not ids or not all(isinstance(x, str) and x for x in ids):
            raise ConfigError(f'{where}.{k}: expected "any", a circuit id or a list of circuit ids, got {v!r}')
        out[o] = None if "any" in ids else frozenset(ids)
    return out


# the original Curio daemon's ProofKind values, by the names [curio] circuits uses
CURIO_KINDS = {"porep": 1, "snap": 2, "wpost": 3, "winning": 4}


def parse_curio_circuits(table: dict[Any, Any], where: str) -> dict[tuple[int, int], str]:
    """{(proof kind, registered proof): circuit id} from ``[curio] circuits`` (keys like "porep_5")."""
    out: dict[tuple[int, int], str] = {}
    for k, v in table.items():
        m = re.fullmatch(r"([a-z]+)_(\d{1,9})", str(k))
        if m is None or m.group(1) not in CURIO_KINDS:
            raise ConfigError(
                f"{where}: key {k!r}: expected <kind>_<registered proof number>, kind one of {', '.join(CURIO_KINDS)} "
                '(e.g. porep_5 = "porep-2k")'
            )
        if not isinstance(v, str) or not v:
            raise ConfigError(f"{where}.{k}: expected a circuit id, got {v!r}")
        out[(CURIO_KINDS[m.group(1)], int(m.group(2)))] = v
    return out


def _convert(kind: str, v: Any, where: str) -> Any:
    if kind == "str":
        if not isinstance(v, str):
            raise ConfigError(f"{where}: expected a string, got {v!r}")
        return v
    if kind == "int":
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise ConfigError(f"{where}: expected a non-negative integer, got {v!r}")
        return v
    if kind == "bool":
        if not isinstance(v, bool):
            raise ConfigError(f"{where}: expected true or false, got {v!r}")
        return v
    if kind == "list":
        if not isinstance(v, list):
            raise ConfigError(f"{where}: expected a list, got {v!r}")
        return list(v)
    if kind == "table":
        if not isinstance(v, dict):
            raise ConfigError(f'{where}: expected a table like {{0 = "circuit-a", 1 = "any"}}, got {v!r}')
        return dict(v)
    if kind == "params":
        if isinstance(v, str):
            try:
                v = json.loads(v) if v.strip() else {}
            except json.JSONDecodeError as e:
                raise ConfigError(f"{where}: not a JSON object: {e.msg} at column {e.colno}") from None
        if not isinstance(v, dict):
            raise ConfigError(f"{where}: expected a table (JSON object) of parameters, got {v!r}")
        return dict(v)
    if kind == "size":
        return parse_size(v, where)
    if kind == "duration":
        return parse_duration(v, where)
    if kind == "priority":
        return parse_priority(v, where)
    raise AssertionError(kind)


class Section:
    def __init__(self, name: str, values: dict[str, Any]) -> None:
        self._name = name
        self.__dict__.update(values)

    def as_dict(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if not k.startswith("_")}

    def __repr__(self) -> str:
        return f"[{self._name}] {self.as_dict()}"


@dataclass
class CircuitConfig:
    id: str
    r1cs: str = ""
    zkey: str = ""
    params: str = ""
    wasm: str = ""
    sym: str = ""
    default_priority: int = 2
    deadline: float = 0.0  # seconds; 0 = none
    witness_timeout: float = WITNESS_TIMEOUT_DEFAULT  # seconds of one wasm witness calculation
    batchable: bool = False
    partitions: int = 1
    max_queue: int = 0
    python: str = ""  # package.module:ClassName
    python_params: dict[str, Any] = field(default_factory=dict)

    def key_path(self) -> str:
        return self.zkey or self.params

    def key_format(self) -> str:
        return "zkey" if self.zkey else "params"

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def validate_circuit(d: dict[str, Any], where: str, base: Path | None = None) -> CircuitConfig:
    out = {}
    known = {k for k, *_ in CIRCUIT_KEYS}
    for k in d:
        if k not in known:
            raise ConfigError(f"{where}: unknown key {k!r} (known: {', '.join(sorted(known))})")
    for k, default, kind, _doc in CIRCUIT_KEYS:
        v = d.get(k, default)
        out[k] = _convert(kind, v, f"{where}.{k}")
    if not out["id"] or not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,127}", out["id"]):
        raise ConfigError(f"{where}.id: {out['id']!r} is not a valid circuit id (letters, digits, . _ : -; at most 128)")
    if bool(out["r1cs"]) == bool(out["python"]):
        raise ConfigError(f"{where}: give exactly one circuit, r1cs (a circom .r1cs) or python (package.module:ClassName)")
    if out["python_params"] and not out["python"]:
        raise ConfigError(f"{where}.python_params: only for a python circuit")
    if out["python"] and out["wasm"]:
        raise ConfigError(f"{where}.wasm: a python circuit computes its own witness; leave wasm out")
    if bool(out["zkey"]) == bool(out["params"]):
        raise ConfigError(f"{where}: give exactly one proving key, zkey or params")
    out["partitions"] = max(out["partitions"], 1)
    if out["witness_timeout"] > WITNESS_TIMEOUT_MAX:
        raise ConfigError(
            f"{where}.witness_timeout: {out['witness_timeout']:g}s is above the limit of {WITNESS_TIMEOUT_MAX:g}s (1h)"
        )
    for k in ("r1cs", "zkey", "params", "wasm", "sym"):
        if out[k]:
            p = Path(os.path.expanduser(out[k]))
            if base is not None and not p.is_absolute():
                p = base / p
            out[k] = str(p.resolve())  # relative to the config file, or (RPC) to the daemon's folder
    return CircuitConfig(**out)


@dataclass
class Config:
    sections: dict[str, Section]
    circuits: list[CircuitConfig] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    path: str = ""
    gpu: dict[str, Any] = field(default_factory=dict)  # the [gpu] table: the GPU backend's switches
    # where each key set explicitly came from: "section.key" -> "config" (the file) or "override" (--set, ...)
    sources: dict[str, str] = field(default_factory=dict)

    def __getattr__(self, name: str) -> Any:  # the sections: cfg.gpus.backend
        try:
            return self.__dict__["sections"][name]
        except KeyError:
            raise AttributeError(name) from None

    # -- resolved paths ------------------------------------------------------------------------
    @property
    def state_dir(self) -> Path:
        d = self.daemon.state_dir or os.environ.get("CUZK_STATE_DIR") or "~/.local/state/cuzk"
        return Path(os.path.expanduser(d))

    @property
    def listen(self) -> str:
        return self.daemon.listen or f"unix://{self.state_dir / 'cuzk.sock'}"

    @property
    def journal_path(self) -> Path:
        return Path(os.path.expanduser(self.journal.path)) if self.journal.path else self.state_dir / "journal.sqlite"

    @property
    def srs_cache_dir(self) -> Path:
        return Path(os.path.expanduser(self.srs.param_cache)) if self.srs.param_cache else self.state_dir / "srs"


def check_journal_url(url: str, where: str) -> None:
    """A ``journal.url`` ("" or a PostgreSQL URL); ConfigError (one line, no password) if it is neither."""
    if not url:
        return
    from urllib.parse import urlsplit

    want = 'expected "postgresql://[user[:password]@][host][:port]/dbname[?options]" ("" = the SQLite journal)'
    try:
        p = urlsplit(url)
        p.port  # noqa: B018 (raises ValueError on a malformed port)
    except ValueError:
        raise ConfigError(f"{where}: {want}: the URL does not parse") from None
    if p.scheme not in ("postgresql", "postgres"):
        raise ConfigError(f"{where}: {want}, got a URL of scheme {p.scheme or '(none)'!r}")
    if not p.path.strip("/") and "dbname=" not in p.query:
        raise ConfigError(f"{where}: {want}: the URL names no database")
    try:
        from psycopg.conninfo import conninfo_to_dict
    except ImportError:
        return
    try:
        conninfo_to_dict(url)
    except Exception as e:
        first = (str(e).strip().splitlines() or ["malformed"])[0]
        raise ConfigError(f"{where}: {want}: {first}") from None


def load_config(
    path: str | os.PathLike[str] | None = None, overrides: dict[str, Any] | None = None, text: str | None = None
) -> Config:
    """Read a config file (None: defaults only); ``overrides`` maps "section.key" to a value."""
    raw: dict[str, Any] = {}
    base = None
    if text is not None:
        where = "<config>"
        try:
            raw = tomllib.loads(text)
        except tomllib.TOMLDecodeError as e:
            raise ConfigError(f"{where}: malformed TOML: {e}") from None
    elif path is not None:
        where = os.fspath(path)
        try:
            with open(path, "rb") as fh:
                raw = tomllib.load(fh)
        except OSError as e:
            raise ConfigError(f"{where}: cannot read config: {e.strerror or e}") from None
        except tomllib.TOMLDecodeError as e:
            raise ConfigError(f"{where}: malformed TOML: {e}") from None
        base = Path(where).resolve().parent
    else:
        where = "<defaults>"
    warnings = []
    sections: dict[str, dict[str, Any]] = {}
    known_sections = {s for s, *_ in SCHEMA} | {"circuits", "gpu"}
    for s in raw:
        if s not in known_sections:
            warnings.append(f"{where}: unknown section [{s}] ignored")
        elif s != "circuits" and not isinstance(raw[s], dict):
            raise ConfigError(f"{where}: [{s}] must be a table")
    for s, k, default, kind, _doc in SCHEMA:
        sect = raw.get(s, {})
        v = sect.get(k, default) if isinstance(sect, dict) else default
        sections.setdefault(s, {})[k] = _convert(kind, v, f"{where}: {s}.{k}")
    gpu_table = dict(raw.get("gpu", {}))
    try:
        check_settings("gpu", gpu_table)
    except ValueError as e:
        raise ConfigError(f"{where}: {e}") from None
    sources = {f"{s}.{k}": "config" for s, sect in raw.items() if s != "circuits" and isinstance(sect, dict) for k in sect}
    for s, sect in raw.items():
        if s in sections and isinstance(sect, dict):
            for k in sect:
                if k not in sections[s]:
                    warnings.append(f"{where}: unknown key {s}.{k} ignored")
    for dotted, v in (overrides or {}).items():
        s, _, k = dotted.partition(".")
        if s == "gpu" and k:  # the GPU backend's switches, each checked alone (they are independent)
            try:
                check_settings("gpu", {k: v}, prefix="gpu.")
            except ValueError as e:
                raise ConfigError(str(e)) from None
            gpu_table[k] = v
            sources[dotted] = "override"
            continue
        spec = next((x for x in SCHEMA if x[0] == s and x[1] == k), None)
        if spec is None:
            raise ConfigError(f"unknown config key {dotted} (`cuzk daemon --print-config` lists every key)")
        sections[s][k] = _convert(spec[3], v, dotted)
        sources[dotted] = "override"

    def loc(s: str, k: str) -> str:  # how an error names a key: by the file, or alone when an override set it
        return f"{s}.{k}" if sources.get(f"{s}.{k}") == "override" else f"{where}: {s}.{k}"

    from ..circuit.cs import SWITCHES as SYNTHESIS_SWITCHES

    for k, choices in SYNTHESIS_SWITCHES.items():
        if sections["synthesis"][k] not in choices:
            raise ConfigError(f"{loc('synthesis', k)} = {sections['synthesis'][k]!r}: expected {' or '.join(choices)}")
    # paths relative to the config file
    if base is not None:
        for s, k in (
            ("daemon", "state_dir"),
            ("srs", "param_cache"),
            ("journal", "path"),
            ("cluster", "shared_dir"),
            ("logging", "file"),
            ("logging", "timeline"),
            ("security", "tls_cert"),
            ("security", "tls_key"),
            ("security", "tls_client_ca"),
            ("security", "tokens_file"),
        ):
            v = sections[s][k]
            if v and not os.path.isabs(os.path.expanduser(v)):
                sections[s][k] = str(base / v)
    for sect in ("registration", "inputs"):
        if not all(isinstance(r, str) and r for r in sections[sect]["roots"]):
            raise ConfigError(f"{where}: {sect}.roots: expected a list of folder paths")
        sections[sect]["roots"] = [
            str(p if p.is_absolute() or base is None else base / p)
            for p in (Path(os.path.expanduser(r)) for r in sections[sect]["roots"])
        ]
    if sections["inputs"]["max_file_bytes"] is None:
        raise ConfigError(f'{where}: inputs.max_file_bytes: expected a size like "8GiB" ("auto" is not accepted)')
    if not all(isinstance(m, str) and m for m in sections["registration"]["python_modules"]):
        raise ConfigError(f"{where}: registration.python_modules: expected a list of module-name prefixes")
    if sections["registration"]["max_upload_bytes"] is None:
        raise ConfigError(f'{where}: registration.max_upload_bytes: expected a size like "256MiB" or 0 ("auto" is not accepted)')
    if not sections["daemon"]["max_message_bytes"]:  # "auto" (None) or 0: gRPC needs a real limit
        raise ConfigError(f'{where}: daemon.max_message_bytes: expected a size like "128MiB" ("auto" and 0 are not accepted)')
    fmt = sections["logging"]["format"]
    if fmt not in ("kv", "json"):
        raise ConfigError(f'{where}: logging.format: expected "kv" or "json", got {fmt!r}')
    if sections["journal"]["synchronous"] not in ("full", "normal"):
        raise ConfigError(f'{where}: journal.synchronous: expected "full" or "normal"')
    check_journal_url(sections["journal"]["url"], f"{where}: journal.url")
    if not sections["cluster"]["lease"] >= 1.0:
        raise ConfigError(f"{where}: cluster.lease: at least 1s (heartbeats renew it every quarter)")
    if sections["cluster"]["inline_bytes"] is None:
        raise ConfigError(f'{where}: cluster.inline_bytes: expected a size like "64MiB" ("auto" is not accepted)')
    if sections["synthesis"]["check_constraints"] not in ("auto", "always", "on_failure"):
        raise ConfigError(f'{where}: synthesis.check_constraints: expected "auto", "always" or "on_failure"')
    if sections["gpus"]["backend"] not in ("auto", "cpu", "gpu"):
        raise ConfigError(f"{where}: gpus.backend: expected auto, cpu or gpu")
    for dev in sections["gpus"]["devices"]:
        if isinstance(dev, bool) or not isinstance(dev, int) or dev < 0:
            raise ConfigError(f"{where}: gpus.devices: expected GPU ordinals (integers >= 0), got {dev!r}")
    sections["gpus"]["affinity"] = parse_affinity(sections["gpus"]["affinity"], f"{where}: gpus.affinity")
    sections["curio"]["circuits"] = parse_curio_circuits(sections["curio"]["circuits"], f"{where}: curio.circuits")
    for cid in sections["srs"]["preload"]:
        if not isinstance(cid, str):
            raise ConfigError(f"{where}: srs.preload: expected circuit ids (strings), got {cid!r}")
    circuits = []
    rc = raw.get("circuits", [])
    if not isinstance(rc, list):
        raise ConfigError(f"{where}: circuits must be an array of tables ([[circuits]])")
    seen = set()
    for i, c in enumerate(rc):
        if not isinstance(c, dict):
            raise ConfigError(f"{where}: circuits[{i}] must be a table")
        cc = validate_circuit(c, f"{where}: circuits[{i}]", base)
        if cc.id in seen:
            raise ConfigError(f"{where}: circuits[{i}].id: {cc.id!r} defined twice")
        seen.add(cc.id)
        circuits.append(cc)
    return Config({n: Section(n, v) for n, v in sections.items()}, circuits, warnings, where, gpu_table, sources)


def parse_override(item: str) -> tuple[str, Any]:
    """``--set KEY=VALUE`` -> ("section.key", value): the value as a TOML literal when it is one (2, true,
    "x", [0, 1]), else the text itself (cpu, dicts, NAME=1,NAME2=2). ConfigError (one line) if malformed."""
    key, eq, text = item.partition("=")
    key = key.strip()
    if not eq or not re.fullmatch(r"[a-z_]+\.[a-z0-9_]+", key):
        raise ConfigError(f"--set {item!r}: expected KEY=VALUE with KEY as section.key, e.g. gpu.ntt_radix=2")
    text = text.strip()
    try:
        value = tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        value = text
    return key, value


def toml_value(v: object) -> str:
    """``v`` as a TOML literal (a --set value, a config fragment)."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return str(v)
    if isinstance(v, list):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k} = {toml_value(x)}" for k, x in v.items()) + "}"
    return '"' + str(v).replace("\\", "\\\\").replace('"', '\\"') + '"'


def reference_text() -> str:
    """Every key with its default and documentation, as TOML (``cuzk daemon --print-config``)."""
    out = ["# cuzk daemon configuration: every key, its default and what it does."]
    cur = None
    for s, k, default, _kind, doc in SCHEMA:
        if s != cur:
            out += ["", f"[{s}]"]
            cur = s
        out.append(f"# {doc}")
        out.append(f"{k} = {toml_value(default)}")
    out += ["", "# The GPU backend's switches (defaults: the measured winners; CUZK_* variables override them)", "[gpu]"]
    for k, default, doc in settings_reference("gpu"):
        out.append(f"# {doc}")
        out.append(f"{k} = {toml_value(list(default) if isinstance(default, tuple) else default)}")
    out += ["", "# One table per circuit (also registrable at run time with the RegisterCircuit RPC).", "# [[circuits]]"]
    for k, default, _kind, doc in CIRCUIT_KEYS:
        out.append(f"# {k} = {toml_value(default)}    # {doc}")
    return "\n".join(out) + "\n"


def machine_memory() -> int:
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 16 << 30
