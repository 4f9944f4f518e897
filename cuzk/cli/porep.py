"""``cuzk gen-vanilla``: seal a sector and write the vanilla PoRep proof of one partition.

    cuzk gen-vanilla --sector-size 2KiB [--data FILE] [--seed HEX] [--sector-id N] [--prover-id HEX]
        [--ticket HEX] [--partition K] [--synthetic] -o PROOF.cvp [--json PROOF.json]

The sector's data is FILE fr32-padded and zero-filled to the sector size (random data from --data-seed
without FILE); the challenges come from the seed as Filecoin derives them (interactive PoRep, or
``--synthetic``); the proof is checked natively before it is written.
"""

from __future__ import annotations

import json
import os
import secrets

from .. import CuzkError


def _hex32(text: str | None, what: str) -> bytes:
    if text is None:
        return secrets.token_bytes(32)
    try:
        b = bytes.fromhex(text)
    except ValueError:
        raise CuzkError(f"{what}: {text!r} is not hex") from None
    if len(b) != 32:
        raise CuzkError(f"{what}: expected 32 bytes (64 hex digits), got {len(b)}")
    return b


def sector_data(size: int, path: str | None, seed: int) -> bytes:
    """FILE fr32-padded and zero-filled to ``size`` bytes, or seeded random fr32-valid data."""
    import numpy as np

    if path is None:
        d = np.random.default_rng(seed).integers(0, 256, (size // 32, 32), dtype=np.uint8)
        d[:, 31] &= 0x3F
        return d.tobytes()
    from ..filecoin.fr32 import fr32_pad, unpadded_size

    if os.path.isdir(path):
        raise CuzkError(f"{path}: is a directory, expected a file")
    try:
        with open(path, "rb") as fh:
            raw = fh.read(unpadded_size(size) + 1)
    except OSError as e:
        raise CuzkError(f"{path}: cannot read: {e.strerror}") from None
    if len(raw) > unpadded_size(size):
        raise CuzkError(f"{path}: more than the {unpadded_size(size)} bytes a {size}-byte sector holds")
    raw += bytes(-len(raw) % 127)
    padded = fr32_pad(raw)
    return padded + bytes(size - len(padded))


def cmd_gen_vanilla(a) -> int:
    from ..filecoin import params as P
    from ..filecoin import vanilla as V
    from ..filecoin.porep import challenge_openings, verify_openings
    from ..filecoin.seal import seal
    from .filecoin import parse_size

    size = parse_size(a.sector_size, "--sector-size")
    if size not in P.PARAMS:
        raise CuzkError(
            f"--sector-size: {size} bytes is not a Filecoin sector size ({', '.join(str(s) for s in sorted(P.PARAMS))})"
        )
    sp = P.PARAMS[size]
    proof_id = sp.seal_proof_ids["V1_1_Synth" if a.synthetic else "V1_1"]  # another porep id: another graph
    seed, prover, ticket = _hex32(a.seed, "--seed"), _hex32(a.prover_id, "--prover-id"), _hex32(a.ticket, "--ticket")
    sealed = seal(sector_data(size, a.data, a.data_seed), proof_id, prover, a.sector_id, ticket)
    count = sp.porep_challenges_per_partition
    if not 0 <= a.partition < sp.porep_partitions:
        raise CuzkError(f"--partition: {a.partition}; a {size}-byte sector has {sp.porep_partitions} partition(s)")
    if a.synthetic:
        chal = V.synthetic_partition_challenges(sp.nodes, sealed.replica_id, sealed.comm_r_bytes(), seed, a.partition, count)
    else:
        chal = V.interactive_challenges(sp.nodes, sealed.replica_id, seed, a.partition, count)
    obj = challenge_openings(sealed, chal)
    obj.update({"version": V.VERSION, "partition": a.partition, "sector_id": a.sector_id, "seed": seed.hex()})
    verify_openings(obj)
    V.write(a.output, obj)
    if a.json:
        with open(a.json, "w", encoding="utf-8") as fh:
            json.dump(obj, fh)
    print(f"sealed a {size}-byte sector (proof id {proof_id}): CommD {sealed.comm_d.hex()}, CommR {sealed.comm_r:#066x}")
    print(f"wrote {a.output}: partition {a.partition}, {len(chal)} challenges {chal}")
    return 0


def add_parsers(sub) -> None:
    s = sub.add_parser("gen-vanilla", help="seal a sector and write a vanilla PoRep proof of one partition")
    s.add_argument("--sector-size", default="2KiB", help="2KiB, 8MiB, 512MiB, 32GiB, 64GiB")
    s.add_argument("--data", help="the sector's data (unpadded; fr32-padded and zero-filled here)")
    s.add_argument("--data-seed", type=int, default=0, help="seed of the random data when --data is not given")
    s.add_argument("--seed", help="the interactive randomness (64 hex digits; random by default)")
    s.add_argument("--prover-id", help="64 hex digits (random by default)")
    s.add_argument("--ticket", help="64 hex digits (random by default)")
    s.add_argument("--sector-id", type=int, default=1)
    s.add_argument("--partition", type=int, default=0)
    s.add_argument("--synthetic", action="store_true", help="synthetic PoRep challenges instead of interactive")
    s.add_argument("-o", "--output", required=True, help="the vanilla proof (.cvp)")
    s.add_argument("--json", help="also write its JSON view")
    s.set_defaults(fn=cmd_gen_vanilla)
