"""The iden3 binary container used by .r1cs, .wtns, .zkey and .ptau files.

Layout: magic (4 ASCII bytes) | version u32 | nSections u32 | nSections x (id u32, size u64, payload).
Sections may come in any order (circom writes r1cs sections as 2, 1, 3), so readers look them up by
id. Every read is bounds-checked, and every error names the file and the section.
"""

from __future__ import annotations

import mmap
import os
import struct
from dataclasses import dataclass, field

from .. import CuzkError, curves
from ..curves import Curve


class FormatError(CuzkError):
    """A malformed, truncated or mismatched input file."""


@dataclass
class BinFile:
    path: str
    kind: str
    version: int
    data: memoryview
    sections: dict[int, list[tuple[int, int]]] = field(default_factory=dict)  # id -> [(offset, size)]
    _keepalive: object = None

    def error(self, what: str, section: int | None = None) -> FormatError:
        where = f" section {section}" if section is not None else ""
        return FormatError(f"{self.path}:{where} {what}")

    def section(self, sid: int, name: str = "") -> memoryview:
        """The payload of section ``sid``; exactly one must exist."""
        entries = self.sections.get(sid)
        label = f"{sid} ({name})" if name else str(sid)
        if not entries:
            raise FormatError(f"{self.path}: missing section {label}")
        if len(entries) > 1:
            raise FormatError(f"{self.path}: section {label} appears {len(entries)} times, expected once")
        off, size = entries[0]
        return self.data[off : off + size]

    def has(self, sid: int) -> bool:
        return bool(self.sections.get(sid))

    def close(self) -> None:
        """Release the file mapping (views taken from ``data`` must be dropped first)."""
        self.data.release()
        if isinstance(self._keepalive, mmap.mmap):
            try:
                self._keepalive.close()
            except BufferError:
                pass  # a caller still holds a view; the map is freed with it


def map_file(path: str | os.PathLike, what: str) -> mmap.mmap:
    """A read-only mapping of ``path``; clear errors for a missing or empty file (``what`` it should be)."""
    path = os.fspath(path)
    try:
        fh = open(path, "rb")
    except OSError as e:
        raise FormatError(f"{path}: cannot open: {e.strerror}") from None
    with fh:
        if os.fstat(fh.fileno()).st_size == 0:
            raise FormatError(f"{path}: empty file, expected {what}")
        return mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)


def open_binfile(path: str | os.PathLike, kind: str, versions: tuple[int, ...]) -> BinFile:
    """Map ``path`` and parse its section table.

    ``kind`` is the expected magic ("r1cs", "wtns", "zkey"), ``versions`` the accepted versions.
    """
    mm = map_file(path, f"a .{kind} file")
    return parse_binfile(memoryview(mm), os.fspath(path), kind, versions, keepalive=mm)


def parse_binfile(data, path: str, kind: str, versions: tuple[int, ...], keepalive=None) -> BinFile:
    data = memoryview(data).cast("B")
    if len(data) < 12:
        raise FormatError(f"{path}: truncated header ({len(data)} bytes), expected a .{kind} file")
    magic = bytes(data[:4])
    if magic != kind.encode():
        # the file's bytes are never quoted: the path may name a file the caller should not read
        raise FormatError(f"{path}: not a .{kind} file (bad magic)")
    version, nsec = struct.unpack_from("<II", data, 4)
    if version not in versions:
        raise FormatError(f"{path}: unsupported .{kind} version {version}, expected {' or '.join(map(str, versions))}")
    bf = BinFile(path, kind, version, data, _keepalive=keepalive)
    pos = 12
    for i in range(nsec):
        if pos + 12 > len(data):
            raise FormatError(
                f"{path}: truncated: section table entry {i} of {nsec} at byte {pos} runs past the end ({len(data)} bytes)"
            )
        sid, ssize = struct.unpack_from("<IQ", data, pos)
        pos += 12
        if pos + ssize > len(data):
            raise FormatError(
                f"{path}: section {sid} truncated: declares {ssize} bytes at offset {pos}, file has {len(data) - pos} left"
            )
        bf.sections.setdefault(sid, []).append((pos, ssize))
        pos += ssize
    if pos != len(data):
        raise FormatError(f"{path}: {len(data) - pos} trailing bytes after the last section")
    return bf


class Reader:
    """Sequential bounds-checked reader over one section's payload."""

    def __init__(self, buf: memoryview, bf: BinFile, sid: int, name: str):
        self.buf = buf
        self.pos = 0
        self.bf = bf
        self.sid = sid
        self.name = name

    def _need(self, n: int, what: str) -> None:
        if self.pos + n > len(self.buf):
            raise FormatError(
                f"{self.bf.path}: section {self.sid} ({self.name}) too short: needs {n} more bytes for {what} "
                f"at offset {self.pos}, has {len(self.buf) - self.pos}"
            )

    def u32(self, what: str = "u32") -> int:
        self._need(4, what)
        (v,) = struct.unpack_from("<I", self.buf, self.pos)
        self.pos += 4
        return v

    def u64(self, what: str = "u64") -> int:
        self._need(8, what)
        (v,) = struct.unpack_from("<Q", self.buf, self.pos)
        self.pos += 8
        return v

    def bytes(self, n: int, what: str = "bytes") -> memoryview:
        self._need(n, what)
        v = self.buf[self.pos : self.pos + n]
        self.pos += n
        return v

    def integer(self, n8: int, what: str = "integer") -> int:
        return int.from_bytes(self.bytes(n8, what), "little")

    def field(
        self, n8: int, prime: int, desc: str, names: tuple[str, str] = ("n8", "prime"), n8_hint: str = "", prime_hint: str = ""
    ) -> None:
        """An ``n8 u32 | prime (n8 bytes)`` pair (r1cs, wtns and zkey headers) that must be ``prime``."""
        where = f"{self.bf.path}: section {self.sid} ({self.name})"
        got = self.u32(names[0])
        if got != n8:
            raise FormatError(f"{where}: {names[0]} = {got}, expected {n8} ({desc}){n8_hint}")
        value = self.integer(n8, names[1])
        if value != prime:
            raise FormatError(f"{where}: {names[1]} {value:#x} is not {desc}{prime_hint}")

    def curve(self, what: str = "the scalar field") -> Curve:
        """The ``n8 u32 | prime`` prefix of r1cs / wtns headers: the curve whose scalar field it is."""
        where = f"{self.bf.path}: section {self.sid} ({self.name})"
        n8 = self.u32("n8")
        if n8 != 32:
            raise FormatError(f"{where}: n8 = {n8}, expected 32 ({what} of {_curve_names()})")
        prime = self.integer(n8, "prime")
        curve = curves.by_scalar_prime(prime)
        if curve is None:
            raise FormatError(f"{where}: prime {prime:#x} is not {what} of a supported curve ({_curve_names()})")
        return curve

    def end(self) -> None:
        if self.pos != len(self.buf):
            raise FormatError(
                f"{self.bf.path}: section {self.sid} ({self.name}) has {len(self.buf) - self.pos} unexpected bytes after offset {self.pos}"
            )


def write_binfile(path: str | os.PathLike, kind: str, version: int, sections: list[tuple[int, bytes | list]]) -> None:
    """Write a container; a section payload may be bytes or a list of byte chunks."""
    tmp = os.fspath(path) + ".tmp"
    with open(tmp, "wb") as fh:
        fh.write(kind.encode())
        fh.write(struct.pack("<II", version, len(sections)))
        for sid, payload in sections:
            chunks = payload if isinstance(payload, list) else [payload]
            fh.write(struct.pack("<IQ", sid, sum(len(c) for c in chunks)))
            for c in chunks:
                fh.write(c)
    os.replace(tmp, path)


def _curve_names() -> str:
    return " or ".join(c.title for c in curves.all_curves())


def curve_mismatch(what: str, got: Curve, expected: Curve, expected_what: str) -> FormatError:
    """The one-line error for a file of one curve given with a key or circuit of another."""
    return FormatError(f"{what} is over {got} but {expected_what} is over {expected}")
