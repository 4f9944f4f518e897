"""The prover's NTT steps once each, for a kernel profiler (run under `ncu --kernel-name ...`).

    python3 -m cuzk.bench.ntt_kernel_profile --log-n 24 --batch 3

Random values on the device; evals_to_coset (the a, b, c turn to the coset), then the coset iNTT.
"""

from __future__ import annotations

import argparse

import cupy

from ..backends.gpu import ntt as gntt
from . import gpu_kernels


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--log-n", type=int, default=24)
    ap.add_argument("--batch", type=int, default=3)
    a = ap.parse_args()
    d = gntt.domain(a.log_n)
    x = gpu_kernels.device_scalars(1 << a.log_n, "random")
    xs = cupy.stack([x] * a.batch)
    d.evals_to_coset(xs, 7)
    cupy.cuda.get_current_stream().synchronize()
    print(f"evals_to_coset 2^{a.log_n} x{a.batch}: done", flush=True)
    d.coset_intt(xs, 7)
    cupy.cuda.get_current_stream().synchronize()
    print(f"coset_intt 2^{a.log_n} x{a.batch}: done", flush=True)


if __name__ == "__main__":
    main()
