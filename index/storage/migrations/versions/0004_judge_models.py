"""Judges fitted from traffic (`eval fit --traffic --apply`): one row each, `active` marks the one in force.

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
    op.create_table(
        "deja_judge_models",
        sa.Column("version", sa.String(40), primary_key=True),
        sa.Column("model", sa.LargeBinary, nullable=False),
        sa.Column("labels", sa.Integer, nullable=False),
        sa.Column("note", sa.Text, nullable=True),
        sa.Column("created_at", sa.Float, nullable=False),
        sa.Column("applied_at", sa.Float, nullable=True),
        sa.Column("active", sa.Boolean, nullable=False, server_default=sa.false()),
    )


def downgrade() -> None:
    op.drop_table("deja_judge_models")
