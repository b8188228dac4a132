"""A healthy default start is quiet: creating the schema on SQLite logs nothing at INFO or above about pgvector,
which only `DEJA_VECTOR_INDEX=pgvector` on PostgreSQL needs."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from index.storage.entries import EntryStore, make_engine


def test_sqlite_schema_creation_logs_nothing_about_pgvector(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'deja.db'}")
    try:
        with caplog.at_level(logging.INFO):
            EntryStore(engine).create_schema()
    finally:
        engine.dispose()
    assert [r.getMessage() for r in caplog.records if r.name.startswith("deja") and "pgvector" in r.getMessage()] == []
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []
