"""A throw-away PostgreSQL for the tests and the cluster benchmark (issue 23): initdb in a temporary folder,
the server on a unix socket in that folder (no TCP), stopped and removed by :meth:`PgServer.stop`. The
binaries are looked for on PATH, then in /usr/lib/postgresql/*/bin (Debian's ``postgresql`` package;
``.ci/run`` installs it); :func:`why_unavailable` says why none can run here.

initdb and the server refuse to run as root: as root they run as the ``postgres`` user (Debian's package
makes it), else ``nobody``, through ``subprocess``'s ``user=``/``group=`` (the folder is given to that user).
Clients connect over the socket as the database superuser ``cuzk`` (trust authentication: only that
folder's owner and root can reach the socket).

Not for production: it exists to be started and thrown away (tests: ``fsync=off``; the benchmark starts
it ``durable``, with PostgreSQL's default fsync and synchronous commit).
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
import tempfile
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

SUPERUSER = "cuzk"


def find_bin(name: str) -> str | None:
    p = shutil.which(name)
    if p:
        return p
    found = sorted(
        glob.glob(f"/usr/lib/postgresql/*/bin/{name}"), key=lambda s: int(s.split("/")[4]) if s.split("/")[4].isdigit() else 0
    )
    return found[-1] if found else None


def why_unavailable() -> str | None:
    """None if a throw-away PostgreSQL can be started here, else why not."""
    try:
        import psycopg  # noqa: F401
        import psycopg_pool  # noqa: F401
    except ImportError:
        return "psycopg / psycopg_pool not installed"
    for b in ("initdb", "pg_ctl"):
        if find_bin(b) is None:
            return f"PostgreSQL's {b} not found (PATH, /usr/lib/postgresql/*/bin): apt-get install postgresql"
    if os.geteuid() == 0 and _run_as() is None:
        return "running as root and no postgres or nobody user to run PostgreSQL as"
    return None


def _run_as() -> pwd.struct_passwd | None:
    for name in ("postgres", "nobody"):
        try:
            return pwd.getpwnam(name)
        except KeyError:
            continue
    return None


def db_name(url: str) -> str:
    """The database name of a ``postgresql://user@/name?host=/socket/dir`` URL."""
    return urlsplit(url).path.lstrip("/")


class PgServer:
    """``durable``: PostgreSQL's defaults for fsync, synchronous_commit and full_page_writes (else all off,
    as the tests run it); ``settings``: more ``-c name=value`` server settings."""

    def __init__(self, durable: bool = False, settings: dict[str, str] | None = None) -> None:
        initdb, pg_ctl = find_bin("initdb"), find_bin("pg_ctl")
        assert initdb and pg_ctl
        self.initdb, self.pg_ctl = initdb, pg_ctl
        self.durable = durable
        self.settings = dict(settings or {})
        # short: a unix socket's path is limited to ~107 bytes
        self.dir = Path(tempfile.mkdtemp(prefix="cuzkpg", dir="/tmp"))
        self.data = self.dir / "data"
        self.log = self.dir / "log"
        self.user = _run_as() if os.geteuid() == 0 else None
        if self.user is not None:
            os.chown(self.dir, self.user.pw_uid, self.user.pw_gid)
        self.started = False
        self.opts = ""

    def _run(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        kw: dict[str, Any] = {}
        if self.user is not None:
            kw = {"user": self.user.pw_uid, "group": self.user.pw_gid, "extra_groups": []}
        env = dict(os.environ, LC_ALL="C", LANG="C")
        env.pop("PGDATA", None)
        r = subprocess.run(list(args), check=False, capture_output=True, text=True, timeout=timeout, cwd=self.dir, env=env, **kw)
        if r.returncode != 0:
            log = self.log.read_text(errors="replace")[-2000:] if self.log.exists() else ""
            raise RuntimeError(f"{' '.join(args[:2])} failed ({r.returncode}): {r.stderr.strip()[-2000:]}\n{log}")
        return r

    def start(self) -> PgServer:
        self._run(self.initdb, "-D", str(self.data), "-U", SUPERUSER, "-A", "trust", "-E", "UTF8", "--no-sync")
        opts = f"-k {self.dir} -c listen_addresses='' -c max_connections=200"
        if not self.durable:
            opts += " -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
        for k, v in self.settings.items():
            opts += f" -c {k}={v}"
        self.opts = opts
        self._run(self.pg_ctl, "-D", str(self.data), "-l", str(self.log), "-w", "-t", "60", "-o", opts, "start")
        self.started = True
        return self

    def restart(self, mode: str = "fast") -> None:
        """Stop (``fast``: every client's connection is cut; ``immediate``: as if the machine lost power)
        and start again with the same settings. Not ``pg_ctl restart``: that one gives the new server
        pg_ctl's own stdout, and a caller reading it until EOF would wait forever."""
        self._run(self.pg_ctl, "-D", str(self.data), "-m", mode, "-w", "stop")
        self._run(self.pg_ctl, "-D", str(self.data), "-l", str(self.log), "-w", "-t", "60", "-o", self.opts, "start")

    def stop(self) -> None:
        if self.started:
            try:
                self._run(self.pg_ctl, "-D", str(self.data), "-m", "immediate", "-w", "stop", timeout=60)
            except Exception:
                pass
            self.started = False
        shutil.rmtree(self.dir, ignore_errors=True)

    def url(self, dbname: str = "postgres") -> str:
        return f"postgresql://{SUPERUSER}@/{dbname}?host={self.dir}"

    def create_db(self) -> str:
        """A fresh, empty database; its URL."""
        import psycopg

        name = "t_" + uuid.uuid4().hex[:16]
        with psycopg.connect(self.url(), autocommit=True) as c:
            c.execute(f"CREATE DATABASE {name}")
        return self.url(name)

    def drop_db(self, url: str) -> None:
        import psycopg

        name = db_name(url)
        with psycopg.connect(self.url(), autocommit=True) as c:
            c.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
