"""The proving daemon end to end: a real gRPC server on a unix socket in this process, real clients.

Circuits are small synthetic ones (2^8 - 2^12) with development keys made once per session, plus the
committed circom fixture (wasm witness calculation, .sym names, snarkjs verification).
"""

from __future__ import annotations

import concurrent.futures as cf
import json
import os
import shutil
import socket
import stat
import subprocess
import tempfile
import threading
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path

import pytest
from conftest import SNARKJS, fixture_dir

from cuzk import CuzkError, curves
from cuzk.backends import get_backend
from cuzk.engine.config import ConfigError, load_config, validate_circuit
from cuzk.engine.devcircuit import make_dev_circuit
from cuzk.engine.job import JobRecord
from cuzk.groth16 import formats, verifier
from cuzk.groth16.params import read_params
from cuzk.groth16.zkey import read_zkey
from cuzk.r1cs.r1cs import read_r1cs
from cuzk.r1cs.wtns import parse_wtns, wtns_bytes
from cuzk.server.client import Client, DaemonError
from cuzk.server.daemon import Daemon

EX = fixture_dir("bls12_381")
BN_EX = fixture_dir("bn254")  # the same circom circuit over BN254 (bn128)
BLS = curves.get("bls12_381")


@pytest.fixture(scope="session")
def dev(tmp_path_factory):
    d = tmp_path_factory.mktemp("daemon-circuits")
    return {
        "h8": make_dev_circuit(d / "h8", "hash", 8),
        "h10": make_dev_circuit(d / "h10", "hash", 10),
        "c10": make_dev_circuit(d / "c10", "chain", 10, style="bellperson"),
        "big": make_dev_circuit(d / "big", "hash", 12),
    }


REG_ROOTS = [tempfile.gettempdir(), str(Path(__file__).resolve().parent)]


@contextmanager
def daemon(config_path=None, **overrides):
    """An in-process daemon on a fresh unix socket and state folder (and a config file's circuits);
    yields (daemon, client)."""
    tmp = tempfile.mkdtemp(prefix="czt", dir="/tmp")
    over = {"daemon.state_dir": tmp, "daemon.listen": f"unix://{tmp}/d.sock", "gpus.backend": "cpu", "daemon.drain_timeout": 30}
    over["registration.roots"] = REG_ROOTS  # RegisterCircuit may name the tests' temporary and fixture files
    over.update(overrides)
    d = Daemon(load_config(config_path, overrides=over)).start()
    c = Client(d.address)
    try:
        yield d, c
    finally:
        c.close()
        d.stop(10)
        shutil.rmtree(tmp, ignore_errors=True)


def vk_of(dc):
    return formats.read_vk_json(Path(dc.folder) / "verification_key.json")


def check_proof(vk, res, part=0):
    proof = formats.Proof.from_bytes(res.proofs[part], vk.curve)
    assert formats.proof_from_json(res.proof_json[part], curve=vk.curve) == proof
    assert verifier.verify(vk, res.public[part], proof)


def public_of(wtns: bytes, n_public: int, curve=BLS) -> list[int]:
    return curve.fr.to_ints(parse_wtns(wtns, curve=curve)[1 : n_public + 1])


def metric(text: str, name: str, **labels) -> float:
    total = 0.0
    for line in text.splitlines():
        if line.startswith("#") or not line.startswith(name):
            continue
        head, _, val = line.rpartition(" ")
        if head.split("{")[0] != name:
            continue
        if all(f'{k}="{v}"' in head for k, v in labels.items()):
            total += float(val)
    return total


def wait_for(cond, timeout=30.0, what="condition"):
    t = time.monotonic() + timeout
    while time.monotonic() < t:
        v = cond()
        if v:
            return v
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


# ---------------------------------------------------------------------------------------------
# a shared daemon for the tests that do not need special settings


@pytest.fixture(scope="module")
def shared(dev):
    with daemon(**{"daemon.max_message_bytes": 256 * 1024, "daemon.http_listen": "127.0.0.1:0"}) as (d, c):
        c.register("h8", dev["h8"].r1cs, zkey=dev["h8"].key)
        c.register("h10", dev["h10"].r1cs, zkey=dev["h10"].key)
        c.register("c10", dev["c10"].r1cs, params=dev["c10"].key)
        c.register("bigq", dev["big"].r1cs, zkey=dev["big"].key, max_queue=1)
        for cid, folder in (("example", EX), ("example-bn254", BN_EX)):
            c.register(
                cid,
                str(folder / "circuit.r1cs"),
                zkey=str(folder / "circuit.zkey"),
                wasm=str(folder / "circuit.wasm"),
                sym=str(folder / "circuit.sym"),
            )
        yield d, c


def test_concurrent_clients_all_verified(shared, dev, tmp_path):
    d, c0 = shared
    vks = {k: vk_of(dev[k]) for k in ("h8", "h10", "c10")}
    jobs = [("h8", s) for s in range(8)] + [("h10", s) for s in range(5)] + [("c10", s) for s in range(5)]

    def one(job):
        cid, seed = job
        w = dev[cid].witness(100 + seed)
        with Client(d.address) as c:  # one connection per client
            return cid, w, c.prove(cid, witness=w, request_id=f"conc-{cid}-{seed}")

    with cf.ThreadPoolExecutor(len(jobs)) as ex:
        results = list(ex.map(one, jobs))
    assert len(results) == len(jobs) == 18
    for cid, w, res in results:
        assert res.status == "COMPLETED", res.error
        check_proof(vks[cid], res)
        assert res.public[0] == public_of(w, len(vks[cid].ic) - 1)
        assert len(res.proof) == 192 and res.backend == "cpu"
        t = res.timings
        assert t["total_ms"] >= t["gpu_compute_ms"] > 0 and t["finalize_ms"] > 0
        assert {"msm", "spmv", "verify", "witness", "constraint_check"} <= set(res.phases)
    st = c0.status()
    assert st["counters"]["total_completed"] >= len(jobs)
    assert metric(c0.metrics(), "cuzk_proofs_completed_total", circuit="h10") >= 5


@pytest.mark.parametrize("cid,folder", [("example", EX), ("example-bn254", BN_EX)], ids=["bls12_381", "bn254"])
def test_inputs_json_wasm_and_snarkjs_verifies(shared, tmp_path, cid, folder):
    d, c = shared
    inputs = json.loads((folder / "input.json").read_text())
    res = c.prove(cid, inputs=inputs)
    vk = formats.read_vk_json(folder / "verification_key.json")
    assert res.public[0] == [int(x) for x in json.loads((folder / "public.json").read_text())]
    check_proof(vk, res)
    assert len(res.proofs[0]) == vk.curve.proof_bytes and res.proof_json[0]["curve"] == vk.curve.snarkjs_name
    # the same circuit from a .wtns witness
    res2 = c.prove(cid, witness=(folder / "witness.wtns").read_bytes())
    check_proof(vk, res2)
    assert res2.public[0] == res.public[0]
    (tmp_path / "proof.json").write_text(json.dumps(res.proof_json[0]))
    (tmp_path / "public.json").write_text(json.dumps([str(x) for x in res.public[0]]))
    assert SNARKJS.exists(), "snarkjs is missing: run `npm ci` (the test command does)"
    out = subprocess.run(
        [
            str(SNARKJS),
            "groth16",
            "verify",
            str(folder / "verification_key.json"),
            str(tmp_path / "public.json"),
            str(tmp_path / "proof.json"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0 and "OK!" in out.stdout, out.stdout + out.stderr


def test_curve_mismatches_are_refused_in_one_line(shared):
    d, c = shared
    # a witness of one curve for a circuit of the other: refused at submission, naming both curves
    for cid, folder in (("example", BN_EX), ("example-bn254", EX)):
        with pytest.raises(DaemonError) as ei:
            c.submit(cid, witness=(folder / "witness.wtns").read_bytes())
        msg = str(ei.value)
        assert ei.value.code == "INVALID_ARGUMENT" and "\n" not in msg, msg
        assert "BN254" in msg and "BLS12-381" in msg and repr(cid) in msg, msg
    # a key of one curve with an r1cs of the other: refused at registration
    with pytest.raises(DaemonError) as ei:
        c.register("mixed", str(BN_EX / "circuit.r1cs"), zkey=str(EX / "circuit.zkey"))
    msg = str(ei.value)
    assert ei.value.code == "INVALID_ARGUMENT" and "BLS12-381 key" in msg and "over BN254" in msg, msg
    infos = {i["id"]: i for i in c.list_circuits()}
    assert "mixed" not in infos
    assert infos["example"]["curve"] == "bls12_381" and infos["example-bn254"]["curve"] == "bn254"


def test_bad_requests_clear_errors_daemon_keeps_serving(shared, dev):
    d, c = shared

    def code_of(fn):
        with pytest.raises(DaemonError) as ei:
            fn()
        return ei.value.code, ei.value.details

    w8 = dev["h8"].witness(7)
    code, msg = code_of(lambda: c.submit("nope", witness=w8))
    assert code == "NOT_FOUND" and "nope" in msg and "h8" in msg
    code, msg = code_of(lambda: c.submit("h8", witness=b"definitely not a witness file"))
    assert code == "INVALID_ARGUMENT" and msg.startswith("witness: ") and "not a .wtns file" in msg
    code, msg = code_of(lambda: c.submit("h10", witness=w8))
    assert code == "INVALID_ARGUMENT" and "witness" in msg and "245 values" in msg and "1013 wires" in msg
    code, msg = code_of(lambda: c.submit("h8", partitions=[w8, w8]))
    assert code == "INVALID_ARGUMENT" and msg.startswith("partitions: 2 given")
    code, msg = code_of(lambda: c.submit("h8"))
    assert code == "INVALID_ARGUMENT" and "partitions" in msg
    code, msg = code_of(lambda: c.submit("", witness=w8))
    assert code == "INVALID_ARGUMENT" and msg.startswith("circuit_id")
    code, msg = code_of(lambda: c.submit("example", inputs='{"a": 3,'))
    assert code == "INVALID_ARGUMENT" and msg.startswith("inputs_json: malformed JSON")
    code, msg = code_of(lambda: c.submit("h8", inputs={"x": 1}))
    assert code == "INVALID_ARGUMENT" and "no wasm" in msg
    code, msg = code_of(lambda: c.submit("h8", witness=os.urandom(300 * 1024)))
    assert code == "RESOURCE_EXHAUSTED"
    code, msg = code_of(lambda: c.submit("h8", witness=w8, priority=9))
    assert code == "INVALID_ARGUMENT" and msg.startswith("priority")

    # a witness that violates a constraint: FAILED, naming the constraint and its signals
    w = parse_wtns((EX / "witness.wtns").read_bytes()).copy()
    w[-1] = BLS.fr.from_ints([12345])[0]
    res = c.prove("example", witness=wtns_bytes(w), check=False)
    assert res.status == "FAILED"
    assert "violates constraint" in res.error and "main." in res.error, res.error
    # inputs missing a signal: FAILED naming it
    inputs = json.loads((EX / "input.json").read_text())
    del inputs["w"]
    res = c.prove("example", inputs=inputs, check=False)
    assert res.status == "FAILED" and "'w'" in res.error and "missing" in res.error, res.error
    # queue full
    first = c.submit("bigq", witness=dev["big"].witness(1))
    code, msg = code_of(lambda: c.submit("bigq", witness=dev["big"].witness(2)))
    assert code == "RESOURCE_EXHAUSTED" and "queue full" in msg and "bigq" in msg
    c.cancel(first.job_id)
    code, msg = code_of(lambda: c.await_proof("no-such-job"))
    assert code == "NOT_FOUND"
    # still serving
    res = c.prove("h8", witness=w8)
    check_proof(vk_of(dev["h8"]), res)
    assert metric(c.metrics(), "cuzk_jobs_rejected_total", reason="queue_full") >= 1


def test_idempotent_resubmission(shared, dev):
    d, c = shared
    w = dev["h8"].witness(42)
    a = c.submit("h8", witness=w, request_id="idem-1")
    b = c.submit("h8", witness=w, request_id="idem-1")
    assert b.job_id == a.job_id and b.duplicate and not a.duplicate
    res = c.await_proof(a.job_id)
    assert res.ok
    again = c.prove("h8", witness=w, request_id="idem-1")  # after completion: the same job and proof
    assert again.job_id == a.job_id and again.proofs == res.proofs
    with pytest.raises(DaemonError) as ei:
        c.submit("h8", witness=dev["h8"].witness(43), request_id="idem-1")
    assert ei.value.code == "ALREADY_EXISTS" and a.job_id in ei.value.details
    assert metric(c.metrics(), "cuzk_jobs_submitted_total", circuit="h8") >= 1


def test_status_http_socket_mode_and_timeout(shared, dev):
    d, c = shared
    sock = d.address[len("unix://") :]
    assert stat.S_IMODE(os.stat(sock).st_mode) == 0o600
    st = c.status()
    pbs = st["_pb"]
    assert pbs.backend == "cpu" and pbs.gpus[0].ordinal == -1 and "CPU backend" in pbs.gpus[0].name
    assert {s.name for s in pbs.stages} == {"synthesis", "prover_queue", "proving", "finalizing"}
    assert pbs.uptime_seconds >= 0 and pbs.rss_bytes > 0 and pbs.working_memory_budget_bytes > 0
    c.preload("h8")  # this test's own state: HOT whatever ran before
    tiers = {s.circuit_id: s for s in c.status()["_pb"].loaded_srs}
    assert tiers["h8"].tier == 0 and tiers["h8"].size_bytes > 0
    circuits = {x["id"]: x for x in c.list_circuits()}
    assert circuits["h10"]["n_wires"] == 1013 and circuits["c10"]["params"] and circuits["example"]["wasm"]
    base = f"http://{d.http.address}"
    text = urllib.request.urlopen(base + "/metrics", timeout=10).read().decode()
    for name in (
        "cuzk_proofs_completed_total",
        "cuzk_phase_seconds_bucket",
        "cuzk_queue_depth",
        "cuzk_worker_busy_ratio",
        "cuzk_stage_in_flight",
        "cuzk_srs_bytes",
    ):
        assert name in text
    js = json.loads(urllib.request.urlopen(base + "/status", timeout=10).read())
    assert js["backend"] == "cpu" and "srs" in js and "queues" in js
    with pytest.raises(urllib.error.HTTPError):
        urllib.request.urlopen(base + "/nothing", timeout=10)
    # AwaitProof's timeout works: a job queued behind a blocker (a CRITICAL job that holds the one prover
    # worker: it waits for its SRS entry, locked here) answers TIMEOUT, then completes
    w10, wc = dev["h10"].witness(9), dev["c10"].witness(9)
    with d.engine.srs._entry("c10").lock:
        blocker = c.submit("c10", witness=wc, priority="critical")
        j = c.submit("h10", witness=w10)
        r = c.await_proof(j.job_id, timeout_ms=200)
        assert r.status == "TIMEOUT" and r.job_id == j.job_id
    assert c.await_proof(blocker.job_id).ok and c.await_proof(j.job_id).ok


def test_cli_verbs_against_daemon(shared, dev, tmp_path, capsys):
    from cuzk.cli.main import main

    d, c = shared
    addr = ["--addr", d.address]
    pf, qf, bf = tmp_path / "p.json", tmp_path / "q.json", tmp_path / "p.bin"
    assert main(["prove-remote", "h8", dev["h8"].wtns, str(pf), str(qf), "--proof-bin", str(bf), *addr]) == 0
    assert verifier.verify(vk_of(dev["h8"]), formats.read_public_json(qf), formats.read_proof_json(pf))
    assert bf.stat().st_size == 192
    capsys.readouterr()
    assert main(["submit", "h8", dev["h8"].wtns, "--priority", "high", *addr]) == 0
    job = capsys.readouterr().out.strip()
    assert main(["await", job, "--proof", str(pf), "-v", *addr]) == 0
    assert "COMPLETED" in capsys.readouterr().out
    assert main(["cancel", job, *addr]) == 0
    assert "already finished: COMPLETED" in capsys.readouterr().out
    assert main(["status", *addr]) == 0
    out = capsys.readouterr().out
    assert "backend cpu" in out and "srs h8: HOT" in out
    assert main(["status", "--json", *addr]) == 0
    assert json.loads(capsys.readouterr().out)["backend"] == "cpu"
    assert main(["await", "nope", *addr]) == 2
    assert "NOT_FOUND" in capsys.readouterr().err
    # a job that has not finished (TIMEOUT) or was cancelled is not an invalid proof (1): exit 3
    with d.engine.srs._entry("h8").lock:  # holds the job in the pipeline
        assert main(["submit", "h8", dev["h8"].wtns, *addr]) == 0
        job = capsys.readouterr().out.strip()
        assert main(["await", job, "--timeout-ms", "100", *addr]) == 3
        assert "TIMEOUT" in capsys.readouterr().err
        assert main(["cancel", job, *addr]) == 0
        assert main(["await", job, *addr]) == 3
        assert "CANCELLED" in capsys.readouterr().err


def test_cuzk_bench_against_daemon(shared, dev, capsys):
    from cuzk.bench.main import main as bench

    d, c = shared
    addr = ["--addr", d.address]
    assert bench([*addr, "single", "h8", str(dev["h8"].wtns)]) == 0
    out = capsys.readouterr().out
    assert "status:  COMPLETED" in out and "proof:   192 bytes" in out and "timings: total=" in out
    assert bench([*addr, "batch", "h8", str(dev["h8"].wtns), "-c", "4", "-j", "2"]) == 0
    out = capsys.readouterr().out
    assert "4 completed, 0 failed" in out and "proofs/s" in out and out.count("] COMPLETED") == 4
    assert bench([*addr, "preload", "h8"]) == 0
    assert "h8 already loaded" in capsys.readouterr().out
    assert bench([*addr, "metrics"]) == 0
    assert "cuzk_" in capsys.readouterr().out
    assert bench([*addr, "single", "nope", str(dev["h8"].wtns)]) == 2
    assert "NOT_FOUND" in capsys.readouterr().err


def test_timeline_file_utilization_and_plot(dev, tmp_path, capsys):
    from cuzk.bench.main import main as bench
    from cuzk.engine import timeline as tl

    tfile = tmp_path / "timeline.csv"
    with daemon(**{"logging.timeline": str(tfile)}) as (d, c):
        c.register("h8", dev["h8"].r1cs, zkey=dev["h8"].key)
        wt = Path(dev["h8"].wtns).read_bytes()
        with cf.ThreadPoolExecutor(3) as ex:
            results = list(ex.map(lambda _: c.prove("h8", witness=wt), range(6)))
        assert all(r.ok for r in results)
    lines = tfile.read_text().splitlines()
    events = [ln.split(",")[2] for ln in lines]
    for ev in ("SUBMIT", "SYNTH_START", "SYNTH_END", "PROVE_START", "PROVE_END", "FINALIZE_START", "FINALIZE_END", "DONE"):
        assert events.count(ev) == 6, (ev, events.count(ev))
    an = tl.analyze(lines)
    assert set(an.device_utilization) == {"cpu"}
    assert 0.0 < an.device_utilization["cpu"] <= 1.0
    assert len(an.job_latency_ms) == 6 and all(v > 0 for v in an.job_latency_ms.values())
    png = tmp_path / "t.png"
    assert bench(["timeline", str(tfile), "--png", str(png)]) == 0
    out = capsys.readouterr().out
    assert "6 synthesized, 6 proved, 6 finalized" in out and "cpu: busy" in out
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert bench(["timeline", str(tmp_path / "missing.csv")]) == 2


# Trace Event Format, "JSON Object Format" with "Complete Events" (ph "X") and "Metadata Events" (ph "M"):
# https://docs.google.com/document/d/1CvAClvFfyA5R-PhYUmn5OOQtYMH4h6I0nSsKchNAySU/preview
# An object with a "traceEvents" array (other top-level keys optional; "displayTimeUnit" is "ms" or "ns").
# Every event has "name" (string), "ph" (one character), "pid" and "tid" (numbers), "ts" (a number,
# microseconds) except metadata; a complete event has "dur" (microseconds, >= 0); "cat" is a comma-separated
# string and "args" an object where present. Metadata events are named process_name / process_labels /
# process_sort_index / thread_name / thread_sort_index, with "args" {"name": string} or {"sort_index": number}.
_META_ARGS = {"process_name": ("name", str), "thread_name": ("name", str), "process_labels": ("labels", str)}
_META_ARGS |= {"process_sort_index": ("sort_index", int), "thread_sort_index": ("sort_index", int)}


def validate_chrome_trace(doc) -> list[dict]:
    """Raise AssertionError if ``doc`` is not a valid Trace Event Format JSON object of X and M events;
    return its complete events."""

    def num(x):
        return isinstance(x, (int, float)) and not isinstance(x, bool)

    assert isinstance(doc, dict) and isinstance(doc.get("traceEvents"), list), "a JSON object with a traceEvents array"
    assert doc.get("displayTimeUnit", "ms") in ("ms", "ns")
    complete = []
    for e in doc["traceEvents"]:
        assert isinstance(e, dict), e
        assert isinstance(e.get("name"), str) and e["name"], e
        assert e.get("ph") in ("X", "M"), e
        assert num(e.get("pid")) and num(e.get("tid")), e
        if "cat" in e:
            assert isinstance(e["cat"], str), e
        if "args" in e:
            assert isinstance(e["args"], dict), e
        if e["ph"] == "X":
            assert num(e.get("ts")) and num(e.get("dur")) and e["dur"] >= 0, e
            complete.append(e)
        else:
            assert e["name"] in _META_ARGS, e
            key, typ = _META_ARGS[e["name"]]
            assert isinstance(e.get("args"), dict) and isinstance(e["args"].get(key), typ), e
    return complete


def test_timeline_trace_and_idle_gaps(dev, tmp_path, capsys):
    """A real daemon (CPU backend, 2 synthesis workers) writes its TIMELINE; cuzk-bench timeline makes a
    valid Chrome trace of it (a track per device and per synthesis worker, every stage and prover phase)
    and reports the device's idle gaps between jobs, shaded in the PNG."""
    from cuzk.bench.main import main as bench
    from cuzk.engine import timeline as tl

    tfile = tmp_path / "timeline.csv"
    with daemon(**{"logging.timeline": str(tfile), "synthesis.partition_workers": 2}) as (d, c):
        c.register("h8", dev["h8"].r1cs, zkey=dev["h8"].key)
        wt = Path(dev["h8"].wtns).read_bytes()
        with cf.ThreadPoolExecutor(3) as ex:
            results = list(ex.map(lambda _: c.prove("h8", witness=wt), range(6)))
        assert all(r.ok for r in results)
        job_ids = {r.job_id for r in results}
    lines = tfile.read_text().splitlines()
    an = tl.analyze(lines)
    assert all(iv.lane.startswith("cuzk-synth-") for iv in an.intervals if iv.kind == "SYNTH")
    assert {p.name for p in an.phases} >= {"spmv", "msm", "finalize"} and "total" not in {p.name for p in an.phases}
    trace, png = tmp_path / "t.json", tmp_path / "t.png"
    assert bench(["timeline", str(tfile), "--png", str(png), "--trace", str(trace), "--gap-ms", "0"]) == 0
    out = capsys.readouterr().out
    doc = json.loads(trace.read_text())
    xs = validate_chrome_trace(doc)
    meta = [e for e in doc["traceEvents"] if e["ph"] == "M"]
    procs = {e["pid"]: e["args"]["name"] for e in meta if e["name"] == "process_name"}
    threads = {(e["pid"], e["tid"]): e["args"]["name"] for e in meta if e["name"] == "thread_name"}
    assert {"device cpu", "synthesis", "jobs"} <= set(procs.values())
    assert {(e["pid"], e["tid"]) for e in xs} <= set(threads), "every track is named"
    synth_tracks = {threads[(e["pid"], e["tid"])] for e in xs if e["cat"] == "synthesis"}
    assert synth_tracks and synth_tracks <= {"cuzk-synth-0", "cuzk-synth-1"}
    # every job's stages: one synthesis, prove_start and finalize per partition; a job span per job
    for cat in ("synthesis", "prove", "finalize", "job"):
        assert {e["args"]["job"] for e in xs if e["cat"] == cat} == job_ids, cat
    assert sum(1 for e in xs if e["cat"] == "prove") == 6
    dev_pid = next(p for p, n in procs.items() if n == "device cpu")
    assert all(e["pid"] == dev_pid for e in xs if e["cat"] in ("prove", "finalize", "phases", "idle"))
    assert {e["name"] for e in xs if e["cat"] == "phases"} >= {"spmv", "msm", "finalize", "verify"}
    # ts / dur in microseconds: the prove intervals match the analysis in ms
    proves = sorted((e["ts"], e["dur"]) for e in xs if e["cat"] == "prove")
    ivs = sorted((iv.start, iv.end - iv.start) for iv in an.intervals if iv.kind == "PROVE")
    # (the trace rounds start and end to 1 ns each, so a duration may differ from the analysis' by 2 ns)
    assert len(proves) == len(ivs)
    assert all(abs(t - s * 1e3) <= 1.5e-3 and abs(d - e * 1e3) <= 2.5e-3 for (t, d), (s, e) in zip(proves, ivs)), (proves, ivs)
    # the idle gaps between consecutive device jobs: reported, and in the trace
    gaps = an.gaps["cpu"]
    assert len(gaps) <= 5 and all(g.ms > 0 for g in gaps)
    line = next(ln for ln in out.splitlines() if "idle between jobs" in ln)
    total = sum(g.ms for g in gaps) / 1e3
    assert f"cpu: idle between jobs {total:.3f} s in {len(gaps)} gaps" in line
    assert f"largest {max(g.ms for g in gaps) / 1e3:.3f} s" in line and f"{len(gaps)} gaps >= 0 ms" in line
    assert len([e for e in xs if e["cat"] == "idle"]) == len(gaps)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # an older TIMELINE (no worker names, no PHASE lines): synthesis packed in lanes, still valid
    old = [ln.split(",worker=")[0] + "," if ",SYNTH_START," in ln else ln for ln in lines if ",PHASE," not in ln]
    xs_old = validate_chrome_trace(tl.chrome_trace(tl.analyze(old)))
    assert sum(1 for e in xs_old if e["cat"] == "synthesis") == 6 and not any(e["cat"] == "phases" for e in xs_old)
    # idle gaps from known intervals: overlapping jobs merge, the holes between them count
    ivs2 = [tl.Interval("PROVE", j, 0, "gpu0", s, e) for j, s, e in (("a", 0, 10), ("b", 5, 20), ("c", 30, 40), ("d", 41, 50))]
    g2 = tl.idle_gaps(ivs2, "gpu0")
    assert [(g.start, g.end, g.after, g.before) for g in g2] == [(20, 30, "b:0", "c:0"), (40, 41, "c:0", "d:0")]
    summary = tl.gap_summary(tl.Analysis(50.0, ivs2, gaps={"gpu0": g2}), gap_ms=5)
    assert summary["gpu0"]["total_ms"] == 11 and summary["gpu0"]["largest_ms"] == 10 and len(summary["gpu0"]["shaded"]) == 1


# ---------------------------------------------------------------------------------------------
# scheduler behaviour (dedicated daemons: one synthesis worker, one prover, queue depth 1)

SERIAL = {"synthesis.partition_workers": 1, "gpus.cpu_workers": 1, "pipeline.prover_queue_depth": 1}


def test_strict_priority_order_under_load(dev):
    # one finalizer thread: completion order is dispatch order (with two, neighbours could swap)
    with daemon(**SERIAL, **{"pipeline.finalizer_threads": 1}) as (d, c):
        c.register("big", dev["big"].r1cs, zkey=dev["big"].key)
        c.register("h8", dev["h8"].r1cs, zkey=dev["h8"].key)
        c.preload("big")
        c.preload("h8")
        # CRITICAL blockers keep the pipeline busy; every job below arrives while some are still queued,
        # so the queue holds all of them at once and must release them strictly by class, FIFO within
        prios = ["low", "normal", "high", "critical", "low", "high", "normal", "critical", "normal", "low"]
        wb = [dev["big"].witness(s) for s in range(7)]
        ws = [dev["h8"].witness(i) for i in range(len(prios))]
        blockers = [c.submit("big", witness=w, priority="critical") for w in wb]
        subs = [(p, c.submit("h8", witness=w, priority=p)) for p, w in zip(prios, ws)]
        q = next(q for q in c.status()["queues"] if q["circuit_id"] == "big")
        assert q["pending"] >= 1, "blockers finished before the test jobs were queued: the test proves nothing"
        assert all(c.await_proof(b.job_id).ok for b in blockers)
        res = [(p, s.job_id, c.await_proof(s.job_id)) for p, s in subs]
        for _, _, r in res:
            assert r.ok, r.error
        rank = {"critical": 4, "high": 3, "normal": 2, "low": 1}
        by_dispatch = sorted(res, key=lambda x: x[2].dispatch_order)
        got = [(rank[p], r.submitted_at) for p, _, r in by_dispatch]
        want = sorted(got, key=lambda x: (-x[0], x[1]))
        assert got == want, [p for p, _, _ in by_dispatch]
        by_done = sorted(res, key=lambda x: x[2].completed_at)
        assert [j for _, j, _ in by_done] == [j for _, j, _ in by_dispatch]
        last_blocker = c.await_proof(blockers[-1].job_id)
        assert min(r.dispatch_order for _, _, r in res) > last_blocker.dispatch_order


def test_batch_flush_by_size_and_preempt(dev):
    # a 2 s window: on a loaded CI machine the submits of one case always land inside it
    h8 = dev["h8"]
    ws = [h8.witness(s) for s in range(5)]  # precomputed: the submits follow each other quickly
    with daemon(**{"scheduler.max_batch_size": 3, "scheduler.max_batch_wait_ms": 2000}) as (d, c):
        c.register("hb", h8.r1cs, zkey=h8.key, batchable=True)
        c.register("h8", h8.r1cs, zkey=h8.key)
        vk = vk_of(h8)
        jobs = [c.submit("hb", witness=w) for w in ws[:3]]
        rs = [c.await_proof(j.job_id) for j in jobs]
        assert all(r.ok for r in rs)
        assert {r.batch_size for r in rs} == {3} and {r.batch_flush for r in rs} == {"size"}
        assert len({r.batch_id for r in rs}) == 1
        for r in rs:
            check_proof(vk, r)
        lone = c.submit("hb", witness=ws[3])
        hi = c.submit("h8", witness=ws[4], priority="high")
        r = c.await_proof(lone.job_id)
        assert r.ok and r.batch_flush == "preempt" and r.batch_size == 1 and r.timings["queue_wait_ms"] < 1500
        assert c.await_proof(hi.job_id).ok
        m = c.metrics()
        assert metric(m, "cuzk_batches_total", reason="size") == 1
        assert metric(m, "cuzk_batches_total", reason="preempt") == 1
        assert metric(m, "cuzk_batches_total", reason="timeout") == 0


def test_batch_flush_by_timeout(dev):
    h8 = dev["h8"]
    ws = [h8.witness(10 + s) for s in range(2)]
    with daemon(**{"scheduler.max_batch_size": 3, "scheduler.max_batch_wait_ms": 500}) as (d, c):
        c.register("hb", h8.r1cs, zkey=h8.key, batchable=True)
        t0 = time.monotonic()
        jobs = [c.submit("hb", witness=w) for w in ws]
        rs = [c.await_proof(j.job_id) for j in jobs]
        assert all(r.ok for r in rs)
        assert {r.batch_size for r in rs} == {2} and {r.batch_flush for r in rs} == {"timeout"}
        assert time.monotonic() - t0 >= 0.5 and min(r.timings["queue_wait_ms"] for r in rs) >= 450
        assert metric(c.metrics(), "cuzk_batches_total", reason="timeout") == 1


def test_cancel_queued_and_in_flight(dev, monkeypatch):
    from cuzk.groth16 import prover as gprover

    # the first partition is held inside prove_start until the cancel has arrived
    started, go = threading.Event(), threading.Event()
    real = gprover.prove_start

    def gated(*a, **k):
        started.set()
        go.wait(30)
        return real(*a, **k)

    monkeypatch.setattr(gprover, "prove_start", gated)
    with daemon(**SERIAL) as (d, c):
        big, h8 = dev["big"], dev["h8"]
        c.register("big3", big.r1cs, zkey=big.key, partitions=3)
        c.register("h8", h8.r1cs, zkey=h8.key)
        c.preload("big3")
        try:
            running = c.submit("big3", partitions=[big.witness(s) for s in range(3)])
            queued = c.submit("h8", witness=h8.witness(1))
            r = c.cancel(queued.job_id)
            assert r == {"was_running": False, "cancelled": True, "status": "CANCELLED"}
            assert c.await_proof(queued.job_id).status == "CANCELLED"
            assert started.wait(30)
            r = c.cancel(running.job_id)
        finally:
            go.set()
        assert r["was_running"] and r["cancelled"] and r["status"] == "CANCELLED"
        assert c.await_proof(running.job_id).status == "CANCELLED"
        # in-flight work stops at the next boundary: the pipeline empties, memory is returned
        wait_for(
            lambda: all(v["in_flight"] == 0 for v in c.status()["stages"].values()) and c.status()["memory"]["working_used"] == 0,
            what="pipeline drained",
        )
        m = c.metrics()
        assert metric(m, "cuzk_partitions_proved_total", circuit="big3") == 0  # stopped at the finalizer
        assert metric(m, "cuzk_proofs_cancelled_total") == 2
        assert c.cancel(running.job_id)["cancelled"] is False
        res = c.prove("h8", witness=h8.witness(2))  # still serving
        check_proof(vk_of(h8), res)
        # a multi-partition job returns every partition's proof, in order
        res = c.prove("big3", partitions=[big.witness(s) for s in (5, 6, 7)])
        assert len(res.proofs) == 3 and len(res.proof) == 576
        for i in range(3):
            check_proof(vk_of(big), res, i)
            assert res.public[i] == public_of(big.witness(5 + i), 3)


def test_srs_eviction_two_circuits_alternating(dev):
    h10, c10 = dev["h10"], dev["c10"]
    hot = {
        "h10": get_backend("cpu").resident_bytes_estimate(read_zkey(h10.key)),
        "c10": get_backend("cpu").resident_bytes_estimate(read_params(c10.key, read_r1cs(c10.r1cs).pce)),
    }
    budget = int(max(hot.values()) * 1.2)  # room for one circuit's HOT form
    with daemon(**SERIAL, **{"srs.hot_budget": budget}) as (d, c):
        c.register("h10", h10.r1cs, zkey=h10.key)
        c.register("c10", c10.r1cs, params=c10.key)
        vks = {"h10": vk_of(h10), "c10": vk_of(c10)}
        order = ["h10", "c10"] * 3
        for i, cid in enumerate(order):
            before = {s["circuit_id"]: s["tier"] for s in c.status()["srs"]}
            assert before[cid] == ("COLD" if i < 2 else "WARM")  # evicted by the other circuit's proof
            loads = metric(c.metrics(), "cuzk_srs_loads_total", tier="HOT")
            res = c.prove(cid, witness=dev[cid].witness(30 + i))
            check_proof(vks[cid], res)
            assert metric(c.metrics(), "cuzk_srs_loads_total", tier="HOT") == loads + 1  # promoted again
            st = {s["circuit_id"]: s for s in c.status()["srs"]}
            assert st[cid]["tier"] == "HOT" and st[cid]["ref_count"] == 0
            other = "c10" if cid == "h10" else "h10"
            if i:
                assert st[other]["tier"] == "WARM"
            assert c.status()["srs_totals"]["HOT"] <= budget
        m = c.metrics()
        assert metric(m, "cuzk_srs_evictions_total", tier="HOT", reason="budget") >= len(order) - 1
        # RPCs: evict to COLD, preload back, preload again (already), evict in use refused
        r = c.evict("h10", "COLD")
        assert r["tier"] == "COLD"
        assert next(s for s in c.status()["srs"] if s["circuit_id"] == "h10")["tier"] == "COLD"
        p = c.preload("h10")
        assert p["previous_tier"] == "COLD" and not p["already_loaded"] and p["load_time_ms"] > 0
        assert c.preload("h10")["already_loaded"]
        cpu = d.engine.executor.devices[0].device
        d.engine.srs.acquire("h10", cpu)
        with pytest.raises(DaemonError) as ei:
            c.evict("h10")
        assert ei.value.code == "FAILED_PRECONDITION" and "in use" in ei.value.details
        d.engine.srs.release("h10", cpu)
        assert c.evict("h10")["was_loaded"]
        with pytest.raises(DaemonError) as ei:
            c.preload("nope")
        assert ei.value.code == "NOT_FOUND"


def test_tcp_listen_config_circuits_and_preload(dev, tmp_path):
    h8, c10 = dev["h8"], dev["c10"]
    cfg = tmp_path / "cuzk.toml"
    cfg.write_text(f"""
[daemon]
state_dir = "{tmp_path / "state"}"
listen = "127.0.0.1:0"
[gpus]
backend = "cpu"
[srs]
preload = ["h8"]
[registration]
roots = {json.dumps(REG_ROOTS)}
[[circuits]]
id = "h8"
r1cs = "{h8.r1cs}"
zkey = "{h8.key}"
default_priority = "high"
[[circuits]]
id = "c10"
r1cs = "{c10.r1cs}"
params = "{c10.key}"
""")
    d = Daemon(load_config(cfg)).start()
    try:
        assert d.address.startswith("127.0.0.1:") and not d.address.endswith(":0")
        with Client(d.address) as c:
            st = {s["circuit_id"]: s["tier"] for s in c.status()["srs"]}
            assert st == {"h8": "HOT", "c10": "COLD"}
            circuits = {x["id"]: x for x in c.list_circuits()}
            assert circuits["h8"]["source"] == "config" and circuits["h8"]["default_priority"] == "HIGH"
            res = c.prove("h8", witness=h8.witness(3))
            check_proof(vk_of(h8), res)
            assert res.timings["srs_load_ms"] < 50  # preloaded: already HOT
            with pytest.raises(DaemonError) as ei:
                c.register("h8", c10.r1cs, params=c10.key)
            assert ei.value.code == "ALREADY_EXISTS"
            assert c.register("h8", h8.r1cs, zkey=h8.key, default_priority="high")["already_registered"]
            with pytest.raises(DaemonError) as ei:
                c.register("bad", c10.r1cs, zkey=h8.key)
            assert ei.value.code == "INVALID_ARGUMENT" and "another circuit" in ei.value.details
    finally:
        d.stop(10)


def test_violation_found_after_self_check_failure_when_not_checked_upfront():
    with daemon(**{"synthesis.check_constraints": "on_failure"}) as (d, c):
        c.register("example", str(EX / "circuit.r1cs"), zkey=str(EX / "circuit.zkey"), sym=str(EX / "circuit.sym"))
        w = parse_wtns((EX / "witness.wtns").read_bytes()).copy()
        w[-1] = BLS.fr.from_ints([777])[0]
        res = c.prove("example", witness=wtns_bytes(w), check=False)
        assert res.status == "FAILED"
        assert "self-check failed" in res.error and "violates constraint" in res.error and "main." in res.error
        ok = c.prove("example", witness=(EX / "witness.wtns").read_bytes())
        assert ok.ok and "constraint_check" not in ok.phases  # on_failure: no check on the success path


def test_results_expire_after_the_retention_period(dev):
    with daemon(**{"journal.retention": 1}) as (d, c):
        c.register("h8", dev["h8"].r1cs, zkey=dev["h8"].key)
        res = c.prove("h8", witness=dev["h8"].witness(1), request_id="ret-1")
        assert c.await_proof(res.job_id).ok  # retrievable for now

        def gone():
            try:
                c.await_proof(res.job_id)
            except DaemonError as e:
                return e.code == "NOT_FOUND"
            return False

        wait_for(gone, timeout=10, what="the result to expire")
        assert d.engine.journal.get(res.job_id) is None and res.job_id not in d.engine.table.recent
        # the request id is free again: a new job
        again = c.submit("h8", witness=dev["h8"].witness(1), request_id="ret-1")
        assert not again.duplicate and again.job_id != res.job_id


def test_a_start_up_error_leaves_nothing_running(tmp_path):
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen()
    try:
        for http, match in ((f"127.0.0.1:{busy.getsockname()[1]}", "cannot listen"), ("8.8.8.8:0", "loopback")):
            tmp = tempfile.mkdtemp(prefix="czt", dir="/tmp")
            try:
                d = Daemon(
                    load_config(
                        overrides={
                            "daemon.state_dir": tmp,
                            "daemon.listen": f"unix://{tmp}/d.sock",
                            "gpus.backend": "cpu",
                            "daemon.http_listen": http,
                        }
                    )
                )
                with pytest.raises(CuzkError, match=f"daemon.http_listen.*{match}"):
                    d.start()
                assert not d.engine._started and d.engine.stopped.is_set()  # found before the engine started
                assert not os.path.exists(f"{tmp}/d.sock")
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
    finally:
        busy.close()


def test_submit_stream_large_inputs(dev, monkeypatch):
    """Inputs above one message go through SubmitProofStream (the client switches by itself) and are
    journaled as files; malformed streams are refused with one line naming what was wrong."""
    import grpc

    from cuzk.engine.journal import Journal
    from cuzk.server import protogen

    pb = protogen.load()[0]
    monkeypatch.setattr(Client, "STREAM_ABOVE", 0)
    monkeypatch.setattr(Client, "CHUNK", 1000)
    monkeypatch.setattr(Journal, "SPILL_BYTES", 2000)
    h8 = dev["h8"]
    with daemon(**{"daemon.max_request_bytes": "1MiB"}) as (d, c):
        c.register("h8", h8.r1cs, zkey=h8.key)
        w = h8.witness(11)
        assert len(w) > 2000  # streamed in chunks of 1000 and spilled to a file
        res = c.prove("h8", witness=w)
        check_proof(vk_of(h8), res)
        sub = c.submit("h8", partitions=[w], request_id="stream-1")
        assert c.await_proof(sub.job_id).status == "COMPLETED"

        def call(chunks):
            try:
                c.stub.SubmitProofStream(iter(chunks))
            except grpc.RpcError as e:
                return e.code().name, e.details()
            return "OK", ""

        hdr = pb.SubmitProofRequest(circuit_id="h8")
        size = [pb.StreamedPartition(size=len(w))]
        assert call([pb.SubmitProofChunk(data=w)]) == (
            "INVALID_ARGUMENT",
            "header: the first chunk must carry the request (SubmitProofRequest) and the sizes",
        )
        code, msg = call([pb.SubmitProofChunk(header=hdr, sizes=size, data=w[:100])])
        assert code == "INVALID_ARGUMENT" and msg == f"data: 100 bytes arrived, the sizes declare {len(w)}"
        code, msg = call([pb.SubmitProofChunk(header=hdr, sizes=size, data=w), pb.SubmitProofChunk(data=b"x")])
        assert code == "INVALID_ARGUMENT" and "more bytes than" in msg
        code, msg = call([pb.SubmitProofChunk(header=hdr, sizes=[pb.StreamedPartition(size=1 << 40)])])
        assert code == "RESOURCE_EXHAUSTED" and "daemon.max_request_bytes" in msg
        code, msg = call([pb.SubmitProofChunk(header=hdr, sizes=[])])
        assert code == "INVALID_ARGUMENT" and msg.startswith("sizes:")


def test_circuit_deadline_met_or_missed(dev, tmp_path):
    """A circuit's deadline (a WinningPoSt's epoch) is judged per job: met when the proof came back in
    time, missed otherwise (also when the job failed), counted in metrics and kept in the journal."""
    h8 = dev["h8"]
    cfg = tmp_path / "cuzk.toml"
    cfg.write_text(f"""
[[circuits]]
id = "roomy"
r1cs = "{h8.r1cs}"
zkey = "{h8.key}"
default_priority = "critical"
deadline = "1h"
[[circuits]]
id = "tight"
r1cs = "{h8.r1cs}"
zkey = "{h8.key}"
deadline = "1ms"
[[circuits]]
id = "none"
r1cs = "{h8.r1cs}"
zkey = "{h8.key}"
""")
    with pytest.raises(ConfigError, match=r"^circuits\[0\]\.deadline: "):
        validate_circuit({"id": "x", "r1cs": h8.r1cs, "zkey": h8.key, "deadline": "soon"}, "circuits[0]")
    with daemon(cfg) as (d, c):
        got = {}
        for cid in ("roomy", "tight", "none"):
            res = c.prove(cid, witness=h8.witness(1))
            assert res.ok, res.error
            got[cid] = d.engine.lookup(res.job_id)
            assert (res.deadline_ms, res.deadline_met) == (
                (got[cid].deadline_ms, got[cid].deadline_met) if cid != "none" else (0.0, None)
            )  # the client sees what the engine judged
        c.register("rpc", h8.r1cs, zkey=h8.key, deadline_s=0.001)
        assert {x["id"]: x for x in c.list_circuits()}["rpc"]["deadline_s"] == 0.001
        res = c.prove("rpc", witness=h8.witness(2))
        assert res.ok and res.deadline_met is False and res.deadline_ms == 1.0
        with pytest.raises(DaemonError, match=r"circuit\.deadline: "):
            c.register("nan", h8.r1cs, zkey=h8.key, deadline_s=float("nan"))
        assert got["roomy"].deadline_ms == 3.6e6 and got["roomy"].deadline_met is True
        assert got["tight"].deadline_ms == 1.0 and got["tight"].deadline_met is False
        assert got["none"].deadline_met is None
        text = d.engine.metrics.text()
        assert metric(text, "cuzk_deadlines_total", circuit="roomy", outcome="met") == 1
        assert metric(text, "cuzk_deadlines_total", circuit="tight", outcome="missed") == 1
        assert metric(text, "cuzk_deadlines_total", circuit="none") == 0
        rec = JobRecord.from_json(d.engine.journal.get(got["tight"].job_id)["result"])
        assert rec.deadline_met is False
