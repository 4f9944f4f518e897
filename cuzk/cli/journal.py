"""``cuzk journal check|salvage STATE_DIR``: look at a daemon's journal without the daemon, and copy what is
readable of a damaged one into a fresh journal. ``cuzk journal migrate --url URL`` creates or upgrades a
PostgreSQL journal's schema (``journal.url``, issue 23); ``cuzk journal migrate STATE_DIR`` brings a SQLite
journal up to date (as a daemon's start does).

Both work on a copy of the journal file (and its WAL) in a temporary folder, so the damaged file is never
written to: ``check`` only reports; ``salvage`` (the daemon stopped: it takes the state folder's lock)
moves the damaged file aside to ``journal.sqlite.damaged-<time>`` and puts the fresh journal in its place.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import tempfile
import time
from pathlib import Path

from .. import CuzkError

SIDE = ("-wal", "-shm")


def _journal_path(a) -> Path:
    d = Path(os.path.expanduser(a.state_dir))
    p = Path(os.path.expanduser(a.journal)) if a.journal else d / "journal.sqlite"
    if not p.is_file():
        raise CuzkError(f"{p}: no journal there (give the daemon's state folder, or --journal PATH)")
    return p


def _copy(p: Path, tmp: str) -> Path:
    """The journal and its WAL copied into ``tmp`` (opening a copy may replay the WAL: the original stays)."""
    dst = Path(tmp) / p.name
    shutil.copyfile(p, dst)
    wal = Path(str(p) + "-wal")
    if wal.is_file():
        shutil.copyfile(wal, str(dst) + "-wal")
    return dst


def cmd_check(a) -> int:
    from ..engine.journal import check_db

    p = _journal_path(a)
    with tempfile.TemporaryDirectory(prefix="cuzk-journal-") as tmp:
        db = sqlite3.connect(str(_copy(p, tmp)))
        try:
            problems = check_db(db)
            counts = _counts(db) if not problems else {}
        finally:
            db.close()
    if problems:
        print(f"{p}: DAMAGED")
        for m in problems:
            print(f"  {m}")
        print(f"  `cuzk journal salvage {a.state_dir}` copies what is readable into a fresh journal")
        return 1
    print(f"{p}: ok ({', '.join(f'{k} {v}' for k, v in counts.items())})")
    return 0


def _counts(db: sqlite3.Connection) -> dict[str, int]:
    out = {}
    for state in ("queued", "running", "completed", "failed", "cancelled"):
        out[state] = int(db.execute("SELECT COUNT(*) FROM jobs WHERE state=?", (state,)).fetchone()[0])
    return out


def _rows(db: sqlite3.Connection, table: str, cols: list[str]) -> dict[int, tuple]:
    """The readable rows of ``table`` by rowid: read forwards until an error, then backwards from the end
    (rows beyond a damaged page)."""
    out: dict[int, tuple] = {}
    sel = ", ".join(["rowid", *cols])
    for order in ("ASC", "DESC"):
        try:
            for r in db.execute(f"SELECT {sel} FROM {table} ORDER BY rowid {order}"):
                if r[0] in out:
                    break
                out[r[0]] = tuple(r[1:])
        except sqlite3.Error:
            pass
    return out


def cmd_salvage(a) -> int:
    from ..engine.engine import lock_state_dir
    from ..engine.journal import EXPECTED, Journal

    p = _journal_path(a)
    fd = lock_state_dir(Path(os.path.expanduser(a.state_dir)))  # no daemon runs on it meanwhile
    try:
        with tempfile.TemporaryDirectory(prefix="cuzk-journal-", dir=p.parent) as tmp:
            try:
                src = sqlite3.connect(str(_copy(p, tmp)))
            except sqlite3.Error as e:
                raise CuzkError(f"{p}: cannot open: {e}") from None
            fresh_path = Path(tmp) / "fresh.sqlite"
            fresh = Journal(fresh_path)
            copied: dict[str, int] = {}
            try:
                for table in EXPECTED:
                    try:
                        have = [r[1] for r in src.execute(f"PRAGMA table_info({table})").fetchall()]
                    except sqlite3.Error:
                        have = []
                    want = [r[1] for r in fresh._db.execute(f"PRAGMA table_info({table})").fetchall()]
                    cols = [c for c in want if c in have]
                    rows = _rows(src, table, cols) if cols else {}
                    marks = ", ".join("?" * len(cols))
                    n = 0
                    for _rowid, r in sorted(rows.items()):
                        try:
                            fresh._db.execute(f"INSERT OR IGNORE INTO {table} ({', '.join(cols)}) VALUES ({marks})", r)
                            n += 1
                        except sqlite3.Error:
                            pass
                    copied[table] = n
            finally:
                src.close()
                fresh.close()
            stamp = time.strftime("%Y%m%dT%H%M%S")
            aside = p.with_name(f"{p.name}.damaged-{stamp}")
            os.replace(p, aside)
            os.chmod(aside, 0o600)  # it may hold witnesses: private like the journal (its bytes unchanged)
            for s in SIDE:
                if os.path.exists(str(p) + s):
                    os.replace(str(p) + s, str(aside) + s)
            os.replace(fresh_path, p)
    finally:
        os.close(fd)
    print(f"salvaged {p}: " + ", ".join(f"{k} {v} rows" for k, v in copied.items()))
    print(f"the damaged file is kept as {aside}")
    return 0


def cmd_migrate(a) -> int:
    if bool(a.url) == bool(a.state_dir):
        raise CuzkError("cuzk journal migrate: give either --url postgresql://... or a STATE_DIR (a SQLite journal)")
    if a.url:
        from ..engine.config import check_journal_url
        from ..engine.journal.postgres import SCHEMA_VERSION, migrate, redact

        check_journal_url(a.url, "--url")
        before, after = migrate(a.url)
        if before == after:
            print(f"{redact(a.url)}: schema version {after} is current ({SCHEMA_VERSION}); nothing to do")
        else:
            print(f"{redact(a.url)}: schema version {before} -> {after}")
        return 0
    from ..engine.engine import lock_state_dir
    from ..engine.journal import SqliteJournal

    d = Path(os.path.expanduser(a.state_dir))
    p = Path(os.path.expanduser(a.journal)) if a.journal else d / "journal.sqlite"
    if not p.is_file():
        raise CuzkError(f"{p}: no journal there (give the daemon's state folder, or --journal PATH)")
    fd = lock_state_dir(d)  # no daemon runs on it meanwhile
    try:
        SqliteJournal(p).close()  # opening a SQLite journal adds what it lacks
    finally:
        os.close(fd)
    print(f"{p}: up to date")
    return 0


def add_parsers(sub) -> None:
    s = sub.add_parser(
        "journal", help="check a daemon's journal, salvage a damaged one (the daemon stopped), or migrate its schema"
    )
    jsub = s.add_subparsers(dest="journal_verb", required=True)
    for name, fn, doc in (
        ("check", cmd_check, "report whether the journal is sound (reads a copy; exit 1 if damaged)"),
        (
            "salvage",
            cmd_salvage,
            "copy what is readable into a fresh journal; the damaged file is kept as journal.sqlite.damaged-<time>",
        ),
    ):
        j = jsub.add_parser(name, help=doc)
        j.add_argument("state_dir", metavar="STATE_DIR", help="the daemon's state folder")
        j.add_argument("--journal", default="", help="the journal file when journal.path names another place")
        j.set_defaults(fn=fn)
    m = jsub.add_parser(
        "migrate",
        help="create or upgrade a PostgreSQL journal's schema (--url postgresql://...), or a SQLite journal (STATE_DIR)",
    )
    m.add_argument("state_dir", metavar="STATE_DIR", nargs="?", default="", help="a daemon's state folder (SQLite journal)")
    m.add_argument("--url", default="", help="the PostgreSQL journal (journal.url): postgresql://...")
    m.add_argument("--journal", default="", help="the SQLite journal file when journal.path names another place")
    m.set_defaults(fn=cmd_migrate)
