"""Shared test helpers: the committed fixture directory and a scratch-file helper."""

from __future__ import annotations

from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parent / "fixtures"


@pytest.fixture
def fixtures() -> Path:
    """tests/fixtures (example/ and other/ circuits, see tests/fixtures/README.md)."""
    return FIXTURES


@pytest.fixture
def tmp(tmp_path):
    """tmp(name, data) writes bytes (or str) to a file under tmp_path and returns its path."""

    def write(name: str, data: bytes | str) -> Path:
        p = tmp_path / name
        if isinstance(data, str):
            p.write_text(data)
        else:
            p.write_bytes(data)
        return p

    return write
