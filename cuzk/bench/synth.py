"""``cuzk-bench synth CIRCUIT``: the synthesis-only micro-benchmark of a Python circuit.

Times, separately and each ``--repeat`` times: recording (the constraint matrices, once per topology;
with ``--record`` it is timed without the disk cache, else loaded from it), witness generation (the
witness-only constraint system, the per-proof path) and the mat-vec (A.w, B.w, C.w: what the prover
does with the witness first). Reports median and spread, constraints per second per core (witness +
mat-vec over the cores used, below), the peak resident memory of the process, and the peak of
Python-tracked allocations (numpy arrays included) during one witness generation, run apart from the
timed ones because tracing slows Python down.

``--processes N`` (N >= 2): the timed witness is ONE witness computed in N parts by N worker processes
(:class:`cuzk.circuit.circuit.WitnessPool`, ``split_witness``: a circuit that splits over its units, e.g.
``MerkleInclusion`` over its challenges; ``min(N, units)`` parts), as the engine computes one partition
with ``synthesis.python_processes``. The pool's first witness (spawning the workers, their imports, numba
compilation, each worker's allocation blocks; every worker is held until all have started, so each warms
up here and none in a timed run) is timed apart (``first_witness_s``) and checked equal, bit
for bit, to the single-process witness (computed once, untimed, as the reference); a difference voids the
benchmark. The mat-vec is timed as before, in this process on all its numba threads.

Per-core figure: ``constraints / (witness + mat-vec) / cores``, cores = ``max(processes, threads)``
(threads: numba threads of this process, ``--threads`` or all cores; processes: 1 without
``--processes``). The witness and the mat-vec run one after the other, so no more cores than the larger
of the two are busy at once.

The seed's synthesis regression (a small-vector LC indexer costing 5-6 s of every proof) was found only
by a synthesis-only benchmark; this is ours. Its switches (``--lc-storage``, ``--witness-buffer``) set
the named synthesis switches of :mod:`cuzk.circuit.cs`, so each can be measured alone.

``--split N`` also times ONE witness computed in parts by N worker processes (:mod:`cuzk.circuit.split`:
a circuit that splits over its units, e.g. ``cuzk.filecoin.porep:PoRep`` over its challenges), checked
bit-identical to the single-process witness, and the inputs' checks (``parse_inputs``) in parts against
one process.
"""

from __future__ import annotations

import json
import os
import resource
import statistics
import sys
import time
import tracemalloc
from typing import Any

from .. import CuzkError

PER_CORE = (
    "constraints / (witness + mat-vec) / cores, cores = max(processes, threads): witness processes "
    "(1 without --processes) and this process's numba threads (the mat-vec)"
)


def _median_spread(xs: list[float]) -> tuple[float, float]:
    return statistics.median(xs), (max(xs) - min(xs)) if len(xs) > 1 else 0.0


def _peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def run(
    spec: str,
    params: str | dict[str, Any] | None = None,
    inputs_path: str | None = None,
    seed: int = 0,
    repeat: int = 3,
    threads: int | None = None,
    rerecord: bool = False,
    trace: bool = True,
    progress: bool = True,
    procs: int = 0,
    split: int = 0,
    processes: int = 0,
) -> dict[str, Any]:
    """One benchmark; returns the figures (ms, MiB, constraints/s). ``processes`` >= 2: the timed witness
    is computed in that many parts by a WitnessPool (the module's docstring); per core = constraints /
    (witness + mat-vec) / max(processes, threads)."""
    import numba

    from ..circuit.circuit import CircuitSpec, record, witness
    from ..circuit.cs import switch

    if threads:
        numba.set_num_threads(threads)
    threads_used = numba.get_num_threads()
    processes = processes if processes > 1 else 1
    cores = max(processes, threads_used)
    circuit = CircuitSpec.parse(spec, params).load()
    bar = None
    if progress and sys.stderr.isatty():
        from tqdm import tqdm

        bar = tqdm(
            total=2 + 2 * repeat + trace + (procs > 1) + (split > 1) + 2 * (processes > 1),
            desc="record",
            unit="step",
            leave=False,
            file=sys.stderr,
        )

    def step(name: str) -> None:
        if bar is not None:
            bar.update(1)
            bar.set_description(name)

    t = time.perf_counter()
    rec = record(circuit, cache=not rerecord)
    record_ms = (time.perf_counter() - t) * 1e3
    step("inputs")
    if inputs_path:
        with open(inputs_path, encoding="utf-8") as fh:
            inputs = json.load(fh)
    else:
        inputs = circuit.sample_inputs(seed)
    inputs = circuit.partition_inputs(inputs)[0]
    step("witness")
    n = rec.layout.n_constraints
    wit_ms, mv_ms = [], []
    # one untimed run first: numba compiles (or loads) its kernels and the pages are touched at first use;
    # the device host's first figures were 2-10x the warm ones without it
    t = time.perf_counter()
    w = witness(circuit, inputs, rec.layout)
    one_ms = (time.perf_counter() - t) * 1e3
    rec.pce.evaluate(w)
    pool = None
    first_witness_s = None
    if processes > 1:
        pool, first_witness_s = _pool_first(spec, params, circuit, rec, inputs, w, processes, rerecord, step)
    try:
        for _ in range(repeat):
            t = time.perf_counter()
            w = witness(circuit, inputs, rec.layout) if pool is None else pool.split_witness(inputs, processes)
            wit_ms.append((time.perf_counter() - t) * 1e3)
            step("mat-vec")
            t = time.perf_counter()
            rec.pce.evaluate(w)
            mv_ms.append((time.perf_counter() - t) * 1e3)
            step("witness")
    finally:
        if pool is not None:
            pool.close()
    bad = rec.pce.unsatisfied(w)
    if bad.size:
        raise CuzkError(f"{spec}: the witness violates {bad.size} constraints (first: {int(bad[0])}); the benchmark is void")
    par = None
    if procs > 1:
        from ..circuit.circuit import WitnessPool

        step("parallel witnesses")
        pool = WitnessPool(CircuitSpec.parse(spec, params), procs)
        try:
            for f in [pool.submit(inputs) for _ in range(procs)]:  # warm-up: spawn, import, compile
                f.result()
            t = time.perf_counter()
            for f in [pool.submit(inputs) for _ in range(procs * repeat)]:
                f.result()
            wall = time.perf_counter() - t
        finally:
            pool.close()
        rate = n * procs * repeat / wall
        par = {
            "processes": procs,
            "witnesses": procs * repeat,
            "wall_ms": wall * 1e3,
            "constraints_per_s": rate,
            "per_process": rate / procs,
        }
    spl = _split(spec, params, circuit, inputs, w, split, repeat, wit_ms, step) if split > 1 else None
    peak_py = 0.0
    if trace:
        step("traced witness")
        tracemalloc.start()
        witness(circuit, inputs, rec.layout)
        peak_py = tracemalloc.get_traced_memory()[1] / 2**20
        tracemalloc.stop()
    if bar is not None:
        bar.close()
    wm, ws = _median_spread(wit_ms)
    mm, msp = _median_spread(mv_ms)
    total_s = (wm + mm) / 1e3
    return {
        "circuit": spec,
        "params": circuit.params,
        "constraints": n,
        "wires": rec.layout.n_wires,
        "recording": {"ms": record_ms, "cached": rec.cached, "lc_storage": switch("lc_storage")},
        "witness_ms": {"median": wm, "spread": ws, "runs": wit_ms},
        "matvec_ms": {"median": mm, "spread": msp, "runs": mv_ms},
        "witness_buffer": switch("witness_buffer"),
        "threads": threads_used,
        "processes": processes,
        "cores": cores,
        "parts": min(processes, circuit.split_units()) if processes > 1 else 1,
        "first_witness_s": first_witness_s,
        "single_process_witness_ms": one_ms,
        "witness_checked_equal": processes > 1,
        "constraints_per_s": n / total_s,
        "constraints_per_s_per_core": n / total_s / cores,
        "per_core_definition": PER_CORE,
        "peak_rss_mib": _peak_rss_mib(),
        "peak_python_alloc_mib": peak_py,
        "parallel_witness": par,
        "split_witness": spl,
    }


def _barrier(folder: str, n: int, timeout_s: float = 600.0) -> None:
    """Wait until ``n`` processes have arrived in ``folder`` (one file per process id)."""
    open(os.path.join(folder, str(os.getpid())), "w").close()
    deadline = time.monotonic() + timeout_s
    while len(os.listdir(folder)) < n:
        if time.monotonic() > deadline:
            raise TimeoutError(f"{len(os.listdir(folder))} of {n} witness processes started in {timeout_s:.0f} s")
        time.sleep(0.005)


def _warm_part(folder: str, n: int, *part: Any) -> str:
    """In a pool worker: wait until all ``n`` workers hold one of these tasks (so each takes exactly one),
    then compute one part of the witness (``_worker_part``: numba compilation, allocation blocks)."""
    from ..circuit.circuit import _worker_part

    _barrier(folder, n)
    return _worker_part(*part)


def _pool_first(
    spec: str, params: Any, circuit: Any, rec: Any, inputs: Any, w: Any, processes: int, rerecord: bool, step: Any
) -> tuple[Any, float]:
    """A WitnessPool of ``processes`` workers and its first witness in parts, timed (seconds) and checked
    bit-identical to the single-process witness ``w``.

    The executor hands a part to whichever worker is idle, so a plain first witness can leave a worker
    cold (it compiles in a timed run later: a 14 s run among 1.5 s ones on the 2-core machine). The first
    witness therefore holds every worker on a barrier until all have started, one task each: its time is
    spawning all ``processes`` workers, their imports, the circuit, numba and the allocation blocks, and one
    part each (workers beyond the circuit's units compute a repeated part into a scratch buffer)."""
    import tempfile

    import numpy as np

    from ..circuit.circuit import CircuitSpec, WitnessPool, _save, cache_dir
    from ..circuit.split import SharedWitness, same_globals

    if circuit.split_units() < 2:
        raise CuzkError(f"{spec}: the circuit does not split over its units (split_units); --processes needs one that does")
    if rerecord:  # the workers read the layout from the disk cache: store the recording timed here
        path = cache_dir() / f"{rec.key}.npz"
        if not path.exists():
            _save(path, rec)
    step("first pool witness")
    pool = WitnessPool(CircuitSpec.parse(spec, params), processes)
    try:
        t = time.perf_counter()
        parts = pool._parts(inputs, min(processes, circuit.split_units()))
        with (
            tempfile.TemporaryDirectory(prefix="cuzk-synth-barrier-") as folder,
            SharedWitness(rec.layout.n_wires) as buf,
            SharedWitness(rec.layout.n_wires) as scratch,
        ):
            futures = []
            for i in range(processes):
                lo, hi, si, sp = parts[i % len(parts)]
                target = buf.ref if i < len(parts) else scratch.ref
                futures.append(pool._pool.submit(_warm_part, folder, processes, si, sp, lo, hi, target, lo == 0))
            same_globals(pool._gather(futures)[: len(parts)])
            m = buf.array()
        first = time.perf_counter() - t
        step("equality check")
        if not np.array_equal(m, w):
            raise CuzkError(
                f"{spec}: the witness computed in parts by {processes} processes differs from the single-process one; "
                "the benchmark is void"
            )
    except BaseException:
        pool.close()
        raise
    return pool, first


def _split(
    spec: str, params: Any, circuit: Any, inputs: Any, w: Any, procs: int, repeat: int, wit_ms: list[float], step: Any
) -> dict[str, Any]:
    """One witness computed in parts by ``procs`` worker processes (cuzk.circuit.split): timed against the
    single-process witness (``wit_ms``), checked equal to it bit for bit; the inputs' checks
    (``parse_inputs``: PoRep's openings verified natively) timed here and in parts."""
    import numpy as np

    from ..circuit.circuit import CircuitSpec, WitnessPool

    step("split witness")
    pool = WitnessPool(CircuitSpec.parse(spec, params), procs)
    try:
        if not pool.splits():
            raise CuzkError(f"{spec}: the circuit does not split over its units (split_units); --split needs one that does")
        t = time.perf_counter()
        m = pool.witness(inputs)  # warm-up: spawn, imports, numba, each worker's allocation blocks of the circuit
        first_ms = (time.perf_counter() - t) * 1e3
        if pool.split_refused:
            raise CuzkError(f"{spec}: the split was refused: {pool.split_refused}")
        if not np.array_equal(m, w):
            raise CuzkError(f"{spec}: the witness computed in parts differs from the single-process one; the benchmark is void")
        del m
        runs, check, serial_check = [], [], []
        for _ in range(repeat):
            t = time.perf_counter()
            pool.witness(inputs)
            runs.append((time.perf_counter() - t) * 1e3)
            t = time.perf_counter()
            pool.check(inputs)
            check.append((time.perf_counter() - t) * 1e3)
            t = time.perf_counter()
            circuit.parse_inputs(inputs)
            serial_check.append((time.perf_counter() - t) * 1e3)
    finally:
        pool.close()
    med, sp = _median_spread(runs)
    cm, cs = _median_spread(check)
    sm, ss = _median_spread(serial_check)
    return {
        "processes": procs,
        "parts": min(procs, circuit.split_units()),
        "first_ms": first_ms,
        "witness_ms": {"median": med, "spread": sp, "runs": runs},
        "speedup": statistics.median(wit_ms) / med,
        "check_ms": {"median": cm, "spread": cs, "runs": check},
        "serial_check_ms": {"median": sm, "spread": ss, "runs": serial_check},
        "identical": True,
    }


def print_report(r: dict[str, Any]) -> None:
    rec = r["recording"]
    print(f"circuit        {r['circuit']} {json.dumps(r['params'], sort_keys=True)}")
    print(f"size           {r['constraints']:,} constraints, {r['wires']:,} wires")
    how = "loaded from the cache" if rec["cached"] else f"recorded (lc_storage={rec['lc_storage']})"
    print(f"recording      {rec['ms']:.0f} ms, {how}")
    for k, label, extra in (("witness_ms", "witness", f" (witness_buffer={r['witness_buffer']})"), ("matvec_ms", "mat-vec", "")):
        m = r[k]
        print(f"{label:<15}median {m['median']:.1f} ms, spread {m['spread']:.1f} ms over {len(m['runs'])} runs{extra}")
    if r.get("processes", 1) > 1:
        print(
            f"processes      witness in {r['parts']} parts by {r['processes']} worker processes; first witness "
            f"{r['first_witness_s']:.2f} s (every worker: spawn, imports, numba), equal to the single-process witness "
            f"({r['single_process_witness_ms']:.0f} ms, untimed): checked"
        )
    print(
        f"throughput     {r['constraints_per_s'] / 1e6:.3f} M constraints/s on {r.get('cores', r['threads'])} cores "
        f"({r.get('processes', 1)} processes, {r['threads']} threads) = "
        f"{r['constraints_per_s_per_core'] / 1e6:.3f} M/s per core (target 0.4)"
    )
    print(f"per core       {r.get('per_core_definition', PER_CORE)}")
    par = r.get("parallel_witness")
    if par:
        print(
            f"processes      {par['processes']} witness processes: {par['constraints_per_s'] / 1e6:.3f} M constraints/s "
            f"({par['per_process'] / 1e6:.3f} per process; witness only, {par['witnesses']} witnesses in {par['wall_ms']:.0f} ms)"
        )
    spl = r.get("split_witness")
    if spl:
        m, c, sc = spl["witness_ms"], spl["check_ms"], spl["serial_check_ms"]
        print(
            f"split          one witness in {spl['parts']} parts ({spl['processes']} processes): median {m['median']:.1f} ms, "
            f"spread {m['spread']:.1f} ms over {len(m['runs'])} runs = {spl['speedup']:.2f}x the single-process witness "
            f"(bit-identical; first {spl['first_ms']:.0f} ms)"
        )
        print(
            f"input checks   in parts median {c['median']:.1f} ms (spread {c['spread']:.1f}); in one process "
            f"median {sc['median']:.1f} ms (spread {sc['spread']:.1f})"
        )
    print(
        f"memory         peak RSS {r['peak_rss_mib']:.0f} MiB; peak Python allocations in one witness {r['peak_python_alloc_mib']:.0f} MiB"
    )


def cmd_synth(a) -> int:
    saved = {k: os.environ.get(k) for k in ("CUZK_LC_STORAGE", "CUZK_WITNESS_BUFFER")}
    try:
        if a.lc_storage:
            os.environ["CUZK_LC_STORAGE"] = a.lc_storage
        if a.witness_buffer:
            os.environ["CUZK_WITNESS_BUFFER"] = a.witness_buffer
        r = run(
            a.circuit,
            a.circuit_params,
            a.inputs,
            a.seed,
            max(1, a.repeat),
            a.threads,
            a.record,
            not a.no_trace,
            not a.quiet,
            a.procs,
            a.split,
            a.processes,
        )
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    print_report(r)
    if a.json:
        with open(a.json, "w", encoding="utf-8") as fh:
            json.dump(r, fh, indent=1)
    return 0


def add_parser(sub: Any) -> None:
    s = sub.add_parser("synth", help="synthesis-only benchmark of a Python circuit: witness and mat-vec timed apart")
    s.add_argument("circuit", help="package.module:ClassName, e.g. cuzk.circuit.examples:MerkleInclusion")
    s.add_argument("--circuit-params", metavar="JSON", help="the circuit's parameters, a JSON object")
    s.add_argument("--inputs", help="inputs JSON (default: the circuit's sample inputs)")
    s.add_argument("--seed", type=int, default=0, help="seed of the sample inputs")
    s.add_argument("--repeat", type=int, default=3, help="timed witness + mat-vec runs (median and spread)")
    s.add_argument("--threads", type=int, help="numba threads (default: all cores)")
    s.add_argument("--record", action="store_true", help="record again, bypassing the disk cache, and time it")
    s.add_argument("--lc-storage", choices=["arrays", "dicts"], help="synthesis switch: how recording holds LCs")
    s.add_argument("--witness-buffer", choices=["presized", "growing"], help="synthesis switch: witness buffers")
    s.add_argument("--no-trace", action="store_true", help="skip the traced run (peak Python allocations)")
    s.add_argument(
        "--procs", type=int, default=0, help="also time N witnesses at once in N worker processes (synthesis.python_processes)"
    )
    s.add_argument(
        "--split",
        type=int,
        default=0,
        metavar="N",
        help="also time ONE witness computed in parts by N worker processes (a circuit that splits over its units, "
        "e.g. PoRep's challenges; synthesis.python_processes), checked bit-identical to the single-process one",
    )
    s.add_argument(
        "--processes",
        type=int,
        default=0,
        metavar="N",
        help="the timed witness computed in N parts by N worker processes (a circuit that splits over its units; "
        "first pool witness timed apart, checked bit-identical to the single-process one); per core = "
        "constraints / (witness + mat-vec) / max(N, threads)",
    )
    s.add_argument("--json", help="also write the figures here")
    s.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    s.set_defaults(fn=cmd_synth)
