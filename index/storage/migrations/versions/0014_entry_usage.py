"""What each entry's upstream call cost, by token kind (`index.pricing.usage.Usage`): fresh input, input read from
and written to the provider's prompt cache, and output. NULL on entries stored before, or whose answer reported no
usage; a hit on one prices what its stored answer reports.

Revision ID: 0014
Revises: 0013
"""

import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None

COLUMNS = ("input_tokens", "cached_input_tokens", "cache_write_tokens", "output_tokens")


def upgrade() -> None:
    for name in COLUMNS:
        op.add_column("deja_entries", sa.Column(name, sa.Integer, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("deja_entries") as batch:
        for name in COLUMNS:
            batch.drop_column(name)
