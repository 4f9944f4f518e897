"""Issue 19, item 3: RegisterCircuit's path policy (registration.roots), the Python-module allow-list,
error messages that never quote a file's bytes, ListCircuits' paths by role, and jobs pinned to the key
they were accepted with (tests/test_engine_versions.py has the engine's side and restarts)."""

from __future__ import annotations

import hashlib
import os
import tempfile
import threading
from pathlib import Path

import pytest
from test_daemon import REG_ROOTS, check_proof, daemon, vk_of

from cuzk.engine.devcircuit import make_dev_circuit
from cuzk.engine.errors import EngineError
from cuzk.groth16 import formats, verifier
from cuzk.server.client import DaemonError

SECRET = b"root:x:0:0:SECRETPW-do-not-echo:/root:/bin/bash\n" * 4
REFUSED = ("PERMISSION_DENIED", "INVALID_ARGUMENT")


@pytest.fixture(scope="module")
def dirs(tmp_path_factory):
    base = tmp_path_factory.mktemp("regpolicy")
    root, outside = base / "root", base / "outside"
    root.mkdir()
    outside.mkdir()
    dc = make_dev_circuit(root / "h8", "hash", 8)
    secret = outside / "passwd"
    secret.write_bytes(SECRET)
    (root / "link.r1cs").symlink_to(secret)
    (root / "fake.r1cs").write_bytes(SECRET)
    return {"root": root, "outside": outside, "dc": dc, "secret": secret}


def refusal(c, **spec):
    with pytest.raises(DaemonError) as ei:
        c.register(**spec)
    assert ei.value.code in REFUSED, ei.value
    msg = ei.value.details
    assert "SECRETPW" not in msg and "root:x" not in msg and "b'" not in msg, msg
    assert "\n" not in msg
    return msg


def test_paths_outside_the_roots_are_refused(dirs):
    root, dc = dirs["root"], dirs["dc"]
    with daemon(**{"registration.roots": [str(root)]}) as (d, c):
        msg = refusal(c, id="x", r1cs=str(dirs["secret"]), zkey=dc.key)
        assert str(dirs["secret"]) in msg and str(root) in msg and "outside" in msg
        # a ".." component is refused before resolving, even where it would resolve inside the roots (the
        # client library normalizes its paths: the raw request is the engine's spec)
        for bad in (f"{root}/../outside/passwd", f"{root}/h8/../h8/circuit.r1cs", "../../etc/passwd"):
            with pytest.raises(EngineError) as ei:
                d.engine.register_circuit({"id": "x", "r1cs": bad, "zkey": dc.key})
            assert ei.value.code == "PERMISSION_DENIED" and "'..'" in str(ei.value) and "SECRETPW" not in str(ei.value)
        # a symlink inside the roots that points outside: judged by where it leads
        msg = refusal(c, id="x", r1cs=str(root / "link.r1cs"), zkey=dc.key)
        assert str(dirs["secret"]) in msg and "resolved" in msg
        # the key too
        msg = refusal(c, id="x", r1cs=dc.r1cs, zkey=str(dirs["secret"]))
        assert ".zkey" in msg
        # a file inside the roots that is not an r1cs: refused naming the format, not quoting it
        msg = refusal(c, id="x", r1cs=str(root / "fake.r1cs"), zkey=dc.key)
        assert "not a .r1cs file (bad magic)" in msg
        # inside the roots: registered; non-admin listings show basenames only
        c.register("ok", dc.r1cs, zkey=dc.key)
        (info,) = [i for i in d.engine.list_circuits(show_paths=False) if i["id"] == "ok"]
        assert info["spec"]["r1cs"] == "circuit.r1cs" and info["spec"]["zkey"] == "circuit.zkey"
        assert info["spec"]["wasm"] == ""
        (full,) = [i for i in d.engine.list_circuits() if i["id"] == "ok"]
        assert full["spec"]["r1cs"] == os.path.realpath(dc.r1cs)


def test_no_roots_means_no_server_side_paths(dirs):
    dc = dirs["dc"]
    with daemon(**{"registration.roots": []}) as (_d, c):
        msg = refusal(c, id="x", r1cs=dc.r1cs, zkey=dc.key)
        assert "registration.roots" in msg


def test_config_file_circuits_are_trusted(dirs, tmp_path):
    dc = dirs["dc"]
    toml = tmp_path / "c.toml"
    toml.write_text(f'[[circuits]]\nid = "cfg"\nr1cs = "{dc.r1cs}"\nzkey = "{dc.key}"\n')
    with daemon(str(toml), **{"registration.roots": []}) as (_d, c):
        res = c.prove("cfg", witness=dc.witness(3))
        check_proof(vk_of(dc), res)


def test_python_modules_allow_list(dirs):
    dc = dirs["dc"]
    with daemon(**{"registration.roots": [str(dirs["root"])]}) as (_d, c):
        msg = refusal(c, id="py", python="os.path:join", zkey=dc.key)
        assert "'os.path'" in msg and "cuzk." in msg
        msg = refusal(c, id="py", python="cuzkevil:Cube", zkey=dc.key)  # a prefix, not a substring
        assert "cuzkevil" in msg
    with daemon(**{"registration.roots": [str(dirs["root"])], "registration.python_modules": ["mypkg"]}) as (_d, c):
        msg = refusal(c, id="py", python="cuzk.circuit.examples:Cube", zkey=dc.key)
        assert "mypkg" in msg


def test_list_circuits_shows_paths_to_admins_only(dirs, tmp_path):
    """ListCircuits: server-side paths for admins (a token, or the trusted unix socket) and, with
    authentication off, for callers on the unix socket; basenames for submit tokens and for TCP callers
    of a daemon without tokens. /status names no paths at all."""
    import json

    from cuzk.server.auth import TokenStore
    from cuzk.server.client import Client

    dc, root = dirs["dc"], str(dirs["root"])
    store = TokenStore(tmp_path / "tokens.json")
    adm, sub = store.add("adm", "admin"), store.add("sub", "submit")

    def listed(client):
        return {i["id"]: i for i in client.list_circuits()}["ok"]

    full = os.path.realpath(dc.r1cs)
    over = {"registration.roots": [root], "security.tokens_file": str(tmp_path / "tokens.json")}
    with daemon(**over) as (d, c):
        c.register("ok", dc.r1cs, zkey=dc.key)
        assert listed(c)["r1cs"] == full  # the unix socket, trusted without a token
        with Client(d.address, token=adm) as ca:
            assert listed(ca)["r1cs"] == full and listed(ca)["zkey"] == os.path.realpath(dc.key)
        with Client(d.address, token=sub) as cs:
            info = listed(cs)
            assert info["r1cs"] == "circuit.r1cs" and info["zkey"] == "circuit.zkey" and info["wasm"] == ""
            assert root not in json.dumps(info) and info["key_sha256"] == hashlib.sha256(Path(dc.key).read_bytes()).hexdigest()
            with pytest.raises(DaemonError) as ei:
                cs.register("up", dc.r1cs, zkey=dc.key, upload=True)  # uploads need the admin role too
            assert ei.value.code == "PERMISSION_DENIED"
        assert root not in json.dumps(d.engine.snapshot())  # what GET /status serves
    with daemon(**{"registration.roots": [root]}) as (d, c):  # no tokens: the unix socket sees paths
        c.register("ok", dc.r1cs, zkey=dc.key)
        assert listed(c)["r1cs"] == full
    with daemon(**{"registration.roots": [root], "daemon.listen": "127.0.0.1:0"}) as (d, c):  # no tokens, TCP
        c.register("ok", dc.r1cs, zkey=dc.key)
        assert listed(c)["r1cs"] == "circuit.r1cs"


@pytest.fixture(scope="module")
def two_keys(tmp_path_factory):
    """One circuit (the same r1cs) with two different proving keys."""
    base = tmp_path_factory.mktemp("pin", numbered=True)
    a = make_dev_circuit(base / "a", "hash", 10)
    b = make_dev_circuit(base / "b", "hash", 10)
    assert Path(a.r1cs).read_bytes() == Path(b.r1cs).read_bytes()
    assert vk_of(a) != vk_of(b)
    return a, b


def verifies(vk, res) -> bool:
    return verifier.verify(vk, res.public[0], formats.Proof.from_bytes(res.proofs[0], vk.curve))


def test_accepted_jobs_keep_their_key(two_keys, monkeypatch):
    """A job is proved and verified with the key it was accepted with: replacing the circuit while it has
    queued and in-flight jobs succeeds, those jobs still prove and verify under the old key, and the jobs
    submitted after the replacement use the new one."""
    from cuzk.groth16 import prover

    a, b = two_keys
    go = threading.Event()
    real = prover.prove_start

    def held(*args, **kw):  # the first proofs wait inside prove_start (in flight with the old key)
        go.wait(30)
        return real(*args, **kw)

    monkeypatch.setattr(prover, "prove_start", held)
    over = {"registration.roots": REG_ROOTS, "synthesis.partition_workers": 1, "gpus.cpu_workers": 1}
    with daemon(**over) as (d, c):
        c.register("pin", a.r1cs, zkey=a.key)
        jobs = [c.submit("pin", witness=a.witness(s)) for s in range(4)]
        states = {j.state.name for j in d.engine.table.active.values()}
        assert states and not states - {"QUEUED", "RUNNING"}
        info = c.register("pin", b.r1cs, zkey=b.key, replace=True)
        assert not info["already_registered"] and info["key_sha256"] != hashlib.sha256(Path(a.key).read_bytes()).hexdigest()
        after = c.submit("pin", witness=b.witness(9))
        go.set()
        for j in jobs:
            res = c.await_proof(j.job_id)
            assert res.ok and verifies(vk_of(a), res) and not verifies(vk_of(b), res)
        res = c.await_proof(after.job_id)
        assert res.ok and verifies(vk_of(b), res) and not verifies(vk_of(a), res)


def test_default_config_refuses_rpc_paths():
    from cuzk.engine.config import load_config

    cfg = load_config(overrides={"daemon.state_dir": tempfile.gettempdir()})
    assert cfg.registration.roots == [] and cfg.registration.python_modules == ["cuzk."]
