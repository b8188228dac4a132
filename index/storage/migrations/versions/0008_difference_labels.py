"""Remembered differences live in SQL so that replicas agree: one row per label of a difference, with the
labeller's weight; replicas sum them, decayed by age.

Revision ID: 0008
Revises: 0007
"""

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "deja_difference_labels",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("namespace", sa.String(64), nullable=False),
        sa.Column("pairs", sa.Text, nullable=False),
        sa.Column("same", sa.Boolean, nullable=False),
        sa.Column("weight", sa.Float, nullable=False),
        sa.Column("created_at", sa.Float, nullable=False),
    )
    op.create_index("ix_deja_difference_labels_created_at", "deja_difference_labels", ["created_at"])


def downgrade() -> None:
    op.drop_index("ix_deja_difference_labels_created_at", table_name="deja_difference_labels")
    op.drop_table("deja_difference_labels")
