"""Build hook: generate the gRPC code from proto/cuzk/daemon/v1/proving.proto (ours) and
proto/curio/cuzk/v1/proving.proto (the original Curio daemon's, vendored) with grpc_tools.protoc.

Everything else about the package is in pyproject.toml. The generated modules go to
cuzk/server/_gen/ in the build (wheel) and, for an editable install, in the source tree; they are
never committed. cuzk/server/protogen.py regenerates them on demand when the .proto changes.
"""

import importlib.util
import os
import shutil

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))


def _protogen():
    # protogen imports `from .. import CuzkError`; give it a tiny stand-in package context
    import sys
    import types

    pkg = types.ModuleType("_cuzk_build")
    pkg.__path__ = []

    class CuzkError(Exception):
        pass

    pkg.CuzkError = CuzkError
    sub = types.ModuleType("_cuzk_build.server")
    sub.__path__ = []
    sys.modules.setdefault("_cuzk_build", pkg)
    sys.modules.setdefault("_cuzk_build.server", sub)
    spec = importlib.util.spec_from_file_location(
        "_cuzk_build.server.protogen", os.path.join(HERE, "cuzk", "server", "protogen.py")
    )
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


class BuildPyWithProto(build_py):
    def run(self):
        super().run()
        pg = _protogen()
        root = os.path.join(HERE, "proto")
        if getattr(self, "editable_mode", False):
            pg.generate(os.path.join(HERE, "cuzk", "server", "_gen"), root)
            return
        out = os.path.join(self.build_lib, "cuzk", "server")
        pg.generate(os.path.join(out, "_gen"), root)
        for rel in (pg.PROTO_REL, os.path.join(pg.CURIO_DIR, pg.CURIO_REL)):
            dst = os.path.join(out, "proto", os.path.dirname(rel))
            os.makedirs(dst, exist_ok=True)
            shutil.copy2(os.path.join(root, rel), dst)


setup(cmdclass={"build_py": BuildPyWithProto})
