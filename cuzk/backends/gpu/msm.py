"""Multi-scalar multiplication on the GPU (Pippenger, signed digits, counting sort), G1 and G2.

``msm(group, bases, scalars)`` takes device arrays: bases as LEM affine points (the zkey layout,
uploaded once and kept resident) and scalars as a Montgomery Fr vector, and returns the sum as an
arkworks point. Zero scalars are skipped; scalars equal to one are summed apart (the 0/1 fast path:
a masked parallel sum, or with CUZK_MSM_ONES=compact an accumulation over their compacted indices) and
only the rest go through the buckets, accumulated with S entries per thread across bucket boundaries
(CUZK_MSM_ACC=even, the default; the pieces of a bucket are then combined by a parallel tree), or
first halved by batch-affine rounds that share one inversion among many additions (CUZK_MSM_ACC=affine).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass

import cupy
import numpy as np
from py_arkworks_bls12381 import G1Point, G2Point

from ...curve import points as pts
from ...field.constants import Q, R
from . import runtime
from .runtime import BLOCK, GpuOutOfMemory, env_choice, grid_for, launch, op_errors, synchronize, u32

POINT_WORDS = {1: 12, 2: 24}  # affine point: uint64 words
XYZZ_WORDS = {1: 24, 2: 48}
REDUCE_BLOCK = {1: 128, 2: 64}  # must match MSM_ENTRY_POINTS in msm.cu
ITEM_ENTRIES = 64  # max points one accumulation thread adds (splits crowded buckets)
SEGMENT_LOG = 4  # buckets per thread in the first level of the window reduction
WINDOW_K = 4  # segments per thread in the second level


@dataclass
class MsmStats:
    n: int
    window: int
    windows: int
    nonzero: int = 0  # scalars that went through the buckets
    ones: int = 0
    entries: int = 0
    chunks: int = 0


# Cost of reducing one bucket, in units of the per-entry cost (sort + mixed addition), measured on the
# H200 with the even accumulation (device run 2, 2026-12-02, CUDA-event profile): G1 2^26 window 22 spent
# 1.1 ns per entry (accumulate + count + scatter) and ~6.4 ns per bucket once the bucket sums are fused
# into the first reduction level (8.8 ns before); G2 2^24 window 20: 4.5 ns per entry, 18.8 ns per bucket.
BUCKET_COST = {1: 6.0, 2: 4.0}


def choose_window(n: int, group: int = 1, bits: int = 255) -> int:
    """Window (bits) minimising windows x (entries + BUCKET_COST x buckets) for n non-0/1 scalars of at
    most ``bits`` bits (signed digits: 2^(c-1) buckets per window); G2 buckets are twice as large, so
    its window is capped lower to bound memory. CUZK_MSM_WINDOW overrides."""
    env = os.environ.get("CUZK_MSM_WINDOW")
    if env:
        return int(env)
    best, best_cost = 4, math.inf
    cap = 22 if group == 1 else 20
    k = BUCKET_COST[group]
    for c in range(4, cap + 1):
        cost = math.ceil((bits + 1) / c) * (n + k * (1 << (c - 1)))
        if cost < best_cost:
            best, best_cost = c, cost
    return best


def accumulation_mode() -> str:
    """Bucket accumulation: "even" (S consecutive entries per thread across bucket boundaries; the
    default: G1 2^26 1278 -> 1113 ms, G2 2^24 1308 -> 1080 ms on the H200), "items" (one thread per
    bucket, crowded buckets split into items of ITEM_ENTRIES) or "affine" (batch-affine rounds that
    halve every bucket, then the even accumulation over what is left); CUZK_MSM_ACC."""
    return env_choice("CUZK_MSM_ACC", ("even", "items", "affine"))


AFFINE_KMAX = 128  # CUZK_AFFINE_KMAX's default in msm.cu (the size of the per-thread prefix array)
AFFINE_MIN_POINTS = 1 << 15  # below this many points a round is left to the XYZZ accumulation
AFFINE_GROUP_BYTES = 8 << 30  # window groups: the bound on one group's first-round output


def _env_int(name: str, default: int) -> int:
    return int(os.environ.get(name, default))


def affine_pairs_per_thread(m_out: int) -> int:
    """Additions per thread in a batch-affine round (they share one inversion): CUZK_MSM_AFFINE_K, or
    AFFINE_KMAX (or the msm module's CUZK_AFFINE_KMAX define), fewer when that would leave under ~2^17
    threads (never under 8)."""
    kmax = int(dict(runtime.VARIANTS.get("msm", ())).get("CUZK_AFFINE_KMAX", AFFINE_KMAX))
    env = os.environ.get("CUZK_MSM_AFFINE_K")
    if env:
        return max(1, min(kmax, int(env)))
    return max(8, min(kmax, m_out >> 17))


def affine_round_limit() -> int:
    """Most batch-affine rounds per MSM (CUZK_MSM_AFFINE_ROUNDS, default 16)."""
    return _env_int("CUZK_MSM_AFFINE_ROUNDS", 16)


def _affine_rounds(
    group: int,
    bases: cupy.ndarray,
    entries: cupy.ndarray,
    bounds: cupy.ndarray,
    total: int,
    op: str,
    force_first: bool,
    prof: _Profile,
) -> tuple[cupy.ndarray | None, cupy.ndarray, int]:
    """Batch-affine rounds over bucket-sorted ``entries`` (``bounds``: total + 1 offsets): each round adds
    the points of every bucket in consecutive pairs, so a bucket of n becomes ceil(n / 2) points.
    Rounds stop when every bucket holds one point, when under an eighth of the points would still pair
    (the XYZZ accumulation does such tails without a pass over everything), when under
    AFFINE_MIN_POINTS remain (CUZK_MSM_AFFINE_MIN), or after affine_round_limit(); ``force_first`` runs the first round
    anyway (it gathers the points, so the caller gets a point array). Returns (points, bounds, max
    bucket size); with no round run, points is None and the inputs stand."""
    counts = bounds[1:] - bounds[:-1]
    max_count = int(counts.max()) if total else 0
    src, in_bounds, m_in, rounds = None, bounds, int(bounds[-1]), 0
    while (rounds == 0 and force_first) or (
        rounds < affine_round_limit() and max_count > 1 and m_in >= _env_int("CUZK_MSM_AFFINE_MIN", AFFINE_MIN_POINTS)
    ):
        out_counts = (counts + 1) >> 1
        out_bounds = cupy.zeros(total + 1, dtype=cupy.uint32)
        out_bounds[1:] = cupy.cumsum(out_counts, dtype=cupy.uint64)
        m_out = int(out_bounds[-1])
        if (rounds or not force_first) and (m_in - m_out) * 8 < m_in:
            break
        K = affine_pairs_per_thread(m_out)
        dst = _poisoned((m_out, POINT_WORDS[group]))
        nthreads = -(-m_out // K)
        if src is None:
            launch(
                "msm",
                _k(group, "affine_round_gather"),
                grid_for(nthreads, 128),
                128,
                (bases, entries, in_bounds, out_bounds, u32(total), u32(m_out), u32(K), dst),
                op,
            )
        else:
            launch(
                "msm",
                _k(group, "affine_round"),
                grid_for(nthreads, 128),
                128,
                (src, in_bounds, out_bounds, u32(total), u32(m_out), u32(K), dst),
                op,
            )
        src, in_bounds, counts, m_in = dst, out_bounds, out_counts, m_out
        max_count = (max_count + 1) // 2
        rounds += 1
        prof.mark(f"affine_round{rounds}")
    return src, in_bounds, max_count


def _affine_then_even(
    group: int,
    bases: cupy.ndarray,
    entries: cupy.ndarray,
    bounds: cupy.ndarray,
    total: int,
    nwin: int,
    op: str,
    prof: _Profile,
    mark: str,
) -> tuple[cupy.ndarray, cupy.ndarray, int]:
    """Batch-affine rounds window group by window group (one group's first-round output is bounded by
    AFFINE_GROUP_BYTES, CUZK_MSM_AFFINE_GROUP_BYTES), their points then accumulated by the even accumulation over all windows.
    Returns (partials, bounds of the accumulated points, S) as _accumulate_even's callers expect."""
    nb = total // nwin
    half_point = POINT_WORDS[group] * 8 // 2  # first-round output bytes per entry
    bounds_host = cupy.asnumpy(bounds[::nb])  # window starts and the entry count
    groups, w0 = [], 0
    while w0 < nwin:
        w1 = w0 + 1
        while w1 < nwin and (int(bounds_host[w1 + 1]) - int(bounds_host[w0])) * half_point <= _env_int(
            "CUZK_MSM_AFFINE_GROUP_BYTES", AFFINE_GROUP_BYTES
        ):
            w1 += 1
        groups.append((w0, w1))
        w0 = w1
    if len(groups) == 1:
        points, new_bounds, max_count = _affine_rounds(group, bases, entries, bounds, total, op, False, prof)
        prof.mark(mark + "_affine")
        if points is None:  # no round was worth it: the plain even accumulation
            max_count = int((bounds[1:] - bounds[:-1]).max())
            partials, S = _accumulate_even(group, bases, entries, bounds, total, int(bounds[-1]), max_count, op, prof, mark)
            return partials, bounds, S
        m = int(new_bounds[-1])
        iota = cupy.arange(m, dtype=cupy.uint32)
        partials, S = _accumulate_even(group, points, iota, new_bounds, total, m, max_count, op, prof, mark)
        return partials, new_bounds, S
    pts_parts, bound_parts, max_count, offset = [], [], 0, 0
    for w0, w1 in groups:  # each group's first round forced: every group then has a point array
        e0, e1 = int(bounds_host[w0]), int(bounds_host[w1])
        sub = bounds[w0 * nb : w1 * nb + 1] - np.uint32(e0)
        g_pts, g_bounds, g_max = _affine_rounds(group, bases, entries[e0:e1], sub, (w1 - w0) * nb, op, True, prof)
        pts_parts.append(g_pts)
        bound_parts.append(g_bounds[:-1] + np.uint32(offset))
        offset += int(g_bounds[-1])
        max_count = max(max_count, g_max)
        del sub
    points = pts_parts[0] if len(pts_parts) == 1 else cupy.concatenate(pts_parts)
    del pts_parts
    new_bounds = cupy.concatenate(bound_parts + [cupy.asarray(np.array([offset], dtype=np.uint32))])
    prof.mark(mark + "_affine")
    iota = cupy.arange(offset, dtype=cupy.uint32)
    partials, S = _accumulate_even(group, points, iota, new_bounds, total, offset, max_count, op, prof, mark)
    return partials, new_bounds, S


def accumulation_ranges_per_thread() -> int:
    """Ranges of S entries that one thread of the even accumulation adds side by side: the msm module's
    CUZK_ACC_ILP define (1 unless a kernel variant sets it), which decides how many threads to launch."""
    return int(dict(runtime.VARIANTS.get("msm", ())).get("CUZK_ACC_ILP", "1"))


def even_chunk(n_entries: int) -> int:
    """Entries per thread for the even accumulation: 64, fewer when that would leave the GPU with
    under ~2^19 threads (132 SMs x 384 resident threads x ~10 waves), never under 4.
    CUZK_MSM_EVEN_S forces a value (tuning, and tests of the production value on small inputs)."""
    env = os.environ.get("CUZK_MSM_EVEN_S")
    if env:
        return max(1, int(env))
    return max(4, min(64, n_entries >> 19))


def _poisoned(shape, dtype=cupy.uint64) -> cupy.ndarray:
    """cupy.empty, filled with 0xFF bytes when CUZK_GPU_POISON=1 (tests: unwritten outputs show up)."""
    a = cupy.empty(shape, dtype=dtype)
    if os.environ.get("CUZK_GPU_POISON") == "1":
        a.view(cupy.uint8).fill(0xFF)
    return a


def _k(group: int, name: str) -> str:
    return f"g{group}_{name}"


def _xyzz_to_point(words: np.ndarray, group: int):
    """One XYZZ point (Montgomery limbs) -> arkworks point. x = X/ZZ, y = Y/ZZZ (R cancels)."""
    raw = words.astype("<u8").tobytes()
    k = 48
    ints = [int.from_bytes(raw[k * i : k * (i + 1)], "little") for i in range(len(raw) // k)]
    if group == 1:
        X, Y, ZZ, ZZZ = ints
        if ZZ == 0:
            return G1Point.identity()
        x = X * pow(ZZ, -1, Q) % Q
        y = Y * pow(ZZZ, -1, Q) % Q
        return pts.g1_from_ints(x, y, "GPU MSM result")
    X = ints[0:2]
    Y = ints[2:4]
    ZZ = ints[4:6]
    ZZZ = ints[6:8]
    if ZZ == [0, 0]:
        return G2Point.identity()

    def inv2(a):
        n = (a[0] * a[0] + a[1] * a[1]) % Q
        ni = pow(n, -1, Q)
        return [a[0] * ni % Q, (-a[1]) * ni % Q]

    def mul2(a, b):
        return [(a[0] * b[0] - a[1] * b[1]) % Q, (a[0] * b[1] + a[1] * b[0]) % Q]

    x = mul2(X, inv2(ZZ))
    y = mul2(Y, inv2(ZZZ))
    return pts.g2_from_ints(x[0], x[1], y[0], y[1], "GPU MSM result")


class _Profile:
    """Per-kernel CUDA-event timing of MSM phases when CUZK_MSM_PROFILE=1 (read by the benchmark)."""

    totals: dict[str, float] = {}

    def __init__(self):
        self.on = os.environ.get("CUZK_MSM_PROFILE") == "1"
        self.marks: list[tuple[str, object]] = []
        if self.on:
            self.mark("start")

    def mark(self, name: str) -> None:
        if self.on:
            e = cupy.cuda.Event()
            e.record()
            self.marks.append((name, e))

    def flush(self) -> None:
        if not self.on or len(self.marks) < 2:
            return
        self.marks[-1][1].synchronize()
        for (_, a), (name, b) in zip(self.marks, self.marks[1:]):
            _Profile.totals[name] = _Profile.totals.get(name, 0.0) + cupy.cuda.get_elapsed_time(a, b)


def _accumulate_even(
    group: int,
    bases: cupy.ndarray,
    entries: cupy.ndarray,
    bounds: cupy.ndarray,
    total: int,
    n_entries: int,
    max_count: int,
    op: str,
    prof: _Profile,
    mark: str,
) -> tuple[cupy.ndarray, int]:
    """Even accumulation of bucket-sorted ``entries`` (``bounds``: total + 1 bucket offsets), then the
    tree rounds that combine each bucket's pieces; returns (partials, S): bucket b's sum is in slot
    b + bounds[b] // S (see bucket_value in msm.cu). ``max_count``: the largest bucket."""
    S = even_chunk(n_entries)
    nthreads = -(-n_entries // S)
    partials = _poisoned((total + nthreads, XYZZ_WORDS[group]))  # slots b + t; the unused ones are never read
    first_bucket = _poisoned(nthreads, cupy.uint32)
    ilp = accumulation_ranges_per_thread()
    launch(
        "msm",
        _k(group, "accumulate_even"),
        grid_for(-(-nthreads // ilp), 128),
        128,
        (bases, entries, bounds, u32(total), u32(n_entries), u32(S), partials, first_bucket),
        op,
    )
    prof.mark(mark)
    # a bucket's pieces: at most ceil(count / S) + 1 (one more when it starts inside a thread's range)
    max_pieces = -(-max_count // S) + 1
    step = 1
    checked = dict(runtime.VARIANTS.get("msm", ())).get("CUZK_MSM_CHECK_INDEX", "0") == "1"
    while step < max_pieces:  # tree rounds over the pieces of the crowded buckets
        if checked:  # the index-checking kernel (a debugging build of the msm module)
            launch(
                "msm",
                _k(group, "combine_pieces_checked"),
                grid_for(nthreads, 128),
                128,
                (partials, bounds, first_bucket, u32(nthreads), u32(S), u32(step), u32(total)),
                op,
            )
        else:
            launch(
                "msm",
                _k(group, "combine_pieces"),
                grid_for(nthreads, 128),
                128,
                (partials, bounds, first_bucket, u32(nthreads), u32(S), u32(step)),
                op,
            )
        step *= 2
    return partials, S


def ones_mode() -> str:
    """How the bases of scalars equal to one are summed: "masked" (grid-stride loop over all n points,
    adding where the flag says one: lanes of a warp idle where their point is not selected) or
    "compact" (indices of the ones compacted first, then the even accumulation over them as one
    bucket); CUZK_MSM_ONES. Compact is the default: G1 0/1 2^26 66.8 -> 41.5 ms on the H200 (2026-12-03)."""
    return env_choice("CUZK_MSM_ONES", ("compact", "masked"))


def _msm_chunk(
    group: int, bases: cupy.ndarray, scalars: cupy.ndarray, window: int | None, ones: bool, stats: MsmStats
) -> tuple[list, int, np.ndarray | None]:
    """One MSM on device arrays; returns ([(window sum XYZZ words, shift)], window, ones-sum words)."""
    n = scalars.shape[0]
    words = XYZZ_WORDS[group]
    rb = REDUCE_BLOCK[group]
    prof = _Profile()
    op = f"G{group} MSM of {n} points"
    with op_errors(op):
        flags = _poisoned(max(1, n), cupy.uint8)
        cls = cupy.zeros(2, dtype=cupy.uint32)
        launch("msm", "msm_classify", grid_for(n), BLOCK, (scalars, u32(n), np.int32(int(ones)), flags, cls), op)
        prof.mark("classify")
        n_other, bits = (int(x) for x in cupy.asnumpy(cls))
        extra = cupy.zeros((1, words), dtype=cupy.uint64)
        n_extra = 0
        ones_count = 0
        if ones and ones_mode() == "compact":
            idx = cupy.flatnonzero(flags[:n] == 1).astype(cupy.uint32)
            m = int(idx.size)
            if m:
                one_bucket = cupy.asarray(np.array([0, m], dtype=np.uint32))
                if accumulation_mode() == "affine":
                    part, _, _ = _affine_then_even(group, bases, idx, one_bucket, 1, 1, op, prof, "ones_accumulate")
                else:
                    part, _ = _accumulate_even(group, bases, idx, one_bucket, 1, m, m, op, prof, "ones_accumulate")
                extra = part[:1].copy()  # bucket 0's sum sits in slot 0; the pieces are freed now
                del part
                n_extra = 1
            del idx
            ones_count = m
            prof.mark("ones")
        elif ones:
            nblocks = max(1, min(grid_for(n, rb), 132 * 16))
            part = _poisoned((nblocks, words))
            launch("msm", _k(group, "masked_sum"), nblocks, rb, (bases, flags, u32(n), np.uint8(1), part), op)
            launch("msm", _k(group, "reduce"), 1, rb, (part, u32(nblocks), extra), op)
            n_extra = 1
            ones_count = cupy.count_nonzero(flags[:n] == 1)  # read at the end: no host sync here
            prof.mark("ones")
        stats.nonzero += n_other
        if n_other == 0:
            stats.ones += int(ones_count)
            prof.flush()
            return [], 0, cupy.asnumpy(extra)[0] if n_extra else None
        c = window or choose_window(n_other, group, bits)
        nwin = max(1, -(-(bits + 1) // c))
        nb = 1 << (c - 1)
        total = nwin * nb
        stats.window, stats.windows = c, nwin
        op = f"G{group} MSM of {n} points (window {c})"
        counts = cupy.zeros(total, dtype=cupy.uint32)
        launch("msm", "msm_count", grid_for(n), BLOCK, (scalars, flags, u32(n), np.int32(c), np.int32(nwin), counts), op)
        prof.mark("count")
        ends = cupy.cumsum(counts, dtype=cupy.uint64)
        n_entries = int(ends[-1])
        if n_entries >= 1 << 32:
            raise GpuOutOfMemory(f"{op}: {n_entries} bucket entries exceed the 32-bit index space")
        bounds = cupy.zeros(total + 1, dtype=cupy.uint32)  # bucket start offsets, the entry count appended
        bounds[1:] = ends
        del ends
        offsets = bounds[:total]
        mode = accumulation_mode()
        even = mode in ("even", "affine")
        if mode == "even":
            max_count = int(counts.max())  # read now, while the host waits for the scan anyway
        else:
            per_bucket_items = (counts + (ITEM_ENTRIES - 1)) // ITEM_ENTRIES
            item_offsets = cupy.zeros(total + 1, dtype=cupy.uint32)
            item_offsets[1:] = cupy.cumsum(per_bucket_items, dtype=cupy.uint64).astype(cupy.uint32)
            nitems = int(item_offsets[-1])
            del per_bucket_items
        stats.entries += n_entries
        prof.mark("scan")
        entries = _poisoned(max(1, n_entries), cupy.uint32)
        cursor = offsets.copy()
        launch(
            "msm", "msm_scatter", grid_for(n), BLOCK, (scalars, flags, u32(n), np.int32(c), np.int32(nwin), cursor, entries), op
        )
        del cursor
        if not even:
            item_start = _poisoned(max(1, nitems), cupy.uint32)
            item_len = _poisoned(max(1, nitems), cupy.uint32)
            launch(
                "msm",
                "msm_make_items",
                grid_for(total),
                BLOCK,
                (counts, offsets, item_offsets, u32(total), u32(ITEM_ENTRIES), item_start, item_len),
                op,
            )
            del bounds
        del offsets
        prof.mark("scatter")
        fused = even and os.environ.get("CUZK_MSM_FUSED_SEGMENTS", "1") == "1"
        buckets = None if fused else _poisoned((total, words))
        if even:
            if mode == "affine":
                partials, bounds, S = _affine_then_even(group, bases, entries, bounds, total, nwin, op, prof, "accumulate")
            else:
                partials, S = _accumulate_even(group, bases, entries, bounds, total, n_entries, max_count, op, prof, "accumulate")
            del entries
            prof.mark("combine")
            if not fused:
                launch(
                    "msm",
                    _k(group, "bucket_sum_even"),
                    grid_for(total, 128),
                    128,
                    (partials, bounds, u32(total), u32(S), buckets),
                    op,
                )
                del partials, bounds
        else:
            partials = _poisoned((max(1, nitems), words))
            launch(
                "msm",
                _k(group, "accumulate"),
                grid_for(nitems, 128),
                128,
                (bases, entries, item_start, item_len, u32(nitems), partials),
                op,
            )
            del entries, item_start, item_len
            prof.mark("accumulate")
            launch("msm", _k(group, "bucket_sum"), grid_for(total, 128), 128, (partials, item_offsets, u32(total), buckets), op)
            del partials, item_offsets
        if not fused:
            prof.mark("bucket_sum")
        seg_log = min(SEGMENT_LOG, c - 1)
        nseg = nb >> seg_log
        segT = _poisoned((nwin * nseg, words))
        segA = _poisoned((nwin * nseg, words))
        if fused:  # buckets summed from the accumulation's pieces inside the first reduction level
            launch(
                "msm",
                _k(group, "segments_even"),
                grid_for(nwin * nseg, 64),
                64,
                (partials, bounds, u32(S), u32(nb), u32(1 << seg_log), u32(nseg), u32(nwin), segT, segA),
                op,
            )
            del partials, bounds
        else:
            launch(
                "msm",
                _k(group, "segments"),
                grid_for(nwin * nseg, 64),
                64,
                (buckets, u32(nb), u32(1 << seg_log), u32(nseg), u32(nwin), segT, segA),
                op,
            )
        del buckets
        prof.mark("segments")
        G = max(1, -(-nseg // (rb * WINDOW_K)))
        partX = _poisoned((nwin * G, words))
        partY = _poisoned((nwin * G, words))
        launch("msm", _k(group, "window_partial"), nwin * G, rb, (segT, segA, u32(nseg), u32(WINDOW_K), u32(G), partX, partY), op)
        del segT, segA
        win = _poisoned((nwin, words))
        launch("msm", _k(group, "window_final"), nwin, rb, (partX, partY, u32(G), np.int32(seg_log), win), op)
        del partX, partY
        prof.mark("window")
        win_host = cupy.asnumpy(win)
        stats.ones += int(ones_count)
        prof.flush()
        return [(win_host[w], c * w) for w in range(nwin)], c, cupy.asnumpy(extra)[0] if n_extra else None


def _combine(group: int, windows: list, extra) -> object:
    """sum_w 2^(shift_w) W_w + extra on the host: one small arkworks MSM instead of ~255 sequential
    doublings in a single GPU thread (measured 9 ms on the GPU for a G1 window combine)."""
    from ...curve.msm import scalar

    g = G1Point if group == 1 else G2Point
    pts_, sc = [], []
    for words_, shift in windows:
        p = _xyzz_to_point(words_, group)
        pts_.append(p)
        sc.append(scalar(1 << shift))
    acc = g.multiexp_unchecked(pts_, sc) if pts_ else g.identity()
    if extra is not None:
        acc = acc + _xyzz_to_point(extra, group)
    return acc


def msm(
    group: int,
    bases: cupy.ndarray,
    scalars: cupy.ndarray,
    window: int | None = None,
    ones: bool = True,
    chunk: int | None = None,
    stats: MsmStats | None = None,
):
    """sum_i scalars[i] * bases[i] (scalars: device Montgomery Fr vector; bases: device LEM points)."""
    n = scalars.shape[0]
    if bases.shape[0] < n:
        raise ValueError(f"G{group} MSM with {n} scalars but {bases.shape[0]} bases")
    stats = stats if stats is not None else MsmStats(n, 0, 0)
    chunk = chunk or n
    parts = []
    start = 0
    while start < n:
        size = min(chunk, n - start)
        try:
            parts.append(_msm_chunk(group, bases[start : start + size], scalars[start : start + size], window, ones, stats))
            stats.chunks += 1
            start += size
        except GpuOutOfMemory:
            if size <= 1 << 12:
                raise
            cupy.get_default_memory_pool().free_all_blocks()
            chunk = size // 2  # out of memory: retry this range in halves
    synchronize(f"G{group} MSM of {n} points")
    acc = G1Point.identity() if group == 1 else G2Point.identity()
    for windows, _, extra in parts:
        acc = acc + _combine(group, windows, extra)
    return acc


def upload_points(raw, group: int) -> cupy.ndarray:
    """LEM point bytes -> device array of shape (n, POINT_WORDS[group]) uint64."""
    words = POINT_WORDS[group]
    host = np.frombuffer(raw, dtype=np.uint64).reshape(-1, words)
    return cupy.asarray(host)


__all__ = ["MsmStats", "R", "choose_window", "msm", "upload_points"]
