#!/usr/bin/env python3
"""SASS instruction counts of kernel modules, per kernel and per out-of-line function, with the predicate
spills (P2R): how NOTES.md counts the multiply forms (C form, carry chains, ptxas levels) without a GPU.

    python scripts/sass_counts.py --module msm --curve bls12_381 --define CUZK_MUL_CHAIN=2 --define CUZK_PTXAS_O=1
        [--kernel g1_accumulate] [--nvdisasm PATH]
    python scripts/sass_counts.py CUBIN_OR_SASS ...

With --module the build is compiled here by NVRTC (`pip install -e .[nvrtc]`; the #defines as
CUZK_KERNEL_DEFINES_<MODULE> would give them, CUZK_PTXAS_O included) into a temporary file; nvdisasm comes
with the CUDA toolkit or the PyPI package nvidia-cuda-nvdisasm. The counts are of instructions in the
listing (straight-line code: a loop body counts once), not of instructions executed.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import check_sass  # scripts/ is on the path: this script's own folder

ROOT = Path(__file__).resolve().parents[1]


def counts(sass: str) -> dict[str, dict[str, tuple[int, int]]]:
    """kernel -> {"(kernel)": (instructions, P2R) of its own body, function: (instructions, P2R), ...}."""
    out: dict[str, dict[str, tuple[int, int]]] = {}
    for section in re.split(r"\n\.text\.", sass)[1:]:
        kernel = section.split(":", 1)[0]
        body = re.split(r"\n\$[^\n]*?:\n", section, maxsplit=1)[0]
        parts = {"(kernel)": body, **check_sass.functions(section)}
        out[kernel] = {}
        for name, text in parts.items():
            ops = [op for op, _ in check_sass.INSTRUCTION.findall(text)]
            out[kernel][name] = (len(ops), sum(op.startswith("P2R") for op in ops))
    return out


def build_cubin(module: str, curve: str, defines: tuple[tuple[str, str], ...], arch: str) -> Path:
    sys.path.insert(0, str(ROOT))
    import cuzk.bench.kernels  # noqa: F401  (registers the bench-only probe module)
    from cuzk.backends.gpu import build

    data = build._compile_cubin(module, build.full_source(module, defines, curve), build.options(arch, defines))
    path = Path(tempfile.mkdtemp(prefix="cuzk-sass-")) / f"{module}-{curve}.cubin"
    path.write_bytes(data)
    return path


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="*", type=Path)
    ap.add_argument("--module", help="build this module here (msm, ntt, fr_ops, probe, ...)")
    ap.add_argument("--curve", default="bls12_381")
    ap.add_argument("--define", action="append", default=[], help="NAME=VALUE, repeatable")
    ap.add_argument("--arch", default="90")
    ap.add_argument("--kernel", action="append", default=[], help="only these kernels (default: all)")
    ap.add_argument("--nvdisasm", default=shutil.which("nvdisasm") or "nvdisasm")
    a = ap.parse_args()
    files = list(a.files)
    if a.module:
        defines = tuple(tuple(d.split("=", 1)) for d in a.define)
        if any(len(d) != 2 for d in defines):
            print("--define expects NAME=VALUE", file=sys.stderr)
            return 2
        files.append(build_cubin(a.module, a.curve, defines, a.arch))  # type: ignore[arg-type]
    if not files:
        ap.error("give cubin/sass files or --module")
    for path in files:
        try:
            table = counts(check_sass.disassemble(path, a.nvdisasm))
        except (OSError, subprocess.CalledProcessError) as e:
            print(f"{path}: cannot disassemble ({e})", file=sys.stderr)
            return 2
        print(f"{path.name}:")
        for kernel, parts in table.items():
            if a.kernel and kernel not in a.kernel:
                continue
            total = sum(n for n, _ in parts.values())
            spills = sum(p for _, p in parts.values())
            detail = "  ".join(f"{name} {n}" + (f" (P2R {p})" if p else "") for name, (n, p) in parts.items())
            print(f"  {kernel}: {total} instructions, P2R {spills}  [{detail}]")
    return 0


if __name__ == "__main__":
    sys.exit(main())
