"""Prover and verifier behaviour beyond interop, on every curve: both parameter styles (bellperson on
BLS12-381 only), batching, rejection rules."""

from __future__ import annotations

import dataclasses

import pytest
from conftest import BLS, CURVES, fixture_dir, on_curves

from cuzk.backends import get_backend
from cuzk.curve import points as pts
from cuzk.curves import Curve
from cuzk.groth16 import formats, params, prover, setup, verifier, zkey
from cuzk.r1cs import r1cs, synthetic, wtns

CPU = get_backend("cpu")

# (curve, parameter style): snarkjs keys on every curve, bellperson keys where they exist
KEYED = [(c, "snarkjs") for c in CURVES] + [(c, "bellperson") for c in CURVES if c.bellperson]


@pytest.fixture(scope="module")
def bellperson_example():
    """A bellperson-style development key for the BLS12-381 example circuit (made once for the module)."""
    rc = r1cs.read_r1cs(fixture_dir(BLS) / "circuit.r1cs")
    return rc, setup.setup(rc.pce, style="bellperson", quiet=True)


@pytest.fixture(scope="module", params=KEYED, ids=lambda k: f"{k[1]}-{k[0].name}")
def keyed(request, bellperson_example):
    """The example circuit's key and witness: snarkjs' own zkey, or a bellperson development key."""
    curve, style = request.param
    d = fixture_dir(curve)
    w = wtns.read_wtns(d / "witness.wtns", curve=curve)
    if style == "snarkjs":
        return zkey.read_zkey(d / "circuit.zkey"), w
    return bellperson_example[1], w


def test_prove_and_verify_both_styles(keyed):
    pk, w = keyed
    res = prover.prove(pk, w, CPU)
    assert verifier.verify(pk.vk, res.public, res.proof)
    assert res.proof.curve == pk.curve
    assert len(res.proof.to_bytes()) == pk.curve.proof_bytes  # 192 on BLS12-381, 256 on BN254
    assert formats.Proof.from_bytes(res.proof.to_bytes(), pk.curve) == res.proof
    for phase in ("spmv", "ntt_a", "ntt_b", "ntt_c", "ntt_h", "msm", "finalize", "verify", "total"):
        assert phase in res.timings


def test_fixed_blinding_is_deterministic(keyed):
    pk, w = keyed
    a = prover.prove(pk, w, CPU, r=12345, s=67890)
    b = prover.prove(pk, w, CPU, r=12345, s=67890)
    c = prover.prove(pk, w, CPU, r=12345, s=67891)
    assert a.proof == b.proof
    assert a.proof != c.proof


def test_zero_blinding_still_verifies(keyed):
    pk, w = keyed
    res = prover.prove(pk, w, CPU, r=0, s=0)
    assert verifier.verify(pk.vk, res.public, res.proof)


def test_bad_witness_fails_self_check(keyed):
    pk, w = keyed
    bad = w.copy()
    bad[-1] = bad[-2]  # a wrong internal value
    with pytest.raises(prover.ProofCheckError, match="self-check failed on the cpu backend"):
        prover.prove(pk, bad, CPU)


def test_witness_length_checked(keyed):
    pk, w = keyed
    with pytest.raises(prover.WitnessError, match="expects 155 wires"):
        prover.prove(pk, w[:-1], CPU)


def test_bellperson_params_round_trip_prove(bellperson_example, tmp_path):
    rc, pk = bellperson_example
    w = wtns.read_wtns(fixture_dir(BLS) / "witness.wtns")
    params.write_params(tmp_path / "k.params", pk)
    params.write_vk(tmp_path / "k.vk", pk.vk)
    pk2 = params.read_params(tmp_path / "k.params", rc.pce)
    res = prover.prove(pk2, w, CPU)
    assert verifier.verify(params.read_vk(tmp_path / "k.vk"), res.public, res.proof)


@on_curves
def test_batch_verification(C, dev_circuit):
    dev = dev_circuit(C)
    pk, w = dev.pk, dev.witness
    items = [(r.public, r.proof) for r in (prover.prove(pk, w, CPU) for _ in range(4))]
    assert verifier.verify_batch(pk.vk, items)
    assert verifier.verify_batch(pk.vk, items[:1])
    assert verifier.verify_batch(pk.vk, [])
    bad = list(items)
    pub, pf = bad[2]
    bad[2] = (pub, formats.Proof(pf.a, pf.b, pf.c + C.lib.G1Point()))
    assert not verifier.verify_batch(pk.vk, bad)
    bad[2] = ([(pub[0] + 1) % C.r] + pub[1:], pf)
    assert not verifier.verify_batch(pk.vk, bad)


# ---------------------------------------------------------------------------------------------
# points outside the prime-order subgroup (on the curve, so only a subgroup check rejects them)


def _fq2_mul(a: tuple[int, int], b: tuple[int, int], q: int) -> tuple[int, int]:
    """Fq2 = Fq[u]/(u^2 + 1) on both curves."""
    return (a[0] * b[0] - a[1] * b[1]) % q, (a[0] * b[1] + a[1] * b[0]) % q


def _fq_sqrt(a: int, q: int) -> int | None:
    y = pow(a, (q + 1) // 4, q)  # q = 3 mod 4 on both curves
    return y if y * y % q == a % q else None


def _fq2_sqrt(a: tuple[int, int], q: int) -> tuple[int, int] | None:
    """A square root in Fq2 (u^2 = -1) through the norm, or None for a non-square."""
    a0, a1 = a
    if a1 == 0:
        r = _fq_sqrt(a0, q)
        return (r, 0) if r is not None else ((0, s) if (s := _fq_sqrt(-a0 % q, q)) is not None else None)
    alpha = _fq_sqrt((a0 * a0 + a1 * a1) % q, q)
    if alpha is None:
        return None
    half = pow(2, -1, q)
    x0 = _fq_sqrt((a0 + alpha) * half % q, q)
    if x0 is None:
        x0 = _fq_sqrt((a0 - alpha) * half % q, q)
    if x0 is None or x0 == 0:
        return None
    x = (x0, a1 * pow(2 * x0, -1, q) % q)
    return x if _fq2_mul(x, x, q) == (a0 % q, a1 % q) else None


def off_subgroup(C: Curve, group: int):
    """A point on the curve (G1: y^2 = x^3 + b; G2: the twist y^2 = x^3 + b2) outside the r-order subgroup."""
    q = C.q
    x = 3
    while True:
        if group == 1:
            y = _fq_sqrt((x**3 + C.b) % q, q)
            coords = None if y is None else (x, y)
        else:
            xx = (x, 1)
            rhs = _fq2_mul(_fq2_mul(xx, xx, q), xx, q)
            y2 = _fq2_sqrt(((rhs[0] + C.b2[0]) % q, (rhs[1] + C.b2[1]) % q), q)
            coords = None if y2 is None else (*xx, *y2)
        if coords is not None:
            p = pts.from_ints(C, group, coords)
            if not p.is_in_subgroup():
                return p
        x += 1


def test_verifier_rejects_point_outside_subgroup(keyed):
    pk, w = keyed
    C = pk.curve
    res = prover.prove(pk, w, CPU)
    if C.name != "bn254":  # BN254's G1 has cofactor 1: every point on the curve is in the subgroup
        bad = formats.Proof(off_subgroup(C, 1), res.proof.b, res.proof.c)
        assert not verifier.verify(pk.vk, res.public, bad)
        bad = formats.Proof(res.proof.a, res.proof.b, off_subgroup(C, 1))
        assert not verifier.verify(pk.vk, res.public, bad)
    bad = formats.Proof(res.proof.a, off_subgroup(C, 2), res.proof.c)
    assert not verifier.verify(pk.vk, res.public, bad)


def test_verifier_rejects_public_at_or_above_r(keyed):
    pk, w = keyed
    res = prover.prove(pk, w, CPU)
    public = list(res.public)
    # x + r is congruent to x, so a verifier that reduced inputs would accept it
    public[0] = public[0] + pk.curve.r
    assert not verifier.verify(pk.vk, public, res.proof)
    assert not verifier.verify(pk.vk, res.public[:-1], res.proof)


@on_curves
def test_off_curve_point_rejected_at_decode(C):
    with pytest.raises(pts.PointError, match="not on the G1 curve"):
        pts.from_ints(C, 1, (1, 1))
    g2 = pts.to_ints(C, C.lib.G2Point())
    with pytest.raises(pts.PointError):
        pts.from_ints(C, 2, (g2[0], g2[1], g2[2], (g2[3] + 1) % C.q))


def test_porep_shape_statistics():
    """The PoRep-shaped generator matches the Filecoin partition's statistics it claims."""
    fr = BLS.fr
    c = synthetic.make("porep", 20000, seed=5)
    p = c.pce
    m = p.n_constraints
    assert (p.A.nnz / m, p.B.nnz / m) == (2.35, 1.0) and abs(p.C.nnz / m - 2.05) < 1e-9
    assert 0.20 <= p.B.column_density().mean() <= 0.30
    assert p.A.column_density().mean() >= 0.7
    vals = fr.to_ints(c.witness[p.n_public + 1 :])
    assert 0.72 <= sum(v in (0, 1) for v in vals) / len(vals) <= 0.85
    assert p.unsatisfied(c.witness).size == 0
    d = synthetic.make("dense", 2000, seed=5)
    assert d.pce.unsatisfied(d.witness).size == 0
    dv = fr.to_ints(d.witness[d.pce.n_public + 1 :])
    assert sum(v in (0, 1) for v in dv) <= 2  # random full-size values, not bits


@on_curves
@pytest.mark.parametrize("shape", ["chain", "hash", "porep", "dense"])
def test_synthetic_circuits_prove(C, shape):
    log_n = 9 if shape in ("porep", "dense") else 7
    c = synthetic.make(shape, synthetic.fit_domain(shape, log_n), curve=C)
    assert c.pce.field == C.fr
    assert c.pce.unsatisfied(c.witness).size == 0
    pk = setup.setup(c.pce, quiet=True)
    assert pk.curve == C
    assert pk.domain_log == log_n
    res = prover.prove(pk, c.witness, CPU)
    assert verifier.verify(pk.vk, res.public, res.proof)


def test_synthetic_batch_witnesses_satisfy():
    """witnesses=k gives k different witnesses of one circuit, each satisfying it; the first is the
    witness a single-witness call gives (a batch adds inputs, it does not change the first)."""
    for shape in ("porep", "dense"):
        one = synthetic.make(shape, 2000, seed=7)
        many = synthetic.make(shape, 2000, seed=7, witnesses=3)
        assert len(many.others) == 2 and one.others == []
        if shape == "porep":  # dense draws its free values from the field's own generator
            assert (one.witness == many.witness).all()
        ws = [many.witness, *many.others]
        for w in ws:
            assert many.pce.unsatisfied(w).size == 0
        assert not (ws[1] == ws[0]).all() and not (ws[2] == ws[1]).all()
    with pytest.raises(ValueError, match="porep or dense"):
        synthetic.make("chain", 100, witnesses=2)


@pytest.mark.parametrize("C,style", KEYED, ids=lambda v: getattr(v, "name", v))
def test_batched_proofs_equal_one_by_one(C, style):
    """Several witnesses of one circuit proved in one pass give exactly the proofs proved one at a time
    with the same r, s (issue 20: batched proofs identical to one-by-one proofs)."""
    c = synthetic.make("porep", synthetic.fit_domain("porep", 9), seed=3, curve=C, witnesses=3)
    pk = setup.setup(c.pce, style=style, quiet=True)
    ws = [c.witness, *c.others]
    rs, ss = [11, 22, 33], [44, 55, 66]
    batch = prover.prove_batch(pk, ws, CPU, rs=rs, ss=ss, labels=["p0", "p1", "p2"])
    for i, w in enumerate(ws):
        one = prover.prove(pk, w, CPU, r=rs[i], s=ss[i])
        assert batch[i].proof == one.proof, f"proof {i} of the batch differs from its one-by-one proof"
        assert batch[i].public == one.public
        assert verifier.verify(pk.vk, batch[i].public, batch[i].proof)
    assert batch[0].proof != batch[1].proof
    pending = prover.prove_batch_start(pk, ws[:2], CPU, labels=["x", "y"])
    assert [p.extra["batch_size"] for p in pending] == [2, 2] and [p.timer.label for p in pending] == ["x", "y"]
    for p in pending:
        prover.prove_finish(p)


def test_bench_batch_dev_reports_each_size(tmp_path):
    """`cuzk-bench batch --dev` (in process): a row per batch size, batched proofs equal to one-by-one."""
    import json

    from cuzk.bench.main import main

    out = tmp_path / "b.json"
    rc = main(["batch", "--dev", "porep:9", "--sizes", "2", "1", "--reps", "1", "--backend", "cpu", "--json", str(out)])
    doc = json.loads(out.read_text())
    assert rc == 0 and doc["same_as_one_by_one"] and doc["domain_log"] == 9
    assert [r["batch"] for r in doc["rows"]] == [1, 2] and doc["rows"][0]["ratio"] == 1.0
    assert all(r["proofs_per_s"] > 0 and r["start_ms"]["median"] > 0 for r in doc["rows"])
    assert set(doc["phases"]) == {f"batch{k}.{f}" for k in (1, 2) for f in ("start", "whole", "proofs_per_s")}
    assert main(["compare", str(out), str(out)]) == 0  # its JSON is a shape the regression guard reads
    assert main(["batch", "--dev", "chain:9"]) != 0  # one witness only: a usage error, not a traceback


def test_gpu_backend_without_a_device_is_a_clear_error(monkeypatch):
    import cuzk.backends as backends
    from cuzk import CuzkError

    monkeypatch.setattr(backends, "gpu_available", lambda: False)
    monkeypatch.setattr(backends, "_backends", {})
    with pytest.raises(CuzkError, match="backend gpu: no CUDA device"):
        backends.get_backend("gpu")
    assert backends.get_backend("auto").name == "cpu"


@on_curves
def test_batch_names_the_bad_witness(C):
    c = synthetic.make("porep", synthetic.fit_domain("porep", 9), seed=3, curve=C, witnesses=2)
    pk = setup.setup(c.pce, quiet=True)
    with pytest.raises(prover.WitnessError, match="witness 1 of the batch: .* expects"):
        prover.prove_batch(pk, [c.witness, c.witness[:-1]], CPU)
    with pytest.raises(prover.WitnessError, match="at least one witness"):
        prover.prove_batch(pk, [], CPU)
    with pytest.raises(ValueError, match="a batch of 2 witnesses needs 2 r, s and labels"):
        prover.prove_batch(pk, [c.witness, c.others[0]], CPU, rs=[1])
    bad = c.others[0].copy()
    bad[-1] = C.fr.add(bad[-1:], C.fr.from_ints([1]))[0]
    with pytest.raises(prover.ProofCheckError, match="job b1: self-check failed"):
        prover.prove_batch(pk, [c.witness, bad], CPU, labels=["b0", "b1"])


@pytest.mark.parametrize("curve,style", KEYED, ids=lambda v: getattr(v, "name", v))
def test_corrupted_srs_point_fails_self_check(curve, style, dev_circuit):
    """Fault injection: one SRS point replaced by another valid point -> the self-check refuses the proof."""
    dev = dev_circuit(curve)
    pk = dev.pk if style == "snarkjs" else dev.bellperson()
    size = curve.g1_bytes
    for vec in ("a", "l", "h"):
        raw = bytearray(pk.raw[vec])
        raw[size * 3 : size * 4] = pts.to_lem(curve, 1, [curve.lib.G1Point()])  # a valid point, but the wrong one
        bad = dataclasses.replace(pk, raw={**pk.raw, vec: bytes(raw)}, _objs={})
        with pytest.raises(prover.ProofCheckError, match="self-check failed"):
            prover.prove(bad, dev.witness, CPU)


def test_timing_lines_on_stderr(tmp_path):
    import os
    import subprocess
    import sys

    ex = fixture_dir(BLS)
    env = {**os.environ, "CUZK_TIMING": "1"}
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
