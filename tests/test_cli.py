"""The command line: every verb through a real subprocess, exit codes, one-line errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FIX = ROOT / "tests" / "fixtures"
EX = FIX / "example"
SNARKJS = ROOT / "node_modules" / ".bin" / "snarkjs"


def cuzk(*args, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cuzk", *map(str, args)], capture_output=True, text=True, timeout=600, cwd=cwd)


def assert_one_line_error(out: subprocess.CompletedProcess, *needles: str) -> None:
    assert out.returncode == 2, out
    assert "Traceback" not in out.stderr
    lines = [ln for ln in out.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, out.stderr
    assert lines[0].startswith("cuzk: error: ")
    for n in needles:
        assert n in lines[0], (n, lines[0])


def test_prove_verify_round_trip(tmp_path):
    p, q, b = tmp_path / "proof.json", tmp_path / "public.json", tmp_path / "proof.bin"
    out = cuzk("prove", EX / "circuit.zkey", EX / "witness.wtns", p, q, "--proof-bin", b)
    assert out.returncode == 0, out.stderr
    assert json.loads(q.read_text()) == json.loads((EX / "public.json").read_text())
    assert b.stat().st_size == 192
    out = cuzk("verify", EX / "verification_key.json", q, p)
    assert out.returncode == 0 and out.stdout.strip() == "OK", out
    out = cuzk("verify", EX / "verification_key.json", q, b)
    assert out.returncode == 0, out
    # snarkjs accepts the CLI's proof too
    sj = subprocess.run([str(SNARKJS), "groth16", "verify", EX / "verification_key.json", q, p], capture_output=True, text=True)
    assert sj.returncode == 0 and "OK" in sj.stdout


def test_verify_rejects_with_exit_1(tmp_path):
    pub = json.loads((EX / "public.json").read_text())
    pub[0] = str(int(pub[0]) + 1)
    q = tmp_path / "public.json"
    q.write_text(json.dumps(pub))
    out = cuzk("verify", EX / "verification_key.json", q, EX / "proof.json")
    assert out.returncode == 1 and out.stdout.strip() == "INVALID"
    out = cuzk("verify", EX / "verification_key.json", EX / "public.json", EX / "proof.json")
    assert out.returncode == 0
    out = cuzk("verify", FIX / "other" / "verification_key.json", EX / "public.json", EX / "proof.json")
    assert out.returncode == 1 and "INVALID" in out.stdout


def test_setup_writes_keys_snarkjs_accepts(tmp_path):
    r = tmp_path / "c.r1cs"
    r.write_bytes((EX / "circuit.r1cs").read_bytes())
    out = cuzk("setup", r)
    assert out.returncode == 0, out.stderr
    assert "development" in out.stderr.lower() and "WARNING" in out.stderr
    zk, vk = tmp_path / "c.zkey", tmp_path / "verification_key.json"
    assert zk.exists() and vk.exists()
    p, q = tmp_path / "p.json", tmp_path / "q.json"
    assert cuzk("prove", zk, EX / "witness.wtns", p, q).returncode == 0
    assert cuzk("verify", vk, q, p).returncode == 0
    out = cuzk("setup", r, "--format", "bellperson", "-o", tmp_path / "c.params")
    assert out.returncode == 0, out.stderr
    p2, q2 = tmp_path / "p2.json", tmp_path / "q2.json"
    out = cuzk("prove", tmp_path / "c.params", EX / "witness.wtns", p2, q2, "--r1cs", r)
    assert out.returncode == 0, out.stderr
    assert cuzk("verify", tmp_path / "c.vk", q2, p2).returncode == 0


def test_check_and_info(tmp_path):
    out = cuzk("check", EX / "circuit.r1cs", EX / "witness.wtns")
    assert out.returncode == 0 and "OK" in out.stdout
    # corrupt the last witness value (an internal wire)
    data = bytearray((EX / "witness.wtns").read_bytes())
    data[-32] ^= 1
    bad = tmp_path / "bad.wtns"
    bad.write_bytes(bytes(data))
    out = cuzk("check", EX / "circuit.r1cs", bad, "--sym", EX / "circuit.sym")
    assert out.returncode == 1
    assert "UNSATISFIED: constraint" in out.stdout and "main." in out.stdout
    out = cuzk("info", EX / "circuit.r1cs")
    assert out.returncode == 0
    assert "constraints       149" in out.stdout and "2^8" in out.stdout and "wires in B" in out.stdout
    out = cuzk("info", EX / "circuit.zkey")
    assert out.returncode == 0 and "points A/B1/B2/L/H" in out.stdout


@pytest.mark.parametrize(
    "args,needles",
    [
        (["prove", EX / "circuit.zkey", FIX / "other" / "witness.wtns", "p", "q"], ["witness.wtns", "27 values", "155 wires"]),
        (["prove", FIX / "other" / "circuit.zkey", EX / "witness.wtns", "p", "q"], ["155 values", "27 wires"]),
        (["prove", EX / "missing.zkey", EX / "witness.wtns", "p", "q"], ["missing.zkey"]),
        (["prove", EX / "circuit.r1cs", EX / "witness.wtns", "p", "q"], ["not a .zkey", "--r1cs"]),
        (["verify", EX / "proof.json", EX / "public.json", EX / "proof.json"], ["verification key", "vk_alpha_1"]),
        (["check", EX / "circuit.r1cs", FIX / "other" / "witness.wtns"], ["27 values", "155 wires"]),
        (["info", EX / "input.json"], ["unrecognised file"]),
    ],
)
def test_user_errors_are_one_line(args, needles, tmp_path):
    out = cuzk(*args, cwd=tmp_path)
    assert_one_line_error(out, *needles)


def test_truncated_zkey_error(tmp_path):
    z = tmp_path / "t.zkey"
    z.write_bytes((EX / "circuit.zkey").read_bytes()[:5000])
    out = cuzk("prove", z, EX / "witness.wtns", tmp_path / "p", tmp_path / "q")
    assert_one_line_error(out, "t.zkey", "truncated")


def test_demo_runs():
    out = cuzk("demo", "--domain", "8")
    assert out.returncode == 0, out.stderr
    assert "verify: OK" in out.stdout and "msm" in out.stdout
