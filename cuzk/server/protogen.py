"""The gRPC/protobuf Python code of the daemon's two APIs, generated, never committed.

* ``proto/cuzk/daemon/v1/proving.proto``: cuzk's own service (``cuzk.daemon.v1.ProvingEngine``), modules
  ``proving_pb2`` / ``proving_pb2_grpc`` (:func:`load`);
* ``proto/curio/cuzk/v1/proving.proto``: the original Curio daemon's service (``cuzk.v1.ProvingEngine``),
  vendored verbatim, compiled with ``proto/curio`` as its include root so that its descriptor keeps the
  original's file name ``cuzk/v1/proving.proto``; modules ``curio_pb2`` / ``curio_pb2_grpc``
  (:func:`load_curio`).

``setup.py`` generates it at build/install time with ``grpc_tools.protoc``; :func:`load` also generates
it on demand when the generated module is missing or stale (an editable install, a changed .proto):
the module folder holds a ``STAMP`` file with the sha256 of the .proto and the generator version, and
a mismatch regenerates (under a file lock, so concurrent daemons and tests do not race).

The output lands in ``cuzk/server/_gen/`` (git-ignored);
when that folder is not writable (a read-only site-packages) it goes to
``$CUZK_CACHE_DIR/proto/<hash>`` / ``~/.cache/cuzk/proto/<hash>`` instead. protoc's absolute imports
(``from cuzk.daemon.v1 import proving_pb2``) are rewritten to relative ones (``cuzk.*`` would collide with
this package's name); the descriptors keep their file names. The STAMP covers both .proto files.
"""

from __future__ import annotations

import fcntl
import hashlib
import importlib
import importlib.util
import os
import shutil
import sys
import tempfile
from pathlib import Path

from .. import CuzkError

PROTO_REL = "cuzk/daemon/v1/proving.proto"  # ours, under the proto root
CURIO_DIR = "curio"  # the vendored original's include root, under the proto root
CURIO_REL = "cuzk/v1/proving.proto"  # ... and its file name there
# (include root below the proto root, file under it, python import protoc writes, output module base name)
_PROTOS = (("", PROTO_REL, "cuzk.daemon.v1", "proving"), (CURIO_DIR, CURIO_REL, "cuzk.v1", "curio"))
_HERE = Path(__file__).resolve().parent
GEN_DIR = _HERE / "_gen"
_MODULE = "cuzk.server._gen"


def proto_root() -> Path:
    """The folder that holds both .proto files: the repository's ``proto/`` (source tree, editable install)
    or the copy that ``setup.py`` puts in the package."""
    for root in (_HERE.parents[1] / "proto", _HERE / "proto"):
        if (root / PROTO_REL).is_file() and (root / CURIO_DIR / CURIO_REL).is_file():
            return root
    raise CuzkError(f"cannot find {PROTO_REL} (looked in {_HERE.parents[1] / 'proto'} and {_HERE / 'proto'})")


def _generator_version() -> str:
    try:
        from importlib.metadata import version

        return "grpcio-tools " + version("grpcio-tools")
    except Exception:
        return ""


def stamp_for(proto_bytes: bytes, generator: str | None = None) -> str:
    gen = _generator_version() if generator is None else generator
    return hashlib.sha256(proto_bytes).hexdigest() + " " + gen


def _read_stamp(d: Path) -> str | None:
    try:
        return (d / "STAMP").read_text().strip()
    except OSError:
        return None


def proto_bytes(root: Path) -> bytes:
    """Both .proto files' contents (what the STAMP hashes)."""
    return b"".join((root / sub / rel).read_bytes() + b"\0" for sub, rel, _imp, _base in _PROTOS)


def _fresh(d: Path, proto_bytes: bytes) -> bool:
    st = _read_stamp(d)
    if st is None:
        return False
    for _sub, _rel, _imp, base in _PROTOS:
        if not (d / f"{base}_pb2.py").is_file() or not (d / f"{base}_pb2_grpc.py").is_file():
            return False
    want = stamp_for(proto_bytes)
    if st == want:
        return True
    # no generator installed: accept code generated from the same .proto by any version
    return not _generator_version() and st.split(" ")[0] == want.split(" ")[0]


def generate(out_dir: str | os.PathLike, root: str | os.PathLike | None = None) -> Path:
    """Run grpc_tools.protoc on both .proto files into ``out_dir`` (created), atomically file by file."""
    try:
        import grpc_tools
        from grpc_tools import protoc
    except ImportError:
        raise CuzkError(
            "grpcio-tools is not installed: cannot generate the gRPC code from the .proto (pip install the project to get it)"
        ) from None
    root = Path(root) if root is not None else proto_root()
    data = proto_bytes(root)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    include = Path(grpc_tools.__file__).resolve().parent / "_proto"
    with tempfile.TemporaryDirectory(prefix=".protogen-", dir=out) as tmp:
        files = {"__init__.py": '"""Generated gRPC code (cuzk/server/protogen.py). Do not edit."""\n'}
        for sub, rel, imp, base in _PROTOS:
            inc = root / sub if sub else root
            proto = inc / rel
            gen_root = Path(tmp) / (base + ".out")
            gen_root.mkdir()
            args = [
                "grpc_tools.protoc",
                f"-I{inc}",
                f"-I{include}",
                f"--python_out={gen_root}",
                f"--grpc_python_out={gen_root}",
                str(proto),
            ]
            rc = protoc.main(args)
            if rc != 0:
                raise CuzkError(f"{proto}: grpc_tools.protoc failed (exit {rc})")
            gen = gen_root / Path(rel).parent
            stem = Path(rel).stem
            pb2 = (gen / f"{stem}_pb2.py").read_text()
            grpc_py = (gen / f"{stem}_pb2_grpc.py").read_text()
            old = f"from {imp} import {stem}_pb2 as"
            if old not in grpc_py:
                raise CuzkError(f"unexpected grpc_tools output: no line '{old} ...' in {stem}_pb2_grpc.py")
            grpc_py = grpc_py.replace(old, f"from . import {base}_pb2 as")
            header = f"# Generated from {sub + '/' if sub else ''}{rel} by {stamp_for(data)}. Do not edit.\n"
            files[f"{base}_pb2.py"] = header + pb2
            files[f"{base}_pb2_grpc.py"] = header + grpc_py
        for name, text in files.items():
            (Path(tmp) / name).write_text(text)
            os.replace(Path(tmp) / name, out / name)
        (Path(tmp) / "STAMP").write_text(stamp_for(data) + "\n")
        os.replace(Path(tmp) / "STAMP", out / "STAMP")
    shutil.rmtree(out / "__pycache__", ignore_errors=True)
    return out


def _writable(d: Path) -> bool:
    probe = d if d.exists() else d.parent
    return os.access(probe, os.W_OK)


def _cache_dir(proto_bytes: bytes) -> Path:
    base = os.environ.get("CUZK_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "cuzk")
    return Path(base) / "proto" / hashlib.sha256(proto_bytes).hexdigest()[:16]


def ensure_generated() -> Path:
    """The folder holding up-to-date generated modules (generating them if needed)."""
    try:
        root = proto_root()
    except CuzkError:
        if _read_stamp(GEN_DIR):  # installed without the .proto: trust what the build generated
            return GEN_DIR
        raise
    data = proto_bytes(root)
    target = GEN_DIR if _writable(GEN_DIR) else _cache_dir(data)
    if _fresh(target, data):
        return target
    if target != GEN_DIR and _fresh(GEN_DIR, data):
        return GEN_DIR
    target.mkdir(parents=True, exist_ok=True)
    with open(target / ".lock", "w") as lk:
        fcntl.flock(lk, fcntl.LOCK_EX)
        try:
            if not _fresh(target, data):
                generate(target, root)
        finally:
            fcntl.flock(lk, fcntl.LOCK_UN)
    return target


_loaded: dict[str, tuple] = {}


def _load(base: str) -> tuple:
    if base in _loaded:
        return _loaded[base]
    d = ensure_generated()
    if _MODULE not in sys.modules and d != GEN_DIR:
        spec = importlib.util.spec_from_file_location(_MODULE, d / "__init__.py", submodule_search_locations=[str(d)])
        mod = importlib.util.module_from_spec(spec)
        sys.modules[_MODULE] = mod
        spec.loader.exec_module(mod)
    importlib.invalidate_caches()
    pb2 = importlib.import_module(f"{_MODULE}.{base}_pb2")
    pb2_grpc = importlib.import_module(f"{_MODULE}.{base}_pb2_grpc")
    _loaded[base] = (pb2, pb2_grpc)
    return _loaded[base]


def load():
    """(proving_pb2, proving_pb2_grpc) of cuzk's own API (``cuzk.daemon.v1``), generated on demand."""
    return _load("proving")


def load_curio():
    """(curio_pb2, curio_pb2_grpc) of the original Curio daemon's API (``cuzk.v1``), generated on demand."""
    return _load("curio")
