"""Replicas agree on the namespace secret: `deja_meta` holds settings every replica on the database must share,
first the fingerprint of DEJA_NAMESPACE_SECRET (an HMAC of a fixed label, never the secret).

Revision ID: 0009
Revises: 0008
"""

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "deja_meta",
        sa.Column("key", sa.String(64), primary_key=True),
        sa.Column("value", sa.String(200), nullable=False),
        sa.Column("updated_at", sa.Float, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("deja_meta")
