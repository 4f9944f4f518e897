"""A real PostgreSQL for the tests (issue 23): the throw-away server of :mod:`cuzk.engine.journal.pgserver`
(initdb in a temporary folder, a unix socket, fsync off), started once per session by ``conftest.py``'s
``pg_server`` fixture and stopped at its end; where none can run, the tests that need it are skipped with
the reason (:func:`why_unavailable`)."""

from __future__ import annotations

from cuzk.engine.journal.pgserver import SUPERUSER, PgServer, find_bin, why_unavailable

__all__ = ["SUPERUSER", "PgServer", "find_bin", "why_unavailable"]
