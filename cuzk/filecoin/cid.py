"""CIDs of Filecoin commitments (the ``go-fil-commcid`` encodings).

A commitment CID is CIDv1: ``varint(1) varint(codec) varint(multihash code) varint(32) <32 bytes>``,
written in multibase base32 lower case (the ``b`` prefix, RFC 4648 alphabet, no ``=`` padding).

===========================  =======  ==================================  =======
commitment                   codec    multihash                           prefix
===========================  =======  ==================================  =======
unsealed (CommP, CommD)      0xf101   sha2-256-trunc254-padded 0x1012     baga6ea4sea
sealed (CommR)               0xf102   poseidon-bls12_381-a2-fc1 0xb401    bagboea4b5abc
===========================  =======  ==================================  =======
"""

from __future__ import annotations

import base64
import binascii

from . import FilecoinError
from .params import uvarint

CID_VERSION = 1
CODEC_UNSEALED = 0xF101  # fil-commitment-unsealed
CODEC_SEALED = 0xF102  # fil-commitment-sealed
MH_SHA256_TRUNC254 = 0x1012  # sha2-256-trunc254-padded
MH_POSEIDON_BLS12_381 = 0xB401  # poseidon-bls12_381-a2-fc1

KINDS = {
    "unsealed": (CODEC_UNSEALED, MH_SHA256_TRUNC254),
    "sealed": (CODEC_SEALED, MH_POSEIDON_BLS12_381),
}
_CODEC_NAMES = {CODEC_UNSEALED: "fil-commitment-unsealed", CODEC_SEALED: "fil-commitment-sealed"}
_MH_NAMES = {MH_SHA256_TRUNC254: "sha2-256-trunc254-padded", MH_POSEIDON_BLS12_381: "poseidon-bls12_381-a2-fc1"}


def _read_varint(b: bytes, i: int, what: str, text: str) -> tuple[int, int]:
    n = shift = 0
    for k in range(9):  # multiformats unsigned varints are at most 9 bytes
        if i + k >= len(b):
            break
        c = b[i + k]
        n |= (c & 0x7F) << shift
        shift += 7
        if not c & 0x80:
            if c == 0 and k:
                raise FilecoinError(f"CID {text}: {what} is not a minimal varint")
            return n, i + k + 1
    raise FilecoinError(f"CID {text}: truncated or overlong {what}")


def commitment_to_cid(comm: bytes, kind: str = "unsealed") -> str:
    """The CID string of a 32-byte commitment; ``kind``: 'unsealed' (CommP / CommD) or 'sealed' (CommR)."""
    if kind not in KINDS:
        raise FilecoinError(f"commitment kind {kind!r}: expected 'unsealed' or 'sealed'")
    comm = bytes(comm)
    if len(comm) != 32:
        raise FilecoinError(f"commitment is {len(comm)} bytes, expected 32")
    codec, mh = KINDS[kind]
    raw = uvarint(CID_VERSION) + uvarint(codec) + uvarint(mh) + uvarint(32) + comm
    return "b" + base64.b32encode(raw).decode("ascii").lower().rstrip("=")


def piece_cid(comm: bytes) -> str:
    """CID of a piece or unsealed-sector commitment (CommP, CommD): ``baga6ea4sea...``."""
    return commitment_to_cid(comm, "unsealed")


def sealed_cid(comm: bytes) -> str:
    """CID of a sealed-sector commitment (CommR): ``bagboea4b5abc...``."""
    return commitment_to_cid(comm, "sealed")


def cid_to_commitment(text: str) -> tuple[str, bytes]:
    """Decode a commitment CID string: ``(kind, 32 bytes)``, kind 'unsealed' or 'sealed'. Anything else
    (another multibase, CID version, codec or hash, a digest that is not 32 bytes) is refused."""
    s = str(text).strip()
    if not s:
        raise FilecoinError("CID '': empty")
    if s[0] not in "bB":
        hint = " (a CIDv0 'Qm...' is not a commitment)" if s.startswith("Qm") else ""
        raise FilecoinError(f"CID {s}: expected multibase base32 (prefix 'b'), got prefix {s[0]!r}{hint}")
    body = s[1:].upper()
    try:
        raw = base64.b32decode(body + "=" * (-len(body) % 8))
    except (ValueError, binascii.Error):
        raise FilecoinError(f"CID {s}: not valid base32") from None
    version, i = _read_varint(raw, 0, "version", s)
    if version != CID_VERSION:
        raise FilecoinError(f"CID {s}: version {version}, expected CIDv1")
    codec, i = _read_varint(raw, i, "codec", s)
    mh, i = _read_varint(raw, i, "multihash code", s)
    length, i = _read_varint(raw, i, "digest length", s)
    kind = next((k for k, (c, _) in KINDS.items() if c == codec), None)
    if kind is None:
        raise FilecoinError(
            f"CID {s}: codec 0x{codec:x} is not a Filecoin commitment "
            "(expected 0xf101 fil-commitment-unsealed or 0xf102 fil-commitment-sealed)"
        )
    want_mh = KINDS[kind][1]
    if mh != want_mh:
        raise FilecoinError(
            f"CID {s}: multihash 0x{mh:x} with codec {_CODEC_NAMES[codec]}, expected 0x{want_mh:x} {_MH_NAMES[want_mh]}"
        )
    if length != 32 or len(raw) - i != 32:
        raise FilecoinError(f"CID {s}: digest of {len(raw) - i} bytes (declared {length}), expected 32")
    return kind, raw[i:]


def piece_commitment_from_cid(text: str) -> bytes:
    """The 32-byte commitment of a piece / unsealed CID (``baga6ea4sea...``); a sealed CID is refused."""
    kind, comm = cid_to_commitment(text)
    if kind != "unsealed":
        raise FilecoinError(
            f"CID {str(text).strip()}: a sealed-sector (CommR) CID, expected a piece CID (fil-commitment-unsealed)"
        )
    return comm


def sealed_commitment_from_cid(text: str) -> bytes:
    """The 32-byte CommR of a sealed CID (``bagboea4b5abc...``); an unsealed CID is refused."""
    kind, comm = cid_to_commitment(text)
    if kind != "sealed":
        raise FilecoinError(
            f"CID {str(text).strip()}: a piece/unsealed CID, expected a sealed-sector CID (fil-commitment-sealed)"
        )
    return comm


__all__ = [
    "CODEC_SEALED",
    "CODEC_UNSEALED",
    "MH_POSEIDON_BLS12_381",
    "MH_SHA256_TRUNC254",
    "cid_to_commitment",
    "commitment_to_cid",
    "piece_cid",
    "piece_commitment_from_cid",
    "sealed_cid",
    "sealed_commitment_from_cid",
]
