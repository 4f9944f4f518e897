"""Filecoin's proofs of spacetime (FallbackPoSt): WindowPoSt and WinningPoSt, their challenges, openings
(the vanilla proof's JSON view), native verification and circuits.

Facts (read, not copied, from filecoin-project/rust-fil-proofs 87348a7: storage-proofs-post
``src/fallback/{vanilla,circuit,compound,utils}.rs``, storage-proofs-core ``gadgets/{por,insertion}.rs``,
filecoin-proofs ``src/api/{window_post,winning_post,post_util}.rs``, ``src/parameters.rs``,
``src/constants.rs``; rust-filecoin-proofs-api 0e64ce8 ``src/registry.rs``):

* Registered PoSt proofs: 0-4 ``StackedDrgWinning{2KiB,8MiB,512MiB,32GiB,64GiB}V1`` (API 1.0.0), 5-9
  ``StackedDrgWindow*V1`` (1.0.0), 10-14 ``StackedDrgWindow*V1_2`` (1.2.0, today's WindowPoSt).
* Leaf challenge (``generate_leaf_challenge``): SHA-256(randomness[32] || sector id u64 LE || challenge
  index u64 LE), its first 8 bytes as a little-endian u64, mod the sector's node count. The challenge
  index (``get_challenge_index``) is ``sector_index * challenges_per_sector + n`` for API 1.0 / 1.1 and
  ``n`` for 1.2, where ``sector_index`` = partition * sectors per partition + the sector's position.
* Winning's challenged sector (``generate_sector_challenge``): SHA-256(prover_id[32] || randomness[32] ||
  n u64 LE), first 8 bytes LE u64, mod the sector set's size; one sector (WINNING_POST_SECTOR_COUNT).
* The circuit (``FallbackPoStCircuit``), per circuit sector: CommR (public) = Poseidon2(CommC,
  CommR_last) (both private), then per challenge the leaf's inclusion in tree_r_last (the sector's
  LCTree: arity-8 base levels, then the sub / top levels) against CommR_last. Public inputs per sector:
  CommR, then per challenge the packed path bits of the challenged leaf (``PoRCompound``'s input, one Fr
  = the leaf index, as the index's bits are the path's insert positions).
* WindowPoSt: a partition is WINDOW_POST_SECTOR_COUNT sectors (2 at the test sizes, 2349 at 32 GiB,
  2300 at 64 GiB) x 10 challenges; a partition with fewer sectors repeats its last sector (vanilla proof
  and public inputs) to fill the circuit.
* WinningPoSt: 1 sector x 66 challenges, but the circuit is laid out as 66 circuit sectors of 1
  challenge each (``winning_post_setup_params``: sector_count = 66 / 1, challenge_count = 1), each with
  its own CommR check (66 CommR inputs, all equal).

:func:`post_openings` opens a PoSt from sealed sectors, :func:`verify_post_openings` checks it natively
(ValueError "sector s (id N): challenge c (leaf i): ..."), :class:`WindowPoSt` / :class:`WinningPoSt`
are the circuits (``shape="filecoin"``, the default: rust's constraint structure, so rust's counts:
125,279,217 for a 32 GiB WindowPoSt partition, as filecoin-proofs ``constants.rs`` states;
``shape="compact"``: our cheaper gadgets, 96,440,544), :func:`count_constraints` counts one without
recording it, :func:`rust_constraint_count` is a closed-form model of rust's count, and
:func:`post_from_bincode` / :func:`sector_proof_from_bincode` read rust's per-sector vanilla proofs
(bincode ``FallbackPoStSectorProof``, what filecoin-ffi returns and Curio forwards). The binary vanilla
file of a PoSt is ``.cvp`` version 2 (:mod:`.vanilla`).
"""

from __future__ import annotations

import hashlib
import random
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..circuit.circuit import Circuit, CircuitError, field_element
from ..circuit.cs import ConstraintSystem
from ..circuit.poseidon import poseidon_hash as poseidon_native
from . import params as P
from . import trees

FR = trees.FR
R = FR.p

WINDOW = "window-post"
WINNING = "winning-post"
KINDS = (WINDOW, WINNING)
NAMES = ("2KiB", "8MiB", "512MiB", "32GiB", "64GiB")
MAX_WINDOW_SECTORS = max(sp.window_post_sector_count for sp in P.PARAMS.values())
SHAPES = ("filecoin", "compact")  # rust-fil-proofs' constraint structure, or ours (cheaper gadgets)


# ---------------------------------------------------------------------------------------------
# registered PoSt proofs and shapes


@dataclass(frozen=True)
class PoStProof:
    proof_id: int
    kind: str
    sector_size: int
    api_version: str
    name: str

    @property
    def nodes(self) -> int:
        return self.sector_size // P.NODE_SIZE


def post_proof(proof_id: Any) -> PoStProof:
    """A registered PoSt proof id's kind, sector size and API version (ValueError for another id)."""
    if isinstance(proof_id, bool) or not isinstance(proof_id, int) or not 0 <= proof_id <= 14:
        raise ValueError(f"PoSt proof id {proof_id!r}: expected a registered PoSt proof (0-14)")
    size = P.SECTOR_SIZES[proof_id % 5]
    if proof_id < 5:
        return PoStProof(proof_id, WINNING, size, P.API_V1_0_0, f"StackedDrgWinning{NAMES[proof_id % 5]}V1")
    if proof_id < 10:
        return PoStProof(proof_id, WINDOW, size, P.API_V1_0_0, f"StackedDrgWindow{NAMES[proof_id % 5]}V1")
    return PoStProof(proof_id, WINDOW, size, P.API_V1_2_0, f"StackedDrgWindow{NAMES[proof_id % 5]}V1_2")


def post_proof_id(kind: str, sector_size: int) -> int:
    """Today's registered PoSt proof of a kind and sector size (Winning V1, Window V1_2)."""
    if kind not in KINDS:
        raise ValueError(f"PoSt kind {kind!r}: expected {' or '.join(KINDS)}")
    if sector_size not in P.SECTOR_SIZES:
        raise ValueError(f"{sector_size} bytes is not a Filecoin sector size")
    i = P.SECTOR_SIZES.index(sector_size)
    return i if kind == WINNING else 10 + i


def tree_arities(sector_size: int) -> list[int]:
    """The arity of each level of a sector's tree_r_last (leaf to root): base 8 levels, then sub, top."""
    base, sub, top = P.PARAMS[sector_size].tree_arities
    n = sector_size // P.NODE_SIZE
    per_base = n // (max(sub, 1) * max(top, 1))
    k = 0
    while base**k < per_base:
        k += 1
    return [base] * k + [a for a in (sub, top) if a]


# ---------------------------------------------------------------------------------------------
# challenges


def challenge_index(api_version: str, sector_index: int, challenges_per_sector: int, n: int) -> int:
    """The index hashed into a leaf challenge (rust ``get_challenge_index``)."""
    if api_version == P.API_V1_2_0:
        return n
    return sector_index * challenges_per_sector + n


def leaf_challenge(randomness: bytes, sector_id: int, index: int, nodes: int) -> int:
    """The challenged leaf of one challenge index of a sector (rust ``generate_leaf_challenge``)."""
    h = hashlib.sha256(bytes(randomness) + struct.pack("<Q", sector_id) + struct.pack("<Q", index)).digest()
    return int.from_bytes(h[:8], "little") % nodes


def leaf_challenges(proof_id: int, randomness: bytes, sector_id: int, sector_index: int, count: int | None = None) -> list[int]:
    """The challenged leaves of the sector at position ``sector_index`` of a PoSt (``count`` challenges:
    by default 10 for WindowPoSt, 66 for WinningPoSt)."""
    pp = post_proof(proof_id)
    if count is None:
        count = P.WINDOW_POST_CHALLENGE_COUNT if pp.kind == WINDOW else P.WINNING_POST_CHALLENGE_COUNT
    return [
        leaf_challenge(randomness, sector_id, challenge_index(pp.api_version, sector_index, count, n), pp.nodes)
        for n in range(count)
    ]


def sector_challenge(randomness: bytes, prover_id: bytes, n: int, sector_set_len: int) -> int:
    """WinningPoSt's n-th challenged sector: an index into the sector set (rust
    ``generate_sector_challenge``)."""
    if sector_set_len < 1:
        raise ValueError("an empty sector set has no challenged sector")
    h = hashlib.sha256(bytes(prover_id) + bytes(randomness) + struct.pack("<Q", n)).digest()
    return int.from_bytes(h[:8], "little") % sector_set_len


def sector_challenges(randomness: bytes, count: int, sector_set_len: int, prover_id: bytes) -> list[int]:
    return [sector_challenge(randomness, prover_id, n, sector_set_len) for n in range(count)]


# ---------------------------------------------------------------------------------------------
# openings (the JSON view of a vanilla proof)


@dataclass
class ReplicaTrees:
    """What a PoSt reads of a sealed sector: tree_r_last and CommC (a :class:`.seal.SealedSector` has
    both; :func:`fake_replica` makes one without sealing, as rust's tests do)."""

    proof_id: int  # the seal proof id (its sector size)
    tree_r_last: trees.PoseidonTree
    comm_c: int

    @property
    def comm_r_last(self) -> int:
        return self.tree_r_last.root_int()

    @property
    def comm_r(self) -> int:
        return trees.comm_r(self.comm_c, self.comm_r_last)


def fake_replica(seal_proof_id: int, rng: random.Random) -> ReplicaTrees:
    """Random replica leaves, their tree_r_last and a random CommC: enough for a PoSt (its circuit
    never looks at how the replica was made), and fast at any size a test can hold."""
    size = P.sector_size_of(seal_proof_id)
    _base, sub, top = P.PARAMS[size].tree_arities
    n = size // P.NODE_SIZE
    leaves = FR.from_ints([rng.randrange(R) for _ in range(n)]) if n <= 1 << 14 else _random_mont(n, rng)
    return ReplicaTrees(seal_proof_id, trees.build_tree(leaves, sub, top), rng.randrange(R))


def _random_mont(n: int, rng: random.Random) -> np.ndarray:
    raw = np.random.default_rng(rng.randrange(1 << 63)).integers(0, 1 << 63, (n, 4), dtype=np.uint64)
    raw[:, 3] &= np.uint64((1 << 60) - 1)  # below 2^252 < r
    return FR.to_mont(np.ascontiguousarray(raw))


def _sector_openings(sector_id: int, rep: Any, leaves: list[int]) -> dict:
    tree = rep.tree_r_last
    return {
        "sector_id": int(sector_id),
        "comm_c": str(rep.comm_c),
        "comm_r_last": str(rep.comm_r_last),
        "comm_r": str(rep.comm_r),
        "challenges": [
            {
                "index": int(i),
                "leaf": str(FR.to_ints(tree.levels[0][i : i + 1])[0]),
                "path": [[[str(s) for s in sib], int(pos)] for sib, pos in tree.path(i)],
            }
            for i in leaves
        ],
    }


def post_openings(
    sealed_sectors: Sequence[tuple[int, Any]],
    randomness: bytes,
    kind: str,
    proof_id: int | None = None,
    partition: int = 0,
    prover_id: bytes = bytes(32),
    sectors_per_partition: int | None = None,
    challenges: int | None = None,
) -> dict:
    """The openings of a PoSt: a JSON-ready dict, the inputs of a :class:`WindowPoSt` /
    :class:`WinningPoSt` circuit.

    ``sealed_sectors``: (sector id, sealed sector) pairs (a :class:`.seal.SealedSector` or a
    :class:`ReplicaTrees`), all of one sector size. WindowPoSt: the sectors of partition ``partition``
    (at most ``sectors_per_partition``, by default the proof's WINDOW_POST_SECTOR_COUNT), each opened at
    its challenges. WinningPoSt: the sector set; the challenged sector is drawn from it with
    ``prover_id`` and opened at its 66 challenges."""
    if kind not in KINDS:
        raise ValueError(f"PoSt kind {kind!r}: expected {' or '.join(KINDS)}")
    if not sealed_sectors:
        raise ValueError("no sectors")
    sizes = {P.sector_size_of(rep.proof_id) for _, rep in sealed_sectors}
    if len(sizes) != 1:
        raise ValueError(f"sectors of several sizes: {sorted(sizes)}")
    size = sizes.pop()
    proof_id = post_proof_id(kind, size) if proof_id is None else proof_id
    pp = post_proof(proof_id)
    if pp.kind != kind or pp.sector_size != size:
        raise ValueError(f"PoSt proof {proof_id} ({pp.name}) is not a {kind} of {size}-byte sectors")
    if len(randomness) != 32 or int.from_bytes(randomness, "little") >= R:
        raise ValueError("randomness: expected 32 bytes, a field element (little-endian, below r)")
    obj: dict[str, Any] = {"kind": kind, "proof_id": proof_id, "randomness": bytes(randomness).hex()}
    obj["prover_id"] = bytes(prover_id).hex()
    if kind == WINNING:
        count = P.WINNING_POST_CHALLENGE_COUNT if challenges is None else challenges
        pick = sector_challenge(randomness, prover_id, 0, len(sealed_sectors))
        sid, rep = sealed_sectors[pick]
        obj.update(partition=0, sectors_per_partition=1, sector_set_len=len(sealed_sectors), sector_challenge=pick)
        obj["sectors"] = [_sector_openings(sid, rep, leaf_challenges(proof_id, randomness, sid, 0, count))]
        return obj
    spp = P.PARAMS[size].window_post_sector_count if sectors_per_partition is None else sectors_per_partition
    if len(sealed_sectors) > spp:
        raise ValueError(f"{len(sealed_sectors)} sectors: a partition holds at most {spp}")
    count = P.WINDOW_POST_CHALLENGE_COUNT if challenges is None else challenges
    obj.update(partition=partition, sectors_per_partition=spp)
    obj["sectors"] = [
        _sector_openings(sid, rep, leaf_challenges(proof_id, randomness, sid, partition * spp + i, count))
        for i, (sid, rep) in enumerate(sealed_sectors)
    ]
    return obj


def _root(leaf: int, index: int, path: list, arities: list[int]) -> int | None:
    """The root a Poseidon path reaches; None when its shape or a position does not fit the index."""
    if not isinstance(path, list) or len(path) != len(arities):
        return None
    cur = leaf
    for level, a in zip(path, arities, strict=True):
        if not isinstance(level, list) or len(level) != 2:
            return None
        sib, pos = level
        if pos != index % a or not isinstance(sib, list) or len(sib) != a - 1:
            return None
        s = [int(x) for x in sib]
        if any(not 0 <= x < R for x in s):
            return None
        cur = poseidon_native(s[:pos] + [cur] + s[pos:], a)
        index //= a
    return cur


def verify_post_openings(obj: dict) -> None:
    """Check :func:`post_openings`' dict natively: every sector's CommR = Poseidon2(CommC, CommR_last),
    every challenge the leaf the randomness derives, every path reaching CommR_last. ValueError
    "sector s (id N): ..." or "sector s (id N): challenge c (leaf i): ..." saying what did not match."""
    pp = post_proof(obj.get("proof_id"))
    if obj.get("kind") != pp.kind:
        raise ValueError(f"kind {obj.get('kind')!r}: PoSt proof {pp.proof_id} ({pp.name}) is a {pp.kind}")
    randomness = bytes.fromhex(obj["randomness"])
    if len(randomness) != 32 or int.from_bytes(randomness, "little") >= R:
        raise ValueError("randomness: not 32 bytes of a field element")
    arities = tree_arities(pp.sector_size)
    spp, partition = int(obj.get("sectors_per_partition", 1)), int(obj.get("partition", 0))
    sectors = obj["sectors"]
    if pp.kind == WINNING and len(sectors) != P.WINNING_POST_SECTOR_COUNT:
        raise ValueError(f"a WinningPoSt opens {P.WINNING_POST_SECTOR_COUNT} sector, not {len(sectors)}")
    if len(sectors) > spp:
        raise ValueError(f"{len(sectors)} sectors: more than the partition's {spp}")
    for s, sec in enumerate(sectors):
        sid = int(sec["sector_id"])
        where = f"sector {s} (id {sid})"
        comm_c, comm_r_last, comm_r = int(sec["comm_c"]), int(sec["comm_r_last"]), int(sec["comm_r"])
        if any(not 0 <= x < R for x in (comm_c, comm_r_last, comm_r)):
            raise ValueError(f"{where}: a commitment is not a field element")
        if poseidon_native([comm_c, comm_r_last], 2) != comm_r:
            raise ValueError(f"{where}: CommR is not Poseidon2(CommC, CommR_last)")
        chals = sec["challenges"]
        want = leaf_challenges(pp.proof_id, randomness, sid, partition * spp + s, len(chals))
        for c, ch in enumerate(chals):
            i = int(ch["index"])
            w = f"{where}: challenge {c} (leaf {i})"
            if i != want[c]:
                raise ValueError(f"{w}: not the leaf the randomness challenges (leaf {want[c]})")
            leaf = int(ch["leaf"])
            if not 0 <= leaf < R:
                raise ValueError(f"{w}: the leaf is not a field element")
            if _root(leaf, i, ch["path"], arities) != comm_r_last:
                raise ValueError(f"{w}: the path does not reach CommR_last")


# ---------------------------------------------------------------------------------------------
# parsing (lengths checked before anything is allocated)


def _fe(x: Any, where: str) -> int:
    return field_element(x, where, R)


def _list(x: Any, where: str, n: int | None = None, lo: int = 0, hi: int = 0) -> list:
    if not isinstance(x, list):
        raise CircuitError(f"{where}: expected a list")
    if n is not None and len(x) != n:
        raise CircuitError(f"{where}: expected a list of {n}, got {len(x)}")
    if n is None and not lo <= len(x) <= hi:
        raise CircuitError(f"{where}: expected {lo} to {hi} entries, got {len(x)}")
    return x


def _int(x: Any, where: str, hi: int) -> int:
    if isinstance(x, bool) or not isinstance(x, int) or not 0 <= x < hi:
        raise CircuitError(f"{where}: expected an integer in [0, {hi})")
    return x


# ---------------------------------------------------------------------------------------------
# the circuit


class FallbackPoSt(Circuit):
    """Filecoin's FallbackPoSt circuit of ``sectors`` x ``challenges`` for registered PoSt proof
    ``proof_id``; use :class:`WindowPoSt` or :class:`WinningPoSt`.

    Public inputs, in order, per circuit sector: CommR, then each challenge's leaf index (rust's order and
    values). Private: CommC, CommR_last per sector; per challenge the leaf and its path. Each index's bits
    are the insert positions of its path (every arity a power of two).

    ``shape``: ``"filecoin"`` (the default) is rust-fil-proofs' constraint structure gadget for gadget
    (:mod:`..circuit.gadgets.storage_proofs`' PoR path: position bits allocated per level, its insertion,
    neptune-shaped Poseidon; CommR allocated and inputized; the path bits packed into the challenge's
    input), so its constraint and input counts are rust's; ``"compact"`` uses our cheaper gadgets (one
    decomposition of the index, our insertion and Poseidon): the same statement, ~23% fewer constraints."""

    kind = ""
    default_proof_id = 0

    def __init__(self, proof_id: int | None = None, sectors: int = 1, challenges: int = 1, shape: str = "filecoin"):
        proof_id = self.default_proof_id if proof_id is None else proof_id
        name = type(self).__name__
        if shape not in SHAPES:
            raise CircuitError(f"{name}: shape {shape!r}: expected one of {', '.join(SHAPES)}")
        super().__init__(proof_id=proof_id, sectors=sectors, challenges=challenges, shape=shape)
        self.shape = shape
        try:
            pp = post_proof(proof_id)
        except ValueError as e:
            raise CircuitError(f"{name}: {e}") from None
        if pp.kind != self.kind:
            raise CircuitError(f"{name}: proof id {proof_id} is {pp.name}, not a {self.kind}")
        for what, v, hi in (
            ("sectors", sectors, MAX_WINDOW_SECTORS),
            ("challenges", challenges, P.WINNING_POST_CHALLENGE_COUNT),
        ):
            if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= hi:
                raise CircuitError(f"{name}: {what} {v!r}: expected 1 to {hi}")
        self.proof_id, self.sectors, self.challenges, self.pp = proof_id, sectors, challenges, pp
        self.nodes = pp.nodes
        self.bits = self.nodes.bit_length() - 1
        self.arities = tree_arities(pp.sector_size)
        # the circuit's layout: circuit sectors x challenges each
        self.layout = (sectors, challenges)

    # ---- inputs
    verify_natively = True  # parse_inputs checks every opening natively first (the daemon refuses at submit)

    def parse_binary(self, data: bytes, partition: int = 0) -> Any:
        """A vanilla proof file (:mod:`.vanilla`, ``.cvp`` version 2) as the JSON view."""
        from .vanilla import VanillaError, decode

        try:
            return decode(data)
        except VanillaError as e:
            raise CircuitError(str(e)) from None

    def sample_inputs(self, seed: int = 0) -> Any:
        """Openings of fake replicas (random leaves and CommC; no sealing) at the derived challenges."""
        rng = random.Random(seed)
        seal_id = 5 + P.SECTOR_SIZES.index(self.pp.sector_size)
        randomness = rng.randrange(R).to_bytes(32, "little")
        n = self.sectors if self.kind == WINDOW else 1
        reps = [(rng.randrange(1 << 40), fake_replica(seal_id, rng)) for _ in range(n)]
        return post_openings(
            reps,
            randomness,
            self.kind,
            self.proof_id,
            prover_id=rng.randbytes(32),
            sectors_per_partition=self.sectors if self.kind == WINDOW else None,
            challenges=self.challenges,
        )

    def parse_inputs(self, obj: Any) -> Any:
        if not isinstance(obj, dict):
            raise CircuitError(f"inputs: expected a JSON object, got {type(obj).__name__}")
        for k in ("kind", "proof_id", "randomness", "sectors"):
            if k not in obj:
                raise CircuitError(f"inputs: missing {k!r}")
        if obj["kind"] != self.kind:
            raise CircuitError(f"inputs.kind: {obj['kind']!r}, the circuit is a {self.kind}")
        if obj["proof_id"] != self.proof_id:
            raise CircuitError(f"inputs.proof_id: {obj['proof_id']!r}, the circuit is for proof id {self.proof_id}")
        hi = self.sectors if self.kind == WINDOW else 1
        secs = _list(obj["sectors"], "inputs.sectors", None, 1, hi)
        parsed = []
        for s, sec in enumerate(secs):
            w = f"inputs.sectors[{s}]"
            if not isinstance(sec, dict):
                raise CircuitError(f"{w}: expected an object")
            for k in ("sector_id", "comm_c", "comm_r_last", "comm_r", "challenges"):
                if k not in sec:
                    raise CircuitError(f"{w}: missing {k!r}")
            _int(sec["sector_id"], f"{w}.sector_id", 1 << 64)
            row = {k: _fe(sec[k], f"{w}.{k}") for k in ("comm_c", "comm_r_last", "comm_r")}
            chals = _list(sec["challenges"], f"{w}.challenges", self.challenges)
            idx, leaves, paths = [], [], []
            for c, ch in enumerate(chals):
                wc = f"{w}.challenges[{c}]"
                if not isinstance(ch, dict):
                    raise CircuitError(f"{wc}: expected an object")
                for k in ("index", "leaf", "path"):
                    if k not in ch:
                        raise CircuitError(f"{wc}: missing {k!r}")
                i = _int(ch["index"], f"{wc}.index", self.nodes)
                idx.append(i)
                leaves.append(_fe(ch["leaf"], f"{wc}.leaf"))
                levels = _list(ch["path"], f"{wc}.path", len(self.arities))
                sibs = []
                node = i
                for lv, (level, a) in enumerate(zip(levels, self.arities, strict=True)):
                    wl = f"{wc}.path[{lv}]"
                    pair = _list(level, wl, 2)
                    sib = [_fe(x, f"{wl}.siblings") for x in _list(pair[0], f"{wl}.siblings", a - 1)]
                    if pair[1] != node % a:
                        raise CircuitError(f"{wl}: position {pair[1]!r} does not match the leaf index {i}")
                    sibs.append(sib)
                    node //= a
                paths.append(sibs)
            row.update(index=idx, leaf=leaves, path=paths)
            parsed.append(row)
        if self.verify_natively:
            try:
                verify_post_openings(obj)
            except (ValueError, KeyError, TypeError) as e:
                raise CircuitError(f"vanilla proof: {e}") from None
        # the circuit's sectors: Window repeats the last sector to fill the partition; Winning unrolls its
        # one sector's challenges into one circuit sector each
        S, C = self.layout
        if self.kind == WINDOW:
            rows = [parsed[min(j, len(parsed) - 1)] for j in range(S)]
            units = [(r, list(range(C))) for r in rows]
        else:
            units = [(parsed[0], [j]) for j in range(S)]  # layout (challenges, 1)
        obj_arr = lambda x: np.array(x, dtype=object)  # noqa: E731
        return {
            "public": obj_arr([[r["comm_r"], *(r["index"][k] for k in ks)] for r, ks in units]),
            "comm_c": obj_arr([r["comm_c"] for r, _ in units]),
            "comm_r_last": obj_arr([r["comm_r_last"] for r, _ in units]),
            "leaf": obj_arr([[r["leaf"][k] for k in ks] for r, ks in units]),
            "path": [obj_arr([[r["path"][k][lv] for k in ks] for r, ks in units]) for lv in range(len(self.arities))],
        }

    # ---- synthesis
    def synthesize(self, cs: ConstraintSystem, inputs: Any) -> None:
        from ..circuit.gadgets import boolean, num
        from ..circuit.gadgets.merkle import insert
        from ..circuit.gadgets.poseidon import poseidon_hash
        from ..circuit.lc import Var

        S, C = self.layout
        v = inputs or {}

        def val(key: str) -> Any:
            return v.get(key) if inputs is not None else None

        # per circuit sector: CommR, then its challenges' leaf indices (rust's input order)
        public = cs.alloc_input("comm_r and challenges", val("public"), (S, 1 + C))
        if self.shape == "filecoin":
            self._synthesize_filecoin(cs, inputs, public)
            return
        comm_r, index = public[:, 0], public[:, 1:]
        comm_c = cs.alloc("comm_c", val("comm_c"), (S,))
        comm_r_last = cs.alloc("comm_r_last", val("comm_r_last"), (S,))
        with cs.namespace("comm_r"):
            h = poseidon_hash(cs, "hash", [comm_c, comm_r_last], 2)
            num.assert_equal(cs, "CommR = Poseidon2(CommC, CommR_last)", h, comm_r)
        bits = boolean.to_bits(cs, "challenge bits", index, self.bits)  # (S, C, bits)
        with cs.namespace("tree_r_last"):
            cur: Any = cs.alloc("leaf", val("leaf"), (S, C))
            off = 0
            for lv, a in enumerate(self.arities):
                k = a.bit_length() - 1
                with cs.namespace(f"level {lv}"):
                    sib = cs.alloc("siblings", v["path"][lv] if inputs is not None else None, (S, C, a - 1))
                    children = insert(cs, "insert", cur, bits[..., off : off + k], [sib[..., j] for j in range(a - 1)])
                    cur = poseidon_hash(cs, "hash", children, a)
                off += k
            root_want = Var(np.ascontiguousarray(np.broadcast_to(comm_r_last.codes[:, None], (S, C))))
            num.assert_equal(cs, "root = CommR_last", cur, root_want)

    def _synthesize_filecoin(self, cs: ConstraintSystem, inputs: Any, public: Any) -> None:
        """rust-fil-proofs' ``FallbackPoStCircuit`` structure, all circuit sectors batched per gadget: per
        sector CommR_last, CommC, CommR allocated, CommR inputized (1), hash2 (neptune, 311), equality
        (1); per challenge the leaf allocated, ``PoRCircuit``'s path (per level log2(arity) bits, the
        insertion, neptune Poseidon), the path bits packed into the challenge's input (1), the root
        equal to CommR_last (1)."""
        from ..circuit.gadgets import storage_proofs as sp
        from ..circuit.gadgets.neptune_poseidon import poseidon_hash
        from ..circuit.lc import Var

        S, C = self.layout
        v = inputs or {}
        has = inputs is not None
        comm_r_last = cs.alloc("comm_r_last", v.get("comm_r_last") if has else None, (S,))
        comm_c = cs.alloc("comm_c", v.get("comm_c") if has else None, (S,))
        comm_r = cs.alloc("comm_r", v["public"][:, 0] if has else None, (S,))
        with cs.namespace("comm_r"):
            cs.enforce("inputize", comm_r, cs.one, public[:, 0])
            h = poseidon_hash(cs, "hash", [comm_c, comm_r_last], 2)
            cs.enforce("CommR = Poseidon2(CommC, CommR_last)", comm_r, cs.one, h)
        with cs.namespace("tree_r_last"):
            leaf = cs.alloc("leaf", v.get("leaf") if has else None, (S, C))
            sib = [cs.alloc(f"siblings {lv}", v["path"][lv] if has else None, (S, C, a - 1)) for lv, a in enumerate(self.arities)]
            index = np.array(v["public"][:, 1:], dtype=np.uint64) if has else None
            root, bits = sp.por(cs, "path", leaf, index, sib, self.arities)
            sp.pack_into_input(cs, "path bits = challenge", bits, public[:, 1:])
            want = Var(np.ascontiguousarray(np.broadcast_to(comm_r_last.codes[:, None], (S, C))))
            cs.enforce("root = CommR_last", root, cs.one, want)


class WindowPoSt(FallbackPoSt):
    """One WindowPoSt partition: ``sectors`` sectors x ``challenges`` challenges (Filecoin: 2 x 10 at the
    test sizes, 2349 x 10 at 32 GiB); proof id 10-14 (V1_2) or 5-9 (V1). Inputs: :func:`post_openings`'
    dict with 1 to ``sectors`` sectors (the last repeated to fill the circuit)."""

    kind = WINDOW
    default_proof_id = 10

    def __init__(
        self,
        proof_id: int | None = None,
        sectors: int = 2,
        challenges: int = P.WINDOW_POST_CHALLENGE_COUNT,
        shape: str = "filecoin",
    ):
        super().__init__(proof_id, sectors, challenges, shape)


class WinningPoSt(FallbackPoSt):
    """A WinningPoSt: 1 sector x ``challenges`` (66) challenges, laid out as rust does: ``challenges``
    circuit sectors of one challenge each (each with its CommR check); proof id 0-4."""

    kind = WINNING
    default_proof_id = 0

    def __init__(
        self,
        proof_id: int | None = None,
        sectors: int = P.WINNING_POST_SECTOR_COUNT,
        challenges: int = P.WINNING_POST_CHALLENGE_COUNT,
        shape: str = "filecoin",
    ):
        if sectors != P.WINNING_POST_SECTOR_COUNT:
            raise CircuitError(f"WinningPoSt: sectors {sectors!r}: a WinningPoSt proves {P.WINNING_POST_SECTOR_COUNT} sector")
        super().__init__(proof_id, sectors, challenges, shape)
        self.layout = (challenges, 1)


# ---------------------------------------------------------------------------------------------
# sizes


def count_constraints(
    kind: str, proof_id: int | None = None, sectors: int | None = None, challenges: int | None = None, shape: str = "filecoin"
) -> dict:
    """The circuit's size without recording it (a counting constraint system): constraints, public
    inputs, private variables. Defaults: the protocol's sector and challenge counts of the proof."""
    from .. import curves

    if kind not in KINDS:
        raise ValueError(f"PoSt kind {kind!r}: expected {' or '.join(KINDS)}")
    cls = WindowPoSt if kind == WINDOW else WinningPoSt
    pid = cls.default_proof_id if proof_id is None else proof_id
    size = post_proof(pid).sector_size
    if sectors is None:
        sectors = P.PARAMS[size].window_post_sector_count if kind == WINDOW else P.WINNING_POST_SECTOR_COUNT
    if challenges is None:
        challenges = P.WINDOW_POST_CHALLENGE_COUNT if kind == WINDOW else P.WINNING_POST_CHALLENGE_COUNT
    circuit = cls(pid, sectors, challenges, shape)
    cs = ConstraintSystem(curves.get(circuit.curve))
    circuit.synthesize(cs, None)
    return {"constraints": cs.n_constraints, "inputs": cs.n_inputs - 1, "aux": cs.n_aux}


# rust-fil-proofs' gadget costs (read from storage-proofs-core gadgets/{por,insertion,constraint}.rs,
# filecoin-hashers poseidon.rs and neptune's circuit; the totals reproduce every count rust-fil-proofs
# publishes for this circuit): Poseidon by arity (neptune; CommR's hash2 is the arity-2 one), the insert
# gadget by arity; CommR's inputize and equality cost 1 each.
RUST_POSEIDON = {2: 311, 4: 377, 8: 505}
RUST_INSERT = {2: 2, 4: 8, 8: 22}


def rust_constraint_count(arities: Sequence[int], circuit_sectors: int, challenges: int) -> int:
    """rust-fil-proofs' FallbackPoSt constraint count for a tree of these level arities: per circuit
    sector CommR's inputize + hash2 + equality, per challenge per level log2(arity) index bits + insert + Poseidon,
    then the packing of the path bits into the input and the root equality."""
    per_level = sum((a.bit_length() - 1) + RUST_INSERT[a] + RUST_POSEIDON[a] for a in arities)
    return circuit_sectors * (1 + RUST_POSEIDON[2] + 1 + challenges * (per_level + 2))


# ---------------------------------------------------------------------------------------------
# rust's vanilla proof per sector: bincode FallbackPoStSectorProof (what filecoin-ffi / Curio hand over)
#
# Layout (bincode 1 defaults: little-endian, fixed-width integers, u64 lengths, u32 enum tags), read from
# the serde derives of filecoin-proofs ``types::FallbackPoStSectorProof`` {sector_id, comm_r,
# vanilla_proof}, storage-proofs-post ``fallback::Proof`` {sectors} / ``SectorProof`` {inclusion_proofs,
# comm_c, comm_r_last}, storage-proofs-core ``merkle::proof::MerkleProof`` {data: ProofData}:
#
#     sector_id u64, comm_r[32], n_sectors u64 (1), then per sector:
#         n_proofs u64, per proof: tag u32 (0 Single, 1 Sub, 2 Top), then
#             Single: root[32], leaf[32], base path
#             Sub:    base path, sub path, root[32], leaf[32]
#             Top:    base path, sub path, top path, root[32], leaf[32]
#           a path: n_levels u64, per level: n_hashes u64, hashes x [32], index u64 (the position)
#         comm_c[32], comm_r_last[32]
#
# A Domain (PoseidonDomain) is its Fr's 32-byte little-endian representation.


class BincodeError(ValueError):
    """A FallbackPoStSectorProof that does not parse (one line naming where)."""


def _tree_parts(sector_size: int) -> tuple[int, list[int]]:
    """(ProofData tag, levels per part: base, [sub], [top]) of a sector size's tree."""
    arities = tree_arities(sector_size)
    _base, sub, top = P.PARAMS[sector_size].tree_arities
    extra = [1 for a in (sub, top) if a]
    return len(extra), [len(arities) - len(extra), *extra]


def sector_proof_from_bincode(data: bytes, proof_id: int, where: str = "sector proof") -> dict:
    """One bincode FallbackPoStSectorProof as a sector of :func:`post_openings`' dict (leaf indices read
    off the path positions). Every length is checked against the proof's tree shape before it is used."""
    pp = post_proof(proof_id)
    arities = tree_arities(pp.sector_size)
    tag_want, parts = _tree_parts(pp.sector_size)
    max_proofs = P.WINNING_POST_CHALLENGE_COUNT
    pos = 0

    def take(k: int, what: str) -> bytes:
        nonlocal pos
        if pos + k > len(data):
            raise BincodeError(f"{where}: truncated at byte {pos} ({what})")
        b = data[pos : pos + k]
        pos += k
        return b

    def u64(what: str) -> int:
        return struct.unpack("<Q", take(8, what))[0]

    def fe(what: str) -> str:
        v = int.from_bytes(take(32, what), "little")
        if v >= R:
            raise BincodeError(f"{where}: {what}: not a field element")
        return str(v)

    def path(level0: int, levels: int, what: str) -> list:
        n = u64(f"{what} length")
        if n != levels:
            raise BincodeError(f"{where}: {what}: {n} levels, the tree has {levels}")
        out = []
        for k in range(levels):
            a = arities[level0 + k]
            m = u64(f"{what}[{k}] length")
            if m != a - 1:
                raise BincodeError(f"{where}: {what}[{k}]: {m} hashes at a level of arity {a}")
            hashes = [fe(f"{what}[{k}]") for _ in range(m)]
            i = u64(f"{what}[{k}] index")
            if i >= a:
                raise BincodeError(f"{where}: {what}[{k}]: position {i} at a level of arity {a}")
            out.append([hashes, i])
        return out

    sector_id = u64("sector_id")
    comm_r = fe("comm_r")
    if (n := u64("sectors")) != 1:
        raise BincodeError(f"{where}: {n} sector proofs, expected 1")
    n_proofs = u64("inclusion proofs")
    if not 1 <= n_proofs <= max_proofs:
        raise BincodeError(f"{where}: {n_proofs} inclusion proofs; 1 to {max_proofs} expected")
    proofs = []
    for c in range(n_proofs):
        w = f"inclusion proof {c}"
        (tag,) = struct.unpack("<I", take(4, f"{w} tag"))
        if tag != tag_want:
            names = ("Single", "Sub", "Top")
            got = names[tag] if tag < 3 else str(tag)
            raise BincodeError(f"{where}: {w}: a {got} proof; {pp.sector_size}-byte sectors have {names[tag_want]} proofs")
        if tag == 0:
            root, leaf = fe(f"{w} root"), fe(f"{w} leaf")
            full = path(0, parts[0], f"{w} path")
        else:
            full, lv = [], 0
            for k, n_lv in enumerate(parts):
                full += path(lv, n_lv, f"{w} {('base', 'sub', 'top')[k]} path")
                lv += n_lv
            root, leaf = fe(f"{w} root"), fe(f"{w} leaf")
        index, mult = 0, 1
        for (_h, i), a in zip(full, arities, strict=True):
            index += i * mult
            mult *= a
        proofs.append((root, {"index": index, "leaf": leaf, "path": full}))
    comm_c, comm_r_last = fe("comm_c"), fe("comm_r_last")
    if pos != len(data):
        raise BincodeError(f"{where}: {len(data) - pos} bytes after the proof")
    for c, (root, _ch) in enumerate(proofs):
        if root != comm_r_last:
            raise BincodeError(f"{where}: inclusion proof {c}: its root is not the proof's CommR_last")
    return {
        "sector_id": sector_id,
        "comm_c": comm_c,
        "comm_r_last": comm_r_last,
        "comm_r": comm_r,
        "challenges": [ch for _r, ch in proofs],
    }


def sector_proof_to_bincode(sector: dict, proof_id: int) -> bytes:
    """A sector of :func:`post_openings`' dict as rust's bincode FallbackPoStSectorProof."""
    pp = post_proof(proof_id)
    tag, parts = _tree_parts(pp.sector_size)

    def fe(x: Any) -> bytes:
        return int(x).to_bytes(32, "little")

    def path(levels: list) -> bytes:
        b = bytearray(struct.pack("<Q", len(levels)))
        for sib, i in levels:
            b += struct.pack("<Q", len(sib)) + b"".join(fe(x) for x in sib) + struct.pack("<Q", int(i))
        return bytes(b)

    out = bytearray(struct.pack("<Q", int(sector["sector_id"])) + fe(sector["comm_r"]))
    out += struct.pack("<QQ", 1, len(sector["challenges"]))
    root = fe(sector["comm_r_last"])
    for ch in sector["challenges"]:
        out += struct.pack("<I", tag)
        if tag == 0:
            out += root + fe(ch["leaf"]) + path(ch["path"])
            continue
        lv = 0
        for n_lv in parts:
            out += path(ch["path"][lv : lv + n_lv])
            lv += n_lv
        out += root + fe(ch["leaf"])
    out += fe(sector["comm_c"]) + fe(sector["comm_r_last"])
    return bytes(out)


def post_from_bincode(
    kind: str,
    proof_id: int,
    randomness: bytes,
    sector_proofs: Sequence[bytes],
    partition: int = 0,
    prover_id: bytes = bytes(32),
    sectors_per_partition: int | None = None,
) -> dict:
    """:func:`post_openings`' dict from rust's per-sector vanilla proofs (Curio's ``vanilla_proofs``),
    the randomness and, for WindowPoSt, the partition; check it with :func:`verify_post_openings`."""
    pp = post_proof(proof_id)
    if pp.kind != kind:
        raise BincodeError(f"PoSt proof {proof_id} is {pp.name}, not a {kind}")
    if kind == WINNING and len(sector_proofs) != P.WINNING_POST_SECTOR_COUNT:
        raise BincodeError(f"a WinningPoSt takes {P.WINNING_POST_SECTOR_COUNT} sector proof, got {len(sector_proofs)}")
    spp = 1 if kind == WINNING else sectors_per_partition or P.PARAMS[pp.sector_size].window_post_sector_count
    if not 1 <= len(sector_proofs) <= spp:
        raise BincodeError(f"{len(sector_proofs)} sector proofs; a partition holds 1 to {spp}")
    obj: dict[str, Any] = {"kind": kind, "proof_id": proof_id, "randomness": bytes(randomness).hex()}
    obj.update(prover_id=bytes(prover_id).hex(), partition=partition, sectors_per_partition=spp)
    obj["sectors"] = [sector_proof_from_bincode(b, proof_id, f"sector proof {s}") for s, b in enumerate(sector_proofs)]
    return obj
