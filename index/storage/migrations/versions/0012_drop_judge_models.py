"""The judges fitted from traffic go with the learned veto (docs/learned-veto.md): nothing reads or writes
`deja_judge_models` any more. A downgrade recreates the empty table (its rows are not kept).

Revision ID: 0012
Revises: 0011
"""

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.drop_table("deja_judge_models")


def downgrade() -> None:
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
