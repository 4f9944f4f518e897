"""Filecoin's PoRep (SDR / StackedDRG V1.1) circuit in Python, and the openings (vanilla proof) it proves.

Facts (read, not copied, from filecoin-project/rust-fil-proofs storage-proofs-porep
``stacked/circuit/{circuit,proof,params,create_label,column,hash}.rs`` and ``stacked/vanilla/*.rs``):
per challenged node the circuit checks

* the data leaf's inclusion in tree_d (binary SHA-256-254 tree, root CommD);
* the column of every parent (6 base parents, 8 expander parents: their labels in every layer) hashed
  with Poseidon (arity = layers) and included in tree_c (root CommC);
* every layer's label of the challenged node recomputed with SHA-256 from the replica id, the layer
  number, the node index and 37 parent labels (base parents from the same layer, expander parents from
  the previous one; layer 1 uses only the 6 base parents, repeated), the digest read little-endian and
  truncated to 254 bits;
* the column of those labels hashed and included in tree_c;
* the replica leaf = data leaf + the last layer's label (the encoding), included in tree_r_last;
* CommR = Poseidon2(CommC, CommR_last).

:func:`challenge_openings` gives the JSON view of a vanilla proof of one partition from a sealed sector,
:func:`verify_openings` checks it natively, :class:`PoRep` is the circuit, in two shapes: ``"filecoin"``
(default) with rust-fil-proofs' constraint structure and count (the gadgets of
:mod:`cuzk.circuit.gadgets.bellman_sha256`, ``neptune_poseidon``, ``storage_proofs``), ``"compact"`` ours.
"""

from __future__ import annotations

import hashlib
import random
import struct
from typing import Any

import numpy as np

from ..circuit.circuit import Circuit, CircuitError, field_element
from ..circuit.cs import ConstraintSystem
from ..circuit.poseidon import poseidon_hash as poseidon_native
from . import params as P
from . import trees
from .sdr import labels_to_bytes

FR = trees.FR
R = FR.p
LABEL_PARENTS = 37  # parent labels hashed per label (rust-fil-proofs TOTAL_PARENTS)
SHAPES = ("filecoin", "compact")  # PoRep(shape=...): rust-fil-proofs' constraint structure, or ours
DEFAULT_SHAPE = "filecoin"


# ---------------------------------------------------------------------------------------------
# shapes


def shape_of(proof_id: int) -> dict[str, Any]:
    """The sizes a proof id fixes: nodes, layers, index bits, tree_c / tree_r_last level arities."""
    try:
        size = P.sector_size_of(proof_id)
    except (ValueError, KeyError) as e:
        raise CircuitError(f"PoRep: proof id {proof_id!r}: {e}") from None
    sp = P.PARAMS.get(size)
    if sp is None:
        raise CircuitError(f"PoRep: proof id {proof_id}: no parameters for {size}-byte sectors")
    base, sub, top = sp.tree_arities
    n = sp.nodes
    per_base = n // (max(sub, 1) * max(top, 1))
    k = 0
    while base**k < per_base:
        k += 1
    arities = [base] * k + [a for a in (sub, top) if a]
    return {"nodes": n, "layers": sp.layers, "bits": n.bit_length() - 1, "arities": arities}


def _label_slots(layer: int) -> list[int]:
    """The parent slot of each of the 37 parent labels of a label in ``layer`` (counted from 1)."""
    deg = P.DEGREE if layer > 1 else P.DRG_DEGREE
    return [k % deg for k in range(LABEL_PARENTS)]


# ---------------------------------------------------------------------------------------------
# openings (the JSON view of a vanilla proof)


def _poseidon_path_json(path: list[tuple[list[int], int]]) -> list:
    return [[[str(s) for s in sib], int(pos)] for sib, pos in path]


def challenge_openings(sealed: Any, challenges: list[int]) -> dict:
    """The openings of ``challenges`` (node indices) in a sealed sector (:class:`.seal.SealedSector`):
    a JSON-ready dict, the inputs of one :class:`PoRep` partition."""
    from .graph import StackedGraph

    graph = StackedGraph.for_proof(sealed.proof_id)
    n = sealed.data.shape[0]
    lab_bytes = [labels_to_bytes(w) for w in sealed.labels]

    def column(i: int) -> list[str]:
        return [str(int.from_bytes(bytes(lb[i]), "little")) for lb in lab_bytes]

    out = []
    for idx in challenges:
        i = int(idx)
        if not 0 <= i < n:
            raise ValueError(f"challenge {i}: not a node of a {n}-node sector")
        parents = graph.parents(i)
        out.append(
            {
                "index": i,
                "data_leaf": bytes(sealed.data[i]).hex(),
                "data_path": [s.hex() for s in sealed.tree_d.path(i)],
                "replica_leaf": str(FR.to_ints(sealed.tree_r_last.levels[0][i : i + 1])[0]),
                "replica_path": _poseidon_path_json(sealed.tree_r_last.path(i)),
                "column": column(i),
                "column_path": _poseidon_path_json(sealed.tree_c.path(i)),
                "parents": parents,
                "parent_columns": [column(p) for p in parents],
                "parent_paths": [_poseidon_path_json(sealed.tree_c.path(p)) for p in parents],
            }
        )
    return {
        "proof_id": int(sealed.proof_id),
        "replica_id": bytes(sealed.replica_id).hex(),
        "comm_d": bytes(sealed.comm_d).hex(),
        "comm_c": str(sealed.comm_c),
        "comm_r_last": str(sealed.comm_r_last),
        "comm_r": str(sealed.comm_r),
        "challenges": out,
    }


def _poseidon_root(leaf: int, index: int, path: list, arities: list[int]) -> int | None:
    """The root a Poseidon path reaches, None when a position does not match the index."""
    cur = leaf
    if len(path) != len(arities):
        return None
    for (sib, pos), a in zip(path, arities, strict=True):
        p = int(pos)
        if p != index % a or len(sib) != a - 1:
            return None
        s = [int(x) for x in sib]
        cur = poseidon_native(s[:p] + [cur] + s[p:], a)
        index //= a
    return cur


def label_native(replica_id: bytes, layer: int, node: int, parent_columns: list[list[int]]) -> int:
    """The label of ``node`` in ``layer`` (from 1) from its 14 parents' columns (label ints per layer)."""
    msg = bytearray(replica_id) + struct.pack(">IQ", layer, node) + bytes(20)
    if node > 0:
        for slot in _label_slots(layer):
            lab = parent_columns[slot][layer - 1] if slot < P.DRG_DEGREE else parent_columns[slot][layer - 2]
            msg += int(lab).to_bytes(32, "little")
    d = bytearray(hashlib.sha256(bytes(msg)).digest())
    d[31] &= 0x3F
    return int.from_bytes(d, "little")


def first_challenge(obj: Any) -> int:
    """The partition position of the first opening in ``obj`` (its optional ``first_challenge``, set by
    :meth:`PoRep.split` on the inputs of a part: messages name challenges by their place in the whole)."""
    x = obj.get("first_challenge", 0) if isinstance(obj, dict) else 0
    if isinstance(x, bool) or not isinstance(x, int) or not 0 <= x < PoRep.MAX_BENCH_CHALLENGES:
        raise CircuitError(f"inputs.first_challenge: expected an integer in [0, {PoRep.MAX_BENCH_CHALLENGES})")
    return x


def verify_openings(obj: dict) -> None:
    """Check every opening of :func:`challenge_openings`' dict natively; ValueError naming the challenge
    and what did not match (data path, replica path, column path, a parent's path or index, a label, the
    encoding, CommR)."""
    from .graph import StackedGraph

    sh = shape_of(int(obj["proof_id"]))
    arities, layers = sh["arities"], sh["layers"]
    rid = bytes.fromhex(obj["replica_id"])
    comm_d = bytes.fromhex(obj["comm_d"])
    comm_c, comm_r_last, comm_r = int(obj["comm_c"]), int(obj["comm_r_last"]), int(obj["comm_r"])
    if poseidon_native([comm_c, comm_r_last], 2) != comm_r:
        raise ValueError("CommR is not Poseidon2(CommC, CommR_last)")
    graph = StackedGraph.for_proof(int(obj["proof_id"]))
    first = first_challenge(obj)
    for c, ch in enumerate(obj["challenges"]):
        i = int(ch["index"])
        where = f"challenge {first + c} (node {i})"
        if not 0 < i < sh["nodes"]:
            raise ValueError(f"{where}: index out of range")
        data_leaf = bytes.fromhex(ch["data_leaf"])
        if not trees.verify_data_path(data_leaf, i, [bytes.fromhex(s) for s in ch["data_path"]], comm_d):
            raise ValueError(f"{where}: the data path does not reach CommD")
        column = [int(x) for x in ch["column"]]
        if len(column) != layers:
            raise ValueError(f"{where}: the column has {len(column)} labels, not {layers}")
        if _poseidon_root(poseidon_native(column, layers), i, ch["column_path"], arities) != comm_c:
            raise ValueError(f"{where}: the column path does not reach CommC")
        parents = [int(p) for p in ch["parents"]]
        if parents != graph.parents(i):
            raise ValueError(f"{where}: the parents are not the graph's parents of the node")
        pcols = [[int(x) for x in col] for col in ch["parent_columns"]]
        for k, (p, col, path) in enumerate(zip(parents, pcols, ch["parent_paths"], strict=True)):
            if len(col) != layers or _poseidon_root(poseidon_native(col, layers), p, path, arities) != comm_c:
                raise ValueError(f"{where}: parent {k} (node {p}): its column path does not reach CommC")
        for layer in range(1, layers + 1):
            if label_native(rid, layer, i, pcols) != column[layer - 1]:
                raise ValueError(f"{where}: the label of layer {layer} does not match its parents")
        replica_leaf = int(ch["replica_leaf"])
        if replica_leaf != (int.from_bytes(data_leaf, "little") + column[-1]) % R:
            raise ValueError(f"{where}: the encoding: the replica leaf is not data leaf + last label")
        if _poseidon_root(replica_leaf, i, ch["replica_path"], arities) != comm_r_last:
            raise ValueError(f"{where}: the replica path does not reach CommR_last")


# ---------------------------------------------------------------------------------------------
# parsing the JSON inputs


def _fe(x: Any, where: str, bits: int | None = None) -> int:
    """A field element (below 2^bits when given) as a decimal / 0x string or an integer."""
    return field_element(x, where, R if bits is None else 1 << bits)


def _hex32(x: Any, where: str) -> int:
    """32 bytes as hex, read little-endian, below 2^254 (a tree_d node, CommD, the replica id)."""
    if not isinstance(x, str) or len(x) != 64:
        raise CircuitError(f"{where}: expected 32 bytes as 64 hex digits")
    try:
        b = bytes.fromhex(x)
    except ValueError:
        raise CircuitError(f"{where}: not hex") from None
    v = int.from_bytes(b, "little")
    if v >> 254:
        raise CircuitError(f"{where}: above 2^254 (not an fr32 node)")
    return v


def _list(x: Any, n: int, where: str) -> list:
    if not isinstance(x, list) or len(x) != n:
        raise CircuitError(f"{where}: expected a list of {n}")
    return x


def _index(x: Any, n: int, where: str, lo: int = 0) -> int:
    if isinstance(x, bool) or not isinstance(x, int) or not lo <= x < n:
        raise CircuitError(f"{where}: expected a node index in [{lo}, {n})")
    return x


def _path(x: Any, index: int, arities: list[int], where: str) -> list[list[int]]:
    """A Poseidon path [[siblings], position] per level -> siblings per level (positions checked)."""
    levels = _list(x, len(arities), where)
    out = []
    node = index
    for lv, (level, a) in enumerate(zip(levels, arities, strict=True)):
        w = f"{where}[{lv}]"
        pair = _list(level, 2, w)
        sib = [_fe(s, f"{w}.siblings") for s in _list(pair[0], a - 1, f"{w}.siblings")]
        if pair[1] != index % a:
            raise CircuitError(f"{w}: position {pair[1]!r} does not match the node index {node}")
        out.append(sib)
        index //= a
    return out


# ---------------------------------------------------------------------------------------------
# the circuit


def _le_bytes_order() -> np.ndarray:
    """Message position q of a 32-byte little-endian value -> its little-endian bit (bytes in order, each
    byte's most significant bit first, as SHA-256 reads them)."""
    return (np.arange(256).reshape(32, 8)[:, ::-1]).reshape(-1)


class PoRep(Circuit):
    """One partition of Filecoin's SDR PoRep (V1.1) circuit: ``challenges`` challenged nodes of a sector of
    registered seal proof ``proof_id`` (5 = StackedDrg2KiBV1_1: 64 nodes, 2 layers). Inputs: the dict of
    :func:`challenge_openings`.

    ``shape``: ``"filecoin"`` (the default) is rust-fil-proofs' ``StackedCircuit`` constraint structure,
    gadget for gadget (bellman's SHA-256, neptune's Poseidon, its insertion, PoR, 255-bit non-strict
    decompositions, UInt64 node index, packed path-bit public inputs; see :meth:`_synthesize_filecoin`
    for its public inputs): its constraint count is Filecoin's (130,278,541 for a 32 GiB partition).
    ``"compact"`` is our cheaper circuit (the gadgets of :mod:`cuzk.circuit.gadgets.sha256` / ``poseidon``,
    0.685x the constraints). Its public inputs, in order: the replica id, CommD (its 32 bytes read
    little-endian), CommR; then per challenge its node index followed by its 14 parents' indices (6 base,
    8 expander). CommC and CommR_last are private. One decomposition of each index into log2(nodes) bits
    serves tree_d's path, tree_c's and tree_r_last's paths (every arity is a power of two) and the label's
    node field.

    ``challenges`` is at most 18 in Filecoin (a partition of a 32 GiB sector has 18 of 176); up to
    ``MAX_BENCH_CHALLENGES`` are accepted so that a small sector's partition can be made as large as a
    32 GiB one for size benchmarks (an 8 MiB sector with 68 challenges: ~130M constraints)."""

    MAX_BENCH_CHALLENGES = 128

    def __init__(self, proof_id: int = 5, challenges: int = 2, shape: str = DEFAULT_SHAPE):
        if shape not in SHAPES:
            raise CircuitError(f"PoRep: shape {shape!r}: expected one of {', '.join(SHAPES)}")
        super().__init__(proof_id=proof_id, challenges=challenges, shape=shape)
        self.shape = shape
        if isinstance(challenges, bool) or not isinstance(challenges, int) or not 1 <= challenges <= self.MAX_BENCH_CHALLENGES:
            raise CircuitError(
                f"PoRep: challenges {challenges!r}: expected 1 to {P.MAX_CHALLENGES_PER_PARTITION} "
                f"(Filecoin's limit; up to {self.MAX_BENCH_CHALLENGES} for size benchmarks)"
            )
        if isinstance(proof_id, bool) or not isinstance(proof_id, int):
            raise CircuitError(f"PoRep: proof id {proof_id!r}: expected an integer")
        self.proof_id, self.challenges = proof_id, challenges
        sh = shape_of(proof_id)
        self.nodes, self.layers, self.bits, self.arities = sh["nodes"], sh["layers"], sh["bits"], sh["arities"]
        if self.layers < 2:
            raise CircuitError("PoRep: fewer than 2 layers")

    # ---- inputs
    verify_natively = True  # parse_inputs checks every opening natively (the daemon refuses bad ones at submit)

    def parse_binary(self, data: bytes, partition: int = 0) -> Any:
        """A vanilla proof as the JSON view :meth:`parse_inputs` takes: our ``.cvp`` file (:mod:`.vanilla`,
        one partition), or Filecoin's commit-phase-1 output (:mod:`.c1`: Curio's envelope or the bare
        C1 JSON, every partition; ``partition`` picks one)."""
        from .c1 import is_c1, partition_openings
        from .vanilla import VanillaError, decode

        if is_c1(data):
            return partition_openings(data, partition)

        try:
            return decode(data, max_challenges=self.challenges)
        except VanillaError as e:
            raise CircuitError(str(e)) from None

    def sample_inputs(self, seed: int = 0) -> Any:
        from .seal import seal

        rng = random.Random(seed)
        nrng = np.random.default_rng(seed)
        data = nrng.integers(0, 256, (self.nodes, 32), dtype=np.uint8)
        data[:, 31] &= 0x3F
        sealed = seal(data, self.proof_id, rng.randbytes(32), rng.randrange(1 << 63), rng.randbytes(32))
        if self.challenges <= self.nodes - 1:
            chals = rng.sample(range(1, self.nodes), self.challenges)
        else:
            chals = [rng.randrange(1, self.nodes) for _ in range(self.challenges)]
        return challenge_openings(sealed, chals)

    def parse_inputs(self, obj: Any) -> Any:
        if not isinstance(obj, dict):
            raise CircuitError(f"inputs: expected a JSON object, got {type(obj).__name__}")
        for k in ("proof_id", "replica_id", "comm_d", "comm_c", "comm_r_last", "comm_r", "challenges"):
            if k not in obj:
                raise CircuitError(f"inputs: missing {k!r}")
        if obj["proof_id"] != self.proof_id:
            raise CircuitError(f"inputs.proof_id: {obj['proof_id']!r}, the circuit is for proof id {self.proof_id}")
        n, L, C, ar = self.nodes, self.layers, self.challenges, self.arities
        out: dict[str, Any] = {
            "replica_id": _hex32(obj["replica_id"], "inputs.replica_id"),
            "comm_d": _hex32(obj["comm_d"], "inputs.comm_d"),
            "comm_c": _fe(obj["comm_c"], "inputs.comm_c"),
            "comm_r_last": _fe(obj["comm_r_last"], "inputs.comm_r_last"),
            "comm_r": _fe(obj["comm_r"], "inputs.comm_r"),
        }
        chs = _list(obj["challenges"], C, "inputs.challenges")
        first = first_challenge(obj)
        idx, data_leaf, data_path, rleaf, column = [], [], [], [], []
        rpath: list[list[list[int]]] = [[] for _ in ar]
        cpath: list[list[list[int]]] = [[] for _ in ar]
        ppath: list[list[list[list[int]]]] = [[] for _ in ar]
        pcols = []
        for c, ch in enumerate(chs):
            w = f"inputs.challenges[{first + c}]"
            if not isinstance(ch, dict):
                raise CircuitError(f"{w}: expected an object")
            for k in ("index", "data_leaf", "data_path", "replica_leaf", "replica_path", "column", "column_path"):
                if k not in ch:
                    raise CircuitError(f"{w}: missing {k!r}")
            for k in ("parents", "parent_columns", "parent_paths"):
                if k not in ch:
                    raise CircuitError(f"{w}: missing {k!r}")
            i = _index(ch["index"], n, f"{w}.index", lo=1)
            parents = [_index(p, n, f"{w}.parents[{k}]") for k, p in enumerate(_list(ch["parents"], P.DEGREE, f"{w}.parents"))]
            idx.append([i, *parents])
            data_leaf.append(_hex32(ch["data_leaf"], f"{w}.data_leaf"))
            data_path.append(
                [_hex32(s, f"{w}.data_path[{k}]") for k, s in enumerate(_list(ch["data_path"], self.bits, f"{w}.data_path"))]
            )
            rleaf.append(_fe(ch["replica_leaf"], f"{w}.replica_leaf"))
            for lv, sib in enumerate(_path(ch["replica_path"], i, ar, f"{w}.replica_path")):
                rpath[lv].append(sib)
            column.append([_fe(x, f"{w}.column", 254) for x in _list(ch["column"], L, f"{w}.column")])
            for lv, sib in enumerate(_path(ch["column_path"], i, ar, f"{w}.column_path")):
                cpath[lv].append(sib)
            cols = _list(ch["parent_columns"], P.DEGREE, f"{w}.parent_columns")
            pcols.append(
                [
                    [_fe(x, f"{w}.parent_columns[{k}]", 254) for x in _list(col, L, f"{w}.parent_columns[{k}]")]
                    for k, col in enumerate(cols)
                ]
            )
            paths = _list(ch["parent_paths"], P.DEGREE, f"{w}.parent_paths")
            per = [_path(pp, parents[k], ar, f"{w}.parent_paths[{k}]") for k, pp in enumerate(paths)]
            for lv in range(len(ar)):
                ppath[lv].append([per[k][lv] for k in range(P.DEGREE)])
        obj_arr = lambda x: np.array(x, dtype=object)  # noqa: E731
        out.update(
            index=obj_arr(idx),
            data_leaf=obj_arr(data_leaf),
            data_path=obj_arr(data_path),
            replica_leaf=obj_arr(rleaf),
            replica_path=[obj_arr(x) for x in rpath],
            column=obj_arr(column),
            column_path=[obj_arr(x) for x in cpath],
            parent_columns=obj_arr(pcols),
            parent_paths=[obj_arr(x) for x in ppath],
        )
        if self.verify_natively:
            try:
                verify_openings(obj)
            except ValueError as e:
                raise CircuitError(f"vanilla proof: {e}") from None
        return out

    # ---- parts (cuzk.circuit.split): a witness computed over challenge ranges in several processes
    def split_units(self) -> int:
        return self.challenges

    def split(self, inputs: Any, lo: int, hi: int) -> tuple[Any, dict[str, Any]]:
        """The openings of challenges ``[lo, hi)`` and the parameters of their circuit (the same but
        ``challenges = hi - lo``). Every allocation of both shapes is global (the replica id and its
        bits, CommD, CommR and its hash, CommC, CommR_last) or has the challenges as its leading dimension
        (the per-challenge public inputs included), and each part's ``parse_inputs`` checks its own
        challenges' openings and the global ones (CommR), so the parts accept exactly what the whole does.
        ``first_challenge`` makes the parts' messages name challenges by their place in the whole."""
        if not isinstance(inputs, dict):
            raise CircuitError(f"inputs: expected a JSON object, got {type(inputs).__name__}")
        if "challenges" not in inputs:
            raise CircuitError("inputs: missing 'challenges'")
        chs = _list(inputs["challenges"], self.challenges, "inputs.challenges")
        if not 0 <= lo < hi <= self.challenges:
            raise CircuitError(f"PoRep.split: challenges [{lo}, {hi}) are not a range of {self.challenges}")
        sub = dict(inputs)
        sub["challenges"] = chs[lo:hi]
        sub["first_challenge"] = first_challenge(inputs) + lo
        return sub, {**self.params, "challenges": hi - lo}

    # ---- synthesis
    def _tree_root(self, cs: ConstraintSystem, name: str, leaf: Any, siblings: list, bits: Any) -> Any:
        """A Poseidon (LC)tree's root from a leaf, per-level siblings (*B, arity - 1), index bits (*B, bits)."""
        from ..circuit.gadgets.merkle import insert
        from ..circuit.gadgets.poseidon import poseidon_hash

        cur = leaf
        off = 0
        with cs.namespace(name):
            for lv, a in enumerate(self.arities):
                k = a.bit_length() - 1
                with cs.namespace(f"level {lv}"):
                    others = [siblings[lv][..., j] for j in range(a - 1)]
                    children = insert(cs, "insert", cur, bits[..., off : off + k], others)
                    cur = poseidon_hash(cs, "hash", children, a)
                off += k
        return cur

    def synthesize(self, cs: ConstraintSystem, inputs: Any) -> None:
        if self.shape == "filecoin":
            self._synthesize_filecoin(cs, inputs)
        else:
            self._synthesize_compact(cs, inputs)

    def _synthesize_filecoin(self, cs: ConstraintSystem, inputs: Any) -> None:
        """rust-fil-proofs' ``StackedCircuit::synthesize`` and ``Proof::synthesize`` (stacked/circuit/
        proof.rs, params.rs), all challenges batched in every gadget call.

        Public inputs (rust's ``generate_public_inputs`` order): the replica id, CommD, CommR, then per
        challenge 18: tree_d's path bits packed (= the node index), each of the 6 base and 8 expander
        parents' tree_c path bits packed (= the parent's index), the challenge as a UInt64, tree_r_last's
        and tree_c's path bits packed (= the node index). Once: the three inputs equated to private copies
        (1 each), the replica id's 255 bits (256), CommR = Poseidon2(CommC, CommR_last) (311 + 1). Per
        challenge: tree_d inclusion (per level a position bit, insert_2, SHA-256 hash2 of two 255-bit
        decompositions), the 14 parents' columns hashed (neptune, arity = layers) and included in tree_c,
        the challenge's 64 bits, per layer the parents' labels decomposed (6, or 14 from layer 2) and the
        label's SHA-256 (20 compressions) packed to 254 bits, the encoding (1), tree_r_last inclusion of
        the encoded node, the column of the recomputed labels hashed and included in tree_c; each
        inclusion: its path bits packed into its input (1) and the root equated (1)."""
        from ..circuit.gadgets import bellman_sha256 as bsha
        from ..circuit.gadgets import storage_proofs as sp
        from ..circuit.gadgets.neptune_poseidon import poseidon_hash
        from ..circuit.gadgets.sha256 import Bits, concat_bits, padding, words_bits_be
        from ..circuit.gadgets.uint32 import VAR, UInt32
        from ..circuit.sha256_native import IV

        C, L, nb, D, G = self.challenges, self.layers, self.bits, P.DEGREE, P.DRG_DEGREE
        ar = self.arities
        v = inputs or {}
        has = inputs is not None

        def val(key: str) -> Any:
            return v.get(key) if has else None

        def lv(key: str, i: int) -> Any:
            return v[key][i] if has else None

        def inputize(name: str, value: Any) -> Any:
            x = cs.alloc(name, value, ())
            i = cs.alloc_input(f"{name} input", value, ())
            cs.enforce(f"{name} input", i, cs.one, x)
            return x

        replica_id = inputize("replica_id", val("replica_id"))
        rid_bits, rid_vals = sp.num_to_bits_le_values(cs, "replica_id bits", replica_id)
        comm_d = inputize("comm_d", val("comm_d"))
        comm_r = inputize("comm_r", val("comm_r"))
        comm_r_last = cs.alloc("comm_r_last", val("comm_r_last"), ())
        comm_c = cs.alloc("comm_c", val("comm_c"), ())
        with cs.namespace("comm_r"):
            h = poseidon_hash(cs, "H_comm_c_comm_r_last", [comm_c, comm_r_last], 2)
            cs.enforce("comm_r = H(comm_c || comm_r_last)", comm_r, cs.one, h)

        # per challenge: tree_d path, 14 parents' paths, the challenge, tree_r_last path, tree_c path
        index = val("index")  # (C, 15): node, then its parents
        pub = None
        if has:
            idx = np.asarray(index, dtype=object)
            pub = np.concatenate([idx, idx[:, :1], idx[:, :1], idx[:, :1]], axis=1)
        public = cs.alloc_input("challenge inputs", pub, (C, 3 + D + 1))
        node = None if not has else np.asarray(index[:, 0], dtype=np.uint64)
        parents = None if not has else np.asarray(index[:, 1:], dtype=np.uint64)

        def inclusion(name: str, leaf: Any, idx: Any, sib: list, arities: list, kind: str, root: Any, inp: Any) -> None:
            computed, bits = sp.por(cs, name, leaf, idx, sib, arities, kind)
            with cs.namespace(name):
                sp.pack_into_input(cs, "path", bits, inp)
                cs.enforce("enforce root is correct", computed, cs.one, root)

        with cs.namespace("comm_d_inclusion"):
            data_leaf = cs.alloc("data_leaf", val("data_leaf"), (C,))
            dpath = cs.alloc("path", val("data_path"), (C, nb))
        inclusion(
            "comm_d_inclusion",
            data_leaf,
            node,
            [dpath[:, k : k + 1] for k in range(nb)],
            [2] * nb,
            "sha256",
            comm_d,
            public[:, 0],
        )

        with cs.namespace("parents"):
            pcols = cs.alloc("columns", val("parent_columns"), (C, D, L))
            h = poseidon_hash(cs, "column hash", pcols, L)  # (C, 14)
            sib = [cs.alloc(f"path {k}", lv("parent_paths", k), (C, D, a - 1)) for k, a in enumerate(ar)]
        inclusion("parents_inclusion", h, parents, sib, ar, "poseidon", comm_c, public[:, 1 : 1 + D])

        with cs.namespace("challenge"):
            ch_bits = sp.uint64_alloc(cs, "bits", node, (C,))
            sp.pack_into_input(cs, "input", [ch_bits[:, i] for i in range(64)], public[:, 1 + D])

        # labels: the parents' labels decomposed per layer where a label reads them (base parents in
        # every layer, expander parents from layer 2, reading the previous layer)
        with cs.namespace("labeling"):
            base_m = sp.le_bits_message(*sp.num_to_bits_le_values(cs, "drg parent bits", pcols[:, :G, :]))  # (C, 6, L)
            exp_m = sp.le_bits_message(*sp.num_to_bits_le_values(cs, "exp parent bits", pcols[:, G:, : L - 1]))  # (C, 8, L-1)
            slot_codes = np.zeros((C, L, D, 256), dtype=np.int64)
            slot_codes[:, :, :G] = np.moveaxis(base_m.codes, 2, 1)
            slot_codes[:, 1:, G:] = np.moveaxis(exp_m.codes, 2, 1)
            slot_vals = None
            if cs.has_values:
                slot_vals = np.zeros((C, L, D, 256), dtype=np.uint8)
                slot_vals[:, :, :G] = np.moveaxis(base_m.values, 2, 1)
                slot_vals[:, 1:, G:] = np.moveaxis(exp_m.values, 2, 1)
            sel = np.array([_label_slots(layer) for layer in range(1, L + 1)])  # (L, 37)
            lsel = np.arange(L)[:, None]
            msg_codes = slot_codes[:, lsel, sel].reshape(C, L, LABEL_PARENTS * 256)
            msg_vals = None if slot_vals is None else slot_vals[:, lsel, sel].reshape(C, L, LABEL_PARENTS * 256)
            msg = Bits(msg_codes, np.tile(base_m.kinds, LABEL_PARENTS), msg_vals)
            rest = concat_bits([msg, Bits.constant(padding((2 + LABEL_PARENTS) * 256))])  # blocks 1..19
            rid = sp.le_bits_message(rid_bits, rid_vals)
            node_vals = None
            if cs.has_values:
                assert node is not None
                node_vals = ((node[:, None] >> np.arange(63, -1, -1, dtype=np.uint64)) & np.uint64(1)).astype(np.uint8)
            node_be = Bits(ch_bits.codes[:, ::-1], np.full(64, VAR, dtype=np.int8), node_vals)  # UInt64 to_bits_be
            states = []
            for layer in range(1, L + 1):
                layer_bits = Bits.constant([(layer >> (31 - j)) & 1 for j in range(32)])
                block0 = concat_bits([rid, layer_bits, node_be, Bits.constant(np.zeros(160, dtype=np.int8))])
                states.append(bsha.sha256_compression(cs, f"layer {layer} block 0", [UInt32.constant(x) for x in IV], block0))
            state = []
            for w in range(8):
                kinds = states[0][w].kinds
                if any(not np.array_equal(s[w].kinds, kinds) for s in states):
                    raise AssertionError("SHA-256 states of the layers differ in their constant bits")
                value = None if not cs.has_values else np.stack([s[w].value for s in states], axis=1)
                state.append(UInt32(np.stack([s[w].codes for s in states], axis=1), kinds.copy(), value))
            for b in range(len(rest) // 512):
                state = bsha.sha256_compression(cs, f"block {b + 1}", state, rest[512 * b : 512 * (b + 1)])
            digest = words_bits_be(state, (C, L))
            labels = sp.pack_bits(cs, "label", digest[sp.BYTE_REVERSE])  # (C, L)

        with cs.namespace("encode_node"):
            key = labels[:, L - 1]
            value = (lambda: cs.value(key) + cs.value(data_leaf)) if cs.has_values else None
            encoded = cs.alloc("add_num", value, (C,))
            cs.enforce("sum constraint", key + data_leaf, cs.one, encoded)
        with cs.namespace("comm_r_last_data_inclusion"):
            sib = [cs.alloc(f"path {k}", lv("replica_path", k), (C, a - 1)) for k, a in enumerate(ar)]
        inclusion("comm_r_last_data_inclusion", encoded, node, sib, ar, "poseidon", comm_r_last, public[:, 2 + D])

        with cs.namespace("c_x"):
            h = poseidon_hash(cs, "column hash", [labels[:, k] for k in range(L)], L)
            sib = [cs.alloc(f"path {k}", lv("column_path", k), (C, a - 1)) for k, a in enumerate(ar)]
        inclusion("c_x_inclusion", h, node, sib, ar, "poseidon", comm_c, public[:, 3 + D])

    def _synthesize_compact(self, cs: ConstraintSystem, inputs: Any) -> None:
        from ..circuit.gadgets import boolean, merkle, num
        from ..circuit.gadgets.poseidon import poseidon_hash

        C, L, nb, D = self.challenges, self.layers, self.bits, P.DEGREE
        v = inputs or {}

        def val(key: str) -> Any:
            return v.get(key) if inputs is not None else None

        def lv(key: str, i: int) -> Any:
            return v[key][i] if inputs is not None else None

        replica_id = cs.alloc_input("replica_id", val("replica_id"), ())
        comm_d = cs.alloc_input("comm_d", val("comm_d"), ())
        comm_r = cs.alloc_input("comm_r", val("comm_r"), ())
        index = cs.alloc_input("indices", val("index"), (C, 1 + D))  # per challenge: node, then its parents
        comm_c = cs.alloc("comm_c", val("comm_c"), ())
        comm_r_last = cs.alloc("comm_r_last", val("comm_r_last"), ())

        with cs.namespace("comm_r"):
            h = poseidon_hash(cs, "hash", [comm_c, comm_r_last], 2)
            num.assert_equal(cs, "CommR = Poseidon2(CommC, CommR_last)", h, comm_r)

        rid_bits = boolean.to_bits(cs, "replica_id bits", replica_id, 254)
        idx_bits = boolean.to_bits(cs, "index bits", index, nb)  # (C, 15, nb)
        ch_bits, par_bits = idx_bits[:, 0], idx_bits[:, 1:]

        with cs.namespace("data (tree_d)"):
            data_leaf = cs.alloc("leaf", val("data_leaf"), (C,))
            dpath = cs.alloc("path", val("data_path"), (C, nb))
            root = merkle.root_sha256_254(cs, "inclusion", data_leaf, dpath, ch_bits)
            num.assert_equal(cs, "root = CommD", root, comm_d)

        with cs.namespace("column (tree_c)"):
            column = cs.alloc("labels", val("column"), (C, L))
            h = poseidon_hash(cs, "hash", column, L)
            sib = [cs.alloc(f"path {k}", lv("column_path", k), (C, a - 1)) for k, a in enumerate(self.arities)]
            root = self._tree_root(cs, "inclusion", h, sib, ch_bits)
            num.assert_equal(cs, "root = CommC", root, comm_c)

        with cs.namespace("parents (tree_c)"):
            pcols = cs.alloc("labels", val("parent_columns"), (C, D, L))
            h = poseidon_hash(cs, "hash", pcols, L)  # (C, 14)
            sib = [cs.alloc(f"path {k}", lv("parent_paths", k), (C, D, a - 1)) for k, a in enumerate(self.arities)]
            root = self._tree_root(cs, "inclusion", h, sib, par_bits)
            num.assert_equal(cs, "root = CommC", root, comm_c)

        with cs.namespace("labels"):
            self._labels(cs, rid_bits, ch_bits, pcols, column)

        with cs.namespace("replica (tree_r_last)"):
            rleaf = cs.alloc("leaf", val("replica_leaf"), (C,))
            num.assert_equal(cs, "encoding: leaf = data leaf + last label", rleaf, data_leaf + column[:, L - 1])
            sib = [cs.alloc(f"path {k}", lv("replica_path", k), (C, a - 1)) for k, a in enumerate(self.arities)]
            root = self._tree_root(cs, "inclusion", rleaf, sib, ch_bits)
            num.assert_equal(cs, "root = CommR_last", root, comm_r_last)

    def _labels(self, cs: ConstraintSystem, rid_bits: Any, ch_bits: Any, pcols: Any, column: Any) -> None:
        """Every layer's label of every challenge recomputed with SHA-256 and equal to the column's: the
        first block (replica id, layer, node) per layer, the 19 others (the parents' labels, padding) for
        all challenges and layers in one batch."""
        from ..circuit.gadgets import boolean
        from ..circuit.gadgets.sha256 import IV, Bits, concat_bits, digest_le_bits, padding, sha256_compression, words_bits_be
        from ..circuit.gadgets.uint32 import CONST0, VAR, UInt32

        C, L, nb, G = self.challenges, self.layers, self.bits, P.DRG_DEGREE
        order = _le_bytes_order()
        pad_kinds = np.where(order < 254, VAR, CONST0).astype(np.int8)
        safe = np.minimum(order, 253)

        def le_bytes(bits: Any) -> tuple[np.ndarray, np.ndarray | None]:
            """254 little-endian bits (*B, 254) -> message codes (*B, 256) and values (pads are kinds)."""
            codes = bits.codes[..., safe]
            vals = None
            if cs.has_values:
                vals = cs.value(bits).small().astype(np.uint8)[..., safe]
                vals[..., order >= 254] = 0
            return codes, vals

        # label bits of the parents where a label uses them: base parents in every layer, expander parents
        # in every layer but the last (layer l's label reads layer l - 1's)
        base_codes, base_vals = le_bytes(boolean.to_bits(cs, "base parent bits", pcols[:, :G, :], 254))  # (C, 6, L, 256)
        exp_codes, exp_vals = le_bytes(
            boolean.to_bits(cs, "expander parent bits", pcols[:, G:, : L - 1], 254)
        )  # (C, 8, L-1, 256)
        # per layer the 14 slots' codes (C, L, 14, 256): layer 1 (index 0) has no expander slots (never read)
        slot_codes = np.zeros((C, L, P.DEGREE, 256), dtype=np.int64)
        slot_codes[:, :, :G] = np.moveaxis(base_codes, 2, 1)
        slot_codes[:, 1:, G:] = np.moveaxis(exp_codes, 2, 1)
        slot_vals = None
        if cs.has_values:
            assert base_vals is not None and exp_vals is not None
            slot_vals = np.zeros((C, L, P.DEGREE, 256), dtype=np.uint8)
            slot_vals[:, :, :G] = np.moveaxis(base_vals, 2, 1)
            slot_vals[:, 1:, G:] = np.moveaxis(exp_vals, 2, 1)
        sel = np.array([_label_slots(layer) for layer in range(1, L + 1)])  # (L, 37)
        lsel = np.arange(L)[:, None]
        msg_codes = slot_codes[:, lsel, sel].reshape(C, L, LABEL_PARENTS * 256)
        msg_vals = None if slot_vals is None else slot_vals[:, lsel, sel].reshape(C, L, LABEL_PARENTS * 256)
        msg = Bits(msg_codes, np.tile(pad_kinds, LABEL_PARENTS), msg_vals)
        total_bits = (2 + LABEL_PARENTS) * 256
        rest = concat_bits([msg, Bits.constant(padding(total_bits))])  # blocks 1..19
        # block 0: replica id || layer (u32 BE) || node (u64 BE) || 20 zero bytes, per layer
        rid_codes, rid_vals = le_bytes(rid_bits)
        rid = Bits(rid_codes, pad_kinds.copy(), rid_vals)
        node_kinds = np.concatenate([np.full(64 - nb, CONST0), np.full(nb, VAR)]).astype(np.int8)
        node_codes = np.concatenate([np.zeros((C, 64 - nb), dtype=np.int64), ch_bits.codes[:, ::-1]], axis=1)
        node_vals = None
        if cs.has_values:
            nv = cs.value(ch_bits).small().astype(np.uint8)[:, ::-1]
            node_vals = np.concatenate([np.zeros((C, 64 - nb), dtype=np.uint8), nv], axis=1)
        node = Bits(node_codes, node_kinds, node_vals)
        states = []
        for layer in range(1, L + 1):
            layer_bits = Bits.constant([(layer >> (31 - j)) & 1 for j in range(32)])
            block0 = concat_bits([rid, layer_bits, node, Bits.constant(np.zeros(160, dtype=np.int8))])
            states.append(sha256_compression(cs, f"layer {layer} block 0", [UInt32.constant(x) for x in IV], block0))
        state = []
        for w in range(8):
            kinds = states[0][w].kinds
            if any(not np.array_equal(s[w].kinds, kinds) for s in states):
                raise AssertionError("SHA-256 states of the layers differ in their constant bits")
            value = None if not cs.has_values else np.stack([s[w].value for s in states], axis=1)
            state.append(UInt32(np.stack([s[w].codes for s in states], axis=1), kinds.copy(), value))
        for b in range(len(rest) // 512):
            state = sha256_compression(cs, f"block {b + 1}", state, rest[512 * b : 512 * (b + 1)])
        digest = digest_le_bits(words_bits_be(state, (C, L)), 254)  # the digest read LE, 254 bits
        if cs.wants_constraints:
            cs.enforce("label = column label", boolean.pack(digest.var), cs.one, column)


def count_constraints(proof_id: int, challenges: int, shape: str = DEFAULT_SHAPE) -> dict[str, int]:
    """The circuit's size without recording it (a counting constraint system): constraints, public
    inputs, private variables."""
    from .. import curves

    circuit = PoRep(proof_id=proof_id, challenges=challenges, shape=shape)
    cs = ConstraintSystem(curves.get(circuit.curve))
    circuit.synthesize(cs, None)
    return {"constraints": cs.n_constraints, "inputs": cs.n_inputs - 1, "aux": cs.n_aux}
