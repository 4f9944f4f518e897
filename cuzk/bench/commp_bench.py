"""CommP throughput against ``sha256sum`` on the same file, in the same run.

    python -m cuzk.bench.commp_bench [--size 1GiB] [--repeat 3] [--file PATH] [--json OUT]

Writes a random file of ``--size`` bytes (unless ``--file`` names one), computes its piece commitment
``--repeat`` times in this process (after one untimed call on a small input that compiles the numba
kernels) and runs ``sha256sum`` on it as many times, interleaved; prints the median and spread of each in
GB/s (10^9 bytes of payload per second) and their ratio; also ``hashlib.sha256`` over the file (OpenSSL,
one thread), since coreutils' ``sha256sum`` may not use the CPU's SHA extensions. Both read the file from the page cache (it was
just written, and is read once before timing).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def _write_random(path: str, size: int) -> None:
    import numpy as np

    rng = np.random.default_rng(18)
    step = 64 << 20
    with open(path, "wb") as f:
        left = size
        while left:
            n = min(step, left)
            f.write(rng.integers(0, 256, n, dtype=np.uint8).tobytes())
            left -= n


def _sha256sum(path: str) -> float:
    t = time.perf_counter()
    subprocess.run(["sha256sum", path], check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t


def _hashlib_sha256(path: str) -> float:
    """SHA-256 of the file through hashlib (OpenSSL, SHA extensions where the CPU has them), one thread."""
    import hashlib

    t = time.perf_counter()
    h = hashlib.sha256()
    buf = bytearray(16 << 20)
    mv = memoryview(buf)
    with open(path, "rb") as f:
        while n := f.readinto(mv):
            h.update(mv[:n])
    return time.perf_counter() - t


def _summary(times: list[float], size: int) -> dict:
    rates = [size / t / 1e9 for t in times]
    return {
        "times_s": [round(t, 4) for t in times],
        "median_gbps": round(statistics.median(rates), 4),
        "min_gbps": round(min(rates), 4),
        "max_gbps": round(max(rates), 4),
    }


def main(argv: list[str] | None = None) -> int:
    from ..cli.filecoin import parse_size
    from ..filecoin import commitments
    from ..filecoin.cid import piece_cid

    ap = argparse.ArgumentParser(prog="python -m cuzk.bench.commp_bench", description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", default="1GiB", help="size of the random file (default 1GiB)")
    ap.add_argument("--file", help="benchmark this file instead of a random one")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", help="also write the results here")
    a = ap.parse_args(argv)
    if shutil.which("sha256sum") is None:
        print("sha256sum not found", file=sys.stderr)
        return 2

    tmp = None
    if a.file:
        path = a.file
    else:
        tmp = tempfile.mkdtemp(prefix="commp-bench-")
        path = os.path.join(tmp, "piece.bin")
        _write_random(path, parse_size(a.size, "--size"))
    try:
        size = os.path.getsize(path)
        t = time.perf_counter()
        backend = commitments.backend()  # loads (compiles) the kernels
        commitments.comm_p(bytes(127 * commitments.NATIVE_MIN))
        compile_s = time.perf_counter() - t
        _sha256sum(path)  # warm the page cache
        cp_times, sha_times, ossl_times = [], [], []
        cid = padded = None
        for _ in range(a.repeat):
            t = time.perf_counter()
            comm, padded, _ = commitments.comm_p(path)
            cp_times.append(time.perf_counter() - t)
            cid = piece_cid(comm)
            sha_times.append(_sha256sum(path))
            ossl_times.append(_hashlib_sha256(path))
        cp, sha, ossl = _summary(cp_times, size), _summary(sha_times, size), _summary(ossl_times, size)
        result = {
            "date": time.strftime("%Y-%m-%d"),
            "machine": f"{platform.node()} {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs",
            "file_bytes": size,
            "piece_size": padded,
            "piece_cid": cid,
            "backend": backend,
            "threads": commitments.threads(),
            "compile_s": round(compile_s, 2),
            "commp": cp,
            "sha256sum": sha,
            "hashlib_sha256": ossl,
            "ratio_median": round(cp["median_gbps"] / sha["median_gbps"], 3),
            "load_avg": os.getloadavg() if hasattr(os, "getloadavg") else None,
        }
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)

    print(f"file {size} bytes, piece {padded} bytes, {cid}, backend {backend} ({result['threads']} threads)")
    print("| tool | median GB/s | min..max GB/s | times (s) |")
    print("|---|---|---|---|")
    for name, r in (("cuzk CommP", cp), ("sha256sum", sha), ("hashlib.sha256 (OpenSSL, 1 thread)", ossl)):
        print(f"| {name} | {r['median_gbps']:.3f} | {r['min_gbps']:.3f}..{r['max_gbps']:.3f} | {r['times_s']} |")
    print(f"CommP / sha256sum (medians): {result['ratio_median']:.2f}; load average {result['load_avg']}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(result, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
