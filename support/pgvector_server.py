"""A real PostgreSQL 16 with pgvector for tests and benchmarks: PyPI `pgserver` (a dev extra) runs one on a unix
socket in a temporary folder; `DEJA_TEST_PGVECTOR_URL` (an admin URL of a server that has pgvector) replaces it."""

from __future__ import annotations

import os
import tempfile
import uuid
import warnings
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url


class PgVectorServer:
    """Started once per test session; each user takes a database of its own with `database()`."""

    def __init__(self) -> None:
        self._server: Any = None
        self._folder: tempfile.TemporaryDirectory[str] | None = None
        self.admin_url = os.environ.get("DEJA_TEST_PGVECTOR_URL", "")

    def start(self) -> PgVectorServer:
        if not self.admin_url:
            with warnings.catch_warnings():  # platformdirs warns that XDG_RUNTIME_DIR is unset (CI containers)
                warnings.simplefilter("ignore")
                import pgserver

                self._folder = tempfile.TemporaryDirectory(prefix="deja-pg-")
                self._server = pgserver.get_server(Path(self._folder.name) / "data", cleanup_mode="delete")
            url = make_url(self._server.get_uri()).set(drivername="postgresql+psycopg2")
            self.admin_url = url.render_as_string(hide_password=False)
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.cleanup()
            self._server = None
        if self._folder is not None:
            self._folder.cleanup()
            self._folder = None

    def _admin(self, sql: str) -> None:
        engine = create_engine(self.admin_url, isolation_level="AUTOCOMMIT")
        try:
            with engine.connect() as conn:
                conn.execute(text(sql))
        finally:
            engine.dispose()

    def database(self) -> PgVectorDatabase:
        return PgVectorDatabase(self)


class PgVectorDatabase:
    """A throwaway database on the pgvector server, owned by one test or fixture."""

    def __init__(self, server: PgVectorServer) -> None:
        self.server = server
        self.name = f"deja_{uuid.uuid4().hex[:12]}"
        self.url = make_url(server.admin_url).set(database=self.name).render_as_string(hide_password=False)

    def __enter__(self) -> PgVectorDatabase:
        self.server._admin(f"CREATE DATABASE {self.name}")
        return self

    def __exit__(self, *exc: object) -> None:
        self.server._admin(f"DROP DATABASE IF EXISTS {self.name} WITH (FORCE)")
