"""Built-in synthetic circuits with development keys, for the demo, tests and benchmarks.

``make_dev_circuit(folder, "hash", log_n=10)`` writes ``circuit.r1cs``, a development proving key
(``circuit.zkey``, or ``circuit.params`` for the bellperson style) and ``witness.wtns``, and returns their
paths. The circuit's structure does not depend on the seed, so :func:`witness_bytes` with other seeds
gives more valid witnesses for the same key. Development keys only (single-party setup).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..r1cs import synthetic
from ..r1cs.r1cs import write_r1cs
from ..r1cs.wtns import wtns_bytes


@dataclass
class DevCircuit:
    folder: Path
    shape: str
    n_constraints: int
    r1cs: str
    key: str
    key_format: str  # "zkey" | "params"
    wtns: str
    n_wires: int
    domain_log: int
    curve: str = "bls12_381"

    def spec(self, cid: str, **extra: Any) -> dict[str, Any]:
        """A circuit spec (RegisterCircuit / ``[[circuits]]`` keys) for this circuit, plus ``extra``."""
        d: dict[str, Any] = {"id": cid, "r1cs": self.r1cs, self.key_format: self.key}
        d.update(extra)
        return d

    def witness(self, seed: int) -> bytes:
        return witness_bytes(self.shape, self.n_constraints, seed, self.curve)


def witness_bytes(shape: str, n_constraints: int, seed: int, curve: str = "bls12_381") -> bytes:
    return wtns_bytes(synthetic.make(shape, n_constraints, seed=seed, curve=curve).witness, curve)


def make_dev_circuit(
    folder: str | os.PathLike[str],
    shape: str = "hash",
    log_n: int | None = 10,
    n_constraints: int | None = None,
    style: str = "snarkjs",
    seed: int = 1,
    curve: str = "bls12_381",
    setup_on: str = "cpu",
) -> DevCircuit:
    """``setup_on="gpu"``: the keys are made on the current GPU (a 2^24 key: seconds instead of the CPU
    setup's many minutes) and the device copy is freed once the key file is written."""
    from ..groth16 import params, setup, zkey

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    if n_constraints is not None:
        n = n_constraints
    elif log_n is not None:
        n = synthetic.fit_domain(shape, log_n)
    else:
        raise ValueError("make_dev_circuit: give log_n or n_constraints")
    c = synthetic.make(shape, n, seed=seed, curve=curve)
    r1cs = folder / "circuit.r1cs"
    write_r1cs(r1cs, c.pce, c.n_pub_out, c.n_pub_in, c.n_prv_in)
    if setup_on == "gpu":
        pk = _gpu_setup(c.pce, style)
    else:
        pk = setup.setup(c.pce, style=style, quiet=True)
    if style == "snarkjs":
        key, fmt = folder / "circuit.zkey", "zkey"
        zkey.write_zkey(key, pk)
    else:
        key, fmt = folder / "circuit.params", "params"
        params.write_params(key, pk)
    wt = folder / "witness.wtns"
    wt.write_bytes(wtns_bytes(c.witness, curve))
    from ..groth16.formats import write_vk_json

    write_vk_json(folder / "verification_key.json", pk.vk)
    return DevCircuit(folder, shape, n, str(r1cs), str(key), fmt, str(wt), c.pce.n_wires, pk.domain_log, pk.curve.name)


def _gpu_setup(pce: Any, style: str) -> Any:
    import cupy

    from ..backends.gpu import setup as gsetup
    from ..backends.gpu.backend import evict_device_key

    pk = gsetup.setup(pce, style, quiet=True, host_copy=True)
    evict_device_key(pk, cupy.cuda.Device().id)  # the daemons under test load the key file themselves
    cupy.get_default_memory_pool().free_all_blocks()
    return pk
