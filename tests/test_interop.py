"""Interoperability with snarkjs, both directions, through its real command line, on every curve
(BLS12-381: circom --prime bls12381; BN254: circom's default bn128).

snarkjs and circom2 are installed from npm by the test command (package.json); these tests require
them and fail (they are not skipped) when they are missing.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import CIRCOM, CURVES, SNARKJS, fixture_dir

from cuzk.backends import get_backend
from cuzk.groth16 import formats, prover, setup, verifier, zkey
from cuzk.r1cs import r1cs, synthetic, wtns

CPU = get_backend("cpu")


def snarkjs(*args: str) -> subprocess.CompletedProcess:
    assert SNARKJS.exists(), "snarkjs is missing: run `npm ci` (the test command does)"
    return subprocess.run([str(SNARKJS), *map(str, args)], capture_output=True, text=True, timeout=300)


def snarkjs_verifies(vk: Path, public: Path, proof: Path) -> bool:
    out = snarkjs("groth16", "verify", vk, public, proof)
    ok = out.returncode == 0 and "OK" in out.stdout
    bad = "Invalid proof" in out.stdout + out.stderr
    assert ok or bad or out.returncode != 0, out
    return ok


@pytest.fixture(scope="module", params=CURVES, ids=lambda c: c.name)
def example(request):
    """The circom example circuit on one curve: snarkjs' zkey, witness and verification key."""
    d = fixture_dir(request.param)
    pk = zkey.read_zkey(d / "circuit.zkey")
    assert pk.curve == request.param
    return {
        "curve": request.param,
        "dir": d,
        "pk": pk,
        "w": wtns.read_wtns(d / "witness.wtns", curve=pk.curve),
        "vk": formats.read_vk_json(d / "verification_key.json"),
    }


def write_proof(tmp: Path, res, stem: str = "ours") -> tuple[Path, Path]:
    p, q = tmp / f"{stem}_proof.json", tmp / f"{stem}_public.json"
    formats.write_proof_json(p, res.proof)
    formats.write_public_json(q, res.public)
    return p, q


def test_our_proof_verifies_with_snarkjs(example, tmp_path):
    res = prover.prove(example["pk"], example["w"], CPU)
    p, q = write_proof(tmp_path, res)
    assert json.loads(q.read_text()) == json.loads((example["dir"] / "public.json").read_text())
    assert snarkjs_verifies(example["dir"] / "verification_key.json", q, p)


def test_snarkjs_proof_verifies_with_ours(example):
    d = example["dir"]
    proof = formats.read_proof_json(d / "proof.json", example["curve"])
    public = formats.read_public_json(d / "public.json", example["curve"])
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
    # tampered: snarkjs' proof with A and C swapped is rejected by both
    obj = json.loads((tmp_path / "p.json").read_text())
    obj["pi_a"], obj["pi_c"] = obj["pi_c"], obj["pi_a"]
    (tmp_path / "bad.json").write_text(json.dumps(obj))
    assert not verifier.verify(
        example["vk"], formats.read_public_json(tmp_path / "pub.json"), formats.read_proof_json(tmp_path / "bad.json")
    )
    assert not snarkjs_verifies(d / "verification_key.json", tmp_path / "pub.json", tmp_path / "bad.json")


def test_proofs_are_randomised(example):
    r1 = prover.prove(example["pk"], example["w"], CPU)
    r2 = prover.prove(example["pk"], example["w"], CPU)
    assert r1.proof != r2.proof
    assert r1.public == r2.public


def test_tampered_proof_rejected_by_both(example, tmp_path):
    res = prover.prove(example["pk"], example["w"], CPU)
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
    res = prover.prove(example["pk"], example["w"], CPU)
    public = list(res.public)
    public[-1] = (public[-1] + 1) % example["curve"].r
    assert not verifier.verify(example["vk"], public, res.proof)
    p, _ = write_proof(tmp_path, res)
    q = tmp_path / "wrong_public.json"
    formats.write_public_json(q, public)
    assert not snarkjs_verifies(example["dir"] / "verification_key.json", q, p)


def test_proof_under_another_key_rejected_by_both(example, tmp_path):
    # same circuit, different toxic waste: a key from our own setup
    rc = r1cs.read_r1cs(example["dir"] / "circuit.r1cs")
    other = setup.setup(rc.pce, quiet=True)
    res = prover.prove(other, example["w"], CPU)
    assert verifier.verify(other.vk, res.public, res.proof)
    assert not verifier.verify(example["vk"], res.public, res.proof)
    p, q = write_proof(tmp_path, res)
    assert not snarkjs_verifies(example["dir"] / "verification_key.json", q, p)


@pytest.mark.parametrize("curve", CURVES, ids=lambda c: c.name)
@pytest.mark.parametrize("shape", ["fixture", "chain", "hash"])
def test_setup_zkey_interoperates(curve, shape, tmp_path, dev_circuit):
    """A zkey from `cuzk setup` (setup.setup on a circom or a synthetic r1cs of the curve): snarkjs
    exports the same verification key, proves with it and we verify; we prove and snarkjs verifies."""
    if shape == "hash":  # the session's development circuit: its r1cs, witness and keys written as files
        dev = dev_circuit(curve)
        pk, wt, zk, vkj = dev.pk, dev.wtns, dev.zkey, dev.vk_json
        assert r1cs.read_r1cs(dev.r1cs).curve == curve
    else:
        if shape == "fixture":
            rc = r1cs.read_r1cs(fixture_dir(curve) / "circuit.r1cs")
            wt = fixture_dir(curve) / "witness.wtns"
        else:
            c = synthetic.make(shape, synthetic.fit_domain(shape, 7), curve=curve)
            r1cs.write_r1cs(tmp_path / "c.r1cs", c.pce, c.n_pub_out, c.n_pub_in, c.n_prv_in)
            rc = r1cs.read_r1cs(tmp_path / "c.r1cs")
            wt = tmp_path / "w.wtns"
            wtns.write_wtns(wt, c.witness, curve)
        assert rc.curve == curve
        pk = setup.setup(rc.pce, quiet=True)
        zk, vkj = tmp_path / "k.zkey", tmp_path / "vk.json"
        zkey.write_zkey(zk, pk)
        formats.write_vk_json(vkj, pk.vk)
    assert json.loads(vkj.read_text())["curve"] == curve.snarkjs_name
    # snarkjs exports the same verification key from our zkey
    out = snarkjs("zkey", "export", "verificationkey", zk, tmp_path / "vk2.json")
    assert out.returncode == 0, out.stderr
    assert json.loads((tmp_path / "vk2.json").read_text()) == json.loads(vkj.read_text())
    # snarkjs proves with our zkey; we verify
    out = snarkjs("groth16", "prove", zk, wt, tmp_path / "sp.json", tmp_path / "spub.json")
    assert out.returncode == 0, out.stderr
    assert verifier.verify(pk.vk, formats.read_public_json(tmp_path / "spub.json"), formats.read_proof_json(tmp_path / "sp.json"))
    # we prove with the zkey as read back from disk; snarkjs verifies
    res = prover.prove(zkey.read_zkey(zk), wtns.read_wtns(wt, curve=curve), CPU)
    p, q = write_proof(tmp_path, res)
    assert snarkjs_verifies(vkj, q, p)


def test_vk_json_matches_snarkjs_export(example):
    ours = formats.vk_to_json(example["pk"].vk)
    theirs = json.loads((example["dir"] / "verification_key.json").read_text())
    for k in ("protocol", "curve", "nPublic", "vk_alpha_1", "vk_beta_2", "vk_gamma_2", "vk_delta_2", "vk_alphabeta_12", "IC"):
        assert ours[k] == theirs[k], k


def cuzk_calldata(public: Path, proof: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "cuzk", "export", "calldata", str(public), str(proof), *extra],
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_calldata_matches_snarkjs(example, tmp_path):
    """`cuzk export calldata` prints exactly what `snarkjs zkey export soliditycalldata` prints, for
    snarkjs' proof and for ours (and, on BN254, from our 256-byte binary proof)."""
    d = example["dir"]
    res = prover.prove(example["pk"], example["w"], CPU)
    p, q = write_proof(tmp_path, res)
    for public, proof in ((d / "public.json", d / "proof.json"), (q, p)):
        theirs = snarkjs("zkey", "export", "soliditycalldata", public, proof)
        assert theirs.returncode == 0, theirs.stderr
        ours = cuzk_calldata(public, proof)
        assert ours.returncode == 0, ours.stderr
        assert ours.stdout == theirs.stdout
        assert ours.stdout.rstrip("\n") == formats.solidity_calldata(
            formats.read_proof_json(proof), formats.read_public_json(public, check_range=False)
        )
    if not example["curve"].bellperson:  # the EVM binary proof carries the same words
        b = tmp_path / "proof.bin"
        b.write_bytes(res.proof.to_bytes())
        ours = cuzk_calldata(q, b, "--curve", example["curve"].name)
        assert ours.returncode == 0, ours.stderr
        assert ours.stdout == snarkjs("zkey", "export", "soliditycalldata", q, p).stdout


def test_node_tools_present():
    assert SNARKJS.exists()
    assert CIRCOM.exists()
    assert shutil.which("node")
