"""``cuzk gen-vanilla``: seal sectors and write a vanilla proof: one PoRep partition, one WindowPoSt
partition or a WinningPoSt.

    cuzk gen-vanilla [--kind porep] --sector-size 2KiB [--data FILE] [--seed HEX] [--sector-id N]
        [--prover-id HEX] [--ticket HEX] [--partition K] [--synthetic] -o PROOF.cvp [--json PROOF.json]
    cuzk gen-vanilla --kind window-post|winning-post --sector-size 2KiB [--sectors N] [--randomness HEX]
        [--sector-id N] [--prover-id HEX] [--partition K] [--post-proof-id ID] -o PROOF.cvp [--json ...]

A sector's data is FILE fr32-padded and zero-filled to the sector size (random data from --data-seed
without FILE; sector i of several uses --data-seed + i and sector id --sector-id + i); PoRep's
challenges come from the seed as Filecoin derives them (interactive PoRep, or ``--synthetic``); PoSt's
from the randomness (WindowPoSt: every sealed sector is in the partition; WinningPoSt: the sealed sectors
are the sector set and the challenged one is drawn from it with the prover id). The proof is checked
natively before it is written.
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
    if a.kind != "porep":
        return _gen_post(a)
    if a.sectors != 1:
        raise CuzkError("--sectors: a PoRep vanilla proof is of one sector")
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


def _gen_post(a) -> int:
    from ..filecoin import params as P
    from ..filecoin import post
    from ..filecoin import vanilla as V
    from ..filecoin.seal import seal
    from .filecoin import parse_size

    size = parse_size(a.sector_size, "--sector-size")
    if size not in P.PARAMS:
        raise CuzkError(
            f"--sector-size: {size} bytes is not a Filecoin sector size ({', '.join(str(s) for s in sorted(P.PARAMS))})"
        )
    if a.synthetic:
        raise CuzkError("--synthetic: a PoRep option (PoSt has no synthetic challenges)")
    if a.sectors < 1:
        raise CuzkError(f"--sectors: {a.sectors}; at least 1")
    spp = P.PARAMS[size].window_post_sector_count
    if a.kind == post.WINDOW and a.sectors > spp:
        raise CuzkError(f"--sectors: {a.sectors}; a WindowPoSt partition of {size}-byte sectors holds at most {spp}")
    if a.partition < 0:
        raise CuzkError(f"--partition: {a.partition}; not negative")
    if a.kind == post.WINNING and a.partition:
        raise CuzkError("--partition: a WinningPoSt has one partition (0)")
    proof_id = post.post_proof_id(a.kind, size) if a.post_proof_id is None else a.post_proof_id
    try:
        pp = post.post_proof(proof_id)
    except ValueError as e:
        raise CuzkError(f"--post-proof-id: {e}") from None
    if pp.kind != a.kind or pp.sector_size != size:
        raise CuzkError(f"--post-proof-id: {proof_id} is {pp.name}, not a {a.kind} of {size}-byte sectors")
    if a.randomness is None:
        randomness = (int.from_bytes(secrets.token_bytes(32), "little") % post.R).to_bytes(32, "little")
    else:
        randomness = _hex32(a.randomness, "--randomness")
        if int.from_bytes(randomness, "little") >= post.R:
            raise CuzkError("--randomness: not a field element (little-endian, below the BLS12-381 scalar modulus)")
    prover, ticket = _hex32(a.prover_id, "--prover-id"), _hex32(a.ticket, "--ticket")
    seal_id = P.PARAMS[size].seal_proof_ids["V1_1"]
    sealed = []
    for i in range(a.sectors):
        sid = a.sector_id + i
        data = sector_data(size, a.data if i == 0 else None, a.data_seed + i)
        sealed.append((sid, seal(data, seal_id, prover, sid, ticket)))
    obj = post.post_openings(sealed, randomness, a.kind, proof_id, a.partition, prover)
    obj["version"] = V.VERSION_POST
    post.verify_post_openings(obj)
    V.write(a.output, obj)
    if a.json:
        with open(a.json, "w", encoding="utf-8") as fh:
            json.dump(obj, fh)
    print(f"sealed {a.sectors} {size}-byte sector(s) (seal proof id {seal_id}); {pp.name} (PoSt proof id {proof_id})")
    for sec in obj["sectors"]:
        leaves = [c["index"] for c in sec["challenges"]]
        print(f"  sector {sec['sector_id']}: CommR {int(sec['comm_r']):#066x}, {len(leaves)} challenges {leaves}")
    print(f"wrote {a.output}")
    return 0


def add_parsers(sub) -> None:
    s = sub.add_parser("gen-vanilla", help="seal sectors and write a vanilla proof (PoRep partition, WindowPoSt, WinningPoSt)")
    s.add_argument("--kind", choices=["porep", "window-post", "winning-post"], default="porep", help="the proof kind")
    s.add_argument("--sector-size", default="2KiB", help="2KiB, 8MiB, 512MiB, 32GiB, 64GiB")
    s.add_argument("--data", help="the sector's data (unpadded; fr32-padded and zero-filled here)")
    s.add_argument("--data-seed", type=int, default=0, help="seed of the random data when --data is not given")
    s.add_argument("--seed", help="the interactive randomness (64 hex digits; random by default)")
    s.add_argument("--prover-id", help="64 hex digits (random by default)")
    s.add_argument("--ticket", help="64 hex digits (random by default)")
    s.add_argument("--sector-id", type=int, default=1)
    s.add_argument("--partition", type=int, default=0)
    s.add_argument("--synthetic", action="store_true", help="synthetic PoRep challenges instead of interactive")
    s.add_argument(
        "--sectors", type=int, default=1, help="PoSt: sectors to seal (WindowPoSt: the partition's; WinningPoSt: the set)"
    )
    s.add_argument("--randomness", help="PoSt: the challenge randomness (64 hex digits, a field element; random by default)")
    s.add_argument("--post-proof-id", type=int, help="PoSt: the registered PoSt proof (default: Winning V1 / Window V1_2)")
    s.add_argument("-o", "--output", required=True, help="the vanilla proof (.cvp)")
    s.add_argument("--json", help="also write its JSON view")
    s.set_defaults(fn=cmd_gen_vanilla)
