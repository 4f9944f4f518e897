"""Proofs made by the GPU backend on the H200 (cuzk/bench/make_gpu_vectors.py, committed under
tests/vectors/gpu) checked where there is no GPU: by snarkjs's own verifier and by ours.

These run on CI. A fixture without a vector fails the test (regenerate with
`bash cuzk/bench/device_run.sh vectors` and copy the files in).
"""

from __future__ import annotations

import json

import pytest
from conftest import FIXTURES
from test_interop import snarkjs_verifies

from cuzk.groth16 import formats, verifier

VEC = FIXTURES.parent / "vectors" / "gpu"
# the circom fixtures of both curves: tests/fixtures/<name> (BLS12-381, vectors <name>.*) and
# tests/fixtures/bn254/<name> (vectors bn254-<name>.*)
FOLDERS = {d.name: d for d in sorted(FIXTURES.iterdir()) if (d / "circuit.zkey").exists()}
FOLDERS |= {f"bn254-{d.name}": d for d in sorted((FIXTURES / "bn254").iterdir()) if (d / "circuit.zkey").exists()}
CIRCUITS = sorted(FOLDERS)


def test_every_fixture_has_a_gpu_vector():
    assert CIRCUITS, "no circom fixtures found"
    missing = [f for f in CIRCUITS if not (VEC / f"{f}.proof.json").exists()]
    assert not missing, f"no GPU-made proof for {missing} in {VEC}"


@pytest.mark.parametrize("name", CIRCUITS)
def test_gpu_proof_verifies_with_snarkjs_and_ours(name, tmp_path):
    meta = json.loads((VEC / f"{name}.meta.json").read_text())
    assert meta["backend"] == "gpu" and "H200" in meta["device"], meta
    proof_json, public_json = VEC / f"{name}.proof.json", VEC / f"{name}.public.json"
    vk_json = FOLDERS[name] / "verification_key.json"
    assert snarkjs_verifies(vk_json, public_json, proof_json)
    vk = formats.read_vk_json(vk_json)
    proof = formats.read_proof_json(proof_json, vk.curve)
    public = formats.read_public_json(public_json, vk.curve)
    assert verifier.verify(vk, public, proof)
    # the binary encoding (bellperson's 192 bytes, BN254's 256-byte EVM layout) holds the same proof
    assert formats.Proof.from_bytes((VEC / f"{name}.proof.bin").read_bytes(), vk.curve) == proof
    # and it is a proof of this statement only: another public input is rejected by both verifiers
    bad = [(public[0] + 1) % vk.curve.r] + public[1:]
    formats.write_public_json(tmp_path / "bad.json", bad)
    assert not verifier.verify(vk, bad, proof)
    assert not snarkjs_verifies(vk_json, tmp_path / "bad.json", proof_json)


def test_proof_and_key_from_before_issue_16_still_verify():
    """A BLS12-381 proof the GPU made before curves became a parameter (tests/vectors/gpu/pre-issue16,
    commit f69caf5), with the fixture key of that time (unchanged since): read and verified as before."""
    old = VEC / "pre-issue16"
    vk = formats.read_vk_json(FIXTURES / "example" / "verification_key.json")
    public = formats.read_public_json(old / "example.public.json", vk.curve)
    proof = formats.read_proof_json(old / "example.proof.json")  # its JSON names the curve, bls12381
    assert proof.curve == vk.curve and verifier.verify(vk, public, proof)
    assert formats.Proof.from_bytes((old / "example.proof.bin").read_bytes(), vk.curve) == proof
    assert snarkjs_verifies(
        FIXTURES / "example" / "verification_key.json", old / "example.public.json", old / "example.proof.json"
    )
