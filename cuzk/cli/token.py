"""``cuzk token add NAME --role submit|admin`` / ``list`` / ``revoke NAME``: the daemon's bearer tokens.

The tokens file is ``--file``, else the ``[security] tokens_file`` of ``--config``, else $CUZK_TOKENS_FILE.
It holds only SHA-256 hashes (mode 0600); ``add`` prints the new token once, on stdout. A running daemon
re-reads the file when it changes, so a revoked token is refused at its next call.
"""

from __future__ import annotations

import os
import time

from .. import CuzkError


def _store(a):
    from ..server.auth import TokenStore

    path = a.file
    if not path and a.config:
        from ..engine.config import load_config

        path = load_config(a.config).security.tokens_file
    path = path or os.environ.get("CUZK_TOKENS_FILE", "")
    if not path:
        raise CuzkError("no tokens file: give --file PATH, --config with [security] tokens_file, or $CUZK_TOKENS_FILE")
    return TokenStore(os.path.expanduser(path))


def cmd_add(a) -> int:
    tok = _store(a).add(a.name, a.role)
    print(tok)
    return 0


def cmd_list(a) -> int:
    entries = _store(a).entries()
    if not entries:
        print("no tokens")
    for e in entries:
        created = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(e.get("created", 0)))
        print(f"{e['name']}\t{e['role']}\tcreated {created} UTC")
    return 0


def cmd_revoke(a) -> int:
    _store(a).revoke(a.name)
    print(f"revoked {a.name}")
    return 0


def add_parsers(sub) -> None:
    s = sub.add_parser("token", help="manage the daemon's bearer tokens (add prints the token once; stored hashed)")
    tsub = s.add_subparsers(dest="token_verb", required=True)

    def common(t):
        t.add_argument("--file", default="", help="the tokens file (default: --config's security.tokens_file, $CUZK_TOKENS_FILE)")
        t.add_argument("--config", default="", help="daemon config whose [security] tokens_file to use")

    t = tsub.add_parser("add", help="create a token NAME with a role; prints the token (only this once)")
    t.add_argument("name", metavar="NAME")
    t.add_argument("--role", choices=("submit", "admin"), required=True, help="submit: prove/await/cancel own jobs; admin: all")
    common(t)
    t.set_defaults(fn=cmd_add)
    t = tsub.add_parser("list", help="the tokens' names, roles and creation times (never the tokens)")
    common(t)
    t.set_defaults(fn=cmd_list)
    t = tsub.add_parser("revoke", help="delete the token NAME (a running daemon refuses it from its next call)")
    t.add_argument("name", metavar="NAME")
    common(t)
    t.set_defaults(fn=cmd_revoke)
