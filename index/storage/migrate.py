"""Schema migrations (Alembic) and the start-up check that refuses a schema this build does not know."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Engine, inspect

from index.errors import SchemaMismatch

UPGRADE_COMMAND = "deja db upgrade"


def _config() -> Config:
    config = Config()
    config.set_main_option("script_location", str(Path(__file__).parent / "migrations"))
    return config


def head_revision() -> str:
    head = ScriptDirectory.from_config(_config()).get_current_head()
    assert head is not None
    return head


def current_revision(engine: Engine) -> str | None:
    with engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()


def upgrade(engine: Engine, revision: str = "head") -> None:
    config = _config()
    with engine.begin() as conn:
        config.attributes["connection"] = conn
        command.upgrade(config, revision)


def ensure_schema(engine: Engine, create_if_empty: bool = True) -> None:
    """Create the schema in an empty database; refuse any other revision than this build's head."""
    current = current_revision(engine)
    head = head_revision()
    if current == head:
        return
    has_tables = any(name.startswith("deja_") for name in inspect(engine).get_table_names())
    if current is None and not has_tables and create_if_empty:
        upgrade(engine)
        return
    raise SchemaMismatch(
        f"database schema is at revision {current or 'unversioned'}, this build needs {head}: "
        f"run `{UPGRADE_COMMAND}` (with the same DEJA_DATABASE_URL)"
    )
