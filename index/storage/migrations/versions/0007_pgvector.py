"""The pgvector semantic tier: the `vector` extension, `deja_vectors` (one vector per entry, deleted with it) and
its HNSW index, where the database allows them; elsewhere one log line says why (the in-process index needs none).

Revision ID: 0007
Revises: 0006
"""

import logging

from alembic import op

from index.search.pgvector import install

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

log = logging.getLogger("deja.migrations")


def upgrade() -> None:
    bind = op.get_bind()
    reason = install(bind)
    # The default deployment (SQLite, in-process HNSW) has no use for pgvector: nothing to report at start-up.
    if reason is not None and bind.dialect.name != "postgresql":
        log.debug("pgvector table skipped: %s", reason)
    elif reason is not None:
        # Neutral on purpose: only DEJA_VECTOR_INDEX=pgvector needs it, and `deja serve` refuses that by itself.
        log.info("pgvector is not available on this database (%s); the semantic tier uses the in-process index",
                 reason)


def downgrade() -> None:
    op.execute("DROP TABLE IF EXISTS deja_vectors")
