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
``hashlib``, which uses the CPU's SHA extensions) directly. One kernel call computes the whole subtree of
a 16 MiB chunk (fr32 padding by 64-bit words fused with the leaf hashes, then every level); chunks are
hashed by a thread pool (the kernels release the GIL) and their roots combined in order. Where libcrypto
or numba are missing, a pure ``hashlib`` loop gives the same results (slowly);
``CUZK_COMMP_BACKEND=hashlib`` forces it, ``CUZK_COMMP_THREADS`` sets the thread count.
"""

from __future__ import annotations

import hashlib
import io
import os
import threading
from collections import deque
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
        from numba import njit
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
    per_task = 512  # nodes per inner batch (one SHA256_CTX, as uint32 words, per batch)

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

    @njit(nogil=True)
    def hash_level(src, dst, n):
        """dst[i] = hash2(src[2i], src[2i+1]) for i < n; src (2n*32,) uint8, dst (n*32,) uint8."""
        sp = src.ctypes.data
        out32 = dst.view(np.uint32)
        tp = tail.ctypes.data
        ntask = (n + per_task - 1) // per_task
        for t in range(ntask):
            ctx = np.empty(32, dtype=np.uint32)
            cp = ctx.ctypes.data
            for i in range(t * per_task, min(n, t * per_task + per_task)):
                _hash_one(ctx, cp, sp + i * 64, tp, out32, i * 8)

    full = np.uint64(0x3FFFFFFFFFFFFFFF)

    @njit(nogil=True, inline="always")
    def _pad_block(data, base, w, o64):
        """Fr32-pad the 127 bytes at data[base:] into o64[0:16] (little-endian words); w: a 17-word
        scratch whose word 16 (and byte 127) stay zero. Node q's word k is the 64 bits of the block
        starting at bit 254q + 64k."""
        wb = w.view(np.uint8)
        for i in range(127):
            wb[i] = data[base + i]
        for q in range(4):
            for k in range(4):
                bit = 254 * q + 64 * k
                j = bit >> 6
                sh = bit & 63
                if sh:
                    x = (w[j] >> np.uint64(sh)) | (w[j + 1] << np.uint64(64 - sh))
                else:
                    x = w[j]
                if k == 3:
                    x &= full
                o64[4 * q + k] = x

    @njit(nogil=True)
    def subtree_root(data, nb, height, zeros, root):
        """Root of a subtree of 2^height leaves: the fr32 padding of nb 127-byte blocks of data, then
        zeros (zeros[l]: the all-zero root of level l). Writes 32 bytes into root."""
        tp = tail.ctypes.data
        cur = np.empty((2 * nb + 1) * 32, dtype=np.uint8)
        nxt = np.empty((nb + 1) * 32, dtype=np.uint8)
        # level 1: pad each block and hash its two node pairs
        out32 = cur.view(np.uint32)
        ntask = (nb + per_task - 1) // per_task
        for t in range(ntask):
            ctx = np.empty(32, dtype=np.uint32)
            cp = ctx.ctypes.data
            w = np.zeros(17, dtype=np.uint64)
            blk = np.empty(16, dtype=np.uint64)
            bp = blk.ctypes.data
            for b in range(t * per_task, min(nb, t * per_task + per_task)):
                _pad_block(data, b * 127, w, blk)
                _hash_one(ctx, cp, bp, tp, out32, b * 16)
                _hash_one(ctx, cp, bp + 64, tp, out32, b * 16 + 8)
        n = 2 * nb
        level = 1
        while level < height:
            if n % 2:  # an odd node out: its right sibling is the zero subtree of this level
                for i in range(32):
                    cur[n * 32 + i] = zeros[level, i]
                n += 1
            half = n // 2
            sp = cur.ctypes.data
            o32 = nxt.view(np.uint32)
            ntask = (half + per_task - 1) // per_task
            for t in range(ntask):
                ctx = np.empty(32, dtype=np.uint32)
                cp = ctx.ctypes.data
                for i in range(t * per_task, min(half, t * per_task + per_task)):
                    _hash_one(ctx, cp, sp + i * 64, tp, o32, i * 8)
            cur, nxt = nxt, cur
            n = half
            level += 1
        for i in range(32):
            root[i] = cur[i]

    # compile now (a few seconds, once per process) on tiny inputs, and check against hashlib
    zeros = np.frombuffer(b"".join(ZERO_COMMS), dtype=np.uint8).reshape(-1, NODE)
    probe = np.arange(3 * 127, dtype=np.uint8)
    leaves = pad_blocks(probe.reshape(3, 127)).reshape(-1)
    nodes = _hash_level_py(leaves, 6)
    lv3 = _hash_level_py(np.concatenate([nodes, zeros[1], zeros[1]]), 4)  # 6 nodes + 2 zero nodes
    ref = _hash2(_hash2(lv3[:32].tobytes(), lv3[32:64].tobytes()), _hash2(lv3[64:96].tobytes(), ZERO_COMMS[2]))
    ref = _hash2(ref, ZERO_COMMS[4])
    got = np.empty(NODE, dtype=np.uint8)
    subtree_root(probe, 3, 5, zeros, got)
    top = np.empty(64, dtype=np.uint8)
    hash_level(leaves, top, 2)
    if got.tobytes() != ref or top.tobytes() != _hash_level_py(leaves, 2).tobytes():
        return None
    del numba
    return hash_level, subtree_root, zeros


_NATIVE: object = False  # not loaded yet


_NATIVE_LOCK = threading.Lock()


def _native():
    global _NATIVE
    if _NATIVE is False:
        with _NATIVE_LOCK:
            if _NATIVE is False:
                _NATIVE = _load_native()
    return _NATIVE


def threads() -> int:
    """Chunks hashed at once by :func:`comm_p`: ``$CUZK_COMMP_THREADS``, else the CPU count (1 with the
    hashlib backend, which holds the GIL)."""
    if _native() is None:
        return 1
    env = os.environ.get("CUZK_COMMP_THREADS", "")
    n = int(env) if env.isdigit() and int(env) > 0 else (os.cpu_count() or 1)
    return max(1, n)


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


def _root_of_blocks(blocks: np.ndarray, height: int) -> bytes:
    """Root of a subtree of 2^height leaves whose first leaves are the fr32 padding of ``blocks`` (a
    multiple of 127 bytes, at most 2^height * 32 * 127/128) and the rest zero."""
    nb = blocks.size // UNPADDED_CHUNK
    nat = _native() if 2 * nb >= NATIVE_MIN else None
    if nat is not None:
        root = np.empty(NODE, dtype=np.uint8)
        nat[1](np.ascontiguousarray(blocks), nb, height, nat[2], root)
        return root.tobytes()
    nodes = _hash_level_py(pad_blocks(blocks[: nb * UNPADDED_CHUNK].reshape(nb, UNPADDED_CHUNK)).reshape(-1), 2 * nb)
    level = 1
    while level < height:
        n = nodes.size // NODE
        if n == 1:
            break
        if n % 2:
            nodes = np.concatenate([nodes, np.frombuffer(ZERO_COMMS[level], dtype=np.uint8)])
        nodes = _hash_level_py(nodes, (n + 1) // 2)
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


def _read_chunks(source, chunk: int, nbufs: int = 2) -> Iterable[np.ndarray]:
    """Yield uint8 arrays of ``chunk`` bytes (the last may be shorter) from a path, a binary file object
    or bytes-like data. A file is read into ``nbufs`` buffers in turn: a yielded array stays valid until
    ``nbufs - 1`` more have been yielded."""
    if isinstance(source, np.ndarray):
        a = np.ascontiguousarray(source).reshape(-1).view(np.uint8)
    elif isinstance(source, (bytes, bytearray, memoryview)):
        a = np.frombuffer(memoryview(source).cast("B"), dtype=np.uint8)
    else:
        a = None
    if a is not None:
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
        bufs = [np.empty(chunk, dtype=np.uint8) for _ in range(nbufs)]

        def fill(buf: np.ndarray) -> int:
            got = 0
            mv = memoryview(buf)
            while got < chunk:
                r = f.readinto(mv[got:])
                if not r:
                    break
                got += r
            return got

        k = 0
        while True:
            got = fill(bufs[k])
            if got == 0:
                return
            yield bufs[k][:got]
            if got < chunk:
                return
            k = (k + 1) % nbufs
    finally:
        if close:
            f.close()


def comm_p(source, piece_size: int | None = None) -> tuple[bytes, int, int]:
    """Piece commitment of unpadded piece bytes.

    ``source``: a file path, a binary file object, or bytes / bytearray / memoryview / uint8 array.
    ``piece_size``: the padded piece size to commit to (a power of two >= 128); by default the smallest
    that holds the data (:func:`piece_padded_size`). The data is zero-filled to the piece.

    Returns ``(commp, padded_piece_size, payload_bytes)``: the 32-byte commitment, the padded size and
    the number of data bytes read. Memory is bounded whatever the size: :func:`threads` + 1 read buffers
    of 16.6 MB and ~25 MB of tree scratch per thread; zero padding costs one hash per tree level.
    """
    chunk = CHUNK_BLOCKS * UNPADDED_CHUNK
    chunk_height = (CHUNK_BLOCKS * PADDED_CHUNK // NODE).bit_length() - 1  # leaves of a full chunk: 2^19
    limit = None
    if piece_size is not None:
        _level_of(piece_size, "piece size")
        limit = int(piece_size) // PADDED_CHUNK * UNPADDED_CHUNK
    stack = _Stack()
    total = 0
    # Chunks are independent subtrees: up to `workers` of them are hashed at once by threads (the numba
    # kernels release the GIL), their roots pushed in order. Threads over chunks rather than threads
    # inside a level: no barrier per level, so a core taken by another process slows one chunk, not all.
    workers = threads() if _is_large(source, chunk) else 1
    inflight: deque = deque()
    pool = None
    if workers > 1:
        from concurrent.futures import ThreadPoolExecutor

        pool = ThreadPoolExecutor(workers, thread_name_prefix="commp")
    try:
        # nbufs = workers + 1: the buffer being read is never one still being hashed
        for part in _read_chunks(source, chunk, nbufs=workers + 1):
            total += part.size
            if limit is not None and total > limit:
                raise FilecoinError(
                    f"the data does not fit a piece of {int(piece_size)} bytes (it holds at most {limit} unpadded bytes)"
                )
            if part.size == chunk:
                height, blocks = chunk_height, part
            else:
                nb = -(-part.size // UNPADDED_CHUNK)
                blocks = part
                if part.size % UNPADDED_CHUNK:  # zero-fill the last fr32 block
                    blocks = np.concatenate([part, np.zeros(nb * UNPADDED_CHUNK - part.size, dtype=np.uint8)])
                height = max(2, (nb * 4 - 1).bit_length())  # 4 leaves per block, up to a power of two
            if pool is None:
                stack.push(height, _root_of_blocks(blocks, height))
                continue
            inflight.append((height, pool.submit(_root_of_blocks, blocks, height)))
            while len(inflight) >= workers:
                h, fut = inflight.popleft()
                stack.push(h, fut.result())
        while inflight:
            h, fut = inflight.popleft()
            stack.push(h, fut.result())
    finally:
        if pool is not None:
            for _, fut in inflight:
                fut.cancel()
            pool.shutdown(wait=True)
    padded = piece_padded_size(total) if piece_size is None else int(piece_size)
    return stack.close(_level_of(padded, "piece size")), padded, total


def _is_large(source, chunk: int) -> bool:
    """More than one chunk of data (worth threads), as far as can be told without reading it."""
    if isinstance(source, (bytes, bytearray, memoryview, np.ndarray)):
        return memoryview(source).nbytes > chunk if not isinstance(source, np.ndarray) else source.nbytes > chunk
    try:
        size = os.path.getsize(source) if isinstance(source, (str, os.PathLike)) else os.fstat(source.fileno()).st_size
    except (OSError, AttributeError, ValueError, io.UnsupportedOperation):
        return True
    return size > chunk


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
