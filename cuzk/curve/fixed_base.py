"""Fixed-base scalar multiplication with arkworks objects (many scalars, one base): key generation.

arkworks' ``point * scalar`` costs ~220 us (G1) / ~700 us (G2) here; a table of the 32 byte-window
multiples j * 256^k * P (8192 points, built once per base) turns each product into at most 32
additions of ~1.2 us (G1) / ~3.4 us (G2), 5-6x faster (NOTES.md, "dev setup"). The additions are
still library calls; results are returned as LEM bytes, ready for a zkey or the GPU. Works with any
library whose points have ``+`` and ``identity()`` (the BN254 library has a faster numba version).
"""

from __future__ import annotations

import numpy as np

from ..curves import Curve
from . import points as pts

try:
    from tqdm import tqdm
except ImportError:  # pragma: no cover - tqdm is a pinned dependency
    tqdm = None


class FixedBase:
    def __init__(self, base):
        self.group = type(base)
        self.table: list[list] = []
        p = base
        for _ in range(32):
            row = [self.group.identity(), p]
            for _ in range(254):
                row.append(row[-1] + p)
            self.table.append(row)
            p = row[-1] + p  # 256 * p

    def mul_canonical(self, canon: np.ndarray, progress: str | None = None) -> list:
        """Points scalar_i * base for a (n, 4) uint64 array of canonical scalars."""
        ident = self.group.identity
        table = self.table
        out = []
        rows = np.ascontiguousarray(canon, dtype="<u8").tobytes()
        it = range(canon.shape[0])
        if progress and tqdm is not None and canon.shape[0] >= 20000:
            it = tqdm(it, desc=progress, unit="pt", leave=False, mininterval=1.0)
        for i in it:
            acc = ident()
            for k, byte in enumerate(rows[32 * i : 32 * i + 32]):
                if byte:
                    acc = acc + table[k][byte]
            out.append(acc)
        return out

    def mul_canonical_lem(self, canon: np.ndarray, curve: Curve, progress: str | None = None) -> bytes:
        group = 1 if self.group.__name__.startswith("G1") else 2
        return pts.to_lem(curve, group, self.mul_canonical(canon, progress))
