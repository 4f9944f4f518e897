"""``cuzk-bench compare``: a planted regression is flagged (exit 1), an identical run passes (exit 0), a change
within the noise is called noise, bad input is one line and exit 2; every known result shape normalises."""

from __future__ import annotations

import copy
import json

import pytest

from cuzk.bench import compare as cmp
from cuzk.bench.main import main as bench


def _write(tmp_path, name, obj):
    p = tmp_path / name
    p.write_text(json.dumps(obj))
    return str(p)


def _synth_doc(witness_runs, matvec_runs):
    """The shape ``cuzk-bench synth --json`` writes (the fields compare reads, plus a few it ignores)."""

    def stat(runs):
        s = sorted(runs)
        return {"median": s[len(s) // 2], "spread": s[-1] - s[0], "runs": list(runs)}

    return {"circuit": "x:Y", "constraints": 818, "witness_ms": stat(witness_runs), "matvec_ms": stat(matvec_runs), "cores": 2}


@pytest.fixture(scope="module")
def real_synth(tmp_path_factory):
    """A result file written by the real ``cuzk-bench synth`` on a small circuit."""
    out = tmp_path_factory.mktemp("cmp") / "synth.json"
    params = json.dumps({"depth": 2, "challenges": 1, "hash": "poseidon"})
    args = ["synth", "cuzk.circuit.examples:MerkleInclusion", "--circuit-params", params, "--repeat", "3", "-q"]
    assert bench([*args, "--json", str(out)]) == 0
    return json.loads(out.read_text())


def test_compare_identical_real_run_passes(real_synth, tmp_path, capsys):
    old = _write(tmp_path, "old.json", real_synth)
    new = _write(tmp_path, "new.json", real_synth)
    assert bench(["compare", old, new]) == 0
    out = capsys.readouterr().out
    assert "nothing slower beyond the noise" in out
    assert "witness" in out and "matvec" in out
    assert bench(["compare", old, new, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["shape"] == "synth" and doc["slower"] == []
    assert {r["phase"] for r in doc["phases"]} == {"witness", "matvec"}
    assert all(r["verdict"] == "noise" and r["ratio"] == 1.0 for r in doc["phases"])


def test_compare_within_noise_is_noise(real_synth, tmp_path, capsys):
    new = copy.deepcopy(real_synth)
    for k in ("witness_ms", "matvec_ms"):  # 1% slower: inside the 3% floor and the runs' own spread
        new[k]["runs"] = [x * 1.01 for x in new[k]["runs"]]
        new[k]["median"] *= 1.01
    rc = bench(["compare", _write(tmp_path, "old.json", real_synth), _write(tmp_path, "new.json", new), "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert rc == 0, doc
    assert [r["verdict"] for r in doc["phases"]] == ["noise", "noise"]


def test_compare_flags_planted_regression(tmp_path, capsys):
    tight = [100.0, 100.4, 99.6, 100.2, 99.8]  # a 0.8 ms band: far below 30%
    mv = [50.0, 50.2, 49.8, 50.1, 49.9]
    old = _write(tmp_path, "old.json", _synth_doc(tight, mv))
    new = _write(tmp_path, "new.json", _synth_doc([x * 1.3 for x in tight], mv))
    assert bench(["compare", old, new]) == 1
    out = capsys.readouterr().out
    row = next(ln for ln in out.splitlines() if ln.startswith("witness"))
    assert "slower" in row and "1.300" in row
    assert "1 slower: witness" in out
    mrow = next(ln for ln in out.splitlines() if ln.startswith("matvec"))
    assert "noise" in mrow
    # the other way round it is faster, and nothing is slower
    assert bench(["compare", new, old, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert {r["phase"]: r["verdict"] for r in doc["phases"]} == {"witness": "faster", "matvec": "noise"}
    # a wide run-to-run spread swallows the same 30%: noise, not a regression
    wide = [70.0, 100.0, 130.0, 100.0, 100.0, 75.0, 125.0]
    assert bench(["compare", _write(tmp_path, "w.json", _synth_doc(wide, mv)), new]) == 0
    # a larger --threshold also calls it noise
    assert bench(["compare", old, new, "--threshold", "0.5"]) == 0


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        ("{not json", "not JSON"),
        (json.dumps({"hello": 1}), "unknown result shape; expected"),
        (json.dumps([1, 2, 3]), "unknown result shape; expected"),
        (json.dumps({"witness_ms": {"median": "fast"}}), "looks like a synth result but is malformed"),
    ],
)
def test_compare_bad_input_exit_2(tmp_path, capsys, content, needle):
    good = _write(tmp_path, "good.json", _synth_doc([1.0, 1.1], [2.0, 2.1]))
    bad = tmp_path / "bad.json"
    bad.write_text(content)
    assert bench(["compare", good, str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(bad) in err and needle in err, err
    assert "Traceback" not in err


def test_compare_missing_file_and_mixed_shapes_exit_2(tmp_path, capsys):
    good = _write(tmp_path, "good.json", _synth_doc([1.0, 1.1], [2.0, 2.1]))
    assert bench(["compare", good, str(tmp_path / "nope.json")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "nope.json: no such file" in err
    stress = _write(tmp_path, "stress.json", {"total_s": 1.0, "completed": 1, "jobs": 1, "proofs_per_min": 60.0, "kinds": []})
    assert bench(["compare", good, stress]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "a stress result, but" in err
    assert bench(["compare", good, good, "--threshold", "-1"]) == 2


def test_compare_normalises_every_known_shape(tmp_path):
    # python -m cuzk.bench.gpu_prove --json: rows; per-phase medians, the total's runs; a failed row is skipped
    gpu = [
        {
            "curve": "bls12_381",
            "case": "dense20",
            "backend": "gpu",
            "total_s": {"median": 1.0, "min": 0.98, "max": 1.02, "runs": [0.98, 1.0, 1.02]},
            "phases_ms": {"upload": 10.0, "msm_b_g2": 200.0, "total": 1000.0},
        },
        {"case": "huge", "backend": "gpu", "error": "OutOfMemoryError: ..."},
    ]
    shape, ph = cmp.load(_write(tmp_path, "gpu.json", gpu))
    by = {p.name: p for p in ph}
    assert shape == "gpu_prove" and set(by) == {
        "bls12_381/dense20/gpu/total",
        "bls12_381/dense20/gpu/upload",
        "bls12_381/dense20/gpu/msm_b_g2",
    }
    assert by["bls12_381/dense20/gpu/total"].median == pytest.approx(1000.0)
    assert by["bls12_381/dense20/gpu/total"].band == pytest.approx(40.0)
    assert by["bls12_381/dense20/gpu/msm_b_g2"].band == pytest.approx(8.0)  # the total's 4% applied
    # python -m cuzk.bench.porep_e2e --reps N --json: median / spread / runs (seconds and ms keys)
    runs = [{"witness_s": 1.0 + i / 100, "prove_s": 2.0, "total_s": 3.0 + i / 100, "ntt_a_ms": 5.0} for i in range(5)]
    porep = {"median": {k: runs[2][k] for k in runs[0]}, "spread": {"total_s": [3.0, 3.04]}, "runs": runs, "verified": True}
    shape, ph = cmp.load(_write(tmp_path, "porep.json", porep))
    by = {p.name: p for p in ph}
    assert shape == "porep_e2e" and set(by) == {"witness", "prove", "total", "ntt_a"}
    assert by["total"].median == pytest.approx(3020.0) and by["total"].band_src == "p10-p90 of 5 runs"
    # cuzk-bench stress --json: latencies per circuit, proofs/min (higher is better)
    stress = {
        "total_s": 10.0,
        "completed": 4,
        "jobs": 4,
        "proofs_per_min": 24.0,
        "kinds": [{"circuit": "h8", "p50_s": 0.5, "p95_s": 0.9, "max_s": 1.0}, {"circuit": "dead", "p50_s": None}],
    }
    shape, ph = cmp.load(_write(tmp_path, "stress.json", stress))
    by = {p.name: p for p in ph}
    assert shape == "stress" and set(by) == {"throughput", "h8/p50 latency", "h8/p95 latency", "h8/max latency"}
    assert by["throughput"].higher_is_better
    slower_tp = dict(stress, proofs_per_min=12.0)
    rows = cmp.compare(ph, cmp.load(_write(tmp_path, "stress2.json", slower_tp))[1])
    assert {r.phase: r.verdict for r in rows}["throughput"] == "slower"
    # the common shape
    canon = {"phases": {"a": {"median": 10.0, "runs": [9.9, 10.0, 10.1]}, "b": {"median": 5.0, "spread": [4.0, 6.0]}}}
    shape, ph = cmp.load(_write(tmp_path, "canon.json", canon))
    assert shape == "phases" and [(p.name, p.band) for p in ph] == [("a", pytest.approx(0.2)), ("b", 2.0)]
