"""Filecoin data commitments: zero-subtree roots, the piece commitment CommP and the unsealed-sector
commitment CommD, bit-exact with rust-fil-proofs (``filecoin-proofs/src/pieces.rs``) and go-commp-utils.

The tree: leaves are the 32-byte nodes of the fr32-padded data (:mod:`cuzk.filecoin.fr32`); an inner node
is ``hash2(left, right) = SHA-256(left || right)`` with the top two bits of its last byte cleared
(SHA-256 truncated to 254 bits, :func:`cuzk.circuit.sha256_native.sha256_254`). A piece is zero-padded
to a power-of-two padded size (at least 128 bytes), so its tree is complete; the roots of all-zero
subtrees (:func:`zero_comm`) stand in for the zero padding, which therefore costs no hashing.

Hashing backend. Each ``hash2`` is two SHA-256 compressions (the 64 bytes of the two children and the
constant padding block of a 64-byte message). Calling ``hashlib`` once per node costs ~0.5 us of Python
per hash; instead a numba kernel calls OpenSSL's ``SHA256_Transform`` (libcrypto, the library under
``hashlib``, which uses the CPU's SHA extensions) directly, over a whole tree level in parallel, and
fuses the fr32 padding with the leaf level. Where libcrypto or numba are missing, a pure ``hashlib``
loop gives the same results (slowly); ``CUZK_COMMP_BACKEND=hashlib`` forces it.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Sequence

import numpy as np

from . import FilecoinError
from .fr32 import PADDED_CHUNK, UNPADDED_CHUNK, pad_blocks

NODE = 32
MIN_PIECE = 128  # smallest padded piece: 4 nodes, one fr32 block
MAX_LEVEL = 36  # zero_comm table: 2^36 leaves of 32 bytes = 2 TiB, as go-commp-utils' zerocomm table
# streaming: 2^17 fr32 blocks (16.6 MB of input, 16 MiB padded) per read
CHUNK_BLOCKS = 1 << 17


def _hash2(left: bytes, right: bytes) -> bytes:
    d = bytearray(hashlib.sha256(left + right).digest())
    d[31] &= 0x3F
    return bytes(d)


def _zero_table() -> tuple[bytes, ...]:
    t = [bytes(NODE)]
    for _ in range(MAX_LEVEL):
        t.append(_hash2(t[-1], t[-1]))
    return tuple(t)


ZERO_COMMS: tuple[bytes, ...] = _zero_table()


def zero_comm(level: int) -> bytes:
    """Root of an all-zero subtree of 2^level 32-byte leaves (level 0: 32 zero bytes; level 2: the
    128-byte piece; level 30: a 32 GiB sector)."""
    if not 0 <= int(level) <= MAX_LEVEL:
        raise FilecoinError(f"zero_comm: level {level} outside 0..{MAX_LEVEL}")
    return ZERO_COMMS[int(level)]


def zero_piece_comm(padded_size: int) -> bytes:
    """CommP of an all-zero piece of ``padded_size`` bytes (a power of two >= 128)."""
    return zero_comm(_level_of(padded_size, "padded piece size"))


def _is_pow2(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


def _level_of(padded: int, what: str) -> int:
    padded = int(padded)
    if padded < MIN_PIECE or not _is_pow2(padded):
        raise FilecoinError(f"{what} {padded}: not a power of two >= 128 bytes")
    level = padded.bit_length() - 1 - 5
    if level > MAX_LEVEL:
        raise FilecoinError(f"{what} {padded}: larger than the 2 TiB this table covers")
    return level


def piece_padded_size(unpadded: int) -> int:
    """The padded piece size of ``unpadded`` payload bytes: the smallest power of two P >= 128 with
    P * 127 / 128 >= unpadded (as lotus' ``padreader.PaddedSize`` / go-fil-commp-hashhash)."""
    unpadded = int(unpadded)
    if unpadded < 0:
        raise FilecoinError(f"unpadded size {unpadded}: negative")
    blocks = max(1, -(-unpadded // UNPADDED_CHUNK))
    return max(MIN_PIECE, 1 << (blocks * PADDED_CHUNK - 1).bit_length())


# ---------------------------------------------------------------------------------------------- backend


def _load_native():
    """The numba + libcrypto kernels, or None (then the hashlib loop is used)."""
    if os.environ.get("CUZK_COMMP_BACKEND", "").lower() == "hashlib":
        return None
    try:
        import ctypes
        import ctypes.util

        names = [ctypes.util.find_library("crypto"), "libcrypto.so.3", "libcrypto.so", "libcrypto.dylib"]
        lib = None
        for name in names:
            if not name:
                continue
            try:
                lib = ctypes.CDLL(name)
                break
            except OSError:
                continue
        if lib is None or not hasattr(lib, "SHA256_Transform"):
            return None
        transform = lib.SHA256_Transform
        transform.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
        transform.restype = None
        import numba
        from numba import njit, prange
    except Exception:  # any failure: fall back to hashlib
        return None

    iv = np.array(
        [0x6A09E667, 0xBB67AE85, 0x3C6EF372, 0xA54FF53A, 0x510E527F, 0x9B05688C, 0x1F83D9AB, 0x5BE0CD19],
        dtype=np.uint32,
    )
    # SHA-256 padding block of a 64-byte message: 0x80, zeros, bit length 512 big-endian
    tail = np.zeros(64, dtype=np.uint8)
    tail[0] = 0x80
    tail[62] = 0x02
    per_task = 512  # nodes per parallel task: one SHA256_CTX (as uint32 words) per task

    @njit(nogil=True, inline="always")
    def _hash_one(ctx, cp, src_addr, tp, out32, o):
        # ctx[0:8] is the SHA256_CTX's h[]; the rest of the struct is scratch that Transform ignores
        for j in range(8):
            ctx[j] = iv[j]
        transform(cp, src_addr)
        transform(cp, tp)
        for j in range(8):
            w = ctx[j]
            out32[o + j] = (w >> 24) | ((w >> 8) & 0xFF00) | ((w << 8) & 0xFF0000) | ((w << 24) & 0xFF000000)
        out32[o + 7] &= np.uint32(0x3FFFFFFF)  # little-endian word 7 holds byte 31: clear its top 2 bits

    @njit(nogil=True, parallel=True)
    def hash_level(src, dst, n):
        """dst[i] = hash2(src[2i], src[2i+1]) for i < n; src (2n*32,) uint8, dst (n*32,) uint8."""
        sp = src.ctypes.data
        out32 = dst.view(np.uint32)
        tp = tail.ctypes.data
        ntask = (n + per_task - 1) // per_task
        for t in prange(ntask):
            ctx = np.empty(32, dtype=np.uint32)
            cp = ctx.ctypes.data
            for i in range(t * per_task, min(n, t * per_task + per_task)):
                _hash_one(ctx, cp, sp + i * 64, tp, out32, i * 8)

    @njit(nogil=True, parallel=True)
    def leaf_level(data, nblocks, dst):
        """Fr32-pad nblocks 127-byte blocks of ``data`` and hash their node pairs: dst (nblocks*64,)."""
        out32 = dst.view(np.uint32)
        tp = tail.ctypes.data
        ntask = (nblocks + per_task - 1) // per_task
        for t in prange(ntask):
            ctx = np.empty(32, dtype=np.uint32)
            cp = ctx.ctypes.data
            buf = np.empty(128, dtype=np.uint8)
            bp = buf.ctypes.data
            for b in range(t * per_task, min(nblocks, t * per_task + per_task)):
                base = b * 127
                for i in range(32):
                    buf[i] = data[base + i]
                buf[31] &= 0x3F
                for i in range(32):  # node 1: bits 254.. = byte 31 bit 6
                    buf[32 + i] = (data[base + 31 + i] >> 6) | (data[base + 32 + i] << 2)
                buf[63] &= 0x3F
                for i in range(32):  # node 2: byte 63 bit 4
                    buf[64 + i] = (data[base + 63 + i] >> 4) | (data[base + 64 + i] << 4)
                buf[95] &= 0x3F
                for i in range(31):  # node 3: byte 95 bit 2
                    buf[96 + i] = (data[base + 95 + i] >> 2) | (data[base + 96 + i] << 6)
                buf[127] = data[base + 126] >> 2
                _hash_one(ctx, cp, bp, tp, out32, b * 16)
                _hash_one(ctx, cp, bp + 64, tp, out32, b * 16 + 8)

    # compile now (a few seconds, once per process) on tiny inputs, and check against hashlib
    probe = np.arange(2 * 127, dtype=np.uint8)
    got = np.empty(4 * 32, dtype=np.uint8)
    leaf_level(probe, 2, got)
    want = pad_blocks(probe.reshape(2, 127)).reshape(-1)
    ref = b"".join(_hash2(want[i : i + 32].tobytes(), want[i + 32 : i + 64].tobytes()) for i in range(0, 256, 64))
    top = np.empty(64, dtype=np.uint8)
    hash_level(got, top, 2)
    ref_top = _hash2(ref[:32], ref[32:64]) + _hash2(ref[64:96], ref[96:])
    if got.tobytes() != ref or top.tobytes() != ref_top:
        return None
    del numba
    return hash_level, leaf_level


_NATIVE: object = False  # not loaded yet


def _native():
    global _NATIVE
    if _NATIVE is False:
        _NATIVE = _load_native()
    return _NATIVE


def backend() -> str:
    """'libcrypto' (numba kernels over OpenSSL's SHA-256 block function) or 'hashlib' (the fallback)."""
    return "hashlib" if _native() is None else "libcrypto"


def _hash_level_py(src: np.ndarray, n: int) -> np.ndarray:
    b = src[: 2 * n * NODE].tobytes()
    out = b"".join(_hash2(b[i : i + NODE], b[i + NODE : i + 2 * NODE]) for i in range(0, len(b), 2 * NODE))
    return np.frombuffer(out, dtype=np.uint8).copy()


# below this many hashes a level is hashed with hashlib (and numba is not even loaded: no compile time
# for small pieces)
NATIVE_MIN = 8192


def hash_level(nodes: np.ndarray) -> np.ndarray:
    """One tree level: ``(2n*32,)`` uint8 nodes -> ``(n*32,)`` parents."""
    n = nodes.size // (2 * NODE)
    nat = _native() if n >= NATIVE_MIN else None
    if nat is None:
        return _hash_level_py(nodes, n)
    out = np.empty(n * NODE, dtype=np.uint8)
    nat[0](np.ascontiguousarray(nodes), out, n)
    return out


def _leaves_level1(blocks: np.ndarray) -> np.ndarray:
    """Fr32-pad ``(N*127,)`` uint8 bytes and hash the leaf pairs: the tree's level 1, ``(N*2*32,)``."""
    nb = blocks.size // UNPADDED_CHUNK
    nat = _native() if 2 * nb >= NATIVE_MIN else None
    if nat is None:
        padded = pad_blocks(blocks[: nb * UNPADDED_CHUNK].reshape(nb, UNPADDED_CHUNK)).reshape(-1)
        return _hash_level_py(padded, 2 * nb)
    out = np.empty(nb * 2 * NODE, dtype=np.uint8)
    nat[1](blocks, nb, out)
    return out


def _root_of_blocks(blocks: np.ndarray, height: int) -> bytes:
    """Root of a subtree of 2^height leaves whose first leaves are the fr32 padding of ``blocks`` (a
    multiple of 127 bytes, at most 2^height * 32 * 127/128) and the rest zero."""
    nodes = _leaves_level1(blocks)
    level = 1
    while level < height:
        n = nodes.size // NODE
        if n == 1:
            break
        if n % 2:
            nodes = np.concatenate([nodes, np.frombuffer(ZERO_COMMS[level], dtype=np.uint8)])
        nodes = hash_level(nodes)
        level += 1
    root = nodes.tobytes()
    while level < height:  # the rest of the subtree is zero
        root = _hash2(root, ZERO_COMMS[level])
        level += 1
    return root


class _Stack:
    """Roots of aligned subtrees, left to right, levels strictly decreasing (a binary counter)."""

    def __init__(self):
        self.items: list[tuple[int, bytes]] = []

    def push(self, level: int, node: bytes) -> None:
        items = self.items
        items.append((level, node))
        while len(items) > 1 and items[-2][0] == items[-1][0]:
            (lv, a), (_, b) = items[-2], items.pop()
            items[-1] = (lv + 1, _hash2(a, b))

    def close(self, level: int) -> bytes:
        """Fill with zero subtrees up to a single root at ``level``."""
        if not self.items:
            return ZERO_COMMS[level]
        while len(self.items) > 1 or self.items[0][0] < level:
            top = self.items[-1][0]
            self.push(top, ZERO_COMMS[top])
        return self.items[0][1]


def _read_chunks(source, chunk: int) -> Iterable[np.ndarray]:
    """Yield uint8 arrays of ``chunk`` bytes (the last may be shorter) from a path, a binary file object
    or bytes-like data."""
    if isinstance(source, (bytes, bytearray, memoryview, np.ndarray)):
        a = np.frombuffer(memoryview(source).cast("B"), dtype=np.uint8) if not isinstance(source, np.ndarray) else source
        a = a.reshape(-1)
        for i in range(0, a.size, chunk):
            yield a[i : i + chunk]
        return
    if isinstance(source, (str, os.PathLike)):
        try:
            f = open(source, "rb")  # closed in the finally below
        except FileNotFoundError:
            raise FilecoinError(f"{os.fspath(source)}: no such file") from None
        except IsADirectoryError:
            raise FilecoinError(f"{os.fspath(source)}: is a directory, expected a file") from None
        except OSError as e:
            raise FilecoinError(f"{os.fspath(source)}: cannot open: {e.strerror}") from None
        close = True
    else:
        f, close = source, False
    try:
        bufs = [np.empty(chunk, dtype=np.uint8), np.empty(chunk, dtype=np.uint8)]
        k = 0
        while True:
            buf = bufs[k]
            got = 0
            mv = memoryview(buf)
            while got < chunk:
                r = f.readinto(mv[got:])
                if not r:
                    break
                got += r
            if got == 0:
                return
            yield buf[:got]
            if got < chunk:
                return
            k ^= 1
    finally:
        if close:
            f.close()


def comm_p(source, piece_size: int | None = None) -> tuple[bytes, int, int]:
    """Piece commitment of unpadded piece bytes.

    ``source``: a file path, a binary file object, or bytes / bytearray / memoryview / uint8 array.
    ``piece_size``: the padded piece size to commit to (a power of two >= 128); by default the smallest
    that holds the data (:func:`piece_padded_size`). The data is zero-filled to the piece.

    Returns ``(commp, padded_piece_size, payload_bytes)``: the 32-byte commitment, the padded size and
    the number of data bytes read. Memory is bounded (two 16.6 MB read buffers and their level-1 nodes)
    whatever the size; zero padding costs one hash per tree level.
    """
    chunk = CHUNK_BLOCKS * UNPADDED_CHUNK
    chunk_height = (CHUNK_BLOCKS * PADDED_CHUNK // NODE).bit_length() - 1  # leaves of a full chunk: 2^19
    stack = _Stack()
    total = 0
    limit = None
    if piece_size is not None:
        _level_of(piece_size, "piece size")
        limit = int(piece_size) // PADDED_CHUNK * UNPADDED_CHUNK
    for part in _read_chunks(source, chunk):
        total += part.size
        if limit is not None and total > limit:
            raise FilecoinError(
                f"the data does not fit a piece of {int(piece_size)} bytes (it holds at most {limit} unpadded bytes)"
            )
        if part.size == chunk:
            stack.push(chunk_height, _root_of_blocks(part, chunk_height))
            continue
        nb = -(-part.size // UNPADDED_CHUNK)
        last = part
        if part.size % UNPADDED_CHUNK:  # zero-fill the last fr32 block
            last = np.concatenate([part, np.zeros(nb * UNPADDED_CHUNK - part.size, dtype=np.uint8)])
        height = max(2, (nb * 4 - 1).bit_length())  # 4 leaves per block, rounded up to a power of two
        stack.push(height, _root_of_blocks(last, height))
    padded = piece_padded_size(total) if piece_size is None else int(piece_size)
    return stack.close(_level_of(padded, "piece size")), padded, total


def _piece_comm(x, i: int) -> bytes:
    if isinstance(x, str):
        from .cid import piece_commitment_from_cid

        return piece_commitment_from_cid(x)
    b = bytes(x)
    if len(b) != NODE:
        raise FilecoinError(f"piece {i + 1}: commitment is {len(b)} bytes, expected 32")
    return b


def comm_d(pieces: Sequence[tuple[object, int]], sector_size: int) -> bytes:
    """Unsealed-sector commitment CommD of a sector holding ``pieces`` in order.

    ``pieces``: ``(commitment, padded_size)`` pairs, the commitment as 32 bytes or a piece CID string,
    the size a power of two >= 128. Filecoin's layout (rust-fil-proofs ``compute_comm_d``, go-commp-utils
    ``PieceAggregateCommP`` / lotus ``GenerateUnsealedCID``): each piece starts at an offset that is a
    multiple of its own size (zero pieces fill the gap before it), the rest of the sector is zero, and
    CommD is the root of the tree over the whole sector. No pieces: the empty sector's CommD.
    """
    sector_level = _level_of(sector_size, "sector size")
    stack = _Stack()
    offset = 0
    for i, item in enumerate(pieces):  # messages count pieces from 1
        try:
            comm, size = item
        except (TypeError, ValueError):
            raise FilecoinError(f"piece {i + 1}: expected a (commitment, padded size) pair") from None
        comm = _piece_comm(comm, i)
        size = int(size)
        lv = _level_of(size, f"piece {i + 1}: size")
        start = -(-offset // size) * size  # aligned to the piece's own size
        if start + size > int(sector_size):
            raise FilecoinError(
                f"piece {i + 1} ({size} bytes at offset {start}) does not fit the sector of {int(sector_size)} bytes"
            )
        # zero pieces from offset up to start: at most one per level, smallest first
        while offset < start:
            z = (offset & -offset).bit_length() - 1 if offset else start.bit_length() - 1
            z = min(z, (start - offset).bit_length() - 1)
            stack.push(z - 5, ZERO_COMMS[z - 5])
            offset += 1 << z
        stack.push(lv, comm)
        offset += size
    return stack.close(sector_level)


__all__ = [
    "MAX_LEVEL",
    "ZERO_COMMS",
    "backend",
    "comm_d",
    "comm_p",
    "hash_level",
    "piece_padded_size",
    "zero_comm",
    "zero_piece_comm",
]
