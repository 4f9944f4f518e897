"""Find which switch breaks a GPU prove: each configuration in a fresh process (a CUDA fault is sticky:
it poisons the context for everything after it), CUDA_LAUNCH_BLOCKING=1 so the failing launch is the
one named, one small synthetic prove per configuration, pass/fail and the first error line printed.

    python -m cuzk.bench.gpu_bisect --case dense:12 --config "default:" "ones_masked:CUZK_MSM_ONES=masked" \
        "caps:CUZK_KERNEL_DEFINES_MSM=CUZK_ACC_MINB=4;CUZK_ACC2_MINB=3"

A configuration is NAME:VAR=VALUE,VAR=VALUE: environment variables of the child, i.e. the GPU
configuration's overrides (cuzk/backends/gpu/config.py; inside a value, ";" stands for ","). Exit status
0 when every configuration proved and verified.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

import cuzk

ROOT = Path(cuzk.__file__).resolve().parents[1]  # the child imports this same cuzk

CHILD = r"""
import sys, time, traceback
sys.path.insert(0, {root!r})
from cuzk.groth16 import prover, verifier
from cuzk.backends.gpu import setup as gsetup
from cuzk.backends import get_backend
from cuzk.backends.gpu.backend import to_pinned
from cuzk.bench.gpu_prove import parse_case
from cuzk.r1cs import synthetic
shape, n, label = parse_case({case!r})
circ = synthetic.make(shape, n, seed=1)
stage = "setup"
try:
    pk = gsetup.setup(circ.pce, "bellperson" if shape == "porep" else "snarkjs", quiet=True)
    for stage, wit in (("prove pageable", circ.witness), ("prove pinned", None)):
        if wit is None:
            wit = to_pinned(circ.witness)
        res = prover.prove(pk, wit, get_backend("gpu"))
        assert verifier.verify(pk.vk, res.public, res.proof), "proof does not verify"
except Exception as e:
    traceback.print_exc(file=sys.stderr)
    print(f"FAIL in {{stage}}: {{type(e).__name__}}: {{str(e).splitlines()[0] if str(e) else ''}}")
    sys.exit(1)
print("OK")
"""


def parse_config(spec: str) -> tuple[str, dict[str, str]]:
    name, _, rest = spec.partition(":")
    env = {}
    for kv in filter(None, rest.split(",")):
        k, _, v = kv.partition("=")
        env[k] = v.replace(";", ",")
    return name, env


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--case", default="dense:12", help="shape:log2 size, as in gpu_prove.py")
    ap.add_argument("--config", nargs="+", default=["default:"])
    ap.add_argument("--timeout", type=float, default=120)
    ap.add_argument("--log-dir", default="", help="write each configuration's whole stderr to NAME.stderr here")
    a = ap.parse_args()
    code = CHILD.format(root=str(ROOT), case=a.case)
    failed = 0
    rows = []
    for spec in a.config:
        name, extra = parse_config(spec)
        env = dict(os.environ, CUDA_LAUNCH_BLOCKING="1", CUZK_SYNC_LAUNCH="1", **extra)
        t = time.perf_counter()
        try:
            p = subprocess.run(
                [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=a.timeout, check=False
            )
            out, err, rc = p.stdout.strip().splitlines(), p.stderr, p.returncode
        except subprocess.TimeoutExpired:
            out, err, rc = ["FAIL: timed out"], "", 124
        verdict = out[-1] if out else f"FAIL: exit {rc}, no output"
        failed += rc != 0
        rows.append((name, verdict, time.perf_counter() - t))
        if a.log_dir:
            Path(a.log_dir).mkdir(parents=True, exist_ok=True)
            (Path(a.log_dir) / f"{name}.stderr").write_text(err)
        if rc != 0:  # the first traceback's innermost frames say which launch faulted; what follows it is
            # the interpreter's teardown failing on the poisoned context
            first = err.split("Error in sys.excepthook")[0].split("During handling of the above exception")[0]
            print(f"--- {name} ({extra}) first traceback:\n" + "\n".join(first.strip().splitlines()[-40:]), flush=True)
    print(f"\n{a.case}: configuration, verdict, seconds")
    for name, verdict, secs in rows:
        print(f"  {name:<16} {verdict:<70.70} {secs:6.1f}")
    for name, verdict, _ in rows:  # the whole first error line: the kernel and its sizes are at its end
        if not verdict.startswith("OK"):
            print(f"{name}: {verdict}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
