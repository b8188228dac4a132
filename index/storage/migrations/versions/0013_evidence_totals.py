"""The learned thresholds' evidence as running totals per (namespace, kind) and band, updated where decisions and
labels are written (`index.storage.evidence`), instead of re-read from the decision log on every pass. Labels get
`counted` (false: not yet folded into the totals); the labels already in the log are folded in by the first
replica that runs. The decisions already logged are not replayed: their mass counts again from new traffic.

Revision ID: 0013
Revises: 0012
"""

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("deja_labels", sa.Column("counted", sa.Boolean, nullable=False, server_default=sa.false()))
    op.create_index("ix_deja_labels_counted", "deja_labels", ["counted"])
    op.create_table(
        "deja_evidence",
        sa.Column("namespace", sa.String(64), primary_key=True),
        sa.Column("kind", sa.String(20), primary_key=True),
        sa.Column("requests", sa.BigInteger, nullable=False),
        sa.Column("labels", sa.BigInteger, nullable=False),
        sa.Column("observations", sa.BigInteger, nullable=False),
        sa.Column("labelled", sa.BigInteger, nullable=False),
        sa.Column("fixed", sa.Float, nullable=False),
        sa.Column("served_fixed", sa.Float, nullable=False),
        sa.Column("served_observations", sa.BigInteger, nullable=False),
        sa.Column("served_requests", sa.BigInteger, nullable=False),
        sa.Column("version", sa.BigInteger, nullable=False),
    )
    op.create_index("ix_deja_evidence_version", "deja_evidence", ["version"])
    op.create_table(
        "deja_evidence_bands",
        sa.Column("namespace", sa.String(64), primary_key=True),
        sa.Column("kind", sa.String(20), primary_key=True),
        sa.Column("low", sa.Float, primary_key=True),
        sa.Column("mass", sa.Float, nullable=False),
        sa.Column("mass_at", sa.BigInteger, nullable=False),
        sa.Column("labels_right", sa.Float, nullable=False),
        sa.Column("labels_wrong", sa.Float, nullable=False),
        sa.Column("labels_at", sa.BigInteger, nullable=False),
        sa.Column("served", sa.Float, nullable=False),
    )
    op.create_table(
        "deja_evidence_labels",
        sa.Column("request_id", sa.String(40), primary_key=True),
        sa.Column("namespace", sa.String(64), nullable=False),
        sa.Column("kind", sa.String(20), nullable=False),
        sa.Column("low", sa.Float, nullable=False),
        sa.Column("seq", sa.BigInteger, nullable=False),
        sa.Column("correct", sa.Boolean, nullable=False),
        sa.Column("created_at", sa.Float, nullable=False),
    )
    op.create_index("ix_deja_evidence_labels_created_at", "deja_evidence_labels", ["created_at"])


def downgrade() -> None:
    op.drop_table("deja_evidence_labels")
    op.drop_table("deja_evidence_bands")
    op.drop_table("deja_evidence")
    op.execute("DELETE FROM deja_meta WHERE key = 'evidence_version'")
    op.drop_index("ix_deja_labels_counted", "deja_labels")
    op.drop_column("deja_labels", "counted")
