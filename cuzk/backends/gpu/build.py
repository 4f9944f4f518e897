"""Run-time compilation of the CUDA kernels with NVRTC, cached on disk.

A module's source is its ``.cu`` file with local ``#include "x.cuh"`` headers inlined, after a generated
preamble of the curve's field constants (:meth:`cuzk.curves.Curve.gpu_preamble`, the single source of
truth: limb counts, bit lengths, moduli, Montgomery constants) and the build's ``#define`` list. The
cache key is a SHA-256 of that full source, the compiler options, the device architecture and the NVRTC
version, so an edited kernel, header or constant can never run stale (the original daemon lost hours to
stale CUDA build caches), and each curve's cubins are cached apart.

Production modules (:data:`MODULES`) live in ``kernels/``; bench-only modules (cuzk/bench/kernels) are
registered with :func:`register_module`. A header is looked up next to the including file first, then in
``kernels/``.

Cache folder: ``$CUZK_CACHE_DIR/cuda`` or ``~/.cache/cuzk/cuda`` (:func:`config.kernel_cache_dir`).
"""

from __future__ import annotations

import hashlib
import multiprocessing
import os
import re
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from ... import CuzkError
from ...curves import Curve
from ...curves import get as get_curve
from . import config

KERNEL_DIR = Path(__file__).resolve().parent / "kernels"
MODULES = ("msm", "msm_table", "ntt", "fr_ops", "setup")  # what the prover and the GPU setup load
DEFAULT_CURVE = "bls12_381"  # TODO(curves): the MSM/NTT wrappers still assume BLS12-381 (msm.py, ntt.py)
_INCLUDE = re.compile(r'^\s*#include\s+"([^"]+)"\s*$', re.M)
_EXTRA_MODULES: dict[str, Path] = {}

Defines = tuple[tuple[str, str], ...]


class GpuBuildError(CuzkError):
    pass


_cache_override: Path | None = None  # set in compile_many's worker processes


def cache_dir() -> Path:
    return _cache_override or config.kernel_cache_dir()


def register_module(name: str, path: str | os.PathLike) -> None:
    """Make a module outside ``kernels/`` (a bench-only one) loadable by name."""
    if name in MODULES:
        raise ValueError(f"{name!r} is a production module")
    _EXTRA_MODULES[name] = Path(path).resolve()


def module_path(module: str) -> Path:
    return _EXTRA_MODULES.get(module) or KERNEL_DIR / f"{module}.cu"


def curve_of(curve: str | Curve | None) -> Curve:
    return get_curve(DEFAULT_CURVE if curve is None else curve)


def preamble(curve: str | Curve | None = None) -> str:
    return curve_of(curve).gpu_preamble()


def full_source(module: str, defines: Defines = (), curve: str | Curve | None = None) -> str:
    """The module's source with local headers inlined once each, after the curve's constants preamble
    and the build's #defines (compile-time parameters and register caps; cached separately)."""
    seen: set[str] = set()

    def expand(path: Path) -> str:
        text = path.read_text()

        def repl(m: re.Match) -> str:
            inc = m.group(1)
            if inc in seen:
                return ""
            seen.add(inc)
            local = path.parent / inc
            return f"// ---- {inc}\n" + expand(local if local.exists() else KERNEL_DIR / inc)

        return _INCLUDE.sub(repl, text).replace("#pragma once", "")

    defs = "".join(f"#define {k} {v}\n" for k, v in defines)
    return preamble(curve) + defs + expand(module_path(module))


def options(arch: str, defines: Defines = ()) -> tuple[str, ...]:
    """NVRTC options of a build. The build define CUZK_PTXAS_O=L (also a #define, so the cache key
    differs) sets ptxas's optimization level for that module: at its default (3) ptxas overlaps the
    carry-chain multiply's rows beyond its seven carry predicates and spills them (a one-multiply kernel,
    BLS12-381 Fq: 896 SASS instructions, 59 P2R); at 1 it does not (440, none): a per-module choice to
    measure (NOTES.md)."""
    opts = (f"--gpu-architecture=sm_{arch}", "--std=c++17", "-default-device", "-DNDEBUG", "--extra-device-vectorization")
    level = dict(defines).get("CUZK_PTXAS_O")
    return opts + ((f"--ptxas-options=-O{int(level)}",) if level is not None else ())


@dataclass
class DeviceTarget:
    arch: str  # compute capability digits, e.g. "90": all a cubin depends on besides source and options
    name: str = ""


def current_target() -> DeviceTarget:
    import cupy

    dev = cupy.cuda.Device()
    props = cupy.cuda.runtime.getDeviceProperties(dev.id)
    name = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
    return DeviceTarget(dev.compute_capability, name)


def nvrtc_version() -> str:
    try:
        from cuda.bindings import nvrtc

        err, major, minor = nvrtc.nvrtcVersion()
        return f"{major}.{minor}"
    except Exception:
        import cupy

        return "cupy-" + ".".join(map(str, cupy.cuda.nvrtc.getVersion()))


def cache_key(module: str, target: DeviceTarget, defines: Defines = (), curve: str | Curve | None = None) -> str:
    h = hashlib.sha256()
    for part in (full_source(module, defines, curve), "\0".join(options(target.arch, defines)), target.arch, nvrtc_version()):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()[:32]


def cubin_path(module: str, target: DeviceTarget, defines: Defines = (), curve: str | Curve | None = None) -> Path:
    c = curve_of(curve)
    return cache_dir() / f"{module}-{c.name}-sm{target.arch}-{cache_key(module, target, defines, c)}.cubin"


def compile_to_cache(module: str, target: DeviceTarget, defines: Defines = (), curve: str | Curve | None = None) -> Path:
    """Compile one module build into the cache (needs only NVRTC through cuda-python, no GPU)."""
    path = cubin_path(module, target, defines, curve)
    if not path.exists():
        data = _compile_cubin(module, full_source(module, defines, curve), options(target.arch, defines))
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".tmp{os.getpid()}")
        tmp.write_bytes(data)
        os.replace(tmp, path)
    return path


@dataclass(frozen=True)
class BuildJob:
    """One module build for :func:`compile_many` (picklable: it runs in a fresh process)."""

    module: str
    arch: str = "90"
    defines: Defines = ()
    curve: str = DEFAULT_CURVE
    path: str = ""  # a registered (bench-only) module's .cu file; "" for a production module
    cache: str = ""  # the cache folder's parent (as $CUZK_CACHE_DIR); "" = this process's


@dataclass(frozen=True)
class BuildResult:
    job: BuildJob
    cubin: str  # "" when it failed
    seconds: float  # wall
    cpu_seconds: float = 0.0  # of the worker process (NVRTC compiles in-process, on one core)
    error: str = ""


def job_for(module: str, arch: str = "90", defines: Defines = (), curve: str | Curve | None = None, cache: str = "") -> BuildJob:
    extra = _EXTRA_MODULES.get(module)
    return BuildJob(module, arch, tuple(defines), curve_of(curve).name, str(extra) if extra else "", cache)


def _run_job(job: BuildJob) -> BuildResult:
    global _cache_override
    if job.cache:
        _cache_override = Path(job.cache) / "cuda"
    if job.path:
        register_module(job.module, job.path)
    t, c = time.perf_counter(), time.process_time()
    try:
        path = compile_to_cache(job.module, DeviceTarget(job.arch), job.defines, job.curve)
    except Exception as e:  # reported per job; the others still build
        return BuildResult(job, "", time.perf_counter() - t, time.process_time() - c, f"{type(e).__name__}: {e}")
    return BuildResult(job, str(path), time.perf_counter() - t, time.process_time() - c)


def _worker_init(nice: int) -> None:
    if nice:
        os.nice(nice)


class BuildBatch:
    """Jobs compiling in ``workers`` spawned processes (no fork of a process that may hold thread pools),
    started at once and in the order given (put the slow ones, msm, first), at a lower CPU priority when
    ``nice`` > 0 (builds in the background of other work). NVRTC compiles one module on one core."""

    def __init__(self, jobs: list[BuildJob], workers: int = 2, nice: int = 0):
        self._pool = multiprocessing.get_context("spawn").Pool(max(1, workers), _worker_init, (nice,))
        self._left = len(jobs)
        self._results = self._pool.imap_unordered(_run_job, jobs)
        self._pool.close()

    def results(self) -> Iterator[BuildResult]:
        """Each result as its build finishes."""
        while self._left:
            self._left -= 1
            yield next(self._results)

    def terminate(self) -> None:
        """Stop the workers, builds in progress included."""
        self._pool.terminate()
        self._pool.join()


def compile_many(jobs: list[BuildJob], workers: int = 2, nice: int = 0) -> Iterator[BuildResult]:
    """Compile the jobs into the cache (see BuildBatch), yielding each result as it finishes."""
    batch = BuildBatch(jobs, workers, nice)
    try:
        yield from batch.results()
    finally:
        batch.terminate()


def _compile_cubin(module: str, src: str, opts: tuple[str, ...]) -> bytes:
    from cuda.bindings import nvrtc

    def check(res, what):
        err = res[0]
        if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            raise GpuBuildError(f"NVRTC {what} failed for {module}.cu: {err}")
        return res[1:]

    (prog,) = check(nvrtc.nvrtcCreateProgram(src.encode(), f"{module}.cu".encode(), 0, [], []), "create")
    try:
        res = nvrtc.nvrtcCompileProgram(prog, len(opts), [o.encode() for o in opts])
        if res[0] != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            (size,) = check(nvrtc.nvrtcGetProgramLogSize(prog), "log size")
            log = b" " * size
            check(nvrtc.nvrtcGetProgramLog(prog, log), "log")
            raise GpuBuildError(f"compiling {module}.cu failed:\n{log.decode(errors='replace')}")
        (size,) = check(nvrtc.nvrtcGetCUBINSize(prog), "cubin size")
        out = b" " * size
        check(nvrtc.nvrtcGetCUBIN(prog, out), "cubin")
        return out
    finally:
        nvrtc.nvrtcDestroyProgram(prog)


_modules: dict[tuple, object] = {}
_lock = threading.Lock()


def load_module(module: str, defines: Defines = (), curve: str | Curve | None = None):
    """The compiled ``cupy.RawModule`` for the current device (compiled once, then from the cache)."""
    import cupy

    c = curve_of(curve)
    dev = cupy.cuda.Device().id
    key = (module, defines, c.name, dev)
    with _lock:
        mod = _modules.get(key)
        if mod is not None:
            return mod
        target = current_target()
        try:
            path = compile_to_cache(module, target, defines, c)
        except ImportError:
            # no cuda-python: let CuPy compile (and cache) it its own way
            mod = cupy.RawModule(code=full_source(module, defines, c), options=options(target.arch, defines)[1:], backend="nvrtc")
        else:
            mod = cupy.RawModule(path=str(path))
        _modules[key] = mod
        return mod


def info(curve: str | Curve | None = None) -> dict:
    """Device, options, cache folder, and per-module cache state of the configured builds (for `cuzk gpu
    info`)."""
    target = current_target()
    cfg = config.current()
    paths = {m: cubin_path(m, target, cfg.defines(m), curve) for m in MODULES}
    return {
        "device": target.name,
        "arch": f"sm_{target.arch}",
        "nvrtc": nvrtc_version(),
        "options": list(options(target.arch)),
        "curve": curve_of(curve).name,
        "cache_dir": str(cache_dir()),
        "modules": {m: {"cubin": str(p), "cached": p.exists(), "defines": dict(cfg.defines(m))} for m, p in paths.items()},
    }
