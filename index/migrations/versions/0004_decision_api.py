"""Decisions record the API they were made for (`chat`, `messages`, `responses`); older rows are chat.

Revision ID: 0004
Revises: 0003
"""

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("deja_decisions") as batch:
        batch.add_column(sa.Column("api", sa.String(20), nullable=False, server_default="chat"))


def downgrade() -> None:
    with op.batch_alter_table("deja_decisions") as batch:
        batch.drop_column("api")
