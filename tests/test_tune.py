"""`cuzk tune` (issue 22 item 2) against real daemon processes on the CPU backend, on a small Python
circuit: a deliberately slow switch (the hidden test switch test.delay_ms: the prover really sleeps)
is judged "keep default", a no-op switch (test.noop) "noise", and the TOML fragment of a faster flip
loads with load_config and changes the switches a daemon applies. Also the registry's hidden switches."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from cuzk.circuit import cs
from cuzk.engine import switches
from cuzk.engine.config import load_config
from cuzk.groth16 import prover

CUBE = "cuzk.circuit.examples:Cube"
# a 3-constraint circuit proves in ~35 ms on the 2-core development machine, where two daemons and the
# client share the cores: a 20% noise floor keeps a no-op flip "noise" there; a 150 ms delay is 4x the proof
NOISE = ["--threshold", "0.2"]


@pytest.fixture
def test_switches_on(monkeypatch, tmp_path):
    monkeypatch.setenv(switches.TEST_ENV, "1")  # the daemons (children) inherit it
    monkeypatch.setenv("CUZK_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(prover, "_test_switches", (0.0, False))
    monkeypatch.setattr(cs, "_configured", {})
    from cuzk.backends.gpu import config as gpu_config

    monkeypatch.setattr(gpu_config, "_current", None)


def tune(tmp_path, *args: str) -> dict:
    out = tmp_path / "tune.json"
    r = subprocess.run(
        [sys.executable, "-m", "cuzk", "tune", "--python", CUBE, "--json", str(out), "--quiet", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    return json.loads(out.read_text())


def test_slow_switch_keeps_the_default_and_a_noop_switch_is_noise(test_switches_on, tmp_path):
    res = tune(tmp_path, "--switch", "test.delay_ms=150", "--switch", "test.noop", "--runs", "4", *NOISE)
    assert res["backend"] == "cpu" and res["runs"] == 4
    by = {s["key"]: s for s in res["switches"]}
    slow, noop = by["test.delay_ms"], by["test.noop"]
    assert slow["verdict"] == "keep default" and slow["winner"] == 0 and slow["baseline"] == 0
    tried = slow["tried"][0]
    assert tried["value"] == 150 and tried["verdict"] == "slower" and tried["total_ratio"] > 2
    rows = {r["phase"]: r for r in tried["circuits"]["py0"]["rows"]}
    assert rows["total"]["verdict"] == "slower" and rows["prover.test_delay"]["new"] >= 150
    assert len(tried["circuits"]["py0"]["baseline"]["phases"]["total"]["runs"]) == 4  # the interleaved runs
    assert noop["verdict"] == "noise" and noop["winner"] is False and noop["tried"][0]["value"] is True
    assert "delay_ms = 0" in res["toml"] and "noop = false" in res["toml"]


def test_the_fragment_of_a_faster_flip_loads_and_changes_the_running_configuration(test_switches_on, tmp_path):
    frag = tmp_path / "win.toml"
    md = tmp_path / "table.md"
    res = tune(
        tmp_path, "--set", "test.delay_ms=150", "--switch", "test.delay_ms=0", "--runs", "2", "--toml", str(frag),
        "--markdown", str(md), *NOISE,
    )  # fmt: skip
    (s,) = res["switches"]
    assert s["baseline"] == 150 and s["winner"] == 0 and s["verdict"].startswith("flip to 0 (faster by ")
    text = frag.read_text()
    assert "[test]" in text and "delay_ms = 0" in text and "# flip to 0 (faster by" in text
    table = md.read_text()
    assert "| test.delay_ms | 150 | 0 | py0 | total |" in table and "flip to 0" in table

    from cuzk.engine.engine import Engine

    def engine_delay(cfg_path, **ov) -> float:
        ov.update({"daemon.state_dir": str(tmp_path / "state"), "gpus.backend": "cpu", "synthesis.partition_workers": 1})
        e = Engine(load_config(cfg_path, ov))
        try:
            return prover._test_switches[0]
        finally:
            e.shutdown(5)

    assert engine_delay(None, **{"test.delay_ms": 150}) == 0.15  # the baseline tune ran
    cfg = load_config(frag)
    assert cfg.warnings == [] and cfg.test.delay_ms == 0 and cfg.sources["test.delay_ms"] == "config"
    assert engine_delay(frag, **{}) == 0.0  # the fragment's winner is what the engine applies


def test_budget_stops_starting_new_values_and_says_which_were_not_reached(test_switches_on, tmp_path):
    # the baseline daemon's start and warm-up alone outlast a 1 ms budget: no value is started
    res = tune(tmp_path, "--switch", "test.delay_ms=150", "--switch", "test.noop", "--runs", "2", "--budget", "0.001")
    assert res["switches"] == []
    assert res["skipped"]["test.delay_ms"] == "150 not reached within --budget 0.001 s"
    assert res["skipped"]["test.noop"] == "true not reached within --budget 0.001 s"


def test_gpu_kernel_switches_are_judged_on_the_provers_time():
    from cuzk.bench.tune import judged_phase

    for sw in switches.SWITCHES:
        want = "gpu_compute" if sw.key.startswith("gpu.") and sw.key != "gpu.b_g2" else "total"
        assert judged_phase(sw.key) == want, sw.key
    assert judged_phase("gpu.msm_table") == "gpu_compute" and judged_phase("gpus.pinned_witness") == "total"


def test_hidden_switches_listed_and_honoured_only_under_the_variable(monkeypatch):
    monkeypatch.delenv(switches.TEST_ENV, raising=False)
    monkeypatch.setattr(prover, "_test_switches", (0.0, False))
    cfg = load_config(overrides={"test.delay_ms": 50})
    keys = [s.switch.key for s in switches.resolve(cfg, environ={})]
    assert "test.delay_ms" not in keys and "gpu.b_g2" in keys
    assert "test.delay_ms" not in switches.as_text(switches.resolve(cfg, environ={}))
    switches.apply(cfg, environ={})
    assert prover._test_switches == (0.0, False)  # not honoured without the variable
    on = {switches.TEST_ENV: "1"}
    assert "test.delay_ms" in [s.switch.key for s in switches.resolve(cfg, environ=on)]
    switches.apply(cfg, environ=on)
    assert prover._test_switches == (0.05, False)
    switches.apply(load_config(), environ=on)
    r = subprocess.run([sys.executable, "-m", "cuzk", "config", "switches"], capture_output=True, text=True, check=True)
    assert "test." not in r.stdout


def test_candidates_and_bad_usage(tmp_path):
    assert switches.candidates(switches.BY_KEY["synthesis.lc_storage"]) == ["arrays", "dicts"]
    assert switches.candidates(switches.BY_KEY["gpu.b_g2"]) == ["gpu", "cpu"]
    assert switches.candidates(switches.BY_KEY["gpu.pinned"]) == [False, True]
    assert 0 in switches.candidates(switches.BY_KEY["gpu.msm_window"])
    for args, msg in (
        (["--python", CUBE, "--switch", "gpu.nope"], "not an optimization switch"),
        (["--python", CUBE, "--switch", "test.delay_ms=5"], "hidden test switch"),
        (["--python", CUBE, "--runs", "1"], "--runs must be at least 2"),
        (["--switch", "gpu.b_g2"], "give a circuit"),
    ):
        env = {k: v for k, v in __import__("os").environ.items() if k != switches.TEST_ENV}
        env["CUZK_CACHE_DIR"] = str(tmp_path / "cache")
        r = subprocess.run([sys.executable, "-m", "cuzk", "tune", *args], capture_output=True, text=True, env=env, timeout=120)
        assert r.returncode == 2 and msg in r.stderr and "Traceback" not in r.stderr, r.stderr
