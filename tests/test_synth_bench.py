"""``cuzk-bench synth --processes N``: the timed witness computed in N parts by a WitnessPool, its first
witness timed apart and checked bit-identical to the single-process witness; a pool witness that differs
voids the benchmark."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from cuzk import CuzkError
from cuzk.bench import synth
from cuzk.circuit.split import SharedWitness

MERKLE = "cuzk.circuit.examples:MerkleInclusion"
TINY = {"depth": 2, "challenges": 4}


def test_synth_processes_cli(tmp_path):
    out = tmp_path / "r.json"
    cmd = [sys.executable, "-m", "cuzk.bench.main", "synth", MERKLE, "--circuit-params", json.dumps(TINY)]
    cmd += ["--processes", "2", "--repeat", "1", "--record", "--no-trace", "-q", "--json", str(out)]
    env = dict(os.environ, CUZK_CACHE_DIR=str(tmp_path / "cache"))
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120, check=False)
    assert p.returncode == 0, p.stderr
    r = json.loads(out.read_text())
    assert r["processes"] == 2 and r["parts"] == 2 and r["cores"] == max(2, r["threads"])
    assert r["witness_checked_equal"] is True
    assert r["first_witness_s"] > 0 and len(r["witness_ms"]["runs"]) == 1
    assert r["constraints_per_s_per_core"] == pytest.approx(
        r["constraints"] / ((r["witness_ms"]["median"] + r["matvec_ms"]["median"]) / 1e3) / r["cores"]
    )
    assert "2 parts by 2 worker processes" in p.stdout and "equal to the single-process witness" in p.stdout
    assert "max(processes, threads)" in p.stdout


def test_synth_processes_differing_witness_is_void(tmp_path, monkeypatch):
    """The equality check is real: a pool witness off by one bit (flipped where this process maps the
    workers' shared buffer) stops the benchmark."""
    monkeypatch.setenv("CUZK_CACHE_DIR", str(tmp_path / "cache"))
    real = SharedWitness.array

    def flipped(self):
        w = np.array(real(self))
        w[-1, 0] ^= 1
        return w

    monkeypatch.setattr(SharedWitness, "array", flipped)
    with pytest.raises(CuzkError, match="differs from the single-process one"):
        synth.run(MERKLE, TINY, repeat=1, trace=False, progress=False, processes=2)
