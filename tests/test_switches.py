"""The optimization switches as configuration (issue 22 item 1), without a GPU: the registry against the
variables the code reads, TOML / --set / environment reaching GpuConfig, its #defines and the synthesis
switches, one-line errors, precedence, and `cuzk config switches` as a subprocess."""

from __future__ import annotations

import dataclasses
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from cuzk.backends.gpu import config as gpu_config
from cuzk.backends.gpu.config import GpuConfig
from cuzk.circuit import cs
from cuzk.engine import switches
from cuzk.engine.config import ConfigError, load_config, parse_override

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "cuzk"


@pytest.fixture
def restore(monkeypatch):
    """Leave the process-wide GPU config and synthesis switches as they were; no CUZK_* switch variable."""
    monkeypatch.setattr(gpu_config, "_current", None)
    monkeypatch.setattr(cs, "_configured", {})
    for sw in switches.SWITCHES:
        if sw.env:
            monkeypatch.delenv(sw.env, raising=False)


# -- the registry ---------------------------------------------------------------------------------


def _variables_in_source() -> dict[str, list[str]]:
    """Every quoted "CUZK_..." name in cuzk's Python source outside cuzk/bench (benchmarks set variables
    for the code they measure), and where."""
    found: dict[str, list[str]] = {}
    for path in sorted(PKG.rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel.startswith("cuzk/bench/"):
            continue
        text = path.read_text()
        # a variable name built at run time would escape this check: none may be
        dynamic = re.findall(r"(?:environ|getenv)[^\n]*f[\"']CUZK_\{", text)
        assert not dynamic, f"{rel}: an environment variable named at run time ({dynamic[0]})"
        for name in re.findall(r"[\"'](CUZK_[A-Z0-9_]*)", text):
            found.setdefault(name, []).append(rel)
    return found


def test_every_variable_is_a_switch_or_listed_with_a_reason():
    found = _variables_in_source()
    assert "CUZK_B_G2" in found and "CUZK_LC_STORAGE" in found  # the scan sees the readers
    registered = {sw.env for sw in switches.SWITCHES if sw.env}
    unexplained = {v: where for v, where in found.items() if v not in registered and v not in switches.OTHER_VARIABLES}
    assert not unexplained, f"CUZK_* variables neither a switch nor in OTHER_VARIABLES: {unexplained}"
    assert registered.isdisjoint(switches.OTHER_VARIABLES)
    stale = (registered | set(switches.OTHER_VARIABLES)) - set(found)
    assert not stale, f"listed but read nowhere: {stale}"
    assert all(reason.strip() for reason in switches.OTHER_VARIABLES.values())


def test_every_gpu_config_field_is_a_switch_or_explained():
    for f in dataclasses.fields(GpuConfig):
        key = f"gpu.{f.name}"
        var = f.metadata["env"].replace("<MODULE>", "")  # CUZK_KERNEL_DEFINES_<MODULE>: read by its prefix
        assert (key in switches.BY_KEY) != (var in switches.OTHER_VARIABLES), key
    # the list: the seed's five (B1, A4, D4, A2, A1) and the named families
    seeds = {sw.seed for sw in switches.SWITCHES}
    assert {"A1", "A2", "A4", "B1", "D4"} <= seeds
    for key in ("gpu.msm_ones", "gpu.ntt_batch", "gpu.ntt_plan", "gpu.msm_acc", "gpu.upload_copy", "gpu.msm_window"):
        assert key in switches.BY_KEY
    assert switches.NOT_SWITCHES and all(why for why in switches.NOT_SWITCHES.values())


def test_registry_entries_are_complete_and_match_the_code():
    from cuzk.engine.config import SCHEMA

    schema = {f"{s}.{k}": d for s, k, d, *_ in SCHEMA}
    for sw in switches.SWITCHES:
        assert sw.measured and sw.trades and sw.doc and sw.allowed, sw.key
        assert "\n" not in sw.trades and len(sw.trades) < 140, sw.key  # one line
        if sw.section == "gpu":
            assert sw.default == getattr(GpuConfig(), sw.name) and sw.env == gpu_config.ENV[sw.name]
        else:
            assert schema[sw.key] == sw.default, sw.key
        if sw.section == "synthesis":
            assert sw.default == cs.SWITCHES[sw.name][0] and sw.env == cs.SWITCH_ENV[sw.name]


# -- configuration reaches the code ---------------------------------------------------------------


def test_toml_reaches_gpu_config_defines_and_synthesis(restore, tmp_path):
    f = tmp_path / "cuzk.toml"
    f.write_text(
        '[gpu]\nacc_minb = 4\nntt_radix = 2\nb_g2 = "cpu"\n[synthesis]\nlc_storage = "dicts"\nwitness_buffer = "growing"\n'
    )
    settings = switches.apply(load_config(f), environ={})
    cur = gpu_config.current()
    assert (cur.acc_minb, cur.ntt_radix, cur.b_g2) == (4, 2, "cpu")
    assert cs.switch("lc_storage") == "dicts" and cs.switch("witness_buffer") == "growing"
    by = {s.switch.key: s for s in settings}
    assert by["gpu.ntt_radix"].value == 2 and by["gpu.ntt_radix"].source == "config"
    assert by["gpu.msm_acc"].source == "default"
    # the #defines, and so the cubin cache key, are exactly those of the environment variable
    via_env = GpuConfig.from_env(environ={"CUZK_ACC_MINB": "4"})
    for module in ("msm", "ntt", "fr_ops", "setup"):
        assert cur.defines(module) == via_env.defines(module)
    assert cur.defines("msm") == (("CUZK_ACC_MINB", "4"),)
    from cuzk.backends.gpu import build

    try:
        target = build.DeviceTarget("90")
        assert build.cubin_path("msm", target, cur.defines("msm"), "bls12_381") == build.cubin_path(
            "msm", target, via_env.defines("msm"), "bls12_381"
        )
    except Exception as e:  # no NVRTC here: the defines' equality above is what the key is made of
        if isinstance(e, AssertionError):
            raise
    # the defaults again: no #define, the default cubin
    switches.apply(load_config(), environ={})
    assert gpu_config.current() == GpuConfig() and gpu_config.current().defines("msm") == ()
    assert cs.switch("lc_storage") == "arrays"


def test_a_daemon_engine_applies_its_switches(restore, tmp_path):
    from cuzk.engine.engine import Engine

    cfg = load_config(
        overrides={
            "daemon.state_dir": str(tmp_path / "state"),
            "gpus.backend": "cpu",
            "synthesis.partition_workers": 1,
            "gpu.ntt_plan": "greedy",
            "gpu.ntt_minb": 4,
            "synthesis.witness_buffer": "growing",
        }
    )
    e = Engine(cfg)
    try:
        assert gpu_config.current().ntt_plan == "greedy"
        assert gpu_config.current().defines("ntt") == (("CUZK_NTT_MINB", "4"),)
        assert cs.switch("witness_buffer") == "growing"
    finally:
        e.shutdown(5)


def test_witness_pool_workers_start_with_the_configured_switches(restore):
    from cuzk.circuit.circuit import CircuitSpec, WitnessPool

    cs.configure_switches({"witness_buffer": "growing"})
    pool = WitnessPool(CircuitSpec.parse("cuzk.circuit.examples:Cube"), 1)
    try:
        assert pool._pool._initargs[-1] == {"witness_buffer": "growing"}  # spawned workers get them at start
    finally:
        pool.close()


# -- errors and precedence ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text,overrides,needle",
    [
        ("[gpu]\nntt_radix = 3\n", {}, "[gpu] ntt_radix = 3: expected 4 or 2"),
        ('[gpu]\nmsm_acc = "affine"\n', {}, "[gpu] msm_acc = 'affine': expected even or items"),
        ('[synthesis]\nlc_storage = "lists"\n', {}, "synthesis.lc_storage = 'lists': expected arrays or dicts"),
        ("", {"gpu.ntt_plan": "fast"}, "gpu.ntt_plan = 'fast': expected auto or greedy or balanced"),
        ("", {"gpu.msm_window": 40}, "gpu.msm_window = 40: expected an integer 2-31, or 0"),
        ("", {"synthesis.witness_buffer": "big"}, "synthesis.witness_buffer = 'big': expected presized or growing"),
        ("", {"gpu.bogus": 1}, "gpu.bogus: unknown key"),
        ("", {"gpus.pinned_witness": "yes"}, "gpus.pinned_witness: expected true or false"),
    ],
)
def test_bad_values_are_one_line_errors_naming_key_and_values(text, overrides, needle):
    with pytest.raises(ConfigError) as ei:
        load_config(text=text, overrides=overrides)
    msg = str(ei.value)
    assert needle in msg and "\n" not in msg, msg


def test_bad_environment_value_is_a_one_line_error(restore):
    for env, needle in (
        ({"CUZK_NTT_RADIX": "8"}, "CUZK_NTT_RADIX = '8': expected 4 or 2"),
        ({"CUZK_LC_STORAGE": "lists"}, "CUZK_LC_STORAGE = 'lists': expected arrays or dicts"),
    ):
        with pytest.raises(ConfigError) as ei:
            switches.apply(load_config(), environ=env)
        assert needle in str(ei.value) and "\n" not in str(ei.value)
    assert gpu_config.current() == GpuConfig()  # nothing applied


def test_precedence_env_over_set_over_toml_over_default(restore, monkeypatch):
    text = '[gpu]\nntt_radix = 2\nmsm_ones = "masked"\nb_g2 = "cpu"\n[synthesis]\nlc_storage = "dicts"\n'
    cfg = load_config(text=text, overrides={"gpu.ntt_radix": 4, "gpu.msm_ones": "compact"})
    env = {"CUZK_MSM_ONES": "masked", "CUZK_LC_STORAGE": "arrays"}
    by = {s.switch.key: s for s in switches.resolve(cfg, environ=env)}
    assert (by["gpu.ntt_radix"].value, by["gpu.ntt_radix"].source) == (4, "--set")  # --set over TOML
    assert (by["gpu.b_g2"].value, by["gpu.b_g2"].source) == ("cpu", "config")  # TOML over default
    assert (by["gpu.msm_ones"].value, by["gpu.msm_ones"].configured, by["gpu.msm_ones"].source) == (
        "masked",
        "compact",
        "env",
    )  # env over --set
    assert (by["synthesis.lc_storage"].value, by["synthesis.lc_storage"].source) == ("arrays", "env")
    assert (by["gpu.msm_acc"].value, by["gpu.msm_acc"].source) == ("even", "default")
    assert {s.switch.key for s in switches.env_overrides(list(by.values()))} == {"gpu.msm_ones", "synthesis.lc_storage"}
    # the process: the same order
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    switches.apply(cfg)
    assert (gpu_config.current().msm_ones, gpu_config.current().ntt_radix) == ("masked", 4)
    assert cs.switch("lc_storage") == "arrays"
    monkeypatch.delenv("CUZK_LC_STORAGE")
    assert cs.switch("lc_storage") == "dicts"  # the configured value under the variable


def test_parse_override():
    assert parse_override("gpu.ntt_radix=2") == ("gpu.ntt_radix", 2)
    assert parse_override("gpu.pinned=false") == ("gpu.pinned", False)
    assert parse_override("gpu.b_g2=cpu") == ("gpu.b_g2", "cpu")
    assert parse_override('gpu.b_g2="cpu"') == ("gpu.b_g2", "cpu")
    assert parse_override("gpu.kernel_defines=A=1,B=2") == ("gpu.kernel_defines", "A=1,B=2")
    assert parse_override("gpus.devices=[0, 1]") == ("gpus.devices", [0, 1])
    for bad in ("gpu.ntt_radix", "ntt_radix=2", "=2"):
        with pytest.raises(ConfigError, match="expected KEY=VALUE"):
            parse_override(bad)


# -- the command line -----------------------------------------------------------------------------


def _cuzk(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    import os

    e = {k: v for k, v in os.environ.items() if not k.startswith("CUZK_") or k == "CUZK_CACHE_DIR"} | (env or {})
    return subprocess.run([sys.executable, "-m", "cuzk", *args], capture_output=True, text=True, env=e, timeout=120)


def test_cli_config_switches_with_config_set_and_env(tmp_path):
    f = tmp_path / "cuzk.toml"
    f.write_text('[gpu]\nntt_radix = 2\nupload_copy = "single"\n[synthesis]\nwitness_buffer = "growing"\n')
    r = _cuzk(
        "config",
        "switches",
        "--config",
        str(f),
        "--set",
        "gpu.upload_copy=parallel",
        "--set",
        "gpu.acc_minb=4",
        "--json",
        env={"CUZK_MSM_ACC": "items"},
    )
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    by = {s["key"]: s for s in d["switches"]}
    assert set(by) == {k for k, sw in switches.BY_KEY.items() if not sw.hidden}  # the test switches: CUZK_TEST_SWITCHES=1
    assert (by["gpu.ntt_radix"]["value"], by["gpu.ntt_radix"]["source"]) == (2, "config")
    assert (by["gpu.upload_copy"]["value"], by["gpu.upload_copy"]["source"]) == ("parallel", "--set")
    assert (by["gpu.acc_minb"]["value"], by["gpu.acc_minb"]["default"]) == (4, 3)
    assert (by["gpu.msm_acc"]["value"], by["gpu.msm_acc"]["source"]) == ("items", "env")
    assert by["synthesis.witness_buffer"]["value"] == "growing"
    assert all(s["measured"] and s["trades"] and s["allowed"] for s in d["switches"])
    assert d["precedence"] == ["env", "--set", "config", "default"]

    r = _cuzk("config", "switches", "--set", "gpu.b_g2=cpu")
    assert r.returncode == 0, r.stderr
    assert 'gpu.b_g2 = "cpu"   (from --set; default "gpu")' in r.stdout
    assert "measured:" in r.stdout and "trades:" in r.stdout and "Not switches here:" in r.stdout


@pytest.mark.parametrize(
    "args,needle",
    [
        (["--set", "gpu.ntt_radix=3"], "gpu.ntt_radix = 3: expected 4 or 2"),
        (["--set", "synthesis.lc_storage=lists"], "synthesis.lc_storage = 'lists': expected arrays or dicts"),
        (["--set", "nonsense"], "expected KEY=VALUE"),
    ],
)
def test_cli_bad_set_is_exit_2_and_one_line(args, needle):
    r = _cuzk("config", "switches", *args)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.count("\n") == 1 and needle in r.stderr, r.stderr


def test_prove_takes_only_switch_keys(capsys):
    from cuzk.cli import main

    # refused before any file is read: a daemon key means nothing to a one-shot proof
    rc = main.main(["prove", "k.zkey", "w.wtns", "p.json", "pub.json", "--set", "daemon.listen=x"])
    assert rc == 2 and "--set daemon.listen: not an optimization switch" in capsys.readouterr().err


def test_daemon_refuses_a_bad_set_before_starting(tmp_path):
    r = _cuzk("daemon", "--state-dir", str(tmp_path / "state"), "--set", "gpu.msm_ones=fast")
    assert r.returncode == 2 and r.stderr.strip() == "cuzk: error: gpu.msm_ones = 'fast': expected compact or masked"
    assert not (tmp_path / "state").exists()
