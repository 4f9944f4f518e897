"""NTTs on the GPU: the same transforms as :mod:`cuzk.field.ntt`, data staying on the device.

Every transform takes one vector (n, 4) or a batch (b, n, 4) transformed in the same launches (the
prover's a, b and c: one launch per pass instead of three).

The raw passes are DIF (natural -> bit-reversed) and DIT (bit-reversed -> natural); chaining an inverse
DIF, a coset scaling in bit-reversed index order and a forward DIT evaluates a polynomial given by its
values on the domain at a coset, with no bit-reversal pass at all (what the prover's H step needs).

Switches: GpuConfig.ntt_radix and ntt_plan (config.py). A domain belongs to a curve: its constants
come from the curve's scalar field and its kernels from the curve's build of the ntt module
(BLS12-381 when no curve is named, for the benchmarks' sake).
"""

from __future__ import annotations

import functools

import cupy
import numpy as np

from ...curves import Curve
from ...field.ntt import Domain as CpuDomain
from ...field.prime import PrimeField
from . import config
from .build import curve_of
from .runtime import BLOCK, grid_for, launch, op_errors, u32

TILE_LOG = 10  # stages per pass at most (2^10 elements, 32 KiB of shared memory)
COALESCE_LOG = 4  # consecutive low indices per tile row when the pass works on high bits
BR_BITS = 4  # the tiled bit reversal's tiles are 2^4 x 2^4 elements (ntt.cu, fr_bit_reverse_tiled)


def ntt_radix() -> int:
    """Butterfly stages per thread and barrier: 2 (one stage) or 4 (two stages, ntt_pass_r4);
    GpuConfig.ntt_radix (CUZK_NTT_RADIX). Radix 4 is the default: 3-6% faster from 2^25 to 2^28 (2^26
    37.1 -> 35.8 ms on the H200, 2026-12-03), equal or faster below 2^24, 3% slower at 2^24 itself."""
    return config.current().ntt_radix


def fused() -> bool:
    """GpuConfig.ntt_fused (CUZK_NTT_FUSED): the scalings folded into the tiled bit reversal and into the
    coset NTT's first pass. Off until measured on a device (built 2026-12-06 while none was lent)."""
    return config.current().ntt_fused


def plan_passes(log_n: int, dit: bool) -> list[tuple[int, int, int]]:
    """(lo, s, u) per pass: bits [lo, lo+s) of the index, 2^u consecutive low indices per tile row.

    Two plans (GpuConfig.ntt_plan, CUZK_NTT_PLAN; "auto", the default, picks per size by the H200
    measurements of 2026-12-04):
    "greedy" fills passes of TILE_LOG - COALESCE_LOG stages with u = COALESCE_LOG above a bottom pass of
    TILE_LOG bits and leaves the remainder to one pass; "balanced" shares the bits above the bottom pass
    evenly among as many passes, each with a full tile (u = TILE_LOG - s). Greedy leaves a pass of one to
    three stages in tiny blocks when log_n - 10 = 1..3 (mod 6): 2^23 iNTT + coset NTT 11.6 ms against
    7.8 ms balanced, 2^24 19.4 against 16.1; otherwise greedy is 1-3% faster (2^26 68.3 against 69.0)."""
    plan = config.current().ntt_plan
    step = TILE_LOG - COALESCE_LOG
    rest = max(0, log_n - TILE_LOG)
    if plan == "greedy" or (plan == "auto" and rest % step not in (1, 2, 3)):
        return _plan_greedy(log_n, dit)
    s0 = min(TILE_LOG, log_n)
    passes = [(0, s0, 0)]
    if rest:
        k = -(-rest // step)
        lo = s0
        for i in range(k):
            s = rest // k + (1 if i < rest % k else 0)
            passes.append((lo, s, min(lo, TILE_LOG - s)))
            lo += s
    return passes if dit else passes[::-1]


def _plan_greedy(log_n: int, dit: bool) -> list[tuple[int, int, int]]:
    """The greedy plan (the only one before 2026-12-04): DIT bottom-up, DIF top-down, each filling its
    passes first, so the DIF's remainder falls to its bottom pass."""
    passes = []
    if dit:
        lo = 0
        while lo < log_n:
            u = min(lo, COALESCE_LOG)
            s = min(TILE_LOG - u, log_n - lo)
            passes.append((lo, s, u))
            lo += s
    else:
        hi = log_n
        while hi > 0:
            if hi <= TILE_LOG:
                s, u = hi, 0
            else:
                u = COALESCE_LOG
                s = min(TILE_LOG - u, hi - u)
            passes.append((hi - s, s, u))
            hi -= s
    return passes


def _split_powers(fr: PrimeField, g: int, n: int, start: int = 1) -> tuple[cupy.ndarray, cupy.ndarray, int]:
    """Tables lo[j] = start g^j (j < 2^b) and hi[k] = g^(k 2^b) so that start g^e = lo[e & mask] * hi[e >> b]."""
    b = max(1, (max(1, n).bit_length() + 1) // 2)
    lo = fr.powers(g, 1 << b, start)
    hi = fr.powers(pow(g, 1 << b, fr.p), max(1, -(-n >> b)))
    return cupy.asarray(lo), cupy.asarray(hi), b


def power_table(g: int, n: int, curve: Curve | str | None = None, start: int = 1) -> cupy.ndarray:
    """[start g^i for i < n] on the device (Montgomery)."""
    c = curve_of(curve)
    lo, hi, b = _split_powers(c.fr, g, n, start)
    out = cupy.empty((n, 4), dtype=cupy.uint64)
    launch("ntt", "fr_power_table", grid_for(n), BLOCK, (out, u32(n), lo, hi, u32(b)), "power table", curve=c)
    return out


class GpuDomain:
    """Domain of size 2^log_n from ``generator`` with twiddle tables resident on the device."""

    def __init__(self, log_n: int, generator: int | None = None, curve: Curve | str | None = None):
        self.curve = curve_of(curve)
        self.fr = self.curve.fr
        generator = self.curve.root_generator if generator is None else generator
        cpu = CpuDomain(self.fr, log_n, generator)  # the constants (its twiddle tables are lazy: not built here)
        self.log_n, self.size, self.generator = cpu.log_n, cpu.size, cpu.generator
        self.omega, self.omega_inv, self.size_inv = cpu.omega, cpu.omega_inv, cpu.size_inv
        half = max(1, self.size // 2)
        self._scale_tables: dict[tuple[int, int], tuple] = {}  # (g, scale) -> device tables of scale * g^e
        with op_errors(f"NTT 2^{log_n} twiddle tables"):
            self.tw = self._table(self.omega, half)
            self.tw_inv = self._table(self.omega_inv, half)

    def _launch(self, *args) -> None:
        launch("ntt", *args, curve=self.curve)

    def _table(self, g: int, n: int) -> cupy.ndarray:
        return power_table(g, n, self.curve)

    def _check(self, a: cupy.ndarray) -> int:
        """Validate one vector (n, 4) or a batch (b, n, 4) of vectors; returns the batch size."""
        ok_shape = a.shape[-2:] == (self.size, 4) and a.ndim in (2, 3)
        if not ok_shape or a.dtype != cupy.uint64 or not a.flags.c_contiguous:
            raise ValueError(
                f"expected a contiguous device Fr vector of shape ([batch,] {self.size}, 4), got {a.shape} {a.dtype}"
            )
        return 1 if a.ndim == 2 else a.shape[0]

    def _passes(self, a: cupy.ndarray, dit: bool, inverse: bool, scale: tuple | None = None) -> None:
        """The passes of one transform; ``scale`` (a _scale_table) multiplies element i by its entry at
        bitrev(i) as the first pass loads it (data in bit-reversed order: the DIT of evals_to_coset with
        GpuConfig.ntt_fused)."""
        tw = self.tw_inv if inverse else self.tw
        batch = self._check(a)
        op = f"NTT 2^{self.log_n} x{batch} ({'DIT' if dit else 'DIF'}{', inverse' if inverse else ''})"
        radix4 = ntt_radix() == 4
        for lo, s, u in plan_passes(self.log_n, dit):
            grid = (1 << (self.log_n - s - u), batch)
            kernel, block = ("ntt_pass_r4", 1 << (s + u - 2)) if radix4 and s >= 2 else ("ntt_pass", 1 << (s + u - 1))
            args = (a, tw, u32(self.log_n), u32(lo), u32(s), u32(u), u32(int(dit)), np.uint64(self.size))
            if scale is not None:
                kernel, args = kernel + "_scaled", args + (scale[0], scale[1], u32(scale[2]))
            self._launch(kernel, grid, block, args, op)
            scale = None  # the first pass only

    def _scale_table(self, g: int, scale: int) -> tuple:
        """Device tables for scale * g^e (see _split_powers), cached per (g, scale)."""
        R = self.fr.p
        key = (g % R, scale % R)
        cached = self._scale_tables.get(key)
        if cached is None:
            if len(self._scale_tables) >= 32:  # callers with ever new factors must not grow it without bound
                self._scale_tables.clear()
            cached = self._scale_tables[key] = _split_powers(self.fr, key[0], self.size, key[1])
        return cached

    def bit_reverse(self, a: cupy.ndarray, g: int | None = None, scale: int = 1) -> None:
        """Bit-reversal permutation, then, when ``g`` is given, a[j] *= scale * g^j (natural order). With
        GpuConfig.ntt_fused and from 2^8 up one pass by 16 x 16 tiles (fr_bit_reverse_tiled) that scales on
        the way; else the scattered swap (fr_bit_reverse), then a scaling pass."""
        batch = self._check(a)
        what = f"bit reversal 2^{self.log_n}"
        if not fused() or self.log_n < 2 * BR_BITS:
            if self.log_n:
                self._launch(
                    "fr_bit_reverse", (grid_for(self.size), batch), BLOCK, (a, u32(self.log_n), np.uint64(self.size)), what
                )
            if g is not None:
                self.scale_powers(a, g, scale)
            return
        if g is None:
            mode, (lo, hi, b) = 0, (self.tw, self.tw, 0)  # tables unread
        else:
            mode, (lo, hi, b) = (1 if g % self.fr.p == 1 else 2), self._scale_table(g, scale)
        self._launch(
            "fr_bit_reverse_tiled",
            (1 << (self.log_n - 2 * BR_BITS), batch),
            1 << (2 * BR_BITS),
            (a, u32(self.log_n), u32(mode), lo, hi, u32(b), np.uint64(self.size)),
            what,
        )

    def scale_powers(self, a: cupy.ndarray, g: int, scale: int = 1, reversed_order: bool = False) -> None:
        """a[i] *= scale * g^idx (idx = bitrev(i) if the data is in bit-reversed order)."""
        lo, hi, b = self._scale_table(g, scale)
        self._launch(
            "fr_scale_powers",
            (grid_for(self.size), self._check(a)),
            BLOCK,
            (a, u32(self.size), u32(self.log_n), u32(int(reversed_order)), lo, hi, u32(b), np.uint64(self.size)),
            f"coset scaling 2^{self.log_n}",
        )

    # natural-order transforms (same contract as cuzk.field.ntt.Domain), in place
    def ntt(self, a: cupy.ndarray) -> cupy.ndarray:
        self._check(a)
        if self.log_n:
            self.bit_reverse(a)
            self._passes(a, dit=True, inverse=False)
        return a

    def intt(self, a: cupy.ndarray) -> cupy.ndarray:
        self._check(a)
        if self.log_n:
            self._passes(a, dit=False, inverse=True)
        self.bit_reverse(a, 1, self.size_inv)
        return a

    def coset_ntt(self, a: cupy.ndarray, shift: int) -> cupy.ndarray:
        self._check(a)
        self.scale_powers(a, shift)
        return self.ntt(a)

    def coset_intt(self, a: cupy.ndarray, shift: int, scale: int = 1) -> cupy.ndarray:
        """Coefficients (natural order) times ``scale`` of the polynomial given by its values on the coset
        shift * domain (the prover folds the vanishing polynomial's inverse into ``scale``)."""
        self._check(a)
        if self.log_n:
            self._passes(a, dit=False, inverse=True)
        g, s = pow(shift, -1, self.fr.p), self.size_inv * scale
        if fused():
            self.bit_reverse(a, g, s)
        else:  # the sequence measured before ntt_fused
            self.scale_powers(a, g, s, reversed_order=True)
            self.bit_reverse(a)
        return a

    def evals_to_coset(self, a: cupy.ndarray, shift: int) -> cupy.ndarray:
        """Values on the domain -> values on shift * domain (iNTT, scale, NTT; no bit reversal; with
        GpuConfig.ntt_fused the scaling rides on the NTT's first pass)."""
        self._check(a)
        if not self.log_n:
            self.scale_powers(a, shift, self.size_inv)
            return a
        self._passes(a, dit=False, inverse=True)
        if fused():  # scaled as the DIT's first pass loads it
            self._passes(a, dit=True, inverse=False, scale=self._scale_table(shift, self.size_inv))
        else:
            self.scale_powers(a, shift, self.size_inv, reversed_order=True)
            self._passes(a, dit=True, inverse=False)
        return a


@functools.lru_cache(maxsize=8)
def _domain_cached(dev: int, log_n: int, generator: int, curve: str) -> GpuDomain:
    return GpuDomain(log_n, generator, curve)


def domain(log_n: int, generator: int | None = None, curve: Curve | str | None = None) -> GpuDomain:
    """The device's shared domain of 2^log_n from ``generator`` (the curve's snarkjs generator by default)."""
    c = curve_of(curve)
    return _domain_cached(cupy.cuda.Device().id, log_n, c.root_generator if generator is None else generator, c.name)
