"""What the replicas share beyond the evidence: the labelling allowance's calls of the last hour, the upstream's
answer variation per namespace, each learned threshold as last recorded and the history of its moves (a restarted
or new replica records no move), and the budget's tallies per (namespace, API) as running totals with the label
each audited hit counts. The tallies start from the decisions and labels already logged.

Revision ID: 0015
Revises: 0014
"""

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None

# The labels that judge a served hit, by precedence (`index.storage.budget.SERVED_SOURCES`).
_SERVED = ("human", "feedback", "audit")


def upgrade() -> None:
    op.create_table(
        "deja_allowance_calls",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("at", sa.Float, nullable=False),
        sa.Column("calls", sa.Integer, nullable=False),
    )
    op.create_index("ix_deja_allowance_calls_at", "deja_allowance_calls", ["at"])
    op.create_table(
        "deja_answer_variation",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("namespace", sa.String(64), nullable=False),
        sa.Column("similarity", sa.Float, nullable=False),
        sa.Column("created_at", sa.Float, nullable=False),
    )
    op.create_index("ix_deja_answer_variation_namespace", "deja_answer_variation", ["namespace", "id"])
    op.create_table(
        "deja_learned_thresholds",
        sa.Column("namespace", sa.String(64), primary_key=True),
        sa.Column("kind", sa.String(20), primary_key=True),
        sa.Column("threshold", sa.Float, nullable=False),
        sa.Column("version", sa.BigInteger, nullable=False),
        sa.Column("updated_at", sa.Float, nullable=False),
    )
    op.create_table(
        "deja_threshold_moves",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("namespace", sa.String(64), nullable=False),
        sa.Column("kind", sa.String(20), nullable=False),
        sa.Column("old", sa.Float, nullable=False),
        sa.Column("new", sa.Float, nullable=False),
        sa.Column("estimate", sa.Float, nullable=False),
        sa.Column("upper", sa.Float, nullable=False),
        sa.Column("labels", sa.Integer, nullable=False),
        sa.Column("version", sa.BigInteger, nullable=False),
        sa.Column("at", sa.Float, nullable=False),
    )
    op.create_table(
        "deja_budget_tallies",
        sa.Column("namespace", sa.String(64), primary_key=True),
        sa.Column("api", sa.String(20), primary_key=True),
        sa.Column("served", sa.BigInteger, nullable=False),
        sa.Column("audited", sa.BigInteger, nullable=False),
        sa.Column("wrong", sa.BigInteger, nullable=False),
        sa.Column("version", sa.BigInteger, nullable=False),
    )
    op.create_index("ix_deja_budget_tallies_version", "deja_budget_tallies", ["version"])
    op.create_table(
        "deja_budget_labels",
        sa.Column("request_id", sa.String(40), primary_key=True),
        sa.Column("correct", sa.Boolean, nullable=False),
    )
    _start_tallies()


def _start_tallies() -> None:
    """The tallies of what is logged already (once, here): served semantic hits per (namespace, API), and each
    audited one's label by precedence (human > feedback > audit), all at version 1."""
    served = ", ".join(f"'{s}'" for s in _SERVED)
    rank = " ".join(f"WHEN '{s}' THEN {i}" for i, s in enumerate(_SERVED))
    op.execute(f"""
        INSERT INTO deja_budget_labels (request_id, correct)
        SELECT l.request_id, l.correct FROM deja_labels l JOIN deja_decisions d ON d.request_id = l.request_id
        WHERE d.verdict = 'hit-semantic' AND l.source IN ({served})
          AND NOT EXISTS (SELECT 1 FROM deja_labels o WHERE o.request_id = l.request_id AND o.source IN ({served})
                          AND (CASE o.source {rank} END) < (CASE l.source {rank} END))""")
    op.execute("""
        INSERT INTO deja_budget_tallies (namespace, api, served, audited, wrong, version)
        SELECT d.namespace, d.api, COUNT(*), COUNT(b.request_id),
               SUM(CASE WHEN b.request_id IS NOT NULL AND NOT b.correct THEN 1 ELSE 0 END), 1
        FROM deja_decisions d LEFT JOIN deja_budget_labels b ON b.request_id = d.request_id
        WHERE d.verdict = 'hit-semantic' GROUP BY d.namespace, d.api""")
    op.execute("INSERT INTO deja_meta (key, value, updated_at) VALUES ('tally_version', '1', 0)")


def downgrade() -> None:
    for table in ("deja_budget_labels", "deja_budget_tallies", "deja_threshold_moves", "deja_learned_thresholds",
                  "deja_answer_variation", "deja_allowance_calls"):
        op.drop_table(table)
    op.execute("DELETE FROM deja_meta WHERE key = 'tally_version'")
