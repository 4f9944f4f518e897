"""The Filecoin commitment verbs: ``cuzk commp FILE`` and ``cuzk commd --sector-size SIZE CID:SIZE ...``.

Registered by :func:`add_parsers` from ``cuzk.cli.main.build_parser``. Bad input raises
:class:`cuzk.CuzkError` (the Filecoin modules' ``FilecoinError`` is one), which the runner prints as one
``cuzk: error: ...`` line with exit status 2.
"""

from __future__ import annotations

import json
import re

from .. import CuzkError

_UNITS = {"": 1, "b": 1, "k": 1 << 10, "kib": 1 << 10, "m": 1 << 20, "mib": 1 << 20, "g": 1 << 30, "gib": 1 << 30}
_UNITS.update({"t": 1 << 40, "tib": 1 << 40})


def parse_size(text: str, what: str) -> int:
    """'2KiB', '512MiB', '32GiB', '64GiB', '2048' (bytes); binary units only (K = KiB)."""
    m = re.fullmatch(r"\s*(\d+)\s*([a-zA-Z]*)\s*", str(text))
    unit = m.group(2).lower() if m else ""
    if not m or unit not in _UNITS:
        raise CuzkError(f"{what}: {text!r} is not a size (expected bytes or a number with KiB, MiB, GiB, TiB)")
    return int(m.group(1)) * _UNITS[unit]


def human_size(n: int) -> str:
    for unit, k in (("TiB", 40), ("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << k and n % (1 << k) == 0:
            return f"{n >> k} {unit}"
    return f"{n} B"


def cmd_commp(a) -> int:
    import os

    from ..filecoin.cid import piece_cid
    from ..filecoin.commitments import comm_p

    if os.path.isdir(a.file):
        raise CuzkError(f"{a.file}: is a directory, expected a file")
    piece_size = parse_size(a.piece_size, "--piece-size") if a.piece_size else None
    comm, padded, payload = comm_p(a.file, piece_size=piece_size)
    c = piece_cid(comm)
    if a.json:
        print(json.dumps({"cid": c, "piece_size": padded, "payload_size": payload, "commp": comm.hex()}))
    else:
        print(f"CID: {c}")
        print(f"Piece size: {padded} ({human_size(padded)})")
    return 0


def _parse_piece(spec: str, i: int) -> tuple[bytes, int]:
    from ..filecoin.cid import piece_commitment_from_cid

    cid, sep, size = spec.rpartition(":")
    if not sep or not cid:
        raise CuzkError(f"piece {i + 1} {spec!r}: expected CID:SIZE (a piece CID and its padded size)")
    return piece_commitment_from_cid(cid), parse_size(size, f"piece {i + 1} ({cid}) size")


def cmd_commd(a) -> int:
    from ..filecoin.cid import piece_cid
    from ..filecoin.commitments import comm_d

    sector = parse_size(a.sector_size, "--sector-size")
    pieces = [_parse_piece(p, i) for i, p in enumerate(a.pieces)]
    c = piece_cid(comm_d(pieces, sector))
    if a.json:
        print(json.dumps({"cid": c, "sector_size": sector, "pieces": len(pieces)}))
    else:
        print(f"CommD: {c}")
    return 0


def add_parsers(sub) -> None:
    """Register ``commp`` and ``commd`` on the ``cuzk`` sub-command parser."""
    s = sub.add_parser("commp", help="Filecoin piece commitment of a file: cuzk commp FILE (prints the piece CID and size)")
    s.add_argument("file", help="the piece's payload (unpadded bytes), e.g. a .car file")
    s.add_argument("--piece-size", help="commit to this padded piece size (default: the smallest that holds the file)")
    s.add_argument("--json", action="store_true", help="print {cid, piece_size, payload_size, commp} as JSON")
    s.set_defaults(fn=cmd_commp)

    s = sub.add_parser("commd", help="unsealed-sector commitment CommD: cuzk commd --sector-size 32GiB CID:SIZE ...")
    s.add_argument("pieces", nargs="*", metavar="CID:SIZE", help="the sector's pieces in order: piece CID and padded size")
    s.add_argument("--sector-size", required=True, help="2KiB, 8MiB, 512MiB, 32GiB, 64GiB or bytes")
    s.add_argument("--json", action="store_true", help="print {cid, sector_size, pieces} as JSON")
    s.set_defaults(fn=cmd_commd)
