"""Proof and key encodings: snarkjs JSON (proof.json, public.json, verification_key.json) and the
192-byte bellperson proof (compressed A || B || C, zcash flags, big-endian).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass

from py_arkworks_bls12381 import GT, G1Point, G2Point

from .. import CuzkError
from ..curve import points as pts
from ..field.constants import Q, R
from .keys import VerifyingKey

PROOF_BYTES = 192


class JsonFormatError(CuzkError):
    pass


@dataclass
class Proof:
    a: G1Point
    b: G2Point
    c: G1Point

    def to_bytes(self) -> bytes:
        """bellperson layout: compressed A (48) || B (96) || C (48)."""
        return self.a.to_compressed_bytes() + self.b.to_compressed_bytes() + self.c.to_compressed_bytes()

    @staticmethod
    def from_bytes(data: bytes, what: str = "proof") -> Proof:
        if len(data) != PROOF_BYTES:
            raise pts.PointError(f"{what}: {len(data)} bytes, expected {PROOF_BYTES} (compressed A || B || C)")
        return Proof(
            pts.g1_from_compressed(data[:48], f"{what}: A"),
            pts.g2_from_compressed(data[48:144], f"{what}: B"),
            pts.g1_from_compressed(data[144:], f"{what}: C"),
        )

    def __eq__(self, other) -> bool:
        return isinstance(other, Proof) and self.a == other.a and self.b == other.b and self.c == other.c


# ---------------------------------------------------------------------------------------------
# JSON helpers


def _load(path: str | os.PathLike, what: str):
    try:
        with open(path) as fh:
            return json.load(fh)
    except OSError as e:
        raise JsonFormatError(f"{path}: cannot read {what}: {e.strerror}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise JsonFormatError(f"{path}: not valid JSON ({what}): {e}") from None


def _dump(path: str | os.PathLike, obj) -> None:
    tmp = os.fspath(path) + ".tmp"
    with open(tmp, "w") as fh:
        json.dump(obj, fh, indent=1)
        fh.write("\n")
    os.replace(tmp, path)


def _decimal(v, where: str) -> int:
    """A JSON decimal string (ASCII digits only, as snarkjs writes) or a JSON integer."""
    if isinstance(v, bool) or not isinstance(v, (str, int)):
        raise JsonFormatError(f"{where}: expected a decimal string, got {type(v).__name__}")
    if isinstance(v, int):
        return v
    digits = v[1:] if v.startswith("-") else v
    if not (digits.isascii() and digits.isdigit()):
        raise JsonFormatError(f"{where}: {v!r} is not a decimal integer")
    return int(v, 10)


def _int(v, where: str, bound: int) -> int:
    x = _decimal(v, where)
    if not 0 <= x < bound:
        raise JsonFormatError(f"{where}: value out of range [0, {'r' if bound == R else 'q'})")
    return x


def _list(v, n: int, where: str) -> list:
    if not isinstance(v, list) or len(v) != n:
        raise JsonFormatError(f"{where}: expected a list of {n} entries")
    return v


def g1_from_json(v, where: str) -> G1Point:
    v = _list(v, 3, where)
    x, y, z = (_int(c, f"{where}[{i}]", Q) for i, c in enumerate(v))
    if z == 0:
        return G1Point.identity()
    if z != 1:
        raise JsonFormatError(f"{where}: projective z = {z}, expected 1 (affine) or 0 (infinity)")
    return pts.g1_from_ints(x, y, where)


def g2_from_json(v, where: str) -> G2Point:
    v = _list(v, 3, where)
    (x0, x1), (y0, y1), (z0, z1) = (
        [_int(c, f"{where}[{i}][{j}]", Q) for j, c in enumerate(_list(e, 2, f"{where}[{i}]"))] for i, e in enumerate(v)
    )
    if (z0, z1) == (0, 0):
        return G2Point.identity()
    if (z0, z1) != (1, 0):
        raise JsonFormatError(f"{where}: projective z = [{z0}, {z1}], expected [1, 0]")
    return pts.g2_from_ints(x0, x1, y0, y1, where)


def g1_to_json(p: G1Point) -> list[str]:
    xy = pts.g1_to_ints(p)
    if xy is None:
        return ["0", "1", "0"]
    return [str(xy[0]), str(xy[1]), "1"]


def g2_to_json(p: G2Point) -> list[list[str]]:
    c = pts.g2_to_ints(p)
    if c is None:
        return [["0", "0"], ["1", "0"], ["0", "0"]]
    return [[str(c[0]), str(c[1])], [str(c[2]), str(c[3])], ["1", "0"]]


# ---------------------------------------------------------------------------------------------
# proof.json / public.json


def proof_to_json(p: Proof) -> dict:
    return {"pi_a": g1_to_json(p.a), "pi_b": g2_to_json(p.b), "pi_c": g1_to_json(p.c), "protocol": "groth16", "curve": "bls12381"}


def proof_from_json(obj, where: str = "proof") -> Proof:
    if not isinstance(obj, dict):
        raise JsonFormatError(f"{where}: expected a JSON object with pi_a, pi_b, pi_c")
    for k in ("pi_a", "pi_b", "pi_c"):
        if k not in obj:
            raise JsonFormatError(f"{where}: missing field {k!r}")
    if obj.get("protocol", "groth16") != "groth16":
        raise JsonFormatError(f"{where}: protocol {obj.get('protocol')!r}, expected 'groth16'")
    if obj.get("curve", "bls12381") not in ("bls12381", "bls12-381"):
        raise JsonFormatError(f"{where}: curve {obj.get('curve')!r}, expected 'bls12381'")
    return Proof(
        g1_from_json(obj["pi_a"], f"{where}: pi_a"),
        g2_from_json(obj["pi_b"], f"{where}: pi_b"),
        g1_from_json(obj["pi_c"], f"{where}: pi_c"),
    )


def write_proof_json(path, p: Proof) -> None:
    _dump(path, proof_to_json(p))


def read_proof_json(path) -> Proof:
    return proof_from_json(_load(path, "proof"), str(path))


def public_from_json(obj, where: str = "public signals", check_range: bool = True) -> list[int]:
    if not isinstance(obj, list):
        raise JsonFormatError(f"{where}: expected a JSON array of decimal strings")
    out = []
    for i, v in enumerate(obj):
        x = _decimal(v, f"{where}[{i}]")
        if check_range and not 0 <= x < R:
            raise JsonFormatError(f"{where}[{i}]: public input not in [0, r)")
        out.append(x)
    return out


def write_public_json(path, public: list[int]) -> None:
    _dump(path, [str(x) for x in public])


def read_public_json(path, check_range: bool = True) -> list[int]:
    return public_from_json(_load(path, "public signals"), str(path), check_range)


# ---------------------------------------------------------------------------------------------
# verification_key.json


def _gt_to_json(e: GT) -> list:
    """Fq12 = c0 + c1 w, Fq6 = c0 + c1 v + c2 v^2, Fq2 = c0 + c1 u; arkworks serialises the 12 Fq
    coefficients in that nesting order, little-endian, 48 bytes each (hex of the serialisation)."""
    raw = bytes.fromhex(str(e))
    c = [str(int.from_bytes(raw[48 * i : 48 * i + 48], "little")) for i in range(12)]
    return [[[c[0], c[1]], [c[2], c[3]], [c[4], c[5]]], [[c[6], c[7]], [c[8], c[9]], [c[10], c[11]]]]


def vk_to_json(vk: VerifyingKey) -> dict:
    return {
        "protocol": "groth16",
        "curve": "bls12381",
        "nPublic": vk.n_public,
        "vk_alpha_1": g1_to_json(vk.alpha1),
        "vk_beta_2": g2_to_json(vk.beta2),
        "vk_gamma_2": g2_to_json(vk.gamma2),
        "vk_delta_2": g2_to_json(vk.delta2),
        "vk_alphabeta_12": _gt_to_json(GT.pairing(vk.alpha1, vk.beta2)),
        "IC": [g1_to_json(p) for p in vk.ic],
    }


def vk_from_json(obj, where: str = "verification key") -> VerifyingKey:
    if not isinstance(obj, dict):
        raise JsonFormatError(f"{where}: expected a JSON object")
    if obj.get("protocol") != "groth16":
        raise JsonFormatError(f"{where}: protocol {obj.get('protocol')!r}, expected 'groth16'")
    if obj.get("curve") != "bls12381":
        raise JsonFormatError(f"{where}: curve {obj.get('curve')!r}, expected 'bls12381'")
    for k in ("vk_alpha_1", "vk_beta_2", "vk_gamma_2", "vk_delta_2", "IC"):
        if k not in obj:
            raise JsonFormatError(f"{where}: not a Groth16 verification key (missing field {k!r})")
    ic = obj["IC"]
    if not isinstance(ic, list) or not ic:
        raise JsonFormatError(f"{where}: IC must be a non-empty list")
    if "nPublic" in obj and obj["nPublic"] != len(ic) - 1:
        raise JsonFormatError(f"{where}: nPublic = {obj['nPublic']} but IC has {len(ic)} points (expected nPublic + 1)")
    return VerifyingKey(
        g1_from_json(obj["vk_alpha_1"], f"{where}: vk_alpha_1"),
        g2_from_json(obj["vk_beta_2"], f"{where}: vk_beta_2"),
        g2_from_json(obj["vk_gamma_2"], f"{where}: vk_gamma_2"),
        g2_from_json(obj["vk_delta_2"], f"{where}: vk_delta_2"),
        [g1_from_json(p, f"{where}: IC[{i}]") for i, p in enumerate(ic)],
    )


def write_vk_json(path, vk: VerifyingKey) -> None:
    _dump(path, vk_to_json(vk))


def read_vk_json(path) -> VerifyingKey:
    return vk_from_json(_load(path, "verification key"), str(path))
