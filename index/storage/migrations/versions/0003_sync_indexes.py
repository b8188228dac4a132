"""Which embedder made each row's vectors (`embedding_model`, NULL = the bundled MiniLM), and indexes for the
background queries, so their cost does not grow with the table: replica catch-up's recent
window (`created_at`), expiry (`expires_at`) and LRU eviction order (`coalesce(last_hit_at, created_at), id`).

Revision ID: 0003
Revises: 0002
"""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("deja_entries") as batch:
        batch.add_column(sa.Column("embedding_model", sa.String(200), nullable=True))
    op.create_index("ix_deja_entries_created_at", "deja_entries", ["created_at"])
    op.create_index("ix_deja_entries_expires_at", "deja_entries", ["expires_at"])
    op.create_index("ix_deja_entries_last_used", "deja_entries",
                    [sa.text("coalesce(last_hit_at, created_at)"), "id"])


def downgrade() -> None:
    for name in ("ix_deja_entries_last_used", "ix_deja_entries_expires_at", "ix_deja_entries_created_at"):
        op.drop_index(name, table_name="deja_entries")
    with op.batch_alter_table("deja_entries") as batch:
        batch.drop_column("embedding_model")
