"""Alembic environment: runs against the connection handed over by `index.storage.migrate`."""

from __future__ import annotations

from alembic import context

from index.storage.schema import metadata

config = context.config
connection = config.attributes["connection"]
context.configure(connection=connection, target_metadata=metadata, render_as_batch=True)
with context.begin_transaction():
    context.run_migrations()
