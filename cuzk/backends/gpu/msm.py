"""Multi-scalar multiplication on the GPU (Pippenger, signed digits, counting sort), G1 and G2.

``msm(group, bases, scalars)`` takes device arrays: bases as LEM affine points (the zkey layout,
uploaded once and kept resident) and scalars as a Montgomery Fr vector, and returns the sum as an
arkworks point. Zero scalars are skipped; scalars equal to one are summed apart (the 0/1 fast path:
an accumulation over their compacted indices, GpuConfig.msm_ones = "compact", the default, or a masked
parallel sum, "masked") and only the rest go through the buckets, accumulated with S entries per thread
across bucket boundaries (GpuConfig.msm_acc = "even", the default; the pieces of a bucket are then
combined by a parallel tree) or one thread per work item of a bucket ("items"). Switches come from
:func:`config.current` (config.py), never from the environment directly.

Fixed bases may carry a :class:`BaseTable` of precomputed multiples (copy j = 2^(c j) P, kernels in
msm_table.cu): window w of the signed digits then reads copy (w mod k) into bucket set (w div k), so a
table of k copies needs ceil(W / k) bucket reductions instead of W and affords a larger window.

Every function takes the curve (``curve``: a :class:`cuzk.curves.Curve` or its name; BLS12-381 when
omitted, for the benchmarks' sake): the point sizes, the cubins (built from the curve's preamble) and
the decoding of results (into the curve's CPU point library) follow it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import cupy
import numpy as np

from ...curve import points as pts
from ...curves import Curve
from . import config
from .build import curve_of
from .runtime import BLOCK, GpuOutOfMemory, grid_for, launch, op_errors, synchronize, u32


def point_words(curve: Curve, group: int) -> int:
    """uint64 words of an affine point (x, y)."""
    return curve.point_bytes(group) // 8


def xyzz_words(curve: Curve, group: int) -> int:
    """uint64 words of an XYZZ point (X, Y, ZZ, ZZZ)."""
    return 2 * point_words(curve, group)


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


def choose_window(n: int, group: int = 1, bits: int = 255) -> int:  # bits: the scalars' largest bit length
    """Window (bits) minimising windows x (entries + BUCKET_COST x buckets) for n non-0/1 scalars of at
    most ``bits`` bits (signed digits: 2^(c-1) buckets per window); G2 buckets are twice as large, so
    its window is capped lower to bound memory. GpuConfig.msm_window (CUZK_MSM_WINDOW) overrides."""
    forced = config.current().msm_window
    if forced:
        return forced
    best, best_cost = 4, math.inf
    cap = 22 if group == 1 else 20
    k = BUCKET_COST[group]
    for c in range(4, cap + 1):
        cost = math.ceil((bits + 1) / c) * (n + k * (1 << (c - 1)))
        if cost < best_cost:
            best, best_cost = c, cost
    return best


def accumulation_mode() -> str:
    """Bucket accumulation, GpuConfig.msm_acc (CUZK_MSM_ACC): "even" (S consecutive entries per thread
    across bucket boundaries; the default: G1 2^26 1278 -> 1113 ms, G2 2^24 1308 -> 1080 ms on the H200)
    or "items" (one thread per bucket, crowded buckets split into items of ITEM_ENTRIES)."""
    return config.current().msm_acc


def even_chunk(n_entries: int) -> int:
    """Entries per thread for the even accumulation: GpuConfig.msm_even_s (CUZK_MSM_EVEN_S), 64 by
    default; 0 = 64, fewer when that would leave the GPU with under ~2^19 threads (132 SMs x 384 resident
    threads x ~10 waves), never under 4. The fill rule was the default until `cuzk tune` measured 64
    faster on porep 2^24 (gpu_compute -6.1%: the 0/1 MSMs' single crowded bucket has 8x fewer pieces to
    combine; B_G2 16.9 -> 7.2 ms) and equal on dense 2^22 (H100, BENCHMARKS 14)."""
    forced = config.current().msm_even_s
    if forced:
        return forced
    return max(4, min(64, n_entries >> 19))


TABLE_RUN = 16  # points per thread of g1_table_affine (one inversion per run): msm_table.cu's TABLE_RUN
TABLE_MAX_WINDOW = 24  # 2^23 buckets of one set: 1.6 GB of G1 partials
TABLE_BUILD_CHUNK = 1 << 22  # points per launch pair of the table build (bounds its XYZZ scratch: 0.8 GB)


@dataclass
class BaseTable:
    """Precomputed multiples of n fixed G1 bases: rows [j n, (j + 1) n) hold 2^(window j) P_i, copy 0 is
    the bases themselves (:attr:`bases`, a view: the table replaces the plain vector)."""

    points: cupy.ndarray  # (copies * n, point words)
    n: int
    copies: int
    window: int

    @property
    def bases(self) -> cupy.ndarray:
        return self.points[: self.n]

    @property
    def extra_bytes(self) -> int:
        """Device bytes beyond the plain vector's."""
        return int(self.points.nbytes) * (self.copies - 1) // self.copies


def plan_table(n: int, budget_bytes: int, curve: Curve | str | None = None, bits: int = 255) -> tuple[int, int]:
    """(window, copies) for a table of n G1 bases in at most ``budget_bytes`` more device memory: the
    window and copy count minimising windows x n + BUCKET_COST x buckets x bucket sets (the cost model of
    :func:`choose_window`), the fewest copies among equal costs; (0, 1) when not one extra copy fits or
    the table would not beat the plain MSM's cost."""
    row = point_words(curve_of(curve), 1) * 8
    if n <= 0:
        return 0, 1
    max_copies = min(1 + budget_bytes // (n * row), (1 << 31) // n)  # entries index rows in 31 bits
    k_b = BUCKET_COST[1]
    plain = min(math.ceil((bits + 1) / c) * (n + k_b * (1 << (c - 1))) for c in range(4, 23))
    best, best_cost = (0, 1), plain
    for c in range(8, TABLE_MAX_WINDOW + 1):
        nwin = math.ceil((bits + 1) / c)
        for k in range(2, min(max_copies, nwin) + 1):
            cost = nwin * n + k_b * (1 << (c - 1)) * math.ceil(nwin / k)
            if cost < best_cost * 0.999:  # a copy must buy more than rounding
                best, best_cost = (c, k), cost
    return best


def build_table(bases: cupy.ndarray, window: int, copies: int, curve: Curve | str | None = None) -> BaseTable:
    """The table of ``copies`` copies of the G1 ``bases`` (device LEM points) for ``window``."""
    curve = curve_of(curve)
    n = int(bases.shape[0])
    words = point_words(curve, 1)
    op = f"precomputed table of {copies} x {n} G1 bases (window {window})"
    with op_errors(op):
        pts_ = cupy.empty((copies * n, words), dtype=cupy.uint64)
        pts_[:n] = bases
        scratch = cupy.empty((min(TABLE_BUILD_CHUNK, max(1, n)), 2 * words), dtype=cupy.uint64)
        for j in range(1, copies):
            for s in range(0, n, TABLE_BUILD_CHUNK):
                m = min(TABLE_BUILD_CHUNK, n - s)
                src = pts_[(j - 1) * n + s : (j - 1) * n + s + m]
                dst = pts_[j * n + s : j * n + s + m]
                _launch(
                    curve, "msm_table", "g1_table_double", grid_for(m, 128), 128, (src, u32(m), np.int32(window), scratch), op
                )
                runs = -(-m // TABLE_RUN)
                _launch(curve, "msm_table", "g1_table_affine", grid_for(runs, 128), 128, (scratch, u32(m), dst), op)
        del scratch
        synchronize(op)
    return BaseTable(pts_, n, copies, window)


def _poisoned(shape, dtype=cupy.uint64) -> cupy.ndarray:
    """cupy.empty, filled with 0xFF bytes with GpuConfig.poison (CUZK_GPU_POISON=1; tests: unwritten
    outputs show up)."""
    a = cupy.empty(shape, dtype=dtype)
    if config.current().poison:
        a.view(cupy.uint8).fill(0xFF)
    return a


def _launch(curve: Curve, *args) -> None:
    """A launch from the curve's build of the module."""
    launch(*args, curve=curve)


def _k(group: int, name: str) -> str:
    return f"g{group}_{name}"


def _xyzz_to_point(words: np.ndarray, group: int, curve: Curve):
    """One XYZZ point (Montgomery limbs) -> a point of the curve's library. x = X/ZZ, y = Y/ZZZ (R cancels)."""
    raw = words.astype("<u8").tobytes()
    k = curve.n8q
    Q = curve.q
    lib = curve.lib
    ints = [int.from_bytes(raw[k * i : k * (i + 1)], "little") for i in range(len(raw) // k)]
    if group == 1:
        X, Y, ZZ, ZZZ = ints
        if ZZ == 0:
            return lib.G1Point.identity()
        x = X * pow(ZZ, -1, Q) % Q
        y = Y * pow(ZZZ, -1, Q) % Q
        return pts.from_ints(curve, 1, (x, y), "GPU MSM result")
    X = ints[0:2]
    Y = ints[2:4]
    ZZ = ints[4:6]
    ZZZ = ints[6:8]
    if ZZ == [0, 0]:
        return lib.G2Point.identity()

    def inv2(a):
        n = (a[0] * a[0] + a[1] * a[1]) % Q
        ni = pow(n, -1, Q)
        return [a[0] * ni % Q, (-a[1]) * ni % Q]

    def mul2(a, b):
        return [(a[0] * b[0] - a[1] * b[1]) % Q, (a[0] * b[1] + a[1] * b[0]) % Q]

    x = mul2(X, inv2(ZZ))
    y = mul2(Y, inv2(ZZZ))
    return pts.from_ints(curve, 2, (x[0], x[1], y[0], y[1]), "GPU MSM result")


class _Profile:
    """Per-kernel CUDA-event timing of MSM phases with GpuConfig.msm_profile (CUZK_MSM_PROFILE=1; read by
    the benchmark)."""

    totals: ClassVar[dict[str, float]] = {}

    def __init__(self):
        self.on = config.current().msm_profile
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
    curve: Curve,
) -> tuple[cupy.ndarray, int]:
    """Even accumulation of bucket-sorted ``entries`` (``bounds``: total + 1 bucket offsets), then the
    tree rounds that combine each bucket's pieces; returns (partials, S): bucket b's sum is in slot
    b + bounds[b] // S (see bucket_value in kernels/msm_accumulate.cuh). ``max_count``: the largest bucket."""
    S = even_chunk(n_entries)
    nthreads = -(-n_entries // S)
    partials = _poisoned((total + nthreads, xyzz_words(curve, group)))  # slots b + t; the unused ones are never read
    first_bucket = _poisoned(nthreads, cupy.uint32)
    _launch(
        curve,
        "msm",
        _k(group, "accumulate_even"),
        grid_for(nthreads, 128),
        128,
        (bases, entries, bounds, u32(total), u32(n_entries), u32(S), partials, first_bucket),
        op,
    )
    prof.mark(mark)
    # a bucket's pieces: at most ceil(count / S) + 1 (one more when it starts inside a thread's range)
    max_pieces = -(-max_count // S) + 1
    step = 1
    while step < max_pieces:  # tree rounds over the pieces of the crowded buckets
        _launch(
            curve,
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
    """How the bases of scalars equal to one are summed, GpuConfig.msm_ones (CUZK_MSM_ONES): "compact"
    (indices of the ones compacted first, then the even accumulation over them as one bucket; the
    default: G1 0/1 2^26 66.8 -> 41.5 ms on the H200, 2026-12-03) or "masked" (grid-stride loop over all
    n points, adding where the flag says one: lanes of a warp idle where their point is not selected)."""
    return config.current().msm_ones


def _msm_chunk(
    group: int,
    bases: cupy.ndarray,
    scalars: cupy.ndarray,
    window: int | None,
    ones: bool,
    stats: MsmStats,
    curve: Curve,
    table: BaseTable | None = None,
    offset: int = 0,
) -> tuple[list, int, np.ndarray | None]:
    """One MSM on device arrays; returns ([(bucket-set sum XYZZ words, shift)], window, ones-sum words).
    With ``table`` (G1): ``bases`` are rows [offset, offset + n) of its copy 0."""
    n = scalars.shape[0]
    words = xyzz_words(curve, group)
    rb = REDUCE_BLOCK[group]
    prof = _Profile()
    mode, ones_how = accumulation_mode(), ones_mode()  # read once: the config may be replaced meanwhile
    op = f"G{group} MSM of {n} points"
    with op_errors(op):
        flags = _poisoned(max(1, n), cupy.uint8)
        cls = cupy.zeros(2, dtype=cupy.uint32)
        _launch(curve, "msm", "msm_classify", grid_for(n), BLOCK, (scalars, u32(n), np.int32(int(ones)), flags, cls), op)
        prof.mark("classify")
        n_other, bits = (int(x) for x in cupy.asnumpy(cls))
        extra = cupy.zeros((1, words), dtype=cupy.uint64)
        n_extra = 0
        ones_count = 0
        if ones and ones_how == "compact":
            idx = cupy.flatnonzero(flags[:n] == 1).astype(cupy.uint32)
            m = int(idx.size)
            if m:
                one_bucket = cupy.asarray(np.array([0, m], dtype=np.uint32))
                part, _ = _accumulate_even(group, bases, idx, one_bucket, 1, m, m, op, prof, "ones_accumulate", curve)
                extra = part[:1].copy()  # bucket 0's sum sits in slot 0; the pieces are freed now
                del part
                n_extra = 1
            del idx
            ones_count = m
            prof.mark("ones")
        elif ones:
            nblocks = max(1, min(grid_for(n, rb), 132 * 16))
            part = _poisoned((nblocks, words))
            _launch(curve, "msm", _k(group, "masked_sum"), nblocks, rb, (bases, flags, u32(n), np.uint8(1), part), op)
            _launch(curve, "msm", _k(group, "reduce"), 1, rb, (part, u32(nblocks), extra), op)
            n_extra = 1
            ones_count = cupy.count_nonzero(flags[:n] == 1)  # read at the end: no host sync here
            prof.mark("ones")
        stats.nonzero += n_other
        if n_other == 0:
            stats.ones += int(ones_count)
            prof.flush()
            return [], 0, cupy.asnumpy(extra)[0] if n_extra else None
        c = table.window if table is not None else window or choose_window(n_other, group, bits)
        nwin = max(1, -(-(bits + 1) // c))
        k = min(table.copies, nwin) if table is not None else 1  # windows per bucket set
        nset = -(-nwin // k)  # bucket sets: one per window without a table
        nb = 1 << (c - 1)
        total = nset * nb
        stats.window, stats.windows = c, nwin
        op = f"G{group} MSM of {n} points (window {c}{f', {k} table copies' if table is not None else ''})"
        counts = cupy.zeros(total, dtype=cupy.uint32)
        if table is not None:
            args = (scalars, flags, u32(n), np.int32(c), np.int32(nwin), np.int32(k), counts)
            _launch(curve, "msm_table", "table_count", grid_for(n), BLOCK, args, op)
        else:
            _launch(
                curve, "msm", "msm_count", grid_for(n), BLOCK, (scalars, flags, u32(n), np.int32(c), np.int32(nwin), counts), op
            )
        prof.mark("count")
        ends = cupy.cumsum(counts, dtype=cupy.uint64)
        n_entries = int(ends[-1])
        if n_entries >= 1 << 32:
            raise GpuOutOfMemory(f"{op}: {n_entries} bucket entries exceed the 32-bit index space")
        bounds = cupy.zeros(total + 1, dtype=cupy.uint32)  # bucket start offsets, the entry count appended
        bounds[1:] = ends
        del ends
        offsets = bounds[:total]
        even = mode == "even"
        if even:
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
        if table is not None:
            args = (scalars, flags, u32(n), np.int32(c), np.int32(nwin), np.int32(k), u32(table.n), u32(offset), cursor, entries)
            _launch(curve, "msm_table", "table_scatter", grid_for(n), BLOCK, args, op)
        else:
            _launch(
                curve,
                "msm",
                "msm_scatter",
                grid_for(n),
                BLOCK,
                (scalars, flags, u32(n), np.int32(c), np.int32(nwin), cursor, entries),
                op,
            )
        del cursor
        rows = table.points if table is not None else bases  # what the entries index
        if not even:
            item_start = _poisoned(max(1, nitems), cupy.uint32)
            item_len = _poisoned(max(1, nitems), cupy.uint32)
            _launch(
                curve,
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
        buckets = None if even else _poisoned((total, words))
        if even:
            partials, S = _accumulate_even(
                group, rows, entries, bounds, total, n_entries, max_count, op, prof, "accumulate", curve
            )
            del entries
            prof.mark("combine")
        else:
            partials = _poisoned((max(1, nitems), words))
            _launch(
                curve,
                "msm",
                _k(group, "accumulate"),
                grid_for(nitems, 128),
                128,
                (rows, entries, item_start, item_len, u32(nitems), partials),
                op,
            )
            del entries, item_start, item_len
            prof.mark("accumulate")
            _launch(
                curve,
                "msm",
                _k(group, "bucket_sum"),
                grid_for(total, 128),
                128,
                (partials, item_offsets, u32(total), buckets),
                op,
            )
            del partials, item_offsets
            prof.mark("bucket_sum")
        seg_log = min(SEGMENT_LOG, c - 1)
        nseg = nb >> seg_log
        segT = _poisoned((nset * nseg, words))
        segA = _poisoned((nset * nseg, words))
        if even:  # buckets summed from the accumulation's pieces inside the first reduction level
            _launch(
                curve,
                "msm",
                _k(group, "segments_even"),
                grid_for(nset * nseg, 64),
                64,
                (partials, bounds, u32(S), u32(nb), u32(1 << seg_log), u32(nseg), u32(nset), segT, segA),
                op,
            )
            del partials, bounds
        else:
            _launch(
                curve,
                "msm",
                _k(group, "segments"),
                grid_for(nset * nseg, 64),
                64,
                (buckets, u32(nb), u32(1 << seg_log), u32(nseg), u32(nset), segT, segA),
                op,
            )
        del buckets
        prof.mark("segments")
        G = max(1, -(-nseg // (rb * WINDOW_K)))
        partX = _poisoned((nset * G, words))
        partY = _poisoned((nset * G, words))
        _launch(
            curve,
            "msm",
            _k(group, "window_partial"),
            nset * G,
            rb,
            (segT, segA, u32(nseg), u32(WINDOW_K), u32(G), partX, partY),
            op,
        )
        del segT, segA
        win = _poisoned((nset, words))
        _launch(curve, "msm", _k(group, "window_final"), nset, rb, (partX, partY, u32(G), np.int32(seg_log), win), op)
        del partX, partY
        prof.mark("window")
        win_host = cupy.asnumpy(win)
        stats.ones += int(ones_count)
        prof.flush()
        return [(win_host[w], c * k * w) for w in range(nset)], c, cupy.asnumpy(extra)[0] if n_extra else None


def _combine(group: int, windows: list, extra, curve: Curve) -> object:
    """sum_w 2^(shift_w) W_w + extra on the host: one small MSM of the curve's library instead of ~255
    sequential doublings in a single GPU thread (measured 9 ms on the GPU for a G1 window combine)."""
    lib = curve.lib
    g = lib.G1Point if group == 1 else lib.G2Point
    pts_, sc = [], []
    for words_, shift in windows:
        pts_.append(_xyzz_to_point(words_, group, curve))
        sc.append(lib.Scalar((1 << shift) % curve.r))
    acc = g.multiexp_unchecked(pts_, sc) if pts_ else g.identity()
    if extra is not None:
        acc = acc + _xyzz_to_point(extra, group, curve)
    return acc


def msm(
    group: int,
    bases: cupy.ndarray,
    scalars: cupy.ndarray,
    window: int | None = None,
    ones: bool = True,
    chunk: int | None = None,
    stats: MsmStats | None = None,
    curve: Curve | str | None = None,
    table: BaseTable | None = None,
):
    """sum_i scalars[i] * bases[i] (scalars: device Montgomery Fr vector; bases: device LEM points),
    a point of the curve's CPU library. ``table``: precomputed multiples of these G1 bases (``bases`` is
    then ``table.bases``); its window replaces ``window``."""
    curve = curve_of(curve)
    if table is not None and (group != 1 or bases.data.ptr != table.points.data.ptr):
        raise ValueError("a precomputed table serves its own G1 bases only")
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
            parts.append(
                _msm_chunk(
                    group, bases[start : start + size], scalars[start : start + size], window, ones, stats, curve, table, start
                )
            )
            stats.chunks += 1
            start += size
        except GpuOutOfMemory:
            if size <= 1 << 12:
                raise
            cupy.get_default_memory_pool().free_all_blocks()
            chunk = size // 2  # out of memory: retry this range in halves
    synchronize(f"G{group} MSM of {n} points")
    lib = curve.lib
    acc = lib.G1Point.identity() if group == 1 else lib.G2Point.identity()
    for windows, _, extra in parts:
        acc = acc + _combine(group, windows, extra, curve)
    return acc


def upload_points(raw, group: int, curve: Curve | str | None = None) -> cupy.ndarray:
    """LEM point bytes -> device array of shape (n, point_words) uint64."""
    words = point_words(curve_of(curve), group)
    host = np.frombuffer(raw, dtype=np.uint64).reshape(-1, words)
    return cupy.asarray(host)


__all__ = [
    "BaseTable",
    "MsmStats",
    "build_table",
    "choose_window",
    "msm",
    "plan_table",
    "point_words",
    "upload_points",
    "xyzz_words",
]
