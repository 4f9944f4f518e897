"""Several proofs of one circuit in one pass (``prover.prove_batch_start``): throughput per batch size.

    cuzk-bench batch --dev porep:24 --sizes 1 2 3 --reps 4 [--backend gpu|cpu] [--curve bls12_381] [--json OUT]

In process, no daemon: a synthetic circuit (cuzk.r1cs.synthetic, shape:log2 of the domain) with
max(sizes) satisfying witnesses, its key (the GPU setup on the GPU backend: bellperson style for porep
shapes, snarkjs for dense; the CPU setup on the CPU backend), then rounds interleaved size by size
(1, 2, 3, 1, 2, 3, ...) after one warm-up round each. A round of size k proves witnesses 0..k-1 in one
batch and finishes every proof (assembly and pairing check; a proof that fails is an error).

Two figures per size, each the median over the rounds with its band (max - min):
  * ``start``: the batch's prove_batch_start wall time, i.e. what the device is busy for (the daemon
    overlaps the finish of one batch with the start of the next), and the throughput k / start;
  * ``whole``: start plus finishing every proof (host assembly and verification).
The ratio is each size's start throughput over size 1's, measured in the same rounds. ``--json`` also
writes these figures in the common ``phases`` shape, so ``cuzk-bench compare OLD.json NEW.json`` guards them.

Before timing, batched proofs are checked identical to one-by-one proofs with the same r, s.
"""

from __future__ import annotations

import json
import statistics
import time
from pathlib import Path

from .. import CuzkError
from ..backends import get_backend
from ..curves import get as get_curve
from ..groth16 import prover
from ..r1cs import synthetic


def _band(xs: list[float]) -> dict:
    return {"median": statistics.median(xs), "min": min(xs), "max": max(xs), "runs": xs}


def _key(circ, shape: str, backend: str, curve):
    style = "bellperson" if shape == "porep" and curve.bellperson else "snarkjs"
    if backend == "gpu":
        from ..backends.gpu import setup as gsetup

        return gsetup.setup(circ.pce, style, quiet=True)
    from ..groth16 import setup

    return setup.setup(circ.pce, style=style, quiet=True)


def run(a) -> int:
    sizes = sorted(set(a.sizes))
    if not sizes or sizes[0] < 1:
        raise CuzkError(f"--sizes: batch sizes of at least 1 expected, got {a.sizes}")
    try:
        shape, log = a.dev.split(":")
        log_n = int(log)
    except ValueError:
        raise CuzkError(f"--dev {a.dev!r}: expected SHAPE:LOG2 (e.g. porep:24)") from None
    if shape not in ("porep", "dense"):
        raise CuzkError(f"--dev {a.dev!r}: batches of witnesses come from the porep or dense shape")
    curve = get_curve(a.curve)
    backend = get_backend(a.backend)
    a.backend = backend.name  # "auto" resolved
    kmax = sizes[-1]
    t = time.perf_counter()
    circ = synthetic.make(shape, synthetic.fit_domain(shape, log_n), seed=1, curve=curve, witnesses=kmax)
    ws = [circ.witness, *circ.others]
    t_synth = time.perf_counter() - t
    t = time.perf_counter()
    pk = _key(circ, shape, a.backend, curve)
    t_setup = time.perf_counter() - t
    label = f"{curve.name} {shape} 2^{log_n} ({circ.pce.n_constraints} constraints) on {a.backend}"
    print(f"{label}: {kmax} witnesses in {t_synth:.1f} s, key in {t_setup:.1f} s", flush=True)

    # batched == one by one, fixed r, s (issue 20's test, here at the benchmark's own size)
    rs = [1000 + i for i in range(kmax)]
    ss = [2000 + i for i in range(kmax)]
    one = [prover.prove(pk, w, backend, r=r, s=s).proof for w, r, s in zip(ws, rs, ss)]
    same = True
    for k in sizes:
        if k > 1:
            got = [res.proof for res in prover.prove_batch(pk, ws[:k], backend, rs=rs[:k], ss=ss[:k])]
            same = same and got == one[:k]
    print(f"batched proofs identical to one-by-one proofs (fixed r, s): {'yes' if same else 'NO'}", flush=True)

    def round_(k: int) -> tuple[float, float, dict]:
        t0 = time.perf_counter()
        pending = prover.prove_batch_start(pk, ws[:k], backend, labels=[f"p{i}" for i in range(k)])
        t1 = time.perf_counter()
        results = [prover.prove_finish(p) for p in pending]
        t2 = time.perf_counter()
        return (t1 - t0) * 1e3, (t2 - t0) * 1e3, results[0].timings

    for k in sizes:  # warm-up: memory pools, the batch's NTT plans
        round_(k)
    runs: dict[int, list[tuple[float, float, dict]]] = {k: [] for k in sizes}
    for _ in range(a.reps):
        for k in sizes:
            runs[k].append(round_(k))
    rows = []
    base = None
    for k in sizes:
        start = [r[0] for r in runs[k]]
        whole = [r[1] for r in runs[k]]
        phases = {p: statistics.median(r[2].get(p, 0.0) for r in runs[k]) for p in runs[k][0][2]}
        tput = k / (statistics.median(start) / 1e3)
        base = base or tput
        rows.append(
            {
                "batch": k,
                "start_ms": _band(start),
                "whole_ms": _band(whole),
                "proofs_per_s": tput,
                "ratio": tput / base,
                "phases_ms": phases,
            }
        )
    print(f"\n{label}, {a.reps} rounds per size (ms; band = max - min):")
    print("| batch | start ms (band) | whole ms (band) | proofs/s (start) | ratio to batch 1 |")
    print("|---:|---:|---:|---:|---:|")
    for r in rows:
        s_, w_ = r["start_ms"], r["whole_ms"]
        print(
            f"| {r['batch']} | {s_['median']:.1f} ({s_['max'] - s_['min']:.1f}) | {w_['median']:.1f} "
            f"({w_['max'] - w_['min']:.1f}) | {r['proofs_per_s']:.2f} | {r['ratio']:.3f} |"
        )
    for r in rows:
        print(f"  batch {r['batch']} phases: " + " ".join(f"{p}={v:.1f}" for p, v in r["phases_ms"].items()))
    if a.json:
        doc = {
            "case": label,
            "backend": a.backend,
            "constraints": circ.pce.n_constraints,
            "domain_log": pk.domain_log,
            "same_as_one_by_one": same,
            "synth_s": t_synth,
            "setup_s": t_setup,
            "rows": rows,
            # the common shape cuzk-bench compare reads: per batch size, start and whole (ms) and throughput
            "phases": {
                **{
                    f"batch{r['batch']}.{fig}": {"median": r[f"{fig}_ms"]["median"], "runs": r[f"{fig}_ms"]["runs"], "unit": "ms"}
                    for r in rows
                    for fig in ("start", "whole")
                },
                **{
                    f"batch{r['batch']}.proofs_per_s": {
                        "median": r["proofs_per_s"],
                        "runs": [r["batch"] / (x / 1e3) for x in r["start_ms"]["runs"]],
                        "unit": "proofs/s",
                        "higher_is_better": True,
                    }
                    for r in rows
                },
            },
        }
        Path(a.json).write_text(json.dumps(doc, indent=1))
    return 0 if same else 1


def add_arguments(s) -> None:
    s.add_argument("--dev", help="in process, no daemon: a synthetic SHAPE:LOG2 circuit (porep or dense) batched")
    s.add_argument("--sizes", type=int, nargs="+", default=[1, 2, 3], help="batch sizes (with --dev; default 1 2 3)")
    s.add_argument("--reps", type=int, default=4, help="rounds per size (with --dev)")
    s.add_argument("--backend", default="gpu", choices=["gpu", "cpu", "auto"], help="with --dev (default gpu)")
    s.add_argument("--curve", default="bls12_381", help="with --dev")
    s.add_argument("--json", default="", help="with --dev: write the rows here")
