"""Engine parts on their own: config schema, generated gRPC code, journal, WARM cache files, SRS tiers,
scheduler order. (The daemon end to end is in test_daemon*.py.)"""

from __future__ import annotations

import json
import re
import struct
import tempfile
import threading
import time
from pathlib import Path

import pytest
from conftest import ROOT

from cuzk import CuzkError, curves
from cuzk.backends import get_backend
from cuzk.engine import config as cfgmod
from cuzk.engine import srs as srsmod
from cuzk.engine.config import ConfigError, load_config
from cuzk.engine.devcircuit import make_dev_circuit
from cuzk.engine.engine import Engine
from cuzk.engine.errors import FailedPrecondition, NotFound, Unavailable
from cuzk.engine.job import IllegalTransition, Job, JobRecord, JobState, Part
from cuzk.engine.journal import Journal
from cuzk.engine.registry import Circuit
from cuzk.engine.scheduler import Scheduler
from cuzk.groth16 import formats, prover, verifier
from cuzk.groth16.backend import Device
from cuzk.groth16.zkey import read_zkey
from cuzk.r1cs.wtns import parse_wtns, wtns_bytes

CPU_BACKEND = get_backend("cpu")
(CPU,) = CPU_BACKEND.devices()
EXAMPLE = ROOT / "cuzk" / "engine" / "cuzk.example.toml"


@pytest.fixture(scope="module")
def dev(tmp_path_factory):
    d = tmp_path_factory.mktemp("units")
    return {
        "snarkjs": make_dev_circuit(d / "s", "hash", 8),
        "bellperson": make_dev_circuit(d / "b", "chain", 8, style="bellperson"),
    }


# -- config ---------------------------------------------------------------------------------------


def test_example_config_documents_every_key():
    text = EXAMPLE.read_text()
    cfg = load_config(EXAMPLE)
    assert cfg.warnings == []
    assert [c.id for c in cfg.circuits] == ["example"]
    assert Path(cfg.circuits[0].zkey).is_file()  # relative to the file's folder
    section = None
    seen = set()
    for line in text.splitlines():
        m = re.match(r"^\[(\w+)\]$", line.strip())
        if m:
            section = m.group(1)
        m = re.match(r"^#?\s*(\w+)\s*=", line)
        if m and section:
            seen.add((section, m.group(1)))
    for s, k, *_ in cfgmod.SCHEMA:
        assert (s, k) in seen, f"{s}.{k} missing from {EXAMPLE.name}"
    for k, *_ in cfgmod.CIRCUIT_KEYS:
        assert re.search(rf"^#?\s*{k}\s*=", text, re.MULTILINE), f"circuits.{k} missing from {EXAMPLE.name}"
    # the reference text lists every key too, and is itself a valid config
    ref = cfgmod.reference_text()
    assert load_config(text=ref).warnings == []
    from cuzk.backends import settings_reference

    for k, *_ in settings_reference("gpu"):
        assert ("gpu", k) in seen, f"gpu.{k} missing from {EXAMPLE.name}"
        assert re.search(rf"^{k}\s*=", ref, re.MULTILINE), f"gpu.{k} missing from the reference text"


def test_gpu_table_is_validated_without_a_gpu():
    c = load_config(text='[gpu]\nb_g2 = "cpu"\nntt_radix = 2\nmodule_defines = { msm = "CUZK_ACC_MINB=4" }\n')
    assert c.gpu == {"b_g2": "cpu", "ntt_radix": 2, "module_defines": {"msm": "CUZK_ACC_MINB=4"}} and c.warnings == []
    for text, needle in (
        ('[gpu]\nmsm_acc = "fast"\n', "[gpu] msm_acc = 'fast': expected even or items"),
        ("[gpu]\nbogus = 1\n", "[gpu] bogus: unknown key"),
        ("[gpu]\nntt_radix = 3\n", "[gpu] ntt_radix"),
    ):
        with pytest.raises(cfgmod.ConfigError) as ei:
            load_config(text=text)
        assert needle in str(ei.value) and "\n" not in str(ei.value), str(ei.value)


def test_config_values_and_errors(tmp_path):
    assert cfgmod.parse_size("512MiB", "x") == 512 << 20
    assert cfgmod.parse_size("2GB", "x") == 2_000_000_000
    assert cfgmod.parse_size("auto", "x") is None
    assert cfgmod.parse_duration("250ms", "x") == 0.25
    assert cfgmod.parse_duration("24h", "x") == 86400
    c = load_config(text="[daemon]\nfoo = 1\n[bogus]\n[scheduler]\nmax_batch_size = 4\n")
    assert c.scheduler.max_batch_size == 4
    assert any("daemon.foo" in w for w in c.warnings) and any("[bogus]" in w for w in c.warnings)
    with pytest.raises(ConfigError, match="memory.working_memory_budget"):
        load_config(text='[memory]\nworking_memory_budget = "lots"\n')
    with pytest.raises(ConfigError, match="journal.retention"):
        load_config(text='[journal]\nretention = "forever"\n')
    with pytest.raises(ConfigError, match=r"circuits\[0\].*exactly one proving key"):
        load_config(text='[[circuits]]\nid = "a"\nr1cs = "x.r1cs"\n')
    with pytest.raises(ConfigError, match="malformed TOML"):
        load_config(text="[daemon\n")
    c = load_config(overrides={"daemon.state_dir": str(tmp_path), "logging.level": "debug"})
    assert c.listen == f"unix://{tmp_path / 'cuzk.sock'}" and c.journal_path == tmp_path / "journal.sqlite"


# -- generated code -------------------------------------------------------------------------------


def test_protogen_generates_and_detects_stale(tmp_path):
    from cuzk.server import protogen

    root = tmp_path / "proto"
    for rel in (protogen.PROTO_REL, f"{protogen.CURIO_DIR}/{protogen.CURIO_REL}"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text((ROOT / "proto" / rel).read_text())
    out = tmp_path / "gen"
    protogen.generate(out, root)
    data = protogen.proto_bytes(root)
    assert protogen._fresh(out, data)
    assert "from . import proving_pb2" in (out / "proving_pb2_grpc.py").read_text()
    assert "from . import curio_pb2" in (out / "curio_pb2_grpc.py").read_text()
    assert not protogen._fresh(out, data + b"\n// changed\n")
    pb, _ = protogen.load()
    assert {m.name for m in pb.DESCRIPTOR.services_by_name["ProvingEngine"].methods} == {
        "SubmitProof",
        "SubmitProofStream",
        "AwaitProof",
        "Prove",
        "CancelProof",
        "GetStatus",
        "GetMetrics",
        "PreloadSRS",
        "EvictSRS",
        "RegisterCircuit",
        "RegisterCircuitStream",
        "ListCircuits",
    }
    assert pb.DESCRIPTOR.package == "cuzk.daemon.v1"
    cpb, _ = protogen.load_curio()  # the original Curio daemon's API, its descriptor's name as upstream
    assert cpb.DESCRIPTOR.package == "cuzk.v1" and cpb.DESCRIPTOR.name == "cuzk/v1/proving.proto"


# -- journal --------------------------------------------------------------------------------------


def test_journal_finishes_once_and_purges(store):
    j = store()  # both stores: SQLite and PostgreSQL (issue 23)
    j.insert_job("a", "req-1", "h", "c", 2, [("wtns", b"abc")], time.time())
    assert j.payloads("a") == [("wtns", b"abc")]
    assert j.by_request("req-1")["job_id"] == "a"
    j.mark_started("a", time.time())
    assert [r["job_id"] for r in j.unfinished()] == ["a"]
    assert j.finish("a", "completed", time.time(), result='{"x": 1}')
    assert not j.finish("a", "failed", time.time(), error="late")
    assert j.get("a")["state"] == "completed" and j.payloads("a") == [("wtns", b"abc")]
    assert j.purge_payloads() == 1 and j.payloads("a") == []
    assert [e for _, e in j.events("a")] == ["accepted", "started", "completed"]
    assert j.purge(time.time() - 3600) == 0
    assert j.purge(time.time() + 1) == 1 and j.get("a") is None
    j.close()


# -- jobs and their records -----------------------------------------------------------------------


def test_job_state_machine_allows_only_its_transitions(dev):
    c = Circuit(cfgmod.validate_circuit(dev["snarkjs"].spec("c"), "c"))

    def job() -> Job:
        return Job("j", "", c, 2, [Part(0, "wtns")], 0.0, "h")

    j = job()
    assert j.state is JobState.QUEUED and not j.final
    with pytest.raises(IllegalTransition):
        j.move_to(JobState.COMPLETED)  # a job completes only after it ran
    assert j.start(5.0) and j.state is JobState.RUNNING and j.started_at == 5.0
    assert not j.start(6.0) and j.started_at == 5.0  # a later partition does not restart it
    with pytest.raises(IllegalTransition):
        j.finish(JobState.RUNNING)  # not a final state
    assert j.finish(JobState.FAILED, "boom") and j.final and j.error == "boom"
    assert not j.finish(JobState.CANCELLED, "late") and j.state is JobState.FAILED and j.error == "boom"
    with pytest.raises(IllegalTransition):
        j.move_to(JobState.RUNNING)  # final states have no way out
    q = job()
    assert q.finish(JobState.CANCELLED) and q.state is JobState.CANCELLED  # cancelled while queued


def test_a_result_row_in_the_old_format_still_loads(dev, tmp_path, engines):
    """The journal's result column as every daemon before JobRecord wrote it (the engine's record dict:
    the proof as hex, its snarkjs JSON as text, public signals as decimal strings) is still answered,
    and a record written now has the same shape."""
    from cuzk.server.service import record_to_pb

    dc = dev["snarkjs"]
    pk = read_zkey(dc.key)
    res = prover.prove(pk, parse_wtns(dc.witness(9)), CPU_BACKEND)
    proof_json = json.dumps(formats.proof_to_json(res.proof))
    now = time.time()
    old = {
        "job_id": "old-1",
        "status": "COMPLETED",
        "circuit_id": "h",
        "backend": "cpu",
        "error": "",
        "partitions": [
            {
                "index": 0,
                "proof": res.proof.to_bytes().hex(),
                "proof_json": proof_json,
                "public": [str(x) for x in res.public],
                "phases": {"msm": 1.5, "srs_load": 0.5},
                "device": "cpu",
            }
        ],
        "timings": {
            "queue_wait_ms": 1.0,
            "srs_load_ms": 0.5,
            "synthesis_ms": 3.0,
            "gpu_compute_ms": 4.0,
            "finalize_ms": 5.0,
            "total_ms": 15.0,
            "phases": {"msm": 1.5, "srs_load": 0.5},
        },
        "batch_id": "",
        "batch_size": 0,
        "batch_flush": "",
        "dispatch_order": 7,
        "submitted_at": now - 1,
        "completed_at": now,
        "attempts": 1,
        "priority": 2,
        "request_id": "req-old",
    }
    j = Journal(tmp_path / "journal.sqlite")  # the engine's journal in its state folder
    j.insert_job("old-1", "req-old", "hash-old", "h", 2, [("wtns", b"")], now - 1)
    assert j.finish("old-1", "completed", now, result=json.dumps(old))
    j.close()
    e = engines()
    rec = e.await_job("old-1", 5)
    assert isinstance(rec, JobRecord) and rec.status == "COMPLETED" and rec.state is JobState.COMPLETED
    (p,) = rec.partitions
    assert p.proof == res.proof.to_bytes() and p.proof_json == proof_json and list(p.public) == res.public
    assert p.device == "cpu" and p.phases == {"msm": 1.5, "srs_load": 0.5}
    assert rec.timings is not None and rec.timings.total_ms == 15.0 and rec.timings.phases["msm"] == 1.5
    assert (rec.dispatch_order, rec.attempts, rec.request_id) == (7, 1, "req-old")
    assert e.table.duplicate("req-old", "hash-old") == rec  # the request id still maps to it
    assert json.loads(rec.to_json()) == old  # and the format written now is the same
    m = record_to_pb(rec)
    assert m.proof == res.proof.to_bytes() and m.partitions[0].proof_json == proof_json
    assert [int(x) for x in m.public_signals] == res.public and m.total_ms == 15.0 and m.phases_ms["msm"] == 1.5


# -- SRS tiers ------------------------------------------------------------------------------------


@pytest.mark.parametrize("style", ["snarkjs", "bellperson"])
def test_warm_file_round_trip_proves(dev, tmp_path, style):
    dc = dev[style]
    c = Circuit(cfgmod.validate_circuit(dc.spec("c"), "c"))
    e = srsmod.Entry(c)
    m = srsmod.SrsManager(tmp_path, CPU_BACKEND, {CPU: 1 << 30}, 1 << 30)
    pk = m._parse_cold(e)
    size = srsmod.write_warm(tmp_path / "x.srs", pk, {"circuit_id": "c", "source": dc.key, "source_id": e.source_id})
    assert size == (tmp_path / "x.srs").stat().st_size
    wpk, hdr = srsmod.map_warm(tmp_path / "x.srs")
    assert hdr["style"] == style and wpk.fingerprint == pk.fingerprint
    for name in pk.raw:
        assert bytes(wpk.raw[name]) == bytes(pk.raw[name])
    w = parse_wtns(dc.witness(5))
    res = prover.prove(wpk, w, CPU_BACKEND)
    assert verifier.verify(pk.vk, res.public, res.proof)


def test_srs_manager_tiers_budget_refcounts(dev, tmp_path):
    cs = []
    for i, style in enumerate(("snarkjs", "bellperson")):
        cs.append(Circuit(cfgmod.validate_circuit(dev[style].spec(f"c{i}"), "c")))
    m = srsmod.SrsManager(tmp_path, CPU_BACKEND, {CPU: 1}, 1 << 30)  # HOT budget fits nothing: at most the one in use
    for c in cs:
        m.register(c)
    assert [m.tier(c.id) for c in cs] == [srsmod.COLD, srsmod.COLD]
    pk0, ms, prev = m.acquire("c0", CPU)
    assert prev == srsmod.COLD and m.tier("c0") == srsmod.HOT
    with pytest.raises(Exception, match="in use"):
        m.evict("c0")
    pk1, _, prev1 = m.acquire("c1", CPU)  # over budget: c0 is in use, so it stays
    assert m.tier("c0") == srsmod.HOT and m.tier("c1") == srsmod.HOT
    m.release("c0", CPU)  # now c0 is evictable and the budget is enforced
    assert m.tier("c0") == srsmod.WARM and m.tier("c1") == srsmod.HOT
    m.release("c1", CPU)
    assert m.tier("c1") == srsmod.WARM
    was, freed, tier = m.evict("c0", srsmod.COLD)
    assert was and freed > 0 and tier == srsmod.COLD
    # a fresh manager finds the WARM cache file of c1 (it survives restarts)
    m2 = srsmod.SrsManager(tmp_path, CPU_BACKEND, {CPU: 1 << 30}, 1 << 30)
    for c in cs:
        m2.register(c)
    assert m2.tier("c1") == srsmod.WARM and m2.tier("c0") == srsmod.COLD
    st = {s["circuit_id"]: s for s in m2.status()}
    assert st["c1"]["warm_bytes"] > 0 and st["c0"]["cold_bytes"] > 0


# -- scheduler ------------------------------------------------------------------------------------


class _J:
    def __init__(self, prio, cid="c", parts=1):
        self.priority = prio
        self.n_parts = parts
        self.part_bytes = 10
        self.cancelled = self.final = False
        self.dispatch_order = 0
        self.circuit = type("C", (), {"id": cid})()
        self.batch = None


def test_scheduler_priority_fifo_and_budget():
    s = Scheduler(25, 1, 1.0)
    jobs = [_J(p) for p in (1, 2, 3, 4, 2, 4, 1)]
    for j in jobs:
        s.push_job(j, False)
    order = []
    for _ in jobs:
        it = s.take()
        order.append(jobs.index(it.job))
        s.release(it.nbytes)
    assert order == [3, 5, 2, 1, 4, 0, 6]
    a, b = _J(2, parts=3), _J(2)
    s.push_job(a, False)
    s.push_job(b, False)
    x, y = s.take(), s.take()  # 20 of 25 bytes
    assert (x.part, y.part) == (0, 1) and s.budget.used == 20
    got = []
    t = __import__("threading").Thread(target=lambda: got.append(s.take()))
    t.start()
    t.join(0.3)
    assert t.is_alive()  # the third partition does not fit
    s.release(10)
    t.join(5)
    assert got[0].part == 2
    s.close()


# -- engine pipeline (in-process Engine, CPU backend, the 2^8 dev circuit) -----------------------------

SERIAL = {
    "gpus.backend": "cpu",
    "synthesis.partition_workers": 1,
    "gpus.cpu_workers": 1,
    "pipeline.prover_queue_depth": 1,
    "registration.roots": [tempfile.gettempdir()],  # register_circuit may name the tests' temporary files
}


def _wait(cond, timeout=30.0, what="condition"):
    t = time.monotonic() + timeout
    while time.monotonic() < t:
        if cond():
            return
        time.sleep(0.005)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.fixture
def engines(tmp_path):
    """engines(state=tmp_path, start=True, **overrides) -> a started CPU Engine; all shut down at the end."""
    made = []

    def make(state=None, start=True, **over):
        o = {"daemon.state_dir": str(state or tmp_path)} | SERIAL | over
        e = Engine(load_config(overrides=o))
        made.append(e)
        return e.start() if start else e

    yield make
    for e in made:
        e.shutdown(5)


@pytest.fixture
def gate(monkeypatch):
    """gate(module, name): every call of module.name signals ``entered`` and waits for ``go``."""
    made = []

    def make(module, name):
        g = type("Gate", (), {})()
        g.entered, g.go = threading.Event(), threading.Event()
        real = getattr(module, name)

        def wrapper(*a, **k):
            g.entered.set()
            g.go.wait(30)
            return real(*a, **k)

        monkeypatch.setattr(module, name, wrapper)
        made.append(g)
        return g

    yield make
    for g in made:
        g.go.set()


def _bad_witness(dc, seed) -> bytes:
    w = parse_wtns(dc.witness(seed)).copy()
    w[-1] = curves.get("bls12_381").fr.from_ints([12345])[0]
    return wtns_bytes(w)


def test_drain_deadline_leaves_an_in_flight_job_journaled_for_the_restart(dev, tmp_path, engines, gate):
    dc = dev["snarkjs"]
    g = gate(prover, "prove_start")
    e = engines()
    e.register_circuit(dc.spec("h"))
    job, _, _ = e.submit("h", [("wtns", dc.witness(3))])
    assert g.entered.wait(30)
    assert e.shutdown(0.0) is False  # the deadline passes while the prover is inside prove_start
    g.go.set()
    for t in e._threads:
        t.join(10)
    assert e.journal.get(job.job_id)["state"] == "running"  # not failed: it runs again after a restart
    e.journal.close()
    e2 = engines()
    rec = e2.await_job(job.job_id, 30)
    assert rec.status == "COMPLETED", rec
    assert [ev for _, ev in e2.journal.events(job.job_id)].count("completed") == 1


@pytest.fixture
def two_cpu_devices(monkeypatch):
    """Engines made while this is active see a second CPU "device" (cpu-b) with its own prover worker:
    the per-device code paths of a multi-GPU host, exercised without GPUs. The CPU backend lists it, so
    the engine builds it like any other device (the backend shares a key's resident copy between them)."""
    monkeypatch.setattr(CPU_BACKEND, "devices", lambda: [CPU, Device("cpu-b", "cpu")])


class _TwoGpus:
    """A backend that lists two GPUs (nothing runs on it): the executor's GPU paths without a GPU."""

    name = "gpu"

    def devices(self) -> list[Device]:
        return [Device("gpu:0", "gpu", 0), Device("gpu:1", "gpu", 1)]

    def memory(self, device: Device):
        from cuzk.groth16.backend import Memory

        return Memory(total=(device.ordinal + 1) << 30, free=1 << 20)


def test_executor_builds_devices_from_the_backend(tmp_path):
    from cuzk.engine.errors import EngineError
    from cuzk.engine.executor import Executor, open_backend, select_devices

    gpus = _TwoGpus()
    assert [d.name for d in select_devices(gpus, [])] == ["gpu:0", "gpu:1"]
    assert [d.name for d in select_devices(gpus, [1])] == ["gpu:1"]  # gpus.devices, in its order
    with pytest.raises(EngineError, match="GPU 5 does not exist"):
        select_devices(gpus, [5])
    assert select_devices(CPU_BACKEND, [1]) == [CPU]  # GPU ordinals mean nothing to the CPU backend
    cfg = load_config(
        overrides={"daemon.state_dir": str(tmp_path), "gpus.affinity": {"1": "a"}, "gpus.gpu_workers_per_device": 2}
    )
    ex = Executor(cfg, gpus, machine_memory=64 << 30)
    try:
        d0, d1 = ex.devices
        assert (d0.allowed, d1.allowed) == (None, frozenset({"a"})) and not d1.may_prove("b") and ex.may_prove("b")
        assert (d0.hot_budget, d1.hot_budget) == (1 << 29, 1 << 30)  # half of each GPU's memory
        assert [(w.id, w.device.name) for w in ex.workers] == [(0, "gpu:0"), (1, "gpu:0"), (2, "gpu:1"), (3, "gpu:1")]
        assert ex.n_finalizers == 2 * cfg.pipeline.finalizer_threads
    finally:
        ex.shutdown(True)
    from cuzk.backends import gpu_available

    if not gpu_available():
        with pytest.raises(EngineError, match="no CUDA GPU is visible"):
            open_backend("gpu")


def test_partitions_of_one_job_spread_across_devices(dev, engines, two_cpu_devices, monkeypatch):
    """A 4-partition job on two devices: both devices prove partitions of it at the same time (two
    prove_start calls meet at a barrier: with one device only, it times out and the test fails)."""
    dc = dev["snarkjs"]
    e = engines(**{"synthesis.partition_workers": 2, "pipeline.prover_queue_depth": 2})
    assert [d.name for d in e.executor.devices] == ["cpu", "cpu-b"]
    meet = threading.Barrier(2, timeout=20)
    met = []
    real = prover.prove_start

    def prove_start(*a, **k):
        if len(met) < 2:
            try:
                meet.wait()
                met.append(threading.current_thread().name)
            except threading.BrokenBarrierError:
                pass
        return real(*a, **k)

    monkeypatch.setattr(prover, "prove_start", prove_start)
    e.register_circuit(dc.spec("h4", partitions=4))
    job, _, _ = e.submit("h4", [("wtns", dc.witness(40 + i)) for i in range(4)])
    rec = e.await_job(job.job_id, 60)
    assert rec.status == "COMPLETED", rec
    assert len(met) == 2, "the two devices never proved at the same time"
    devices = [p.device for p in rec.partitions]
    assert sorted(set(devices)) == ["cpu", "cpu-b"], devices
    assert [p.index for p in rec.partitions] == [0, 1, 2, 3]  # results in partition order
    for p, seed in zip(rec.partitions, range(40, 44)):
        w = parse_wtns(dc.witness(seed))
        assert [int(x) for x in p.public] == curves.get("bls12_381").fr.to_ints(w[1 : len(p.public) + 1])


def test_finalizer_slots_are_per_device(tmp_path, two_cpu_devices):
    o = {"daemon.state_dir": str(tmp_path), "gpus.backend": "cpu", "pipeline.finalizer_threads": 3}
    e = Engine(load_config(overrides=o | {"registration.roots": [tempfile.gettempdir()]}))
    try:
        a, b = e.executor.devices
        assert e.executor.finalizers._max_workers == 6
        for _ in range(3):
            assert a.final_slots.acquire(timeout=0)
        assert not a.final_slots.acquire(timeout=0)
        assert b.final_slots.acquire(timeout=0)  # device a's proofs in flight do not hold back device b
    finally:
        e.shutdown(0)


def test_in_flight_counts_an_item_between_take_and_synthesis(dev, engines):
    dc = dev["snarkjs"]
    e = engines(start=False)
    taken, go = threading.Event(), threading.Event()
    real = e.scheduler.take

    def take():
        it = real()
        if it is not None:
            taken.set()
            go.wait(30)
        return it

    e.scheduler.take = take
    e.start()
    try:
        e.register_circuit(dc.spec("h"))
        job, _, _ = e.submit("h", [("wtns", dc.witness(4))])
        assert taken.wait(30)
        assert e.in_flight() == 1  # a drain must wait for it (it would close the journal under it)
    finally:
        go.set()
    assert e.await_job(job.job_id, 30).status == "COMPLETED"
    assert e.shutdown(10) and e.in_flight() == 0


def test_results_are_journaled_before_the_partition_leaves_the_pipeline(dev, engines):
    dc = dev["snarkjs"]
    e = engines()
    seen = []
    real = e.journal.finish

    def finish(job_id, state, *a, **k):
        seen.append((state, e.in_flight()))
        return real(job_id, state, *a, **k)

    e.journal.finish = finish
    e.register_circuit(dc.spec("h"))
    ok, _, _ = e.submit("h", [("wtns", dc.witness(5))])
    assert e.await_job(ok.job_id, 30).status == "COMPLETED"
    bad, _, _ = e.submit("h", [("wtns", _bad_witness(dc, 6))])
    rec = e.await_job(bad.job_id, 30)
    assert rec.status == "FAILED" and "violates" in rec.error
    # a clean drain waits for in_flight() == 0 and then closes the journal: a result written after the
    # partition left the count could be lost
    assert [s for s, _ in seen] == ["completed", "failed"] and all(n >= 1 for _, n in seen), seen


def test_cancel_racing_the_last_partition_reports_the_final_state(dev, engines, gate):
    dc = dev["snarkjs"]
    g = gate(prover, "prove_finish")
    e = engines()
    e.register_circuit(dc.spec("h"))
    job, _, _ = e.submit("h", [("wtns", dc.witness(7))])
    assert g.entered.wait(30)  # the only partition is in its finalizer
    dropped = threading.Event()
    real_drop, real_rm = e.pipeline._part_dropped, e.scheduler.remove_from_batch

    def drop(*a, **k):
        dropped.set()
        return real_drop(*a, **k)

    def rm(j):  # cancel has marked the job; let the partition finish before cancel finishes the job
        g.go.set()
        _wait(lambda: j.done.is_set() or dropped.is_set(), 10, "the partition to finish")
        return real_rm(j)

    e.pipeline._part_dropped = drop
    e.scheduler.remove_from_batch = rm
    _was, cancelled, status = e.cancel(job.job_id)
    rec = e.await_job(job.job_id, 30)
    assert status == rec.status and cancelled == (rec.status == "CANCELLED"), (status, rec.status)


def test_a_circuit_replaced_during_submit_proves_with_the_new_definition(dev, engines):
    dc = dev["snarkjs"]
    e = engines()
    e.register_circuit(dc.spec("h"))
    real = e._parse_part

    def parse(c, *a):
        if e.circuit("h").spec.default_priority == 2:  # replaced while this request is being parsed
            e.register_circuit(dc.spec("h", default_priority="high"), replace=True)
        return real(c, *a)

    e._parse_part = parse
    job, _, _ = e.submit("h", [("wtns", dc.witness(8))])
    assert job.circuit is e.circuit("h") and job.priority == 3
    assert e.await_job(job.job_id, 30).status == "COMPLETED"


def test_a_failing_release_neither_stalls_the_pipeline_nor_vanishes(dev, engines):
    dc = dev["snarkjs"]
    e = engines(**{"pipeline.finalizer_threads": 1})
    real = e.srs.release
    boom = [True]

    def release(cid, device):
        if boom:
            boom.clear()
            raise RuntimeError("release exploded")
        return real(cid, device)

    e.srs.release = release
    e.register_circuit(dc.spec("h"))
    j1, _, _ = e.submit("h", [("wtns", dc.witness(10))])
    r1 = e.await_job(j1.job_id, 10)
    assert r1.status == "FAILED" and "release exploded" in r1.error, r1
    j2, _, _ = e.submit("h", [("wtns", dc.witness(11))])
    assert e.await_job(j2.job_id, 10).status == "COMPLETED"  # the slot and the stage were released
    _wait(lambda: e.in_flight() == 0, 10, "an empty pipeline")
    assert e.executor.devices[0].active == 0 and e.scheduler.budget.used == 0


def test_submits_reach_the_scheduler_in_journal_order(dev, engines):
    dc = dev["snarkjs"]
    e = engines()
    e.register_circuit(dc.spec("h"))
    inserted, pushed, calls = [], [], []
    overtaken = threading.Event()
    real_ins, real_push = e.journal.insert_job, e.scheduler.push_job

    def ins(job_id, *a, **k):
        real_ins(job_id, *a, **k)
        inserted.append(job_id)

    def push(job, batchable):
        calls.append(job.job_id)
        if len(calls) == 1:
            overtaken.wait(0.3)  # the first submit is slow to queue: the second must not overtake it
        else:
            overtaken.set()
        pushed.append(job.job_id)
        real_push(job, batchable)

    e.journal.insert_job, e.scheduler.push_job = ins, push
    ws = [dc.witness(12), dc.witness(13)]
    t1 = threading.Thread(target=lambda: e.submit("h", [("wtns", ws[0])]))
    t1.start()
    _wait(lambda: inserted, 10, "the first insert")
    t2 = threading.Thread(target=lambda: e.submit("h", [("wtns", ws[1])]))
    t2.start()
    t1.join(10)
    t2.join(10)
    assert pushed == inserted and len(pushed) == 2


def test_failed_and_cancelled_jobs_free_their_queued_witnesses(dev, engines, gate):
    dc = dev["snarkjs"]
    e = engines()
    e.register_circuit(dc.spec("h"))
    e.register_circuit(dc.spec("h3", partitions=3))
    # a failed partition: the job's other partitions never run, so their parsed witnesses go at once
    f, _, _ = e.submit("h3", [("wtns", _bad_witness(dc, 14)), ("wtns", dc.witness(15)), ("wtns", dc.witness(16))])
    assert e.await_job(f.job_id, 30).status == "FAILED"
    assert all(p.witness is None for p in f.parts)
    # a cancelled job queued behind a full pipeline: its witness and heap entry go at once too
    g = gate(prover, "prove_start")
    busy = [e.submit("h", [("wtns", dc.witness(20 + i))])[0] for i in range(3)]
    assert g.entered.wait(30)
    _wait(lambda: e.pipeline.stage["prover_queue"] == 2, 30, "a full prover queue")  # one queued, one held
    c, _, _ = e.submit("h", [("wtns", dc.witness(30))])
    assert e.cancel(c.job_id)[1]
    assert c.parts[0].witness is None and not [it for it in e.scheduler._heap if it.job is c]
    g.go.set()
    assert all(e.await_job(j.job_id, 30).status == "COMPLETED" for j in busy)


def test_srs_versions_of_one_circuit_live_side_by_side(dev, tmp_path):
    """A circuit's new version gets its own SRS entry; the old one stays (HOT, its cache file kept) while a
    proof holds it and until it is unregistered; then it goes at its last release."""
    a = Circuit(cfgmod.validate_circuit(dev["snarkjs"].spec("c"), "c"))
    b = Circuit(cfgmod.validate_circuit(dev["bellperson"].spec("c"), "c"))
    assert a.srs_key != b.srs_key and a.srs_key.startswith("c@")
    m = srsmod.SrsManager(tmp_path, CPU_BACKEND, {CPU: 1 << 30}, 1 << 30)
    m.register(a)
    pk_a, _, _ = m.acquire("c", CPU)  # by id: the current version
    files = sorted(tmp_path.glob("c-*.srs"))
    assert len(files) == 1
    m.register(b)  # the id names b from now on; a's entry stays
    assert m.versions("c") == [b.srs_key.partition("@")[2], a.srs_key.partition("@")[2]]
    assert m.tier("c") == srsmod.COLD and m.tier(a.srs_key) == srsmod.HOT
    assert sorted(tmp_path.glob("c-*.srs")) == files
    pk_b, _, _ = m.acquire(b.srs_key, CPU)
    assert pk_b.style == "bellperson" and pk_a.style == "snarkjs"
    m.release(b.srs_key, CPU)
    m.unregister(a)  # a's last job finished, but a proof still holds its key: it goes at the release
    assert m.tier(a.srs_key) == srsmod.HOT and files[0].exists()
    m.release(a.srs_key, CPU)
    assert not files[0].exists() and m.versions("c") == [b.srs_key.partition("@")[2]]
    assert {e["version"] for e in m.status()} == {b.srs_key.partition("@")[2]}
    with pytest.raises(NotFound):
        m.tier(a.srs_key)
    # versions with the same key share one entry: unregistering one keeps it for the other
    b2 = Circuit(cfgmod.validate_circuit(dev["bellperson"].spec("c", default_priority="high"), "c"))
    assert b2.srs_key == b.srs_key and b2.version == b.version
    m.register(b2)
    m.unregister(b)
    assert m.tier("c") == srsmod.HOT and m.versions("c") == [b.srs_key.partition("@")[2]]


def test_a_broken_key_file_is_a_failed_precondition(dev, tmp_path):
    import shutil

    key = tmp_path / "k.zkey"
    shutil.copy(dev["snarkjs"].key, key)
    c = Circuit(cfgmod.validate_circuit(dev["snarkjs"].spec("c", zkey=str(key)), "c"))
    m = srsmod.SrsManager(tmp_path / "cache", CPU_BACKEND, {CPU: 1 << 30}, 1 << 30)
    m.register(c)
    with open(key, "r+b") as fh:
        fh.truncate(key.stat().st_size // 2)
    with pytest.raises(FailedPrecondition, match="proving key"):
        m.acquire("c", CPU)
    key.unlink()
    with pytest.raises(FailedPrecondition, match="proving key"):
        m.acquire("c", CPU)


def test_rpc_error_codes():
    import grpc

    from cuzk.engine.errors import InvalidArgument
    from cuzk.server import service

    class Abort(Exception):
        pass

    class Ctx:
        def abort(self, code, msg):
            raise Abort(code, msg)

    def code_of(exc):
        @service._rpc
        def rpc(self, request, context):
            raise exc

        with pytest.raises(Abort) as ei:
            rpc(None, None, Ctx())
        return ei.value.args[0]

    class GpuOutOfMemory(CuzkError):  # cuzk.backends.gpu.runtime's class needs CuPy to import: matched by name
        pass

    class Deeper(GpuOutOfMemory):
        pass

    assert code_of(GpuOutOfMemory("cudaMalloc failed")) == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert code_of(Deeper("x")) == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert code_of(FailedPrecondition("key")) == grpc.StatusCode.FAILED_PRECONDITION
    assert code_of(InvalidArgument("field")) == grpc.StatusCode.INVALID_ARGUMENT
    assert code_of(CuzkError("something inside broke")) == grpc.StatusCode.INTERNAL
    assert code_of(ValueError("bug")) == grpc.StatusCode.INTERNAL


def test_duplicate_lookup_while_stopping_is_unavailable(engines):
    e = engines()
    assert e.shutdown(5)  # clean: the journal is closed
    with pytest.raises(Unavailable):
        e.table.duplicate("req", "hash")


def test_max_message_bytes_auto_is_rejected_at_load():
    with pytest.raises(ConfigError, match="daemon.max_message_bytes"):
        load_config(text='[daemon]\nmax_message_bytes = "auto"\n')


def test_gpu_affinity_config_and_prover_queue_eligibility():
    """gpus.affinity: parsed per ordinal, and a worker only takes items its device may prove (in priority
    order among those), while another device's worker takes the rest."""
    from cuzk.engine.config import ConfigError, parse_affinity
    from cuzk.engine.scheduler import ProverQueue, WorkItem

    aff = parse_affinity({"0": "a", "1": "any", "2": ["a", "b"]}, "test")
    assert aff == {0: frozenset({"a"}), 1: None, 2: frozenset({"a", "b"})}
    for bad in ({"x": "a"}, {"-1": "a"}, {"0": 3}, {"0": []}):
        with pytest.raises(ConfigError):
            parse_affinity(bad, "test")

    class _C:
        def __init__(self, cid):
            self.id = cid

    class _J:
        def __init__(self, cid):
            self.circuit = _C(cid)

    q = ProverQueue(8, affinity=True)
    items = [WorkItem((-2, i, 0, 0), _J(cid), 0) for i, cid in enumerate(["b", "a", "b", "a"])]
    for it in items:
        assert q.put(it)
    only_a = lambda it: it.job.circuit.id == "a"  # noqa: E731
    got = [q.get(allowed=only_a), q.get(allowed=only_a)]
    assert [it.key[1] for it in got] == [1, 3]  # the a-items, in order, skipping earlier b-items
    assert [q.get().key[1] for _ in range(2)] == [0, 2]  # an "any" device takes what is left
    assert len(q) == 0


def test_warm_file_records_the_curve_and_reads_pre_curve_files(tmp_path):
    from conftest import fixture_dir

    from cuzk.r1cs.wtns import read_wtns

    for curve in curves.all_curves():
        fx = fixture_dir(curve)
        pk = read_zkey(fx / "circuit.zkey")
        path = tmp_path / f"{curve.name}.srs"
        srsmod.write_warm(path, pk, {"circuit_id": "c", "source": str(fx), "source_id": "x"})
        assert srsmod.read_warm_header(path)["curve"] == curve.name
        wpk, _ = srsmod.map_warm(path)
        assert wpk.curve == curve and wpk.fingerprint == pk.fingerprint
        res = prover.prove(wpk, read_wtns(fx / "witness.wtns", curve=curve), CPU_BACKEND)
        assert verifier.verify(pk.vk, res.public, res.proof)
    # a cache file written before keys had curves has no "curve" in its header: it is BLS12-381's
    data = (tmp_path / "bls12_381.srs").read_bytes()
    (n,) = struct.unpack("<Q", data[8:16])
    hdr = json.loads(data[16 : 16 + n])
    del hdr["curve"]
    new = json.dumps(hdr).encode().ljust(n)  # same length: the body offsets stay put
    (tmp_path / "old.srs").write_bytes(data[:8] + struct.pack("<Q", n) + new + data[16 + n :])
    wpk, _ = srsmod.map_warm(tmp_path / "old.srs")
    assert wpk.curve == curves.get("bls12_381")


def test_journal_spills_large_payloads_to_files(store, tmp_path, monkeypatch):
    """Payloads above SPILL_BYTES live in files beside the journal: read back, removed with their job,
    and a missing file is a clear error (the job fails; the journal stays usable). Both stores."""
    from cuzk.engine.journal import JournalStore

    monkeypatch.setattr(JournalStore, "SPILL_BYTES", 1000)
    j = store()
    big, small = bytes(range(256)) * 20, b'{"a": 1}'
    j.insert_job("job-1", None, "h1", "c", 2, [("wtns", big), ("inputs", small)], time.time())
    files = sorted(p.name for p in j.spill_dir.iterdir())
    assert files == ["job-1.0"] and oct(j.spill_dir.stat().st_mode & 0o777) == "0o700"
    assert j.payloads("job-1") == [("wtns", big), ("inputs", small)]
    j.insert_job("job-2", None, "h2", "c", 2, [("wtns", big)], time.time())
    (j.spill_dir / "job-2.0").unlink()
    with pytest.raises(CuzkError, match="payload file .*job-2.0"):
        j.payloads("job-2")
    j.finish("job-1", "completed", time.time(), result="{}")
    assert j.purge_payloads() == 2
    assert not (j.spill_dir / "job-1.0").exists()
    j.close()
    if store.kind != "sqlite":
        return
    # a journal from before payload files: the column is added on open
    import sqlite3

    old = tmp_path / "old.sqlite"
    db = sqlite3.connect(old)
    db.executescript(
        "CREATE TABLE payloads (job_id TEXT NOT NULL, part INTEGER NOT NULL, kind TEXT NOT NULL, data BLOB NOT NULL,"
        " PRIMARY KEY (job_id, part));"
    )
    db.close()
    j2 = Journal(old)
    j2.insert_job("job-3", None, "h3", "c", 2, [("wtns", big)], time.time())
    assert j2.payloads("job-3") == [("wtns", big)]
    j2.close()
