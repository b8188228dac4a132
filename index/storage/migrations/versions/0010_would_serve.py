"""A decision says whether its candidate is served, or would be at a threshold at its cosine, on the cosine alone:
the evidence each namespace's learned threshold reads (`index.storage.evidence`).

Revision ID: 0010
Revises: 0009
"""

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("deja_decisions", sa.Column("would_serve", sa.Boolean, nullable=True))
    op.create_index("ix_deja_decisions_evidence", "deja_decisions", ["namespace", "would_serve", "created_at"])


def downgrade() -> None:
    op.drop_index("ix_deja_decisions_evidence", table_name="deja_decisions")
    op.drop_column("deja_decisions", "would_serve")
