"""File formats: .r1cs / .wtns / .zkey readers against snarkjs' JSON exports, write/read round trips
(zkey, wtns, r1cs, snarkjs JSON, binary proofs, bellperson .params / .vk), and malformed inputs, each of
which must raise a CuzkError whose message names the file and the problem.

Every test that takes the fixture ``C`` runs on each curve (the circom fixtures of tests/fixtures and
tests/fixtures/bn254); bellperson's .params / .vk and 192-byte compressed proofs exist on BLS12-381 only."""

from __future__ import annotations

import json
import struct

import numpy as np
import pytest
from conftest import BLS, BN254, CURVES, fixture_dir
from hypothesis import given, settings
from hypothesis import strategies as st

from cuzk import CuzkError
from cuzk.backends import get_backend
from cuzk.curve import points as pts
from cuzk.groth16 import formats as F
from cuzk.groth16.keys import BELLPERSON, SNARKJS
from cuzk.groth16.params import read_params, read_vk, write_params, write_vk
from cuzk.groth16.setup import setup
from cuzk.groth16.verifier import verify
from cuzk.groth16.zkey import _COEF, parse_zkey, read_zkey, write_zkey
from cuzk.r1cs import synthetic
from cuzk.r1cs.binfile import FormatError, parse_binfile, write_binfile
from cuzk.r1cs.r1cs import parse_r1cs, read_r1cs, write_r1cs
from cuzk.r1cs.wtns import parse_wtns, read_witness, read_wtns, write_wtns, wtns_bytes

# a 255-bit prime that is neither curve's r (the largest prime below 2^255)
UNKNOWN_PRIME = 2**255 - 19


def other_curve(C):
    """The other curve of the two (for files of one curve given where the other is expected)."""
    return BN254 if C == BLS else BLS


# ---------------------------------------------------------------------------------------------
# helpers


def sections(data: bytes, kind: str, version: int = 1) -> list[tuple[int, int, int]]:
    """(sid, offset, size) of every section, in file order."""
    bf = parse_binfile(data, "<fixture>", kind, (version,))
    out = [(sid, off, size) for sid, entries in bf.sections.items() for off, size in entries]
    return sorted(out, key=lambda t: t[1])


def section_at(data: bytes, kind: str, sid: int, version: int = 1) -> tuple[int, int]:
    (hit,) = [(off, size) for s, off, size in sections(data, kind, version) if s == sid]
    return hit


def patch(data: bytes, offset: int, new: bytes) -> bytes:
    return data[:offset] + new + data[offset + len(new) :]


def rebuild(path, data: bytes, kind: str, version: int = 1, drop=(), replace=None) -> None:
    """Rewrite a container (through binfile.write_binfile) without ``drop`` / with replaced payloads."""
    replace = replace or {}
    secs = [
        (sid, replace.get(sid, data[off : off + size])) for sid, off, size in sections(data, kind, version) if sid not in drop
    ]
    write_binfile(path, kind, version, secs)


def raises_naming(exc_type, path, *fragments):
    """Context manager: exc_type raised, message names ``path`` and every fragment."""

    class _Ctx:
        def __enter__(self):
            self._cm = pytest.raises(exc_type)
            self.info = self._cm.__enter__()
            return self.info

        def __exit__(self, *exc):
            handled = self._cm.__exit__(*exc)
            if handled:
                msg = str(self.info.value)
                assert str(path) in msg, f"message does not name {path}: {msg}"
                for f in fragments:
                    assert f in msg, f"message lacks {f!r}: {msg}"
            return handled

    return _Ctx()


def g1_json(e):
    """snarkjs JSON G1 entry -> (x, y), or None for infinity (checking the exact encoding)."""
    assert isinstance(e, list) and len(e) == 3
    if e[2] == "0":
        assert e == ["0", "1", "0"]
        return None
    assert e[2] == "1"
    return int(e[0]), int(e[1])


def g2_json(e):
    assert isinstance(e, list) and len(e) == 3
    if e[2] == ["0", "0"]:
        assert e == [["0", "0"], ["1", "0"], ["0", "0"]]
        return None
    assert e[2] == ["1", "0"]
    return int(e[0][0]), int(e[0][1]), int(e[1][0]), int(e[1][1])


def lem_coord(C, canonical: int) -> bytes:
    """A base-field coordinate in the zkey's little-endian Montgomery form (n8q bytes)."""
    return (canonical * pow(2, 8 * C.n8q, C.q) % C.q).to_bytes(C.n8q, "little")


def canon_coord(C, lem: bytes) -> int:
    return int.from_bytes(lem, "little") * pow(2, -8 * C.n8q, C.q) % C.q


def csr_rows(m) -> list[dict[int, int]]:
    vals = m.field.to_ints(m.vals)
    rows = []
    for r in range(m.n_rows):
        d = {}
        for j in range(int(m.row_ptr[r]), int(m.row_ptr[r + 1])):
            assert int(m.cols[j]) not in d, "duplicate column in a row"
            d[int(m.cols[j])] = vals[j]
        rows.append(d)
    return rows


def csr_equal(a, b) -> bool:
    return (
        a.n_cols == b.n_cols
        and np.array_equal(a.row_ptr, b.row_ptr)
        and np.array_equal(a.cols, b.cols)
        and np.array_equal(a.vals, b.vals)
    )


def vk_equal(a, b, extras=True) -> bool:
    ok = a.alpha1 == b.alpha1 and a.beta2 == b.beta2 and a.gamma2 == b.gamma2 and a.delta2 == b.delta2 and a.ic == b.ic
    if extras:
        ok = ok and a.beta1 == b.beta1 and a.delta1 == b.delta1
    return ok


@pytest.fixture(scope="module", params=CURVES, ids=lambda c: c.name)
def C(request):
    """The curve a test runs on (every test taking it runs once per curve)."""
    return request.param


@pytest.fixture(scope="module")
def ex(C):
    return fixture_dir(C, "example")


@pytest.fixture(scope="module")
def zkey_json(ex):
    return json.loads((ex / "zkey.json").read_text())


@pytest.fixture(scope="module")
def example_pk(ex):
    return read_zkey(ex / "circuit.zkey")


@pytest.fixture(scope="module")
def example_r1cs(ex):
    return read_r1cs(ex / "circuit.r1cs")


@pytest.fixture(scope="module")
def bls_example_r1cs():
    return read_r1cs(fixture_dir(BLS, "example") / "circuit.r1cs")


@pytest.fixture(scope="module")
def bellperson_other():
    """A bellperson-style key for the BLS12-381 `other` fixture circuit (development setup)."""
    r = read_r1cs(fixture_dir(BLS, "other") / "circuit.r1cs")
    return r, setup(r.pce, style=BELLPERSON, quiet=True)


# ---------------------------------------------------------------------------------------------
# readers vs the snarkjs JSON oracles


def test_r1cs_header_vs_json(C, ex, example_r1cs):
    rj = json.loads((ex / "r1cs.json").read_text())
    r = example_r1cs
    assert rj["n8"] == 32 and int(rj["prime"]) == C.r
    assert r.curve == C and r.pce.field == C.fr  # detected from the header's prime
    assert (r.n_wires, r.n_pub_out, r.n_pub_in, r.n_prv_in, r.n_labels, r.n_constraints) == (
        rj["nVars"],
        rj["nOutputs"],
        rj["nPubInputs"],
        rj["nPrvInputs"],
        rj["nLabels"],
        rj["nConstraints"],
    )
    assert (r.n_wires, r.n_constraints, r.n_public) == (155, 149, 5)  # README table
    assert r.pce.n_wires == r.n_wires and r.pce.n_public == 5 and r.pce.n_constraints == 149
    assert r.wire_to_label is not None and r.wire_to_label.tolist() == rj["map"]


def test_r1cs_constraints_vs_json(C, ex, example_r1cs):
    rj = json.loads((ex / "r1cs.json").read_text())
    mats = [csr_rows(m) for m in (example_r1cs.pce.A, example_r1cs.pce.B, example_r1cs.pce.C)]
    assert len(rj["constraints"]) == example_r1cs.n_constraints
    big = 0
    for i, cons in enumerate(rj["constraints"]):
        for m in range(3):
            expect = {int(k): int(v) for k, v in cons[m].items()}
            assert all(0 <= v < C.r for v in expect.values())
            assert mats[m][i] == expect, f"constraint {i} matrix {'ABC'[m]}"
            big += sum(v > 2**128 for v in expect.values())
    assert big > 0  # full-width coefficients (r - 1, round constants) were compared


def test_wtns_vs_json(C, ex):
    wj = [int(x) for x in json.loads((ex / "witness.json").read_text())]
    w = read_wtns(ex / "witness.wtns", expected_wires=155)
    assert w.shape == (155, 4)
    assert C.fr.to_ints(w) == wj
    assert wj[0] == 1 and wj[5] == C.r - 5  # input b = r - 5
    wit = read_witness(ex / "witness.wtns")
    assert wit.curve == C and np.array_equal(wit.values, w)  # the curve is detected from the header


def test_zkey_header_vs_json(C, example_pk, zkey_json):
    pk, zj = example_pk, zkey_json
    assert zj["protocol"] == "groth16" and zj["n8q"] == C.n8q and zj["n8r"] == 32
    assert int(zj["q"]) == C.q and int(zj["r"]) == C.r
    assert pk.style == SNARKJS
    assert pk.curve == C and pk.vk.curve == C  # detected from the header's primes
    assert (pk.n_vars, pk.n_public, pk.domain_size, pk.domain_log) == (zj["nVars"], zj["nPublic"], zj["domainSize"], zj["power"])
    vk = pk.vk
    assert pts.to_ints(C, vk.alpha1) == g1_json(zj["vk_alpha_1"])
    assert pts.to_ints(C, vk.beta1) == g1_json(zj["vk_beta_1"])
    assert pts.to_ints(C, vk.delta1) == g1_json(zj["vk_delta_1"])
    assert pts.to_ints(C, vk.beta2) == g2_json(zj["vk_beta_2"])
    assert pts.to_ints(C, vk.gamma2) == g2_json(zj["vk_gamma_2"])
    assert pts.to_ints(C, vk.delta2) == g2_json(zj["vk_delta_2"])
    assert [pts.to_ints(C, p) for p in vk.ic] == [g1_json(e) for e in zj["IC"]]
    assert F.g1_to_json(vk.alpha1) == zj["vk_alpha_1"] and F.g2_to_json(vk.beta2) == zj["vk_beta_2"]


@pytest.mark.parametrize(
    "name,json_key,group", [("a", "A", 1), ("b1", "B1", 1), ("b2", "B2", 2), ("l", "C", 1), ("h", "hExps", 1)]
)
def test_zkey_points_vs_json(C, example_pk, zkey_json, name, json_key, group):
    pk, zj = example_pk, zkey_json
    entries = zj[json_key]
    if name == "l":
        # snarkjs exports C with null for the constant and public wires, which have no C point
        assert len(entries) == pk.n_vars and entries[: pk.n_public + 1] == [None] * (pk.n_public + 1)
        entries = entries[pk.n_public + 1 :]
    pts_ = pk.points(name)
    assert len(pts_) == len(entries) == pk.count(name)
    from_json, to_json = (g1_json, F.g1_to_json) if group == 1 else (g2_json, F.g2_to_json)
    assert [pts.to_ints(C, p) for p in pts_] == [from_json(e) for e in entries]
    # our JSON writer produces snarkjs' exact encoding, infinity included
    assert [to_json(p) for p in pts_] == entries
    # the cheap raw-bytes mask agrees with the decoded points
    assert pk.nonzero_mask(name).tolist() == [e is not None and from_json(e) is not None for e in entries]
    if name in ("a", "b1", "b2"):
        assert any(from_json(e) is None for e in entries)  # the infinity encoding was exercised


def test_zkey_coefficients_vs_json(C, example_pk, zkey_json, example_r1cs):
    pk, zj = example_pk, zkey_json
    cc = zj["ccoefs"]
    assert len(cc) == pk.A.nnz + pk.B.nnz
    for m, mat in ((0, pk.A), (1, pk.B)):
        sel = [e for e in cc if e["matrix"] == m]
        sel.sort(key=lambda e: e["constraint"])  # stable: keeps file order within a row
        vals = C.fr.to_ints(mat.vals)
        ours = []
        for r in range(mat.n_rows):
            for j in range(int(mat.row_ptr[r]), int(mat.row_ptr[r + 1])):
                ours.append((r, int(mat.cols[j]), vals[j]))
        assert ours == [(e["constraint"], e["signal"], int(e["value"])) for e in sel]
        assert mat.n_rows == pk.domain_size and mat.n_cols == pk.n_vars
    # the zkey matrices are the circuit's A and B plus one A row {i: 1} per public signal
    n_in = pk.n_public + 1
    m = example_r1cs.n_constraints
    zA, zB = csr_rows(pk.A), csr_rows(pk.B)
    rA, rB = csr_rows(example_r1cs.pce.A), csr_rows(example_r1cs.pce.B)
    assert zA[:m] == rA and zB[:m] == rB
    assert zA[m : m + n_in] == [{i: 1} for i in range(n_in)]
    assert zA[m + n_in :] == [{}] * (pk.domain_size - m - n_in) and zB[m:] == [{}] * (pk.domain_size - m)


def test_vk_json_vs_zkey(C, ex, example_pk):
    vk = F.read_vk_json(ex / "verification_key.json")
    assert vk.curve == C  # from the JSON's "curve" field
    assert vk_equal(vk, example_pk.vk, extras=False)
    assert vk.n_public == 5
    # re-encoding reproduces snarkjs' file field by field (vk_alphabeta_12 included)
    assert F.vk_to_json(vk) == json.loads((ex / "verification_key.json").read_text())


def test_fixture_proof_decodes_and_verifies(C):
    for circ in ("example", "other"):
        d = fixture_dir(C, circ)
        vk = F.read_vk_json(d / "verification_key.json")
        proof = F.read_proof_json(d / "proof.json")
        assert proof.curve == C
        assert F.read_proof_json(d / "proof.json", C) == proof  # the key's curve, as a verifier passes it
        public = F.read_public_json(d / "public.json", C)
        assert verify(vk, public, proof)
        assert not verify(vk, [(public[0] + 1) % C.r] + public[1:], proof)


# the example's first output (digest) differs between the curves; the others are small integers
EXAMPLE_DIGEST = {
    "bls12_381": 40568509574310558965038730462166991494696909459791441996462883703100846579449,
    "bn254": 331435615585706922988168256395451221180043788623829697190803258380714444052,
}


def test_public_json_values(C):
    assert F.read_public_json(fixture_dir(C, "example") / "public.json", C) == [
        EXAMPLE_DIGEST[C.name],
        123017089,
        448022400839930,
        3,
        C.r - 5,
    ]
    assert F.read_public_json(fixture_dir(C, "other") / "public.json", C) == [43589145607, 7]


# ---------------------------------------------------------------------------------------------
# round trips


def test_zkey_write_read_round_trip(C, ex, example_pk, tmp_path):
    src = (ex / "circuit.zkey").read_bytes()
    out = tmp_path / "rt.zkey"
    write_zkey(out, example_pk)
    new = out.read_bytes()
    a = {sid: src[off : off + size] for sid, off, size in sections(src, "zkey")}
    b = {sid: new[off : off + size] for sid, off, size in sections(new, "zkey")}
    assert sorted(b) == list(range(1, 11))
    for sid in (1, 2, 3, 5, 6, 7, 8, 9):
        assert a[sid] == b[sid], f"section {sid} differs"

    # section 4: same coefficient records (snarkjs interleaves A and B by constraint, we write A then B)
    def rec(raw):
        return sorted(raw[4 + 44 * i : 4 + 44 * (i + 1)] for i in range(struct.unpack_from("<I", raw)[0]))

    assert a[4][:4] == b[4][:4] and len(a[4]) == len(b[4])
    assert rec(a[4]) == rec(b[4])
    pk2 = read_zkey(out)
    assert (pk2.n_vars, pk2.n_public, pk2.domain_log) == (example_pk.n_vars, example_pk.n_public, example_pk.domain_log)
    assert csr_equal(pk2.A, example_pk.A) and csr_equal(pk2.B, example_pk.B)
    assert all(bytes(pk2.raw[k]) == bytes(example_pk.raw[k]) for k in ("a", "b1", "b2", "l", "h"))
    assert vk_equal(pk2.vk, example_pk.vk)
    assert pk2.fingerprint == example_pk.fingerprint
    # and writing again is a fixed point
    write_zkey(tmp_path / "rt2.zkey", pk2)
    assert (tmp_path / "rt2.zkey").read_bytes() == new
    assert parse_zkey(new, "mem").n_vars == example_pk.n_vars
    assert pk2.curve == C


def test_zkey_from_setup_round_trip(C, dev_circuit, tmp_path):
    dev = dev_circuit(C)
    pk = dev.pk
    write_zkey(tmp_path / "s.zkey", pk)
    pk2 = read_zkey(tmp_path / "s.zkey")
    assert pk2.curve == C
    assert csr_equal(pk2.A, pk.A) and csr_equal(pk2.B, pk.B)
    assert all(bytes(pk2.raw[k]) == bytes(pk.raw[k]) for k in pk.raw)
    assert vk_equal(pk2.vk, pk.vk)
    if C.bellperson:
        with pytest.raises(ValueError):
            write_zkey(tmp_path / "b.zkey", dev.bellperson())
    else:  # bellperson keys exist on BLS12-381 only
        with pytest.raises(ValueError, match="BLS12-381"):
            setup(dev.pce, style=BELLPERSON, quiet=True)


def test_wtns_round_trip_fixture(C, ex, tmp_path):
    src = (ex / "witness.wtns").read_bytes()
    w = read_wtns(ex / "witness.wtns", curve=C)
    write_wtns(tmp_path / "w.wtns", w, C)
    assert (tmp_path / "w.wtns").read_bytes() == src  # byte-identical to snarkjs' file
    assert wtns_bytes(w, C) == src
    assert np.array_equal(read_wtns(tmp_path / "w.wtns"), w)


@pytest.mark.parametrize("curve", CURVES, ids=lambda c: c.name)
@settings(max_examples=40, deadline=None)
@given(st.data())
def test_wtns_round_trip_random(curve, data):
    R = curve.r
    rest = data.draw(st.lists(st.one_of(st.sampled_from([0, 1, R - 1]), st.integers(0, R - 1)), max_size=30))
    vals = [1] + rest
    w = curve.fr.from_ints(vals)
    raw = wtns_bytes(w, curve)
    back = parse_wtns(raw, "mem", expected_wires=len(vals), curve=curve)
    assert curve.fr.to_ints(back) == vals


def test_r1cs_round_trip_fixture(C, example_r1cs, tmp_path):
    r = example_r1cs
    write_r1cs(tmp_path / "c.r1cs", r.pce, r.n_pub_out, r.n_pub_in, r.n_prv_in)
    r2 = read_r1cs(tmp_path / "c.r1cs")
    assert r2.curve == C
    assert (r2.n_wires, r2.n_pub_out, r2.n_pub_in, r2.n_prv_in, r2.n_constraints) == (
        r.n_wires,
        r.n_pub_out,
        r.n_pub_in,
        r.n_prv_in,
        r.n_constraints,
    )
    for m1, m2 in ((r.pce.A, r2.pce.A), (r.pce.B, r2.pce.B), (r.pce.C, r2.pce.C)):
        assert csr_equal(m1, m2)
    assert r2.pce.n_public == r.pce.n_public
    assert r2.wire_to_label.tolist() == list(range(r.n_wires))


@pytest.mark.parametrize("shape", ["chain", "hash"])
def test_r1cs_round_trip_synthetic(C, shape, tmp_path):
    circ = synthetic.make(shape, 40, seed=3, curve=C)
    write_r1cs(tmp_path / "s.r1cs", circ.pce, circ.n_pub_out, circ.n_pub_in, circ.n_prv_in)
    r = read_r1cs(tmp_path / "s.r1cs")
    assert r.curve == C
    for m1, m2 in ((circ.pce.A, r.pce.A), (circ.pce.B, r.pce.B), (circ.pce.C, r.pce.C)):
        assert csr_equal(m1, m2)
    assert r.pce.unsatisfied(circ.witness).size == 0
    assert (r.n_pub_out, r.n_pub_in, r.n_prv_in) == (circ.n_pub_out, circ.n_pub_in, circ.n_prv_in)


def test_vk_json_round_trip(C, example_pk, tmp_path):
    F.write_vk_json(tmp_path / "vk.json", example_pk.vk)
    vk = F.read_vk_json(tmp_path / "vk.json")
    assert vk_equal(vk, example_pk.vk, extras=False)
    obj = json.loads((tmp_path / "vk.json").read_text())
    assert obj["nPublic"] == 5 and obj["curve"] == C.snarkjs_name and obj["protocol"] == "groth16"
    assert C.snarkjs_name == {"bls12_381": "bls12381", "bn254": "bn128"}[C.name]


def test_proof_json_and_bytes_round_trip(C, ex, tmp_path):
    src = json.loads((ex / "proof.json").read_text())
    proof = F.read_proof_json(ex / "proof.json")
    F.write_proof_json(tmp_path / "p.json", proof)
    assert json.loads((tmp_path / "p.json").read_text()) == src
    assert F.read_proof_json(tmp_path / "p.json") == proof
    raw = proof.to_bytes()
    assert len(raw) == C.proof_bytes == {"bls12_381": 192, "bn254": 256}[C.name]
    back = F.Proof.from_bytes(raw, C)
    assert back == proof and back.to_bytes() == raw
    assert F.proof_to_json(back) == src
    if C.bellperson:
        # the three parts sit where bellperson puts them
        assert raw[:48] == proof.a.to_compressed_bytes() and raw[144:] == proof.c.to_compressed_bytes()
        assert raw[0] & 0x80 and raw[48] & 0x80 and raw[144] & 0x80  # compression flags
    else:
        # EVM layout: A.x, A.y, B.x.c1, B.x.c0, B.y.c1, B.y.c0, C.x, C.y as 32-byte big-endian words
        words = [int.from_bytes(raw[32 * i : 32 * i + 32], "big") for i in range(8)]
        a, b, c = src["pi_a"], src["pi_b"], src["pi_c"]
        assert words == [int(v) for v in (a[0], a[1], b[0][1], b[0][0], b[1][1], b[1][0], c[0], c[1])]


def test_proof_identity_points_round_trip(C):
    lib = C.lib
    p = F.Proof(lib.G1Point.identity(), lib.G2Point.identity(), lib.G1Point())
    obj = F.proof_to_json(p)
    assert obj["pi_a"] == ["0", "1", "0"] and obj["pi_b"] == [["0", "0"], ["1", "0"], ["0", "0"]]
    assert obj["curve"] == C.snarkjs_name
    assert F.proof_from_json(obj) == p
    assert F.Proof.from_bytes(p.to_bytes(), C) == p


def test_public_json_round_trip(C, ex, tmp_path):
    vals = F.read_public_json(ex / "public.json", C)
    F.write_public_json(tmp_path / "pub.json", vals)
    assert json.loads((tmp_path / "pub.json").read_text()) == json.loads((ex / "public.json").read_text())
    assert F.read_public_json(tmp_path / "pub.json", C) == vals


def test_bellperson_params_round_trip(bellperson_other, tmp_path):
    r, pk = bellperson_other
    write_params(tmp_path / "k.params", pk)
    pk2 = read_params(tmp_path / "k.params", r.pce)
    assert pk2.style == BELLPERSON
    assert (pk2.n_vars, pk2.n_public, pk2.domain_log) == (pk.n_vars, pk.n_public, pk.domain_log)
    for k in ("a", "b1", "b2", "l", "h"):
        assert bytes(pk2.raw[k]) == bytes(pk.raw[k]), k
    assert vk_equal(pk2.vk, pk.vk)
    assert csr_equal(pk2.A, pk.A) and csr_equal(pk2.B, pk.B) and csr_equal(pk2.C, pk.C)
    for d in ("a_aux_density", "b_inp_density", "b_aux_density"):
        assert np.array_equal(getattr(pk2, d), getattr(pk, d))
    assert pk2.fingerprint == pk.fingerprint
    # writing the re-read key reproduces the file
    write_params(tmp_path / "k2.params", pk2)
    assert (tmp_path / "k2.params").read_bytes() == (tmp_path / "k.params").read_bytes()
    with pytest.raises(ValueError):
        write_params(tmp_path / "x.params", read_zkey(fixture_dir(BLS, "other") / "circuit.zkey"))
    with pytest.raises(ValueError):  # bellperson parameters are BLS12-381's
        write_params(tmp_path / "y.params", read_zkey(fixture_dir(BN254, "other") / "circuit.zkey"))


def test_bellperson_vk_round_trip(bellperson_other, tmp_path):
    _, pk = bellperson_other
    write_vk(tmp_path / "k.vk", pk.vk)
    vk = read_vk(tmp_path / "k.vk")
    assert vk_equal(vk, pk.vk)
    size = (tmp_path / "k.vk").stat().st_size
    assert size == 3 * 96 + 3 * 192 + 4 + 96 * len(pk.vk.ic)


# ---------------------------------------------------------------------------------------------
# malformed .r1cs


@pytest.fixture(scope="module")
def r1cs_bytes(ex):
    return (ex / "circuit.r1cs").read_bytes()


def test_r1cs_truncated_everywhere(r1cs_bytes):
    # every prefix (parsed from memory under a name) is rejected as truncated
    secs = sections(r1cs_bytes, "r1cs")
    for cut in range(0, len(r1cs_bytes)):
        with pytest.raises(FormatError) as e:
            parse_r1cs(r1cs_bytes[:cut], "cut.r1cs")
        msg = str(e.value)
        assert "cut.r1cs" in msg and "truncated" in msg, (cut, msg)
    assert len(secs) == 3


@pytest.mark.parametrize("cut", [0, 3, 11, 12, 20, 23, 500, -1])
def test_r1cs_truncated_file(r1cs_bytes, tmp, cut):
    data = r1cs_bytes[:cut]
    path = tmp("t.r1cs", data)
    with raises_naming(FormatError, path, "empty" if cut == 0 else "truncated"):
        read_r1cs(path)


def test_r1cs_truncated_at_section_boundaries(r1cs_bytes, tmp):
    for _sid, off, size in sections(r1cs_bytes, "r1cs"):
        for cut in (off - 12, off, off + size - 1):
            path = tmp("b.r1cs", r1cs_bytes[:cut])
            with raises_naming(FormatError, path, "truncated"):
                read_r1cs(path)


def test_r1cs_wrong_magic(r1cs_bytes, tmp):
    path = tmp("m.r1cs", b"wtns" + r1cs_bytes[4:])
    with raises_naming(FormatError, path, "not a .r1cs file"):
        read_r1cs(path)


def test_r1cs_wrong_version(r1cs_bytes, tmp):
    path = tmp("v.r1cs", patch(r1cs_bytes, 4, struct.pack("<I", 2)))
    with raises_naming(FormatError, path, "unsupported .r1cs version 2"):
        read_r1cs(path)


def test_r1cs_wrong_prime(C, r1cs_bytes, tmp):
    # the prime names the curve: one that is no supported curve's scalar field is refused in one line
    off, _ = section_at(r1cs_bytes, "r1cs", 1)
    assert int.from_bytes(r1cs_bytes[off + 4 : off + 36], "little") == C.r
    path = tmp("p.r1cs", patch(r1cs_bytes, off + 4, UNKNOWN_PRIME.to_bytes(32, "little")))
    with raises_naming(
        FormatError,
        path,
        "section 1",
        f"prime {UNKNOWN_PRIME:#x}",
        "not the scalar field of a supported curve",
        "BLS12-381",
        "BN254",
    ) as e:
        read_r1cs(path)
    assert "\n" not in str(e.value)


def test_r1cs_of_each_curve_detected(C):
    for circ in ("example", "other"):
        r = read_r1cs(fixture_dir(C, circ) / "circuit.r1cs")
        assert r.curve == C and r.pce.field == C.fr


def test_r1cs_wrong_field_size(r1cs_bytes, tmp):
    off, _ = section_at(r1cs_bytes, "r1cs", 1)
    path = tmp("n8.r1cs", patch(r1cs_bytes, off, struct.pack("<I", 48)))
    with raises_naming(FormatError, path, "n8 = 48"):
        read_r1cs(path)


@pytest.mark.parametrize("sid,name", [(1, "header"), (2, "constraints")])
def test_r1cs_section_missing(r1cs_bytes, tmp_path, sid, name):
    path = tmp_path / "s.r1cs"
    rebuild(path, r1cs_bytes, "r1cs", drop=(sid,))
    with raises_naming(FormatError, path, f"missing section {sid} ({name})"):
        read_r1cs(path)


def test_r1cs_without_wire_map_is_fine(r1cs_bytes, tmp_path, example_r1cs):
    path = tmp_path / "nomap.r1cs"
    rebuild(path, r1cs_bytes, "r1cs", drop=(3,))
    r = read_r1cs(path)
    assert r.wire_to_label is None and csr_equal(r.pce.A, example_r1cs.pce.A)


def test_r1cs_duplicate_section(r1cs_bytes, tmp_path):
    path = tmp_path / "dup.r1cs"
    secs = [(sid, r1cs_bytes[off : off + size]) for sid, off, size in sections(r1cs_bytes, "r1cs")]
    write_binfile(path, "r1cs", 1, secs + [secs[0]])
    with raises_naming(FormatError, path, "appears 2 times"):
        read_r1cs(path)


def test_r1cs_trailing_bytes(r1cs_bytes, tmp):
    path = tmp("tr.r1cs", r1cs_bytes + b"\0" * 5)
    with raises_naming(FormatError, path, "5 trailing bytes"):
        read_r1cs(path)


@pytest.mark.parametrize("bad_wire", [155, 156, 2**32 - 1])
def test_r1cs_wire_out_of_range(r1cs_bytes, tmp, bad_wire):
    off, _ = section_at(r1cs_bytes, "r1cs", 2)
    # constraint 0, LC A: nTerms u32, then (wire u32, coef 32 bytes)
    assert struct.unpack_from("<I", r1cs_bytes, off)[0] >= 1
    path = tmp("w.r1cs", patch(r1cs_bytes, off + 4, struct.pack("<I", bad_wire)))
    with raises_naming(FormatError, path, "section 2", "wire id out of range in constraint 0"):
        read_r1cs(path)


@pytest.mark.parametrize("n_terms", [2**32 - 1, 2**31, 600])
def test_r1cs_term_count_past_the_end(r1cs_bytes, tmp, n_terms):
    off, _ = section_at(r1cs_bytes, "r1cs", 2)
    path = tmp("n.r1cs", patch(r1cs_bytes, off, struct.pack("<I", n_terms)))
    with raises_naming(FormatError, path, "section 2", "truncated in constraint 0"):
        read_r1cs(path)


def test_r1cs_wire_out_of_range_later_constraint(r1cs_bytes, tmp):
    off, _ = section_at(r1cs_bytes, "r1cs", 2)
    # walk to constraint 3's first A term
    p = off
    for _ in range(3 * 3):
        p += 4 + struct.unpack_from("<I", r1cs_bytes, p)[0] * 36
    assert struct.unpack_from("<I", r1cs_bytes, p)[0] >= 1
    path = tmp("w3.r1cs", patch(r1cs_bytes, p + 4, struct.pack("<I", 1000)))
    with raises_naming(FormatError, path, "wire id out of range in constraint 3"):
        read_r1cs(path)


# values not below r: r, r + 1 (offsets from the curve's r) and 2^256 - 1
NOT_BELOW_R = pytest.mark.parametrize("excess", [0, 1, None], ids=["r", "r+1", "2^256-1"])


def not_below_r(C, excess) -> int:
    return 2**256 - 1 if excess is None else C.r + excess


@NOT_BELOW_R
def test_r1cs_coefficient_not_below_r(C, r1cs_bytes, tmp, excess):
    value = not_below_r(C, excess)
    off, _ = section_at(r1cs_bytes, "r1cs", 2)
    path = tmp("c.r1cs", patch(r1cs_bytes, off + 8, value.to_bytes(32, "little")))
    with raises_naming(FormatError, path, "section 2", "coefficient not below the field modulus r", "constraint 0"):
        read_r1cs(path)


def test_r1cs_header_wire_count_too_small(r1cs_bytes, tmp):
    off, _ = section_at(r1cs_bytes, "r1cs", 1)
    path = tmp("h.r1cs", patch(r1cs_bytes, off + 36, struct.pack("<I", 5)))
    with raises_naming(FormatError, path, "section 1", "5 wires cannot hold"):
        read_r1cs(path)


def test_r1cs_constraint_count_mismatch(r1cs_bytes, tmp):
    off, _ = section_at(r1cs_bytes, "r1cs", 1)
    ncon = off + 4 + 32 + 16 + 8  # n8, prime, 4 x u32, nLabels u64
    assert struct.unpack_from("<I", r1cs_bytes, ncon)[0] == 149
    path = tmp("n.r1cs", patch(r1cs_bytes, ncon, struct.pack("<I", 148)))
    with raises_naming(FormatError, path, "bytes left after 148 constraints"):
        read_r1cs(path)
    path = tmp("n2.r1cs", patch(r1cs_bytes, ncon, struct.pack("<I", 150)))
    with raises_naming(FormatError, path, "truncated in constraint 149"):
        read_r1cs(path)


def test_r1cs_missing_file(tmp_path):
    path = tmp_path / "nope.r1cs"
    with raises_naming(FormatError, path, "cannot open"):
        read_r1cs(path)


# ---------------------------------------------------------------------------------------------
# malformed .wtns


@pytest.fixture(scope="module")
def wtns_bytes_ex(ex):
    return (ex / "witness.wtns").read_bytes()


def test_wtns_truncated_everywhere(wtns_bytes_ex):
    for cut in range(len(wtns_bytes_ex)):
        with pytest.raises(FormatError) as e:
            parse_wtns(wtns_bytes_ex[:cut], "cut.wtns")
        assert "cut.wtns" in str(e.value) and "truncated" in str(e.value), (cut, str(e.value))


@pytest.mark.parametrize("cut", [0, 10, 40, 200, -32, -1])
def test_wtns_truncated_file(wtns_bytes_ex, tmp, cut):
    path = tmp("t.wtns", wtns_bytes_ex[:cut])
    with raises_naming(FormatError, path, "empty" if cut == 0 else "truncated"):
        read_wtns(path)


def test_wtns_wrong_prime(C, wtns_bytes_ex, tmp):
    # the prime names the curve: one that is no supported curve's scalar field is refused in one line
    off, _ = section_at(wtns_bytes_ex, "wtns", 1, version=2)
    assert int.from_bytes(wtns_bytes_ex[off + 4 : off + 36], "little") == C.r
    path = tmp("p.wtns", patch(wtns_bytes_ex, off + 4, UNKNOWN_PRIME.to_bytes(32, "little")))
    with raises_naming(FormatError, path, "section 1", "not the scalar field of a supported curve", "BLS12-381", "BN254") as e:
        read_wtns(path)
    assert "\n" not in str(e.value)


def test_wtns_of_another_curve(C, ex):
    # a witness is read for a key or circuit: one of another curve is a one-line error naming both curves
    path = ex / "witness.wtns"
    other = other_curve(C)
    assert read_witness(path).curve == C
    assert np.array_equal(read_wtns(path, curve=C), read_wtns(path))
    with raises_naming(FormatError, path, f"witness is over {C}", f"the key k.zkey is over {other}") as e:
        read_wtns(path, curve=other, expected_what="the key k.zkey")
    assert "\n" not in str(e.value)
    with raises_naming(FormatError, "mem.wtns", f"witness is over {C} but the circuit is over {other}"):
        parse_wtns(path.read_bytes(), "mem.wtns", curve=other, expected_what="the circuit")


def test_wtns_wrong_magic_and_version(wtns_bytes_ex, tmp):
    path = tmp("m.wtns", b"r1cs" + wtns_bytes_ex[4:])
    with raises_naming(FormatError, path, "not a .wtns file"):
        read_wtns(path)
    path = tmp("v.wtns", patch(wtns_bytes_ex, 4, struct.pack("<I", 1)))
    with raises_naming(FormatError, path, "unsupported .wtns version 1"):
        read_wtns(path)


@pytest.mark.parametrize("index,excess", [(1, 0), (154, 0), (7, None)], ids=["1-r", "154-r", "7-2^256-1"])
def test_wtns_value_not_below_r(C, wtns_bytes_ex, tmp, index, excess):
    value = not_below_r(C, excess)
    off, size = section_at(wtns_bytes_ex, "wtns", 2, version=2)
    assert size == 155 * 32
    path = tmp("v.wtns", patch(wtns_bytes_ex, off + 32 * index, value.to_bytes(32, "little")))
    with raises_naming(FormatError, path, "section 2", f"value {index} is not below the field modulus r"):
        read_wtns(path)


@pytest.mark.parametrize("expected", [154, 156, 27])
def test_wtns_length_mismatch(ex, expected):
    path = ex / "witness.wtns"
    with raises_naming(FormatError, path, f"witness has 155 values, the circuit has {expected} wires"):
        read_wtns(path, expected_wires=expected)


def test_wtns_count_disagrees_with_body(wtns_bytes_ex, tmp):
    off, _ = section_at(wtns_bytes_ex, "wtns", 1, version=2)
    path = tmp("c.wtns", patch(wtns_bytes_ex, off + 36, struct.pack("<I", 154)))
    with raises_naming(FormatError, path, "section 2", "expected 4928 for 154 values"):
        read_wtns(path)


@pytest.mark.parametrize("w0", [0, 2, -1], ids=["0", "2", "r-1"])
def test_wtns_w0_not_one(C, wtns_bytes_ex, tmp, w0):
    w0 %= C.r
    off, _ = section_at(wtns_bytes_ex, "wtns", 2, version=2)
    path = tmp("w0.wtns", patch(wtns_bytes_ex, off, w0.to_bytes(32, "little")))
    with raises_naming(FormatError, path, f"w[0] = {w0}, expected 1"):
        read_wtns(path)


# ---------------------------------------------------------------------------------------------
# malformed .zkey


@pytest.fixture(scope="module")
def zkey_bytes(ex):
    return (ex / "circuit.zkey").read_bytes()


def test_zkey_truncated(zkey_bytes):
    secs = sections(zkey_bytes, "zkey")
    cuts = set(range(0, 64)) | set(range(64, len(zkey_bytes), 997)) | {len(zkey_bytes) - 1}
    for _, off, size in secs:
        cuts |= {off - 12, off - 1, off, off + 1, off + size - 1}
    for cut in sorted(cuts):
        with pytest.raises(FormatError) as e:
            parse_zkey(zkey_bytes[:cut], "cut.zkey")
        assert "cut.zkey" in str(e.value) and "truncated" in str(e.value), (cut, str(e.value))


@pytest.mark.parametrize("cut", [0, 100, 5000, -1])
def test_zkey_truncated_file(zkey_bytes, tmp, cut):
    path = tmp("t.zkey", zkey_bytes[:cut])
    with raises_naming(FormatError, path, "empty" if cut == 0 else "truncated"):
        read_zkey(path)


@pytest.mark.parametrize("protocol,name", [(2, "PLONK"), (10, "FFLONK"), (7, "unknown")])
def test_zkey_wrong_protocol(zkey_bytes, tmp, protocol, name):
    off, size = section_at(zkey_bytes, "zkey", 1)
    assert size == 4 and struct.unpack_from("<I", zkey_bytes, off)[0] == 1
    path = tmp("p.zkey", patch(zkey_bytes, off, struct.pack("<I", protocol)))
    with raises_naming(FormatError, path, "section 1", f"protocol {protocol} ({name})", "Groth16"):
        read_zkey(path)


def test_zkey_bn128_header(C, zkey_bytes, tmp_path):
    # a zkey's header names its curve by q and r (bn128 keys are circom's default): each curve's key is
    # read as that curve's; a base field of no supported curve is refused in one line
    pk = read_zkey(fixture_dir(C, "other") / "circuit.zkey")
    assert pk.curve == C and pk.vk.curve == C and pk.count("b2") == pk.n_vars
    off, size = section_at(zkey_bytes, "zkey", 2)
    hdr = zkey_bytes[off : off + size]
    unknown = (
        struct.pack("<I", 32)
        + UNKNOWN_PRIME.to_bytes(32, "little")
        + struct.pack("<I", 32)
        + C.r.to_bytes(32, "little")
        + hdr[4 + C.n8q + 4 + 32 :]
    )
    path = tmp_path / "unknown.zkey"
    rebuild(path, zkey_bytes, "zkey", replace={2: unknown})
    with raises_naming(FormatError, path, "section 2", "n8q = 32", f"q = {UNKNOWN_PRIME:#x}", "BLS12-381 or BN254") as e:
        read_zkey(path)
    assert "\n" not in str(e.value)


def test_zkey_wrong_q_and_r(C, zkey_bytes, tmp):
    off, _ = section_at(zkey_bytes, "zkey", 2)
    path = tmp("q.zkey", patch(zkey_bytes, off + 4, (C.q - 2).to_bytes(C.n8q, "little")))
    with raises_naming(FormatError, path, "section 2", "base field"):
        read_zkey(path)
    # the base field of one curve with the scalar field of the other
    path = tmp("r.zkey", patch(zkey_bytes, off + 4 + C.n8q + 4, other_curve(C).r.to_bytes(32, "little")))
    with raises_naming(FormatError, path, "section 2", "scalar field", f"is not {C}'s"):
        read_zkey(path)


@pytest.mark.parametrize("domain", [0, 1, 255, 384])
def test_zkey_bad_domain_size(C, zkey_bytes, tmp, domain):
    off, _ = section_at(zkey_bytes, "zkey", 2)
    p = off + 4 + C.n8q + 4 + 32 + 8  # n8q q n8r r nVars nPublic
    assert struct.unpack_from("<I", zkey_bytes, p)[0] == 256
    path = tmp("d.zkey", patch(zkey_bytes, p, struct.pack("<I", domain)))
    with raises_naming(FormatError, path, f"domainSize {domain} is not a power of two"):
        read_zkey(path)


@pytest.mark.parametrize("sid,name,points", [(5, "A", -1), (6, "B1", 1), (7, "B2", -1), (8, "C", -1), (9, "H", 1), (3, "IC", -1)])
def test_zkey_point_section_wrong_size(C, zkey_bytes, tmp_path, sid, name, points):
    delta = points * C.point_bytes(2 if sid == 7 else 1)  # one point too few or too many
    off, size = section_at(zkey_bytes, "zkey", sid)
    payload = zkey_bytes[off : off + size]
    payload = payload[:delta] if delta < 0 else payload + payload[:delta]
    path = tmp_path / "s.zkey"
    rebuild(path, zkey_bytes, "zkey", replace={sid: payload})
    with raises_naming(FormatError, path, f"section {sid} ({name})", f"{size + delta} bytes, expected {size}"):
        read_zkey(path)


@pytest.mark.parametrize("sid", [3, 4, 9])
def test_zkey_section_missing(zkey_bytes, tmp_path, sid):
    path = tmp_path / "m.zkey"
    rebuild(path, zkey_bytes, "zkey", drop=(sid,))
    with raises_naming(FormatError, path, f"missing section {sid}"):
        read_zkey(path)


def _coef_field(zkey_bytes: bytes, entry: int, field: str) -> int:
    off, _ = section_at(zkey_bytes, "zkey", 4)
    return off + 4 + entry * _COEF.itemsize + _COEF.fields[field][1]


@pytest.mark.parametrize("signal", [155, 156, 2**32 - 1])
def test_zkey_coefficient_signal_out_of_range(zkey_bytes, tmp, signal):
    p = _coef_field(zkey_bytes, 3, "signal")
    path = tmp("c.zkey", patch(zkey_bytes, p, struct.pack("<I", signal)))
    with raises_naming(FormatError, path, "section 4", f"entry 3 names signal {signal}, the key has 155"):
        read_zkey(path)


def test_zkey_coefficient_bad_matrix_and_constraint(C, zkey_bytes, tmp):
    path = tmp("m.zkey", patch(zkey_bytes, _coef_field(zkey_bytes, 0, "matrix"), struct.pack("<I", 2)))
    with raises_naming(FormatError, path, "section 4", "entry 0 names matrix 2"):
        read_zkey(path)
    path = tmp("k.zkey", patch(zkey_bytes, _coef_field(zkey_bytes, 5, "constraint"), struct.pack("<I", 256)))
    with raises_naming(FormatError, path, "section 4", "entry 5 names constraint 256, beyond the domain of 256"):
        read_zkey(path)
    path = tmp("v.zkey", patch(zkey_bytes, _coef_field(zkey_bytes, 9, "value"), C.r.to_bytes(32, "little")))
    with raises_naming(FormatError, path, "section 4", "entry 9 has a value not below r"):
        read_zkey(path)


def test_zkey_coefficient_count_mismatch(zkey_bytes, tmp):
    off, _ = section_at(zkey_bytes, "zkey", 4)
    path = tmp("n.zkey", patch(zkey_bytes, off, struct.pack("<I", 216)))
    with raises_naming(FormatError, path, "section 4 (coefficients) too short"):
        read_zkey(path)
    path = tmp("n2.zkey", patch(zkey_bytes, off, struct.pack("<I", 214)))
    with raises_naming(FormatError, path, "section 4 (coefficients) has 44 unexpected bytes"):
        read_zkey(path)


def _off_curve_y(C, zkey_bytes: bytes, point_off: int) -> bytes:
    """Replace the G1 point's y (LEM) by y + 1: still a reduced field element, no longer on the curve."""
    k = C.n8q
    y = canon_coord(C, zkey_bytes[point_off + k : point_off + 2 * k])
    assert y != 0
    return patch(zkey_bytes, point_off + k, lem_coord(C, (y + 1) % C.q))


def test_zkey_ic_point_not_on_curve(C, zkey_bytes, tmp):
    off, _ = section_at(zkey_bytes, "zkey", 3)
    path = tmp("ic.zkey", _off_curve_y(C, zkey_bytes, off + C.g1_bytes))
    with raises_naming(pts.PointError, path, "section 3 (IC)", "point 1 is not on the curve"):
        read_zkey(path)


def test_zkey_header_point_not_on_curve(C, zkey_bytes, tmp):
    off, _ = section_at(zkey_bytes, "zkey", 2)
    alpha = off + 4 + C.n8q + 4 + 32 + 12
    path = tmp("h.zkey", _off_curve_y(C, zkey_bytes, alpha + C.g1_bytes))  # beta1
    with raises_naming(pts.PointError, path, "section 2", "point 1 is not on the curve"):
        read_zkey(path)


A_OFF_CURVE = 2  # A[2] is a finite point (zkey.json)


def _a_point_off_curve(C, zkey_bytes, tmp):
    off, _ = section_at(zkey_bytes, "zkey", 5)
    return tmp("a.zkey", _off_curve_y(C, zkey_bytes, off + C.g1_bytes * A_OFF_CURVE))


def test_zkey_a_point_not_on_curve(C, zkey_bytes, tmp):
    # sections 5-9 are kept as raw bytes and decoded on first use; the error must still name the file
    k = A_OFF_CURVE
    path = _a_point_off_curve(C, zkey_bytes, tmp)
    pk = read_zkey(path)
    with raises_naming(CuzkError, path, "a points", f"point {k} is not on the curve"):
        pk.points("a")


@pytest.mark.parametrize("curve", [BLS, BN254], ids=lambda c: c.name)
def test_zkey_a_point_not_on_curve_on_load(curve, tmp):
    # the CPU backend decodes the raw vectors when the key is made resident: the same one-line error
    zkey_bytes = (fixture_dir(curve) / "circuit.zkey").read_bytes()
    path = _a_point_off_curve(curve, zkey_bytes, tmp)
    pk = read_zkey(path)
    with raises_naming(CuzkError, path, f"point {A_OFF_CURVE} is not on the curve"):
        get_backend("cpu").load_key(pk)


def test_zkey_b2_point_not_on_curve(C, zkey_bytes, tmp):
    off, _ = section_at(zkey_bytes, "zkey", 7)
    # B2[0] is finite; bump y.c0 (G2 LEM: x.c0, x.c1, y.c0, y.c1)
    k = C.n8q
    y0 = canon_coord(C, zkey_bytes[off + 2 * k : off + 3 * k])
    path = tmp("b2.zkey", patch(zkey_bytes, off + 2 * k, lem_coord(C, (y0 + 1) % C.q)))
    pk = read_zkey(path)
    with raises_naming(CuzkError, path, "b2 points", "point 0 is not on the curve"):
        pk.points("b2")


@pytest.mark.parametrize("excess", [0, 1, None], ids=["q", "q+1", "2^(8*n8q)-1"])
def test_zkey_coordinate_not_below_q(C, zkey_bytes, tmp, excess):
    value = 2 ** (8 * C.n8q) - 1 if excess is None else C.q + excess
    g1, k = C.g1_bytes, C.n8q
    off, _ = section_at(zkey_bytes, "zkey", 3)
    path = tmp("q.zkey", patch(zkey_bytes, off + g1 * 2, value.to_bytes(k, "little")))
    with raises_naming(pts.PointError, path, "section 3 (IC)", "point 2 has a coordinate not below the base field modulus q"):
        read_zkey(path)
    off, _ = section_at(zkey_bytes, "zkey", 9)
    path = tmp("qh.zkey", patch(zkey_bytes, off + g1 * 4 + k, value.to_bytes(k, "little")))
    pk = read_zkey(path)
    with raises_naming(CuzkError, path, "h points", "point 4 has a coordinate not below the base field modulus q"):
        pk.points("h")


def test_zkey_wrong_magic(zkey_bytes, tmp):
    path = tmp("m.zkey", b"ptau" + zkey_bytes[4:])
    with raises_naming(FormatError, path, "not a .zkey file"):
        read_zkey(path)


# ---------------------------------------------------------------------------------------------
# malformed bellperson params / vk


@pytest.fixture(scope="module")
def params_file(bellperson_other, tmp_path_factory):
    _, pk = bellperson_other
    path = tmp_path_factory.mktemp("params") / "other.params"
    write_params(path, pk)
    return path


def test_params_truncated(params_file, bellperson_other, tmp):
    r, _ = bellperson_other
    data = params_file.read_bytes()
    cuts = {1, 50, 96, 863, 864, 866, 868, 900, len(data) // 2, len(data) - 192, len(data) - 1}
    for cut in sorted(cuts):
        path = tmp("t.params", data[:cut])
        with raises_naming(FormatError, path, "truncated"):
            read_params(path, r.pce)
    path = tmp("e.params", b"")
    with raises_naming(FormatError, path, "empty file"):
        read_params(path, r.pce)
    path = tmp("x.params", data + b"\0")
    with raises_naming(FormatError, path, "1 trailing bytes"):
        read_params(path, r.pce)


def test_params_for_another_circuit(params_file, bls_example_r1cs):
    # the other fixture's key read against the example circuit
    with raises_naming(FormatError, params_file, "another circuit"):
        read_params(params_file, bls_example_r1cs.pce)


def test_params_of_example_against_other_r1cs(bls_example_r1cs, bellperson_other, tmp_path):
    other_r1cs, _ = bellperson_other
    path = tmp_path / "example.params"
    write_params(path, setup(bls_example_r1cs.pce, style=BELLPERSON, quiet=True))
    assert read_params(path, bls_example_r1cs.pce).n_vars == 155
    with raises_naming(FormatError, path, "ic has 6 points", "another circuit"):
        read_params(path, other_r1cs.pce)


def test_params_for_another_circuit_same_inputs(dev_circuit, tmp_path):
    # same number of public inputs, different size: caught by a vector count
    dev = dev_circuit(BLS)
    small = dev.circuit
    big = synthetic.hash_like(small.pce.n_constraints + 24, seed=1)
    assert small.pce.n_public == big.pce.n_public and small.pce.n_constraints != big.pce.n_constraints
    path = tmp_path / "small.params"
    write_params(path, dev.bellperson())
    with raises_naming(FormatError, path, "vector", "another circuit"):
        read_params(path, big.pce)


def test_params_point_flags(params_file, bellperson_other, tmp):
    r, _ = bellperson_other
    data = params_file.read_bytes()
    path = tmp("c.params", patch(data, 0, bytes([data[0] | 0x80])))
    with raises_naming(CuzkError, path, "compression flag"):
        read_params(path, r.pce)
    path = tmp("i.params", patch(data, 0, bytes([data[0] | 0x40])))
    with raises_naming(CuzkError, path, "infinity flag but non-zero coordinates"):
        read_params(path, r.pce)


def test_vk_file_truncated_and_trailing(bellperson_other, tmp):
    _, pk = bellperson_other
    path = tmp("k.vk", b"")
    write_vk(path, pk.vk)
    data = path.read_bytes()
    for cut in (10, 864, 870, len(data) - 1):
        p = tmp("t.vk", data[:cut])
        with raises_naming(FormatError, p, "truncated"):
            read_vk(p)
    p = tmp("x.vk", data + b"\0\0")
    with raises_naming(FormatError, p, "2 trailing bytes"):
        read_vk(p)


# ---------------------------------------------------------------------------------------------
# malformed JSON: proof.json, public.json, verification_key.json


@pytest.fixture(scope="module")
def proof_obj(ex):
    return json.loads((ex / "proof.json").read_text())


def _write_json(tmp, name, obj):
    return tmp(name, json.dumps(obj))


@pytest.mark.parametrize("missing", ["pi_a", "pi_b", "pi_c"])
def test_proof_json_missing_field(proof_obj, tmp, missing):
    obj = {k: v for k, v in proof_obj.items() if k != missing}
    path = _write_json(tmp, "p.json", obj)
    with raises_naming(F.JsonFormatError, path, f"missing field {missing!r}"):
        F.read_proof_json(path)


@pytest.mark.parametrize("bad", ["0x1f", "12a", "", "1.5", "-"])
def test_proof_json_non_decimal(proof_obj, tmp, bad):
    obj = json.loads(json.dumps(proof_obj))
    obj["pi_a"][0] = bad
    path = _write_json(tmp, "p.json", obj)
    with raises_naming(F.JsonFormatError, path, "pi_a[0]", "not a decimal integer"):
        F.read_proof_json(path)


_ARABIC_INDIC = str.maketrans("0123456789", "\u0660\u0661\u0662\u0663\u0664\u0665\u0666\u0667\u0668\u0669")


@pytest.mark.parametrize(
    "spell",
    [lambda s: s[:3] + "_" + s[3:], lambda s: " " + s, lambda s: s + "\n", lambda s: s.translate(_ARABIC_INDIC)],
    ids=["underscore", "leading-space", "trailing-newline", "non-ascii-digits"],
)
def test_proof_json_rejects_python_only_integer_syntax(proof_obj, tmp, spell):
    # int(s, 10) also accepts underscores, surrounding whitespace and non-ASCII digits; these
    # spellings denote the very same (valid) coordinate, but none is a decimal string
    obj = json.loads(json.dumps(proof_obj))
    obj["pi_a"][0] = spell(obj["pi_a"][0])
    assert not obj["pi_a"][0].isascii() or not obj["pi_a"][0].isdigit()
    path = _write_json(tmp, "p.json", obj)
    with raises_naming(F.JsonFormatError, path, "pi_a[0]", "not a decimal integer"):
        F.read_proof_json(path)


def test_proof_json_wrong_types(proof_obj, tmp):
    obj = json.loads(json.dumps(proof_obj))
    obj["pi_a"][1] = 1.5
    path = _write_json(tmp, "p.json", obj)
    with raises_naming(F.JsonFormatError, path, "pi_a[1]", "expected a decimal string"):
        F.read_proof_json(path)
    obj = json.loads(json.dumps(proof_obj))
    obj["pi_b"] = obj["pi_b"][:2]
    path = _write_json(tmp, "p2.json", obj)
    with raises_naming(F.JsonFormatError, path, "pi_b", "expected a list of 3 entries"):
        F.read_proof_json(path)
    path = _write_json(tmp, "p3.json", [1, 2, 3])
    with raises_naming(F.JsonFormatError, path, "expected a JSON object"):
        F.read_proof_json(path)
    path = tmp("p4.json", "{not json")
    with raises_naming(F.JsonFormatError, path, "not valid JSON"):
        F.read_proof_json(path)


def test_proof_json_point_not_on_curve(C, proof_obj, tmp):
    obj = json.loads(json.dumps(proof_obj))
    obj["pi_a"][1] = str((int(obj["pi_a"][1]) + 1) % C.q)
    path = _write_json(tmp, "p.json", obj)
    with raises_naming(CuzkError, path, "pi_a", "not on the G1 curve"):
        F.read_proof_json(path)
    obj = json.loads(json.dumps(proof_obj))
    obj["pi_b"][1][0] = str((int(obj["pi_b"][1][0]) + 1) % C.q)
    path = _write_json(tmp, "p2.json", obj)
    with raises_naming(CuzkError, path, "pi_b", "not on the G2 curve"):
        F.read_proof_json(path)


def test_proof_json_coordinate_out_of_range_and_bad_z(C, proof_obj, tmp):
    obj = json.loads(json.dumps(proof_obj))
    obj["pi_c"][0] = str(C.q)
    path = _write_json(tmp, "p.json", obj)
    with raises_naming(F.JsonFormatError, path, "pi_c[0]", "out of range"):
        F.read_proof_json(path)
    obj = json.loads(json.dumps(proof_obj))
    obj["pi_a"][2] = "2"
    path = _write_json(tmp, "z.json", obj)
    with raises_naming(F.JsonFormatError, path, "pi_a", "projective z = 2"):
        F.read_proof_json(path)


def test_proof_json_wrong_protocol_or_curve(C, proof_obj, tmp):
    path = _write_json(tmp, "p.json", {**proof_obj, "protocol": "plonk"})
    with raises_naming(F.JsonFormatError, path, "protocol 'plonk'"):
        F.read_proof_json(path)
    # a curve no one supports
    path = _write_json(tmp, "c.json", {**proof_obj, "curve": "secp256k1"})
    with raises_naming(F.JsonFormatError, path, "curve 'secp256k1', expected one of 'bls12381', 'bn128'"):
        F.read_proof_json(path)
    # a proof of this curve given with a key of the other: one line naming both curves
    other = other_curve(C)
    path = _write_json(tmp, "k.json", proof_obj)
    with raises_naming(
        F.JsonFormatError, path, f"curve {C.snarkjs_name!r}", f"expected {other.snarkjs_name!r}", f"the key's curve, {other}"
    ) as e:
        F.read_proof_json(path, other)
    assert "\n" not in str(e.value)
    assert F.read_proof_json(path, C).curve == C
    # without a "curve" field the proof takes the key's curve, and needs one
    path = _write_json(tmp, "n.json", {k: v for k, v in proof_obj.items() if k != "curve"})
    assert F.read_proof_json(path, C) == F.read_proof_json(fixture_dir(C) / "proof.json")
    with raises_naming(F.JsonFormatError, path, 'no "curve" field'):
        F.read_proof_json(path)


@pytest.mark.parametrize("obj", [{"0": "1"}, "5", 5, None])
def test_public_json_not_a_list(tmp, obj):
    path = _write_json(tmp, "pub.json", obj)
    with raises_naming(F.JsonFormatError, path, "expected a JSON array"):
        F.read_public_json(path)


@pytest.mark.parametrize("excess", [0, 5, None], ids=["r", "r+5", "-1"])
def test_public_json_out_of_range(C, tmp, excess):
    value = "-1" if excess is None else str(C.r + excess)
    path = _write_json(tmp, "pub.json", ["3", value])
    # the range is the key's curve's: checked when the curve is given (a negative value always fails)
    with raises_naming(F.JsonFormatError, path, "[1]", "not in [0, r)", str(C)):
        F.read_public_json(path, C)
    if excess is None:
        with raises_naming(F.JsonFormatError, path, "[1]", "not in [0, r)"):
            F.read_public_json(path)
    else:
        assert F.read_public_json(path) == [3, int(value)]
    assert F.read_public_json(path, C, check_range=False) == [3, int(value)]
    assert F.read_public_json(path, check_range=False) == [3, int(value)]


def test_public_json_range_is_the_curves(tmp):
    # BN254's r is below BLS12-381's: a BLS12-381 public input can be out of BN254's range
    value = BN254.r + 1
    assert value < BLS.r
    path = _write_json(tmp, "pub.json", [str(value)])
    assert F.read_public_json(path, BLS) == [value]
    with raises_naming(F.JsonFormatError, path, "[0]", "not in [0, r) of BN254"):
        F.read_public_json(path, BN254)


def test_public_json_bad_entries(tmp):
    path = _write_json(tmp, "pub.json", ["3", "x7"])
    with raises_naming(F.JsonFormatError, path, "[1]", "not a decimal integer"):
        F.read_public_json(path)
    path = _write_json(tmp, "pub2.json", ["3", [7]])
    with raises_naming(F.JsonFormatError, path, "[1]", "expected a decimal string"):
        F.read_public_json(path)
    path = _write_json(tmp, "pub3.json", [True])
    with raises_naming(F.JsonFormatError, path, "[0]"):
        F.read_public_json(path)


@pytest.fixture(scope="module")
def vk_obj(ex):
    return json.loads((ex / "verification_key.json").read_text())


@pytest.mark.parametrize(
    "field,value,fragment",
    [
        ("curve", "bn127", "curve 'bn127', expected one of 'bls12381', 'bn128'"),
        ("protocol", "plonk", "protocol 'plonk', expected 'groth16'"),
    ],
)
def test_vk_json_wrong_curve_protocol(vk_obj, tmp, field, value, fragment):
    path = _write_json(tmp, "vk.json", {**vk_obj, field: value})
    with raises_naming(F.JsonFormatError, path, fragment):
        F.read_vk_json(path)


def test_vk_json_curve_from_its_field(C, vk_obj, tmp):
    # the "curve" field decides how the points are read: each curve's file is that curve's key ...
    assert F.vk_from_json(vk_obj).curve == C
    # ... a file without it is refused ...
    path = _write_json(tmp, "none.json", {k: v for k, v in vk_obj.items() if k != "curve"})
    with raises_naming(F.JsonFormatError, path, 'no "curve" field'):
        F.read_vk_json(path)
    # ... and one relabelled with the other curve's name does not decode as a key of that curve
    path = _write_json(tmp, "other.json", {**vk_obj, "curve": other_curve(C).snarkjs_name})
    with raises_naming(CuzkError, path, "vk_alpha_1") as e:
        F.read_vk_json(path)
    assert "\n" not in str(e.value)


def test_vk_json_other_defects(C, vk_obj, tmp):
    path = _write_json(tmp, "vk1.json", {**vk_obj, "nPublic": 4})
    with raises_naming(F.JsonFormatError, path, "nPublic = 4 but IC has 6 points"):
        F.read_vk_json(path)
    path = _write_json(tmp, "vk2.json", {k: v for k, v in vk_obj.items() if k != "vk_delta_2"})
    with raises_naming(F.JsonFormatError, path, "missing field 'vk_delta_2'"):
        F.read_vk_json(path)
    bad = json.loads(json.dumps(vk_obj))
    bad["IC"][3][0] = str((int(bad["IC"][3][0]) + 1) % C.q)
    path = _write_json(tmp, "vk3.json", bad)
    with raises_naming(CuzkError, path, "IC[3]", "not on the G1 curve"):
        F.read_vk_json(path)
    path = _write_json(tmp, "vk4.json", {**vk_obj, "IC": []})
    with raises_naming(F.JsonFormatError, path, "IC must be a non-empty list"):
        F.read_vk_json(path)


# ---------------------------------------------------------------------------------------------
# binary proofs: bellperson's 192 compressed bytes (BLS12-381), the EVM's 256 (BN254)


@pytest.fixture(scope="module")
def proof_raw(ex):
    return F.read_proof_json(ex / "proof.json").to_bytes()


@pytest.fixture(scope="module")
def bls_proof_raw():
    return F.read_proof_json(fixture_dir(BLS) / "proof.json").to_bytes()


def _part(C, i: int) -> str:
    """Which of A, B, C the byte at offset i belongs to."""
    a, b = (48, 144) if C.bellperson else (C.g1_bytes, C.g1_bytes + C.g2_bytes)
    return "A" if i < a else ("B" if i < b else "C")


def test_proof_bytes_flipped_bit_rejected(C, proof_raw):
    # flipping the lowest bit of any byte breaks the encoding (off the curve, out of the subgroup or a
    # coordinate not below q)
    assert len(proof_raw) == C.proof_bytes
    for i in range(C.proof_bytes):
        bad = bytearray(proof_raw)
        bad[i] ^= 0x01
        with pytest.raises(pts.PointError) as e:
            F.Proof.from_bytes(bytes(bad), C, "proof.bin")
        assert f"proof.bin: {_part(C, i)}" in str(e.value), (i, str(e.value))


@pytest.mark.parametrize("pos,part", [(0, "A"), (48, "B"), (144, "C")])
def test_proof_bytes_compression_flag_cleared(bls_proof_raw, pos, part):
    bad = bytearray(bls_proof_raw)
    bad[pos] &= 0x7F
    with pytest.raises(pts.PointError, match=f"proof.bin: {part}"):
        F.Proof.from_bytes(bytes(bad), BLS, "proof.bin")


@pytest.mark.parametrize("pos,part", [(0, "A"), (48, "B"), (144, "C")])
def test_proof_bytes_infinity_flag_with_coordinates_rejected(bls_proof_raw, pos, part):
    # zcash encoding: the infinity flag requires every other bit to be zero (the uncompressed
    # decoder in cuzk.curve.points enforces this; the compressed one must as well)
    bad = bytearray(bls_proof_raw)
    bad[pos] |= 0x40
    with pytest.raises(pts.PointError, match=f"proof.bin: {part}"):
        F.Proof.from_bytes(bytes(bad), BLS, "proof.bin")


def test_proof_bytes_sign_flip_is_a_different_proof(C, ex, proof_raw):
    # -A is a valid encoding of another point (BLS12-381: the sign bit; BN254: y -> q - y), which must
    # not verify
    bad = bytearray(proof_raw)
    if C.bellperson:
        bad[0] ^= 0x20
    else:
        y = int.from_bytes(proof_raw[32:64], "big")
        bad[32:64] = (C.q - y).to_bytes(32, "big")
    p = F.Proof.from_bytes(bytes(bad), C)
    good = F.Proof.from_bytes(proof_raw, C)
    assert p.a == -good.a and p != good
    vk = F.read_vk_json(ex / "verification_key.json")
    public = F.read_public_json(ex / "public.json", C)
    assert verify(vk, public, good) and not verify(vk, public, p)


@pytest.mark.parametrize("n", [0, -1, 1, "double"], ids=["0", "size-1", "size+1", "2*size"])
def test_proof_bytes_wrong_length(C, proof_raw, n):
    size = C.proof_bytes
    n = 2 * size if n == "double" else (n and size + n)
    data = (proof_raw * 2)[:n]
    with pytest.raises(pts.PointError, match=f"proof.bin: {n} bytes, expected {size}"):
        F.Proof.from_bytes(data, C, "proof.bin")


def test_proof_bytes_of_another_curve_rejected(C, proof_raw):
    # a binary proof carries no curve: given with the other curve it has the wrong length
    other = other_curve(C)
    with pytest.raises(pts.PointError, match=f"proof.bin: {C.proof_bytes} bytes, expected {other.proof_bytes}"):
        F.Proof.from_bytes(proof_raw, other, "proof.bin")


def test_evm_proof_bytes_coordinate_not_below_q():
    # BN254 (EVM layout, no flags): a coordinate >= q is refused, zeros are the point at infinity
    C = BN254
    raw = F.read_proof_json(fixture_dir(C) / "proof.json").to_bytes()
    for off, part in ((0, "A"), (64, "B"), (192, "C")):
        bad = raw[:off] + C.q.to_bytes(32, "big") + raw[off + 32 :]
        with pytest.raises(pts.PointError, match=f"proof.bin: {part}: point 0 has a coordinate not below q"):
            F.Proof.from_bytes(bad, C, "proof.bin")
    inf = bytes(64) + raw[64:]
    assert F.Proof.from_bytes(inf, C).a == C.lib.G1Point.identity()
