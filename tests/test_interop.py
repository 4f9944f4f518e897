"""Interoperability with snarkjs, both directions, through its real command line.

snarkjs and circom2 are installed from npm by the test command (package.json); these tests require
them and fail (they are not skipped) when they are missing.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from cuzk.field.constants import R
from cuzk.groth16 import formats, prover, setup, verifier, zkey
from cuzk.r1cs import r1cs, synthetic, wtns

ROOT = Path(__file__).resolve().parents[1]
SNARKJS = ROOT / "node_modules" / ".bin" / "snarkjs"
FIX = ROOT / "tests" / "fixtures"


def snarkjs(*args: str) -> subprocess.CompletedProcess:
    assert SNARKJS.exists(), "snarkjs is missing: run `npm ci` (the test command does)"
    return subprocess.run([str(SNARKJS), *map(str, args)], capture_output=True, text=True, timeout=300)


def snarkjs_verifies(vk: Path, public: Path, proof: Path) -> bool:
    out = snarkjs("groth16", "verify", vk, public, proof)
    ok = out.returncode == 0 and "OK" in out.stdout
    bad = "Invalid proof" in out.stdout + out.stderr
    assert ok or bad or out.returncode != 0, out
    return ok


@pytest.fixture(scope="module")
def example():
    d = FIX / "example"
    return {
        "dir": d,
        "pk": zkey.read_zkey(d / "circuit.zkey"),
        "w": wtns.read_wtns(d / "witness.wtns"),
        "vk": formats.read_vk_json(d / "verification_key.json"),
    }


def write_proof(tmp: Path, res, stem: str = "ours") -> tuple[Path, Path]:
    p, q = tmp / f"{stem}_proof.json", tmp / f"{stem}_public.json"
    formats.write_proof_json(p, res.proof)
    formats.write_public_json(q, res.public)
    return p, q


def test_our_proof_verifies_with_snarkjs(example, tmp_path):
    res = prover.prove(example["pk"], example["w"])
    p, q = write_proof(tmp_path, res)
    assert json.loads(q.read_text()) == json.loads((example["dir"] / "public.json").read_text())
    assert snarkjs_verifies(example["dir"] / "verification_key.json", q, p)


def test_snarkjs_proof_verifies_with_ours(example):
    d = example["dir"]
    proof = formats.read_proof_json(d / "proof.json")
    public = formats.read_public_json(d / "public.json")
    assert verifier.verify(example["vk"], public, proof)
    # and against the vk we decode from the zkey itself
    assert verifier.verify(example["pk"].vk, public, proof)


def test_fresh_snarkjs_proof_verifies_with_ours(example, tmp_path):
    d = example["dir"]
    out = snarkjs("groth16", "prove", d / "circuit.zkey", d / "witness.wtns", tmp_path / "p.json", tmp_path / "pub.json")
    assert out.returncode == 0, out.stderr
    assert verifier.verify(
        example["vk"], formats.read_public_json(tmp_path / "pub.json"), formats.read_proof_json(tmp_path / "p.json")
    )


def test_proofs_are_randomised(example):
    r1 = prover.prove(example["pk"], example["w"])
    r2 = prover.prove(example["pk"], example["w"])
    assert r1.proof != r2.proof
    assert r1.public == r2.public


def test_tampered_proof_rejected_by_both(example, tmp_path):
    res = prover.prove(example["pk"], example["w"])
    # replace C by 2C: still a valid curve point, wrong proof
    bad = formats.Proof(res.proof.a, res.proof.b, res.proof.c + res.proof.c)
    assert not verifier.verify(example["vk"], res.public, bad)
    p, q = tmp_path / "bad.json", tmp_path / "pub.json"
    formats.write_proof_json(p, bad)
    formats.write_public_json(q, res.public)
    assert not snarkjs_verifies(example["dir"] / "verification_key.json", q, p)
    # swapping A for another valid point
    bad2 = formats.Proof(res.proof.c, res.proof.b, res.proof.c)
    assert not verifier.verify(example["vk"], res.public, bad2)


def test_wrong_public_input_rejected_by_both(example, tmp_path):
    res = prover.prove(example["pk"], example["w"])
    public = list(res.public)
    public[-1] = (public[-1] + 1) % R
    assert not verifier.verify(example["vk"], public, res.proof)
    p, _ = write_proof(tmp_path, res)
    q = tmp_path / "wrong_public.json"
    formats.write_public_json(q, public)
    assert not snarkjs_verifies(example["dir"] / "verification_key.json", q, p)


def test_proof_under_another_key_rejected_by_both(example, tmp_path):
    # same circuit, different toxic waste: a key from our own setup
    rc = r1cs.read_r1cs(example["dir"] / "circuit.r1cs")
    other = setup.setup(rc.pce, quiet=True)
    res = prover.prove(other, example["w"])
    assert verifier.verify(other.vk, res.public, res.proof)
    assert not verifier.verify(example["vk"], res.public, res.proof)
    p, q = write_proof(tmp_path, res)
    assert not snarkjs_verifies(example["dir"] / "verification_key.json", q, p)


@pytest.mark.parametrize("shape", ["fixture", "chain", "hash"])
def test_setup_zkey_interoperates(shape, tmp_path):
    """A zkey from `cuzk setup`: snarkjs proves with it and we verify; we prove and snarkjs verifies."""
    if shape == "fixture":
        rc = r1cs.read_r1cs(FIX / "example" / "circuit.r1cs")
        wt = FIX / "example" / "witness.wtns"
        pce = rc.pce
    else:
        c = synthetic.make(shape, synthetic.fit_domain(shape, 9))
        pce = c.pce
        r1cs.write_r1cs(tmp_path / "c.r1cs", c.pce, c.n_pub_out, c.n_pub_in, c.n_prv_in)
        pce = r1cs.read_r1cs(tmp_path / "c.r1cs").pce
        wt = tmp_path / "w.wtns"
        wtns.write_wtns(wt, c.witness)
    pk = setup.setup(pce, quiet=True)
    zk, vkj = tmp_path / "k.zkey", tmp_path / "vk.json"
    zkey.write_zkey(zk, pk)
    formats.write_vk_json(vkj, pk.vk)
    # snarkjs exports the same verification key from our zkey
    out = snarkjs("zkey", "export", "verificationkey", zk, tmp_path / "vk2.json")
    assert out.returncode == 0, out.stderr
    assert json.loads((tmp_path / "vk2.json").read_text()) == json.loads(vkj.read_text())
    # snarkjs proves with our zkey; we verify
    out = snarkjs("groth16", "prove", zk, wt, tmp_path / "sp.json", tmp_path / "spub.json")
    assert out.returncode == 0, out.stderr
    assert verifier.verify(pk.vk, formats.read_public_json(tmp_path / "spub.json"), formats.read_proof_json(tmp_path / "sp.json"))
    # we prove with the zkey as read back from disk; snarkjs verifies
    res = prover.prove(zkey.read_zkey(zk), wtns.read_wtns(wt))
    p, q = write_proof(tmp_path, res)
    assert snarkjs_verifies(vkj, q, p)


def test_vk_json_matches_snarkjs_export(example):
    ours = formats.vk_to_json(example["pk"].vk)
    theirs = json.loads((example["dir"] / "verification_key.json").read_text())
    for k in ("protocol", "curve", "nPublic", "vk_alpha_1", "vk_beta_2", "vk_gamma_2", "vk_delta_2", "vk_alphabeta_12", "IC"):
        assert ours[k] == theirs[k], k


def test_node_tools_present():
    assert SNARKJS.exists()
    assert (ROOT / "node_modules" / ".bin" / "circom2").exists()
    assert shutil.which("node")
