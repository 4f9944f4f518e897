#!/usr/bin/env python3
"""Look for the uniform-register frame-pointer hazard in built kernel modules (cubins from the cache).

ptxas may address a callee's by-reference operand, when it lives in the caller's stack frame, through a
uniform register that holds a copy of the stack pointer, read by the callee on entry. Uniform registers
are per warp. When a warp diverges and one part runs another out-of-line function that uses the same
uniform register as scratch, the other part's callee then reads through a garbage pointer: an
out-of-bounds __local__ access (seen as cudaErrorIllegalAddress in combine_pieces in an out-of-line-
multiply build before its operands were made by-value, NOTES.md 2026-12-03; the rule is OUTLINE_ARG in
cuzk/backends/gpu/kernels/mont.cuh).

For every kernel this reports each out-of-line function that reads a uniform register before writing
it (its live-in uniform registers, in program order, an approximation that ignores branches) where
another function of the same kernel, not one of its callers, writes that register. Exit status 1 when
any is found.

    python scripts/check_sass.py [--nvdisasm PATH] CUBIN_OR_SASS ...

nvdisasm comes with the CUDA toolkit or the PyPI package nvidia-cuda-nvdisasm.
"""

from __future__ import annotations

import argparse
import collections
import re
import shutil
import subprocess
import sys
from pathlib import Path

INSTRUCTION = re.compile(r"/\*[0-9a-f]+\*/\s+(?:@!?U?P[T\d]+ )?([A-Z0-9_.]+) ?([^;]*);")
CALL = re.compile(r"CALL\.\S+ `\(\$[^$]+\$([^)]+)\)")
UREG = re.compile(r"\bUR\d+\b")
# instructions whose first operand is a uniform destination register
UNIFORM_WRITERS = ("U", "R2UR", "S2UR", "LDCU")  # "U": every uniform-datapath op (UMOV, UIADD3, ULDC, ...)


def functions(section: str) -> dict[str, str]:
    """The out-of-line functions of one kernel's text section: name -> SASS body."""
    parts = re.split(r"\n(\$[^\n]*?):\n", section)
    return {parts[i].split("$")[-1]: parts[i + 1] for i in range(1, len(parts), 2)}


def hazards(sass: str) -> list[str]:
    found = []
    for section in re.split(r"\n\.text\.", sass)[1:]:
        kernel = section.split(":", 1)[0]
        funcs = functions(section)
        live_in: dict[str, set[str]] = {}
        writers: dict[str, set[str]] = collections.defaultdict(set)
        calls = {f: set(CALL.findall(body)) for f, body in funcs.items()}
        for f, body in funcs.items():
            written, read_first = set(), set()
            for op, args in INSTRUCTION.findall(body):
                regs = UREG.findall(args)
                dest = regs[0] if regs and op.startswith(UNIFORM_WRITERS) and args.strip().startswith(regs[0]) else None
                for r in regs[1:] if dest else regs:
                    if r not in written:
                        read_first.add(r)
                if dest:
                    written.add(dest)
                    writers[dest].add(f)
            live_in[f] = read_first

        for f, regs in live_in.items():
            exempt = {f} | callers_of(f, calls)
            for r in sorted(regs):
                others = writers[r] - exempt
                if others:
                    found.append(f"{kernel}: {f} reads {r} on entry; also written by {', '.join(sorted(others))}")
    return found


def callers_of(f: str, calls: dict[str, set[str]]) -> set[str]:
    """Every function that calls f, directly or through others (calls: function -> its callees)."""
    out, todo = set(), [f]
    while todo:
        g = todo.pop()
        for h, callees in calls.items():
            if g in callees and h not in out:
                out.add(h)
                todo.append(h)
    return out


def disassemble(path: Path, nvdisasm: str) -> str:
    if path.suffix == ".sass":
        return path.read_text()
    return subprocess.run([nvdisasm, str(path)], check=True, capture_output=True, text=True).stdout


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="+", type=Path)
    ap.add_argument("--nvdisasm", default=shutil.which("nvdisasm") or "nvdisasm")
    a = ap.parse_args()
    total = 0
    for path in a.files:
        try:
            found = hazards(disassemble(path, a.nvdisasm))
        except (OSError, subprocess.CalledProcessError) as e:
            print(f"{path}: cannot disassemble ({e})", file=sys.stderr)
            return 2
        total += len(found)
        print(f"{path.name}: {len(found)} hazard(s)")
        for line in found:
            print("  " + line)
    return 1 if total else 0


if __name__ == "__main__":
    sys.exit(main())
