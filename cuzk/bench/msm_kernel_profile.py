"""One G1 MSM per accumulation mode, for a kernel profiler (run under `ncu --kernel-name ...`).

    python3 bench/msm_kernel_profile.py --log-n 22 --modes even affine

Builds distinct bases and random scalars on the device (as bench/gpu_kernels.py does), then runs the MSM
once per mode (CUZK_MSM_ACC), printing each result so the modes can be seen to agree.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import gpu_kernels

from cuzk.backends.gpu import msm as gmsm


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--log-n", type=int, default=22)
    ap.add_argument("--group", type=int, default=1)
    ap.add_argument("--modes", nargs="+", default=["even", "affine"])
    a = ap.parse_args()
    n = 1 << a.log_n
    bases = gpu_kernels.device_bases(a.group, n)
    scalars = gpu_kernels.device_scalars(n, "random")
    results = []
    for mode in a.modes:
        os.environ["CUZK_MSM_ACC"] = mode
        results.append(gmsm.msm(a.group, bases, scalars))
        print(f"G{a.group} MSM 2^{a.log_n} mode {mode}: done", flush=True)
    print("modes agree:", all(r == results[0] for r in results), flush=True)


if __name__ == "__main__":
    main()
