"""Every CUDA module compiles with NVRTC for the H200's architecture (sm_90), here, without a GPU, for
every curve: a kernel that does not build is found by the test suite, not by a device session.

Each build is compiled once per run, into one fresh session-wide cache, by two worker processes
(build.BuildBatch), the slow msm builds first so that the two cores compile side by side. The builds
start as soon as collection is over when a selected test needs them (this module registers itself as a
plugin for its pytest_collection_finish hook), at a low CPU priority, so that they overlap the rest of
the suite; the tests here wait for what is left. The builds: every production module and the bench-only
probe module, for BLS12-381 and BN254 (their preambles differ in limb counts and constants), plus one
register-cap build (ntt with another launch bound), which must be cached apart.
"""

from __future__ import annotations

import functools
import shutil
import tempfile
import time
from pathlib import Path

import pytest

import cuzk.bench.kernels
from cuzk.backends.gpu import build
from cuzk.curves import names as curve_names

pytest_plugins = [__name__]  # the hooks below: start the builds early, stop them at the end

TARGET = build.DeviceTarget("90")
CURVES = tuple(curve_names())
MODULES = build.MODULES + cuzk.bench.kernels.MODULES
CAP_BUILD = ("ntt", (("CUZK_NTT_MINB", "0"),))  # the register-cap knob: a compile-time user switch
# the fenced carry-chain multiplies (mont.cuh's CUZK_MUL_CHAIN 1 and 2): they must keep compiling until measured
CHAIN_BUILDS = [(m, (("CUZK_MUL_CHAIN", form),)) for m in ("fr_ops", "ntt") for form in ("1", "2")]
CHAIN_BUILDS += [("ntt", (("CUZK_MUL_CHAIN", "2"), ("CUZK_PTXAS_O", "1")))]  # ptxas at -O1 (build.options)
WORKERS = 2
NICE = 10  # below the tests that run meanwhile (a nice-10 process gets ~1/10 of a core against one at 0)


class _Builds:
    """The session's builds: a fresh cache folder and the batch compiling into it."""

    def __init__(self):
        self.cache = Path(tempfile.mkdtemp(prefix="cuzk-kernel-cache-"))
        c = str(self.cache)
        jobs = [build.job_for("msm", "90", (), curve, c) for curve in CURVES]
        jobs += [
            build.job_for(m, "90", (), curve, c) for m in ("msm_table", "setup", "probe", "ntt", "fr_ops") for curve in CURVES
        ]
        jobs.append(build.job_for(CAP_BUILD[0], "90", CAP_BUILD[1], build.DEFAULT_CURVE, c))
        jobs += [build.job_for(m, "90", d, curve, c) for m, d in CHAIN_BUILDS for curve in CURVES]
        self.started = time.perf_counter()
        self.batch = build.BuildBatch(jobs, WORKERS, NICE)
        self.results: dict | None = None

    def wait(self) -> dict:
        """{(module, defines, curve): BuildResult}, once every build has finished."""
        if self.results is None:
            waited = time.perf_counter()
            results = {}
            for r in self.batch.results():
                results[r.job.module, r.job.defines, r.job.curve] = r
                print(
                    f"  {r.job.module} {r.job.curve} {dict(r.job.defines) or ''}: {r.seconds:.1f} s ({r.cpu_seconds:.1f} s CPU) {r.error[:200]}"
                )
            now = time.perf_counter()
            print(f"  kernel builds: {now - self.started:.1f} s since they started, {now - waited:.1f} s waited for")
            self.results = results
        return self.results

    def close(self) -> None:
        self.batch.terminate()
        shutil.rmtree(self.cache, ignore_errors=True)


_session_builds: _Builds | None = None


def pytest_collection_finish(session):
    global _session_builds
    if session.config.option.collectonly or _session_builds is not None:
        return
    if any("builds" in getattr(item, "fixturenames", ()) for item in session.items):
        _session_builds = _Builds()


def pytest_sessionfinish(session):
    global _session_builds
    if _session_builds is not None:
        _session_builds.close()
        _session_builds = None


@pytest.fixture(scope="session")
def kernel_cache():
    global _session_builds
    if _session_builds is None:  # the hook did not run (e.g. this module imported by another runner)
        _session_builds = _Builds()
    return _session_builds.cache


@pytest.fixture(scope="session")
def builds(kernel_cache):
    return _session_builds.wait()


@pytest.fixture
def in_cache(kernel_cache, monkeypatch):
    monkeypatch.setenv("CUZK_CACHE_DIR", str(kernel_cache))


def _assert_built(result, module, defines, curve):
    assert not result.error, f"{module} ({curve}, {dict(defines)}) does not build:\n{result.error}"
    path = build.cubin_path(module, TARGET, defines, curve)
    assert result.cubin == str(path), (result.cubin, path)  # compile_to_cache fills the path the loader reads
    data = path.read_bytes()
    assert data[:4] == b"\x7fELF" and len(data) > 1000, path


@pytest.mark.slow
@pytest.mark.parametrize("curve", CURVES)
@pytest.mark.parametrize("module", MODULES)
def test_module_compiles_for_sm90(module, curve, builds, in_cache):
    _assert_built(builds[module, (), curve], module, (), curve)


@pytest.mark.slow
def test_register_cap_build_compiles_and_is_cached_apart(builds, in_cache):
    module, defines = CAP_BUILD
    _assert_built(builds[module, defines, build.DEFAULT_CURVE], module, defines, build.DEFAULT_CURVE)
    assert build.cubin_path(module, TARGET, defines) != build.cubin_path(module, TARGET)


@pytest.mark.parametrize("curve", CURVES)
@pytest.mark.parametrize(
    "module,defines",
    CHAIN_BUILDS,
    ids=lambda v: v if isinstance(v, str) else "-".join(f"{k[5:].lower()}{x}" for k, x in v),
)
def test_carry_chain_multiply_builds(module, defines, curve, builds, in_cache):
    _assert_built(builds[module, defines, curve], module, defines, curve)
    assert build.cubin_path(module, TARGET, defines, curve) != build.cubin_path(module, TARGET, (), curve)


def test_ptxas_level_is_a_build_option_only_when_asked():
    assert not any("ptxas" in o for o in build.options("90"))
    assert build.options("90", (("CUZK_PTXAS_O", "1"),))[-1] == "--ptxas-options=-O1"
    d = (("CUZK_PTXAS_O", "1"),)
    assert build.cache_key("ntt", TARGET, d) != build.cache_key("ntt", TARGET)


def test_each_curve_builds_apart():
    """The preamble is part of the key: the curves' cubins never share a cache entry."""
    keys = {build.cache_key("msm", TARGET, (), c) for c in CURVES}
    assert len(keys) == len(CURVES)
    assert build.cache_key("msm", TARGET) == build.cache_key("msm", TARGET, (), build.DEFAULT_CURVE)
    for c in CURVES:
        src = build.full_source("fr_ops", (), c)
        assert f"#define CUZK_CURVE_{c.upper()} 1" in src and "CUZK_FQ_LIMBS" in src


@functools.cache
def _literal_limbs() -> list[str]:
    """Lines of the kernel sources that size something by a literal 8 or 12 limbs (the limb counts come
    from the preamble: CUZK_FR_LIMBS / CUZK_FQ_LIMBS, FrTag::N / FqTag::N)."""
    hits = []
    for path in sorted([*build.KERNEL_DIR.glob("*.cu*"), cuzk.bench.kernels.PROBE]):
        for i, line in enumerate(path.read_text().splitlines(), 1):
            code = line.split("//")[0]
            if any(pat in code for pat in ("< 8;", "< 12;", "[8]", "[12]", "[24]", ", 8,", ", 12,")):
                hits.append(f"{path.name}:{i}: {line.strip()}")
    return hits


def test_kernels_take_limb_counts_from_the_preamble():
    assert not _literal_limbs()


def test_a_kernel_syntax_error_is_reported_with_the_module(monkeypatch, tmp_path):
    monkeypatch.setenv("CUZK_CACHE_DIR", str(tmp_path))
    bad = tmp_path / "kernels"
    bad.mkdir()
    (bad / "broken.cu").write_text('extern "C" __global__ void k(int* p) { p[0] = undefined_name; }\n')
    monkeypatch.setattr(build, "KERNEL_DIR", bad)
    with pytest.raises(build.GpuBuildError, match=r"compiling broken\.cu failed:[\s\S]*undefined_name"):
        build.compile_to_cache("broken", TARGET)
