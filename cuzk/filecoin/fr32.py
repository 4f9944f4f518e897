"""Fr32 padding: every 127 bytes of piece data become 128 bytes, four 32-byte nodes of 254 data bits each.

The 127 input bytes are read as one little-endian bit stream of 1016 bits (bit i is bit ``i % 8`` of byte
``i // 8``). Node q (q = 0..3) holds stream bits ``254*q .. 254*q+253`` as bits 0..253 of a 32-byte
little-endian integer, and its two top bits (bits 6 and 7 of its last byte) are zero, so every node is
below 2^254 and therefore a BLS12-381 scalar. This is the layout of rust-fil-proofs' ``fr32`` crate and of
go-commp-utils' / go-fil-commp-hashhash's padders.

Byte arithmetic: node q starts at stream bit 254*q, i.e. at byte s = 254*q // 8, bit r = 254*q % 8:
(s, r) = (0, 0), (31, 6), (63, 4), (95, 2); so node q's byte i is ``(in[s+i] >> r) | (in[s+i+1] << (8-r))``,
its last byte masked to 6 bits. Everything below works on a
whole ``(N, 127)`` / ``(N, 128)`` array at once.
"""

from __future__ import annotations

import numpy as np

from . import FilecoinError

UNPADDED_CHUNK = 127
PADDED_CHUNK = 128
# (first input byte, bit shift) of node q = 0..3 within a 127-byte block
_NODE_START = ((0, 0), (31, 6), (63, 4), (95, 2))


def padded_size(unpadded: int) -> int:
    """Padded bytes of ``unpadded`` bytes (a multiple of 127)."""
    unpadded = int(unpadded)
    if unpadded < 0 or unpadded % UNPADDED_CHUNK:
        raise FilecoinError(f"unpadded size {unpadded}: not a non-negative multiple of 127 bytes")
    return unpadded // UNPADDED_CHUNK * PADDED_CHUNK


def unpadded_size(padded: int) -> int:
    """Unpadded bytes held by ``padded`` bytes (a multiple of 128)."""
    padded = int(padded)
    if padded < 0 or padded % PADDED_CHUNK:
        raise FilecoinError(f"padded size {padded}: not a non-negative multiple of 128 bytes")
    return padded // PADDED_CHUNK * UNPADDED_CHUNK


def _as_u8(data, name: str) -> np.ndarray:
    if isinstance(data, np.ndarray):
        if data.dtype != np.uint8:
            raise FilecoinError(f"{name}: expected uint8 bytes, got dtype {data.dtype}")
        return data.reshape(-1)
    return np.frombuffer(memoryview(data).cast("B"), dtype=np.uint8)


def pad_blocks(blocks: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """Fr32-pad a ``(N, 127)`` uint8 array into ``(N, 128)`` (``out`` if given)."""
    a = blocks
    n = a.shape[0]
    if out is None:
        out = np.empty((n, PADDED_CHUNK), dtype=np.uint8)
    out[:, 0:32] = a[:, 0:32]
    for q in (1, 2, 3):
        s, r = _NODE_START[q]
        o = out[:, 32 * q : 32 * q + 32]
        if q < 3:
            np.right_shift(a[:, s : s + 32], r, out=o)
            o |= np.left_shift(a[:, s + 1 : s + 33], 8 - r)
        else:  # the last node reads the final 32 input bytes; its 32nd byte has no upper neighbour
            np.right_shift(a[:, s : s + 32], r, out=o)
            o[:, :31] |= np.left_shift(a[:, s + 1 : s + 32], 8 - r)
    out[:, 31::32] &= 0x3F
    return out


def unpad_blocks(blocks: np.ndarray, out: np.ndarray | None = None, strict: bool = True) -> np.ndarray:
    """Inverse of :func:`pad_blocks`: ``(N, 128)`` -> ``(N, 127)``. ``strict``: refuse a node whose two
    top bits are set (not fr32 output) instead of dropping them."""
    p = blocks
    n = p.shape[0]
    top = p[:, 31::32]
    if strict and n and (top & 0xC0).any():
        bad = int(np.argwhere(top & 0xC0)[0][0])
        raise FilecoinError(f"not fr32-padded data: the node at byte {bad * 128} has its top two bits set")
    if out is None:
        out = np.empty((n, UNPADDED_CHUNK), dtype=np.uint8)
    c = p.copy() if not strict else p
    if not strict:
        c[:, 31::32] &= 0x3F
    out[:, 0:31] = c[:, 0:31]
    out[:, 31:] = 0
    out[:, 31] = c[:, 31]
    for q in (1, 2, 3):
        s, r = _NODE_START[q]
        node = c[:, 32 * q : 32 * q + 32]
        # low part of node byte i lands in out[s+i] (above bit r), high part in out[s+i+1]
        out[:, s : s + 32] |= np.left_shift(node, r)
        hi = np.right_shift(node, 8 - r)
        end = min(s + 33, UNPADDED_CHUNK)
        out[:, s + 1 : end] |= hi[:, : end - s - 1]
    return out


def fr32_pad(data) -> bytes:
    """Fr32-pad bytes whose length is a multiple of 127 (bytes, bytearray, memoryview or uint8 array)."""
    a = _as_u8(data, "fr32_pad")
    if a.size % UNPADDED_CHUNK:
        raise FilecoinError(f"fr32_pad: {a.size} bytes is not a multiple of 127")
    return pad_blocks(a.reshape(-1, UNPADDED_CHUNK)).tobytes()


def fr32_unpad(data, strict: bool = True) -> bytes:
    """Undo :func:`fr32_pad` on bytes whose length is a multiple of 128."""
    a = _as_u8(data, "fr32_unpad")
    if a.size % PADDED_CHUNK:
        raise FilecoinError(f"fr32_unpad: {a.size} bytes is not a multiple of 128")
    return unpad_blocks(a.reshape(-1, PADDED_CHUNK), strict=strict).tobytes()


__all__ = [
    "PADDED_CHUNK",
    "UNPADDED_CHUNK",
    "fr32_pad",
    "fr32_unpad",
    "pad_blocks",
    "padded_size",
    "unpad_blocks",
    "unpadded_size",
]
