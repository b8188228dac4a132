"""Decisions are counted into the running totals (the budget's tallies, the learned thresholds' evidence) by the
budget's pass rather than in the transaction that logs them (`index.storage.decision_log.DecisionLog.count`): a
decision is logged with `counted` false, and the pass claims, counts and marks the uncounted ones in one
transaction. The decisions logged before this revision were counted when they were logged: true.

Revision ID: 0016
Revises: 0015
"""

import sqlalchemy as sa
from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("deja_decisions", sa.Column("counted", sa.Boolean, nullable=False, server_default=sa.true()))
    op.create_index("ix_deja_decisions_counted", "deja_decisions", ["counted", "created_at", "request_id"])


def downgrade() -> None:
    op.drop_index("ix_deja_decisions_counted", "deja_decisions")
    with op.batch_alter_table("deja_decisions") as batch:
        batch.drop_column("counted")
