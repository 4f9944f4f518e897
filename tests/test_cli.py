"""The command line: every verb through a real subprocess, exit codes, one-line errors; the circom verbs
on the circuits of every curve (the curve is detected from the files)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from conftest import BLS, BN254, CURVES, SNARKJS, fixture_dir, on_curves

EX = fixture_dir(BLS, "example")
OTHER = fixture_dir(BLS, "other")
BN_EX = fixture_dir(BN254, "example")


def cuzk(*args, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cuzk", *map(str, args)], capture_output=True, text=True, timeout=600, cwd=cwd)


def snarkjs_verifies(vk, public, proof) -> bool:
    sj = subprocess.run([str(SNARKJS), "groth16", "verify", vk, public, proof], capture_output=True, text=True, timeout=300)
    return sj.returncode == 0 and "OK" in sj.stdout


def assert_one_line_error(out: subprocess.CompletedProcess, *needles: str) -> None:
    assert out.returncode == 2, out
    assert "Traceback" not in out.stderr
    lines = [ln for ln in out.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, out.stderr
    assert lines[0].startswith("cuzk: error: ")
    for n in needles:
        assert n in lines[0], (n, lines[0])


@on_curves
def test_prove_verify_round_trip(C, tmp_path):
    ex = fixture_dir(C)
    p, q, b = tmp_path / "proof.json", tmp_path / "public.json", tmp_path / "proof.bin"
    out = cuzk("prove", ex / "circuit.zkey", ex / "witness.wtns", p, q, "--proof-bin", b)
    assert out.returncode == 0, out.stderr
    assert json.loads(q.read_text()) == json.loads((ex / "public.json").read_text())
    assert json.loads(p.read_text())["curve"] == C.snarkjs_name
    assert b.stat().st_size == C.proof_bytes == {"bls12_381": 192, "bn254": 256}[C.name]
    out = cuzk("verify", ex / "verification_key.json", q, p)
    assert out.returncode == 0 and out.stdout.strip() == "OK", out
    out = cuzk("verify", ex / "verification_key.json", q, b)
    assert out.returncode == 0, out
    # snarkjs accepts the CLI's proof too
    assert snarkjs_verifies(ex / "verification_key.json", q, p)


@on_curves
def test_verify_rejects_with_exit_1(C, tmp_path):
    ex = fixture_dir(C)
    pub = json.loads((ex / "public.json").read_text())
    pub[0] = str(int(pub[0]) + 1)
    q = tmp_path / "public.json"
    q.write_text(json.dumps(pub))
    out = cuzk("verify", ex / "verification_key.json", q, ex / "proof.json")
    assert out.returncode == 1 and out.stdout.strip() == "INVALID"
    out = cuzk("verify", ex / "verification_key.json", ex / "public.json", ex / "proof.json")
    assert out.returncode == 0
    out = cuzk("verify", fixture_dir(C, "other") / "verification_key.json", ex / "public.json", ex / "proof.json")
    assert out.returncode == 1 and "INVALID" in out.stdout


@on_curves
def test_setup_writes_keys_snarkjs_accepts(C, tmp_path):
    ex = fixture_dir(C)
    r = tmp_path / "c.r1cs"
    r.write_bytes((ex / "circuit.r1cs").read_bytes())
    out = cuzk("setup", r)
    assert out.returncode == 0, out.stderr
    assert "development" in out.stderr.lower() and "WARNING" in out.stderr
    assert f"({C}," in out.stdout  # the curve detected from the r1cs
    zk, vk = tmp_path / "c.zkey", tmp_path / "verification_key.json"
    assert zk.exists() and vk.exists()
    assert json.loads(vk.read_text())["curve"] == C.snarkjs_name
    p, q = tmp_path / "p.json", tmp_path / "q.json"
    assert cuzk("prove", zk, ex / "witness.wtns", p, q).returncode == 0
    assert cuzk("verify", vk, q, p).returncode == 0
    assert snarkjs_verifies(vk, q, p)
    if not C.bellperson:  # bellperson parameters exist for BLS12-381 only: refused in one line
        out = cuzk("setup", r, "--format", "bellperson", "-o", tmp_path / "c.params")
        assert_one_line_error(out, "c.r1cs", str(C), "bellperson parameters exist only for BLS12-381")
        return
    out = cuzk("setup", r, "--format", "bellperson", "-o", tmp_path / "c.params")
    assert out.returncode == 0, out.stderr
    p2, q2 = tmp_path / "p2.json", tmp_path / "q2.json"
    out = cuzk("prove", tmp_path / "c.params", ex / "witness.wtns", p2, q2, "--r1cs", r)
    assert out.returncode == 0, out.stderr
    assert cuzk("verify", tmp_path / "c.vk", q2, p2).returncode == 0


@on_curves
def test_check_and_info(C, tmp_path):
    ex = fixture_dir(C)
    out = cuzk("check", ex / "circuit.r1cs", ex / "witness.wtns")
    assert out.returncode == 0 and "OK" in out.stdout
    # corrupt the last witness value (an internal wire)
    data = bytearray((ex / "witness.wtns").read_bytes())
    data[-32] ^= 1
    bad = tmp_path / "bad.wtns"
    bad.write_bytes(bytes(data))
    out = cuzk("check", ex / "circuit.r1cs", bad, "--sym", ex / "circuit.sym")
    assert out.returncode == 1
    assert "UNSATISFIED: constraint" in out.stdout and "main." in out.stdout
    out = cuzk("info", ex / "circuit.r1cs")
    assert out.returncode == 0
    assert "constraints       149" in out.stdout and "2^8" in out.stdout and "wires in B" in out.stdout
    assert f"circom r1cs ({C})" in out.stdout
    out = cuzk("info", ex / "circuit.zkey")
    assert out.returncode == 0 and "points A/B1/B2/L/H" in out.stdout
    assert f"snarkjs Groth16 zkey ({C})" in out.stdout
    out = cuzk("info", ex / "witness.wtns")
    assert out.returncode == 0 and f"circom witness ({C})" in out.stdout and "155" in out.stdout


@on_curves
def test_witness_verb(C, tmp_path):
    """`cuzk witness` runs the circuit's wasm (bls12381 or bn128) and writes snarkjs' witness byte for byte."""
    ex = fixture_dir(C)
    w = tmp_path / "w.wtns"
    out = cuzk("witness", ex / "circuit.wasm", ex / "input.json", w)
    assert out.returncode == 0, out.stderr
    assert w.read_bytes() == (ex / "witness.wtns").read_bytes()
    assert cuzk("check", ex / "circuit.r1cs", w).returncode == 0


def test_synth_circuit_on_each_curve(tmp_path):
    for c in CURVES:
        d = tmp_path / c.name
        out = cuzk("synth-circuit", "--shape", "hash", "--domain", "6", "--curve", c.name, "-o", d)
        assert out.returncode == 0, out.stderr
        assert f"({c}," in out.stdout
        out = cuzk("info", d / "circuit.r1cs")
        assert out.returncode == 0 and f"circom r1cs ({c})" in out.stdout
        assert cuzk("check", d / "circuit.r1cs", d / "witness.wtns").returncode == 0
    # a witness of one curve against the circuit of the other
    out = cuzk("check", tmp_path / "bls12_381" / "circuit.r1cs", tmp_path / "bn254" / "witness.wtns")
    assert_one_line_error(out, "witness.wtns", "witness is over BN254", "is over BLS12-381")
    out = cuzk("synth-circuit", "--curve", "secp256k1", "-o", tmp_path / "x")
    assert_one_line_error(out, "unknown curve 'secp256k1'")


@pytest.mark.parametrize(
    "args,needles",
    [
        (["prove", EX / "circuit.zkey", OTHER / "witness.wtns", "p", "q"], ["witness.wtns", "27 values", "155 wires"]),
        (["prove", OTHER / "circuit.zkey", EX / "witness.wtns", "p", "q"], ["155 values", "27 wires"]),
        (["prove", EX / "missing.zkey", EX / "witness.wtns", "p", "q"], ["missing.zkey"]),
        (["prove", EX / "circuit.r1cs", EX / "witness.wtns", "p", "q"], ["not a .zkey", "--r1cs"]),
        (["verify", EX / "proof.json", EX / "public.json", EX / "proof.json"], ["verification key", "vk_alpha_1"]),
        (["check", EX / "circuit.r1cs", OTHER / "witness.wtns"], ["27 values", "155 wires"]),
        (["info", EX / "input.json"], ["unrecognised file"]),
        # files of one curve given with a key or circuit of the other: one line naming both curves
        (
            ["prove", EX / "circuit.zkey", BN_EX / "witness.wtns", "p", "q"],
            ["bn254/example/witness.wtns", "witness is over BN254", "is over BLS12-381", "example/circuit.zkey"],
        ),
        (
            ["prove", BN_EX / "circuit.zkey", EX / "witness.wtns", "p", "q"],
            ["witness is over BLS12-381", "bn254/example/circuit.zkey is over BN254"],
        ),
        (
            ["check", BN_EX / "circuit.r1cs", EX / "witness.wtns"],
            ["witness is over BLS12-381", "the circuit", "bn254/example/circuit.r1cs is over BN254"],
        ),
        (
            ["verify", EX / "verification_key.json", BN_EX / "public.json", BN_EX / "proof.json"],
            ["bn254/example/proof.json", "curve 'bn128'", "expected 'bls12381'", "BLS12-381"],
        ),
        (
            ["verify", BN_EX / "verification_key.json", EX / "public.json", EX / "proof.json"],
            ["example/proof.json", "curve 'bls12381'", "expected 'bn128'", "BN254"],
        ),
    ],
)
def test_user_errors_are_one_line(args, needles, tmp_path):
    out = cuzk(*args, cwd=tmp_path)
    assert_one_line_error(out, *needles)


@on_curves
def test_truncated_zkey_error(C, tmp_path):
    z = tmp_path / "t.zkey"
    z.write_bytes((fixture_dir(C) / "circuit.zkey").read_bytes()[:5000])
    out = cuzk("prove", z, fixture_dir(C) / "witness.wtns", tmp_path / "p", tmp_path / "q")
    assert_one_line_error(out, "t.zkey", "truncated")


@pytest.mark.parametrize("curve,proof_bytes", [("bls12_381", 192), ("bn254", 256)])
def test_demo_runs(curve, proof_bytes):
    out = cuzk("demo", "--domain", "8", "--curve", curve)
    assert out.returncode == 0, out.stderr
    assert "verify: OK" in out.stdout and "msm" in out.stdout and f"proof ({proof_bytes} bytes)" in out.stdout


def test_info_reads_bellperson_params(tmp_path):
    """`cuzk info` on .params / .vk: the vector lengths from the headers, checked against the file size."""
    from cuzk.engine.devcircuit import make_dev_circuit
    from cuzk.groth16.params import read_params
    from cuzk.r1cs.r1cs import read_r1cs

    dc = make_dev_circuit(tmp_path / "c", "chain", 8, style="bellperson")
    pk = read_params(dc.key, read_r1cs(dc.r1cs).pce)
    out = cuzk("info", dc.key)
    assert out.returncode == 0, out.stderr
    assert "bellperson Groth16 parameters (BLS12-381)" in out.stdout
    assert f"public inputs           {len(pk.vk.ic) - 1}" in out.stdout
    assert f"domain                  {pk.domain_size} (h has {pk.domain_size - 1} points)" in out.stdout
    assert f"{pk.count('a')} / {pk.count('b1')} / {pk.count('b2')}" in out.stdout
    vk = tmp_path / "c" / "circuit.vk"
    from cuzk.groth16.params import write_vk

    write_vk(vk, pk.vk)
    out = cuzk("info", vk)
    assert out.returncode == 0 and "bellperson verifying key" in out.stdout
    cut = tmp_path / "cut.params"
    cut.write_bytes(open(dc.key, "rb").read()[:-10])
    out = cuzk("info", cut)
    assert out.returncode == 2 and "truncated in b2" in out.stderr and len(out.stderr.strip().splitlines()) == 1
