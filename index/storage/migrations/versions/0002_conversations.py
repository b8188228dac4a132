"""Conversations: semantic scope key, last-message and context vectors, relevant context text.

Revision ID: 0002
Revises: 0001
"""

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("deja_entries") as batch:
        batch.add_column(sa.Column("scope_key", sa.String(64), nullable=True))
        batch.add_column(sa.Column("prompt_vector", sa.LargeBinary, nullable=True))
        batch.add_column(sa.Column("context_vector", sa.LargeBinary, nullable=True))
        batch.add_column(sa.Column("context_text", sa.Text, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("deja_entries") as batch:
        for column in ("context_text", "context_vector", "prompt_vector", "scope_key"):
            batch.drop_column(column)
