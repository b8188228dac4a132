"""A decision names the kind of difference its candidate shows (cosine, slot, conversation): each kind is its own
evidence stream of the one learner (`index.storage.evidence`). Rows logged before it are cosine decisions.

Revision ID: 0011
Revises: 0010
"""

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("deja_decisions", sa.Column("kind", sa.String(20), nullable=True))


def downgrade() -> None:
    op.drop_column("deja_decisions", "kind")
