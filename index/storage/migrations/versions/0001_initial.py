"""Initial schema: entries, tombstones, decision log, labels, per-namespace thresholds.

Revision ID: 0001
Revises:
"""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "deja_entries",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("namespace", sa.String(64), nullable=False),
        sa.Column("exact_key", sa.String(64), nullable=False, unique=True),
        sa.Column("context_key", sa.String(64), nullable=False),
        sa.Column("model", sa.String(200), nullable=False),
        sa.Column("prompt", sa.Text, nullable=False),
        sa.Column("vector", sa.LargeBinary, nullable=True),
        sa.Column("response", sa.Text, nullable=False),
        sa.Column("created_at", sa.Float, nullable=False),
        sa.Column("expires_at", sa.Float, nullable=True),
        sa.Column("last_hit_at", sa.Float, nullable=True),
        sa.Column("hits", sa.Integer, nullable=False),
    )
    op.create_index("ix_deja_entries_context", "deja_entries", ["context_key"])
    op.create_index("ix_deja_entries_namespace_model", "deja_entries", ["namespace", "model"])
    op.create_table(
        "deja_tombstones",
        sa.Column("seq", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("entry_id", sa.Integer, nullable=False),
        sa.Column("exact_key", sa.String(64), nullable=False),
        sa.Column("deleted_at", sa.Float, nullable=False),
    )
    op.create_table(
        "deja_decisions",
        sa.Column("request_id", sa.String(40), primary_key=True),
        sa.Column("namespace", sa.String(64), nullable=False),
        sa.Column("model", sa.String(200), nullable=False),
        sa.Column("prompt", sa.Text, nullable=False),
        sa.Column("entry_id", sa.Integer, nullable=True),
        sa.Column("candidate_prompt", sa.Text, nullable=True),
        sa.Column("similarity", sa.Float, nullable=False),
        sa.Column("min_similarity", sa.Float, nullable=False),
        sa.Column("stages", sa.Text, nullable=False),
        sa.Column("verdict", sa.String(20), nullable=False),
        sa.Column("vetoed_by", sa.String(40), nullable=True),
        sa.Column("created_at", sa.Float, nullable=False),
    )
    op.create_index("ix_deja_decisions_namespace", "deja_decisions", ["namespace"])
    op.create_index("ix_deja_decisions_created_at", "deja_decisions", ["created_at"])
    op.create_table(
        "deja_labels",
        sa.Column("request_id", sa.String(40), primary_key=True),
        sa.Column("source", sa.String(20), primary_key=True),
        sa.Column("correct", sa.Boolean, nullable=False),
        sa.Column("detail", sa.Text, nullable=True),
        sa.Column("created_at", sa.Float, nullable=False),
    )
    op.create_table(
        "deja_thresholds",
        sa.Column("namespace", sa.String(64), primary_key=True),
        sa.Column("min_similarity", sa.Float, nullable=False),
        sa.Column("labels", sa.Integer, nullable=False),
        sa.Column("updated_at", sa.Float, nullable=False),
    )


def downgrade() -> None:
    for table in ("deja_thresholds", "deja_labels", "deja_decisions", "deja_tombstones", "deja_entries"):
        op.drop_table(table)
