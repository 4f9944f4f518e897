"""Filecoin's PoRep (SDR) circuit on a sealed 2 KiB sector: the openings (JSON view of a vanilla proof)
checked natively, the circuit (both shapes: "filecoin", rust-fil-proofs' constraint structure, and
"compact", ours) satisfied by honest openings and unsatisfied where a tampered one fails, the recording
satisfied by the witness, the public inputs in their documented order; the constraint counts against
rust-fil-proofs' published ones.

The partition (3 challenges) and its recordings are the session's (conftest ``porep_openings``,
``porep_recorded``), shared with test_split_witness. Every synthesis of this circuit takes many seconds on a
small machine (2 cores: counting 8 s, recording 13-18 s, TestCS 25 s or more), so the default suite checks
honest openings through the tampered test's untouched challenge and the recording; the whole-partition
``check`` runs are marked slow."""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest
from conftest import POREP_CHALLENGES, PROOF_2KIB_V1_1

from cuzk import curves
from cuzk.circuit.circuit import CircuitError, check
from cuzk.circuit.cs import ConstraintSystem, TestCS, Unsatisfied
from cuzk.filecoin import porep
from cuzk.filecoin.graph import StackedGraph

C = len(POREP_CHALLENGES)  # 3


@pytest.fixture(scope="module")
def openings(porep_openings):
    return porep_openings


def test_openings_json_and_commitments(openings, porep_sealed):
    assert json.loads(json.dumps(openings)) == openings  # JSON-ready
    s = porep_sealed
    assert openings["comm_r"] == str(s.comm_r) and openings["comm_d"] == s.comm_d.hex()
    assert [ch["index"] for ch in openings["challenges"]] == POREP_CHALLENGES


def one(obj: dict, c: int) -> dict:
    """The openings of one challenge only (a 1-challenge partition)."""
    out = copy.deepcopy(obj)
    out["challenges"] = [out["challenges"][c]]
    return out


def test_openings_shape(openings):
    ch = openings["challenges"][1]
    assert ch["index"] == 41 and ch["parents"] == StackedGraph.for_proof(PROOF_2KIB_V1_1).parents(41)
    assert len(ch["data_path"]) == 6 and len(ch["replica_path"]) == 2 and len(ch["column"]) == 2
    assert len(ch["parent_columns"]) == 14 and len(ch["parent_paths"]) == 14
    assert [pos for _, pos in ch["column_path"]] == [41 % 8, 41 // 8]


def test_verify_openings(openings):
    porep.verify_openings(openings)
    bad = copy.deepcopy(openings)
    sib = bytearray(bytes.fromhex(bad["challenges"][1]["data_path"][2]))
    sib[0] ^= 1
    bad["challenges"][1]["data_path"][2] = sib.hex()
    with pytest.raises(ValueError, match=r"challenge 1 \(node 41\): the data path"):
        porep.verify_openings(bad)
    bad = copy.deepcopy(openings)
    bad["challenges"][0]["parent_columns"][3][1] = str(int(bad["challenges"][0]["parent_columns"][3][1]) ^ 1)
    with pytest.raises(ValueError, match=r"challenge 0 \(node 5\): parent 3 .*column path"):
        porep.verify_openings(bad)
    bad = copy.deepcopy(openings)
    bad["challenges"][1]["replica_leaf"] = str(int(bad["challenges"][1]["replica_leaf"]) + 1)
    with pytest.raises(ValueError, match=r"challenge 1 \(node 41\): the encoding"):
        porep.verify_openings(bad)
    bad = copy.deepcopy(openings)
    bad["challenges"][0]["column"][0] = str(int(bad["challenges"][0]["column"][0]) ^ 4)
    with pytest.raises(ValueError, match=r"challenge 0 \(node 5\): the column path"):
        porep.verify_openings(bad)
    bad = copy.deepcopy(openings)
    bad["comm_r"] = str(int(bad["comm_r"]) + 1)
    with pytest.raises(ValueError, match="CommR"):
        porep.verify_openings(bad)


def test_parse_inputs_errors(openings):
    c = porep.PoRep(challenges=C)
    c.parse_inputs(openings)
    with pytest.raises(CircuitError, match="challenges: expected a list of 4"):
        porep.PoRep(challenges=C + 1).parse_inputs(openings)
    with pytest.raises(CircuitError, match="challenges: expected a list of 2"):
        porep.PoRep(challenges=C - 1).parse_inputs(openings)
    bad = copy.deepcopy(openings)
    del bad["challenges"][1]["parent_paths"]
    with pytest.raises(CircuitError, match=r"challenges\[1\]: missing 'parent_paths'"):
        c.parse_inputs(bad)
    bad = copy.deepcopy(openings)
    bad["challenges"][0]["index"] = 0
    with pytest.raises(CircuitError, match=r"challenges\[0\].index"):
        c.parse_inputs(bad)
    bad = copy.deepcopy(openings)
    bad["challenges"][0]["column_path"][1][1] = 3
    with pytest.raises(CircuitError, match="does not match the node index 5"):
        c.parse_inputs(bad)
    bad = copy.deepcopy(openings)
    bad["challenges"][0]["data_path"] = bad["challenges"][0]["data_path"][:5]
    with pytest.raises(CircuitError, match="data_path: expected a list of 6"):
        c.parse_inputs(bad)
    with pytest.raises(CircuitError, match="challenges"):
        porep.PoRep(challenges=10**9)


@pytest.mark.slow  # the default suite: test_circuit_tampered_filecoin's honest challenge 2, and the recording
@pytest.mark.parametrize("shape", ["filecoin", "compact"])
def test_circuit_satisfied(openings, shape):
    assert check(porep.PoRep(challenges=C, shape=shape), openings) is None


def test_shape_parameter():
    assert porep.PoRep().shape == porep.DEFAULT_SHAPE == "filecoin"
    assert porep.PoRep(shape="compact").params["shape"] == "compact"  # in the recording's cache key
    with pytest.raises(CircuitError, match="shape 'bellman'"):
        porep.PoRep(shape="bellman")


def test_constraint_counts_match_rust_fil_proofs():
    """One 32 GiB partition (proof id 8 = StackedDrg32GiBV1_1, 18 challenges): rust-fil-proofs' published
    circuit info gives 130,278,541 constraints; the "filecoin" shape reproduces it exactly (counting
    constraint system, nothing recorded). Public inputs: 3 + 18 per challenge."""
    r = porep.count_constraints(8, 18)
    assert r["constraints"] == 130_278_541 and r["inputs"] == 3 + 18 * 18


@pytest.mark.slow  # ~25 s on 2 cores; test_recording_and_witness checks the compact count against a recording
def test_constraint_count_compact_32gib():
    """The compact shape of the same 32 GiB partition: 0.685x the constraints."""
    assert porep.count_constraints(8, 18, shape="compact")["constraints"] == 89_233_475


# each case is a synthesis of ~8 s on 2 cores: U8 and U8-U4 (base and sub-tree arities that U8-U4-U2 has
# too) run in the slow suite
@pytest.mark.parametrize(
    ("arities", "nodes", "want"),
    [
        ([2, 2, 2], 8, 1_206_212),
        pytest.param([8], 8, 1_199_620, marks=pytest.mark.slow),
        pytest.param([8, 4], 32, 1_296_576, marks=pytest.mark.slow),
        ([8, 4, 2], 64, 1_346_982),
    ],
)
def test_same_shape_as_stacked_circuit_rs(arities, nodes, want):
    """storage-proofs-porep/tests/stacked_circuit.rs: 2 layers, 1 challenge, 8 nodes per base tree, trees
    U2 / U8 / U8-U4 / U8-U4-U2: its asserted constraint counts, 22 inputs (ONE included), reproduced by
    giving a PoRep instance that shape."""
    c = porep.PoRep(5, 1)
    c.nodes, c.layers, c.bits, c.arities = nodes, 2, nodes.bit_length() - 1, arities
    cs = ConstraintSystem(curves.get(c.curve))
    c.synthesize(cs, None)
    assert (cs.n_constraints, cs.n_inputs) == (want, 22)


class AllUnsatisfied(TestCS):
    """TestCS that keeps every unsatisfied constraint's path and instance, not only the first."""

    __test__ = False

    def __init__(self, curve):
        super().__init__(curve)
        self.failed: list[tuple[str, tuple[int, ...]]] = []

    def _enforce(self, name, a, b, c, shape, rows):
        F = self.field
        av, bv, cv = (self._eval(x, shape).flat() for x in (a, b, c))
        for i in np.flatnonzero(np.any(F.sub(F.mul(av, bv), cv) != 0, axis=1)):
            self.failed.append((self.path(name), tuple(int(x) for x in np.unravel_index(int(i), shape))))
            if not self.unsatisfied:
                self.unsatisfied.append(Unsatisfied(self.path(name), self.failed[-1][1], self.n_constraints + int(i)))


@pytest.mark.slow  # the default (filecoin) shape's tampered test below runs in every suite
def test_circuit_tampered_compact(openings):
    """Challenge 0: a parent's label changed (its tree_c path cannot follow): the first unsatisfied
    constraint is that parent's inclusion in tree_c, then the recomputed label of the layer it enters
    differs from the column's; challenge 1: a wrong replica leaf: the encoding and
    tree_r_last inclusion fail there. Nothing else fails (one synthesis for both; challenge 2 untouched)."""
    bad = copy.deepcopy(openings)
    bad["challenges"][0]["parent_columns"][3][1] = str(int(bad["challenges"][0]["parent_columns"][3][1]) ^ 1)
    bad["challenges"][1]["replica_leaf"] = str(int(bad["challenges"][1]["replica_leaf"]) + 1)
    c = porep.PoRep(challenges=C, shape="compact")
    with pytest.raises(CircuitError, match=r"challenge 0 \(node \d+\): parent 3 .*column path does not reach CommC"):
        c.parse_inputs(bad)  # the daemon's native check refuses it at submission, naming the challenge
    c.verify_natively = False  # past that check, the circuit itself must refuse it too
    cs = AllUnsatisfied(curves.get(c.curve))
    c.synthesize(cs, c.parse_inputs(bad))
    first = cs.which_is_unsatisfied()
    assert first is not None and "parents (tree_c)/root = CommC [instance 0, 3]" in first
    assert cs.failed == [
        ("parents (tree_c)/root = CommC", (0, 3)),
        ("labels/label = column label", (0, 1)),  # the changed label (layer 2) enters layer 2's label
        ("replica (tree_r_last)/encoding: leaf = data leaf + last label", (1,)),
        ("replica (tree_r_last)/root = CommR_last", (1,)),
    ]


def test_circuit_tampered_filecoin(openings):
    """The faithful circuit on the same tampered parent label (challenge 0) and a wrong tree_r_last
    sibling (challenge 1; this shape never reads the replica leaf: it encodes the recomputed label): the
    parent's tree_c root, challenge 0's tree_r_last and tree_c roots (the changed label enters layer 2's
    label, the last one: the encoding and the column hash change), challenge 1's tree_r_last root.
    Challenge 2 is left honest: none of its constraints fails, nor any shared one (CommR = Poseidon2(CommC,
    CommR_last), the inputs' copies), in the same synthesis (the default suite's TestCS check of honest
    openings; test_circuit_satisfied, slow, checks whole honest partitions)."""
    bad = copy.deepcopy(openings)
    bad["challenges"][0]["parent_columns"][3][1] = str(int(bad["challenges"][0]["parent_columns"][3][1]) ^ 1)
    sib = bad["challenges"][1]["replica_path"][1][0]
    sib[2] = str(int(sib[2]) + 1)
    c = porep.PoRep(challenges=C)
    c.verify_natively = False
    cs = AllUnsatisfied(curves.get(c.curve))
    c.synthesize(cs, c.parse_inputs(bad))
    assert cs.failed == [
        ("parents_inclusion/enforce root is correct", (0, 3)),
        ("comm_r_last_data_inclusion/enforce root is correct", (0,)),
        ("comm_r_last_data_inclusion/enforce root is correct", (1,)),
        ("c_x_inclusion/enforce root is correct", (0,)),
    ]


@pytest.mark.parametrize("shape", ["filecoin", "compact"])
def test_recording_and_witness(openings, porep_recorded, shape):
    """The session's recording (made by conftest's ``record``) has the counting system's constraints, the
    witness (``witness``) satisfies it, and its public inputs are in the documented order."""
    c, rec, w = porep_recorded(shape)
    assert c.challenges == C and c.shape == shape
    assert rec.layout.n_constraints == porep.count_constraints(5, C, shape=shape)["constraints"]
    assert w.shape == (rec.layout.n_wires, 4)
    assert len(rec.pce.unsatisfied(w)) == 0
    want = [int.from_bytes(bytes.fromhex(openings[k]), "little") for k in ("replica_id", "comm_d")]
    want.append(int(openings["comm_r"]))
    for ch in openings["challenges"]:
        if shape == "filecoin":
            # rust-fil-proofs' order: tree_d path, the 14 parents' tree_c paths, the challenge, tree_r_last
            # path, tree_c path (each path's bits packed: the node's index)
            want += [ch["index"], *ch["parents"], ch["index"], ch["index"], ch["index"]]
        else:  # per challenge its index and its 14 parents
            want += [ch["index"], *ch["parents"]]
    assert curves.get(c.curve).fr.to_ints(w[1 : rec.layout.n_inputs]) == want  # the witness's input section
