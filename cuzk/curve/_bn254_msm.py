"""BN254 multi-scalar multiplication and fixed-base multiplication (numba kernels + thread driver).

MSM: Pippenger with signed c-bit digits (2^(c-1) buckets per window; the number of windows follows
the largest scalar's bit length, so 0/1/small scalars cost one or two windows). Scalars are recoded
once into a (windows, k) int32 digit array; each window (or window x point chunk) is an independent
task taken from a shared counter by ``threads`` workers, the caller's thread being one of them; window
sums are combined by Horner's rule. Buckets accumulate in affine coordinates, additions batched over
distinct buckets with one shared inversion (:func:`k_window_ba`); small windows use Jacobian buckets
and mixed additions (:func:`k_window`). Then the running-sum reduction in Jacobian coordinates.

Fixed-base: a table of signed window multiples of the base, rows accumulated in affine coordinates
window by window with one inversion per window and chunk (:func:`k_fb_mul_ba`).

Kernels release the GIL. Measurements and what was tried: NOTES.md, "BN254 CPU point library".
"""

from __future__ import annotations

import math
import os
import threading
from concurrent.futures import ThreadPoolExecutor

import numba as nb
import numpy as np

from ._bn254_curve import jac_add, jac_dbl, jac_identity, jac_madd, jac_rows_to_affine, witness
from ._bn254_field import fadd, fdbl, feq, finv, fis_zero, fload, fmul, fneg, fone, fsqr, fstore, fsub, fwords

_Z = np.uint64(0)

# ---------------------------------------------------------------------------------------------
# kernels


@nb.njit(nogil=True, cache=True)
def k_max_bits(scalars, k):
    """Bit length of the largest of k canonical 4-limb scalars."""
    o3 = o2 = o1 = o0 = _Z
    for i in range(k):
        o0 |= scalars[i, 0]
        o1 |= scalars[i, 1]
        o2 |= scalars[i, 2]
        o3 |= scalars[i, 3]
    for limb, top in ((3, o3), (2, o2), (1, o1), (0, o0)):
        if top != _Z:
            b = 0
            v = top
            while v != _Z:
                v >>= np.uint64(1)
                b += 1
            return 64 * limb + b
    return 0


@nb.njit(nogil=True, cache=True)
def k_digits(scalars, k, c, out):
    """Signed base-2^c digits of canonical 4-limb scalars: out[j, i] in (-2^(c-1), 2^(c-1)],
    sum_j out[j, i] 2^(c j) = scalars[i]. With rows * c > the scalars' bit length the top digit never
    carries out (its value is at most 2^(c-1))."""
    nw = out.shape[0]
    half = 1 << (c - 1)
    mask = (1 << c) - 1
    for i in range(k):
        carry = 0
        for j in range(nw):
            bit = j * c
            limb = bit >> 6
            off = bit & 63
            v = 0
            if limb < 4:
                v = np.int64((scalars[i, limb] >> np.uint64(off)) & np.uint64(mask))
                if off + c > 64 and limb < 3:
                    v |= np.int64((scalars[i, limb + 1] << np.uint64(64 - off)) & np.uint64(mask))
            v += carry
            if v > half:
                v -= 1 << c
                carry = 1
            else:
                carry = 0
            out[j, i] = v


@nb.njit(nogil=True, cache=True)
def k_window(w, bases, digits, j, lo, hi, buckets, out, orow):
    """Window j over points lo..hi: sum_b (b + 1) * bucket_b into out[orow] (Jacobian)."""
    k = fwords(w)
    nb_ = buckets.shape[0]
    for b in range(nb_):
        for t in range(2 * k, 3 * k):
            buckets[b, t] = _Z
    for i in range(lo, hi):
        d = digits[j, i]
        if d == 0:
            continue
        x = fload(w, bases, i, 0)
        y = fload(w, bases, i, k)
        if fis_zero(x) and fis_zero(y):
            continue
        if d < 0:
            y = fneg(y)
            d = -d
        b = d - 1
        X, Y, Z = jac_madd(fload(w, buckets, b, 0), fload(w, buckets, b, k), fload(w, buckets, b, 2 * k), x, y)
        fstore(buckets, b, 0, X)
        fstore(buckets, b, k, Y)
        fstore(buckets, b, 2 * k, Z)
    rx, ry, rz = jac_identity(w)
    tx, ty, tz = rx, ry, rz
    for b in range(nb_ - 1, -1, -1):
        bz = fload(w, buckets, b, 2 * k)
        if not fis_zero(bz):
            rx, ry, rz = jac_add(rx, ry, rz, fload(w, buckets, b, 0), fload(w, buckets, b, k), bz)
        tx, ty, tz = jac_add(tx, ty, tz, rx, ry, rz)
    fstore(out, orow, 0, tx)
    fstore(out, orow, k, ty)
    fstore(out, orow, 2 * k, tz)


@nb.njit(nogil=True, cache=True)
def _ba_flush(w, bases, bucket, bset, bb, bp, bneg, cnt, den, pref):
    """Apply the cnt scheduled additions bucket[bb[t]] += +-bases[bp[t]] in affine coordinates, with one
    field inversion for all (Montgomery's trick). Buckets are distinct within a batch. Doubling
    (P + P) and cancelling (P + -P) are handled; a cancelled bucket becomes empty."""
    k = fwords(w)
    one = fone(w)
    acc = one
    for t in range(cnt):
        b = bb[t]
        x1 = fload(w, bucket, b, 0)
        x2 = fload(w, bases, bp[t], 0)
        d = fsub(x2, x1)
        if fis_zero(d):
            y1 = fload(w, bucket, b, k)
            y2 = fload(w, bases, bp[t], k)
            if bneg[t]:
                y2 = fneg(y2)
            d = fdbl(y1) if feq(y1, y2) else one
        fstore(den, t, 0, d)
        fstore(pref, t, 0, acc)
        acc = fmul(acc, d)
    inv = finv(acc)
    for t in range(cnt - 1, -1, -1):
        b = bb[t]
        d = fload(w, den, t, 0)
        dinv = fmul(inv, fload(w, pref, t, 0))
        inv = fmul(inv, d)
        x1 = fload(w, bucket, b, 0)
        y1 = fload(w, bucket, b, k)
        x2 = fload(w, bases, bp[t], 0)
        y2 = fload(w, bases, bp[t], k)
        if bneg[t]:
            y2 = fneg(y2)
        dx = fsub(x2, x1)
        if fis_zero(dx):
            if not feq(y1, y2):
                bset[b] = 0
                continue
            xx = fsqr(x1)
            lam = fmul(fadd(fdbl(xx), xx), dinv)
        else:
            lam = fmul(fsub(y2, y1), dinv)
        x3 = fsub(fsub(fsqr(lam), x1), x2)
        y3 = fsub(fmul(lam, fsub(x1, x3)), y1)
        fstore(bucket, b, 0, x3)
        fstore(bucket, b, k, y3)


@nb.njit(nogil=True, cache=True)
def k_window_ba(
    w, bases, digits, j, lo, hi, bucket, bset, busy, bjac, bb, bp, bneg, den, pref, dq_i, dq_d, rq_i, rq_d, out, orow
):
    """Window j over points lo..hi with batch-affine bucket accumulation: additions are collected into
    batches of distinct buckets (len(bb)) and applied with one shared inversion (~6 products per
    addition against 11 for a mixed Jacobian addition). A point whose bucket is already in the batch is
    deferred to the next batch (queue dq_*, replayed from rq_* after the flush); when the queue is full,
    or a replayed point conflicts again, it goes into the bucket's Jacobian accumulator bjac instead, so
    no input order can stall the batches. Then sum_b (b + 1) * bucket_b into out[orow] (Jacobian).

    The per-point work stays in this function's body: a helper taking the arrays was a call per point
    with an atomic reference-count increment and decrement per array argument, which cost more (~60 ns
    a point) than the scheduling itself."""
    k = fwords(w)
    nb_ = bucket.shape[0]
    cap = bb.shape[0]
    dcap = dq_i.shape[0]
    for b in range(nb_):
        bset[b] = 0
        busy[b] = -1
        for t in range(2 * k, 3 * k):
            bjac[b, t] = _Z
    epoch = 0
    cnt = 0
    nd = 0  # deferred points waiting for the next batch
    nr = 0  # replayed points (deferred before the last flush)
    tr = 0
    i = lo
    while True:
        if tr < nr:
            pi = rq_i[tr]
            d = rq_d[tr]
            tr += 1
            replay = True
        elif i < hi:
            pi = i
            d = digits[j, i]
            i += 1
            if d == 0:
                continue
            if fis_zero(fload(w, bases, pi, 0)) and fis_zero(fload(w, bases, pi, k)):
                continue
            replay = False
        elif cnt > 0 or nd > 0:
            # drain: flush the open batch, then replay what was deferred
            if cnt > 0:
                _ba_flush(w, bases, bucket, bset, bb, bp, bneg, cnt, den, pref)
                cnt = 0
                epoch += 1
            for t in range(nd):
                rq_i[t] = dq_i[t]
                rq_d[t] = dq_d[t]
            nr = nd
            tr = 0
            nd = 0
            continue
        else:
            break
        neg = d < 0
        b = (-d if neg else d) - 1
        if bset[b] == 0:
            y = fload(w, bases, pi, k)
            fstore(bucket, b, 0, fload(w, bases, pi, 0))
            fstore(bucket, b, k, fneg(y) if neg else y)
            bset[b] = 1
            continue
        if busy[b] == epoch:
            if not replay and nd < dcap:
                dq_i[nd] = pi
                dq_d[nd] = d
                nd += 1
            else:
                y = fload(w, bases, pi, k)
                X, Y, Z = jac_madd(
                    fload(w, bjac, b, 0),
                    fload(w, bjac, b, k),
                    fload(w, bjac, b, 2 * k),
                    fload(w, bases, pi, 0),
                    fneg(y) if neg else y,
                )
                fstore(bjac, b, 0, X)
                fstore(bjac, b, k, Y)
                fstore(bjac, b, 2 * k, Z)
            continue
        busy[b] = epoch
        bb[cnt] = b
        bp[cnt] = pi
        bneg[cnt] = neg
        cnt += 1
        if cnt == cap:
            _ba_flush(w, bases, bucket, bset, bb, bp, bneg, cnt, den, pref)
            cnt = 0
            epoch += 1
            if tr >= nr:  # start replaying the deferred points (unless a replay is under way)
                for t in range(nd):
                    rq_i[t] = dq_i[t]
                    rq_d[t] = dq_d[t]
                nr = nd
                tr = 0
                nd = 0
    # reduction: running sum from the top bucket
    rx, ry, rz = jac_identity(w)
    tx, ty, tz = rx, ry, rz
    for b in range(nb_ - 1, -1, -1):
        if bset[b]:
            rx, ry, rz = jac_madd(rx, ry, rz, fload(w, bucket, b, 0), fload(w, bucket, b, k))
        bz = fload(w, bjac, b, 2 * k)
        if not fis_zero(bz):
            rx, ry, rz = jac_add(rx, ry, rz, fload(w, bjac, b, 0), fload(w, bjac, b, k), bz)
        tx, ty, tz = jac_add(tx, ty, tz, rx, ry, rz)
    fstore(out, orow, 0, tx)
    fstore(out, orow, k, ty)
    fstore(out, orow, 2 * k, tz)


@nb.njit(nogil=True, cache=True)
def k_combine(w, sums, nw, chunks, c, out):
    """out[0] = sum_j 2^(c j) * (sum over chunks of sums[j * chunks + t])."""
    k = fwords(w)
    ax, ay, az = jac_identity(w)
    for j in range(nw - 1, -1, -1):
        for _ in range(c):
            ax, ay, az = jac_dbl(ax, ay, az)
        for t in range(chunks):
            r = j * chunks + t
            ax, ay, az = jac_add(ax, ay, az, fload(w, sums, r, 0), fload(w, sums, r, k), fload(w, sums, r, 2 * k))
    fstore(out, 0, 0, ax)
    fstore(out, 0, k, ay)
    fstore(out, 0, 2 * k, az)


# ---------------------------------------------------------------------------------------------
# driver


def cpu_count() -> int:
    env = os.environ.get("CUZK_CPU_THREADS")
    if env:
        return max(1, int(env))
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def _get_pool() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=max(2, cpu_count()), thread_name_prefix="cuzk-bn254")
        return _pool


def run_tasks(fn, ntasks: int, threads: int) -> None:
    """fn(t) for t in range(ntasks) on `threads` workers (the caller is one of them); tasks are taken in
    order from a shared counter, so uneven tasks balance. Exceptions propagate."""
    threads = max(1, min(threads, ntasks))
    if threads == 1:
        for t in range(ntasks):
            fn(t)
        return
    lock = threading.Lock()
    nxt = [0]

    def worker():
        while True:
            with lock:
                t = nxt[0]
                nxt[0] += 1
            if t >= ntasks:
                return
            fn(t)

    futs = [_get_pool().submit(worker) for _ in range(threads - 1)]
    worker()
    for f in futs:
        f.result()


def window_bits(k: int, bits: int = 254) -> int:
    """Window size for k scalars of at most `bits` bits: minimises windows * (k bucket additions +
    the bucket reduction, 2^(c-1) mixed and 2^(c-1) full additions ~ 1.2 * 2^c bucket additions)."""
    best, best_c = None, 2
    for c in range(2, 21):
        cost = math.ceil((bits + 1) / c) * (k + 1.2 * (1 << c))
        if best is None or cost < best:
            best, best_c = cost, c
    return best_c


BATCH_AFFINE = True  # batch-affine bucket accumulation (k_window_ba) where a window has many points
BA_BATCH = None  # additions per shared inversion; None: a quarter of the buckets, within [128, 512]
BA_MIN_POINTS = 1024


def ba_batch(nb_: int) -> int:
    return BA_BATCH or min(512, max(128, nb_ // 4))


def _ba_scratch(nb_: int, words: int, batch: int) -> tuple:
    return (
        np.empty((nb_, 2 * words), dtype=np.uint64),  # affine buckets
        np.empty(nb_, dtype=np.uint8),  # bucket set
        np.empty(nb_, dtype=np.int64),  # epoch of the batch holding the bucket
        np.empty((nb_, 3 * words), dtype=np.uint64),  # Jacobian overflow accumulators
        np.empty(batch, dtype=np.int64),  # batch: bucket
        np.empty(batch, dtype=np.int64),  # batch: point
        np.empty(batch, dtype=np.bool_),  # batch: negated
        np.empty((batch, words), dtype=np.uint64),  # denominators
        np.empty((batch, words), dtype=np.uint64),  # prefix products
        np.empty(batch, dtype=np.int64),  # deferred: point
        np.empty(batch, dtype=np.int64),  # deferred: digit
        np.empty(batch, dtype=np.int64),  # replay: point
        np.empty(batch, dtype=np.int64),  # replay: digit
    )


def msm_jacobian(group: int, bases: np.ndarray, scalars: np.ndarray, threads: int | None = None, c: int | None = None):
    """sum_i scalars[i] * bases[i] as a (1, 3 * words) Jacobian row."""
    w = witness(group)
    words = 4 if group == 1 else 8
    k = scalars.shape[0]
    out = np.zeros((1, 3 * words), dtype=np.uint64)
    if k == 0:
        return jacobian_identity(group)
    if bases.shape[0] < k:
        raise ValueError(f"msm: {k} scalars but only {bases.shape[0]} bases")
    threads = cpu_count() if threads is None else max(1, int(threads))
    scalars = np.ascontiguousarray(scalars, dtype=np.uint64)
    bits = k_max_bits(scalars, k)
    if bits == 0:
        return jacobian_identity(group)
    c = c or window_bits(k, bits)
    nw = -(-(bits + 1) // c)
    digits = np.empty((nw, k), dtype=np.int32)
    k_digits(scalars, k, c, digits)
    # split points too when there are few windows for many threads
    chunks = 1
    if threads > 1 and nw < 2 * threads and k >= 4096:
        chunks = min(-(-2 * threads // nw), max(1, k // 2048))
    step = -(-k // chunks)
    sums = np.empty((nw * chunks, 3 * words), dtype=np.uint64)
    nb_ = 1 << (c - 1)
    use_ba = BATCH_AFFINE and step >= BA_MIN_POINTS
    local = threading.local()

    def task(t):
        j, ch = divmod(t, chunks)
        lo, hi = ch * step, min(k, (ch + 1) * step)
        if use_ba:
            s = getattr(local, "s", None)
            if s is None:
                s = local.s = _ba_scratch(nb_, words, ba_batch(nb_))
            k_window_ba(w, bases, digits, j, lo, hi, *s, sums, t)
        else:
            buckets = getattr(local, "b", None)
            if buckets is None:
                buckets = local.b = np.empty((nb_, 3 * words), dtype=np.uint64)
            k_window(w, bases, digits, j, lo, hi, buckets, sums, t)

    run_tasks(task, nw * chunks, threads)
    k_combine(w, sums, nw, chunks, c, out)
    return out


def jacobian_identity(group: int) -> np.ndarray:
    out = np.zeros((1, 12 if group == 1 else 24), dtype=np.uint64)
    k_set_identity(witness(group), out)
    return out


@nb.njit(cache=True)
def k_set_identity(w, out):
    X, Y, Z = jac_identity(w)
    k = fwords(w)
    fstore(out, 0, 0, X)
    fstore(out, 0, k, Y)
    fstore(out, 0, 2 * k, Z)


# ---------------------------------------------------------------------------------------------
# fixed-base multiplication: scalars[i] * P for one base P and many scalars


@nb.njit(nogil=True, cache=True)
def k_fb_table(w, base, c, nw, tjac, table, scratch):
    """table[j * h + e] = (e + 1) * 2^(c j) * P as affine rows (h = 2^(c-1)), P = base[0] (affine,
    not the identity); tjac is (nw * h, 3 words) scratch."""
    k = fwords(w)
    h = 1 << (c - 1)
    one = fone(w)
    bx, by, bz = fload(w, base, 0, 0), fload(w, base, 0, k), one
    for j in range(nw):
        ax, ay, az = bx, by, bz
        for e in range(h):
            r = j * h + e
            fstore(tjac, r, 0, ax)
            fstore(tjac, r, k, ay)
            fstore(tjac, r, 2 * k, az)
            ax, ay, az = jac_add(ax, ay, az, bx, by, bz)
        for _ in range(c):
            bx, by, bz = jac_dbl(bx, by, bz)
    jac_rows_to_affine(w, tjac, table, 0, nw * h, scratch)


@nb.njit(nogil=True, cache=True)
def k_fb_mul(w, table, c, digits, lo, hi, jac, out, scratch):
    """out[lo:hi] = affine rows of sum_j digits[j, i] * table-window j (jac, scratch: row scratch)."""
    k = fwords(w)
    h = 1 << (c - 1)
    nw = digits.shape[0]
    for i in range(lo, hi):
        ax, ay, az = jac_identity(w)
        for j in range(nw):
            d = digits[j, i]
            if d == 0:
                continue
            neg = d < 0
            if neg:
                d = -d
            r = j * h + d - 1
            x = fload(w, table, r, 0)
            y = fload(w, table, r, k)
            if neg:
                y = fneg(y)
            ax, ay, az = jac_madd(ax, ay, az, x, y)
        fstore(jac, i, 0, ax)
        fstore(jac, i, k, ay)
        fstore(jac, i, 2 * k, az)
    jac_rows_to_affine(w, jac, out, lo, hi, scratch)


@nb.njit(nogil=True, cache=True)
def k_fb_mul_ba(w, table, c, digits, lo, hi, out, oset, bb, bp, bneg, den, pref):
    """out[lo:hi] = affine rows of sum_j digits[j, i] * table-window j, accumulated in affine
    coordinates: window by window, the additions of all rows share one inversion (no conflicts: each
    row is its own accumulator), and the rows come out affine with no final normalisation."""
    k = fwords(w)
    h = 1 << (c - 1)
    nw = digits.shape[0]
    for i in range(lo, hi):
        oset[i] = 0
    for j in range(nw):
        cnt = 0
        for i in range(lo, hi):
            d = digits[j, i]
            if d == 0:
                continue
            neg = d < 0
            r = j * h + (-d if neg else d) - 1
            if oset[i] == 0:
                y = fload(w, table, r, k)
                fstore(out, i, 0, fload(w, table, r, 0))
                fstore(out, i, k, fneg(y) if neg else y)
                oset[i] = 1
                continue
            bb[cnt] = i
            bp[cnt] = r
            bneg[cnt] = neg
            cnt += 1
        if cnt:
            _ba_flush(w, table, out, oset, bb, bp, bneg, cnt, den, pref)
    for i in range(lo, hi):
        if oset[i] == 0:
            for t in range(2 * k):
                out[i, t] = _Z


FB_BATCH_AFFINE = True


def fb_window_bits(n: int, bits: int = 254, group: int = 1) -> int:
    """Table window for n scalars: minimises windows * (n additions + building 2^(c-1) table rows),
    with one window of the table (2^(c-1) affine rows) held to 64 KiB: the additions read random rows
    of it, and larger windows measured slower despite fewer additions (G1 2^16: c = 13 257 ms,
    c = 11 228 ms; G2: c = 12 670 ms, c = 10 634 ms; 1 thread)."""
    cmax = 11 if group == 1 else 10
    best, best_c = None, 2
    for c in range(2, cmax + 1):
        nw = math.ceil((bits + 1) / c)
        cost = nw * (n + 1.5 * (1 << (c - 1)))
        if best is None or cost < best:
            best, best_c = cost, c
    return best_c


def fixed_base(group: int, base_affine: np.ndarray, scalars: np.ndarray, threads: int | None = None, c: int | None = None):
    """Affine Montgomery rows (n, 2 words) of scalars[i] * P, P = base_affine[0] (identity -> zeros)."""
    w = witness(group)
    words = 4 if group == 1 else 8
    n = scalars.shape[0]
    out = np.zeros((n, 2 * words), dtype=np.uint64)
    if n == 0 or not base_affine.any():
        return out
    scalars = np.ascontiguousarray(scalars, dtype=np.uint64)
    bits = k_max_bits(scalars, n)
    if bits == 0:
        return out
    threads = cpu_count() if threads is None else max(1, int(threads))
    c = c or fb_window_bits(n, bits, group)
    nw = -(-(bits + 1) // c)
    h = 1 << (c - 1)
    table = np.empty((nw * h, 2 * words), dtype=np.uint64)
    k_fb_table(
        w, base_affine, c, nw, np.empty((nw * h, 3 * words), dtype=np.uint64), table, np.empty((nw * h, words), dtype=np.uint64)
    )
    digits = np.empty((nw, n), dtype=np.int32)
    k_digits(scalars, n, c, digits)
    chunk = 1024
    ntasks = -(-n // chunk)
    local = threading.local()
    if FB_BATCH_AFFINE:
        oset = np.empty(n, dtype=np.uint8)

        def task(t):
            s = getattr(local, "s", None)
            if s is None:
                s = local.s = (
                    np.empty(chunk, dtype=np.int64),
                    np.empty(chunk, dtype=np.int64),
                    np.empty(chunk, dtype=np.bool_),
                    np.empty((chunk, words), dtype=np.uint64),
                    np.empty((chunk, words), dtype=np.uint64),
                )
            k_fb_mul_ba(w, table, c, digits, t * chunk, min(n, (t + 1) * chunk), out, oset, *s)
    else:
        jac = np.empty((n, 3 * words), dtype=np.uint64)

        def task(t):
            scratch = getattr(local, "s", None)
            if scratch is None:
                scratch = local.s = np.empty((chunk, words), dtype=np.uint64)
            k_fb_mul(w, table, c, digits, t * chunk, min(n, (t + 1) * chunk), jac, out, scratch)

    run_tasks(task, ntasks, threads)
    return out
