"""Issue 19, items 4 and 5: one daemon per state folder, private state, witnesses gone from the journal
once their job finished, a damaged journal refused (and kept) with `cuzk journal check|salvage`, the
attempt limit (quarantine) and the queue's byte limit. The recovery tests run on both journal stores
(SQLite, PostgreSQL: issue 23); the others test SQLite's own file."""

from __future__ import annotations

import hashlib
import os
import shutil
import sqlite3
import stat
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

import pytest

from cuzk import CuzkError
from cuzk.engine.config import load_config
from cuzk.engine.devcircuit import make_dev_circuit
from cuzk.engine.engine import Engine
from cuzk.engine.errors import ResourceExhausted
from cuzk.engine.journal import Journal, JournalDamaged


@pytest.fixture(scope="module")
def dev(tmp_path_factory):
    return make_dev_circuit(tmp_path_factory.mktemp("sj-circuits") / "h8", "hash", 8)


@pytest.fixture
def state():
    tmp = tempfile.mkdtemp(prefix="czs", dir="/tmp")
    yield Path(tmp)
    shutil.rmtree(tmp, ignore_errors=True)


def write_config(state: Path, dev, extra: str = "") -> Path:
    cfg = state.parent / (state.name + ".toml")
    cfg.write_text(f"""
[daemon]
state_dir = "{state}"
listen = "unix://{state}/d.sock"
[gpus]
backend = "cpu"
[synthesis]
partition_workers = 1
{extra}
[[circuits]]
id = "h8"
r1cs = "{dev.r1cs}"
zkey = "{dev.key}"
""")
    return cfg


def engine(cfg: Path) -> Engine:
    return Engine(load_config(str(cfg))).start()


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cuzk", *args], capture_output=True, text=True, timeout=120)


def prove(e: Engine, dev, seed: int = 1) -> str:
    job, _dup, _pos = e.submit("h8", [("wtns", dev.witness(seed))])
    rec = e.await_job(job.job_id, 60)
    assert rec.status == "COMPLETED", rec.error
    return job.job_id


def test_second_daemon_refused_naming_the_pid(dev, state):
    cfg = write_config(state, dev)
    e = engine(cfg)
    try:
        r = cli("daemon", "--config", str(cfg))
        assert r.returncode != 0
        assert "Traceback" not in r.stderr
        lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
        assert len(lines) == 1, r.stderr
        assert f"pid {os.getpid()}" in lines[0] and "in use" in lines[0]
    finally:
        e.shutdown(10)
    engine(cfg).shutdown(10)  # released at shutdown: the next daemon starts


def test_private_modes_and_witness_gone_after_completion(dev, state):
    cfg = write_config(state, dev)
    e = engine(cfg)
    try:
        w = dev.witness(7)
        probe = w[len(w) // 2 : len(w) // 2 + 48]
        assert len(set(probe)) > 8  # field elements, not padding
        jid = prove(e, dev, 7)
        # the payload is deleted (secure_delete, WAL checkpointed) right after the job finished
        for _ in range(100):
            if not e.journal._db.execute("SELECT COUNT(*) FROM payloads").fetchone()[0]:
                break
            import time

            time.sleep(0.05)
        e.journal.checkpoint()
        assert stat.S_IMODE(state.stat().st_mode) == 0o700
        for p in state.rglob("*"):
            if p.is_file() and not p.name.endswith(".sock"):
                assert stat.S_IMODE(p.stat().st_mode) & 0o077 == 0, p
                assert probe not in p.read_bytes(), f"witness bytes found in {p}"
        assert e.lookup(jid).status == "COMPLETED"  # the result stays
    finally:
        e.shutdown(10)
    for p in state.rglob("*"):
        if p.is_file():
            assert probe not in p.read_bytes(), f"witness bytes found in {p}"


def _corrupt_events_page(path: Path) -> None:
    db = sqlite3.connect(str(path))
    root = db.execute("SELECT rootpage FROM sqlite_master WHERE name='events'").fetchone()[0]
    size = db.execute("PRAGMA page_size").fetchone()[0]
    db.close()
    with open(path, "r+b") as fh:
        fh.seek((root - 1) * size)
        fh.write(b"\xa5" * size)


def test_damaged_journal_refused_kept_checked_salvaged(dev, state):
    cfg = write_config(state, dev)
    e = engine(cfg)
    done = prove(e, dev, 3)
    e.shutdown(10)
    j = Journal(state / "journal.sqlite")  # a job left queued by the last run
    queued = uuid.uuid4().hex
    j.insert_job(queued, None, "h", "h8", 2, [("wtns", dev.witness(4))], 1.0)
    j.close()
    path = state / "journal.sqlite"
    _corrupt_events_page(path)
    before = hashlib.sha256(path.read_bytes()).hexdigest()

    with pytest.raises(JournalDamaged):
        Engine(load_config(str(cfg)))
    r = cli("daemon", "--config", str(cfg))
    assert r.returncode != 0 and "Traceback" not in r.stderr
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "damaged" in lines[0] and "cuzk journal salvage" in lines[0], r.stderr
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before  # kept untouched

    r = cli("journal", "check", str(state))
    assert r.returncode == 1 and "DAMAGED" in r.stdout, r.stdout + r.stderr
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before
    r = cli("journal", "salvage", str(state))
    assert r.returncode == 0, r.stderr
    aside = [p for p in state.iterdir() if p.name.startswith("journal.sqlite.damaged-")]
    assert len(aside) == 1 and hashlib.sha256(aside[0].read_bytes()).hexdigest() == before
    r = cli("journal", "check", str(state))
    assert r.returncode == 0 and "ok" in r.stdout, r.stdout + r.stderr

    e = engine(cfg)
    try:
        assert e.lookup(done).status == "COMPLETED"
        assert e.await_job(queued, 60).status == "COMPLETED"
    finally:
        e.shutdown(10)


def test_garbage_file_refused(state, dev):
    cfg = write_config(state, dev)
    (state / "journal.sqlite").write_bytes(b"not a database at all" * 100)
    with pytest.raises(CuzkError, match="damaged"):
        Engine(load_config(str(cfg)))
    assert (state / "journal.sqlite").read_bytes() == b"not a database at all" * 100
    (state / "journal.sqlite").unlink()
    Engine(load_config(str(cfg))).start().shutdown(10)  # the refused start released the lock


@pytest.fixture(params=["sqlite", "postgres"])
def kind(request):
    """The journal store a test's daemon uses: (kind, the [journal] url line: "" for SQLite)."""
    if request.param == "sqlite":
        return "sqlite", ""
    from cuzk.engine.journal.postgres import migrate

    url = request.getfixturevalue("pg_url")
    migrate(url)
    return "postgres", f'url = "{url}"\n'


def open_store(kind, state: Path):
    """The journal the daemon of ``write_config(state, ...)`` with ``kind``'s url opens."""
    if kind[0] == "sqlite":
        return Journal(state / "journal.sqlite")
    from cuzk.engine.journal.postgres import PostgresJournal

    return PostgresJournal(kind[1].split('"')[1], state / "journal.payloads")


def test_job_over_attempt_limit_quarantined(dev, state, kind):
    cfg = write_config(state, dev, "[journal]\nmax_attempts = 2\n" + kind[1])
    state.mkdir(exist_ok=True)
    j = open_store(kind, state)
    jid, ok = uuid.uuid4().hex, uuid.uuid4().hex
    j.insert_job(jid, None, "h", "h8", 2, [("wtns", dev.witness(5))], 1.0)
    j.insert_job(ok, None, "h", "h8", 2, [("wtns", dev.witness(6))], 2.0)
    j.mark_started(jid, 1.5)
    j.mark_started(jid, 1.6)  # the daemon died in it twice
    j.mark_started(ok, 2.5)  # once: it runs again
    j.close()
    e = engine(cfg)
    try:
        rec = e.await_job(jid, 5)
        assert rec.status == "FAILED"
        assert "quarantined after 2 attempts: the daemon stopped while proving it 2 times" in rec.error
        assert e.await_job(ok, 60).status == "COMPLETED"
    finally:
        e.shutdown(10)


def test_queue_bytes_limit(dev, state):
    w = dev.witness(1)
    cfg = write_config(state, dev, f"[scheduler]\nmax_queue_bytes = {len(w) - 1}\n")
    e = engine(cfg)
    try:
        with pytest.raises(ResourceExhausted, match="scheduler.max_queue_bytes"):
            e.submit("h8", [("wtns", w)])
    finally:
        e.shutdown(10)


def test_recovery_parses_payloads_within_a_budget(dev, state):
    # one daemon on its SQLite journal; a cluster's daemon holds at most cluster.claim_ahead claimed
    # partitions instead (tests/test_cluster.py)
    kind = ("sqlite", "")
    w = dev.witness(1)
    cfg = write_config(state, dev, f"[scheduler]\nmax_queue_bytes = {len(w)}\n")
    state.mkdir(exist_ok=True)
    j = open_store(kind, state)
    ids = [uuid.uuid4().hex for _ in range(3)]
    for i, jid in enumerate(ids):
        j.insert_job(jid, None, "h", "h8", 2, [("wtns", dev.witness(10 + i))], 1.0 + i)
    j.close()
    e = engine(cfg)
    try:
        assert len(e._backlog) >= 1  # one job's payload parsed at start, the others when it finished
        assert all(p.witness is None for p in e.lookup(ids[2]).parts)
        for jid in ids:
            assert e.await_job(jid, 60).status == "COMPLETED"
        assert not e._backlog
    finally:
        e.shutdown(10)


def test_inputs_by_reference_on_one_host(dev, state):
    # issue 23 item 4 without a cluster: an input named by its path under [inputs] roots is journaled as
    # (path, size, SHA-256) and read when the job is proved; other paths and oversized files are refused
    from cuzk.engine.errors import InvalidArgument
    from cuzk.engine.registry import PermissionDenied
    from cuzk.groth16 import formats, verifier

    shared = state / "shared"
    shared.mkdir(parents=True)
    w = shared / "w.wtns"
    w.write_bytes(dev.witness(7))
    cfg = write_config(state, dev, f'[inputs]\nroots = ["{shared}"]\nmax_file_bytes = "{w.stat().st_size}B"\n')
    e = engine(cfg)
    try:
        rec, _dup, _pos = e.submit("h8", [("wtns_path", str(w).encode())])
        done = e.await_job(rec.job_id, 60)
        vk = formats.read_vk_json(Path(dev.folder) / "verification_key.json")
        assert done.state.name == "COMPLETED"
        p = done.partitions[0]
        assert verifier.verify(vk, list(p.public), formats.Proof.from_bytes(p.proof, vk.curve))
        with pytest.raises(PermissionDenied, match=r"partitions\[0\].*inputs\.roots"):
            e.submit("h8", [("wtns_path", str(state / "elsewhere.wtns").encode())])
        big = shared / "big.wtns"
        big.write_bytes(dev.witness(7) + b"\0")
        with pytest.raises(ResourceExhausted, match=r"partitions\[0\]: .*big\.wtns: .* above inputs\.max_file_bytes"):
            e.submit("h8", [("wtns_path", str(big).encode())])
        with pytest.raises(InvalidArgument, match=r"partitions\[0\]: .*missing\.wtns: cannot read"):
            e.submit("h8", [("wtns_path", str(shared / "missing.wtns").encode())])
    finally:
        e.shutdown(10)
