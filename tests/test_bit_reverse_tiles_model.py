"""The index arithmetic of ntt.cu's fr_bit_reverse_tiled, modelled block by block and thread by thread.

The kernel (log_n >= 8) splits an index into i = h 2^(log_n - 4) + m 2^4 + l; the block of middle m
(doing nothing when rev(m) < m) loads the elements of m and of rev(m) into shared-memory tiles at
h * 17 + l and writes each set to the other's place, thread (hi, lo) storing output (hi, rev-middle, lo)
from tile slot rev(lo) * 17 + rev(hi). The model repeats those formulas and checks that together they
are exactly the bit-reversal permutation, that every element is read and written once (so the in-place
kernel is race-free across blocks), and that a half warp never hits one shared-memory bank twice. That
the device runs it bit for bit is test_gpu.py's NTT tests' job (intt and coset_intt use it from 2^8).
"""

from __future__ import annotations

import pytest

BITS, W, ROW = 4, 16, 17


def rev(x: int, bits: int) -> int:
    return int(f"{x:0{bits}b}"[::-1], 2) if bits else 0


def kernel_moves(log_n: int) -> list[tuple[int, int, int, int]]:
    """(block, thread, source index, destination index) of every element the kernel moves."""
    mid_bits = log_n - 2 * BITS
    shift = log_n - BITS
    moves = []
    for m in range(1 << mid_bits):
        mr = rev(m, mid_bits)
        if mr < m:
            continue
        sets = 1 if mr == m else 2
        tiles: list[dict[int, int]] = [{}, {}]
        for k in range(W * W):  # the loads
            hi, lo = k >> BITS, k & (W - 1)
            for t in range(sets):
                tiles[t][hi * ROW + lo] = (hi << shift) | ((mr if t else m) << BITS) | lo
        for k in range(W * W):  # the stores
            hi, lo = k >> BITS, k & (W - 1)
            for t in range(sets):
                src = tiles[t][rev(lo, BITS) * ROW + rev(hi, BITS)]
                dst = (hi << shift) | ((m if t else mr) << BITS) | lo
                moves.append((m, k, src, dst))
    return moves


@pytest.mark.parametrize("log_n", [8, 9, 10, 11, 12, 13])
def test_tiled_bit_reversal_is_the_permutation(log_n):
    moves = kernel_moves(log_n)
    n = 1 << log_n
    assert sorted(d for _, _, _, d in moves) == list(range(n))  # every output written once
    assert sorted(s for _, _, s, _ in moves) == list(range(n))  # every input read once
    assert all(d == rev(s, log_n) for _, _, s, d in moves)
    # in place across blocks: a block writes only where it read
    by_block: dict[int, tuple[set, set]] = {}
    for b, _, s, d in moves:
        reads, writes = by_block.setdefault(b, (set(), set()))
        reads.add(s)
        writes.add(d)
    assert all(r == w for r, w in by_block.values())


def test_tile_accesses_are_free_of_bank_conflicts():
    """Eight-byte words, 32 four-byte banks: the 16 lanes of a half warp must hit 16 different word slots
    (mod 16) on the fill (slot hi * 17 + lo) and on the transposed read (rev(lo) * 17 + rev(hi))."""
    for half in range(W * W // 16):
        lanes = range(16 * half, 16 * half + 16)
        fill = {((k >> BITS) * ROW + (k & (W - 1))) % 16 for k in lanes}
        read = {(rev(k & (W - 1), BITS) * ROW + rev(k >> BITS, BITS)) % 16 for k in lanes}
        assert len(fill) == 16 and len(read) == 16
