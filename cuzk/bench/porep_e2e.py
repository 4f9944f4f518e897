"""A PoRep partition proved through the daemon from its vanilla proof, end to end:

    python -m cuzk.bench.porep_e2e [--sector-size 2KiB] [--backend cpu|gpu] [--key DIR] [--challenges N]
    python -m cuzk.bench.porep_e2e --in-process --backend gpu --sector-size 8MiB --challenges 68 [--reps 2]
        [--witness-processes 16]

Records the PoRep circuit (cuzk.filecoin.porep:PoRep with the size's challenges per partition), makes a
development key (cached in --key DIR), starts a daemon on a temporary socket, seals a sector and writes
the vanilla proof of partition 0 (interactive challenges from a random seed), submits its bytes as the
request's ``vanilla_proof``, verifies the returned proof with the key's verifying key, and submits the
same proof tampered (one data-path sibling) to show it is refused before proving, naming the challenge.
Prints the phases: seal, vanilla proof, recording, setup, request (synthesis, prover, total).

``--challenges N`` proves a partition of N challenges instead of the size's own count (the device
benchmark reaches the 32 GiB partition's ~130M constraints with an 8 MiB sector and 68 challenges).
``--in-process`` keeps the key where the setup made it (on the GPU: a 130M-constraint key is ~80 GB,
more than the device host's disk takes in the time) and makes the daemon's own calls on the request's
bytes in this process: the circuit's ``parse_binary`` (the vanilla proof checked natively), the witness
of the recorded layout, the backend's proof, the pairing check. What it leaves out against the daemon is
the gRPC hop and the queues, measured elsewhere (BENCHMARKS 3, 9).

``--witness-processes N`` is the daemon's ``synthesis.python_processes``: with N >= 2 the partition's
opening checks and its witness are computed in parts, a range of challenges per worker process
(:mod:`cuzk.circuit.split`); in process, the pool's first witness (spawn, imports) is made before the timed
requests.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import sys
import tempfile
import time
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    from ..circuit.circuit import CircuitSpec, record
    from ..cli.filecoin import parse_size
    from ..filecoin import params as P
    from ..filecoin import vanilla as V
    from ..groth16 import formats, verifier, zkey

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sector-size", default="2KiB")
    ap.add_argument("--backend", default="cpu", choices=["cpu", "gpu"])
    ap.add_argument("--key", default=os.path.expanduser("~/.cache/cuzk/porep-keys"), help="folder of the development keys")
    ap.add_argument("--challenges", type=int, default=0, help="challenges in the partition (default: the size's)")
    ap.add_argument("--in-process", action="store_true", help="key kept in memory; no daemon (see the module doc)")
    ap.add_argument("--reps", type=int, default=1, help="proofs of the same request (--in-process)")
    ap.add_argument(
        "--witness-processes",
        type=int,
        default=0,
        metavar="N",
        help="synthesis.python_processes: with N >= 2 one partition's witness and its opening checks are computed "
        "in parts, a range of challenges per worker process (cuzk.circuit.split); 0 = in this process",
    )
    ap.add_argument("--json", help="write the figures here")
    a = ap.parse_args(argv)
    size = parse_size(a.sector_size, "--sector-size")
    sp = P.PARAMS[size]
    proof_id = sp.seal_proof_ids["V1_1"]
    n_chal = a.challenges or sp.porep_challenges_per_partition
    from ..filecoin.porep import PoRep

    if not 0 < n_chal <= PoRep.MAX_BENCH_CHALLENGES:
        print(f"--challenges: {n_chal} is not between 1 and {PoRep.MAX_BENCH_CHALLENGES}", file=sys.stderr)
        return 2
    params = {"proof_id": proof_id, "challenges": n_chal}
    spec = CircuitSpec.parse("cuzk.filecoin.porep:PoRep", params)
    fig: dict[str, float] = {}

    t = time.perf_counter()
    rec = record(spec.load())
    fig["record_s"] = time.perf_counter() - t
    print(
        f"PoRep {a.sector_size}: {rec.layout.n_constraints:,} constraints, {rec.layout.n_wires:,} wires (recording {fig['record_s']:.1f} s)"
    )
    if a.in_process:
        return _in_process(a, rec, spec, size, proof_id, n_chal, fig)
    from ..engine.config import load_config  # the daemon's modules (gRPC code) only for the daemon path
    from ..server.client import Client, DaemonError
    from ..server.daemon import Daemon

    key_dir = Path(a.key)
    key_dir.mkdir(parents=True, exist_ok=True)
    zk = key_dir / f"porep-{proof_id}-{rec.key}.zkey"
    if not zk.exists():
        t = time.perf_counter()
        if a.backend == "gpu":
            from ..backends.gpu import setup as gpu_setup

            pk = gpu_setup.setup(rec.pce, style="snarkjs")
        else:
            from ..groth16 import setup

            pk = setup.setup(rec.pce, quiet=True)
        zkey.write_zkey(zk, pk)
        fig["setup_s"] = time.perf_counter() - t
        print(f"development key: {zk} ({fig['setup_s']:.1f} s)")
    vk = zkey.read_zkey(zk).vk

    obj, chal = _seal_and_open(size, proof_id, n_chal, fig)
    data = V.encode(obj)
    print(f"sealed in {fig['seal_s']:.2f} s; vanilla proof of challenges {chal}: {len(data)} bytes")

    with tempfile.TemporaryDirectory(prefix="cuzk-porep-") as tmp:
        over = {"daemon.state_dir": tmp, "daemon.listen": f"unix://{tmp}/d.sock", "gpus.backend": a.backend}
        over["synthesis.python_processes"] = max(0, a.witness_processes)
        over["registration.roots"] = [tmp, os.path.dirname(str(zk))]
        d = Daemon(load_config(overrides=over)).start()
        try:
            with Client(d.address) as c:
                c.register("porep", python=spec.target, python_params=params, zkey=str(zk))
                t = time.perf_counter()
                res = c.prove("porep", partitions=[("vanilla", data)])
                fig["request_s"] = time.perf_counter() - t
                tm = res.timings
                fig.update({"synthesis_ms": tm["synthesis_ms"], "prover_ms": tm["gpu_compute_ms"], "total_ms": tm["total_ms"]})
                proof = formats.Proof.from_bytes(res.proofs[0], vk.curve)
                ok = verifier.verify(vk, res.public[0], proof)
                print(
                    f"proved through the daemon in {fig['request_s']:.1f} s (synthesis {tm['synthesis_ms'] / 1e3:.1f} s, "
                    f"prover {tm['gpu_compute_ms'] / 1e3:.1f} s); verifies: {ok}"
                )
                bad = dict(obj)
                bad["challenges"] = [dict(x) for x in obj["challenges"]]
                bad["challenges"][-1]["data_path"] = ["00" * 32] + obj["challenges"][-1]["data_path"][1:]
                try:
                    c.submit("porep", partitions=[("vanilla", V.encode(bad))])
                    refused = "accepted (wrong)"
                except DaemonError as e:
                    refused = f"{e.code}: {e.details}" if hasattr(e, "details") else str(e)
                print(f"tampered vanilla proof: {refused}")
        finally:
            d.stop(30)
    if a.json:
        with open(a.json, "w", encoding="utf-8") as fh:
            json.dump(fig | {"constraints": rec.layout.n_constraints, "verified": ok}, fh, indent=1)
    return 0 if ok else 1


def _seal_and_open(size: int, proof_id: int, n_chal: int, fig: dict) -> tuple[dict, list[int]]:
    """Seal a sector of ``size`` (a fixed data pattern, random ticket and replica keys) and open partition
    0 at ``n_chal`` interactive challenges of a random seed: (the vanilla proof's JSON view, challenges);
    seal_s and vanilla_s go into ``fig``."""
    from ..cli.porep import sector_data
    from ..filecoin import params as P
    from ..filecoin import vanilla as V
    from ..filecoin.porep import challenge_openings
    from ..filecoin.seal import seal

    t = time.perf_counter()
    sealed = seal(sector_data(size, None, 7), proof_id, secrets.token_bytes(32), 1, secrets.token_bytes(32))
    fig["seal_s"] = time.perf_counter() - t
    seed = secrets.token_bytes(32)
    chal = V.interactive_challenges(P.PARAMS[size].nodes, sealed.replica_id, seed, 0, n_chal)
    t = time.perf_counter()
    obj = challenge_openings(sealed, chal) | {"seed": seed.hex(), "partition": 0, "sector_id": 1}
    fig["vanilla_s"] = time.perf_counter() - t
    return obj, chal


def _in_process(a: argparse.Namespace, rec, spec, size: int, proof_id: int, n_chal: int, fig: dict) -> int:
    import resource
    import statistics

    from ..backends import get_backend
    from ..circuit.circuit import witness
    from ..filecoin import vanilla as V
    from ..groth16 import prover, verifier

    t = time.perf_counter()
    if a.backend == "gpu":
        from ..backends.gpu import setup as gpu_setup

        pk = gpu_setup.setup(rec.pce, style="bellperson", quiet=True, host_copy=False)
    else:
        from ..groth16 import setup

        pk = setup.setup(rec.pce, style="bellperson", quiet=True)
    fig["setup_s"] = time.perf_counter() - t
    print(f"development key in memory ({a.backend} setup, {fig['setup_s']:.1f} s)", flush=True)

    data = V.encode(_seal_and_open(size, proof_id, n_chal, fig)[0])
    print(f"sealed in {fig['seal_s']:.2f} s; vanilla proof of {n_chal} challenges: {len(data)} bytes", flush=True)

    circuit, backend = spec.load(), get_backend(a.backend)
    pool = None
    fig["witness_processes"] = a.witness_processes
    if a.witness_processes > 0:  # the daemon's synthesis.python_processes: its witness pool
        from ..circuit.circuit import WitnessPool

        pool = WitnessPool(spec, a.witness_processes)
        t = time.perf_counter()
        pool.witness(circuit.parse_binary(data, 0))  # spawn, imports, numba, each worker's allocation blocks
        fig["witness_pool_first_s"] = time.perf_counter() - t
        how = f"in parts ({min(a.witness_processes, n_chal)} ranges of challenges)" if pool.splits() else "whole"
        print(
            f"witness pool of {a.witness_processes} processes, witnesses {how}: first {fig['witness_pool_first_s']:.1f} s",
            flush=True,
        )
    runs: list[dict[str, float]] = []
    ok = True
    for r in range(max(1, a.reps)):
        t0 = time.perf_counter()
        inputs = circuit.parse_binary(data, 0)  # what the daemon does at submission (the openings checked)
        if pool is None:
            circuit.parse_inputs(inputs)
        else:
            pool.check(inputs)  # the registry's check with python_processes (in parts when the circuit splits)
        t1 = time.perf_counter()
        w = witness(circuit, inputs, rec.layout) if pool is None else pool.witness(inputs)
        t2 = time.perf_counter()
        if r == 0 and a.backend == "gpu":  # the first proof on a fresh device loads modules and pools
            t = time.perf_counter()
            res = prover.prove(pk, w, backend)
            ok = verifier.verify(pk.vk, res.public, res.proof) and ok
            fig["cold_prove_s"] = time.perf_counter() - t
            print(f"cold proof (warm-up) {fig['cold_prove_s']:.2f} s; verifies: {ok}", flush=True)
        t3 = time.perf_counter()
        res = prover.prove(pk, w, backend)
        t4 = time.perf_counter()
        ok = verifier.verify(pk.vk, res.public, res.proof) and ok
        t5 = time.perf_counter()
        row = {"parse_s": t1 - t0, "witness_s": t2 - t1, "prove_s": t4 - t3, "verify_s": t5 - t4}
        row["total_s"] = row["parse_s"] + row["witness_s"] + row["prove_s"] + row["verify_s"]
        row |= {f"{k}_ms": v for k, v in res.timings.items()}
        print(
            f"request {r}: parse {row['parse_s']:.2f} s, witness {row['witness_s']:.2f} s, prove {row['prove_s']:.3f} s, "
            f"verify {row['verify_s']:.3f} s, total {row['total_s']:.2f} s; verifies: {ok}",
            flush=True,
        )
        runs.append(row)
    if pool is not None:
        pool.close()
    med = {k: statistics.median(x[k] for x in runs) for k in runs[0]}
    spread = {k: (min(x[k] for x in runs), max(x[k] for x in runs)) for k in ("total_s", "witness_s", "prove_s")}
    fig |= {
        "constraints": rec.layout.n_constraints,
        "wires": rec.layout.n_wires,
        "challenges": n_chal,
        "sector_size": a.sector_size,
        "backend": a.backend,
        "median": med,
        "spread": spread,
        "runs": runs,
        "verified": ok,
        "host_rss_gib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20,
    }
    print(
        f"| {a.sector_size} x {n_chal} challenges | {rec.layout.n_constraints:,} | witness processes {a.witness_processes} | record {fig['record_s']:.1f} s | "
        f"setup {fig['setup_s']:.1f} s | seal {fig['seal_s']:.1f} s | synthesis {med['parse_s'] + med['witness_s']:.2f} s | "
        f"prove {med['prove_s']:.3f} s | total {med['total_s']:.2f} s ({spread['total_s'][0]:.2f}-{spread['total_s'][1]:.2f}) | "
        f"verified {ok} | RSS {fig['host_rss_gib']:.1f} GiB |",
        flush=True,
    )
    if a.json:
        with open(a.json, "w", encoding="utf-8") as fh:
            json.dump(fig, fh, indent=1)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
