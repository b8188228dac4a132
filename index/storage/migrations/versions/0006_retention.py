"""Forgetting: decisions can be forgotten (their texts replaced by SHA-256 hashes, `forgotten_at` set), and the
retention sweeps and forget-by-entry read through indexes, so their cost follows what they remove, not the table:
decisions not yet forgotten by age `(forgotten_at, created_at)`, decisions by `entry_id`, labels by
`created_at`, tombstones by `deleted_at`.

Revision ID: 0006
Revises: 0005
"""

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("deja_decisions") as batch:
        batch.add_column(sa.Column("prompt_hash", sa.String(64), nullable=True))
        batch.add_column(sa.Column("candidate_hash", sa.String(64), nullable=True))
        batch.add_column(sa.Column("forgotten_at", sa.Float, nullable=True))
    op.create_index("ix_deja_decisions_retention", "deja_decisions", ["forgotten_at", "created_at"])
    op.create_index("ix_deja_decisions_entry_id", "deja_decisions", ["entry_id"])
    op.create_index("ix_deja_labels_created_at", "deja_labels", ["created_at"])
    op.create_index("ix_deja_tombstones_deleted_at", "deja_tombstones", ["deleted_at"])


def downgrade() -> None:
    op.drop_index("ix_deja_tombstones_deleted_at", table_name="deja_tombstones")
    op.drop_index("ix_deja_labels_created_at", table_name="deja_labels")
    op.drop_index("ix_deja_decisions_entry_id", table_name="deja_decisions")
    op.drop_index("ix_deja_decisions_retention", table_name="deja_decisions")
    with op.batch_alter_table("deja_decisions") as batch:
        for name in ("forgotten_at", "candidate_hash", "prompt_hash"):
            batch.drop_column(name)
