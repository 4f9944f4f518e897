"""The GPU configuration object (cuzk/backends/gpu/config.py), without a GPU: defaults, the TOML
section and the environment overrides with their errors, the #define lists per module, and the
agreement of the defaults with the kernels and the README."""

from __future__ import annotations

import dataclasses
import re
import tomllib
from pathlib import Path

import pytest

from cuzk.backends.gpu import config
from cuzk.backends.gpu.config import GpuConfig

ROOT = Path(__file__).resolve().parents[1]
GPU = ROOT / "cuzk" / "backends" / "gpu"


def test_defaults_are_the_measured_winners():
    c = GpuConfig()
    assert (c.b_g2, c.pinned, c.upload_copy) == ("gpu", True, "parallel")
    assert (c.ntt_batch, c.ntt_radix, c.ntt_plan) == (True, 4, "auto")
    assert (c.msm_acc, c.msm_ones, c.msm_window, c.msm_even_s) == ("even", "compact", 0, 64)
    assert (c.acc_minb, c.acc2_minb, c.ntt_minb) == (3, 2, 3)
    assert not (c.sync_launch or c.msm_profile or c.poison)
    assert all(c.defines(m) == () for m in ("msm", "ntt", "fr_ops", "setup", "probe"))


def test_toml_section():
    doc = tomllib.loads(
        """
        [gpu]
        b_g2 = "cpu"
        pinned = false
        ntt_radix = 2
        ntt_plan = "balanced"
        msm_acc = "items"
        msm_window = 12
        acc_minb = 4
        kernel_defines = "CUZK_EXTRA=1"
        module_defines = { ntt = "CUZK_NTT_MINB=0" }
        sync_launch = true
        """
    )
    c = GpuConfig.from_mapping(doc["gpu"])
    assert (c.b_g2, c.pinned, c.ntt_radix, c.ntt_plan, c.msm_acc, c.msm_window) == ("cpu", False, 2, "balanced", "items", 12)
    assert c.sync_launch and c.upload_copy == "parallel"  # untouched keys keep their defaults
    assert c.defines("msm") == (("CUZK_ACC_MINB", "4"), ("CUZK_EXTRA", "1"))
    assert c.defines("ntt") == (("CUZK_NTT_MINB", "0"),)  # one module's list replaces the common one
    assert c.defines("fr_ops") == (("CUZK_EXTRA", "1"),)
    # lists and tables of defines are accepted too
    assert GpuConfig.from_mapping({"kernel_defines": ["A=1", "B=x"]}).kernel_defines == (("A", "1"), ("B", "x"))
    assert GpuConfig.from_mapping({"kernel_defines": {"A": 1}}).kernel_defines == (("A", "1"),)


@pytest.mark.parametrize(
    "table,message",
    [
        ({"msm_acc": "affine"}, r"^\[gpu\] msm_acc = 'affine': expected even or items$"),
        ({"ntt_radix": 8}, r"^\[gpu\] ntt_radix = 8: expected 4 or 2$"),
        ({"ntt_radix": "4"}, r"^\[gpu\] ntt_radix = '4': expected 4 or 2$"),
        ({"pinned": "yes"}, r"^\[gpu\] pinned = 'yes': expected true or false"),
        ({"msm_window": 40}, r"^\[gpu\] msm_window = 40: expected an integer 2-31, or 0"),
        ({"acc_minb": -1}, r"^\[gpu\] acc_minb = -1: expected an integer >= 0"),
        ({"kernel_defines": "A"}, r"^\[gpu\] kernel_defines = 'A': expected NAME=VALUE"),
        ({"module_defines": {"msm": "1X=2"}}, r"^\[gpu\] module_defines\.msm = .*expected NAME=VALUE"),
        ({"fast": True}, r"^\[gpu\] fast: unknown key \(expected one of b_g2, "),
    ],
)
def test_toml_errors_name_the_key_and_the_expected_values(table, message):
    with pytest.raises(ValueError, match=message):
        GpuConfig.from_mapping(table)


def test_environment_overrides_a_base():
    base = GpuConfig.from_mapping({"msm_ones": "masked", "ntt_plan": "greedy"})
    env = {
        "CUZK_MSM_ACC": "items",
        "CUZK_NTT_PLAN": "",  # empty = unset: the base's value stays
        "CUZK_NTT_RADIX": "2",
        "CUZK_PINNED": "0",
        "CUZK_MSM_EVEN_S": "5",
        "CUZK_SYNC_LAUNCH": "1",
        "CUZK_GPU_POISON": "1",
        "CUZK_ACC2_MINB": "3",
        "CUZK_KERNEL_DEFINES": "A=1,B=2",
        "CUZK_KERNEL_DEFINES_MSM": "CUZK_ACC_MINB=4",
    }
    c = GpuConfig.from_env(base, env)
    assert (c.msm_ones, c.ntt_plan, c.msm_acc, c.ntt_radix, c.pinned, c.msm_even_s) == ("masked", "greedy", "items", 2, False, 5)
    assert c.sync_launch and c.poison
    assert c.defines("msm") == (("CUZK_ACC2_MINB", "3"), ("CUZK_ACC_MINB", "4"))
    assert c.defines("ntt") == (("A", "1"), ("B", "2"))
    assert c.env_value("CUZK_PINNED") == "0" and c.env_value("CUZK_NTT_RADIX") == "2"
    assert GpuConfig.from_env(environ={}) == GpuConfig()


@pytest.mark.parametrize(
    "var,value",
    [("CUZK_MSM_ACC", "affine"), ("CUZK_MSM_ONES", "fast"), ("CUZK_NTT_RADIX", "8"), ("CUZK_B_G2", "tpu"), ("CUZK_PINNED", "x")],
)
def test_environment_errors_name_the_variable(var, value):
    with pytest.raises(ValueError, match=rf"^{var} = '{value}': expected "):
        GpuConfig.from_env(environ={var: value})


def test_explicit_define_wins_over_a_register_cap():
    c = GpuConfig(acc_minb=4, kernel_defines=(("CUZK_ACC_MINB", "1"),))
    assert c.defines("msm") == (("CUZK_ACC_MINB", "1"),)


def test_register_cap_defaults_equal_the_kernels():
    """A cap at its default adds no #define, so the kernels' own defaults must be the config's."""
    for name, module, define, default in config.REGISTER_CAPS:
        src = (GPU / "kernels" / f"{module}.cu").read_text()
        m = re.search(rf"#ifndef {define}\n#define {define} (\d+)\n#endif", src)
        assert m and int(m.group(1)) == default == getattr(GpuConfig(), name), (define, m and m.group(1))


def test_process_wide_config(monkeypatch):
    monkeypatch.setattr(config, "_current", None)
    monkeypatch.setenv("CUZK_NTT_PLAN", "balanced")
    assert config.current().ntt_plan == "balanced"  # from the environment, on first use
    monkeypatch.setenv("CUZK_NTT_PLAN", "greedy")
    assert config.current().ntt_plan == "balanced"  # read once
    with config.using(msm_acc="items") as c:
        assert config.current() is c and c.msm_acc == "items" and c.ntt_plan == "balanced"
    assert config.current().msm_acc == "even"
    old = config.configure(GpuConfig(b_g2="cpu"))
    assert old.ntt_plan == "balanced" and config.current().b_g2 == "cpu"
    with pytest.raises(TypeError):
        config.configure({"b_g2": "cpu"})
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.current().b_g2 = "gpu"


def test_only_the_config_reads_the_environment():
    readers = []
    for path in sorted(GPU.rglob("*.py")):
        if path.name in ("config.py", "backend.py"):  # backend.py: being moved to config.current() (issue 16)
            continue
        if re.search(r"os\.environ|os\.getenv|getenv\(", path.read_text()):
            readers.append(path.name)
    assert not readers, readers


def test_readme_table_matches_the_defaults():
    """Each row of README's GPU switch table names a variable, its [gpu] key and its values, the
    default first; every switch has a row."""
    rows = re.findall(r"^\| `(CUZK_[A-Z0-9_<>]+)` \| `(\w+)` \| ([^|]+) \|", (ROOT / "README.md").read_text(), re.M)
    assert rows, "no GPU switch table in README.md"
    by_field = {key: (var, values) for var, key, values in rows}
    defaults = GpuConfig()
    for f in dataclasses.fields(GpuConfig):
        assert f.name in by_field, f"README has no row for {f.name}"
        var, values = by_field[f.name]
        assert var == config.ENV[f.name], (f.name, var)
        first = re.match(r"\s*`([^`]*)`", values)
        assert first, (f.name, values)
        want = getattr(defaults, f.name)
        shown = {True: "true", False: "false"}.get(want, want) if isinstance(want, bool) else want
        if f.name in ("kernel_defines", "module_defines"):
            shown = '""'
        assert first.group(1) == str(shown), (f.name, first.group(1), shown)
