"""Prover and verifier behaviour beyond interop: both parameter styles, batching, rejection rules."""

from __future__ import annotations

from pathlib import Path

import pytest
from py_arkworks_bls12381 import G1Point, G2Point

from cuzk.curve import points as pts
from cuzk.field.constants import Q, R
from cuzk.groth16 import formats, params, prover, setup, verifier
from cuzk.r1cs import r1cs, synthetic, wtns

FIX = Path(__file__).resolve().parents[1] / "tests" / "fixtures"


@pytest.fixture(scope="module")
def circuit():
    rc = r1cs.read_r1cs(FIX / "example" / "circuit.r1cs")
    return rc, wtns.read_wtns(FIX / "example" / "witness.wtns")


@pytest.fixture(scope="module", params=["snarkjs", "bellperson"])
def keyed(request, circuit):
    rc, w = circuit
    return setup.setup(rc.pce, style=request.param, quiet=True), w


def test_prove_and_verify_both_styles(keyed):
    pk, w = keyed
    res = prover.prove(pk, w)
    assert verifier.verify(pk.vk, res.public, res.proof)
    assert len(res.proof.to_bytes()) == 192
    assert formats.Proof.from_bytes(res.proof.to_bytes()) == res.proof
    for phase in ("spmv", "ntt_a", "ntt_b", "ntt_c", "ntt_h", "msm", "finalize", "verify", "total"):
        assert phase in res.timings


def test_fixed_blinding_is_deterministic(keyed):
    pk, w = keyed
    a = prover.prove(pk, w, r=12345, s=67890)
    b = prover.prove(pk, w, r=12345, s=67890)
    c = prover.prove(pk, w, r=12345, s=67891)
    assert a.proof == b.proof
    assert a.proof != c.proof


def test_zero_blinding_still_verifies(keyed):
    pk, w = keyed
    res = prover.prove(pk, w, r=0, s=0)
    assert verifier.verify(pk.vk, res.public, res.proof)


def test_bad_witness_fails_self_check(keyed):
    pk, w = keyed
    bad = w.copy()
    bad[-1] = bad[-2]  # a wrong internal value
    with pytest.raises(prover.ProofCheckError, match="self-check failed on the cpu backend"):
        prover.prove(pk, bad)


def test_witness_length_checked(keyed):
    pk, w = keyed
    with pytest.raises(prover.WitnessError, match="expects 155 wires"):
        prover.prove(pk, w[:-1])


def test_bellperson_params_round_trip_prove(circuit, tmp_path):
    rc, w = circuit
    pk = setup.setup(rc.pce, style="bellperson", quiet=True)
    params.write_params(tmp_path / "k.params", pk)
    params.write_vk(tmp_path / "k.vk", pk.vk)
    pk2 = params.read_params(tmp_path / "k.params", rc.pce)
    res = prover.prove(pk2, w)
    assert verifier.verify(params.read_vk(tmp_path / "k.vk"), res.public, res.proof)


def test_batch_verification(circuit):
    rc, w = circuit
    pk = setup.setup(rc.pce, quiet=True)
    items = [(r.public, r.proof) for r in (prover.prove(pk, w) for _ in range(4))]
    assert verifier.verify_batch(pk.vk, items)
    assert verifier.verify_batch(pk.vk, items[:1])
    assert verifier.verify_batch(pk.vk, [])
    bad = list(items)
    pub, pf = bad[2]
    bad[2] = (pub, formats.Proof(pf.a, pf.b, pf.c + G1Point()))
    assert not verifier.verify_batch(pk.vk, bad)
    bad[2] = ([(pub[0] + 1) % R] + pub[1:], pf)
    assert not verifier.verify_batch(pk.vk, bad)


def _off_subgroup_g1() -> G1Point:
    """A point on y^2 = x^3 + 4 over Fq that is not in the r-order subgroup."""
    x = 3
    while True:
        rhs = (x**3 + 4) % Q
        y = pow(rhs, (Q + 1) // 4, Q)
        if y * y % Q == rhs:
            p = pts.g1_from_ints(x, y)
            if not p.is_in_subgroup():
                return p
        x += 1


def test_verifier_rejects_point_outside_subgroup(keyed):
    pk, w = keyed
    res = prover.prove(pk, w)
    bad = formats.Proof(_off_subgroup_g1(), res.proof.b, res.proof.c)
    assert not verifier.verify(pk.vk, res.public, bad)
    bad = formats.Proof(res.proof.a, res.proof.b, _off_subgroup_g1())
    assert not verifier.verify(pk.vk, res.public, bad)


def test_verifier_rejects_public_at_or_above_r(keyed):
    pk, w = keyed
    res = prover.prove(pk, w)
    public = list(res.public)
    # x + r is congruent to x, so a verifier that reduced inputs would accept it
    public[0] = public[0] + R
    assert not verifier.verify(pk.vk, public, res.proof)
    assert not verifier.verify(pk.vk, res.public[:-1], res.proof)


def test_off_curve_point_rejected_at_decode():
    with pytest.raises(pts.PointError, match="not on the G1 curve"):
        pts.g1_from_ints(1, 1)
    g2 = pts.g2_to_ints(G2Point())
    with pytest.raises(pts.PointError):
        pts.g2_from_ints(g2[0], g2[1], g2[2], (g2[3] + 1) % Q)


def test_porep_shape_statistics():
    """The PoRep-shaped generator matches the Filecoin partition's statistics it claims."""
    from cuzk.field import fr as _fr

    c = synthetic.make("porep", 20000, seed=5)
    p = c.pce
    m = p.n_constraints
    assert (p.A.nnz / m, p.B.nnz / m) == (2.35, 1.0) and abs(p.C.nnz / m - 2.05) < 1e-9
    assert 0.20 <= p.B.column_density().mean() <= 0.30
    assert p.A.column_density().mean() >= 0.7
    vals = _fr.to_ints(c.witness[p.n_public + 1 :])
    assert 0.72 <= sum(v in (0, 1) for v in vals) / len(vals) <= 0.85
    assert p.unsatisfied(c.witness).size == 0
    d = synthetic.make("dense", 2000, seed=5)
    assert d.pce.unsatisfied(d.witness).size == 0
    dv = _fr.to_ints(d.witness[d.pce.n_public + 1 :])
    assert sum(v in (0, 1) for v in dv) <= 2  # random full-size values, not bits


def test_synthetic_circuits_prove(tmp_path):
    for shape in ("chain", "hash", "porep", "dense"):
        c = synthetic.make(shape, synthetic.fit_domain(shape, 9 if shape in ("porep", "dense") else 7))
        assert c.pce.unsatisfied(c.witness).size == 0
        pk = setup.setup(c.pce, quiet=True)
        assert pk.domain_log == (9 if shape in ("porep", "dense") else 7)
        res = prover.prove(pk, c.witness)
        assert verifier.verify(pk.vk, res.public, res.proof)


def test_corrupted_srs_point_fails_self_check(circuit):
    """Fault injection: one SRS point replaced by another valid point -> the self-check refuses the proof."""
    from cuzk.curve import points as pts_

    rc, w = circuit
    for style in ("snarkjs", "bellperson"):
        pk = setup.setup(rc.pce, style=style, quiet=True)
        for vec in ("a", "l", "h"):
            raw = bytearray(pk.raw[vec])
            raw[96 * 3 : 96 * 4] = pts_.g1_to_lem([G1Point()])  # a valid point, but the wrong one
            bad = pk.__class__(**{**pk.__dict__, "raw": {**pk.raw, vec: bytes(raw)}, "_objs": {}})
            with pytest.raises(prover.ProofCheckError, match="self-check failed"):
                prover.prove(bad, w)


def test_timing_lines_on_stderr(tmp_path):
    import subprocess
    import sys

    ex = FIX / "example"
    env = {**__import__("os").environ, "CUZK_TIMING": "1"}
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "cuzk",
            "prove",
            "-q",
            ex / "circuit.zkey",
            ex / "witness.wtns",
            tmp_path / "p.json",
            tmp_path / "q.json",
        ],
        capture_output=True,
        text=True,
        env=env,
    )
    assert out.returncode == 0, out.stderr
    lines = [ln for ln in out.stderr.splitlines() if ln.startswith("CUZK_TIMING ")]
    phases = {ln.split()[1].split("=")[1] for ln in lines}
    assert {"spmv", "ntt_a", "ntt_h", "msm", "finalize", "verify", "total"} <= phases, phases
    for ln in lines:
        assert float(ln.split()[2].split("=")[1]) >= 0
