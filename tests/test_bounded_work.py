"""Bounded work per request (issue 19 item 6): a wasm witness calculation has a deadline (wasmtime epoch
interruption), file headers' counts are checked against the file's size before any allocation, JSON
inputs have depth and number-length limits, and the CLI refuses directories, FIFOs and negative
timeouts in one line."""

from __future__ import annotations

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


def test_looping_circuit_fails_its_job_another_circuit_completes(tmp_path):
    """One synthesis worker: the looping circuit's job fails at its 2s deadline and the worker goes on
    to prove the other circuit's job."""
    import json

    from cuzk.engine.config import load_config
    from cuzk.groth16 import formats, verifier
    from cuzk.server.client import Client
    from cuzk.server.daemon import Daemon

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
witness_timeout = "2s"
[[circuits]]
id = "example"
r1cs = "{EX / "circuit.r1cs"}"
zkey = "{EX / "circuit.zkey"}"
wasm = "{EX / "circuit.wasm"}"
""")
    inputs = json.loads((EX / "input.json").read_text())
    d = Daemon(load_config(cfg)).start()
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
