"""Run-time compilation of the CUDA kernels with NVRTC, cached on disk.

A module's source is its ``.cu`` file with local ``#include "x.cuh"`` headers inlined and a generated
preamble of field constants (from :mod:`cuzk.field.constants`, the single source of truth) in front.
The cache key is a SHA-256 of that full source, the compiler options, the device architecture and the
NVRTC version, so an edited kernel, header or constant can never run stale (the original daemon lost
hours to stale CUDA build caches).

Cache folder: ``$CUZK_CACHE_DIR/cuda`` or ``~/.cache/cuzk/cuda``.
"""

from __future__ import annotations

import hashlib
import os
import re
import threading
from dataclasses import dataclass
from pathlib import Path

from ... import CuzkError
from ...field.constants import FQ_MONT_R, FQ_MONT_R2, FR_MONT_R, FR_MONT_R2, Q, R

KERNEL_DIR = Path(__file__).resolve().parent / "kernels"
MODULES = ("msm", "ntt", "fr_ops", "setup", "probe")
_INCLUDE = re.compile(r'^\s*#include\s+"([^"]+)"\s*$', re.M)


class GpuBuildError(CuzkError):
    pass


def cache_dir() -> Path:
    root = os.environ.get("CUZK_CACHE_DIR")
    base = Path(root) if root else Path.home() / ".cache" / "cuzk"
    return base / "cuda"


def _limbs32(x: int, n: int) -> str:
    return ", ".join(f"0x{(x >> (32 * i)) & 0xFFFFFFFF:08x}u" for i in range(n))


def preamble() -> str:
    lines = ["// generated from cuzk/field/constants.py"]
    for name, p, n, one, r2 in (("FR", R, 8, FR_MONT_R, FR_MONT_R2), ("FQ", Q, 12, FQ_MONT_R, FQ_MONT_R2)):
        lines.append(f"#define CUZK_{name}_P {_limbs32(p, n)}")
        lines.append(f"#define CUZK_{name}_NP0 0x{(-pow(p, -1, 2**32)) % 2**32:08x}u")
        lines.append(f"#define CUZK_{name}_ONE {_limbs32(one, n)}")
        lines.append(f"#define CUZK_{name}_R2 {_limbs32(r2, n)}")
        lines.append(f"#define CUZK_{name}_PM2 {_limbs32(p - 2, n)}")  # Fermat exponent
        lines.append(f"#define CUZK_{name}_PSQ {_limbs32(p * p, 2 * n)}")  # p^2: offset of lazy (unreduced) sums
    return "\n".join(lines) + "\n"


def full_source(module: str, defines: tuple[tuple[str, str], ...] = ()) -> str:
    """The module's source with local headers inlined once each, after the constants preamble and the
    variant's #defines (kernel variants for benchmarking are separate modules, cached separately)."""
    seen: set[str] = set()

    def expand(path: Path) -> str:
        text = path.read_text()

        def repl(m: re.Match) -> str:
            inc = m.group(1)
            if inc in seen:
                return ""
            seen.add(inc)
            return f"// ---- {inc}\n" + expand(KERNEL_DIR / inc)

        return _INCLUDE.sub(repl, text).replace("#pragma once", "")

    defs = "".join(f"#define {k} {v}\n" for k, v in defines)
    return preamble() + defs + expand(KERNEL_DIR / f"{module}.cu")


def options(arch: str) -> tuple[str, ...]:
    return (f"--gpu-architecture=sm_{arch}", "--std=c++17", "-default-device", "-DNDEBUG", "--extra-device-vectorization")


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


def cache_key(module: str, target: DeviceTarget, defines: tuple[tuple[str, str], ...] = ()) -> str:
    h = hashlib.sha256()
    for part in (full_source(module, defines), "\0".join(options(target.arch)), target.arch, nvrtc_version()):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()[:32]


def cubin_path(module: str, target: DeviceTarget, defines: tuple[tuple[str, str], ...] = ()) -> Path:
    return cache_dir() / f"{module}-sm{target.arch}-{cache_key(module, target, defines)}.cubin"


def compile_to_cache(module: str, target: DeviceTarget, defines: tuple[tuple[str, str], ...] = ()) -> Path:
    """Compile one module variant into the cache (needs only NVRTC through cuda-python, no GPU)."""
    path = cubin_path(module, target, defines)
    if not path.exists():
        data = _compile_cubin(module, full_source(module, defines), options(target.arch))
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".tmp{os.getpid()}")
        tmp.write_bytes(data)
        os.replace(tmp, path)
    return path


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


def load_module(module: str, defines: tuple[tuple[str, str], ...] = ()):
    """The compiled ``cupy.RawModule`` for the current device (compiled once, then from the cache)."""
    import cupy

    dev = cupy.cuda.Device().id
    key = (module, defines, dev)
    with _lock:
        mod = _modules.get(key)
        if mod is not None:
            return mod
        target = current_target()
        try:
            path = compile_to_cache(module, target, defines)
        except ImportError:
            # no cuda-python: let CuPy compile (and cache) it its own way
            mod = cupy.RawModule(code=full_source(module, defines), options=options(target.arch)[1:], backend="nvrtc")
        else:
            mod = cupy.RawModule(path=str(path))
        _modules[key] = mod
        return mod


def info() -> dict:
    """Device, options, cache folder, and per-module cache state (for `cuzk gpu info`)."""
    target = current_target()
    return {
        "device": target.name,
        "arch": f"sm_{target.arch}",
        "nvrtc": nvrtc_version(),
        "options": list(options(target.arch)),
        "cache_dir": str(cache_dir()),
        "modules": {m: {"cubin": str(cubin_path(m, target)), "cached": cubin_path(m, target).exists()} for m in MODULES},
    }
