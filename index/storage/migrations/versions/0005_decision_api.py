"""Decisions record the API they were made for (`chat`, `messages`, `responses`); older rows are chat.

Revision ID: 0005
Revises: 0004
"""

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("deja_decisions") as batch:
        batch.add_column(sa.Column("api", sa.String(20), nullable=False, server_default="chat"))


def downgrade() -> None:
    with op.batch_alter_table("deja_decisions") as batch:
        batch.drop_column("api")
