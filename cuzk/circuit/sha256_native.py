"""Native SHA-256 helpers: Filecoin's SHA-256 truncated to 254 bits (hashlib), and a numpy SHA-256 over
batches of equal-length messages (uint32 arithmetic vectorized over the batch) for checks and for
Merkle trees of many nodes at once.

Filecoin (rust-fil-proofs ``Sha256Function::hash2``, ``Sha256Domain``): a node is 32 bytes, the
little-endian encoding of a field element below 2^254; hash2(a, b) = SHA-256(a || b) with the last
byte's top two bits cleared (digest[31] &= 0x3f); read back little-endian.
"""

from __future__ import annotations

import hashlib

import numpy as np

# SHA-256's initial state and round constants (FIPS 180-4): for this module, the gadget and cuzk.filecoin.sdr
IV = (0x6A09E667, 0xBB67AE85, 0x3C6EF372, 0xA54FF53A, 0x510E527F, 0x9B05688C, 0x1F83D9AB, 0x5BE0CD19)
K = (
    0x428A2F98, 0x71374491, 0xB5C0FBCF, 0xE9B5DBA5, 0x3956C25B, 0x59F111F1, 0x923F82A4, 0xAB1C5ED5,
    0xD807AA98, 0x12835B01, 0x243185BE, 0x550C7DC3, 0x72BE5D74, 0x80DEB1FE, 0x9BDC06A7, 0xC19BF174,
    0xE49B69C1, 0xEFBE4786, 0x0FC19DC6, 0x240CA1CC, 0x2DE92C6F, 0x4A7484AA, 0x5CB0A9DC, 0x76F988DA,
    0x983E5152, 0xA831C66D, 0xB00327C8, 0xBF597FC7, 0xC6E00BF3, 0xD5A79147, 0x06CA6351, 0x14292967,
    0x27B70A85, 0x2E1B2138, 0x4D2C6DFC, 0x53380D13, 0x650A7354, 0x766A0ABB, 0x81C2C92E, 0x92722C85,
    0xA2BFE8A1, 0xA81A664B, 0xC24B8B70, 0xC76C51A3, 0xD192E819, 0xD6990624, 0xF40E3585, 0x106AA070,
    0x19A4C116, 0x1E376C08, 0x2748774C, 0x34B0BCB5, 0x391C0CB3, 0x4ED8AA4A, 0x5B9CCA4F, 0x682E6FF3,
    0x748F82EE, 0x78A5636F, 0x84C87814, 0x8CC70208, 0x90BEFFFA, 0xA4506CEB, 0xBEF9A3F7, 0xC67178F2,
)  # fmt: skip


MASK254 = (1 << 254) - 1


def sha256_254(data: bytes) -> bytes:
    """SHA-256 with the top two bits of the last byte cleared."""
    d = bytearray(hashlib.sha256(data).digest())
    d[31] &= 0x3F
    return bytes(d)


def sha256_254_hash2(left: int, right: int) -> int:
    """Filecoin's node hash of two field elements (integers below 2^254), as an integer below 2^254."""
    d = sha256_254(int(left).to_bytes(32, "little") + int(right).to_bytes(32, "little"))
    return int.from_bytes(d, "little")


def _rotr(x: np.ndarray, n: int) -> np.ndarray:
    return (x >> np.uint32(n)) | (x << np.uint32(32 - n))


def compress(state: np.ndarray, block: np.ndarray) -> np.ndarray:
    """One SHA-256 compression of a batch: state (*B, 8) uint32, block (*B, 16) uint32 words -> (*B, 8)."""
    w = [block[..., i].astype(np.uint32) for i in range(16)]
    with np.errstate(over="ignore"):
        for t in range(16, 64):
            x, y = w[t - 15], w[t - 2]
            s0 = _rotr(x, 7) ^ _rotr(x, 18) ^ (x >> np.uint32(3))
            s1 = _rotr(y, 17) ^ _rotr(y, 19) ^ (y >> np.uint32(10))
            w.append(w[t - 16] + s0 + w[t - 7] + s1)
        a, b, c, d, e, f, g, h = (state[..., i].astype(np.uint32) for i in range(8))
        for t in range(64):
            S1 = _rotr(e, 6) ^ _rotr(e, 11) ^ _rotr(e, 25)
            chv = (e & f) ^ (~e & g)
            t1 = h + S1 + chv + np.uint32(K[t]) + w[t]
            S0 = _rotr(a, 2) ^ _rotr(a, 13) ^ _rotr(a, 22)
            mj = (a & b) ^ (a & c) ^ (b & c)
            h, g, f, e, d, c, b, a = g, f, e, d + t1, c, b, a, t1 + S0 + mj
        return state.astype(np.uint32) + np.stack([a, b, c, d, e, f, g, h], axis=-1)


def sha256_batch(messages: np.ndarray) -> np.ndarray:
    """SHA-256 of equal-length byte messages: (*B, L) uint8 -> digests (*B, 32) uint8."""
    m = np.asarray(messages, dtype=np.uint8)
    shape, n = m.shape[:-1], m.shape[-1]
    pad = bytearray([0x80]) + bytes((55 - n) % 64) + (8 * n).to_bytes(8, "big")
    full = np.concatenate([m, np.broadcast_to(np.frombuffer(bytes(pad), dtype=np.uint8), (*shape, len(pad)))], axis=-1)
    words = full.reshape(*shape, -1, 16, 4).astype(np.uint32)
    words = (words[..., 0] << 24) | (words[..., 1] << 16) | (words[..., 2] << 8) | words[..., 3]
    state = np.broadcast_to(np.array(IV, dtype=np.uint32), (*shape, 8))
    for i in range(words.shape[-2]):
        state = compress(state, words[..., i, :])
    return np.ascontiguousarray(state.astype(">u4")).view(np.uint8).reshape(*shape, 32)


def hash2_batch(left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """Batch :func:`sha256_254_hash2` over nodes as 32 little-endian bytes: left, right (*B, 32) uint8
    (or (*B, 4) uint64 little-endian limbs) -> (*B, 32) uint8."""

    def as_bytes(x: np.ndarray) -> np.ndarray:
        x = np.asarray(x)
        if x.dtype == np.uint64:
            return np.ascontiguousarray(x.astype("<u8")).view(np.uint8).reshape(*x.shape[:-1], 32)
        return x.astype(np.uint8)

    d = sha256_batch(np.concatenate([as_bytes(left), as_bytes(right)], axis=-1))
    d[..., 31] &= 0x3F
    return d


def bytes_to_ints(nodes: np.ndarray) -> list[int]:
    """Nodes (*B, 32) uint8 little-endian -> Python ints (flattened)."""
    return [int.from_bytes(r.tobytes(), "little") for r in np.asarray(nodes, dtype=np.uint8).reshape(-1, 32)]
