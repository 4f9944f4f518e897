"""SDR labeling: the labels of every layer of a sector, bit-exact with rust-fil-proofs.

Facts (read, not copied, from filecoin-project/rust-fil-proofs at 87348a749d80447d00c595af834a8ed73c09e4d9:
storage-proofs-porep ``stacked/vanilla/create_label/single.rs`` (``create_label``, ``create_label_exp``),
``stacked/vanilla/graph.rs`` (``copy_parents_data_inner``, ``copy_parents_data_inner_exp``) and
``sha2raw/src/sha256.rs``):

* label(layer, v) = SHA-256 of a message of 32-byte chunks, the digest's last byte masked with 0x3f
  (the top two bits cleared, so the label read little-endian is below 2^254):
  chunk 0 = replica id (32 bytes); chunk 1 = layer (u32 big-endian, layers counted from 1) || v (u64
  big-endian) || 20 zero bytes; then, for v > 0, 37 parent labels: parent slot k mod 6 for k = 0..36 in
  layer 1 (the 6 base parents, 6 times, then the first once more), and slot k mod 14 in layers >= 2 (the
  14 parents twice, then the first 9); base slots (0-5) read the current layer, expander slots (6-13)
  the previous layer. Node 0 hashes only chunks 0 and 1. The padding is standard SHA-256 (1248 bytes =
  20 compression blocks for v > 0, 64 bytes = 2 blocks for v = 0);
* labels are stored as 32 bytes per node, layer by layer.

Labels are kept here as (N, 8) uint32 arrays of the digest's big-endian words (what a SHA-256 message
word is), so a parent label enters the hash without conversion; :func:`labels_to_bytes` gives the
32-byte layout rust-fil-proofs writes. The per-node loop is sequential within a layer (each label needs
the previous ones): numba, with the SHA-256 compression written here (tested against hashlib).
"""

from __future__ import annotations

import hashlib
import struct

import numba as nb
import numpy as np

from ..circuit.sha256_native import IV, K
from . import params as P

_K = np.array(K, dtype=np.uint64)
_IV = np.array(IV, dtype=np.uint64)


@nb.njit(cache=True, inline="always")
def _rotr(x, n):
    return ((x >> np.uint64(n)) | (x << np.uint64(32 - n))) & np.uint64(0xFFFFFFFF)


@nb.njit(cache=True)
def _compress(st, w, k):
    """One SHA-256 compression: st (8,) uint64 state words (< 2^32) updated in place; w (64,) uint64
    with the block's 16 big-endian words in w[0:16] (w[16:64] overwritten by the schedule)."""
    m = np.uint64(0xFFFFFFFF)
    for t in range(16, 64):
        x = w[t - 15]
        y = w[t - 2]
        s0 = _rotr(x, 7) ^ _rotr(x, 18) ^ (x >> np.uint64(3))
        s1 = _rotr(y, 17) ^ _rotr(y, 19) ^ (y >> np.uint64(10))
        w[t] = (w[t - 16] + s0 + w[t - 7] + s1) & m
    a = st[0]
    b = st[1]
    c = st[2]
    d = st[3]
    e = st[4]
    f = st[5]
    g = st[6]
    h = st[7]
    for t in range(64):
        s1 = _rotr(e, 6) ^ _rotr(e, 11) ^ _rotr(e, 25)
        ch = (e & f) ^ ((~e) & g)
        t1 = (h + s1 + ch + k[t] + w[t]) & m
        s0 = _rotr(a, 2) ^ _rotr(a, 13) ^ _rotr(a, 22)
        mj = (a & b) ^ (a & c) ^ (b & c)
        h = g
        g = f
        f = e
        e = (d + t1) & m
        d = c
        c = b
        b = a
        a = (t1 + s0 + mj) & m
    st[0] = (st[0] + a) & m
    st[1] = (st[1] + b) & m
    st[2] = (st[2] + c) & m
    st[3] = (st[3] + d) & m
    st[4] = (st[4] + e) & m
    st[5] = (st[5] + f) & m
    st[6] = (st[6] + g) & m
    st[7] = (st[7] + h) & m


@nb.njit(cache=True)
def _k_layer(replica, layer, parents, cur, prev, use_exp, k, iv):
    """Labels of one layer into cur (N, 8) uint32, node by node. replica (8,) uint64 big-endian words;
    parents (N, 14) uint32; prev (N, 8) uint32 (the previous layer; read only when use_exp)."""
    n = cur.shape[0]
    st = np.empty(8, dtype=np.uint64)
    w = np.empty(64, dtype=np.uint64)
    deg = 14 if use_exp else 6
    for node in range(n):
        for i in range(8):
            st[i] = iv[i]
            w[i] = replica[i]
        w[8] = np.uint64(layer)
        w[9] = np.uint64(node) >> np.uint64(32)
        w[10] = np.uint64(node) & np.uint64(0xFFFFFFFF)
        for i in range(11, 16):
            w[i] = np.uint64(0)
        _compress(st, w, k)
        if node == 0:
            w[0] = np.uint64(0x80000000)
            for i in range(1, 15):
                w[i] = np.uint64(0)
            w[15] = np.uint64(512)
            _compress(st, w, k)
        else:
            # 37 parent chunks: 18 full blocks of two, then the 37th with the padding
            for blk in range(19):
                for half in range(2):
                    kk = 2 * blk + half
                    if kk == 37:
                        w[8] = np.uint64(0x80000000)
                        for i in range(9, 15):
                            w[i] = np.uint64(0)
                        w[15] = np.uint64(1248 * 8)
                        break
                    slot = kk % deg
                    p = parents[node, slot]
                    if slot < 6:
                        for i in range(8):
                            w[8 * half + i] = np.uint64(cur[p, i])
                    else:
                        for i in range(8):
                            w[8 * half + i] = np.uint64(prev[p, i])
                _compress(st, w, k)
        for i in range(8):
            cur[node, i] = np.uint32(st[i])
        cur[node, 7] = np.uint32(st[7] & np.uint64(0xFFFFFF3F))


def _replica_words(replica_id: bytes) -> np.ndarray:
    if len(replica_id) != 32:
        raise ValueError("replica_id must be 32 bytes")
    return np.array(struct.unpack(">8I", replica_id), dtype=np.uint64)


def label_layer(replica_id: bytes, layer: int, parents: np.ndarray, prev: np.ndarray | None = None) -> np.ndarray:
    """The labels of one layer (layer >= 1) as (N, 8) uint32 big-endian digest words. ``parents`` is the
    (N, 14) parent cache (:meth:`cuzk.filecoin.graph.StackedGraph.parents_all`); ``prev`` the previous
    layer's words (required for layer >= 2)."""
    parents = np.ascontiguousarray(parents, dtype=np.uint32)
    n = parents.shape[0]
    if parents.ndim != 2 or parents.shape[1] != P.DEGREE:
        raise ValueError("parents must be (N, 14)")
    if layer < 1:
        raise ValueError("layers are counted from 1")
    use_exp = layer > 1
    if use_exp:
        if prev is None or prev.shape != (n, 8):
            raise ValueError("layer >= 2 needs the previous layer's (N, 8) words")
        prev = np.ascontiguousarray(prev, dtype=np.uint32)
    else:
        prev = np.zeros((1, 8), dtype=np.uint32)
    cur = np.empty((n, 8), dtype=np.uint32)
    _k_layer(_replica_words(replica_id), int(layer), parents, cur, prev, use_exp, _K, _IV)
    return cur


def create_labels(replica_id: bytes, parents: np.ndarray, layers: int) -> list[np.ndarray]:
    """The labels of layers 1..layers, each (N, 8) uint32 big-endian words (see :func:`labels_to_bytes`)."""
    out: list[np.ndarray] = []
    prev = None
    for layer in range(1, layers + 1):
        prev = label_layer(replica_id, layer, parents, prev)
        out.append(prev)
    return out


def labels_to_bytes(words: np.ndarray) -> np.ndarray:
    """(N, 8) big-endian words -> (N, 32) uint8: the 32-byte labels as rust-fil-proofs stores them."""
    return np.ascontiguousarray(words, dtype=np.uint32).astype(">u4").view(np.uint8).reshape(words.shape[0], 32)


def labels_from_bytes(data: np.ndarray) -> np.ndarray:
    """(N, 32) uint8 labels -> (N, 8) uint32 big-endian words."""
    a = np.ascontiguousarray(data, dtype=np.uint8).reshape(-1, 32)
    return a.view(">u4").astype(np.uint32)


def sha256_compress(state, block: bytes) -> list[int]:
    """One SHA-256 compression (for tests): 8 state words, a 64-byte block -> 8 words."""
    st = np.array(state, dtype=np.uint64)
    w = np.zeros(64, dtype=np.uint64)
    w[:16] = struct.unpack(">16I", block)
    _compress(st, w, _K)
    return [int(x) for x in st]


def label_reference(
    replica_id: bytes, layer: int, node: int, parents_row, cur_bytes: np.ndarray, prev_bytes: np.ndarray | None
) -> bytes:
    """One label with hashlib (slow, for cross-checks): cur_bytes / prev_bytes (N, 32) uint8 layers."""
    msg = bytearray(replica_id) + struct.pack(">IQ", layer, node) + bytes(20)
    if node > 0:
        deg = P.DEGREE if layer > 1 else P.DRG_DEGREE
        for k in range(37):
            slot = k % deg
            src = cur_bytes if slot < P.DRG_DEGREE else prev_bytes
            msg += bytes(src[int(parents_row[slot])])
    d = bytearray(hashlib.sha256(bytes(msg)).digest())
    d[31] &= 0x3F
    return bytes(d)


def replica_id(prover_id: bytes, sector_id: int, ticket: bytes, comm_d: bytes, porep_id: bytes) -> bytes:
    """The sector's replica id (rust-fil-proofs storage-proofs-porep ``stacked/vanilla/params.rs``
    ``generate_replica_id``): SHA-256(prover_id || sector_id as u64 big-endian || ticket || comm_d ||
    porep_id) with the last byte's top two bits cleared (fr32 ``bytes_into_fr_repr_safe``). No published
    vector pins this one down (rust-fil-proofs' tests only use it inside full seals)."""
    for name, b in (("prover_id", prover_id), ("ticket", ticket), ("comm_d", comm_d), ("porep_id", porep_id)):
        if len(b) != 32:
            raise ValueError(f"{name} must be 32 bytes")
    d = bytearray(hashlib.sha256(prover_id + struct.pack(">Q", sector_id) + ticket + comm_d + porep_id).digest())
    d[31] &= 0x3F
    return bytes(d)
