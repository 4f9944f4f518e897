"""Make GPU-proved test vectors (run on the device): every committed circom fixture proved by the GPU
backend, written as snarkjs proof.json / public.json plus the 192-byte proof, so that CI (which has no
GPU) can check them with `snarkjs groth16 verify` and our verifier (tests/test_gpu_vectors.py).

    python -m cuzk.bench.make_gpu_vectors OUT_DIR      # then copy OUT_DIR/* to tests/vectors/gpu/
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from ..groth16 import formats, prover, verifier, zkey
from ..r1cs import wtns

ROOT = Path(__file__).resolve().parents[2]  # the repository: tests/fixtures


def main() -> int:
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "gpu_vectors")
    out.mkdir(parents=True, exist_ok=True)
    import cupy

    device = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)["name"].decode()
    # the kernels that made the proofs: cubin names carry the hash of their source and options
    from ..backends import get_backend
    from ..backends.gpu import build

    fixtures = ROOT / "tests" / "fixtures"
    folders = [d for d in sorted(fixtures.iterdir()) if (d / "circuit.zkey").exists()]
    folders += [d for d in sorted((fixtures / "bn254").iterdir()) if (d / "circuit.zkey").exists()]
    for fixture in folders:
        zk = fixture / "circuit.zkey"
        pk = zkey.read_zkey(zk)
        info = build.info(pk.curve)
        kernels = {m: info["modules"][m]["cubin"].rsplit("/", 1)[-1] for m in build.MODULES}
        res = prover.prove(pk, wtns.read_wtns(fixture / "witness.wtns", curve=pk.curve), get_backend("gpu"))
        assert verifier.verify(pk.vk, res.public, res.proof)
        name = fixture.name if pk.curve.name == "bls12_381" else f"{pk.curve.name}-{fixture.name}"
        formats.write_proof_json(out / f"{name}.proof.json", res.proof)
        formats.write_public_json(out / f"{name}.public.json", res.public)
        (out / f"{name}.proof.bin").write_bytes(res.proof.to_bytes())
        meta = {
            "fixture": name,
            "backend": res.backend,
            "device": device,
            "kernels": kernels,
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "prove_ms": round(res.timings["total"], 1),
        }
        (out / f"{name}.meta.json").write_text(json.dumps(meta, indent=1) + "\n")
        print(f"{name}: proved on {res.backend} in {res.timings['total']:.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
