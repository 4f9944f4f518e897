"""The GPU backend's switches, in one object, read once.

:class:`GpuConfig` holds every switch of the GPU path with its default (the measured winner,
BENCHMARKS.md sections 2b-2f; the alternatives are real trade-offs a tuning step measures per machine)
and its meaning. Where it comes from:

- the daemon's TOML section ``[gpu]``, keys = the field names: :meth:`GpuConfig.from_mapping`;
- the environment, an override for benchmarks and debugging, one variable per field (``CUZK_B_G2``,
  ``CUZK_MSM_ACC``, ...: :data:`ENV`): :meth:`GpuConfig.from_env`, applied on top of a base config.

The process-wide config is :func:`current` (built from the environment on first use) and is replaced
with :func:`configure` (the daemon: ``configure(GpuConfig.from_env(GpuConfig.from_mapping(toml["gpu"])))``)
or, for a measurement or a test, temporarily with :func:`using`. Nothing else in ``cuzk.backends.gpu``
reads the environment.

Compile-time parameters (the launch-bound register caps, free-form ``#define`` lists) select a kernel
build; :meth:`GpuConfig.defines` gives a module's list, and each build is cached apart.
"""

from __future__ import annotations

import dataclasses
import os
import re
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

Defines = tuple[tuple[str, str], ...]

# register caps: (field, module, #define, the module's built-in default; the .cu files hold the same
# number, checked by tests/test_gpu_config.py). A cap equal to the built-in default adds no #define,
# so the default build's source, cache key and cubin stay those of a build without any.
REGISTER_CAPS = (
    ("acc_minb", "msm", "CUZK_ACC_MINB", 3),
    ("acc2_minb", "msm", "CUZK_ACC2_MINB", 2),
    ("ntt_minb", "ntt", "CUZK_NTT_MINB", 3),
)


def _f(default, env: str, doc: str, choices: tuple = (), kind: str = ""):
    return field(default=default, metadata={"env": env, "doc": doc, "choices": choices, "kind": kind})


@dataclass(frozen=True)
class GpuConfig:
    """Switches of the GPU backend (defaults first in every ``choices``). Frozen: change one with
    ``dataclasses.replace`` or :func:`using`."""

    # prover placement and the witness upload (read by backend.py)
    b_g2: str = _f("gpu", "CUZK_B_G2", "B_G2 MSM on the device or on CPU threads", ("gpu", "cpu"))
    pinned: bool = _f(True, "CUZK_PINNED", "witness upload through a reused pinned staging buffer (else pageable)")
    upload_copy: str = _f(
        "parallel",
        "CUZK_UPLOAD_COPY",
        "the copy into the pinned staging buffer on every core or on one thread (2^26: 102 vs 272 ms)",
        ("parallel", "single"),
    )
    # NTT (ntt_batch: backend.py; the others: ntt.py)
    ntt_batch: bool = _f(True, "CUZK_NTT_BATCH", "the prover's a, b, c in one batched NTT launch per pass (else one by one)")
    ntt_radix: int = _f(4, "CUZK_NTT_RADIX", "butterfly stages per barrier: radix 4 (two) or radix 2 (one)", (4, 2))
    ntt_plan: str = _f(
        "auto",
        "CUZK_NTT_PLAN",
        "grouping of the NTT's stages into passes (auto: balanced where greedy would leave a pass of 1-3 stages)",
        ("auto", "greedy", "balanced"),
    )
    ntt_fused: bool = _f(
        False,
        "CUZK_NTT_FUSED",
        "the NTT's scalings folded into other passes (a tiled bit reversal that scales, the coset NTT's first "
        "pass) instead of a pass of their own; not yet measured",
    )
    # MSM (msm.py)
    msm_acc: str = _f(
        "even",
        "CUZK_MSM_ACC",
        "bucket accumulation: S entries per thread across buckets, or one thread per work item of a bucket",
        ("even", "items"),
    )
    msm_ones: str = _f(
        "compact",
        "CUZK_MSM_ONES",
        "the sum of the bases whose scalar is one: compacted indices, or a masked grid-stride loop",
        ("compact", "masked"),
    )
    msm_table: str = _f(
        "auto",
        "CUZK_MSM_TABLE",
        "precomputed multiples 2^(c j) P of the H bases kept beside the SRS (auto: as many copies as the free memory allows)",
        ("auto", "off"),
    )
    msm_window: int = _f(0, "CUZK_MSM_WINDOW", "force the MSM window bits (2-31); 0 = chosen per MSM", kind="window")
    msm_even_s: int = _f(
        64, "CUZK_MSM_EVEN_S", "entries per thread of the even accumulation; 0 = chosen per MSM by the GPU's fill", kind="count"
    )
    # compile-time: launch-bound register caps (minimum resident blocks per SM; 0 = ptxas decides)
    acc_minb: int = _f(3, "CUZK_ACC_MINB", "register cap of the G1 accumulation kernels (msm module)", kind="cap")
    acc2_minb: int = _f(2, "CUZK_ACC2_MINB", "register cap of the G2 accumulation kernels (msm module)", kind="cap")
    ntt_minb: int = _f(3, "CUZK_NTT_MINB", "register cap of the radix-4 NTT pass (ntt module)", kind="cap")
    # compile-time: free-form #defines, for every module or one module in its place
    kernel_defines: tuple[tuple[str, str], ...] = _f(
        (), "CUZK_KERNEL_DEFINES", "#defines for every module, NAME=VALUE,...", kind="defines"
    )
    module_defines: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = _f(
        (), "CUZK_KERNEL_DEFINES_<MODULE>", "#defines for one module instead of kernel_defines", kind="module_defines"
    )
    # debugging aids
    sync_launch: bool = _f(False, "CUZK_SYNC_LAUNCH", "wait for every kernel at its launch, so a fault names the kernel (slower)")
    msm_profile: bool = _f(False, "CUZK_MSM_PROFILE", "per-kernel CUDA-event profile of the MSM phases (benchmarks)")
    poison: bool = _f(False, "CUZK_GPU_POISON", "fill the MSM's scratch outputs with 0xFF first (tests)")

    def __post_init__(self):
        for f in dataclasses.fields(self):
            _check(f, getattr(self, f.name), f.name)

    # ---- builders

    @classmethod
    def from_mapping(cls, d: Mapping, base: GpuConfig | None = None, prefix: str = "[gpu] ") -> GpuConfig:
        """A config from a TOML ``[gpu]`` table (keys = field names; values as TOML types: strings,
        booleans, integers; defines as "NAME=VALUE,..." strings, lists of such, or tables), over
        ``base`` (the defaults when None). A wrong key or value raises ValueError naming it (as
        ``prefix`` + key: "[gpu] b_g2", or "gpu.b_g2" for a ``--set``) and what is expected."""
        if not isinstance(d, Mapping):
            raise ValueError(f"[gpu] must be a table, got {type(d).__name__}")
        fields = {f.name: f for f in dataclasses.fields(cls)}
        changes = {}
        for key, value in d.items():
            f = fields.get(key)
            if f is None:
                raise ValueError(f"{prefix}{key}: unknown key (expected one of {', '.join(fields)})")
            changes[key] = _convert(f, value, f"{prefix}{key}")
        return dataclasses.replace(base or cls(), **changes)

    @classmethod
    def from_env(cls, base: GpuConfig | None = None, environ: Mapping[str, str] | None = None) -> GpuConfig:
        """``base`` (the defaults when None) with every switch set in the environment overriding it
        (an empty variable counts as unset). A wrong value raises ValueError naming the variable."""
        env = os.environ if environ is None else environ
        changes: dict = {}
        for f in dataclasses.fields(cls):
            if f.name == "module_defines":
                per = {
                    k[len("CUZK_KERNEL_DEFINES_") :].lower(): v
                    for k, v in env.items()
                    if k.startswith("CUZK_KERNEL_DEFINES_") and len(k) > len("CUZK_KERNEL_DEFINES_")
                }
                if per:
                    merged = dict(base.module_defines if base else ())
                    for module, spec in per.items():
                        merged[module] = _convert_defines(spec, f"CUZK_KERNEL_DEFINES_{module.upper()}")
                    changes[f.name] = tuple(sorted(merged.items()))
                continue
            raw = env.get(f.metadata["env"], "")
            if raw != "":
                changes[f.name] = _convert(f, raw, f.metadata["env"], from_text=True)
        return dataclasses.replace(base or cls(), **changes)

    # ---- what the modules read

    def defines(self, module: str) -> Defines:
        """The #defines a module is built with: its register caps where they differ from the module's
        built-in default, then ``module_defines[module]`` or else ``kernel_defines`` (an explicit #define
        of a cap's name wins over the cap)."""
        explicit = dict(self.module_defines).get(module, self.kernel_defines)
        names = {k for k, _ in explicit}
        caps = tuple(
            (define, str(getattr(self, name)))
            for name, mod, define, default in REGISTER_CAPS
            if mod == module and getattr(self, name) != default and define not in names
        )
        return caps + tuple(explicit)

    def env_value(self, var: str) -> str:
        """The switch behind environment variable ``var`` in its environment spelling (for callers that
        still name switches by their variable)."""
        for f in dataclasses.fields(self):
            if f.metadata["env"] == var:
                v = getattr(self, f.name)
                return ("1" if v else "0") if isinstance(v, bool) else str(v)
        raise KeyError(var)

    def describe(self) -> list[tuple[str, str, object, str]]:
        """(field, environment variable, value, doc) per switch: for `--print-config`-style listings."""
        return [(f.name, f.metadata["env"], getattr(self, f.name), f.metadata["doc"]) for f in dataclasses.fields(self)]


ENV = {f.name: f.metadata["env"] for f in dataclasses.fields(GpuConfig)}


def expected(name: str) -> str:
    """What the field ``name`` accepts, in the words of its error messages ("gpu or cpu", ...)."""
    return _expected(next(f for f in dataclasses.fields(GpuConfig) if f.name == name))


# ---- validation and conversion

_DEFINE_NAME = re.compile(r"[A-Za-z_]\w*")
_TRUE, _FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off")


def _expected(f: dataclasses.Field) -> str:
    kind = f.metadata["kind"]
    if f.metadata["choices"]:
        return " or ".join(map(str, f.metadata["choices"]))
    if f.type in (bool, "bool"):
        return "true or false (1 or 0)"
    return {
        "window": "an integer 2-31, or 0 (chosen per MSM)",
        "count": "an integer >= 1, or 0 (chosen per MSM)",
        "cap": "an integer >= 0 (minimum blocks per SM; 0 = no cap)",
        "defines": "NAME=VALUE,NAME=VALUE (C macro names)",
        "module_defines": "a table of module = 'NAME=VALUE,...'",
    }[kind]


def _fail(f: dataclasses.Field, value, where: str):
    raise ValueError(f"{where} = {value!r}: expected {_expected(f)}")


def _check(f: dataclasses.Field, v, where: str) -> None:
    kind, choices = f.metadata["kind"], f.metadata["choices"]
    if choices:
        if v not in choices or isinstance(v, bool):
            _fail(f, v, where)
    elif kind == "window":
        if isinstance(v, bool) or not isinstance(v, int) or not (v == 0 or 2 <= v <= 31):
            _fail(f, v, where)
    elif kind in ("count", "cap"):
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            _fail(f, v, where)
    elif kind == "defines":
        _check_defines(v, where)
    elif kind == "module_defines":
        if not isinstance(v, tuple) or not all(isinstance(m, str) and isinstance(d, tuple) for m, d in v):
            _fail(f, v, where)
        for m, d in v:
            _check_defines(d, f"{where}.{m}")
    elif not isinstance(v, bool):
        _fail(f, v, where)


def _check_defines(v, where: str) -> None:
    ok = isinstance(v, tuple) and all(
        isinstance(p, tuple)
        and len(p) == 2
        and isinstance(p[0], str)
        and _DEFINE_NAME.fullmatch(p[0])
        and isinstance(p[1], str)
        and "\n" not in p[1]
        for p in v
    )
    if not ok:
        raise ValueError(f"{where} = {v!r}: expected NAME=VALUE,NAME=VALUE (C macro names)")


def _convert_defines(value, where: str) -> Defines:
    """ "A=1,B=2", ["A=1", "B=2"] or {"A": 1, "B": 2} -> (("A", "1"), ("B", "2"))."""
    if isinstance(value, Mapping):
        items = [(str(k), str(v).lower() if isinstance(v, bool) else str(v)) for k, v in value.items()]
    else:
        parts = value.split(",") if isinstance(value, str) else value
        if not isinstance(parts, list | tuple) or not all(isinstance(p, str) for p in parts):
            raise ValueError(f"{where} = {value!r}: expected NAME=VALUE,NAME=VALUE (C macro names)")
        items = []
        for kv in (p.strip() for p in parts):
            if not kv:
                continue
            name, eq, val = kv.partition("=")
            if not eq:
                raise ValueError(f"{where} = {value!r}: expected NAME=VALUE,NAME=VALUE (C macro names)")
            items.append((name.strip(), val.strip()))
    out = tuple(items)
    _check_defines(out, where)
    return out


def _convert(f: dataclasses.Field, value, where: str, from_text: bool = False):
    """A TOML value (or, from_text, an environment string) -> the field's type, or ValueError."""
    kind, choices = f.metadata["kind"], f.metadata["choices"]
    if kind == "defines":
        return _convert_defines(value, where)
    if kind == "module_defines":
        if not isinstance(value, Mapping):
            _fail(f, value, where)
        return tuple(sorted((str(m), _convert_defines(spec, f"{where}.{m}")) for m, spec in value.items()))
    if f.type in (bool, "bool"):
        if isinstance(value, bool):
            return value
        text = str(value).strip().lower() if (from_text or isinstance(value, int)) else None
        if text in _TRUE:
            return True
        if text in _FALSE:
            return False
        _fail(f, value, where)
    if (choices and isinstance(choices[0], int)) or kind in ("window", "count", "cap"):
        if isinstance(value, bool):
            _fail(f, value, where)
        if isinstance(value, int):
            v = value
        elif from_text and isinstance(value, str) and re.fullmatch(r"\s*\d+\s*", value):
            v = int(value)
        else:
            _fail(f, value, where)
    else:
        v = value
        if not isinstance(v, str):
            _fail(f, value, where)
    try:
        _check(f, v, where)
    except ValueError:
        _fail(f, value, where)
    return v


# ---- the process-wide config

_lock = threading.Lock()
_current: GpuConfig | None = None


def current() -> GpuConfig:
    """The process-wide config: the one given to :func:`configure`, else the defaults with the
    environment's overrides, read on first use."""
    global _current
    cfg = _current
    if cfg is None:
        with _lock:
            if _current is None:
                _current = GpuConfig.from_env()
            cfg = _current
    return cfg


def configure(cfg: GpuConfig) -> GpuConfig:
    """Replace the process-wide config (e.g. with the daemon's ``[gpu]`` section); returns the old one."""
    global _current
    if not isinstance(cfg, GpuConfig):
        raise TypeError(f"expected a GpuConfig, got {type(cfg).__name__}")
    with _lock:
        old, _current = _current, cfg
    return old if old is not None else GpuConfig.from_env()


@contextmanager
def using(cfg: GpuConfig | None = None, **changes) -> Iterator[GpuConfig]:
    """Temporarily the process-wide config: ``cfg`` (default: the current one) with ``changes``; the
    previous config is restored on exit (benchmarks comparing switches, tests)."""
    new = dataclasses.replace(cfg or current(), **changes)
    old = configure(new)
    try:
        yield new
    finally:
        configure(old)


def kernel_cache_dir() -> Path:
    """Where compiled kernels are cached: ``$CUZK_CACHE_DIR/cuda`` or ``~/.cache/cuzk/cuda``. Read at
    every call: the variable is cuzk's shared cache location (wasm and proto caches use it too), not a
    GPU switch."""
    root = os.environ.get("CUZK_CACHE_DIR")
    base = Path(root) if root else Path.home() / ".cache" / "cuzk"
    return base / "cuda"


__all__ = ["ENV", "REGISTER_CAPS", "GpuConfig", "configure", "current", "expected", "kernel_cache_dir", "using"]
