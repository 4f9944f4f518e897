"""The durable journal of accepted jobs and results: one interface (:class:`JournalStore`), two stores: SQLite
in the state folder (one host, the default) and PostgreSQL (``journal.url``: one queue that many daemons
share, issue 23). :func:`open_journal` picks the one the config names."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .base import FINAL, Claim, JournalDamaged, JournalSchemaMismatch, JournalStore, Row
from .sqlite import EXPECTED, Journal, SqliteJournal, check_db, private_file

if TYPE_CHECKING:
    from ..config import Config

__all__ = [
    "EXPECTED",
    "FINAL",
    "Claim",
    "Journal",
    "JournalDamaged",
    "JournalSchemaMismatch",
    "JournalStore",
    "Row",
    "SqliteJournal",
    "check_db",
    "open_journal",
    "private_file",
]


def open_journal(cfg: Config) -> JournalStore:
    """The journal ``cfg`` names: PostgreSQL when ``journal.url`` is set, else SQLite at ``journal_path``."""
    if cfg.journal.url:
        from .postgres import PostgresJournal

        return PostgresJournal(
            cfg.journal.url, spill_dir=cfg.state_dir / "journal.payloads", max_attempts=cfg.journal.max_attempts
        )
    return SqliteJournal(cfg.journal_path, cfg.journal.synchronous, cfg.journal.max_attempts)
