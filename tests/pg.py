"""A real PostgreSQL for the tests (issue 23): initdb in a temporary folder, the server on a unix socket in
that folder (no TCP), started once per session and stopped at its end. The binaries are looked for on PATH,
then in /usr/lib/postgresql/*/bin (Debian's ``postgresql`` package; ``.ci/run`` installs it); where there
are none, the tests that need it are skipped with the reason.

initdb and the server refuse to run as root: as root they run as the ``postgres`` user (Debian's package
makes it), else ``nobody``, through ``subprocess``'s ``user=``/``group=`` (the folder is given to that user).
The test process connects over the socket as the database superuser ``cuzk`` (trust authentication: only
that folder's owner and root can reach the socket).
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
    """None if a test PostgreSQL can be started here, else why not."""
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


class PgServer:
    def __init__(self) -> None:
        self.initdb = find_bin("initdb")
        self.pg_ctl = find_bin("pg_ctl")
        assert self.initdb and self.pg_ctl
        # short: a unix socket's path is limited to ~107 bytes
        self.dir = Path(tempfile.mkdtemp(prefix="cuzkpg", dir="/tmp"))
        self.data = self.dir / "data"
        self.log = self.dir / "log"
        self.user = _run_as() if os.geteuid() == 0 else None
        if self.user is not None:
            os.chown(self.dir, self.user.pw_uid, self.user.pw_gid)
        self.started = False

    def _run(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
        kw: dict = {}
        if self.user is not None:
            kw = {"user": self.user.pw_uid, "group": self.user.pw_gid, "extra_groups": []}
        env = dict(os.environ, LC_ALL="C", LANG="C")
        env.pop("PGDATA", None)
        r = subprocess.run(list(args), capture_output=True, text=True, timeout=timeout, cwd=self.dir, env=env, **kw)
        if r.returncode != 0:
            log = self.log.read_text(errors="replace")[-2000:] if self.log.exists() else ""
            raise RuntimeError(f"{' '.join(args[:2])} failed ({r.returncode}): {r.stderr.strip()[-2000:]}\n{log}")
        return r

    def start(self) -> PgServer:
        self._run(self.initdb, "-D", str(self.data), "-U", SUPERUSER, "-A", "trust", "-E", "UTF8", "--no-sync")
        opts = f"-k {self.dir} -c listen_addresses='' -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200"
        self._run(self.pg_ctl, "-D", str(self.data), "-l", str(self.log), "-w", "-t", "60", "-o", opts, "start")
        self.started = True
        return self

    def restart(self) -> None:
        self._run(self.pg_ctl, "-D", str(self.data), "-m", "fast", "-w", "restart")

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

        name = url.rsplit("/", maxsplit=1)[-1].split("?", maxsplit=1)[0]
        with psycopg.connect(self.url(), autocommit=True) as c:
            c.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
