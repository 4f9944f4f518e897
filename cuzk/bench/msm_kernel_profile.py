"""One G1 MSM per accumulation mode, for a kernel profiler (run under `ncu --kernel-name ...`).

    python3 -m cuzk.bench.msm_kernel_profile --log-n 22 --modes even items

Builds distinct bases and random scalars on the device (as cuzk/bench/gpu_kernels.py does), then runs the
MSM once per accumulation mode (GpuConfig.msm_acc), printing each result so the modes can be seen to agree.
"""

from __future__ import annotations

import argparse

from ..backends.gpu import config
from ..backends.gpu import msm as gmsm
from . import gpu_kernels


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--log-n", type=int, default=22)
    ap.add_argument("--group", type=int, default=1)
    ap.add_argument("--modes", nargs="+", default=["even", "items"])
    a = ap.parse_args()
    n = 1 << a.log_n
    bases = gpu_kernels.device_bases(a.group, n)
    scalars = gpu_kernels.device_scalars(n, "random")
    results = []
    for mode in a.modes:
        with config.using(msm_acc=mode):
            results.append(gmsm.msm(a.group, bases, scalars))
        print(f"G{a.group} MSM 2^{a.log_n} mode {mode}: done", flush=True)
    print("modes agree:", all(r == results[0] for r in results), flush=True)


if __name__ == "__main__":
    main()
