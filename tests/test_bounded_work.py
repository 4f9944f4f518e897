"""Bounded work per request (issue 19 item 6): a wasm witness calculation has a deadline (wasmtime epoch
interruption), file headers' counts are checked against the file's size before any allocation, JSON
inputs have depth and number-length limits, and the CLI refuses directories, FIFOs and negative
timeouts in one line."""

from __future__ import annotations

import os
import time

import pytest
import wasmtime
from conftest import fixture_dir

from cuzk import CuzkError
from cuzk.r1cs.witness import WitnessCalculator, witness_deadline

EX = fixture_dir("bls12_381")
_R = 0x73EDA753299D7D483339D80809A1D80553BDA402FFFE5BFEFFFFFFFF00000001


def looping_wasm(n_wires: int = 155, n_inputs: int = 7) -> bytes:
    """A minimal circom-2-shaped witness generator (the exports WitnessCalculator checks) over
    BLS12-381 whose ``init`` loops forever."""
    prime = "".join(f"\\{b:02x}" for b in _R.to_bytes(32, "little"))
    i32 = "(result i32)"
    wat = f"""
(module
  (import "runtime" "exceptionHandler" (func (param i32)))
  (memory (export "memory") 1)
  (data (i32.const 0) "{prime}")
  (func (export "getVersion") {i32} (i32.const 2))
  (func (export "getMinorVersion") {i32} (i32.const 1))
  (func (export "getPatchVersion") {i32} (i32.const 0))
  (func (export "getFieldNumLen32") {i32} (i32.const 8))
  (func (export "getRawPrime"))
  (func (export "readSharedRWMemory") (param i32) {i32} (i32.const 0))
  (func (export "writeSharedRWMemory") (param i32 i32))
  (func (export "getSharedRWMemoryStart") {i32} (i32.const 0))
  (func (export "init") (param i32) (loop $l (br $l)))
  (func (export "setInputSignal") (param i32 i32 i32))
  (func (export "getInputSize") {i32} (i32.const {n_inputs}))
  (func (export "getWitnessSize") {i32} (i32.const {n_wires}))
  (func (export "getWitness") (param i32))
  (func (export "getMessageChar") {i32} (i32.const 0))
)"""
    return wasmtime.wat2wasm(wat)


def test_looping_wasm_stops_at_its_deadline():
    calc = WitnessCalculator(looping_wasm(), cache_dir=False, timeout=0.5)
    t0 = time.monotonic()
    with pytest.raises(CuzkError, match=r"^witness: the circuit's wasm ran past its 500ms deadline$"):
        calc.calculate({})
    assert time.monotonic() - t0 < 3
    with witness_deadline(0.2), pytest.raises(CuzkError, match="past its 200ms deadline"):
        calc.calculate({})
    # a real circuit is not disturbed by the epoch ticking
    import json

    good = WitnessCalculator(EX / "circuit.wasm", timeout=5)
    assert good.calculate(json.loads((EX / "input.json").read_text())).shape[0] == good.n_wires


def loop_and_example_config(tmp_path, witness_timeout: str):
    """A daemon config (CPU backend, one synthesis worker) with the looping circuit "loop" under
    ``witness_timeout`` and the real example circuit "example"."""
    from cuzk.engine.config import load_config

    (tmp_path / "loop.wasm").write_bytes(looping_wasm())
    cfg = tmp_path / "cuzk.toml"
    cfg.write_text(f"""
[daemon]
state_dir = "{tmp_path / "state"}"
listen = "unix://{tmp_path / "d.sock"}"
[gpus]
backend = "cpu"
[synthesis]
partition_workers = 1
[[circuits]]
id = "loop"
r1cs = "{EX / "circuit.r1cs"}"
zkey = "{EX / "circuit.zkey"}"
wasm = "{tmp_path / "loop.wasm"}"
witness_timeout = "{witness_timeout}"
[[circuits]]
id = "example"
r1cs = "{EX / "circuit.r1cs"}"
zkey = "{EX / "circuit.zkey"}"
wasm = "{EX / "circuit.wasm"}"
""")
    return load_config(cfg)


def test_stop_callback_interrupts_a_running_calculation():
    import threading

    calc = WitnessCalculator(looping_wasm(), cache_dir=False, timeout=60)
    flag = threading.Event()
    threading.Timer(0.3, flag.set).start()
    t0 = time.monotonic()
    with witness_deadline(60, flag.is_set), pytest.raises(CuzkError, match=r"^witness: stopped \(the job was cancelled\)$"):
        calc.calculate({})
    assert 0.25 < time.monotonic() - t0 < 5
    # the next calculation on the same calculator has its full deadline again
    with witness_deadline(0.3), pytest.raises(CuzkError, match="past its 300ms deadline"):
        calc.calculate({})


def test_cancelling_a_looping_job_frees_its_worker(tmp_path):
    """One synthesis worker, a 60 s witness deadline: cancelling the looping job stops its calculation
    at once and the other circuit's job is proved long before the deadline."""
    import json

    from cuzk.server.client import Client
    from cuzk.server.daemon import Daemon

    inputs = json.loads((EX / "input.json").read_text())
    d = Daemon(loop_and_example_config(tmp_path, "60s")).start()
    try:
        with Client(d.address) as c:
            bad = c.submit("loop", inputs=inputs)
            good = c.submit("example", inputs=inputs)
            time.sleep(1.0)  # the looping job, first in, holds the one synthesis worker by now
            t0 = time.monotonic()
            assert c.cancel(bad.job_id)["was_running"]
            ok = c.await_proof(good.job_id, timeout_ms=50_000)
            assert ok.status == "COMPLETED", ok.error
            assert time.monotonic() - t0 < 30  # not held until the 60 s deadline
            assert c.await_proof(bad.job_id, timeout_ms=10_000).status == "CANCELLED"
    finally:
        d.stop(10)


def test_looping_circuit_fails_its_job_another_circuit_completes(tmp_path):
    """One synthesis worker: the looping circuit's job fails at its 2s deadline and the worker goes on
    to prove the other circuit's job."""
    import json

    from cuzk.groth16 import formats, verifier
    from cuzk.server.client import Client
    from cuzk.server.daemon import Daemon

    inputs = json.loads((EX / "input.json").read_text())
    d = Daemon(loop_and_example_config(tmp_path, "2s")).start()
    try:
        with Client(d.address) as c:
            t0 = time.monotonic()
            bad = c.submit("loop", inputs=inputs)
            good = c.submit("example", inputs=inputs)
            res = c.await_proof(bad.job_id, timeout_ms=30_000)
            assert res.status == "FAILED", res
            assert "witness: the circuit's wasm ran past its 2s deadline" in res.error, res.error
            ok = c.await_proof(good.job_id, timeout_ms=60_000)
            assert ok.status == "COMPLETED", ok.error
            assert time.monotonic() - t0 < 60
            vk = formats.read_vk_json(EX / "verification_key.json")
            assert verifier.verify(vk, ok.public[0], formats.Proof.from_bytes(ok.proofs[0], vk.curve))
    finally:
        d.stop(10)


def _zkey_with_domain(log_domain: int) -> bytes:
    """The example zkey with its groth16 header's domainSize replaced (the file stays small)."""
    from cuzk.r1cs.binfile import parse_binfile

    data = bytearray((EX / "circuit.zkey").read_bytes())
    bf = parse_binfile(bytes(data), "x", "zkey", (1,))
    off, _size = bf.sections[2][0]
    n8q = int.from_bytes(data[off : off + 4], "little")
    pos = off + 4 + n8q
    n8r = int.from_bytes(data[pos : pos + 4], "little")
    pos += 4 + n8r + 8  # nVars, nPublic
    data[pos : pos + 4] = (1 << log_domain).to_bytes(4, "little")
    return bytes(data)


def test_zkey_header_counts_checked_before_allocation(tmp_path):
    import tracemalloc

    from cuzk.groth16.zkey import read_zkey

    p = tmp_path / "big.zkey"
    p.write_bytes(_zkey_with_domain(31))
    tracemalloc.start()
    try:
        with pytest.raises(CuzkError, match=r"claims 2\^31 constraints .* but the file has \d+ bytes$"):
            read_zkey(p)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 16 << 20, peak


def test_r1cs_header_constraint_count_checked(tmp_path):
    from cuzk.r1cs.binfile import parse_binfile
    from cuzk.r1cs.r1cs import read_r1cs

    data = bytearray((EX / "circuit.r1cs").read_bytes())
    off, size = parse_binfile(bytes(data), "x", "r1cs", (1,)).sections[1][0]
    data[off + size - 4 : off + size] = (1 << 31).to_bytes(4, "little")  # nConstraints is the header's last u32
    (tmp_path / "big.r1cs").write_bytes(data)
    with pytest.raises(CuzkError, match=r"claims 2147483648 constraints but the file has \d+ bytes$"):
        read_r1cs(tmp_path / "big.r1cs")


@pytest.mark.parametrize(
    "text,msg",
    [
        ("[" * 100 + "]" * 100, "nested 100 levels deep, at most 64"),
        ('{"a": ' + "9" * 5000 + "}", "a number of 5000 characters, at most 100 digits"),
        ('{"a": "' + "9" * 5000 + '"}', "a number of 5000 characters"),
        ('{"a": ["0x' + "f" * 200 + '"]}', "a number of 202 characters"),
        ('{"a": 1e' + "9" * 200 + "}", "a number of 202 characters"),
        ("[" * 100_000, "nested 100000 levels deep"),
    ],
)
def test_json_inputs_depth_and_number_limits(text, msg):
    from cuzk.engine.engine import Engine
    from cuzk.engine.errors import InvalidArgument

    with pytest.raises(InvalidArgument, match=msg):
        Engine._json(text.encode(), "inputs_json")
    ok = Engine._json(b'{"a": ["3", 5, "0x' + b"f" * 64 + b'"], "b": {"c": [[1]]}}', "inputs_json")
    assert ok["a"][1] == 5


def test_cli_directory_fifo_and_negative_timeout_one_line(tmp_path, capsys):
    from cuzk.cli.main import main

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    pub, proof = str(EX / "public.json"), str(EX / "proof.json")
    cases = [
        (["verify", str(tmp_path), pub, proof], "Is a directory"),
        (["verify", str(fifo), pub, proof], "not a regular file (a FIFO)"),
        (["prove", str(tmp_path), str(EX / "witness.wtns"), str(tmp_path / "p"), str(tmp_path / "q")], "Is a directory"),
        (["await", "job", "--timeout-ms", "-5"], "--timeout-ms: -5 is negative"),
    ]
    for argv, msg in cases:
        t0 = time.monotonic()
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert msg in err and err.count("\n") == 1 and "Traceback" not in err, err
        assert time.monotonic() - t0 < 10
