"""SQL schema (SQLAlchemy Core tables). SQL is the record; the HNSW index is rebuilt from it."""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    Float,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Table,
    Text,
    false,
    func,
    true,
)

metadata = MetaData()

entries = Table(
    "deja_entries",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("namespace", String(64), nullable=False),
    Column("exact_key", String(64), nullable=False, unique=True),
    Column("context_key", String(64), nullable=False),
    Column("scope_key", String(64), nullable=True),
    Column("model", String(200), nullable=False),
    Column("prompt", Text, nullable=False),
    Column("vector", LargeBinary, nullable=True),
    Column("prompt_vector", LargeBinary, nullable=True),
    Column("context_vector", LargeBinary, nullable=True),
    Column("context_text", Text, nullable=True),
    Column("response", Text, nullable=False),
    Column("created_at", Float, nullable=False),
    Column("expires_at", Float, nullable=True),
    Column("last_hit_at", Float, nullable=True),
    Column("hits", Integer, nullable=False, default=0),
    # The embedder whose vectors this row holds (NULL: the bundled MiniLM on torch, rows older than 0003).
    Column("embedding_model", String(200), nullable=True),
    # What the upstream call cost, by token kind (migration 0014; NULL: stored before, or no usage reported).
    Column("input_tokens", Integer, nullable=True),
    Column("cached_input_tokens", Integer, nullable=True),
    Column("cache_write_tokens", Integer, nullable=True),
    Column("output_tokens", Integer, nullable=True),
    Index("ix_deja_entries_context", "context_key"),
    Index("ix_deja_entries_namespace_model", "namespace", "model"),
    Index("ix_deja_entries_created_at", "created_at"),
    Index("ix_deja_entries_expires_at", "expires_at"),
)
# LRU eviction reads entries in this order (migration 0003).
Index("ix_deja_entries_last_used", func.coalesce(entries.c.last_hit_at, entries.c.created_at), entries.c.id)

tombstones = Table(
    "deja_tombstones",
    metadata,
    Column("seq", Integer, primary_key=True, autoincrement=True),
    Column("entry_id", Integer, nullable=False),
    Column("exact_key", String(64), nullable=False),
    Column("deleted_at", Float, nullable=False),
    Index("ix_deja_tombstones_deleted_at", "deleted_at"),
)

decisions = Table(
    "deja_decisions",
    metadata,
    Column("request_id", String(40), primary_key=True),
    Column("namespace", String(64), nullable=False),
    Column("model", String(200), nullable=False),
    Column("prompt", Text, nullable=False),
    Column("entry_id", Integer, nullable=True),
    Column("candidate_prompt", Text, nullable=True),
    Column("similarity", Float, nullable=False),
    Column("min_similarity", Float, nullable=False),
    Column("stages", Text, nullable=False),
    Column("verdict", String(20), nullable=False),
    Column("vetoed_by", String(40), nullable=True),
    Column("created_at", Float, nullable=False),
    Column("api", String(20), nullable=False, server_default="chat"),
    # A forgotten decision (retention or invalidation, index/forgetting.py) keeps SHA-256 hashes of its texts.
    Column("prompt_hash", String(64), nullable=True),
    Column("candidate_hash", String(64), nullable=True),
    Column("forgotten_at", Float, nullable=True),
    # The candidate is served, or would be at a threshold at its cosine, on the cosine alone (a near miss).
    Column("would_serve", Boolean, nullable=True),
    # The kind of difference the candidate shows (`index.match.outcome.Kind`); NULL on rows logged before kinds: cosine.
    Column("kind", String(20), nullable=True),
    # Counted into the running totals (the budget's tallies, the evidence: `DecisionLog.count`, in the budget's
    # pass); a decision is logged uncounted, and the rows logged before migration 0016 count as counted.
    Column("counted", Boolean, nullable=False, server_default=true()),
    Index("ix_deja_decisions_namespace", "namespace"),
    Index("ix_deja_decisions_evidence", "namespace", "would_serve", "created_at"),
    Index("ix_deja_decisions_created_at", "created_at"),
    Index("ix_deja_decisions_retention", "forgotten_at", "created_at"),
    Index("ix_deja_decisions_entry_id", "entry_id"),
    Index("ix_deja_decisions_counted", "counted", "created_at", "request_id"),
)

labels = Table(
    "deja_labels",
    metadata,
    Column("request_id", String(40), primary_key=True),
    Column("source", String(20), primary_key=True),
    Column("correct", Boolean, nullable=False),
    Column("detail", Text, nullable=True),
    Column("created_at", Float, nullable=False),
    # Folded into the evidence totals below (`index.storage.evidence`); a new or changed label is not yet.
    Column("counted", Boolean, nullable=False, server_default=false()),
    Index("ix_deja_labels_created_at", "created_at"),
    Index("ix_deja_labels_counted", "counted"),
)

# The learned thresholds' evidence as running totals (`index.match.evidence.Totals`, migration 0013), one stream per
# (namespace, kind): its clocks (requests and labels counted so far), its undecayed counts, the aged mass of hits
# served whatever the threshold, and `version`, the evidence clock (`deja_meta` key `evidence_version`) at its last
# publication: the learner's pass reads only the streams published since its last pass.
evidence = Table(
    "deja_evidence",
    metadata,
    Column("namespace", String(64), primary_key=True),
    Column("kind", String(20), primary_key=True),
    Column("requests", BigInteger, nullable=False),
    Column("labels", BigInteger, nullable=False),
    Column("observations", BigInteger, nullable=False),
    Column("labelled", BigInteger, nullable=False),
    Column("fixed", Float, nullable=False),
    Column("served_fixed", Float, nullable=False),
    Column("served_observations", BigInteger, nullable=False),
    Column("served_requests", BigInteger, nullable=False),
    Column("version", BigInteger, nullable=False),
    Index("ix_deja_evidence_version", "version"),
)

# One row per band of a stream with evidence: mass aged to the stream's `mass_at`-th request, labels aged to its
# `labels_at`-th label, and the mass as of the stream's last publication (`served`: what the learner reads).
evidence_bands = Table(
    "deja_evidence_bands",
    metadata,
    Column("namespace", String(64), primary_key=True),
    Column("kind", String(20), primary_key=True),
    Column("low", Float, primary_key=True),
    Column("mass", Float, nullable=False),
    Column("mass_at", BigInteger, nullable=False),
    Column("labels_right", Float, nullable=False),
    Column("labels_wrong", Float, nullable=False),
    Column("labels_at", BigInteger, nullable=False),
    Column("served", Float, nullable=False),
)

# What the totals count of each labelled decision: its band, its place among the stream's labels (`seq`, to find
# its aged weight again when a label of higher precedence says otherwise) and the label counted.
evidence_labels = Table(
    "deja_evidence_labels",
    metadata,
    Column("request_id", String(40), primary_key=True),
    Column("namespace", String(64), nullable=False),
    Column("kind", String(20), nullable=False),
    Column("low", Float, nullable=False),
    Column("seq", BigInteger, nullable=False),
    Column("correct", Boolean, nullable=False),
    Column("created_at", Float, nullable=False),
    Index("ix_deja_evidence_labels_created_at", "created_at"),
)

thresholds = Table(
    "deja_thresholds",
    metadata,
    Column("namespace", String(64), primary_key=True),
    Column("min_similarity", Float, nullable=False),
    Column("labels", Integer, nullable=False),
    Column("updated_at", Float, nullable=False),
)

# Labels of remembered differences (`index.match.differences`): one row per label, weighted by the labeller's
# accuracy; every replica sums them (decayed by age) into the same evidence.
difference_labels = Table(
    "deja_difference_labels",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("namespace", String(64), nullable=False),
    Column("pairs", Text, nullable=False),
    Column("same", Boolean, nullable=False),
    Column("weight", Float, nullable=False),
    Column("created_at", Float, nullable=False),
    Index("ix_deja_difference_labels_created_at", "created_at"),
)

# Settings every replica on this database must share (migration 0009): the namespace secret's fingerprint.
meta = Table(
    "deja_meta",
    metadata,
    Column("key", String(64), primary_key=True),
    Column("value", String(200), nullable=False),
    Column("updated_at", Float, nullable=False),
)

# What replicas share beyond the evidence (migration 0015): the labelling allowance's calls of the last hour
# (`index.storage.allowance`), the upstream's answer variation per namespace (`index.storage.variation`), each
# learned threshold as last recorded with the history of its moves (`index.storage.threshold_moves`) and the
# budget's tallies per (namespace, API) as running totals (`index.storage.budget`).
allowance_calls = Table(
    "deja_allowance_calls",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("at", Float, nullable=False),
    Column("calls", Integer, nullable=False),
    Index("ix_deja_allowance_calls_at", "at"),
)

answer_variation = Table(
    "deja_answer_variation",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("namespace", String(64), nullable=False),
    Column("similarity", Float, nullable=False),
    Column("created_at", Float, nullable=False),
    Index("ix_deja_answer_variation_namespace", "namespace", "id"),
)

# One row per stream (namespace, kind): the threshold last recorded and the evidence version it was chosen at.
learned_thresholds = Table(
    "deja_learned_thresholds",
    metadata,
    Column("namespace", String(64), primary_key=True),
    Column("kind", String(20), primary_key=True),
    Column("threshold", Float, nullable=False),
    Column("version", BigInteger, nullable=False),
    Column("updated_at", Float, nullable=False),
)

threshold_moves = Table(
    "deja_threshold_moves",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("namespace", String(64), nullable=False),
    Column("kind", String(20), nullable=False),
    Column("old", Float, nullable=False),
    Column("new", Float, nullable=False),
    Column("estimate", Float, nullable=False),
    Column("upper", Float, nullable=False),
    Column("labels", Integer, nullable=False),
    Column("version", BigInteger, nullable=False),
    Column("at", Float, nullable=False),
)

# The budget's tallies per (namespace, API): semantic hits served, audited (a label from an audit, feedback or a
# human) and audited wrong, with `version`, the tally clock (`deja_meta` key `tally_version`) at its last change.
budget_tallies = Table(
    "deja_budget_tallies",
    metadata,
    Column("namespace", String(64), primary_key=True),
    Column("api", String(20), primary_key=True),
    Column("served", BigInteger, nullable=False),
    Column("audited", BigInteger, nullable=False),
    Column("wrong", BigInteger, nullable=False),
    Column("version", BigInteger, nullable=False),
    Index("ix_deja_budget_tallies_version", "version"),
)

# What the tallies count of each audited hit: the label (by precedence) counted.
budget_labels = Table(
    "deja_budget_labels",
    metadata,
    Column("request_id", String(40), primary_key=True),
    Column("correct", Boolean, nullable=False),
)
