"""Issue 23, the engine level: several daemons on one PostgreSQL journal are one cluster. Every host is a
front door (submit, await, cancel anywhere), hosts claim work with leases, a result is written under the
claim's fencing token, a killed host's jobs are proved by the others once its lease ran out, and the
database may restart under them. PostgreSQL is a real server (tests/pg.py); the daemons are real (in this
process where the test needs to reach into one, as processes where one is killed with SIGKILL).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

from cuzk.engine.config import load_config
from cuzk.engine.devcircuit import make_dev_circuit
from cuzk.groth16 import formats, verifier
from cuzk.server.client import Client, DaemonError, DaemonProcess
from cuzk.server.daemon import Daemon


@pytest.fixture(scope="module")
def circuits(tmp_path_factory):
    d = tmp_path_factory.mktemp("cluster-circuits")
    return {"h8": make_dev_circuit(d / "h8", "hash", 8), "big": make_dev_circuit(d / "big", "hash", 12)}


@pytest.fixture
def cluster_db(pg_url):
    from cuzk.engine.journal.postgres import migrate

    migrate(pg_url)
    return pg_url


@pytest.fixture
def folder():
    tmp = tempfile.mkdtemp(prefix="czk", dir="/tmp")  # short: unix socket paths
    yield Path(tmp)
    shutil.rmtree(tmp, ignore_errors=True)


def config_text(base: Path, name: str, url: str, circuits: dict, ids=("h8",), extra: str = "", **cluster) -> str:
    opts = {"lease": "3s", "poll": "50ms", "affinity_delay": "0s"} | cluster
    lines = "\n".join(f"{k} = {json.dumps(v)}" for k, v in opts.items())
    circ = "".join(f'[[circuits]]\nid = "{cid}"\nr1cs = "{circuits[cid].r1cs}"\nzkey = "{circuits[cid].key}"\n' for cid in ids)
    return f"""
[daemon]
state_dir = "{base}/{name}"
listen = "unix://{base}/{name}.sock"
drain_timeout = "20s"
[gpus]
backend = "cpu"
[synthesis]
partition_workers = 1
[pipeline]
prover_queue_depth = 1
[journal]
url = "{url}"
[cluster]
host = "{name}"
{lines}
[logging]
file = "{base}/{name}.log"
{extra}
{circ}"""


def start(base: Path, name: str, url: str, circuits: dict, ids=("h8",), extra: str = "", **cluster) -> Daemon:
    path = base / f"{name}.toml"
    path.write_text(config_text(base, name, url, circuits, ids, extra, **cluster))
    return Daemon(load_config(str(path))).start()


def vk_of(dc):
    return formats.read_vk_json(Path(dc.folder) / "verification_key.json")


def verified(dc, res) -> bool:
    vk = vk_of(dc)
    return res.status == "COMPLETED" and verifier.verify(vk, res.public[0], formats.Proof.from_bytes(res.proofs[0], vk.curve))


def events(url: str) -> dict[str, list[str]]:
    import psycopg

    out: dict[str, list[str]] = {}
    with psycopg.connect(url) as c:
        for jid, ev in c.execute("SELECT job_id, event FROM events ORDER BY id"):
            out.setdefault(jid, []).append(ev)
    return out


def rows(url: str) -> dict[str, dict]:
    import psycopg
    from psycopg.rows import dict_row

    with psycopg.connect(url, row_factory=dict_row) as c:
        return {r["job_id"]: r for r in c.execute("SELECT * FROM jobs")}


def wait_until(pred, timeout: float, what: str) -> None:
    end = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > end:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


# -- three hosts, one queue ------------------------------------------------------------------------


def test_three_hosts_prove_60_jobs_each_exactly_once_through_any_front_door(circuits, cluster_db, folder):
    dc = circuits["h8"]
    ds = [start(folder, f"host{i}", cluster_db, circuits) for i in range(3)]
    cs = [Client(d.address) for d in ds]
    try:
        jobs = []
        for i in range(60):  # round-robin submission, each awaited through the next host
            r = cs[i % 3].submit("h8", witness=dc.witness(100 + i), request_id=f"rr-{i}")
            assert r.status == "QUEUED" and not r.duplicate
            jobs.append(r.job_id)
        hosts = {}
        for i, jid in enumerate(jobs):
            res = cs[(i + 1) % 3].await_proof(jid, timeout_ms=120_000)
            assert verified(dc, res), res.error
            assert res.host in ("host0", "host1", "host2")
            hosts[jid] = res.host
        # each job proved and journaled once; a duplicate request id answers the same job on any host
        ev = events(cluster_db)
        for jid in jobs:
            assert ev[jid].count("completed") == 1 and ev[jid].count("claimed") == 1, ev[jid]
        assert cs[2].submit("h8", witness=dc.witness(100), request_id="rr-0").job_id == jobs[0]
        assert len(set(hosts.values())) >= 2, hosts  # the work was spread
        assert all(r["state"] == "completed" for r in rows(cluster_db).values())
        # the cluster's view: three hosts up, nothing queued; the CLI reads the same from the journal alone
        st = ds[0].engine.snapshot()["cluster"]
        assert sorted(h["host"] for h in st["hosts"]) == ["host0", "host1", "host2"]
        assert all(h["state"] == "up" for h in st["hosts"]) and st["queues"] == []
        out = subprocess.run(
            [sys.executable, "-m", "cuzk", "cluster", "status", "--url", cluster_db, "--json"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert out.returncode == 0, out.stderr
        view = json.loads(out.stdout)
        assert {h["host"] for h in view["hosts"]} == {"host0", "host1", "host2"}
        assert sum(d.get("completed", 0) for d in view["finished_last"]["by_circuit"].values()) == 60
        assert "cuzk_cluster_hosts" in cs[1].metrics()
    finally:
        for c in cs:
            c.close()
        for d in ds:
            d.stop(10)
    st = [h for h in __import__("cuzk.engine.cluster", fromlist=["cluster_view"]).cluster_view(_journal(cluster_db))["hosts"]]
    assert {h["state"] for h in st} == {"stopped"}


def _journal(url: str):
    from cuzk.engine.journal.postgres import PostgresJournal

    return PostgresJournal(url, spill_dir=Path("/nonexistent"), pool_size=1)


# -- priorities and SRS affinity across hosts --------------------------------------------------------


def test_critical_submitted_to_a_busy_host_is_proved_by_an_idle_one(circuits, cluster_db, folder):
    big, h8 = circuits["big"], circuits["h8"]
    busy = start(folder, "busy", cluster_db, circuits, ids=("h8", "big"), claim_ahead=1)
    ca = Client(busy.address)
    idle = None
    try:
        slow = [ca.submit("big", witness=big.witness(i)).job_id for i in range(8)]
        eng = busy.engine
        assert eng.cluster is not None
        wait_until(lambda: eng.cluster.unstarted() >= 1 and eng.in_flight() >= 1, 60, "the busy host to fill up")
        idle = start(folder, "idle", cluster_db, circuits, ids=("h8",), claim_ahead=1)
        crit = ca.submit("h8", witness=h8.witness(7), priority="critical")
        res = ca.await_proof(crit.job_id, timeout_ms=60_000)
        assert verified(h8, res) and res.host == "idle"
        for jid in slow:
            ca.cancel(jid)
    finally:
        ca.close()
        busy.stop(10)
        if idle is not None:
            idle.stop(10)


def test_srs_affinity_a_host_with_the_key_hot_claims_first(circuits, cluster_db, folder):
    h8 = circuits["h8"]
    hot = start(folder, "hot", cluster_db, circuits, affinity_delay="30s", claim_ahead=4)
    cold = start(folder, "cold", cluster_db, circuits, affinity_delay="30s", claim_ahead=4)
    c_hot, c_cold = Client(hot.address), Client(cold.address)
    try:
        c_hot.preload("h8")  # HOT on one host only
        assert hot.engine.cluster.hot() == ["h8"] and cold.engine.cluster.hot() == []
        ids = [c_cold.submit("h8", witness=h8.witness(20 + i)).job_id for i in range(6)]  # through the cold host
        res = [c_cold.await_proof(j, timeout_ms=60_000) for j in ids]
        assert all(verified(h8, r) for r in res)
        assert {r.host for r in res} == {"hot"}  # the cold host waited 30 s before it would take one
        # a CRITICAL job is never held back by affinity: the cold host may take it at once
        hot.engine.cluster.stop_claiming()
        r = c_cold.prove("h8", witness=h8.witness(40), priority="critical", timeout_ms=20_000)
        assert verified(h8, r) and r.host == "cold"
    finally:
        c_hot.close()
        c_cold.close()
        hot.stop(10)
        cold.stop(10)


# -- cancel, drain, fencing ------------------------------------------------------------------------------


def test_cancel_through_another_host_reaches_the_holder(circuits, cluster_db, folder):
    big = circuits["big"]
    holder = start(folder, "holder", cluster_db, circuits, ids=("big",), claim_ahead=2)
    door = start(folder, "door", cluster_db, circuits, ids=("h8",))  # cannot prove big: only a front door
    ch, cd = Client(holder.address), Client(door.address)
    try:
        # submitted through the holder: a front door accepts only circuits it registers (it checks the inputs)
        ids = [ch.submit("big", witness=big.witness(i)).job_id for i in range(3)]
        wait_until(lambda: len(holder.engine.cluster.held) == 3, 60, "the holder to claim all three")
        out = cd.cancel(ids[2])  # held by the other host, not started
        assert out["cancelled"]
        res = cd.await_proof(ids[2], timeout_ms=10_000)
        assert res.status == "CANCELLED"
        wait_until(lambda: ids[2] not in holder.engine.table.active, 10, "the holder to drop the cancelled job")
        for jid in ids[:2]:
            assert verified(big, ch.await_proof(jid, timeout_ms=120_000))
        ev = events(cluster_db)[ids[2]]
        assert "completed" not in ev and ev.count("cancelled") == 1
        assert rows(cluster_db)[ids[2]]["state"] == "cancelled"
    finally:
        ch.close()
        cd.close()
        holder.stop(10)
        door.stop(10)


def test_draining_host_gives_back_unstarted_claims(circuits, cluster_db, folder):
    big = circuits["big"]
    a = start(folder, "a", cluster_db, circuits, ids=("big",), claim_ahead=3)
    ca = Client(a.address)
    try:
        ids = [ca.submit("big", witness=big.witness(i)).job_id for i in range(8)]
        wait_until(lambda: a.engine.cluster.unstarted() >= 1 and a.engine.in_flight() >= 1, 60, "a to claim and start")
        for _ in range(20):  # never more claimed and waiting than claim_ahead: the rest stays for other hosts
            assert a.engine.cluster.unstarted() <= 3
            time.sleep(0.02)
        assert len(a.engine.cluster.held) <= 3 + a.engine.in_flight()
    finally:
        ca.close()
    a.stop(30)  # drains: the started job finishes here, the unstarted claims go back to the queue
    ev = events(cluster_db)
    assert sum("released" in ev[j] for j in ids) >= 1
    b = start(folder, "b", cluster_db, circuits, ids=("big",), claim_ahead=3)
    cb = Client(b.address)
    try:
        for jid in ids:
            assert verified(big, cb.await_proof(jid, timeout_ms=120_000))
    finally:
        cb.close()
        b.stop(10)
    ev = events(cluster_db)
    assert all(ev[j].count("completed") == 1 for j in ids)
    r = rows(cluster_db)
    assert all(r[j]["attempts"] == 0 for j in ids)  # a drain loses no attempt


def test_a_late_result_from_an_expired_lease_is_refused(circuits, cluster_db, folder):
    from cuzk.engine.job import JobState

    h8 = circuits["h8"]
    a = start(folder, "late", cluster_db, circuits)
    a.engine.cluster.stop_claiming()  # claims are made by hand below
    a.engine.cluster.claiming = True
    ca = Client(a.address)
    b = None
    try:
        gate = threading.Event()
        orig = a.engine.table._finish_fenced

        def held_back(*args, **kw):  # the host stalls (GC pause, network cut) before writing its result
            gate.wait(60)
            return orig(*args, **kw)

        a.engine.table._finish_fenced = held_back
        jid = ca.submit("h8", witness=h8.witness(5)).job_id
        wait_until(lambda: rows(cluster_db)[jid]["claim_host"] == "late", 10, "the claim")
        tok = rows(cluster_db)[jid]["claim_token"]
        a.engine.cluster._stop.set()  # no more heartbeats: the lease runs out (3 s)
        b = start(folder, "ontime", cluster_db, circuits)
        res = Client(b.address).await_proof(jid, timeout_ms=60_000)
        assert verified(h8, res) and res.host == "ontime"
        gate.set()  # the stalled host wakes up and tries to write its result under the old token
        job = a.engine.table.active.get(jid)
        wait_until(lambda: job is None or job.final, 30, "the stalled host to finish")
        r = rows(cluster_db)[jid]
        assert r["claim_token"] > tok and r["claim_host"] == "ontime"
        assert json.loads(r["result"])["host"] == "ontime"
        assert events(cluster_db)[jid].count("completed") == 1
        rec = ca.await_proof(jid, timeout_ms=10_000)  # the stalled host answers the journal's truth
        assert rec.host == "ontime" and rec.status == JobState.COMPLETED.name
    finally:
        ca.close()
        a.stop(10)
        if b is not None:
            b.stop(10)


# -- failures: a host killed, the database restarted ----------------------------------------------------


class Proc(DaemonProcess):
    """A daemon as a process (`python -m cuzk daemon --config F`), so it can be killed with SIGKILL."""


def test_kill9_of_a_host_its_jobs_are_proved_by_the_others_and_nothing_is_written_twice(circuits, cluster_db, folder):
    big = circuits["big"]
    cfg = folder / "victim.toml"
    cfg.write_text(config_text(folder, "victim", cluster_db, circuits, ids=("big",), claim_ahead=3))
    victim = Proc(cfg, f"unix://{folder}/victim.sock", folder / "victim.err")
    other = None
    try:
        ids = [victim.c.submit("big", witness=big.witness(i)).job_id for i in range(5)]
        wait_until(lambda: sum(r["claim_host"] == "victim" for r in rows(cluster_db).values()) >= 3, 60, "victim's claims")
        victim.kill9()
        at_kill = rows(cluster_db)
        held = [j for j, r in at_kill.items() if r["claim_host"] == "victim" and r["state"] == "running"]
        assert held
        other = start(folder, "survivor", cluster_db, circuits, ids=("big",), claim_ahead=3)
        c = Client(other.address)
        for jid in ids:
            res = c.await_proof(jid, timeout_ms=120_000)
            assert verified(big, res)
            # the victim may have finished a job before the kill (a fast machine); nothing after it
            assert res.host == "survivor" or (jid not in held and at_kill[jid]["state"] == "completed"), (jid, res.host)
        c.close()
        r = rows(cluster_db)
        assert all(r[j]["attempts"] == 1 for j in held)  # one run lost to the kill
        # silent for more than a lease: shown as lost (cuzk cluster status, /status, metrics read this)
        wait_until(
            lambda: {h["host"]: h["state"] for h in other.engine.cluster.status()["hosts"]}["victim"] == "lost",
            10,
            "the killed host to show as lost",
        )
        # the killed host restarts (same name): it finds nothing to do and writes nothing again
        victim = Proc(cfg, f"unix://{folder}/victim.sock", folder / "victim.err")
        time.sleep(1.0)
        ev = events(cluster_db)
        assert all(ev[j].count("completed") == 1 for j in ids)
        assert all(ev[j].count("expired") == 1 for j in held)
        view = other.engine.cluster.status()
        assert {h["host"]: h["state"] for h in view["hosts"]}["victim"] == "up"
    finally:
        victim.stop()
        if other is not None:
            other.stop(10)


def test_postgres_restart_mid_run_loses_nothing_acknowledged(circuits, cluster_db, folder, pg_server):
    h8 = circuits["h8"]
    ds = [start(folder, f"pg{i}", cluster_db, circuits, lease="10s") for i in range(2)]
    cs = [Client(d.address) for d in ds]
    try:
        ids = [cs[i % 2].submit("h8", witness=h8.witness(200 + i)).job_id for i in range(12)]
        pg_server.restart()  # every connection of both hosts' pools is cut
        more = []
        for i in range(8):  # acknowledged after the restart: the pools reconnect
            for _try in range(50):
                try:
                    more.append(cs[i % 2].submit("h8", witness=h8.witness(300 + i)).job_id)
                    break
                except DaemonError as e:
                    assert e.code in ("UNAVAILABLE", "INTERNAL"), e
                    time.sleep(0.1)
        assert len(more) == 8
        for i, jid in enumerate(ids + more):
            assert verified(h8, cs[(i + 1) % 2].await_proof(jid, timeout_ms=120_000))
        ev = events(cluster_db)
        assert all(ev[j].count("completed") == 1 for j in ids + more)
    finally:
        for c in cs:
            c.close()
        for d in ds:
            d.stop(10)


def test_cluster_config_validation_and_inputs_above_the_inline_limit(circuits, cluster_db, folder):
    from cuzk.engine.config import ConfigError

    with pytest.raises(ConfigError, match=r"cluster.lease: at least 1s"):
        load_config(text='[cluster]\nlease = "500ms"\n')
    h8 = circuits["h8"]
    d = start(folder, "small", cluster_db, circuits, inline_bytes="1KiB")
    c = Client(d.address)
    try:
        with pytest.raises(DaemonError) as e:
            c.submit("h8", witness=h8.witness(1))
        assert e.value.code == "RESOURCE_EXHAUSTED" and "cluster.inline_bytes" in str(e.value)
    finally:
        c.close()
        d.stop(10)
    shared = folder / "shared"
    d = start(folder, "spill", cluster_db, circuits, inline_bytes="1KiB", shared_dir=str(shared))
    c = Client(d.address)
    try:
        res = c.prove("h8", witness=h8.witness(2), timeout_ms=60_000)
        assert verified(h8, res)
    finally:
        c.close()
        d.stop(10)


def test_inputs_by_reference_are_read_by_the_proving_host_and_cluster_status_shows_the_hosts(circuits, cluster_db, folder):
    h8 = circuits["h8"]
    shared = folder / "shared"
    shared.mkdir()
    extra = f'[inputs]\nroots = ["{shared}"]\n'
    door = start(folder, "door2", cluster_db, circuits, extra=extra)
    prover = start(folder, "prover2", cluster_db, circuits, extra=extra)
    door.engine.cluster.stop_claiming()  # only a front door: the other host proves what it accepts
    cd, cp = Client(door.address), Client(prover.address)
    try:
        w = shared / "w.wtns"
        w.write_bytes(h8.witness(11))
        jid = cd.submit("h8", partitions=[("witness_path", str(w))]).job_id
        res = cp.await_proof(jid, timeout_ms=60_000)
        assert verified(h8, res) and res.host == "prover2"
        # the CLI: cuzk submit --by-reference through the front door, cuzk await through the other host
        r = subprocess.run(
            [sys.executable, "-m", "cuzk", "submit", "h8", str(w), "--by-reference", "--addr", door.address],
            capture_output=True,
            text=True,
        )
        assert r.returncode == 0, r.stderr
        assert verified(h8, cp.await_proof(r.stdout.strip(), timeout_ms=60_000))
        # a path outside the roots is refused at the door, naming the field and the setting
        outside = folder / "w.wtns"
        outside.write_bytes(h8.witness(12))
        with pytest.raises(DaemonError) as e:
            cd.submit("h8", partitions=[("witness_path", str(outside))])
        assert e.value.code == "PERMISSION_DENIED" and "inputs.roots" in str(e.value) and "partitions[0]" in str(e.value), e.value
        # a file changed after it was accepted: the proving host refuses to prove other bytes
        prover.engine.cluster.stop_claiming()
        w2 = shared / "w2.wtns"
        w2.write_bytes(h8.witness(13))
        jid2 = cd.submit("h8", partitions=[("witness_path", str(w2))]).job_id
        with __import__("psycopg").connect(cluster_db) as c:  # journaled: the reference, not the bytes
            (kind, data), *more = c.execute("SELECT kind, data FROM payloads WHERE job_id=%s", (jid2,)).fetchall()
        ref = json.loads(bytes(data))
        assert not more and kind == "wtns_path" and ref["path"] == str(w2) and ref["size"] == w2.stat().st_size
        w2.write_bytes(h8.witness(14))
        prover.engine.cluster.claiming = True
        prover.engine.cluster.wake.set()
        res2 = cp.await_proof(jid2, timeout_ms=60_000)
        assert res2.status == "FAILED" and "changed since the job was submitted" in res2.error
        # cuzk cluster status: both hosts up, the completed jobs counted
        r = subprocess.run(
            [sys.executable, "-m", "cuzk", "cluster", "status", "--url", cluster_db], capture_output=True, text=True
        )
        assert r.returncode == 0, r.stderr
        lines = r.stdout.splitlines()
        for host in ("door2", "prover2"):
            row = next(ln for ln in lines if ln.strip().startswith(host))
            assert row.split()[1] == "up"
        assert any(ln.strip().startswith("h8") and "completed 2" in ln for ln in lines), r.stdout
        assert "failed 1" in r.stdout
    finally:
        cd.close()
        cp.close()
        door.stop(10)
        prover.stop(10)
