"""Proof and key encodings: snarkjs JSON (proof.json, public.json, verification_key.json) for every
curve, and the binary proof: bellperson's 192 bytes on BLS12-381 (compressed A || B || C, zcash flags,
big-endian), the EVM layout on BN254 (256 bytes: A, B, C uncompressed big-endian, G2 as c1 || c0; the
order of Solidity calldata).

JSON files carry their curve in the "curve" field (snarkjs writes "bls12381" or "bn128"); a reader given
the curve it expects (the verifying key's) refuses a file of another curve in one line.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any

from .. import CuzkError, curves
from ..curve import curve_of
from ..curve import points as pts
from ..curves import Curve
from .keys import VerifyingKey


class JsonFormatError(CuzkError):
    pass


@dataclass
class Proof:
    a: Any
    b: Any
    c: Any

    @property
    def curve(self) -> Curve:
        return curve_of(self.a)

    def to_bytes(self) -> bytes:
        """BLS12-381: bellperson's compressed A (48) || B (96) || C (48); BN254: EVM A || B || C (256)."""
        c = self.curve
        if c.bellperson:
            return bytes(self.a.to_compressed_bytes() + self.b.to_compressed_bytes() + self.c.to_compressed_bytes())
        return (
            pts.to_uncompressed_be(c, 1, [self.a])
            + pts.to_uncompressed_be(c, 2, [self.b])
            + pts.to_uncompressed_be(c, 1, [self.c])
        )

    @staticmethod
    def from_bytes(data: bytes, curve: Curve | str = "bls12_381", what: str = "proof") -> Proof:
        c = curves.get(curve)
        if len(data) != c.proof_bytes:
            layout = "compressed A || B || C" if c.bellperson else "uncompressed big-endian A || B || C"
            raise pts.PointError(f"{what}: {len(data)} bytes, expected {c.proof_bytes} ({layout}, {c})")
        if c.bellperson:
            g1, g2 = c.n8q, 2 * c.n8q
            return Proof(
                pts.from_compressed(c, 1, data[:g1], f"{what}: A"),
                pts.from_compressed(c, 2, data[g1 : g1 + g2], f"{what}: B"),
                pts.from_compressed(c, 1, data[g1 + g2 :], f"{what}: C"),
            )
        g1, g2 = c.g1_bytes, c.g2_bytes
        (a,) = pts.from_uncompressed_be(c, 1, data[:g1], 1, f"{what}: A")
        (b,) = pts.from_uncompressed_be(c, 2, data[g1 : g1 + g2], 1, f"{what}: B")
        (cc,) = pts.from_uncompressed_be(c, 1, data[g1 + g2 :], 1, f"{what}: C")
        return Proof(a, b, cc)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Proof) and self.a == other.a and self.b == other.b and self.c == other.c

    __hash__ = None  # type: ignore[assignment]  # mutable container of points: not hashable


# ---------------------------------------------------------------------------------------------
# JSON helpers


def _load(path: str | os.PathLike[str], what: str) -> Any:
    try:
        with open(path) as fh:
            return json.load(fh)
    except OSError as e:
        raise JsonFormatError(f"{path}: cannot read {what}: {e.strerror}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise JsonFormatError(f"{path}: not valid JSON ({what}): {e}") from None


def _dump(path: str | os.PathLike[str], obj: Any) -> None:
    tmp = os.fspath(path) + ".tmp"
    with open(tmp, "w") as fh:
        json.dump(obj, fh, indent=1)
        fh.write("\n")
    os.replace(tmp, path)


def _decimal(v: Any, where: str) -> int:
    """A JSON decimal string (ASCII digits only, as snarkjs writes) or a JSON integer."""
    if isinstance(v, bool) or not isinstance(v, (str, int)):
        raise JsonFormatError(f"{where}: expected a decimal string, got {type(v).__name__}")
    if isinstance(v, int):
        return v
    digits = v[1:] if v.startswith("-") else v
    if not (digits.isascii() and digits.isdigit()):
        raise JsonFormatError(f"{where}: {v!r} is not a decimal integer")
    return int(v, 10)


def _int(v: Any, where: str, bound: int, name: str) -> int:
    x = _decimal(v, where)
    if not 0 <= x < bound:
        raise JsonFormatError(f"{where}: value out of range [0, {name})")
    return x


def _list(v: Any, n: int, where: str) -> list[Any]:
    if not isinstance(v, list) or len(v) != n:
        raise JsonFormatError(f"{where}: expected a list of {n} entries")
    return v


def g1_from_json(v: Any, where: str, curve: Curve) -> Any:
    v = _list(v, 3, where)
    x, y, z = (_int(c, f"{where}[{i}]", curve.q, "q") for i, c in enumerate(v))
    if z == 0:
        return curve.lib.G1Point.identity()
    if z != 1:
        raise JsonFormatError(f"{where}: projective z = {z}, expected 1 (affine) or 0 (infinity)")
    return pts.from_ints(curve, 1, (x, y), where)


def g2_from_json(v: Any, where: str, curve: Curve) -> Any:
    v = _list(v, 3, where)
    (x0, x1), (y0, y1), (z0, z1) = (
        [_int(c, f"{where}[{i}][{j}]", curve.q, "q") for j, c in enumerate(_list(e, 2, f"{where}[{i}]"))] for i, e in enumerate(v)
    )
    if (z0, z1) == (0, 0):
        return curve.lib.G2Point.identity()
    if (z0, z1) != (1, 0):
        raise JsonFormatError(f"{where}: projective z = [{z0}, {z1}], expected [1, 0]")
    return pts.from_ints(curve, 2, (x0, x1, y0, y1), where)


def g1_to_json(p: Any) -> list[str]:
    xy = pts.to_ints(curve_of(p), p)
    if xy is None:
        return ["0", "1", "0"]
    return [str(xy[0]), str(xy[1]), "1"]


def g2_to_json(p: Any) -> list[list[str]]:
    c = pts.to_ints(curve_of(p), p)
    if c is None:
        return [["0", "0"], ["1", "0"], ["0", "0"]]
    return [[str(c[0]), str(c[1])], [str(c[2]), str(c[3])], ["1", "0"]]


def json_curve(obj: dict[str, Any], where: str, expected: Curve | None) -> Curve:
    """The curve a snarkjs JSON object names in its "curve" field, checked against ``expected``; a file
    without the field takes ``expected``."""
    name = obj.get("curve")
    if name is None:
        if expected is None:
            raise JsonFormatError(f'{where}: no "curve" field, and no key to take the curve from')
        return expected
    try:
        c = curves.get(name) if isinstance(name, str) else None
    except curves.CurveError:
        c = None
    if c is None:
        known = ", ".join(repr(x.snarkjs_name) for x in curves.all_curves())
        raise JsonFormatError(f"{where}: curve {name!r}, expected one of {known}")
    if expected is not None and c != expected:
        raise JsonFormatError(f"{where}: curve {name!r}, expected {expected.snarkjs_name!r} (the key's curve, {expected})")
    return c


# ---------------------------------------------------------------------------------------------
# proof.json / public.json


def proof_to_json(p: Proof) -> dict[str, Any]:
    return {
        "pi_a": g1_to_json(p.a),
        "pi_b": g2_to_json(p.b),
        "pi_c": g1_to_json(p.c),
        "protocol": "groth16",
        "curve": p.curve.snarkjs_name,
    }


def proof_from_json(obj: Any, where: str = "proof", curve: Curve | None = None) -> Proof:
    """A snarkjs proof object; ``curve`` (the verifying key's) is what the proof must be over."""
    if not isinstance(obj, dict):
        raise JsonFormatError(f"{where}: expected a JSON object with pi_a, pi_b, pi_c")
    for k in ("pi_a", "pi_b", "pi_c"):
        if k not in obj:
            raise JsonFormatError(f"{where}: missing field {k!r}")
    if obj.get("protocol", "groth16") != "groth16":
        raise JsonFormatError(f"{where}: protocol {obj.get('protocol')!r}, expected 'groth16'")
    c = json_curve(obj, where, curve)
    return Proof(
        g1_from_json(obj["pi_a"], f"{where}: pi_a", c),
        g2_from_json(obj["pi_b"], f"{where}: pi_b", c),
        g1_from_json(obj["pi_c"], f"{where}: pi_c", c),
    )


def write_proof_json(path: str | os.PathLike[str], p: Proof) -> None:
    _dump(path, proof_to_json(p))


def read_proof_json(path: str | os.PathLike[str], curve: Curve | None = None) -> Proof:
    return proof_from_json(_load(path, "proof"), str(path), curve)


def public_from_json(obj: Any, where: str = "public signals", curve: Curve | None = None, check_range: bool = True) -> list[int]:
    """Decimal strings -> integers; with ``curve`` and ``check_range``, each must be below its r."""
    if not isinstance(obj, list):
        raise JsonFormatError(f"{where}: expected a JSON array of decimal strings")
    out = []
    for i, v in enumerate(obj):
        x = _decimal(v, f"{where}[{i}]")
        if check_range and (x < 0 or (curve is not None and x >= curve.r)):
            raise JsonFormatError(f"{where}[{i}]: public input not in [0, r)" + (f" of {curve}" if curve else ""))
        out.append(x)
    return out


def write_public_json(path: str | os.PathLike[str], public: list[int]) -> None:
    _dump(path, [str(x) for x in public])


def read_public_json(path: str | os.PathLike[str], curve: Curve | None = None, check_range: bool = True) -> list[int]:
    return public_from_json(_load(path, "public signals"), str(path), curve, check_range)


# ---------------------------------------------------------------------------------------------
# verification_key.json


def gt_to_json(e: Any, curve: Curve) -> list[list[list[str]]]:
    """Fq12 = c0 + c1 w, Fq6 = c0 + c1 v + c2 v^2, Fq2 = c0 + c1 u: the 12 Fq coefficients in that nesting
    order (the libraries' ``str`` is the hex of that serialisation, n8q bytes each, little-endian)."""
    raw = bytes.fromhex(str(e))
    k = curve.n8q
    c = [str(int.from_bytes(raw[k * i : k * i + k], "little")) for i in range(12)]
    return [[[c[0], c[1]], [c[2], c[3]], [c[4], c[5]]], [[c[6], c[7]], [c[8], c[9]], [c[10], c[11]]]]


def vk_to_json(vk: VerifyingKey) -> dict[str, Any]:
    c = vk.curve
    return {
        "protocol": "groth16",
        "curve": c.snarkjs_name,
        "nPublic": vk.n_public,
        "vk_alpha_1": g1_to_json(vk.alpha1),
        "vk_beta_2": g2_to_json(vk.beta2),
        "vk_gamma_2": g2_to_json(vk.gamma2),
        "vk_delta_2": g2_to_json(vk.delta2),
        "vk_alphabeta_12": gt_to_json(c.lib.GT.pairing(vk.alpha1, vk.beta2), c),
        "IC": [g1_to_json(p) for p in vk.ic],
    }


def vk_from_json(obj: Any, where: str = "verification key") -> VerifyingKey:
    if not isinstance(obj, dict):
        raise JsonFormatError(f"{where}: expected a JSON object")
    if obj.get("protocol") != "groth16":
        raise JsonFormatError(f"{where}: protocol {obj.get('protocol')!r}, expected 'groth16'")
    if "curve" not in obj:
        raise JsonFormatError(f'{where}: no "curve" field (snarkjs writes one)')
    c = json_curve(obj, where, None)
    for k in ("vk_alpha_1", "vk_beta_2", "vk_gamma_2", "vk_delta_2", "IC"):
        if k not in obj:
            raise JsonFormatError(f"{where}: not a Groth16 verification key (missing field {k!r})")
    ic = obj["IC"]
    if not isinstance(ic, list) or not ic:
        raise JsonFormatError(f"{where}: IC must be a non-empty list")
    if "nPublic" in obj and obj["nPublic"] != len(ic) - 1:
        raise JsonFormatError(f"{where}: nPublic = {obj['nPublic']} but IC has {len(ic)} points (expected nPublic + 1)")
    return VerifyingKey(
        g1_from_json(obj["vk_alpha_1"], f"{where}: vk_alpha_1", c),
        g2_from_json(obj["vk_beta_2"], f"{where}: vk_beta_2", c),
        g2_from_json(obj["vk_gamma_2"], f"{where}: vk_gamma_2", c),
        g2_from_json(obj["vk_delta_2"], f"{where}: vk_delta_2", c),
        [g1_from_json(p, f"{where}: IC[{i}]", c) for i, p in enumerate(ic)],
    )


def write_vk_json(path: str | os.PathLike[str], vk: VerifyingKey) -> None:
    _dump(path, vk_to_json(vk))


def read_vk_json(path: str | os.PathLike[str]) -> VerifyingKey:
    return vk_from_json(_load(path, "verification key"), str(path))


# ---------------------------------------------------------------------------------------------
# Solidity calldata


def _p256(x: int) -> str:
    """snarkjs' p256: a quoted hex string of at least 64 digits."""
    return '"0x' + format(x, "x").rjust(64, "0") + '"'


def solidity_calldata(p: Proof, public: list[int]) -> str:
    """The arguments of a Solidity Groth16 verifier's ``verifyProof(a, b, c, input)``, in the exact text
    ``snarkjs zkey export soliditycalldata`` prints: quoted 32-byte hex words, G2 coordinates as (c1, c0)."""
    a = pts.to_ints(p.curve, p.a) or (0, 1)
    b = pts.to_ints(p.curve, p.b) or (0, 0, 1, 0)
    c = pts.to_ints(p.curve, p.c) or (0, 1)
    inputs = ",".join(_p256(x) for x in public)
    return (
        f"[{_p256(a[0])}, {_p256(a[1])}],"
        f"[[{_p256(b[1])}, {_p256(b[0])}],[{_p256(b[3])}, {_p256(b[2])}]],"
        f"[{_p256(c[0])}, {_p256(c[1])}],"
        f"[{inputs}]"
    )
