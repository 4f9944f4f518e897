"""One witness computed in parts (cuzk.circuit.split): a batched circuit's units (PoRep's challenges) split
over ranges, the parts' witnesses scattered into the full layout. The merged witness equals the
single-process one bit for bit (2 and 3 parts, uneven ranges; PoRep in both shapes, the Merkle example)
and satisfies the recording; worker processes (WitnessPool) write their parts into one shared buffer and
check the inputs in parts (a tampered opening still refused, named by its place in the whole); circuits
whose allocations do not scale, or whose global values depend on the units, are refused.

The PoRep partition (3 challenges), its recordings and single-process witnesses are the session's (conftest
``porep_openings``, ``porep_recorded``), shared with test_filecoin_porep: each takes tens of seconds."""

from __future__ import annotations

import copy
import struct
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import pytest

from cuzk.circuit.circuit import Circuit, CircuitError, CircuitSpec, WitnessPool, record, witness
from cuzk.circuit.cs import ConstraintSystem
from cuzk.circuit.examples import MerkleInclusion
from cuzk.circuit.split import (
    SplitError,
    alloc_blocks,
    check_ranges,
    crossing_rows,
    scatter_runs,
    split_ranges,
    split_witness_serial,
    wire_units,
)
from cuzk.filecoin import porep


@pytest.fixture(scope="module")
def cache(porep_cache):
    """The recordings' folder, <CUZK_CACHE_DIR>/circuits (worker processes read the layout there)."""
    return porep_cache


@pytest.fixture(scope="module")
def openings(porep_openings):
    assert [ch["index"] for ch in porep_openings["challenges"]] == [5, 41, 17]
    return porep_openings


@pytest.fixture(scope="module")
def filecoin3(porep_recorded):
    """The 3-challenge filecoin-shape partition: circuit, recording (in ``cache``), single-process witness."""
    c, rec, w = porep_recorded("filecoin")
    assert c.challenges == 3 and c.shape == "filecoin"
    return c, rec, w


def test_ranges():
    assert split_ranges(34, 16) == [(0, 3), (3, 6)] + [(6 + 2 * i, 8 + 2 * i) for i in range(14)]
    assert split_ranges(3, 8) == [(0, 1), (1, 2), (2, 3)]
    assert check_ranges([(2, 3), (0, 2)], 3) == [(0, 2), (2, 3)]
    assert split_ranges(3, 2) == [(0, 2), (2, 3)]  # what parts=2 gives the PoRep split below: its "uneven" case
    for bad in ([(0, 2)], [(0, 2), (1, 3)], [(0, 1), (2, 3)], []):
        with pytest.raises(ValueError, match="do not cover"):
            check_ranges(bad, 3)


def test_merkle_split_serial():
    c = MerkleInclusion(depth=3, challenges=5)
    rec = record(c, cache=False)
    x = c.sample_inputs(1)
    w = witness(c, x, rec.layout)
    for parts in (2, 3, [(0, 1), (1, 5)], 5):
        m = split_witness_serial(c, x, rec.layout, parts)
        assert np.array_equal(m, w), parts
    assert rec.pce.unsatisfied(m).size == 0
    assert crossing_rows(rec.pce, wire_units(alloc_blocks(c), 5, rec.layout)).size == 0


# parts=2 splits 3 challenges as [(0, 2), (2, 3)] (test_ranges), the "uneven" case's ranges: slow only (each
# part is a synthesis of seconds); the Merkle example above covers a count of parts against explicit ranges
@pytest.mark.parametrize("parts", [pytest.param(2, marks=pytest.mark.slow), [(0, 2), (2, 3)], 3], ids=["2", "uneven", "3"])
def test_porep_filecoin_split_bit_identical(filecoin3, openings, parts):
    c, rec, w = filecoin3
    m = split_witness_serial(c, openings, rec.layout, parts)
    assert m.shape == w.shape and np.array_equal(m, w)
    if parts == 3:
        assert rec.pce.unsatisfied(m).size == 0


def test_porep_filecoin_challenges_independent(filecoin3):
    """No recorded constraint involves two challenges' variables (each touches one challenge's and the
    global ones): the recording itself says the challenges are independent given the globals."""
    c, rec, _ = filecoin3
    unit = wire_units(alloc_blocks(c), 3, rec.layout)
    # the globals: ONE, the replica id, CommD and CommR (inputs and private copies), the replica id's bits,
    # CommR_last, CommC, Poseidon2's S-boxes and output
    assert (unit < 0).sum() == 1 + 3 * 2 + 255 + 2 + 310 + 1
    assert np.array_equal(np.bincount(unit[unit >= 0]), [(rec.layout.n_wires - (unit < 0).sum()) // 3] * 3)
    assert crossing_rows(rec.pce, unit).size == 0


def test_porep_compact_split(openings, porep_recorded):
    c, rec, w = porep_recorded("compact")
    assert c.challenges == 3 and c.shape == "compact"
    m = split_witness_serial(c, openings, rec.layout, [(0, 1), (1, 3)])
    assert np.array_equal(m, w)
    assert crossing_rows(rec.pce, wire_units(alloc_blocks(c), 3, rec.layout)).size == 0


def test_porep_split_inputs(openings):
    c = porep.PoRep(challenges=3)
    sub, params = c.split(openings, 1, 3)
    assert params == {"proof_id": 5, "challenges": 2, "shape": "filecoin"}
    assert sub["challenges"] == openings["challenges"][1:] and sub["first_challenge"] == 1
    with pytest.raises(CircuitError, match="challenges: expected a list of 3"):
        c.split(one_less(openings), 0, 2)
    # a part's messages name challenges by their place in the whole
    bad = copy.deepcopy(sub)
    bad["challenges"][1]["column"][0] = str(int(bad["challenges"][1]["column"][0]) ^ 4)
    with pytest.raises(CircuitError, match=r"challenge 2 \(node 17\): the column path"):
        porep.PoRep(**params).parse_inputs(bad)
    bad = copy.deepcopy(sub)
    bad["challenges"][0]["parents"] = "x"
    with pytest.raises(CircuitError, match=r"inputs.challenges\[1\].parents"):
        porep.PoRep(**params).parse_inputs(bad)
    with pytest.raises(CircuitError, match="first_challenge"):
        porep.PoRep(**params).parse_inputs(sub | {"first_challenge": -1})


def one_less(obj: dict) -> dict:
    out = dict(obj)
    out["challenges"] = obj["challenges"][:-1]
    return out


# ---------------------------------------------------------------------------------------------
# worker processes


def test_registry_checks_and_witnesses_in_parts(filecoin3, openings, cache, monkeypatch, tmp_path):
    """The daemon's circuit with synthesis.python_processes = 2: the submission-time check runs in two
    parts (2 + 1 challenges) in the worker processes and still refuses a tampered opening, named by its
    place in the whole; the witness, in two parts written into one shared buffer, equals the
    single-process one."""
    from cuzk.engine.config import CircuitConfig
    from cuzk.engine.errors import InvalidArgument
    from cuzk.engine.registry import Circuit as Registered

    monkeypatch.setenv("CUZK_CACHE_DIR", str(cache.parent))  # the recording made by the fixture
    _, rec, w = filecoin3
    key = tmp_path / "header-only.params"  # registration reads a bellperson key's header only: its IC count
    key.write_bytes(bytes(864) + struct.pack(">I", rec.layout.n_inputs))
    cc = CircuitConfig(
        id="porep", params=str(key), python="cuzk.filecoin.porep:PoRep", python_params={"proof_id": 5, "challenges": 3}
    )
    c = Registered(cc, python_processes=2)
    try:
        assert c.parse_python_inputs(openings, "inputs") is openings
        assert c._pool is not None and c._pool.splits()
        bad = copy.deepcopy(openings)
        bad["challenges"][2]["column"][0] = str(int(bad["challenges"][2]["column"][0]) ^ 4)
        with pytest.raises(InvalidArgument, match=r"^inputs: vanilla proof: challenge 2 \(node 17\): the column path does not"):
            c.parse_python_inputs(bad, "inputs")
        with pytest.raises(InvalidArgument, match=r"challenges: expected a list of 3"):
            c.parse_python_inputs(one_less(openings), "inputs")
        m = c.witness_from_inputs(openings)
        assert c._pool.split_refused is None and np.array_equal(m, w)
        with pytest.raises(InvalidArgument, match=r"challenge 2 \(node 17\)"):
            c.witness_from_inputs(bad)
    finally:
        c.close()


def test_pool_merkle_three_parts(tmp_path, monkeypatch):
    monkeypatch.setenv("CUZK_CACHE_DIR", str(tmp_path))
    spec = CircuitSpec.parse("cuzk.circuit.examples:MerkleInclusion", {"depth": 2, "challenges": 4})
    c = spec.load()
    rec = record(c)
    xs = [c.sample_inputs(s) for s in range(2)]
    pool = WitnessPool(spec, 3)  # 2 + 1 + 1 challenges
    try:
        for x in xs:
            m = pool.witness(x)
            assert np.array_equal(m, witness(c, x, rec.layout))
            assert rec.pce.unsatisfied(m).size == 0
        m[0] = 0  # the shared buffer is the caller's array
        # witnesses in flight share the processes: one alone in 3 parts, two at once whole (1 part each)
        assert [pool.parts_for(k) for k in (1, 2, 3, 4)] == [3, 1, 1, 1]
        with ThreadPoolExecutor(2) as ex:
            got = list(ex.map(pool.witness, xs))
        for x, m in zip(xs, got):
            assert np.array_equal(m, witness(c, x, rec.layout))
    finally:
        pool.close()


# ---------------------------------------------------------------------------------------------
# circuits that cannot be split


class _Units(Circuit):
    """Inputs {"x": [C field elements]}; each unit: x and x^2. ``kind`` adds what breaks a split:
    "triangle" a block of C(C+1)/2 variables, "sum" a global variable holding the sum of all x,
    "order" a block allocated only by circuits of one unit."""

    def __init__(self, units: int = 3, kind: str = "triangle"):
        super().__init__(units=units, kind=kind)
        self.units, self.kind = units, kind

    def split_units(self) -> int:
        return self.units

    def split(self, inputs: Any, lo: int, hi: int) -> tuple[Any, dict[str, Any]]:
        return {"x": inputs["x"][lo:hi]}, {"units": hi - lo, "kind": self.kind}

    def sample_inputs(self, seed: int = 0) -> Any:
        return {"x": [seed + 3 + i for i in range(self.units)]}

    def synthesize(self, cs: ConstraintSystem, inputs: Any) -> None:
        C, p = self.units, cs.field.p
        xs = None if inputs is None else [int(v) for v in inputs["x"]]
        x = cs.alloc("x", xs, (C,))
        sq = cs.alloc("x^2", None if xs is None else [v * v % p for v in xs], (C,))
        cs.enforce("square", x, x, sq)
        if self.kind == "triangle":
            n = C * (C + 1) // 2
            t = cs.alloc("triangle", None if xs is None else [1] * n, (n,))
            cs.enforce("one", t, cs.one, cs.one)
        elif self.kind == "sum":
            s = cs.alloc("sum", None if xs is None else sum(xs) % p, ())
            cs.enforce("sum", x[0] + x[1] + x[2] if C == 3 else s, cs.one, s)
        elif self.kind == "order" and C == 1:
            cs.alloc("extra", None if xs is None else 0, ())


@pytest.mark.parametrize(
    ("kind", "why"),
    [
        ("triangle", r"variable 'triangle' \(6,\) .* has shape \(1,\) in the circuit of 1 of its 3 units: neither the same"),
        ("sum", "the parts' global values differ"),
        ("order", "makes 3 allocations, the circuit 2"),
    ],
)
def test_refused(kind, why):
    c = _Units(3, kind)
    rec = record(c, cache=False)
    x = c.sample_inputs()
    assert rec.pce.unsatisfied(witness(c, x, rec.layout)).size == 0
    with pytest.raises(SplitError, match=why):
        split_witness_serial(c, x, rec.layout, [(0, 1), (1, 3)])
    if kind == "sum":  # the recording shows it: the sum's constraint involves every unit
        assert crossing_rows(rec.pce, wire_units(alloc_blocks(c), 3, rec.layout)).tolist() == [3]


def test_scatter_runs_refuses_other_allocations():
    full = [(True, "in", (4, 2)), (False, "a", (4,)), (False, "g", ())]
    from cuzk.circuit.cs import Layout

    layout = Layout(1 + 8, 5, 0)
    runs = scatter_runs(full, [(True, "in", (1, 2)), (False, "a", (1,)), (False, "g", ())], 4, 2, 3, layout)
    assert runs.dst.tolist() == [0, 1 + 2 * 2, 9 + 2, 9 + 4] and runs.glob.tolist() == [True, False, False, True]
    with pytest.raises(SplitError, match="input 'in' \\(4, 2\\) .* has shape \\(2, 1\\)"):
        scatter_runs(full, [(True, "in", (2, 1)), (False, "a", (1,)), (False, "g", ())], 4, 2, 3, layout)
    with pytest.raises(SplitError, match="allocation 1 .* is variable 'b'"):
        scatter_runs(full, [(True, "in", (1, 2)), (False, "b", (1,)), (False, "g", ())], 4, 2, 3, layout)
    with pytest.raises(SplitError, match="recording 9 and 6"):
        scatter_runs(full, [(True, "in", (1, 2)), (False, "a", (1,)), (False, "g", ())], 4, 2, 3, Layout(9, 6, 0))


def test_pool_falls_back_when_refused(tmp_path, monkeypatch):
    """A circuit whose parts' globals differ: the pool computes the witness whole (and from then on)."""
    monkeypatch.setenv("CUZK_CACHE_DIR", str(tmp_path))
    spec = CircuitSpec.parse(f"{__name__}:_Units", {"units": 3, "kind": "sum"})
    c = spec.load()
    rec = record(c)
    x = c.sample_inputs()
    pool = WitnessPool(spec, 2)
    try:
        with pytest.raises(SplitError, match="global values differ"):
            pool.split_witness(x)
        m = pool.witness(x)
        assert pool.split_refused and "global values differ" in pool.split_refused and not pool.splits()
        assert np.array_equal(m, witness(c, x, rec.layout))
    finally:
        pool.close()
