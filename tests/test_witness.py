"""cuzk.r1cs.witness (circom wasm on wasmtime) and cuzk.r1cs.sym, checked against snarkjs.

The test circuit tests/circuits/witness_test.circom is compiled once per session and curve with the
pinned circom (node_modules/.bin/circom2; ``--prime bls12381`` and circom's default ``bn128``), so every
test that uses the compiled circuit runs on both curves (the fixture ``C``); the reference witnesses come
from ``snarkjs wtns calculate``. Both tools are part of the test environment (``npm ci``), so their
absence is a failure, not a skip.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
import wasmtime
from conftest import BLS, BN254, CIRCOM, CURVES, ROOT, SNARKJS
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cuzk import CuzkError
from cuzk.r1cs import witness as wmod
from cuzk.r1cs.binfile import FormatError
from cuzk.r1cs.sym import iter_sym, read_sym
from cuzk.r1cs.witness import (
    InputError,
    WitnessCalculator,
    WitnessError,
    flatten_inputs,
    fnv1a64,
    load_inputs_json,
)
from cuzk.r1cs.wtns import parse_wtns, read_witness, read_wtns

REPO = ROOT
CIRCUIT = REPO / "tests" / "circuits" / "witness_test.circom"


def _tool(path: Path) -> str:
    if not path.exists():
        pytest.fail(f"{path} is missing: run `npm ci` in {REPO} (node and circom2/snarkjs are required)")
    if shutil.which("node") is None:
        pytest.fail("node is not on PATH; the witness tests need it for circom2 and snarkjs")
    return str(path)


def _compile(out: Path, prime: str) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(
        [_tool(CIRCOM), str(CIRCUIT), "--wasm", "--r1cs", "--sym", "--prime", prime, "-o", str(out)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    if proc.returncode != 0:
        pytest.fail(f"circom2 failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return out


@pytest.fixture(scope="session", params=CURVES, ids=lambda c: c.name)
def C(request):
    """The curve the test circuit is compiled for (every test using the build runs on each)."""
    return request.param


@pytest.fixture(scope="session")
def build(C, tmp_path_factory) -> Path:
    return _compile(tmp_path_factory.mktemp(f"witness_{C.name}"), C.circom_prime)


@pytest.fixture(scope="session")
def wasm(build) -> Path:
    return build / "witness_test_js" / "witness_test.wasm"


@pytest.fixture(scope="session")
def sym(build) -> Path:
    return build / "witness_test.sym"


@pytest.fixture(scope="session")
def cache(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("wasm_cache")


@pytest.fixture(scope="session")
def calc(wasm, cache) -> WitnessCalculator:
    return WitnessCalculator(wasm, cache_dir=cache)


@pytest.fixture(scope="session")
def slow_calc(wasm, cache) -> WitnessCalculator:
    return WitnessCalculator(wasm, cache_dir=cache, fast=False)


# ---------------------------------------------------------------------------------------------
# inputs; the matching flat-key forms are what snarkjs needs (it does not qualify nested objects)


def _nested(R, x=3, arr=((1, 2, 3), (4, 5, 6)), p=(2, 7), q=((5, 6), (8, 9)), s=((1, 2), (3, 4), (10, 11)), sum_=None):
    return {
        "x": x,
        "arr": [list(r) for r in arr],
        "p": {"x": p[0], "y": p[1]},
        "q": [{"x": a, "y": b} for a, b in q],
        "s": {"a": {"x": s[0][0], "y": s[0][1]}, "b": {"x": s[1][0], "y": s[1][1]}, "w": list(s[2])},
        "sum": sum_ if sum_ is not None else str((_int(x) + _int(p[1])) % R),
    }


def _int(v) -> int:
    if isinstance(v, str):
        s = v.strip()
        neg = s.startswith("-")
        body = s[1:] if neg or s.startswith("+") else s
        n = int(body, 16) if body[:2].lower() == "0x" else int(body)
        return -n if neg else n
    return int(v)


def _flat_for_snarkjs(inp: dict, R: int) -> dict:
    """Flat keys, numbers as decimal strings (exact in JS); hex strings stay as given, except
    negative hex, which JS BigInt rejects (we accept it)."""

    def js(v):
        if isinstance(v, list):
            return [js(x) for x in v]
        if isinstance(v, str) and not v.strip().startswith("-0x"):
            return v
        return str(_int(v))

    return {name: js(_unflatten_value(inp, name)) for name, _ in flatten_inputs(inp, R)}


def _unflatten_value(inp: dict, name: str):
    """The raw value a qualified name ("q[1].y") refers to inside the nested input."""
    cur = inp
    for part in name.replace("[", ".[").split("."):
        if part.startswith("["):
            cur = cur[int(part[1:-1])]
        elif part:
            cur = cur[part]
    return cur


def make_cases(R: int) -> dict[str, dict]:
    """The input cases for the field of order R (the circuit asserts sum = x + p.y mod R)."""
    return {
        "small": _nested(R),
        "negative_and_hex": _nested(
            R,
            x="-5",
            arr=(("0x10", "0xffffffffffffffffffff", -3), (4, "-0x2a", 6)),
            p=("0x" + "ab" * 20, "-1"),
            q=((-7, "12345678901234567890123456789"), (8, 9)),
        ),
        "big_and_reduced": _nested(
            R,
            x=str(R - 1),
            arr=((R + 5, str(2 * R + 1), 2**255 - 19), (0, 1, R - 2)),
            p=(str(R), 2**128),
            s=((R - 1, R - 2), (2**64 + 1, 2**200), ("0", "7")),
        ),
        "zeros": _nested(R, x=0, arr=((0, 0, 0), (0, 0, 0)), p=(0, 0), q=((0, 0), (0, 0)), s=((0, 0), (0, 0), (0, 0))),
    }


CASE_NAMES = sorted(make_cases(BLS.r))


@pytest.fixture(scope="session")
def cases(C) -> dict[str, dict]:
    return make_cases(C.r)


@pytest.fixture(scope="session")
def reference(C, cases, wasm, tmp_path_factory):
    """name -> the .wtns bytes snarkjs writes for cases[name]."""
    d = tmp_path_factory.mktemp(f"snarkjs_{C.name}")
    out = {}
    for name, inp in cases.items():
        ij, wt = d / f"{name}.json", d / f"{name}.wtns"
        ij.write_text(json.dumps(_flat_for_snarkjs(inp, C.r)))
        proc = subprocess.run(
            [_tool(SNARKJS), "wtns", "calculate", str(wasm), str(ij), str(wt)],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=300,
        )
        if proc.returncode != 0 or not wt.exists():
            pytest.fail(f"snarkjs wtns calculate failed for {name}:\n{proc.stdout}\n{proc.stderr}")
        out[name] = wt.read_bytes()
    return out


# ---------------------------------------------------------------------------------------------
# agreement with snarkjs


@pytest.mark.parametrize("case", CASE_NAMES)
@pytest.mark.parametrize("fast", [True, False], ids=["helper", "per-wire"])
def test_wtns_matches_snarkjs(case, fast, calc, slow_calc, reference, cases):
    c = calc if fast else slow_calc
    assert c.calculate_wtns_bytes(cases[case]) == reference[case]


def test_flat_keys_give_the_same_witness(C, calc, reference, cases):
    flat = _flat_for_snarkjs(cases["negative_and_hex"], C.r)
    assert "q[1].y" in flat and "s.b.x" in flat and "arr" in flat
    assert calc.calculate_wtns_bytes(flat) == reference["negative_and_hex"]


def test_whole_bus_and_flat_arrays(calc, reference, cases):
    """A bus given as one flat array, and a 2-D array given flattened, are the same signals."""
    inp = cases["small"]
    alt = {k: v for k, v in inp.items() if k not in ("p", "arr")}
    alt["p"] = [inp["p"]["x"], inp["p"]["y"]]
    alt["arr"] = [v for row in inp["arr"] for v in row]
    assert calc.calculate_wtns_bytes(alt) == reference["small"]


def test_calculate_is_montgomery_and_matches_read_wtns(C, calc, reference, tmp_path, cases):
    fr = C.fr
    assert calc.curve == C  # from the wasm's prime
    w = calc.calculate(cases["big_and_reduced"])
    assert w.dtype == np.uint64 and w.shape == (calc.n_wires, 4)
    ref = parse_wtns(reference["big_and_reduced"])
    assert np.array_equal(w, ref)
    canon = calc.calculate_canonical(cases["big_and_reduced"])
    assert np.array_equal(fr.to_mont(canon), w)
    assert fr.to_ints(w[:1]) == [1]
    p = tmp_path / "w.wtns"
    p.write_bytes(calc.calculate_wtns_bytes(cases["big_and_reduced"]))
    assert np.array_equal(read_wtns(p, expected_wires=calc.n_wires, curve=C), w)
    assert read_witness(p).curve == C


def test_many_chunks(calc, slow_calc, reference, monkeypatch, cases):
    """Tiny helper chunks: the witness and the 6-element input go through several helper calls."""
    monkeypatch.setattr(wmod, "_CHUNK", 4)
    fresh = WitnessCalculator(calc.path, cache_dir=False)
    assert fresh.calculate_wtns_bytes(cases["negative_and_hex"]) == reference["negative_and_hex"]


def test_reusable_across_calls_and_errors(calc, reference, cases):
    bad = dict(cases["small"], sum=12345)
    for _ in range(3):
        for case in ("small", "negative_and_hex"):
            assert calc.calculate_wtns_bytes(cases[case]) == reference[case]
            assert calc.calculate_wtns_bytes(cases[case], sanity_check=True) == reference[case]
        with pytest.raises(WitnessError):
            calc.calculate(bad)
        with pytest.raises(InputError):
            calc.calculate(dict(cases["small"], nope=1))


def test_metadata(C, calc, wasm, cache, cases):
    assert calc.curve == C
    assert calc.n_wires == 33  # circom: "wires: 33"
    assert calc.n_inputs == 20  # circom: "private inputs: 20"
    assert calc.version[0] == 2
    assert calc.name == str(wasm)
    from_bytes = WitnessCalculator(wasm.read_bytes(), cache_dir=cache)
    assert from_bytes.name == "<wasm>"
    assert from_bytes.calculate_wtns_bytes(cases["small"]) == calc.calculate_wtns_bytes(cases["small"])


def test_log_lines(C, wasm, cache, cases):
    lines = []
    c = WitnessCalculator(wasm, cache_dir=cache, log=lines.append)
    w = C.fr.to_ints(c.calculate(cases["small"]))
    assert lines == [f"out {w[1]}"]  # wire 1 is main.out
    assert c.logs == lines


def test_input_wires_hold_the_inputs(C, calc, sym, cases):
    """Via the .sym file: each input signal's wire carries the (reduced) value that was given."""
    inp = cases["negative_and_hex"]
    w = C.fr.to_ints(calc.calculate(inp))
    names = read_sym(sym)
    checked = 0
    for name, vals in flatten_inputs(inp, C.r):
        # main.x, or main.arr[i][j] / main.s.w[i] in row-major (= wire) order
        pat = re.compile(re.escape(f"main.{name}") + r"(\[\d+\])*")
        wires = sorted(k for k, v in names.items() if pat.fullmatch(v))
        assert len(wires) == len(vals), name
        assert [w[k] for k in wires] == vals, name
        checked += len(vals)
    assert checked == calc.n_inputs


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(vals=st.lists(st.integers(min_value=-(2**300), max_value=2**300), min_size=19, max_size=19))
def test_random_inputs_fast_equals_per_wire(C, calc, slow_calc, vals):
    R, fr = C.r, C.fr
    it = iter(vals)
    inp = _nested(
        R,
        x=next(it),
        arr=((next(it), next(it), next(it)), (next(it), next(it), next(it))),
        p=(next(it), next(it)),
        q=((next(it), next(it)), (next(it), next(it))),
        s=((next(it), next(it)), (next(it), next(it)), (next(it), next(it))),
    )
    a = calc.calculate_canonical(inp)
    assert np.array_equal(a, slow_calc.calculate_canonical(inp))
    w = fr.to_ints(fr.to_mont(a))
    x, py, qx0, qy0, qx1, qy1 = (v % R for v in (vals[0], vals[8], vals[9], vals[10], vals[11], vals[12]))
    sax, say, sbx, sby, sw0, sw1 = (v % R for v in vals[13:19])
    px = vals[7] % R
    assert w[1] == (px * qy1 * sbx + say * sby + qy0 * qx1 + sax * sw0 + sw1 + qx0) % R  # main.out
    assert w[22] == (x + py) % R  # main.sum


# ---------------------------------------------------------------------------------------------
# errors: one-line CuzkError messages naming the file and the signal


def _err(exc_type, calc, inp) -> str:
    with pytest.raises(exc_type) as ei:
        calc.calculate(inp)
    msg = str(ei.value)
    assert "\n" not in msg
    assert isinstance(ei.value, CuzkError)
    return msg


def test_unknown_signal(calc, cases):
    msg = _err(InputError, calc, dict(cases["small"], bogus=1))
    assert "'bogus'" in msg and "not an input signal" in msg and calc.name in msg
    msg = _err(InputError, calc, {"main.x": 1, **{k: v for k, v in cases["small"].items() if k != "x"}})
    assert "'main.x'" in msg and "drop the 'main.' prefix" in msg
    msg = _err(InputError, calc, dict(cases["small"], q=[{"x": 1, "y": 2, "z": 3}, {"x": 1, "y": 2}]))
    assert "'q[0].z'" in msg and "not an input signal" in msg
    # parts of arrays and sub-buses are not input signals of their own
    for part, whole in (("arr[0]", "arr"), ("q[0]", "q"), ("s.a", "s"), ("s.w[1]", "s")):
        inp = {k: v for k, v in cases["small"].items() if k != whole}
        msg = _err(InputError, calc, dict(inp, **{part: 1}))
        assert f"'{part}' is not an input signal" in msg and "give an array input whole" in msg


@pytest.mark.parametrize("fast", [True, False], ids=["helper", "per-wire"])
def test_missing_input(calc, slow_calc, fast, cases):
    c = calc if fast else slow_calc
    inp = {k: v for k, v in cases["small"].items() if k != "q"}
    msg = _err(InputError, c, inp)
    assert "inputs set 16 of 20" in msg and "4 input values missing" in msg
    # the .sym next to the build lets us name them
    assert "'q[0].x', 'q[0].y', 'q[1].x', 'q[1].y'" in msg
    inp = dict(cases["small"], s={"a": {"x": 1, "y": 2}, "w": [1, 2]})
    msg = _err(InputError, c, inp)
    assert "inputs set 18 of 20" in msg and "'s.b.x', 's.b.y'" in msg and "'s.a.x'" not in msg


def test_missing_input_without_sym(wasm, cache, cases):
    c = WitnessCalculator(wasm.read_bytes(), cache_dir=cache)
    msg = _err(InputError, c, {k: v for k, v in cases["small"].items() if k != "sum"})
    assert msg == "<wasm>: inputs set 19 of 20: 1 input value missing"


def test_element_counts(calc, cases):
    msg = _err(InputError, calc, dict(cases["small"], arr=[[1, 2, 3], [4, 5, 6, 7]]))
    assert "'arr' has 6 elements, 7 given" in msg
    msg = _err(InputError, calc, dict(cases["small"], arr=[1, 2, 3]))
    assert "'arr' has 6 elements, 3 given" in msg
    msg = _err(InputError, calc, dict(cases["small"], x=[1, 2]))
    assert "'x' has 1 element, 2 given" in msg
    msg = _err(InputError, calc, dict(cases["small"], arr=[]))
    assert "'arr' has 6 elements, 0 given" in msg


def test_assert_failure(C, calc, slow_calc, cases):
    for c in (calc, slow_calc):
        msg = _err(WitnessError, c, dict(cases["small"], sum=0))
        assert "assert failed" in msg and "line" in msg and calc.name in msg
    # the calculator recovers
    assert C.fr.to_ints(calc.calculate(cases["small"])[:1]) == [1]


def test_overlapping_inputs(calc, cases):
    # circom itself would count p.x and p[0] as two of its inputs (and run the circuit early)
    for first in (True, False):
        inp = {"p.x": 4, **cases["small"]} if first else dict(cases["small"], **{"p.x": 4})
        inp["p"] = [2, 7]
        msg = _err(InputError, calc, inp)
        assert "'p.x' overlaps input 'p'" in msg
    msg = _err(InputError, calc, dict(cases["small"], **{"q[1].y": 4}))
    assert "'q[1].y' is given twice" in msg


@pytest.mark.parametrize(
    "value, words",
    [
        (True, "boolean"),
        (1.5, "not a field element"),
        ("12abc", "not a field element"),
        ("0x", "not a field element"),
        (None, "not a field element"),
        ("1_000", "not a field element"),
        ([1, {"a": 1}], "mixes objects and numbers"),
    ],
)
def test_bad_values(calc, value, words, cases):
    msg = _err(InputError, calc, dict(cases["small"], x=value))
    assert words in msg and "'x'" in msg


@pytest.mark.parametrize("curve", CURVES, ids=lambda c: c.name)
def test_value_forms(curve):
    R = curve.r
    got = dict(flatten_inputs({"a": " 12 ", "b": "-0x10", "c": -1, "d": 3.0, "e": np.int64(-2), "f": "+7"}, R))
    assert got == {"a": [12], "b": [R - 16], "c": [R - 1], "d": [3], "e": [R - 2], "f": [7]}
    assert flatten_inputs({"m": np.arange(6).reshape(2, 3)}, R) == [("m", [0, 1, 2, 3, 4, 5])]
    assert [n for n, _ in flatten_inputs({"a": [[{"b": 1}], [{"b": 2}]], "c": {"d": {"e": 1}}}, R)] == [
        "a[0][0].b",
        "a[1][0].b",
        "c.d.e",
    ]
    with pytest.raises(InputError, match="given twice"):
        flatten_inputs({"a.b": 1, "a": {"b": 2}}, R)
    with pytest.raises(InputError, match=r"'a\[0\]\.b' overlaps input 'a'"):
        flatten_inputs({"a": [1, 2], "a[0].b": 2}, R)
    assert [n for n, _ in flatten_inputs({"ab": 1, "a": 2, "a_b": 3}, R)] == ["ab", "a", "a_b"]
    with pytest.raises(InputError, match="must be an object"):
        flatten_inputs([1, 2], R)
    # values are reduced modulo the curve's r: BLS12-381's r - 1 is reduced on BN254
    big = BLS.r - 1
    assert flatten_inputs({"x": str(big)}, R) == [("x", [big % R])]


def test_fnv1a64():
    assert fnv1a64("") == 0xCBF29CE484222325
    assert fnv1a64("a") == 0xAF63DC4C8601EC8C
    assert fnv1a64("foobar") == 0x85944171F73967E8


def test_wrong_prime(C, calc, cases):
    # a bn128 wasm (circom's default prime) and a bls12381 one are both accepted, each with its curve; the
    # witness it writes names that curve, and given with a circuit or key of the other curve it is a
    # one-line error naming both
    assert calc.curve == C and C.circom_prime in ("bls12381", "bn128")
    data = calc.calculate_wtns_bytes(cases["small"])
    assert int.from_bytes(data[28:60], "little") == C.r  # the header's prime
    other = BN254 if C == BLS else BLS
    with pytest.raises(FormatError) as ei:
        parse_wtns(data, "w.wtns", curve=other, expected_what="the circuit c.r1cs")
    msg = str(ei.value)
    assert msg == f"w.wtns: witness is over {C} but the circuit c.r1cs is over {other}"


def test_not_a_circom_wasm(tmp_path):
    junk = tmp_path / "junk.wasm"
    junk.write_bytes(b"hello world")
    with pytest.raises(FormatError, match=r"junk\.wasm: not a WebAssembly binary"):
        WitnessCalculator(junk, cache_dir=False)
    broken = tmp_path / "broken.wasm"
    broken.write_bytes(b"\0asm\x01\0\0\0\x05garbage")
    with pytest.raises(FormatError, match=r"broken\.wasm: not a valid WebAssembly module"):
        WitnessCalculator(broken, cache_dir=False)
    empty = tmp_path / "empty.wasm"
    empty.write_bytes(b"\0asm\x01\0\0\0")
    with pytest.raises(FormatError, match=r"empty\.wasm: not a circom 2 witness generator: no export 'memory'"):
        WitnessCalculator(empty, cache_dir=False)
    with pytest.raises(CuzkError, match=r"nothere\.wasm: cannot read"):
        WitnessCalculator(tmp_path / "nothere.wasm", cache_dir=False)


def _fake_circom(prime: int = BLS.r) -> bytes:
    """A hand-written module with circom's interface. setInputSignal traps (`unreachable`) when the
    value written is 0, and otherwise reports "boom" then calls exceptionHandler(value)."""
    data = "".join(f"\\{b:02x}" for b in prime.to_bytes(32, "little"))
    return wasmtime.wat2wasm(f"""
(module
  (import "runtime" "exceptionHandler" (func $exc (param i32)))
  (import "runtime" "printErrorMessage" (func $pem))
  (memory (export "memory") 1)
  (data (i32.const 64) "{data}")
  (data (i32.const 128) "boom\\00")
  (global $mp (mut i32) (i32.const 128))
  (func (export "getVersion") (result i32) (i32.const 2))
  (func (export "getFieldNumLen32") (result i32) (i32.const 8))
  (func (export "getRawPrime") (memory.copy (i32.const 0) (i32.const 64) (i32.const 32)))
  (func (export "readSharedRWMemory") (param i32) (result i32) (i32.load (i32.shl (local.get 0) (i32.const 2))))
  (func (export "getSharedRWMemoryStart") (result i32) (i32.const 0))
  (func (export "init") (param i32))
  (func (export "getInputSize") (result i32) (i32.const 1))
  (func (export "getWitnessSize") (result i32) (i32.const 1))
  (func (export "getWitness") (param i32))
  (func (export "getInputSignalSize") (param i32 i32) (result i32) (i32.const 1))
  (func (export "setInputSignal") (param i32 i32 i32)
    (if (i32.eqz (i32.load (i32.const 0))) (then unreachable))
    (global.set $mp (i32.const 128))
    (call $pem)
    (call $exc (i32.load (i32.const 0))))
  (func (export "getMessageChar") (result i32) (local $c i32)
    (local.set $c (i32.load8_u (global.get $mp)))
    (if (local.get $c) (then (global.set $mp (i32.add (global.get $mp) (i32.const 1)))))
    (local.get $c)))
""")


@pytest.mark.parametrize("fast", [True, False], ids=["helper", "per-wire"])
def test_runtime_error_codes_and_traps(fast):
    c = WitnessCalculator(bytes(_fake_circom()), cache_dir=False, fast=fast)
    cases = {
        0: (WitnessError, "<wasm>: witness calculation trapped while setting input 'a': "),
        1: (InputError, "<wasm>: input signal 'a': signal not found: boom"),
        3: (InputError, "<wasm>: input signal 'a' is set twice (does it overlap another given input?): boom"),
        4: (WitnessError, "<wasm>: witness calculation failed: assert failed: boom"),
        5: (WitnessError, "<wasm>: witness calculation failed: not enough memory: boom"),
        7: (WitnessError, "<wasm>: witness calculation failed: out of bounds array access: boom"),
        99: (WitnessError, "<wasm>: witness calculation failed: unknown circom runtime error code 99: boom"),
    }
    for v, (exc, text) in cases.items():
        msg = _err(exc, c, {"a": v})
        assert msg.startswith(text), msg
    assert "unreachable" in _err(WitnessError, c, {"a": 0})


def test_other_prime():
    with pytest.raises(
        FormatError,
        match=r"<wasm>: circuit compiled for prime 0x65, not the scalar field of BLS12-381 \(--prime bls12381\) or BN254 \(--prime bn128\)$",
    ):
        WitnessCalculator(bytes(_fake_circom(101)), cache_dir=False)
    # each curve's prime is accepted, and names the curve
    for c in CURVES:
        assert WitnessCalculator(bytes(_fake_circom(c.r)), cache_dir=False).curve == c


# ---------------------------------------------------------------------------------------------
# module cache


def test_module_cache(wasm, tmp_path, reference, cases):
    d = tmp_path / "c"
    a = WitnessCalculator(wasm, cache_dir=d)
    assert a.cache_hit is False
    files = list(d.glob("*.cwasm"))
    assert len(files) == 1
    b = WitnessCalculator(wasm, cache_dir=d)
    assert b.cache_hit is True
    assert b.calculate_wtns_bytes(cases["small"]) == reference["small"]
    files[0].write_bytes(b"not a compiled module")  # damaged entry: recompiled and replaced
    c = WitnessCalculator(wasm, cache_dir=d)
    assert c.cache_hit is False
    assert c.calculate_wtns_bytes(cases["small"]) == reference["small"]
    assert WitnessCalculator(wasm, cache_dir=d).cache_hit is True
    assert WitnessCalculator(wasm, cache_dir=False).cache_hit is None


def test_default_cache_dir(wasm, tmp_path, monkeypatch):
    monkeypatch.setenv("CUZK_CACHE_DIR", str(tmp_path))
    assert wmod.default_cache_dir() == tmp_path / "wasm"
    WitnessCalculator(wasm)
    assert len(list((tmp_path / "wasm").glob("*.cwasm"))) == 1
    monkeypatch.delenv("CUZK_CACHE_DIR")
    assert wmod.default_cache_dir() == Path.home() / ".cache" / "cuzk" / "wasm"


def test_unwritable_cache_is_not_fatal(wasm, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    c = WitnessCalculator(wasm, cache_dir=blocker / "sub")
    assert c.cache_hit is False and c.n_wires == 33


# ---------------------------------------------------------------------------------------------
# input JSON


def test_load_inputs_json(tmp_path, calc, reference, cases):
    p = tmp_path / "in.json"
    p.write_text(json.dumps(cases["big_and_reduced"], indent=1))  # big ints as exact JSON numbers
    inp = load_inputs_json(p)
    assert inp == cases["big_and_reduced"]
    assert calc.calculate_wtns_bytes(inp) == reference["big_and_reduced"]


@pytest.mark.parametrize(
    "text, words",
    [
        ('{"x": 1,', "in.json:1:"),
        ('{"x": 1}\n{"y": 2}', "in.json:2:1: malformed JSON"),
        ("[1, 2]", "must be an object"),
        ('{"x": 1, "x": 2}', "duplicate key 'x'"),
        ('{"x": NaN}', "malformed JSON"),
        ("", "malformed JSON"),
    ],
)
def test_malformed_inputs_json(tmp_path, text, words):
    p = tmp_path / "in.json"
    p.write_text(text)
    with pytest.raises(FormatError) as ei:
        load_inputs_json(p)
    assert words in str(ei.value) and str(p) in str(ei.value) and "\n" not in str(ei.value)


def test_missing_inputs_json(tmp_path):
    with pytest.raises(CuzkError, match="nope.json: cannot read input file"):
        load_inputs_json(tmp_path / "nope.json")


# ---------------------------------------------------------------------------------------------
# .sym


def test_read_sym(sym):
    names = read_sym(sym)
    assert names[1] == "main.out"
    assert names[2] == "main.prod"
    assert names[3] == "main.x"
    assert names[9] == "main.arr[1][2]"
    assert names[15] == "main.q[1].y"
    assert names[18] == "main.s.b.x"
    assert names[32] == "main.m.c"
    assert sorted(names) == list(range(1, 33))  # wire 0 (the constant) has no label
    assert "main.acc[5]" not in names.values()  # optimised away (wireId -1)
    entries = list(iter_sym(sym))
    assert any(e.name == "main.acc[5]" and e.wire == -1 for e in entries)
    assert any(e.name == "main.m.a" and e.wire == -1 for e in entries)


def test_read_sym_first_name_wins_and_formats(tmp_path):
    p = tmp_path / "a.sym"
    p.write_bytes(b"1,1,0,main.a\r\n2,1,1,main.sub.in\n\n3,-1,1,main.gone\n4,2,0,main.b\n")
    assert read_sym(p) == {1: "main.a", 2: "main.b"}


@pytest.mark.parametrize(
    "line",
    ["1,2,main.x", "a,1,1,main.x", "1,1,1,", "1,-2,1,main.x", "1,1_0,1,main.x", "1, ,1,main.x", "-1,1,1,main.x"],
)
def test_malformed_sym(tmp_path, line):
    p = tmp_path / "bad.sym"
    p.write_text(f"1,1,0,main.ok\n{line}\n")
    with pytest.raises(FormatError) as ei:
        read_sym(p)
    msg = str(ei.value)
    assert msg.startswith(f"{p}:2: malformed sym line") and "\n" not in msg


def test_sym_not_utf8_and_missing(tmp_path):
    p = tmp_path / "bin.sym"
    p.write_bytes(b"1,1,0,main.ok\n\xff\xfe,1,1,x\n")
    with pytest.raises(FormatError, match=r"bin\.sym:2: malformed sym line: not valid UTF-8"):
        read_sym(p)
    with pytest.raises(CuzkError, match="cannot read symbol file"):
        read_sym(tmp_path / "none.sym")
