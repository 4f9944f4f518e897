"""Key pinning with circuit versions (issue 19, item 3): a job is proved and verified with the circuit version
(key) it was accepted for. Replacing a circuit while it has queued and in-flight jobs succeeds: new jobs use
the new key, every accepted one its own; the old version is released after its last job. Across a restart
the journal's version of each job brings it back onto its own key, or fails it in one line when that
version's files are gone or changed; a journal from before versions opens and recovers as before."""

from __future__ import annotations

import gc
import shutil
import sqlite3
import tempfile
import threading
import time
import weakref
from pathlib import Path

import pytest

from cuzk.engine.config import load_config
from cuzk.engine.devcircuit import make_dev_circuit
from cuzk.engine.engine import Engine
from cuzk.engine.journal import Journal
from cuzk.groth16 import formats, prover, verifier

SERIAL = {
    "gpus.backend": "cpu",
    "synthesis.partition_workers": 1,
    "gpus.cpu_workers": 1,
    "pipeline.prover_queue_depth": 1,
    "registration.roots": [tempfile.gettempdir()],  # register_circuit may name the tests' temporary files
}


@pytest.fixture(scope="module")
def keys(tmp_path_factory):
    """One circuit (the same r1cs) with two different development keys."""
    base = tmp_path_factory.mktemp("versions")
    a = make_dev_circuit(base / "a", "hash", 8)
    b = make_dev_circuit(base / "b", "hash", 8)
    assert Path(a.r1cs).read_bytes() == Path(b.r1cs).read_bytes()
    return a, b, vk(a), vk(b)


def vk(dc):
    return formats.read_vk_json(Path(dc.folder) / "verification_key.json")


def verifies(key, rec) -> bool:
    p = rec.partitions[0]
    return verifier.verify(key, list(p.public), formats.Proof.from_bytes(p.proof, key.curve))


def _wait(cond, timeout=30.0, what="condition"):
    t = time.monotonic() + timeout
    while time.monotonic() < t:
        if cond():
            return
        time.sleep(0.005)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.fixture
def engines(tmp_path):
    made = []

    def make(**over):
        e = Engine(load_config(overrides={"daemon.state_dir": str(tmp_path / "state")} | SERIAL | over))
        made.append(e)
        return e.start()

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


def test_replace_keeps_queued_and_in_flight_jobs_on_their_key(keys, engines, gate):
    a, b, vk_a, vk_b = keys
    g = gate(prover, "prove_start")
    e = engines()
    e.register_circuit(a.spec("h"))
    v1 = e.circuit("h")
    ids = [e.submit("h", [("wtns", a.witness(s))])[0].job_id for s in range(4)]
    assert g.entered.wait(30)  # the first job is inside prove_start with v1's key, the others behind it
    _wait(lambda: e.pipeline.stage["prover_queue"] >= 1, 10, "a synthesized job waiting for the prover")
    assert e.lookup(ids[-1]).state.name == "QUEUED"
    v2, already = e.register_circuit(b.spec("h"), replace=True)  # no longer refused while jobs are active
    assert not already and e.circuit("h") is v2 and v2.version != v1.version and v2.key_hash != v1.key_hash
    assert e._retired == [v1] and e.srs.versions("h") == [v2.srs_key.split("@")[1], v1.srs_key.split("@")[1]]
    new = e.submit("h", [("wtns", b.witness(9))])[0].job_id  # accepted after the replace: the new key
    assert e.lookup(new).circuit is v2
    assert [e.journal.get(j)["version"] for j in ids] == [v1.version] * 4 and e.journal.get(new)["version"] == v2.version
    g.go.set()
    for j in ids:
        rec = e.await_job(j, 60)
        assert rec.status == "COMPLETED", rec.error
        assert verifies(vk_a, rec) and not verifies(vk_b, rec)
    rec = e.await_job(new, 60)
    assert rec.status == "COMPLETED" and verifies(vk_b, rec) and not verifies(vk_a, rec)
    # v1's last job finished: its key leaves the SRS tiers (cache file too) and the Circuit is freed
    old_key = v1.srs_key
    _wait(lambda: not e._retired, 10, "the old version to be released")
    assert e.srs.versions("h") == [v2.srs_key.split("@")[1]]
    assert not list(e.srs.cache_dir.glob(f"h-{old_key.split('@')[1]}.srs"))
    assert {(s["circuit_id"], s["version"]) for s in e.srs.status()} == {("h", v2.srs_key.split("@")[1])}
    ref = weakref.ref(v1)
    del v1
    gc.collect()
    assert ref() is None
    # the journal keeps only the current version's definition
    rows = e.journal._db.execute("SELECT version FROM circuit_versions WHERE circuit_id='h'").fetchall()
    assert rows == [(v2.version,)]


def test_versions_sharing_a_key_share_its_srs_entry(keys, engines):
    a, _b, vk_a, _ = keys
    e = engines()
    e.register_circuit(a.spec("h"))
    v1 = e.circuit("h")
    e.preload("h")
    v2, _ = e.register_circuit(a.spec("h", default_priority="high"), replace=True)
    assert v2.version == v1.version and v2.srs_key == v1.srs_key and v2 is not v1
    assert e.srs.tier("h") == 0  # still HOT: the old definition's release kept the key the new one uses
    rec = e.await_job(e.submit("h", [("wtns", a.witness(4))])[0].job_id, 60)
    assert rec.status == "COMPLETED" and verifies(vk_a, rec)


def _stop_with_jobs_journaled(e, g):
    """Stop ``e`` while its first job is inside prove_start: every job stays journaled, unfinished."""
    assert e.shutdown(0.0) is False
    g.go.set()
    for t in e._threads:
        t.join(10)
    e.journal.close()


def test_restart_recovers_each_job_onto_its_own_version(keys, engines, gate, tmp_path):
    a, b, vk_a, vk_b = keys
    key_a = tmp_path / "a.zkey"  # a's key where the test can change it
    shutil.copy(a.key, key_a)
    g = gate(prover, "prove_start")
    e = engines()
    e.register_circuit(a.spec("h", zkey=str(key_a)))
    old = [e.submit("h", [("wtns", a.witness(s))])[0].job_id for s in range(2)]
    assert g.entered.wait(30)
    e.register_circuit(b.spec("h"), replace=True)
    new = e.submit("h", [("wtns", b.witness(7))])[0].job_id
    _stop_with_jobs_journaled(e, g)

    e2 = engines()  # the circuits table names v2; the journal's versions bring the old jobs back onto v1
    assert e2.circuit("h").key_hash != e2.lookup(old[0]).circuit.key_hash
    assert e2.lookup(old[0]).circuit is e2.lookup(old[1]).circuit and e2.lookup(new).circuit is e2.circuit("h")
    for j in old:
        rec = e2.await_job(j, 60)
        assert rec.status == "COMPLETED", rec.error
        assert verifies(vk_a, rec) and not verifies(vk_b, rec)
    rec = e2.await_job(new, 60)
    assert rec.status == "COMPLETED" and verifies(vk_b, rec) and not verifies(vk_a, rec)
    _wait(lambda: not e2._retired, 10, "the restored version to be released")


@pytest.mark.parametrize("how", ["changed", "gone"])
def test_restart_fails_jobs_whose_version_files_changed(keys, engines, gate, tmp_path, how):
    a, b, _vk_a, vk_b = keys
    key_a = tmp_path / "a.zkey"
    shutil.copy(a.key, key_a)
    g = gate(prover, "prove_start")
    e = engines()
    e.register_circuit(a.spec("h", zkey=str(key_a)))
    old = [e.submit("h", [("wtns", a.witness(s))])[0].job_id for s in range(2)]
    assert g.entered.wait(30)
    e.register_circuit(b.spec("h"), replace=True)
    new = e.submit("h", [("wtns", b.witness(7))])[0].job_id
    _stop_with_jobs_journaled(e, g)
    if how == "changed":
        shutil.copy(b.key, key_a)  # v1's key file now holds another key (same size, same circuit)
    else:
        key_a.unlink()

    e2 = engines()
    for j in old:
        rec = e2.await_job(j, 10)
        assert rec.status == "FAILED" and "\n" not in rec.error
        assert "version" in rec.error and "not proved with another key" in rec.error, rec.error
        assert ("key sha256 now" in rec.error) if how == "changed" else ("no such file" in rec.error), rec.error
    rec = e2.await_job(new, 60)
    assert rec.status == "COMPLETED" and verifies(vk_b, rec)
    assert not e2._retired


def test_a_key_changed_on_disk_is_not_loaded_for_its_version(keys, engines, tmp_path):
    """While the daemon runs: a version's key is loaded (COLD -> WARM) only if the file still holds it."""
    a, b, _, _ = keys
    key_a = tmp_path / "a.zkey"
    shutil.copy(a.key, key_a)
    e = engines()
    e.register_circuit(a.spec("h", zkey=str(key_a)))
    shutil.copy(b.key, key_a)
    rec = e.await_job(e.submit("h", [("wtns", a.witness(1))])[0].job_id, 30)
    assert rec.status == "FAILED" and "changed since it was registered" in rec.error and "\n" not in rec.error


def test_a_journal_from_before_versions_opens_and_recovers(keys, tmp_path):
    """Old journals: no jobs.version column, no circuit_versions / file_hashes tables. They open (the
    column and tables are added) and their jobs run on the circuit as it is now."""
    a, _b, vk_a, _ = keys
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    j = Journal(state / "journal.sqlite")
    j.insert_job("old-job", None, "h", "h", 2, [("wtns", a.witness(3))], 1.0)
    j.close()
    db = sqlite3.connect(state / "journal.sqlite")
    db.execute("ALTER TABLE jobs DROP COLUMN version")
    db.execute("DROP TABLE circuit_versions")
    db.execute("DROP TABLE file_hashes")
    db.commit()
    db.close()
    toml = tmp_path / "c.toml"
    toml.write_text(
        f'[daemon]\nstate_dir = "{state}"\n[gpus]\nbackend = "cpu"\n[[circuits]]\nid = "h"\nr1cs = "{a.r1cs}"\nzkey = "{a.key}"\n'
    )
    e = Engine(load_config(str(toml))).start()
    try:
        rec = e.await_job("old-job", 60)
        assert rec.status == "COMPLETED" and verifies(vk_a, rec)
        assert e.journal.get("old-job")["version"] is None
        row = e.journal.version("h", e.circuit("h").version)
        assert row is not None and row["key_sha256"] == e.circuit("h").key_hash
    finally:
        e.shutdown(5)
