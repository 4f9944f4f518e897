"""Every kernel the Python side launches is defined in the module it names.

A kernel lost in an edit of a .cu file still compiles (nothing calls it inside the module); it only
fails when CuPy looks the symbol up on the device ("named symbol not found"), which once cost a device
session. This reads the launch sites in cuzk/ (production wrappers and cuzk/bench) and in the GPU tests,
and the kernel definitions in each module's full source (its .cu file with the headers it includes),
here, without NVRTC or a GPU.
"""

from __future__ import annotations

import functools
import re

from conftest import ROOT

import cuzk.bench.kernels
from cuzk.backends.gpu import build

MODULES = build.MODULES + cuzk.bench.kernels.MODULES

# launch("module", "name" | f"g{group}_name" | f"{x}_name", ...), also msm.py's _launch(curve, "module", ...)
LAUNCH = re.compile(r'launch\(\s*(?:\w+,\s*)?"(\w+)",\s*(f?)"([\w{}]+)"')
# ntt.py's GpuDomain._launch("name", ...): the ntt module
NTT_SELF = re.compile(r'self\._launch\(\s*"(\w+)"')
# msm.py's _k(group, "name") -> g1_name / g2_name in the msm module
PER_GROUP = re.compile(r'_k\(\s*\w+,\s*"(\w+)"\)')
# elementwise helpers: backend.py's _ew("name", ...) (fr_ops), setup.py's _ew(curve, "module", "name", ...)
ELEMENTWISE = re.compile(r'_ew\(\s*(?:\w+,\s*)?"(\w+)"(?:,\s*"(\w+)")?')
# kernels chosen by a conditional in ntt.py: ("ntt_pass_r4", ...) if ... else ("ntt_pass", ...)
NTT_CHOICE = re.compile(r'\("(ntt_\w+)",')


@functools.cache
def _source(module: str) -> str:
    return build.full_source(module)


def _defined(module: str, name: str) -> bool:
    src = _source(module)
    if re.search(r"__global__\s+(?:\w+\s+)*" + re.escape(name) + r"\s*\(", src):
        return True
    if re.search(
        r"^[A-Z][A-Z0-9_]*\(\s*" + re.escape(name) + r"\s*,", src, re.M
    ):  # a kernel-making macro: ELEMENTWISE(fr_mul, ...)
        return True
    m = re.fullmatch(r"g[12]_(\w+)", name)  # from MSM_ENTRY_POINTS-style macros: G##_suffix(
    return bool(m) and re.search(r"G##_" + re.escape(m.group(1)) + r"\s*\(", src) is not None


def _launch_sites():
    for path in sorted([*(ROOT / "cuzk").rglob("*.py"), ROOT / "tests" / "test_gpu.py"]):
        text = path.read_text()
        for module, is_f, name in LAUNCH.findall(text):
            if not is_f:
                yield path, module, [name]
            elif name.startswith("g{group}_"):
                yield path, module, [f"g{g}_{name[len('g{group}_') :]}" for g in (1, 2)]
            # other f-strings (probe names from a loop variable) are covered by the probe tests
        for name in PER_GROUP.findall(text):
            yield path, "msm", [f"g1_{name}", f"g2_{name}"]
        for first, second in ELEMENTWISE.findall(text):
            yield (path, first, [second]) if second else (path, "fr_ops", [first])
        if path.name == "ntt.py":
            for name in NTT_CHOICE.findall(text) + NTT_SELF.findall(text):
                yield path, "ntt", [name]


def test_launch_sites_are_found():
    sites = list(_launch_sites())
    modules = {m for _, m, _ in sites}
    assert set(MODULES) <= modules, modules
    assert modules <= set(MODULES), f"a launch names an unknown module: {modules - set(MODULES)}"
    assert len(sites) > 30, len(sites)


def test_every_launched_kernel_is_defined():
    missing = [(p.relative_to(ROOT).as_posix(), m, n) for p, m, names in _launch_sites() for n in names if not _defined(m, n)]
    assert not missing, missing


def test_a_missing_kernel_is_noticed():
    assert _defined("ntt", "fr_bit_reverse") and not _defined("ntt", "fr_bit_reversal")
    assert _defined("msm", "g2_accumulate_even") and not _defined("msm", "g2_accumulate_odd")
    assert _defined("probe", "g1_add_tables") and not _defined("msm", "g1_add_tables")  # bench-only


def test_probe_kernels_are_defined():
    """The probes are launched by names built in a loop (f"fq_{name}"), which the regexes above skip."""
    for name in ("fq_mul_probe", "fr_mul_probe", "fq_mul_chains_1", "fq_mul_chains_2", "fq_mul_chains_4"):
        assert _defined("probe", name), name
    assert _defined("probe", "fq_mul_chains_8") and _defined("probe", "fq_sqr_chains_4")
