"""Filecoin's SDR (StackedDRG) parent graph, bit-exact with rust-fil-proofs.

Facts (read, not copied, from filecoin-project/rust-fil-proofs at 87348a749d80447d00c595af834a8ed73c09e4d9:
storage-proofs-core ``drgraph.rs`` and ``crypto/feistel.rs``, storage-proofs-porep
``stacked/vanilla/graph.rs`` and ``cache.rs``):

* every node has 14 parents: 6 base (DRG, "BucketGraph") parents in the same layer, then 8 expander
  parents in the previous layer;
* base parents of node v >= 2: a ChaCha8 RNG (rand_chacha ``ChaCha8Rng::from_seed``: key = the 28-byte
  DRG seed || v as u32 little-endian, block counter 0, stream 0; ``gen::<u64>()`` takes two consecutive
  keystream words, low first) draws 5 parents in the metagraph of v' = 5v nodes: per parent
  bucket = (r1 mod ceil(log2 v')) + 1, hi = min(v', 2^bucket), lo = max(2, hi >> 1),
  distance = lo + r2 mod (hi - lo + 1), parent = (v' - distance) // 5, replaced by v - 1 if it equals v.
  API 1.1/1.2: the slots are [v - 1, p1..p5]; API 1.0: [p1..p5, v - 1]. Nodes 0 and 1 have all six
  parents 0;
* expander parent i of node v: a 3-round Feistel permutation of [0, 8N) (cycle-walking), keys from the
  porep id, applied to 8v + i, divided by 8 (API 1.0 truncates the permuted value to u32 first). The
  Feistel domain is split into two halves of h bits, 4^h the smallest power of 4 >= 8N (at least 4);
  round function: BLAKE2b-512 of (right as u64 big-endian || key as u64 big-endian), the digest's first
  8 bytes as a big-endian u64, masked to h bits;
* the parent cache file is the (N, 14) table of u32 little-endian, nodes in order; rust-fil-proofs
  publishes SHA-256 digests of these files (``parent_cache.json``, mirrored in
  :data:`cuzk.filecoin.params.PARENT_CACHE_MANIFEST`), named by :func:`parent_cache_id`.

The kernels are numba (ChaCha and BLAKE2b written here; tests check them against published ChaCha20
vectors and hashlib's BLAKE2b), parallel over nodes.
"""

from __future__ import annotations

import hashlib
import math
import struct

import numba as nb
import numpy as np

from . import params as P

_M32 = np.uint64(0xFFFFFFFF)
_U0 = np.uint64(0)
_U1 = np.uint64(1)
_U8 = np.uint64(8)
_U16 = np.uint64(16)
_U24 = np.uint64(24)
_U32 = np.uint64(32)
_U40 = np.uint64(40)
_U48 = np.uint64(48)
_U56 = np.uint64(56)
_U63 = np.uint64(63)

_CHACHA_CONST = np.array([0x61707865, 0x3320646E, 0x79622D32, 0x6B206574], dtype=np.uint64)


# ---------------------------------------------------------------------------------------------- ChaCha


@nb.njit(cache=True, inline="always")
def _rotl32(x, n):
    return ((x << n) | (x >> (np.uint64(32) - n))) & np.uint64(0xFFFFFFFF)


@nb.njit(cache=True, inline="always")
def _qr(s, a, b, c, d):
    m = np.uint64(0xFFFFFFFF)
    s[a] = (s[a] + s[b]) & m
    s[d] = _rotl32(s[d] ^ s[a], np.uint64(16))
    s[c] = (s[c] + s[d]) & m
    s[b] = _rotl32(s[b] ^ s[c], np.uint64(12))
    s[a] = (s[a] + s[b]) & m
    s[d] = _rotl32(s[d] ^ s[a], np.uint64(8))
    s[c] = (s[c] + s[d]) & m
    s[b] = _rotl32(s[b] ^ s[c], np.uint64(7))


@nb.njit(cache=True)
def _chacha_block(inp, rounds, out, work):
    """One ChaCha block: inp (16,) uint64 words (each < 2^32) -> out (16,) keystream words."""
    for i in range(16):
        work[i] = inp[i]
    for _ in range(rounds // 2):
        _qr(work, 0, 4, 8, 12)
        _qr(work, 1, 5, 9, 13)
        _qr(work, 2, 6, 10, 14)
        _qr(work, 3, 7, 11, 15)
        _qr(work, 0, 5, 10, 15)
        _qr(work, 1, 6, 11, 12)
        _qr(work, 2, 7, 8, 13)
        _qr(work, 3, 4, 9, 14)
    for i in range(16):
        out[i] = (work[i] + inp[i]) & np.uint64(0xFFFFFFFF)


@nb.njit(cache=True)
def _chacha_stream(key_words, counter, stream, rounds, nblocks):
    """rand_chacha's keystream: key (8,) words, 64-bit block counter in words 12-13, 64-bit stream in
    words 14-15; nblocks blocks as (16 * nblocks,) uint64 words."""
    inp = np.empty(16, dtype=np.uint64)
    work = np.empty(16, dtype=np.uint64)
    out = np.empty(16 * nblocks, dtype=np.uint64)
    inp[0] = np.uint64(0x61707865)
    inp[1] = np.uint64(0x3320646E)
    inp[2] = np.uint64(0x79622D32)
    inp[3] = np.uint64(0x6B206574)
    for i in range(8):
        inp[4 + i] = key_words[i]
    for b in range(nblocks):
        c = np.uint64(counter) + np.uint64(b)
        inp[12] = c & np.uint64(0xFFFFFFFF)
        inp[13] = c >> np.uint64(32)
        inp[14] = np.uint64(stream) & np.uint64(0xFFFFFFFF)
        inp[15] = np.uint64(stream) >> np.uint64(32)
        _chacha_block(inp, rounds, out[16 * b : 16 * b + 16], work)
    return out


def chacha_keystream(key: bytes, nblocks: int, rounds: int = 8, counter: int = 0, stream: int = 0) -> np.ndarray:
    """rand_chacha-style ChaCha keystream words (uint32) for a 32-byte key (``ChaChaXRng::from_seed``)."""
    kw = np.array(struct.unpack("<8I", key), dtype=np.uint64)
    return _chacha_stream(kw, np.uint64(counter), np.uint64(stream), rounds, nblocks).astype(np.uint32)


def chacha_block_raw(state16, rounds: int = 20) -> np.ndarray:
    """One ChaCha block from a full 16-word input state (for RFC 8439 vectors with a 96-bit nonce)."""
    inp = np.asarray(state16, dtype=np.uint64)
    out = np.empty(16, dtype=np.uint64)
    _chacha_block(inp, rounds, out, np.empty(16, dtype=np.uint64))
    return out.astype(np.uint32)


# --------------------------------------------------------------------------------------------- BLAKE2b


@nb.njit(cache=True, inline="always")
def _rotr64(x, n):
    return (x >> np.uint64(n)) | (x << np.uint64(64 - n))


@nb.njit(cache=True, inline="always")
def _bswap64(x):
    r = np.uint64(0)
    for _ in range(8):
        r = (r << np.uint64(8)) | (x & np.uint64(0xFF))
        x = x >> np.uint64(8)
    return r


@nb.njit(cache=True, inline="always")
def _b2_g(a, b, c, d, x, y):
    a = a + b + x
    d = _rotr64(d ^ a, 32)
    c = c + d
    b = _rotr64(b ^ c, 24)
    a = a + b + y
    d = _rotr64(d ^ a, 16)
    c = c + d
    b = _rotr64(b ^ c, 63)
    return a, b, c, d


@nb.njit(cache=True, inline="always")
def _b2_round(v, s0, s1, s2, s3, s4, s5, s6, s7, s8, s9, s10, s11, s12, s13, s14, s15):
    """One BLAKE2b round on the 16-word state tuple; s0..s15 the message words in this round's sigma order."""
    v0, v1, v2, v3, v4, v5, v6, v7, v8, v9, v10, v11, v12, v13, v14, v15 = v
    v0, v4, v8, v12 = _b2_g(v0, v4, v8, v12, s0, s1)
    v1, v5, v9, v13 = _b2_g(v1, v5, v9, v13, s2, s3)
    v2, v6, v10, v14 = _b2_g(v2, v6, v10, v14, s4, s5)
    v3, v7, v11, v15 = _b2_g(v3, v7, v11, v15, s6, s7)
    v0, v5, v10, v15 = _b2_g(v0, v5, v10, v15, s8, s9)
    v1, v6, v11, v12 = _b2_g(v1, v6, v11, v12, s10, s11)
    v2, v7, v8, v13 = _b2_g(v2, v7, v8, v13, s12, s13)
    v3, v4, v9, v14 = _b2_g(v3, v4, v9, v14, s14, s15)
    return (v0, v1, v2, v3, v4, v5, v6, v7, v8, v9, v10, v11, v12, v13, v14, v15)


@nb.njit(cache=True)
def _blake2b_16_first8(m0, m1):
    """BLAKE2b-512 (no key) of a 16-byte message whose little-endian words are m0, m1; returns the
    digest's first 8 bytes as a little-endian u64 (h'[0]). Unrolled over the 12 rounds (sigma order
    written out), the state in registers."""
    z = np.uint64(0)
    w = (m0, m1, z, z, z, z, z, z, z, z, z, z, z, z, z, z)
    i0 = np.uint64(0x6A09E667F3BCC908)
    h0 = i0 ^ np.uint64(0x01010040)  # parameter block: digest length 64, no key, fanout 1, depth 1
    v = (
        h0,
        np.uint64(0xBB67AE8584CAA73B),
        np.uint64(0x3C6EF372FE94F82B),
        np.uint64(0xA54FF53A5F1D36F1),
        np.uint64(0x510E527FADE682D1),
        np.uint64(0x9B05688C2B3E6C1F),
        np.uint64(0x1F83D9ABFB41BD6B),
        np.uint64(0x5BE0CD19137E2179),
        i0,
        np.uint64(0xBB67AE8584CAA73B),
        np.uint64(0x3C6EF372FE94F82B),
        np.uint64(0xA54FF53A5F1D36F1),
        np.uint64(0x510E527FADE682D1) ^ np.uint64(16),  # t0 = 16 bytes
        np.uint64(0x9B05688C2B3E6C1F),
        np.uint64(0x1F83D9ABFB41BD6B) ^ np.uint64(0xFFFFFFFFFFFFFFFF),  # final block
        np.uint64(0x5BE0CD19137E2179),
    )
    v = _b2_round(v, w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7], w[8], w[9], w[10], w[11], w[12], w[13], w[14], w[15])
    v = _b2_round(v, w[14], w[10], w[4], w[8], w[9], w[15], w[13], w[6], w[1], w[12], w[0], w[2], w[11], w[7], w[5], w[3])
    v = _b2_round(v, w[11], w[8], w[12], w[0], w[5], w[2], w[15], w[13], w[10], w[14], w[3], w[6], w[7], w[1], w[9], w[4])
    v = _b2_round(v, w[7], w[9], w[3], w[1], w[13], w[12], w[11], w[14], w[2], w[6], w[5], w[10], w[4], w[0], w[15], w[8])
    v = _b2_round(v, w[9], w[0], w[5], w[7], w[2], w[4], w[10], w[15], w[14], w[1], w[11], w[12], w[6], w[8], w[3], w[13])
    v = _b2_round(v, w[2], w[12], w[6], w[10], w[0], w[11], w[8], w[3], w[4], w[13], w[7], w[5], w[15], w[14], w[1], w[9])
    v = _b2_round(v, w[12], w[5], w[1], w[15], w[14], w[13], w[4], w[10], w[0], w[7], w[6], w[3], w[9], w[2], w[8], w[11])
    v = _b2_round(v, w[13], w[11], w[7], w[14], w[12], w[1], w[3], w[9], w[5], w[0], w[15], w[4], w[8], w[6], w[2], w[10])
    v = _b2_round(v, w[6], w[15], w[14], w[9], w[11], w[3], w[0], w[8], w[12], w[2], w[13], w[7], w[1], w[4], w[10], w[5])
    v = _b2_round(v, w[10], w[2], w[8], w[4], w[7], w[6], w[1], w[5], w[15], w[11], w[9], w[14], w[3], w[12], w[13], w[0])
    v = _b2_round(v, w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7], w[8], w[9], w[10], w[11], w[12], w[13], w[14], w[15])
    v = _b2_round(v, w[14], w[10], w[4], w[8], w[9], w[15], w[13], w[6], w[1], w[12], w[0], w[2], w[11], w[7], w[5], w[3])
    return h0 ^ v[0] ^ v[8]


def blake2b_16_first8(data: bytes) -> bytes:
    """The first 8 bytes of BLAKE2b-512(data) for a 16-byte message (checked against hashlib)."""
    m0, m1 = struct.unpack("<2Q", data)
    h = _blake2b_16_first8(np.uint64(m0), np.uint64(m1))
    return struct.pack("<Q", int(h))


# --------------------------------------------------------------------------------------------- Feistel


def feistel_precompute(num_elements: int) -> tuple[int, int, int]:
    """(left_mask, right_mask, half_bits): halves of h bits, 4^h the least power of 4 >= num_elements
    (h >= 1)."""
    h, p = 1, 4
    while p < num_elements:
        p *= 4
        h += 1
    return ((1 << h) - 1) << h, (1 << h) - 1, h


@nb.njit(cache=True, inline="always")
def _feistel_encode(index, kbe, left_mask, right_mask, half_bits):
    left = (index & left_mask) >> half_bits
    right = index & right_mask
    for r in range(3):
        f = _bswap64(_blake2b_16_first8(_bswap64(right), kbe[r])) & right_mask
        left, right = right, left ^ f
    return (left << half_bits) | right


@nb.njit(cache=True, inline="always")
def _feistel_permute(num, index, kbe, left_mask, right_mask, half_bits):
    u = _feistel_encode(index, kbe, left_mask, right_mask, half_bits)
    while u >= num:
        u = _feistel_encode(u, kbe, left_mask, right_mask, half_bits)
    return u


# ----------------------------------------------------------------------------------------- the kernels


@nb.njit(cache=True, inline="always")
def _drg_node(seed_words, node, legacy, out_row, inp, work, ks):
    """The 6 base parents of one node into out_row[0:6]."""
    if node < 2:
        for i in range(6):
            out_row[i] = 0
        return
    m = np.uint64(0xFFFFFFFF)
    inp[0] = np.uint64(0x61707865)
    inp[1] = np.uint64(0x3320646E)
    inp[2] = np.uint64(0x79622D32)
    inp[3] = np.uint64(0x6B206574)
    for i in range(7):
        inp[4 + i] = seed_words[i]
    inp[11] = np.uint64(node) & m
    inp[13] = np.uint64(0)
    inp[14] = np.uint64(0)
    inp[15] = np.uint64(0)
    inp[12] = np.uint64(0)
    _chacha_block(inp, 8, ks[0:16], work)
    inp[12] = np.uint64(1)
    _chacha_block(inp, 8, ks[16:32], work)
    meta = np.uint64(node) * np.uint64(5)
    n_buckets = np.uint64(math.ceil(math.log2(np.float64(meta))))
    first = 0 if legacy else 1
    w = 0
    for k in range(5):
        r1 = ks[w] | (ks[w + 1] << np.uint64(32))
        r2 = ks[w + 2] | (ks[w + 3] << np.uint64(32))
        w += 4
        bucket = r1 % n_buckets + np.uint64(1)
        hi = np.uint64(1) << bucket
        hi = min(hi, meta)
        lo = hi >> np.uint64(1)
        lo = max(lo, np.uint64(2))
        dist = lo + r2 % (hi - lo + np.uint64(1))
        p = (meta - dist) // np.uint64(5)
        if p == np.uint64(node):
            p = np.uint64(node - 1)
        out_row[first + k] = np.uint32(p)
    if legacy:
        out_row[5] = np.uint32(node - 1)
    else:
        out_row[0] = np.uint32(node - 1)


@nb.njit(cache=True, inline="always")
def _exp_node(node, n_nodes, kbe, lm, rm, hb, legacy, out_row):
    num = np.uint64(n_nodes) * np.uint64(8)
    for i in range(8):
        a = np.uint64(node) * np.uint64(8) + np.uint64(i)
        t = _feistel_permute(num, a, kbe, lm, rm, hb)
        if legacy:
            t = t & np.uint64(0xFFFFFFFF)
        out_row[6 + i] = np.uint32(t // np.uint64(8))


@nb.njit(parallel=True, cache=True)
def _k_parents(start, count, n_nodes, seed_words, kbe, lm, rm, hb, legacy, out):
    nchunk = 64
    per = (count + nchunk - 1) // nchunk
    for c in nb.prange(nchunk):
        inp = np.empty(16, dtype=np.uint64)
        work = np.empty(16, dtype=np.uint64)
        ks = np.empty(32, dtype=np.uint64)
        lo = c * per
        hi = min(count, lo + per)
        for j in range(lo, hi):
            node = start + j
            _drg_node(seed_words, node, legacy, out[j], inp, work, ks)
            _exp_node(node, n_nodes, kbe, lm, rm, hb, legacy, out[j])


# ------------------------------------------------------------------------------------------------- API


class StackedGraph:
    """The SDR graph of a sector of ``nodes`` nodes for a porep id (32 bytes) and API version
    (``params.API_V1_0_0`` / ``API_V1_1_0`` / ``API_V1_2_0``)."""

    def __init__(self, nodes: int, porep_id: bytes, api_version: str = P.API_V1_1_0):
        if nodes < 2 or nodes > 0xFFFFFFFF:
            raise ValueError("nodes must be in [2, 2^32)")
        if nodes * 5 > 1 << 54:
            raise ValueError("too many nodes")
        if api_version not in (P.API_V1_0_0, P.API_V1_1_0, P.API_V1_2_0):
            raise ValueError(f"unknown api version {api_version!r}")
        self.nodes = int(nodes)
        self.porep_id = bytes(porep_id)
        self.api_version = api_version
        self.legacy = api_version == P.API_V1_0_0
        self.seed = P.drg_seed(self.porep_id)
        self.feistel_keys = P.feistel_keys(self.porep_id)
        self._seed_words = np.array(struct.unpack("<7I", self.seed), dtype=np.uint64)
        # the round key enters BLAKE2b as 8 big-endian bytes: as a little-endian message word, byte-swapped
        self._kbe = np.array([int.from_bytes(k.to_bytes(8, "big"), "little") for k in self.feistel_keys], dtype=np.uint64)
        self._lm, self._rm, self._hb = feistel_precompute(8 * self.nodes)

    @classmethod
    def for_proof(cls, proof_id: int) -> StackedGraph:
        """The graph of a registered seal proof id (e.g. 5 = StackedDrg2KiBV1_1)."""
        return cls(P.sector_size_of(proof_id) // P.NODE_SIZE, P.porep_id(proof_id), P.api_version_of(proof_id))

    def parents_range(self, start: int, count: int) -> np.ndarray:
        """Parents of nodes start .. start+count-1: (count, 14) uint32 (6 base, then 8 expander)."""
        if start < 0 or count < 0 or start + count > self.nodes:
            raise ValueError("node range out of the graph")
        out = np.empty((count, P.DEGREE), dtype=np.uint32)
        if count:
            _k_parents(
                start,
                count,
                self.nodes,
                self._seed_words,
                self._kbe,
                np.uint64(self._lm),
                np.uint64(self._rm),
                np.uint64(self._hb),
                self.legacy,
                out,
            )
        return out

    def parents(self, node: int) -> list[int]:
        """The 14 parents of one node."""
        return [int(x) for x in self.parents_range(node, 1)[0]]

    def base_parents(self, node: int) -> list[int]:
        return self.parents(node)[: P.DRG_DEGREE]

    def expanded_parents(self, node: int) -> list[int]:
        return self.parents(node)[P.DRG_DEGREE :]

    def parents_all(self) -> np.ndarray:
        """The whole parent cache: (nodes, 14) uint32."""
        return self.parents_range(0, self.nodes)

    def identifier(self) -> str:
        """rust-fil-proofs' ``StackedGraph::identifier`` for the PoseidonHasher graph of a sector."""
        return (
            "stacked_graph::StackedGraph{expansion_degree: 8 base_graph: "
            f"drgraph::BucketGraph{{size: {self.nodes}; degree: 6; hasher: poseidon_hasher}} }}"
        )

    def parent_cache_id(self) -> str:
        """The parent cache file's stem (rust-fil-proofs ``cache.rs`` ``cache_path``): SHA-256 of the hasher
        name, the graph identifier, the 4 Feistel keys (u64 LE) and the entry count (u32 LE)."""
        h = hashlib.sha256()
        h.update(b"poseidon_hasher")
        h.update(self.identifier().encode())
        for k in self.feistel_keys:
            h.update(struct.pack("<Q", k))
        h.update(struct.pack("<I", self.nodes))
        return f"v{P.PARAMETER_CACHE_VERSION}-sdr-parent-{h.hexdigest()}"

    def published_parent_cache_digest(self) -> str | None:
        """The digest rust-fil-proofs publishes for this graph's parent cache, if any."""
        e = P.PARENT_CACHE_MANIFEST.get(self.parent_cache_id())
        return None if e is None else e[1]


def parent_cache_bytes(parents: np.ndarray) -> bytes:
    """The parent cache file's bytes: (N, 14) parents as u32 little-endian, row by row."""
    return np.ascontiguousarray(parents, dtype="<u4").tobytes()


def parent_cache_digest(parents: np.ndarray) -> str:
    """SHA-256 (hex) of the parent cache file, as rust-fil-proofs computes it for ``parent_cache.json``."""
    return hashlib.sha256(parent_cache_bytes(parents)).hexdigest()


def parents_reference(graph: StackedGraph, node: int) -> list[int]:
    """Slow pure-Python parents of one node (hashlib BLAKE2b, Python ChaCha) for cross-checks."""
    return _ref_drg(graph, node) + _ref_exp(graph, node)


def _ref_chacha_words(key: bytes, nblocks: int, rounds: int = 8) -> list[int]:
    M = 0xFFFFFFFF

    def rotl(x, n):
        return ((x << n) | (x >> (32 - n))) & M

    kw = list(struct.unpack("<8I", key))
    words = []
    for b in range(nblocks):
        s = [0x61707865, 0x3320646E, 0x79622D32, 0x6B206574, *kw, b & M, b >> 32, 0, 0]
        x = list(s)
        for _ in range(rounds // 2):
            for a, bb, c, d in (
                (0, 4, 8, 12),
                (1, 5, 9, 13),
                (2, 6, 10, 14),
                (3, 7, 11, 15),
                (0, 5, 10, 15),
                (1, 6, 11, 12),
                (2, 7, 8, 13),
                (3, 4, 9, 14),
            ):
                x[a] = (x[a] + x[bb]) & M
                x[d] = rotl(x[d] ^ x[a], 16)
                x[c] = (x[c] + x[d]) & M
                x[bb] = rotl(x[bb] ^ x[c], 12)
                x[a] = (x[a] + x[bb]) & M
                x[d] = rotl(x[d] ^ x[a], 8)
                x[c] = (x[c] + x[d]) & M
                x[bb] = rotl(x[bb] ^ x[c], 7)
        words += [(x[i] + s[i]) & M for i in range(16)]
    return words


def _ref_drg(g: StackedGraph, node: int) -> list[int]:
    if node < 2:
        return [0] * 6
    w = _ref_chacha_words(g.seed + struct.pack("<I", node), 2)
    u64 = [w[2 * i] | (w[2 * i + 1] << 32) for i in range(10)]
    meta = node * 5
    nb_ = math.ceil(math.log2(meta))
    ps = []
    for k in range(5):
        bucket = u64[2 * k] % nb_ + 1
        hi = min(meta, 1 << bucket)
        lo = max(2, hi >> 1)
        p = (meta - (lo + u64[2 * k + 1] % (hi - lo + 1))) // 5
        ps.append(node - 1 if p == node else p)
    return ps + [node - 1] if g.legacy else [node - 1] + ps


def _ref_exp(g: StackedGraph, node: int) -> list[int]:
    lm, rm, hb = g._lm, g._rm, g._hb
    num = 8 * g.nodes

    def enc(x):
        left, right = (x & lm) >> hb, x & rm
        for k in g.feistel_keys[:3]:
            d = hashlib.blake2b(right.to_bytes(8, "big") + k.to_bytes(8, "big")).digest()
            left, right = right, left ^ (int.from_bytes(d[:8], "big") & rm)
        return (left << hb) | right

    out = []
    for i in range(8):
        u = enc(8 * node + i)
        while u >= num:
            u = enc(u)
        if g.legacy:
            u &= 0xFFFFFFFF
        out.append(u // 8)
    return out
