"""Issue 19, item 3: RegisterCircuit with the files' bytes instead of server-side paths (unary, and
RegisterCircuitStream for uploads larger than one message): stored under the state folder (0600 in a 0700
folder, named by their SHA-256), checked like named files, size-limited by registration.max_upload_bytes,
errors that never quote the bytes; CircuitSpec's witness_timeout_s; ``cuzk register --upload`` and
``cuzk circuits``."""

from __future__ import annotations

import hashlib
import json
import os
import stat
from pathlib import Path

import pytest
from conftest import fixture_dir
from test_daemon import check_proof, daemon, vk_of

from cuzk.engine.config import load_config
from cuzk.engine.devcircuit import make_dev_circuit
from cuzk.engine.engine import Engine
from cuzk.engine.errors import EngineError
from cuzk.groth16 import formats
from cuzk.server.client import DaemonError

EX = fixture_dir("bls12_381")
SECRET = b"root:x:0:0:SECRETPW-do-not-echo:/root:/bin/bash\n" * 40


@pytest.fixture(scope="module")
def h8(tmp_path_factory):
    return make_dev_circuit(tmp_path_factory.mktemp("upload") / "h8", "hash", 8)


def refused(fn) -> DaemonError:
    with pytest.raises(DaemonError) as ei:
        fn()
    msg = ei.value.details
    assert "\n" not in msg and "SECRETPW" not in msg and "root:x" not in msg and "b'" not in msg, msg
    return ei.value


def stored(state: Path) -> dict[str, Path]:
    d = state / "circuits"
    return {p.name: p for p in d.iterdir()} if d.is_dir() else {}


def sha(path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def test_upload_round_trip_proves_and_verifies(h8):
    # no registration.roots: the daemon names no server-side files, uploads still work
    with daemon(**{"registration.roots": []}) as (d, c):
        info = c.register("up", h8.r1cs, zkey=h8.key, upload=True)
        assert not info["already_registered"] and info["key_sha256"] == sha(h8.key)
        state = Path(d.config.state_dir)
        files = stored(state)
        assert set(files) == {f"{sha(h8.r1cs)}.r1cs", f"{sha(h8.key)}.zkey"}
        assert stat.S_IMODE((state / "circuits").stat().st_mode) == 0o700
        assert all(stat.S_IMODE(p.stat().st_mode) == 0o600 for p in files.values())
        assert info["zkey"] == str(files[f"{sha(h8.key)}.zkey"])  # the caller is an admin: the stored path
        res = c.prove("up", witness=h8.witness(5))
        check_proof(vk_of(h8), res)
        # the same upload again: already registered like this (content-named, nothing new stored)
        assert c.register("up", h8.r1cs, zkey=h8.key, upload=True)["already_registered"]
        # through RegisterCircuitStream (what the client uses above one message), in small chunks
        c.STREAM_ABOVE, c.CHUNK = 0, 1000
        info = c.register("up-stream", h8.r1cs, zkey=h8.key, upload=True)
        assert info["key_sha256"] == sha(h8.key) and set(stored(state)) == set(files)
        check_proof(vk_of(h8), c.prove("up-stream", witness=h8.witness(6)))


def test_upload_with_wasm_and_sym_computes_witnesses(h8):
    with daemon(**{"registration.roots": []}) as (_d, c):
        c.register(
            "ex",
            str(EX / "circuit.r1cs"),
            zkey=str(EX / "circuit.zkey"),
            wasm=str(EX / "circuit.wasm"),
            sym=str(EX / "circuit.sym"),
            witness_timeout_s=5,
            upload=True,
        )
        info = {i["id"]: i for i in c.list_circuits()}["ex"]
        assert info["witness_timeout_s"] == 5 and info["wasm"].endswith(".wasm")
        inputs = json.loads((EX / "input.json").read_text())
        res = c.prove("ex", inputs=inputs)
        check_proof(formats.read_vk_json(EX / "verification_key.json"), res)


def test_upload_limits_and_mistakes_in_one_line(h8, tmp_path):
    zsize = Path(h8.key).stat().st_size
    over = {"registration.roots": [str(tmp_path)], "registration.max_upload_bytes": zsize - 1}
    with daemon(**over) as (d, c):
        state = Path(d.config.state_dir)
        e = refused(lambda: c.register("big", h8.r1cs, zkey=h8.key, upload=True))
        assert e.code == "RESOURCE_EXHAUSTED" and e.details.startswith("circuit.zkey_bytes: ")
        assert "registration.max_upload_bytes" in e.details and str(zsize) in e.details
        c.STREAM_ABOVE = 0  # the stream refuses on the declared sizes, before reading the data
        e = refused(lambda: c.register("big", h8.r1cs, zkey=h8.key, upload=True))
        assert e.code == "RESOURCE_EXHAUSTED" and e.details.startswith("circuit.zkey_bytes: ")
        c.STREAM_ABOVE = 64 << 20
        # bytes that are not the file they claim to be: refused naming the field, never quoting them
        secret = tmp_path / "passwd"
        secret.write_bytes(SECRET)
        e = refused(lambda: c.register("bad", str(secret), zkey=str(secret), upload=True))
        assert e.code == "INVALID_ARGUMENT" and "r1cs_bytes" in e.details and "not a .r1cs file" in e.details, e.details
        assert str(state) not in e.details
        e = refused(lambda: c.register("bad", h8.r1cs, zkey=str(secret), upload=True))
        assert e.code == "INVALID_ARGUMENT" and "zkey_bytes" in e.details
        assert stored(state) == {}  # refused uploads are not kept


def test_upload_policy_errors(h8, tmp_path):
    secret = tmp_path / "passwd"
    secret.write_bytes(SECRET)
    with daemon(**{"registration.roots": [str(tmp_path)]}) as (d, c):
        state = Path(d.config.state_dir)
        eng = d.engine
        # a path outside the roots beside an upload: refused naming the path, not its bytes; nothing stored
        with pytest.raises(EngineError) as ei:
            eng.register_circuit({"id": "mix", "r1cs": h8.r1cs}, uploads={"zkey": Path(h8.key).read_bytes()})
        assert ei.value.code == "PERMISSION_DENIED" and "outside the allowed folders" in str(ei.value)
        assert stored(state) == {}
        # the same file as a path and as bytes
        with pytest.raises(EngineError) as ei:
            eng.register_circuit({"id": "x", "r1cs": str(secret)}, uploads={"r1cs": b"x", "zkey": b"y"})
        assert ei.value.code == "INVALID_ARGUMENT" and "circuit.r1cs: give a path or r1cs_bytes" in str(ei.value)
        # a failed registration leaves no uploaded file behind
        with pytest.raises(EngineError) as ei:
            eng.register_circuit({"id": "x"}, uploads={"r1cs": SECRET, "zkey": SECRET})
        assert ei.value.code == "INVALID_ARGUMENT" and "SECRETPW" not in str(ei.value)
        assert stored(state) == {}
        # witness_timeout_s: bounded like the config key
        e = refused(lambda: c.register("t", h8.r1cs, zkey=h8.key, upload=True, witness_timeout_s=7200))
        assert e.code == "INVALID_ARGUMENT" and "witness_timeout" in e.details and "3600" in e.details
        e = refused(lambda: c.register("t", h8.r1cs, zkey=h8.key, upload=True, witness_timeout_s=-1))
        assert e.code == "INVALID_ARGUMENT" and "witness_timeout" in e.details
        e = refused(lambda: c.register("t", h8.r1cs, zkey=h8.key, upload=True, witness_timeout_s=float("nan")))
        assert e.code == "INVALID_ARGUMENT" and "witness_timeout" in e.details
    with daemon(**{"registration.max_upload_bytes": 0}) as (_d, c):
        e = refused(lambda: c.register("off", h8.r1cs, zkey=h8.key, upload=True))
        assert e.code == "PERMISSION_DENIED" and "registration.max_upload_bytes = 0" in e.details


def test_uploaded_circuit_survives_a_restart_and_replaced_uploads_are_removed(h8, tmp_path):
    other = make_dev_circuit(tmp_path / "other", "hash", 8)  # same r1cs, another key
    over = {"daemon.state_dir": str(tmp_path / "state"), "gpus.backend": "cpu"}
    e = Engine(load_config(overrides=over)).start()
    try:
        e.register_circuit({"id": "up"}, uploads={"r1cs": Path(h8.r1cs).read_bytes(), "zkey": Path(h8.key).read_bytes()})
    finally:
        e.shutdown(5)
    e = Engine(load_config(overrides=over)).start()
    try:
        assert e.circuit("up").key_hash == sha(h8.key)
        rec = e.await_job(e.submit("up", [("wtns", h8.witness(2))])[0].job_id, 60)
        assert rec.status == "COMPLETED"
        e.register_circuit(
            {"id": "up"}, replace=True, uploads={"r1cs": Path(h8.r1cs).read_bytes(), "zkey": Path(other.key).read_bytes()}
        )
        # the old key's upload is no longer named by any circuit (no job uses its version): removed
        assert set(stored(tmp_path / "state")) == {f"{sha(h8.r1cs)}.r1cs", f"{sha(other.key)}.zkey"}
    finally:
        e.shutdown(5)


def test_cli_register_upload_and_circuits(h8, capsys):
    from cuzk.cli.main import main

    with daemon(**{"registration.roots": []}) as (d, _c):
        assert main(["register", "cli-up", "--r1cs", h8.r1cs, "--zkey", h8.key, "--upload", "--addr", d.address]) == 0
        out = capsys.readouterr().out
        assert out.startswith("registered cli-up: bls12_381") and sha(h8.key)[:16] in out
        # without --upload the daemon is asked to open server-side paths (none allowed here): one line, exit 2
        assert main(["register", "cli-path", "--r1cs", h8.r1cs, "--zkey", h8.key, "--addr", d.address]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "PERMISSION_DENIED" in err and "registration.roots" in err
        assert main(["circuits", "--addr", d.address]) == 0
        assert "cli-up: bls12_381" in capsys.readouterr().out
        assert main(["register", "x", "--zkey", h8.key, "--addr", d.address]) == 2
        assert "--r1cs" in capsys.readouterr().err
    assert os.path.exists(h8.key)
