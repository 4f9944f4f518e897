"""The daemon as a real process (`python -m cuzk daemon --config F`): kill -9 and restart, SIGTERM drain,
the durable journal."""

from __future__ import annotations

import json
import shutil
import signal
import sqlite3
import tempfile
import time
from pathlib import Path

import pytest

from cuzk.engine.devcircuit import make_dev_circuit
from cuzk.groth16 import formats, verifier
from cuzk.server.client import DaemonError, DaemonProcess


@pytest.fixture(scope="module")
def dev(tmp_path_factory):
    d = tmp_path_factory.mktemp("proc-circuits")
    return {"h10": make_dev_circuit(d / "h10", "hash", 10), "big": make_dev_circuit(d / "big", "hash", 12)}


@pytest.fixture
def state():
    tmp = tempfile.mkdtemp(prefix="czp", dir="/tmp")  # short: unix socket path limit
    yield Path(tmp)
    shutil.rmtree(tmp, ignore_errors=True)


def write_config(state: Path, dev, fmt="kv") -> Path:
    h10 = dev["h10"]
    cfg = state / "cuzk.toml"
    cfg.write_text(f"""
[daemon]
state_dir = "{state}"
listen = "unix://{state}/d.sock"
drain_timeout = "30s"
[gpus]
backend = "cpu"
[synthesis]
partition_workers = 1
[pipeline]
prover_queue_depth = 1
[logging]
format = "{fmt}"
file = "{state}/daemon.log"
[registration]
roots = ["{Path(h10.folder).parent}"]  # the kill -9 test registers 'big' by RPC from beside h10
[[circuits]]
id = "h10"
r1cs = "{h10.r1cs}"
zkey = "{h10.key}"
""")
    return cfg


class Proc(DaemonProcess):
    def __init__(self, cfg: Path, state: Path):
        self.addr = f"unix://{state}/d.sock"
        super().__init__(cfg, self.addr, state / "stderr.txt")
        self.state = state


def journal_events(state: Path) -> dict[str, list[str]]:
    db = sqlite3.connect(str(state / "journal.sqlite"))
    out: dict[str, list[str]] = {}
    for jid, ev in db.execute("SELECT job_id, event FROM events ORDER BY id"):
        out.setdefault(jid, []).append(ev)
    db.close()
    return out


def journal_states(state: Path) -> dict[str, str]:
    db = sqlite3.connect(str(state / "journal.sqlite"))
    out = dict(db.execute("SELECT job_id, state FROM jobs"))
    db.close()
    return out


def check(dc, res):
    vk = formats.read_vk_json(Path(dc.folder) / "verification_key.json")
    assert res.status == "COMPLETED", res.error
    assert verifier.verify(vk, res.public[0], formats.Proof.from_bytes(res.proofs[0]))


def test_kill9_mid_queue_then_restart_completes_each_job_once(dev, state):
    cfg = write_config(state, dev)
    d = Proc(cfg, state)
    d.c.register("big", dev["big"].r1cs, zkey=dev["big"].key)  # registered by RPC: journaled too
    ws = [dev["big"].witness(s) for s in range(6)]
    jobs = [(f"k9-{i}", "big", d.c.submit("big", witness=w, request_id=f"k9-{i}").job_id) for i, w in enumerate(ws)]
    jobs += [
        (f"k9-h{i}", "h10", d.c.submit("h10", witness=dev["h10"].witness(i), request_id=f"k9-h{i}").job_id) for i in range(2)
    ]
    first = d.c.await_proof(jobs[0][2])
    check(dev["big"], first)
    d.kill9()
    states = journal_states(state)
    assert states[jobs[0][2]] == "completed"
    unfinished = [j for _, _, j in jobs if states[j] != "completed"]
    assert unfinished, "everything finished before the kill: the test proves nothing"

    d = Proc(cfg, state)
    try:
        for _rid, cid, jid in jobs:
            res = d.c.await_proof(jid)
            check(dev[cid], res)
            assert res.job_id == jid
        again = d.c.await_proof(jobs[0][2])  # finished before the crash: still retrievable, same proof
        assert again.proofs == first.proofs
        dup = d.c.submit("big", witness=ws[1], request_id="k9-1")
        assert dup.duplicate and dup.job_id == jobs[1][2]
        ev = journal_events(state)
        for _, _, jid in jobs:
            assert ev[jid].count("accepted") == 1 and ev[jid].count("completed") == 1, ev[jid]
            assert not {"failed", "cancelled"} & set(ev[jid])
        assert any("recovered" in ev[j] for j in unfinished)
        assert "cuzk_jobs_recovered_total" in d.c.metrics()
    finally:
        d.stop()


def test_sigterm_drains_in_flight_and_journals_the_rest(dev, state):
    cfg = write_config(state, dev, fmt="json")
    d = Proc(cfg, state)
    # more jobs than the pipeline holds (synthesis 1 + prover queue 1 + prover 1 + finalizer slots 2) plus
    # the ones that may finish between the first result and the signal (many on a loaded CI machine, where
    # the status poll itself is slow: 14 were once all done first): some are always still queued
    ws = [dev["h10"].witness(50 + i) for i in range(40)]
    jobs = [d.c.submit("h10", witness=w).job_id for w in ws]
    t = time.monotonic() + 30
    while d.c.status()["counters"]["total_completed"] == 0 and time.monotonic() < t:
        time.sleep(0.01)
    t0 = time.monotonic()
    d.p.send_signal(signal.SIGTERM)
    refused = False
    while d.p.poll() is None and time.monotonic() - t0 < 30:
        try:
            d.c.submit("h10", witness=ws[0])
        except DaemonError as e:
            assert e.code == "UNAVAILABLE", e
            refused = True
            break
        time.sleep(0.01)
    assert d.p.wait(40) == 0
    assert time.monotonic() - t0 < 35
    d.c.close()
    assert refused  # new work was refused while in-flight work drained
    states = journal_states(state)
    assert all(j in states for j in jobs)  # nothing accepted was lost
    assert sum(states[j] == "completed" for j in jobs) >= 2  # the in-flight ones finished
    assert sum(states[j] == "queued" for j in jobs) >= 1  # the queued ones stay journaled
    assert all(states[j] in ("completed", "queued") for j in jobs), states
    lines = [json.loads(x) for x in (state / "daemon.log").read_text().splitlines() if x.strip()]
    evs = [x.get("event") for x in lines]
    assert "daemon_listening" in evs and "daemon_draining" in evs and "daemon_stopped" in evs
    stopped = next(x for x in lines if x.get("event") == "engine_stopped")
    assert stopped["drained"] == "True"

    d = Proc(cfg, state)
    try:
        for j, _w in zip(jobs, ws):
            check(dev["h10"], d.c.await_proof(j))
        ev = journal_events(state)
        for j in jobs:
            assert ev[j].count("completed") == 1
    finally:
        d.stop()
