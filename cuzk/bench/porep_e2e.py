"""A PoRep partition proved through the daemon from its vanilla proof, end to end:

    python -m cuzk.bench.porep_e2e [--sector-size 2KiB] [--backend cpu|gpu] [--key DIR] [--reps 1]

Records the PoRep circuit (cuzk.filecoin.porep:PoRep with the size's challenges per partition), makes a
development key (cached in --key DIR), starts a daemon on a temporary socket, seals a sector and writes
the vanilla proof of partition 0 (interactive challenges from a random seed), submits its bytes as the
request's ``vanilla_proof``, verifies the returned proof with the key's verifying key, and submits the
same proof tampered (one data-path sibling) to show it is refused before proving, naming the challenge.
Prints the phases: seal, vanilla proof, recording, setup, request (synthesis, prover, total).
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
    from ..cli.porep import sector_data
    from ..engine.config import load_config
    from ..filecoin import params as P
    from ..filecoin import vanilla as V
    from ..filecoin.porep import challenge_openings
    from ..filecoin.seal import seal
    from ..groth16 import formats, verifier, zkey
    from ..server.client import Client, DaemonError
    from ..server.daemon import Daemon

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sector-size", default="2KiB")
    ap.add_argument("--backend", default="cpu", choices=["cpu", "gpu"])
    ap.add_argument("--key", default=os.path.expanduser("~/.cache/cuzk/porep-keys"), help="folder of the development keys")
    ap.add_argument("--json", help="write the figures here")
    a = ap.parse_args(argv)
    size = parse_size(a.sector_size, "--sector-size")
    sp = P.PARAMS[size]
    proof_id = sp.seal_proof_ids["V1_1"]
    params = {"proof_id": proof_id, "challenges": sp.porep_challenges_per_partition}
    spec = CircuitSpec.parse("cuzk.filecoin.porep:PoRep", params)
    fig: dict[str, float] = {}

    t = time.perf_counter()
    rec = record(spec.load())
    fig["record_s"] = time.perf_counter() - t
    print(
        f"PoRep {a.sector_size}: {rec.layout.n_constraints:,} constraints, {rec.layout.n_wires:,} wires (recording {fig['record_s']:.1f} s)"
    )
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

    t = time.perf_counter()
    sealed = seal(sector_data(size, None, 7), proof_id, secrets.token_bytes(32), 1, secrets.token_bytes(32))
    fig["seal_s"] = time.perf_counter() - t
    seed = secrets.token_bytes(32)
    chal = V.interactive_challenges(sp.nodes, sealed.replica_id, seed, 0, sp.porep_challenges_per_partition)
    t = time.perf_counter()
    obj = challenge_openings(sealed, chal) | {"seed": seed.hex(), "partition": 0, "sector_id": 1}
    data = V.encode(obj)
    fig["vanilla_s"] = time.perf_counter() - t
    print(f"sealed in {fig['seal_s']:.2f} s; vanilla proof of challenges {chal}: {len(data)} bytes")

    with tempfile.TemporaryDirectory(prefix="cuzk-porep-") as tmp:
        over = {"daemon.state_dir": tmp, "daemon.listen": f"unix://{tmp}/d.sock", "gpus.backend": a.backend}
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


if __name__ == "__main__":
    sys.exit(main())
