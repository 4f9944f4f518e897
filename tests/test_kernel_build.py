"""Every CUDA module compiles with NVRTC for the H200's architecture (sm_90), here, without a GPU: a
kernel that does not build is found by the test suite, not by a device session.

The default build of every module, plus the compile-time arithmetic variants on the small modules that
include the same field and curve code (probe: the SOS square; setup: the square and the lazily reduced
Fq2 multiply of the G2 fixed-base kernels), and the msm module's fully inlined build (CUZK_FQ_CALL=0,
the default before 2026-12-03) with the index-checking combine kernel.
"""

from __future__ import annotations

import pytest

from cuzk.backends.gpu import build

TARGET = build.DeviceTarget("90")


@pytest.fixture(autouse=True)
def fresh_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("CUZK_CACHE_DIR", str(tmp_path))  # compile for real, never from a warm cache


def _assert_cubin(path):
    data = path.read_bytes()
    assert data[:4] == b"\x7fELF" and len(data) > 1000, path


@pytest.mark.slow
@pytest.mark.parametrize("module", build.MODULES)
def test_module_compiles_for_sm90(module):
    path = build.compile_to_cache(module, TARGET)
    _assert_cubin(path)
    assert path == build.cubin_path(module, TARGET)


@pytest.mark.slow
@pytest.mark.parametrize(
    "module,defines",
    [
        ("probe", (("CUZK_SQR_SOS", "0"),)),
        ("setup", (("CUZK_SQR_SOS", "0"), ("CUZK_FQ2_LAZY", "1"))),
        ("msm", (("CUZK_FQ_CALL", "0"), ("CUZK_MSM_CHECK_INDEX", "1"))),
        ("probe", (("CUZK_FQ_CALL", "2"),)),  # Fq2 through the out-of-line Fq multiply
    ],
)
def test_arithmetic_variants_compile(module, defines):
    path = build.compile_to_cache(module, TARGET, defines)
    _assert_cubin(path)
    assert path != build.cubin_path(module, TARGET)  # variants are cached apart from the default build


def test_a_kernel_syntax_error_is_reported_with_the_module(monkeypatch, tmp_path):
    bad = tmp_path / "kernels"
    bad.mkdir()
    (bad / "broken.cu").write_text('extern "C" __global__ void k(int* p) { p[0] = undefined_name; }\n')
    monkeypatch.setattr(build, "KERNEL_DIR", bad)
    with pytest.raises(build.GpuBuildError, match=r"compiling broken\.cu failed:[\s\S]*undefined_name"):
        build.compile_to_cache("broken", TARGET)
