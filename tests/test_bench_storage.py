"""cuzk-bench gen-vanilla and stress: the storage-proof load test's tools (small circuits stand in for the
proof kinds where the real ones would take minutes on the CPU backend)."""

from __future__ import annotations

import json
import shutil
import tempfile

import pytest

from cuzk import CuzkError
from cuzk.bench.main import main as bench_main
from cuzk.bench.stress import parse_job
from cuzk.engine.config import load_config
from cuzk.engine.devcircuit import make_dev_circuit
from cuzk.filecoin import vanilla as V
from cuzk.server.daemon import Daemon


def test_parse_job():
    k = parse_job("winning=a.cvp+b.cvp:2.5")
    assert (k.circuit, k.files, k.weight) == ("winning", ["a.cvp", "b.cvp"], 2.5)
    k = parse_job("porep=/x/porep.cvp")
    assert (k.files, k.weight) == (["/x/porep.cvp"], 1.0)
    for bad, msg in (("porep", "expected CIRCUIT=FILE"), ("=x.cvp", "expected CIRCUIT=FILE"), ("p=x:0", "positive")):
        with pytest.raises(CuzkError, match=msg):
            parse_job(bad)


def test_stress_mix_reports_deadlines(tmp_path, capsys):
    """Two kinds at once: a CRITICAL one with a deadline it cannot meet (1 ms) and a NORMAL one; every job
    is counted, the missed deadlines are reported per kind, --require-deadlines turns them into exit 1."""
    h8 = make_dev_circuit(tmp_path / "h8", "hash", 8)
    files = []
    for i in range(2):
        f = tmp_path / f"w{i}.wtns"
        f.write_bytes(h8.witness(i))
        files.append(str(f))
    cfg = tmp_path / "cuzk.toml"
    cfg.write_text(f"""
[[circuits]]
id = "winning"
r1cs = "{h8.r1cs}"
zkey = "{h8.key}"
default_priority = "critical"
deadline = "1ms"
[[circuits]]
id = "porep"
r1cs = "{h8.r1cs}"
zkey = "{h8.key}"
""")
    state = tempfile.mkdtemp(prefix="czs", dir="/tmp")
    over = {"daemon.state_dir": state, "daemon.listen": f"unix://{state}/d.sock", "gpus.backend": "cpu"}
    d = Daemon(load_config(cfg, overrides=over)).start()
    try:
        out = tmp_path / "stress.json"
        argv = ["-a", d.address, "stress", "--job", f"winning={files[0]}:2", "--job", f"porep={files[1]}"]
        assert bench_main([*argv, "-c", "9", "-j", "3", "--seed", "1", "--json", str(out)]) == 0
        fig = json.loads(out.read_text())
        rows = {r["circuit"]: r for r in fig["kinds"]}
        assert fig["completed"] == 9 and sum(r["jobs"] for r in rows.values()) == 9
        assert rows["winning"]["jobs"] > rows["porep"]["jobs"] > 0  # weight 2 : 1 with this seed
        assert rows["winning"]["deadlines_missed"] == rows["winning"]["jobs"] and rows["porep"]["deadlines_missed"] == 0
        text = capsys.readouterr().out
        assert "DEADLINE MISSED" in text and "proofs/min" in text
        only = ["-a", d.address, "stress", "--job", f"winning={files[0]}", "-c", "2", "-j", "2"]
        assert bench_main([*only, "--require-deadlines"]) == 1
    finally:
        d.stop(10)
        shutil.rmtree(state, ignore_errors=True)


def test_gen_vanilla_every_kind(tmp_path, capsys):
    out = tmp_path / "gv"
    assert bench_main(["gen-vanilla", "--sector-size", "2KiB", "--out", str(out)]) == 0
    kinds = {"porep": 1, "window-post": 2, "winning-post": 2}  # .cvp versions: 1 PoRep, 2 PoSt
    for stem, version in kinds.items():
        obj = V.decode((out / f"{stem}.cvp").read_bytes())
        assert obj["version"] == version
        assert json.loads((out / f"{stem}.json").read_text())["version"] == version
    assert len(V.decode((out / "window-post.cvp").read_bytes())["sectors"]) == 2
    fig = json.loads((out / "figures.json").read_text())
    assert set(fig["kinds"]) == set(kinds) and all(r["bytes"] > 0 for r in fig["kinds"].values())
    assert bench_main(["gen-vanilla", "--sector-size", "3KiB", "--out", str(out)]) == 2
    assert "--sector-size" in capsys.readouterr().err
