"""Every CUDA module compiles with NVRTC for the H200's architecture (sm_90), here, without a GPU, for
every curve: a kernel that does not build is found by the test suite, not by a device session.

Each build is compiled once per run: one session-wide fresh cache (never a warm one), filled by two
worker processes (build.compile_many) the first time a test asks for a result, the slow msm builds
first, so that the two cores compile side by side. The builds: every production module and the
bench-only probe module, for BLS12-381 and BN254 (their preambles differ in limb counts and constants),
plus one register-cap build (ntt with another launch bound), which must be cached apart.
"""

from __future__ import annotations

import functools
import time

import pytest

import cuzk.bench.kernels
from cuzk.backends.gpu import build
from cuzk.curves import names as curve_names

TARGET = build.DeviceTarget("90")
CURVES = tuple(curve_names())
MODULES = build.MODULES + cuzk.bench.kernels.MODULES
CAP_BUILD = ("ntt", (("CUZK_NTT_MINB", "0"),))  # the register-cap knob: a compile-time user switch
WORKERS = 2


@pytest.fixture(scope="session")
def kernel_cache(tmp_path_factory):
    return tmp_path_factory.mktemp("kernel-cache")


@pytest.fixture(scope="session")
def builds(kernel_cache):
    """{(module, defines, curve): BuildResult} of every build, compiled on first use."""
    jobs = [build.job_for("msm", "90", (), c, str(kernel_cache)) for c in CURVES]
    jobs += [build.job_for(m, "90", (), c, str(kernel_cache)) for m in ("setup", "probe") for c in CURVES]
    jobs += [build.job_for(m, "90", (), c, str(kernel_cache)) for m in ("ntt", "fr_ops") for c in CURVES]
    jobs.append(build.job_for(CAP_BUILD[0], "90", CAP_BUILD[1], build.DEFAULT_CURVE, str(kernel_cache)))
    t = time.perf_counter()
    results = {}
    for r in build.compile_many(jobs, WORKERS):
        results[r.job.module, r.job.defines, r.job.curve] = r
        print(f"  {r.job.module} {r.job.curve} {dict(r.job.defines) or ''}: {r.seconds:.1f} s {r.error[:200]}")
    print(f"  kernel builds: {time.perf_counter() - t:.1f} s wall with {WORKERS} workers")
    return results


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
