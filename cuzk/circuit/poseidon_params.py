"""Poseidon parameters as Filecoin uses them (the ``neptune`` crate), for the BLS12-381 scalar field.

Every fact below was checked against neptune's source, github.com/argumentcomputer/neptune (formerly
filecoin-project/neptune, lurk-lab/neptune) at commit 86377d0bd6c50f9b4e4a4677d0df335fd3812cdb, and the
outputs are tested against neptune's own test vectors (tests/test_poseidon.py).

=====  =====  ===  ===  ===========  ==========  ==========================
arity  t      R_F  R_P  constants    S-boxes     domain tag (MerkleTree)
=====  =====  ===  ===  ===========  ==========  ==========================
2      3      8    55   189          79          3 = 2^2 - 1
4      5      8    56   320          96          15 = 2^4 - 1
8      9      8    57   585          129         255 = 2^8 - 1
11     12     8    57   780          153         2047 = 2^11 - 1
=====  =====  ===  ===  ===========  ==========  ==========================

(constants = (R_F + R_P) * t; S-boxes = t * R_F + R_P.) Filecoin hashes with arities 2, 8 and 11; 4 is
kept for completeness.

Sources, in neptune:

* field r = 0x73eda753...00000001 (BLS12-381 Fr, ``blstrs::Scalar``), S-box x^5 (``quintic_s_box`` in
  src/lib.rs), width t = arity + 1 (``Arity::ConstantsSize = Add1<A>`` in src/poseidon.rs);
* rounds: ``round_numbers_base`` / ``calc_round_numbers(t, security_margin=true)`` in
  src/round_numbers.rs (Strength::Standard, 128-bit security, R_F = 6 + 2 margin = 8,
  R_P = ceil(1.075 * minimal R_P)); its test ``test_round_numbers_against_known_values`` lists
  t -> R_P: 2,3 -> 55; 4..7 -> 56; 8..15 -> 57; 16,17 -> 59 (R_F = 8 for all), the table used here;
* round constants: ``generate_constants(FIELD=1, SBOX=1, field_size=Fr::NUM_BITS=255, t, R_F, R_P)``
  in src/round_constants.rs, called from ``round_constants`` in src/lib.rs. NOTE: neptune passes
  S-box type **1** (in the Poseidon reference script 0 means x^alpha, 1 means x^-1), so the 80-bit Grain
  seed has bits 2..5 = 0001 although the S-box is x^5; the published constants file
  parameters/round_constants-1-1-255-9-8-57-73EDA...0001.txt (the reference sage script run with
  "1 1 255 9 8 57") is what neptune tests against, and so do we (first constants, in the tests). The
  Grain LFSR: seed bits [field:2][sbox:4][n:12][t:12][R_F:10][R_P:10][30 ones], most significant bit
  first; b_{i+80} = b_{i+62} ^ b_{i+51} ^ b_{i+38} ^ b_{i+23} ^ b_{i+13} ^ b_i; discard 160 bits; then
  in pairs: if the first bit is 1 output the second, else drop the pair; a constant is 255 output bits,
  most significant first, rejected and redrawn when >= r;
* MDS: ``generate_mds`` in src/mds.rs: the Cauchy matrix M[i][j] = 1 / (x_i + y_j), x_i = i,
  y_j = t + j (i, j < t); it is symmetric, so M and its transpose are the same map. The "correct"
  (plain) permutation ``hash_correct`` in src/poseidon_alt.rs: R_F/2 full rounds, R_P partial rounds,
  R_F/2 full rounds; each round: add the round's t constants (ARK), S-box (every element in a full
  round, element 0 only in a partial round), then state := M . state. neptune's default hash
  (``hash_optimized_static``: compressed constants, sparse matrices) equals it (neptune's own test);
* domain tag: ``HashType::MerkleTree.domain_tag()`` = ``Arity::tag()`` = 2^arity - 1 in state[0]
  (src/hash_type.rs, src/poseidon.rs), the arity inputs in state[1..]; the hash is state[1] after the
  permutation (``extract_output``).
"""

from __future__ import annotations

import dataclasses
import threading
from dataclasses import dataclass

import numpy as np

from .. import curves
from ..field.prime import PrimeField

R = 0x73EDA753299D7D483339D80809A1D80553BDA402FFFE5BFEFFFFFFFF00000001
FIELD_BITS = 255  # Fr::NUM_BITS: the field size handed to Grain
GRAIN_FIELD = 1  # GF(p)
GRAIN_SBOX = 1  # what neptune passes (see the module docstring)
FULL_ROUNDS = 8

# t -> R_P for Strength::Standard (neptune src/round_numbers.rs, test_round_numbers_against_known_values)
PARTIAL_ROUNDS = {
    2: 55,
    3: 55,
    4: 56,
    5: 56,
    6: 56,
    7: 56,
    8: 57,
    9: 57,
    10: 57,
    11: 57,
    12: 57,
    13: 57,
    14: 57,
    15: 57,
    16: 59,
    17: 59,
}

FILECOIN_ARITIES = (2, 8, 11)


def grain_bits(seed: list[int], n_raw: int) -> np.ndarray:
    """The first ``n_raw`` bits the Grain LFSR generates after its 80 seed bits (before any discard)."""
    state = 0
    for j, b in enumerate(seed):
        state |= b << j  # bit j of ``state`` is b_{i+j}
    out = bytearray()
    mask13 = (1 << 13) - 1
    # 13 new bits at a time: b_{i+80+k} needs b_{i+k+13} at least, all within the current 80 bits for k < 13
    for _ in range(-(-n_raw // 13)):
        new = (state >> 62 ^ state >> 51 ^ state >> 38 ^ state >> 23 ^ state >> 13 ^ state) & mask13
        state = state >> 13 | new << 67
        out += new.to_bytes(2, "little")
    words = np.frombuffer(bytes(out), dtype="<u2").astype(np.uint16)
    bits = ((words[:, None] >> np.arange(13, dtype=np.uint16)) & 1).astype(np.uint8).reshape(-1)
    return bits[:n_raw]


def grain_constants(field_type: int, sbox: int, n_bits: int, t: int, r_f: int, r_p: int, count: int, p: int) -> list[int]:
    """``count`` field elements from the Grain LFSR procedure of the Poseidon paper (rejection sampling)."""
    seed: list[int] = []
    for value, width in ((field_type, 2), (sbox, 4), (n_bits, 12), (t, 12), (r_f, 10), (r_p, 10), ((1 << 30) - 1, 30)):
        seed += [(value >> i) & 1 for i in range(width - 1, -1, -1)]
    out: list[int] = []
    n_raw = 160 + int(count * n_bits * 4 * 1.3) + 4096
    while True:
        raw = grain_bits(seed, n_raw)[160:]
        raw = raw[: raw.size // 2 * 2]
        bits = raw[1::2][raw[0::2] == 1]  # self-shrinking: (1, b) -> b, (0, b) -> nothing
        n = bits.size // n_bits
        rows = np.zeros((n, 256), dtype=np.uint8)
        rows[:, 256 - n_bits :] = bits[: n * n_bits].reshape(n, n_bits)
        packed = np.packbits(rows, axis=1)  # big-endian bytes, most significant bit first
        out = []
        for row in packed:
            v = int.from_bytes(row.tobytes(), "big")
            if v < p:
                out.append(v)
                if len(out) == count:
                    return out
        n_raw *= 2  # (never needed with the margin above; kept for safety)


def cauchy_mds(t: int, p: int) -> list[list[int]]:
    """neptune's MDS matrix: M[i][j] = 1 / (i + (t + j)) mod p."""
    return [[pow(i + t + j, -1, p) for j in range(t)] for i in range(t)]


@dataclass
class PoseidonParams:
    """Everything one arity's permutation needs, as Python ints and as Montgomery arrays."""

    arity: int
    t: int
    r_f: int
    r_p: int
    round_constants: list[int]  # (R_F + R_P) * t, round-major
    mds: list[list[int]]  # t x t
    domain_tag: int
    field: PrimeField
    rc_mont: np.ndarray = dataclasses.field(init=False, repr=False)  # (R_F + R_P, t, 4)
    mds_mont: np.ndarray = dataclasses.field(init=False, repr=False)  # (t, t, 4)
    tag_mont: np.ndarray = dataclasses.field(init=False, repr=False)  # (4,)
    _optimized: Optimized | None = dataclasses.field(init=False, repr=False, default=None)

    def __post_init__(self) -> None:
        F = self.field
        n_rounds = self.r_f + self.r_p
        self.rc_mont = F.from_ints(self.round_constants).reshape(n_rounds, self.t, 4)
        self.mds_mont = F.from_ints([x for row in self.mds for x in row]).reshape(self.t, self.t, 4)
        self.tag_mont = F.mont_scalar(self.domain_tag)

    @property
    def n_rounds(self) -> int:
        return self.r_f + self.r_p

    @property
    def half_full(self) -> int:
        return self.r_f // 2

    def is_full(self, rnd: int) -> bool:
        return rnd < self.half_full or rnd >= self.half_full + self.r_p

    @property
    def n_sboxes(self) -> int:
        return self.t * self.r_f + self.r_p

    def rc(self, rnd: int) -> list[int]:
        return self.round_constants[rnd * self.t : (rnd + 1) * self.t]

    def optimized(self) -> Optimized:
        """The same permutation with cheap partial rounds (memoized), see :class:`Optimized`."""
        if self._optimized is None:
            self._optimized = _optimize(self)
        return self._optimized


@dataclass
class Optimized:
    """The permutation rewritten so that a partial round costs 2t - 1 multiplies instead of t^2 (the
    technique of the Poseidon paper's appendix B, as neptune's compressed constants and sparse matrices;
    derived here independently, equal to the plain permutation by construction and by test):

    * constants: in a partial round the constants of elements 1.. commute with the S-box (which touches
      element 0 only), so they are carried through the MDS into the next round's constants; a partial
      round then adds one constant (to element 0) and the carry lands in the next full round's constants;
    * matrices: from the last partial round backwards, the round's matrix N is factored N = A . B with
      B = diag(1, N[1:,1:]) (applied first) and A sparse (A[0] = (N00, N[0,1:] . N[1:,1:]^-1), A[i,0] =
      N[i,0], identity below the first row and right of the first column); B commutes with the S-box of
      the round, so it moves into the previous round's matrix; the last full round before the partial
      rounds ends with a dense matrix B . M.

    The S-box inputs are the plain permutation's (only the linear layers changed), so a trace of the
    S-boxes is the same in both forms.
    """

    round_constants: list[list[int]]  # per round, t values (partial rounds: only element 0 used)
    matrices: list[list[list[int]]]  # per round, the dense matrix (full rounds; the plain M but one)
    sparse_row: list[list[int]]  # per partial round: A[0, :]
    sparse_col: list[list[int]]  # per partial round: A[:, 0] (entry 0 unused: it is A[0, 0])
    rc_mont: np.ndarray  # (rounds, t, 4)
    mat_mont: np.ndarray  # (rounds, t, t, 4)
    row_mont: np.ndarray  # (R_P, t, 4)
    col_mont: np.ndarray  # (R_P, t, 4)


def _mat_vec(m: list[list[int]], v: list[int]) -> list[int]:
    return [sum(a * b for a, b in zip(row, v, strict=True)) % R for row in m]


def _mat_mul(a: list[list[int]], b: list[list[int]]) -> list[list[int]]:
    cols = list(zip(*b, strict=True))
    return [[sum(x * y for x, y in zip(row, col, strict=True)) % R for col in cols] for row in a]


def _inverse(m: list[list[int]]) -> list[list[int]]:
    n = len(m)
    a = [[*row, *(int(i == j) for j in range(n))] for i, row in enumerate(m)]
    for c in range(n):
        piv = next(r for r in range(c, n) if a[r][c] % R)
        a[c], a[piv] = a[piv], a[c]
        inv = pow(a[c][c], -1, R)
        a[c] = [x * inv % R for x in a[c]]
        for r in range(n):
            if r != c and a[r][c]:
                f = a[r][c]
                a[r] = [(x - f * y) % R for x, y in zip(a[r], a[c], strict=True)]
    return [row[n:] for row in a]


def _optimize(P: PoseidonParams) -> Optimized:
    t, h, n_rounds = P.t, P.half_full, P.n_rounds
    partial = range(h, h + P.r_p)
    rcs = [list(P.rc(r)) for r in range(n_rounds)]
    carry = [0] * t
    for r in partial:
        c = [(x + y) % R for x, y in zip(rcs[r], carry, strict=True)]
        rcs[r] = [c[0]] + [0] * (t - 1)
        carry = _mat_vec(P.mds, [0, *c[1:]])
    rcs[h + P.r_p] = [(x + y) % R for x, y in zip(rcs[h + P.r_p], carry, strict=True)]
    mats = [[list(row) for row in P.mds] for _ in range(n_rounds)]
    rows: list[list[int]] = [[] for _ in partial]
    cols: list[list[int]] = [[] for _ in partial]
    for r in reversed(partial):
        n = mats[r]
        n_hat = [row[1:] for row in n[1:]]
        a_row = [n[0][0], *_mat_vec([list(col) for col in zip(*_inverse(n_hat), strict=True)], n[0][1:])]
        rows[r - h] = a_row
        cols[r - h] = [n[i][0] for i in range(t)]
        b = [[1] + [0] * (t - 1)] + [[0, *n_hat[i]] for i in range(t - 1)]
        mats[r] = []
        mats[r - 1] = _mat_mul(b, mats[r - 1])
    F = P.field
    eye = [[int(i == j) for j in range(t)] for i in range(t)]
    dense = [m if m else eye for m in mats]
    return Optimized(
        rcs,
        mats,
        rows,
        cols,
        F.from_ints([x for rc in rcs for x in rc]).reshape(n_rounds, t, 4),
        F.from_ints([x for m in dense for row in m for x in row]).reshape(n_rounds, t, t, 4),
        F.from_ints([x for row in rows for x in row]).reshape(P.r_p, t, 4),
        F.from_ints([x for col in cols for x in col]).reshape(P.r_p, t, 4),
    )


_cache: dict[int, PoseidonParams] = {}
_lock = threading.Lock()


def params(arity: int) -> PoseidonParams:
    """The parameters of an arity (memoized in-process; generated on first use)."""
    p = _cache.get(arity)
    if p is not None:
        return p
    t = arity + 1
    if t not in PARTIAL_ROUNDS:
        raise ValueError(f"Poseidon arity {arity}: supported arities are 1 to {max(PARTIAL_ROUNDS) - 1}")
    with _lock:
        p = _cache.get(arity)
        if p is None:
            r_p = PARTIAL_ROUNDS[t]
            count = (FULL_ROUNDS + r_p) * t
            rc = grain_constants(GRAIN_FIELD, GRAIN_SBOX, FIELD_BITS, t, FULL_ROUNDS, r_p, count, R)
            fr = curves.get("bls12_381").fr
            assert fr.p == R
            p = PoseidonParams(arity, t, FULL_ROUNDS, r_p, rc, cauchy_mds(t, R), (1 << arity) - 1, fr)
            _cache[arity] = p
    return p
