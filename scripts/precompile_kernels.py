#!/usr/bin/env python3
"""Compile the CUDA kernel cache with NVRTC on a machine without a GPU (needs `pip install -e .[nvrtc]`).

The cache key depends on the source, options, architecture and NVRTC version, never on the machine, so
cubins built here load on any device of that architecture with the same NVRTC (bench/device_run.sh
carries the folder to the lent GPU instead of spending device time compiling).

    python scripts/precompile_kernels.py [--arch 90] [--variant NAME=VALUE,NAME=VALUE ...] [-j 2]
"""

from __future__ import annotations

import argparse
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from cuzk.backends.gpu import build


def one(args):
    module, arch, defines = args
    t = time.time()
    path = build.compile_to_cache(module, build.DeviceTarget(arch), defines)
    return module, defines, path.name, time.time() - t


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--arch", default="90")
    ap.add_argument("--variant", action="append", default=[], help="extra #defines for a variant, e.g. CUZK_MUL_PTX=1")
    ap.add_argument("--modules", nargs="*", default=list(build.MODULES))
    ap.add_argument("-j", type=int, default=2)
    a = ap.parse_args()
    variants = [()] + [tuple(tuple(kv.split("=", 1)) for kv in v.split(",")) for v in a.variant]
    jobs = [(m, a.arch, v) for v in variants for m in a.modules]
    with ProcessPoolExecutor(a.j) as ex:
        for module, defines, name, dt in ex.map(one, jobs):
            print(f"{module} {dict(defines) or 'default'}: {name} ({dt:.1f} s)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
