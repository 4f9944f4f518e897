"""Repro of the open lazy-Fq2 fault (device; NOTES.md 2026-12-03): the prover's B_G2 MSM of a dense 2^16
circuit (GPU setup), built with the Karatsuba Fq2 multiply, then with CUZK_FQ2_LAZY=1, then Karatsuba
again. After g2_accumulate_even the host checks first_bucket against a search of the bucket bounds, and
before the first g2_combine_pieces round that first_bucket is unchanged; STACK=<bytes> raises the
per-thread stack limit first. It also counts, for each build, the first pieces at infinity and round 1's
pairs (right or left at infinity, raw-equal: the doubling path) and compares the lazy build's pieces with
Karatsuba's (reduced results are unique, so any difference is an arithmetic bug). That part was written
after the session's device time ran out and has not run yet.

    CUDA_LAUNCH_BLOCKING=1 [STACK=32768] python3 bench/lazy_fq2_probe.py
"""

import os
import sys
from pathlib import Path

import cupy
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).parent))
from gpu_prove import parse_case

from cuzk.backends.gpu import msm as gmsm
from cuzk.backends.gpu import runtime
from cuzk.backends.gpu import setup as gsetup
from cuzk.backends.gpu.backend import device_key, upload_fr
from cuzk.r1cs import synthetic

shape, n, _ = parse_case("dense:16")
circ = synthetic.make(shape, n, seed=1)
pk = gsetup.setup(circ.pce, "snarkjs", quiet=True)
dk = device_key(pk)
b2 = dk.points["b2"]
wd = upload_fr(circ.witness)
print("b2", b2.shape, "scalars", wd.shape, flush=True)
orig = runtime.launch
state = {}


def checked(module, name, grid, block, args, op, shared=0):
    if name == "g2_combine_pieces" and "fb" in state:
        fb_now = cupy.asnumpy(args[2])
        if int(args[5]) == 1:
            print(f"  before combine step 1: first_bucket changed: {int((fb_now != state['fb']).sum())}", flush=True)
    orig(module, name, grid, block, args, op, shared)
    if name == "g2_accumulate_even":
        cupy.cuda.runtime.deviceSynchronize()
        bounds = cupy.asnumpy(args[2])
        total = int(args[3])
        ne = int(args[4])
        S = int(args[5])
        fb = cupy.asnumpy(args[7])
        nth = -(-ne // S)
        want = np.searchsorted(bounds, np.arange(nth, dtype=np.int64) * S, side="right") - 1
        bad = np.nonzero(fb[:nth] != want)[0]
        print(
            f"  accumulate_even: total {total} entries {ne} S {S} threads {nth} partials {args[6].shape}; "
            f"bounds monotone {bool(np.all(np.diff(bounds.astype(np.int64)) >= 0))} last {bounds[-1]}; "
            f"first_bucket wrong at {bad.size} threads {bad[:8].tolist()} got {fb[bad[:8]].tolist()} want {want[bad[:8]].tolist()}",
            flush=True,
        )
        state["fb"] = fb.copy()
        if total > 1:  # the pieces each thread's first bucket got, and round 1's pairs among them
            parts = cupy.asnumpy(args[6])
            t = np.arange(nth, dtype=np.int64)
            first = parts[fb[:nth].astype(np.int64) + t]
            t0 = bounds[fb[:nth]].astype(np.int64) // S
            right = (t > t0) & ((t - t0) % 2 == 1)
            inf = np.all(first[:, 24:36] == 0, axis=1)
            li = np.nonzero(right)[0] - 1
            same = np.all(first[right] == first[li], axis=1)
            print(
                f"  pieces: {nth} first pieces, {int(inf.sum())} at infinity; round-1 pairs {int(right.sum())}: "
                f"right inf {int(inf[right].sum())}, left inf {int(inf[li].sum())}, raw-equal {int(same.sum())}",
                flush=True,
            )
            if "first" in state:
                diff = np.nonzero(np.any(first != state["first"], axis=1))[0]
                print(f"  pieces differing from the previous build: {diff.size} {diff[:8].tolist()}", flush=True)
            state["first_keep"] = first


gmsm.launch = checked
if os.environ.get("STACK"):
    cupy.cuda.runtime.deviceSetLimit(0, int(os.environ["STACK"]))  # cudaLimitStackSize
    print("stack limit", cupy.cuda.runtime.deviceGetLimit(0), flush=True)
for label, defines in (("karatsuba", ()), ("lazy", (("CUZK_FQ2_LAZY", "1"),)), ("karatsuba again", ())):
    runtime.VARIANTS["msm"] = defines
    keep = state.get("first_keep")
    state.clear()
    if keep is not None:
        state["first"] = keep
    print(label, flush=True)
    try:
        r = gmsm.msm(2, b2, cupy.ascontiguousarray(wd))
        print("  result", str(r)[:60], flush=True)
    except Exception as e:
        print("  FAILED:", str(e)[:300], flush=True)
        break
