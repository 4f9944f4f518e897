"""Python circuits: the constraint-system API and its three systems, the recording cache, the boolean and
number gadgets, and a Python circuit proved through the CLI (verified by snarkjs) and the daemon."""

from __future__ import annotations

import json
import random
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from conftest import SNARKJS

from cuzk import curves
from cuzk.circuit import FieldArray, RecordingCS, SynthesisError, TestCS, WitnessCS
from cuzk.circuit.circuit import Circuit, CircuitError, CircuitSpec, check, record, recording_key, witness
from cuzk.circuit.gadgets import boolean, num
from cuzk.groth16 import formats, verifier

BLS = curves.get("bls12_381")
BN = curves.get("bn254")
CUBE = "cuzk.circuit.examples:Cube"


class Gadgets(Circuit):
    """One circuit exercising every boolean and number gadget on a batch of instances."""

    def __init__(self, batch: int = 4, curve: str = "bls12_381"):
        super().__init__(batch=batch, curve=curve)
        self.batch, self.curve = batch, curve

    def synthesize(self, cs, inputs):
        B = self.batch
        v = inputs or {}
        a = cs.alloc("a", v.get("a"), B)
        b = cs.alloc("b", v.get("b"), B)
        bits = boolean.alloc_bits(cs, "bits", v.get("bits"), (B, 3))
        with cs.namespace("logic"):
            x = boolean.xor(cs, "xor", bits[:, 0], bits[:, 1])
            y = boolean.and_(cs, "and", x, bits[:, 2])
            z = boolean.or_(cs, "or", y, bits[:, 0])
        with cs.namespace("numbers"):
            abits = boolean.to_bits(cs, "a bits", a, 40)
            a2 = boolean.from_bits(cs, "a again", abits)
            num.assert_equal(cs, "roundtrip", a2, a)
            sel = num.select(cs, "select", z, a, b)
            lo, hi = num.swap(cs, "swap", bits[:, 2], a, b)
            eq = num.is_equal(cs, "equal", a, b)
            lt = num.less_than(cs, "less", a, b, 40)
        out = cs.alloc_input("out", (lambda: cs.value(sel + lo * 3 - hi + eq * 5 + lt * 7)) if cs.has_values else None, B)
        cs.enforce("out", sel + lo * 3 - hi + eq * 5 + lt * 7, cs.one, out)


def gadget_inputs(rng: random.Random, B: int = 4):
    a = [rng.randrange(1 << 40) for _ in range(B)]
    b = [rng.randrange(1 << 40) for _ in range(B)]
    b[0] = a[0]  # an equal pair
    b[1] = a[1] + 1 if a[1] + 1 < 1 << 40 else a[1] - 1
    return {"a": a, "b": b, "bits": np.array([[rng.randrange(2) for _ in range(3)] for _ in range(B)], dtype=np.uint8)}


def expected_out(inp):
    out = []
    for i, (a, b) in enumerate(zip(inp["a"], inp["b"], strict=True)):
        b0, b1, b2 = (int(x) for x in inp["bits"][i])
        z = ((b0 ^ b1) & b2) | b0
        sel = a if z else b
        lo, hi = (b, a) if b2 else (a, b)
        out.append(sel + 3 * lo - hi + 5 * (a == b) + 7 * (a < b))
    return [o % BLS.r for o in out]


# ---------------------------------------------------------------------------------------------
# the API


def test_gadgets_satisfied_values_and_recording_agree():
    rng = random.Random(1)
    g = Gadgets()
    rec = record(g, cache=False)
    for _ in range(3):
        inp = gadget_inputs(rng)
        cs = TestCS(BLS)
        g.synthesize(cs, inp)
        assert cs.which_is_unsatisfied() is None
        assert cs.public_inputs() == expected_out(inp)
        w = witness(g, inp, rec.layout)
        assert np.array_equal(w, cs.witness())
        assert rec.pce.unsatisfied(w).size == 0
    assert rec.layout.n_inputs == 1 + 4 and rec.pce.n_constraints == rec.layout.n_constraints


def test_batch_equals_one_instance():
    rng = random.Random(2)
    inp = gadget_inputs(rng, 4)
    cs = TestCS(BLS)
    Gadgets(4).synthesize(cs, inp)
    for i in range(4):
        one = {"a": inp["a"][i : i + 1], "b": inp["b"][i : i + 1], "bits": inp["bits"][i : i + 1]}
        cs1 = TestCS(BLS)
        Gadgets(1).synthesize(cs1, one)
        assert cs1.public_inputs() == [cs.public_inputs()[i]]


@pytest.mark.parametrize(
    "path, named",
    [
        ("logic/xor", "logic/xor"),
        ("numbers/a bits", "numbers/a bits pack"),  # bits stay boolean: their packing fails
        ("numbers/select", "numbers/select"),
        ("numbers/equal", "numbers/equal"),
        ("numbers/less result", "numbers/less negate"),
    ],
)
def test_tampered_values_name_the_constraint(path, named):
    """A wrong value under a path: the first failing constraint is the one that checks it."""
    inp = gadget_inputs(random.Random(3))
    F = BLS.fr

    def flip(fa: FieldArray) -> FieldArray:
        arr = fa.mont.copy()
        idx = (1,) + (0,) * (arr.ndim - 2)
        one = F.one_mont()
        arr[idx] = F.sub(one.reshape(1, 4), arr[idx].reshape(1, 4)).reshape(4)  # v -> 1 - v
        return FieldArray(F, arr)

    cs = TestCS(BLS, tamper={path: flip})
    Gadgets().synthesize(cs, inp)
    assert path in cs.tampered
    msg = cs.which_is_unsatisfied()
    assert msg is not None and "[instance 1" in msg, msg
    assert f"({named}" in msg, msg


def test_unsatisfied_by_constraint_path_and_instance():
    class Bad(Circuit):
        def synthesize(self, cs, inputs):
            x = cs.alloc("x", [2, 3, 2] if inputs is not None else None, 3)
            with cs.namespace("outer"), cs.namespace("inner"):
                cs.enforce("square is 4", x, x, 4)

    assert check(Bad(), {}) == "constraint 1 (outer/inner/square is 4 [instance 1])"


def test_testcs_eval_equals_the_per_term_evaluation():
    """TestCS evaluates an LC with one gather, one multiplication and a tree of additions: the values equal
    WitnessCS's term-by-term evaluation and Python's integers (coefficients 0, 1, -1, p - 1, 2^200, repeated
    variables, broadcast codes, the constant ONE, a scalar shape; past EVAL_BATCH the per-term path)."""
    rng = random.Random(3)
    p = BLS.fr.p
    cs = TestCS(BLS)
    xs = [rng.randrange(p) for _ in range(6)]
    ys = [rng.randrange(p) for _ in range(3)]
    x = cs.alloc("x", [xs[:3], xs[3:]], (2, 3))
    y = cs.alloc_input("y", ys, (3,))
    z = cs.alloc("z", 7, ())
    cases = [
        (x * 3 + y * (p - 1) - x + 5, (2, 3)),
        (x[0] * 0 + y * (1 << 200) + z * -1 + x[1] + x[1], (3,)),
        (y[2] * 2 + z + cs.one * 9, ()),
        (x[:, :1] * rng.randrange(p) + x, (2, 3)),  # broadcast codes
        (x + 0, (2, 3)),  # one term (and the constant 0)
    ]
    X, Y = np.array(xs, dtype=object).reshape(2, 3), np.array(ys, dtype=object)
    want = [
        (3 * X + (p - 1) * Y - X + 5) % p,
        ((1 << 200) * Y - 7 + 2 * X[1]) % p,
        np.array((2 * ys[2] + 7 + 9) % p, dtype=object),
        None,
        X % p,
    ]
    for (lc, shape), w in zip(cases, want):
        fast = cs._eval(lc, shape)
        ref = WitnessCS._eval(cs, lc, shape)
        assert fast.shape == ref.shape == shape and np.array_equal(fast.flat(), ref.flat())
        if w is not None:
            assert [int(v) for v in np.asarray(fast.ints(), dtype=object).reshape(-1)] == [
                int(v) for v in np.asarray(w).reshape(-1)
            ]
    cs.EVAL_BATCH = 1  # the per-term path
    lc, shape = cases[0]
    assert np.array_equal(cs._eval(lc, shape).flat(), WitnessCS._eval(cs, lc, shape).flat())


def test_layout_mismatch_and_shape_errors():
    class Grows(Circuit):
        def __init__(self, n: int = 2):
            super().__init__(n=n)
            self.n = n

        def synthesize(self, cs, inputs):
            cs.alloc("x", 1 if inputs is not None else None, self.n)

    rec = record(Grows(2), cache=False)
    with pytest.raises(SynthesisError, match="recording"):
        witness(Grows(3), {}, rec.layout)
    cs = TestCS(BLS)
    x = cs.alloc("x", [1, 2], 2)
    with pytest.raises(SynthesisError, match="do not broadcast"):
        cs.enforce("bad", x, cs.alloc("y", [1, 2, 3], 3), 0)
    with pytest.raises(SynthesisError, match="no value"):
        WitnessCS(BLS).alloc("z", None, 2)


def test_range_check_refuses_big_values():
    cs = TestCS(BLS)
    x = cs.alloc("x", [5, 1 << 10])
    with pytest.raises(SynthesisError, match="does not fit 8 bits"):
        boolean.to_bits(cs, "x bits", x, 8)
    with pytest.raises(SynthesisError, match="not unique"):
        boolean.to_bits(cs, "x bits", x, 255)


def test_recording_merges_duplicate_terms_and_switches_agree(monkeypatch):
    class Dup(Circuit):
        def synthesize(self, cs, inputs):
            x = cs.alloc("x", 3 if inputs is not None else None)
            y = cs.alloc("y", 6 if inputs is not None else None)
            cs.enforce("x + x = y", x + x, cs.one, y)
            cs.enforce("x - x cancels", x - x + y, cs.one, y)

    results = []
    for storage in ("arrays", "dicts"):
        cs = RecordingCS(BLS, lc_storage=storage)
        Dup().synthesize(cs, None)
        pce = cs.finish()
        results.append(pce)
        # row 0 of A: one term, coefficient 2; row 1: only y
        assert pce.A.row_ptr.tolist() == [0, 1, 2]
        assert BLS.fr.to_ints(pce.A.vals) == [2, 1]
    a, b = results
    for m in "ABC":
        ma, mb = getattr(a, m), getattr(b, m)
        assert np.array_equal(ma.row_ptr, mb.row_ptr) and np.array_equal(ma.cols, mb.cols) and np.array_equal(ma.vals, mb.vals)
    for buf in ("presized", "growing"):
        monkeypatch.setenv("CUZK_WITNESS_BUFFER", buf)
        g = Gadgets()
        inp = gadget_inputs(random.Random(5))
        assert record(g, cache=False).pce.unsatisfied(witness(g, inp, record(g, cache=False).layout)).size == 0
    monkeypatch.setenv("CUZK_LC_STORAGE", "lists")
    with pytest.raises(Exception, match="CUZK_LC_STORAGE"):
        RecordingCS(BLS)


# ---------------------------------------------------------------------------------------------
# specs and the recording cache


MODULE = """
from cuzk.circuit.circuit import Circuit

class Chain(Circuit):
    def __init__(self, n=3):
        super().__init__(n=n)
        self.n = n

    def synthesize(self, cs, inputs):
        x = cs.alloc("x", inputs["x"] if inputs else None)
        for i in range(self.n):
            y = cs.alloc(f"y{i}", (lambda x=x: cs.value(x) * cs.value(x)) if cs.has_values else None)
            cs.enforce(f"step {i}", x, x, y)
            x = y
        {EXTRA}
"""


def test_recording_cache_keyed_by_source_and_params(tmp_path, monkeypatch):
    pkg = tmp_path / "mycircuits"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    src = pkg / "chain.py"
    src.write_text(textwrap.dedent(MODULE).replace("{EXTRA}", "pass"))
    monkeypatch.syspath_prepend(str(tmp_path))
    cache = tmp_path / "cache"
    spec = CircuitSpec.parse("mycircuits.chain:Chain", '{"n": 3}')
    first = record(spec.load(), cache)
    again = record(spec.load(), cache)
    assert not first.cached and again.cached and again.key == first.key
    assert again.layout == first.layout
    # other parameters: another recording
    other = record(CircuitSpec.parse("mycircuits.chain:Chain", {"n": 4}).load(), cache)
    assert other.key != first.key and other.layout.n_constraints == 4
    # the circuit edited (one more constraint): never the stale recording
    src.write_text(textwrap.dedent(MODULE).replace("{EXTRA}", 'cs.enforce("extra", x, cs.one, x)'))
    for m in [m for m in sys.modules if m.startswith("mycircuits")]:
        del sys.modules[m]
    edited = record(CircuitSpec.parse("mycircuits.chain:Chain", {"n": 3}).load(), cache)
    assert edited.key != first.key and not edited.cached and edited.layout.n_constraints == 4
    # a damaged cache file is recorded again
    (cache / f"{edited.key}.npz").write_bytes(b"garbage")
    assert not record(CircuitSpec.parse("mycircuits.chain:Chain", {"n": 3}).load(), cache).cached


def test_spec_errors():
    with pytest.raises(CircuitError, match="expected package.module:ClassName"):
        CircuitSpec.parse("nocolon").load()
    with pytest.raises(CircuitError, match="cannot import"):
        CircuitSpec.parse("no.such.module:X").load()
    with pytest.raises(CircuitError, match="not a cuzk.circuit.Circuit subclass"):
        CircuitSpec.parse("json:JSONDecoder").load()
    with pytest.raises(CircuitError, match="bad parameters"):
        CircuitSpec.parse(CUBE, {"sides": 3}).load()
    with pytest.raises(CircuitError, match="not valid JSON"):
        CircuitSpec.parse(CUBE, "{oops")
    assert recording_key(CircuitSpec.parse(CUBE).load()) != recording_key(CircuitSpec.parse(CUBE, {"curve": "bn254"}).load())


# ---------------------------------------------------------------------------------------------
# proofs: the CLI (snarkjs verifies) and the daemon


def run_cli(*args, cwd, env=None, check_rc=True):
    r = subprocess.run([sys.executable, "-m", "cuzk", *args], cwd=cwd, capture_output=True, text=True, env=env)
    if check_rc:
        assert r.returncode == 0, r.stderr
    return r


@pytest.mark.parametrize("curve", ["bls12_381", "bn254"])
def test_cli_python_circuit_proof_verified_by_snarkjs(tmp_path, curve, monkeypatch):
    import os

    env = dict(os.environ, CUZK_CACHE_DIR=str(tmp_path / "cache"))
    params = json.dumps({"curve": curve})
    (tmp_path / "in.json").write_text('{"x": "12345678901234567890"}')
    run_cli("setup", CUBE, "--circuit-params", params, "-o", "cube.zkey", "--r1cs-out", "cube.r1cs", cwd=tmp_path, env=env)
    run_cli(
        "prove", "cube.zkey", "in.json", "proof.json", "public.json", "--circuit", CUBE, "--circuit-params", params,
        "--wtns-out", "w.wtns", cwd=tmp_path, env=env,
    )  # fmt: skip
    x = 12345678901234567890
    assert json.loads((tmp_path / "public.json").read_text()) == [str((x**3 + x + 5) % curves.get(curve).r)]
    assert run_cli("verify", "verification_key.json", "public.json", "proof.json", cwd=tmp_path, env=env).stdout.strip() == "OK"
    subprocess.run(
        [SNARKJS, "zkey", "export", "verificationkey", "cube.zkey", "vk_snarkjs.json"],
        cwd=tmp_path,
        check=True,
        capture_output=True,
    )
    r = subprocess.run(
        [SNARKJS, "groth16", "verify", "vk_snarkjs.json", "public.json", "proof.json"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0 and "OK" in r.stdout, r.stdout + r.stderr
    r = subprocess.run([SNARKJS, "wtns", "check", "cube.r1cs", "w.wtns"], cwd=tmp_path, capture_output=True, text=True)
    assert r.returncode == 0 and "WITNESS IS CORRECT" in r.stdout, r.stdout
    ok = run_cli("check", CUBE, "in.json", "--circuit-params", params, cwd=tmp_path, env=env)
    assert ok.stdout.startswith("OK: all 3 constraints")
    (tmp_path / "bad.json").write_text('{"x": [1]}')
    bad = run_cli("check", CUBE, "bad.json", "--circuit-params", params, cwd=tmp_path, env=env, check_rc=False)
    assert (
        bad.returncode == 2
        and bad.stderr.strip() == "cuzk: error: inputs.x: expected an integer or a decimal/hex string, got list"
    )


def test_daemon_python_circuit(tmp_path, monkeypatch):
    """Registered from the config file and by RPC; proved from inputs JSON; a 3-partition circuit in one
    request; bad inputs refused at submission with a one-line message."""
    from test_daemon import daemon

    from cuzk.circuit import examples
    from cuzk.groth16 import setup, zkey
    from cuzk.server.client import DaemonError

    monkeypatch.setenv("CUZK_CACHE_DIR", str(tmp_path / "cache"))
    rec = record(examples.Cube())
    pk = setup.setup(rec.pce, quiet=True)
    zk = tmp_path / "cube.zkey"
    zkey.write_zkey(zk, pk)
    with daemon() as (d, c):
        info = c.register("cube", python=CUBE, zkey=str(zk))
        assert info["n_constraints"] == 3 and info["python"] == CUBE and info["n_public"] == 1
        res = c.prove("cube", inputs={"x": 3})
        assert res.public[0] == [35]
        proof = formats.Proof.from_bytes(res.proofs[0], BLS)
        assert verifier.verify(pk.vk, [35], proof)
        # three partitions, one request, one inputs array
        c.register("cube3", python=CUBE, python_params={"partitions": 3}, zkey=str(zk))
        assert next(ci for ci in c.list_circuits() if ci["id"] == "cube3")["partitions"] == 3
        res = c.prove("cube3", inputs=[{"x": 1}, {"x": 2}, {"x": 4}])
        assert [p[0] for p in res.public] == [7, 15, 73]
        for i in range(3):
            assert verifier.verify(pk.vk, res.public[i], formats.Proof.from_bytes(res.proofs[i], BLS))
        with pytest.raises(DaemonError, match=r"inputs_json: inputs.x: 'seven' is not an integer"):
            c.prove("cube", inputs={"x": "seven"})
        with pytest.raises(DaemonError, match="make 2 partition"):
            c.prove("cube3", inputs=[{"x": 1}, {"x": 2}])
        with pytest.raises(DaemonError, match="python: circuit spec 'cuzk.circuit.examples:Nope'"):
            c.register("nope", python="cuzk.circuit.examples:Nope", zkey=str(zk))
        with pytest.raises(DaemonError, match="exactly one circuit"):
            c.register("both", r1cs=str(zk), python=CUBE, zkey=str(zk))


def test_config_file_python_circuit(tmp_path, monkeypatch):
    from test_daemon import daemon

    from cuzk.circuit import examples
    from cuzk.groth16 import setup, zkey

    monkeypatch.setenv("CUZK_CACHE_DIR", str(tmp_path / "cache"))
    pce = record(examples.Cube(curve="bn254")).pce
    pk = setup.setup(pce, quiet=True)
    zk = tmp_path / "cube.zkey"
    zkey.write_zkey(zk, pk)
    toml = tmp_path / "d.toml"
    toml.write_text(f'[[circuits]]\nid = "cube-bn"\npython = "{CUBE}"\nzkey = "{zk}"\npython_params = {{ curve = "bn254" }}\n')
    with daemon(str(toml)) as (d, c):
        info = next(ci for ci in c.list_circuits() if ci["id"] == "cube-bn")
        assert info["curve"] == "bn254" and info["python_params"] == {"curve": "bn254"}
        res = c.prove("cube-bn", inputs={"x": 5})
        assert res.public[0] == [135]
        assert verifier.verify(pk.vk, [135], formats.Proof.from_bytes(res.proofs[0], BN))


# ---------------------------------------------------------------------------------------------
# the example circuits and the synthesis benchmark


MERKLE = "cuzk.circuit.examples:MerkleInclusion"


@pytest.mark.parametrize("params", [{"depth": 2, "challenges": 3}, {"depth": 2, "challenges": 2, "arity": 4}])
def test_poseidon_merkle_inclusion(params, tmp_path):
    c = CircuitSpec.parse(MERKLE, params).load()
    rec = record(c, tmp_path)
    raw = json.loads(json.dumps(c.sample_inputs(7)))  # through JSON, as a request brings it
    assert check(c, raw) is None
    w = witness(c, raw, rec.layout)
    assert rec.pce.unsatisfied(w).size == 0
    assert BLS.fr.to_ints(w[1:2]) == [int(raw["root"])]
    # a wrong sibling: the recomputed root differs, and the root check of that challenge fails
    raw["challenges"][1]["path"][1][0] = "5"
    assert check(c, raw).endswith("(root [instance 1])")
    # a wrong index (another leaf position): the path no longer leads to the root
    raw = c.sample_inputs(7)
    raw["challenges"][0]["index"] = (raw["challenges"][0]["index"] + 1) % (c.arity**c.depth)
    assert check(c, raw).endswith("(root [instance 0])")
    with pytest.raises(CircuitError, match=r"inputs.challenges\[0\].path: expected 2 levels"):
        c.parse_inputs({"root": 1, "challenges": [{"index": 0, "leaf": 1, "path": []}] * c.challenges})


def test_bench_synth_reports(tmp_path, monkeypatch, capsys):
    from cuzk.bench.main import main

    monkeypatch.setenv("CUZK_CACHE_DIR", str(tmp_path))
    out = tmp_path / "synth.json"
    params = '{"depth": 2, "challenges": 4}'
    assert main(["synth", MERKLE, "--circuit-params", params, "--repeat", "2", "--record", "-q", "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "M/s per core" in text and "recorded (lc_storage=arrays)" in text
    r = json.loads(out.read_text())
    assert r["constraints"] == record(CircuitSpec.parse(MERKLE, params).load()).layout.n_constraints
    assert len(r["witness_ms"]["runs"]) == 2 and r["constraints_per_s_per_core"] > 0 and r["peak_python_alloc_mib"] > 0
    assert (
        main(["synth", MERKLE, "--circuit-params", params, "--repeat", "1", "-q", "--witness-buffer", "growing", "--no-trace"])
        == 0
    )
    assert "loaded from the cache" in capsys.readouterr().out


def test_daemon_python_witness_processes(tmp_path, monkeypatch):
    """synthesis.python_processes: the witnesses come from worker processes, and equal the in-thread ones."""
    from test_daemon import daemon

    from cuzk.circuit import examples
    from cuzk.groth16 import setup, zkey

    monkeypatch.setenv("CUZK_CACHE_DIR", str(tmp_path / "cache"))
    circuit = examples.MerkleInclusion(depth=2, challenges=2)
    pk = setup.setup(record(circuit).pce, quiet=True)
    zk = tmp_path / "merkle.zkey"
    zkey.write_zkey(zk, pk)
    params = {"depth": 2, "challenges": 2}
    inputs = [circuit.sample_inputs(s) for s in range(3)]
    with daemon(**{"synthesis.python_processes": 2}) as (d, c):
        c.register("merkle", python=MERKLE, python_params=params, zkey=str(zk))
        results = [c.prove("merkle", inputs=x) for x in inputs]
        pool = d.engine.circuit("merkle")._pool
        assert pool is not None and pool.processes == 2  # the witnesses were made by the pool
    for x, res in zip(inputs, results, strict=True):
        want = [int(x["root"])] + [ch["index"] for ch in x["challenges"]]
        assert res.public[0] == want
        assert verifier.verify(pk.vk, want, formats.Proof.from_bytes(res.proofs[0], BLS))
    bad = json.loads(json.dumps(inputs[0]))
    bad["challenges"][0]["leaf"] = "7"
    # a wrong leaf: the engine's constraint check (always on the CPU backend) names the root check
    with daemon(**{"synthesis.python_processes": 1}) as (d, c):
        c.register("merkle", python=MERKLE, python_params=params, zkey=str(zk))
        res = c.prove("merkle", inputs=bad, check=False)
        assert res.status == "FAILED" and "(root [instance 0])" in res.error, res.error
