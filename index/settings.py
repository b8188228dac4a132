"""The one settings object (env prefix `DEJA_`). Only entry points (`deja serve`, `deja db`, `eval` commands)
instantiate it, which is when the environment is read; everything else receives it or what was built from it."""

from __future__ import annotations

import logging
import os
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from index.embedding.embedder import EmbedderBackend
from index.embedding.memo import DEFAULT_CONTEXT_MEMO_SIZE
from index.guards.stages import STAGE_ORDER
from index.match.labelling import LabelConfig
from index.match.live_threshold import CONFIDENCE as LEARNER_CONFIDENCE
from index.match.policy import (
    DEFAULT_ALTERNATIVE_MIN_SIMILARITY,
    DEFAULT_AUDIT_RATE,
    DEFAULT_CANDIDATES,
    DEFAULT_GUARDED_CANDIDATES,
    DEFAULT_LEARN_FLOOR,
    DEFAULT_LOG_FLOOR,
    DEFAULT_MAX_FALSE_HIT_RATE,
    DEFAULT_MIN_CONTEXT_SIMILARITY,
    DEFAULT_SLOT_MIN_SIMILARITY,
    RETIRED_JUDGE_MODE,
    DecisionMode,
    MatchPolicy,
    default_min_similarity,
)
from index.pricing.prices import SHIPPED_PRICES, PriceTable, blended, parse_prices, read_price_file
from index.request.keys import DEFAULT_MAX_DECISION_CHARS, ContextMatch
from index.search.pgvector import PgVectorParams
from index.search.vector_index import VectorIndexKind

log = logging.getLogger("deja.settings")


@dataclass(frozen=True)
class Retired:
    """A setting that no longer exists: why, and the setting that now carries its value if it was renamed."""

    why: str
    renamed_to: str | None = None


LEARNED_VETO_REMOVED = "the learned veto was measured and removed (docs/learned-veto.md)"
# Retired settings by field name. An old deployment that still sets one (`DEJA_<NAME>` or a keyword) starts: the
# value is ignored, or carried to `renamed_to` when that is not set itself, and one warning names each.
RETIRED: dict[str, Retired] = {
    "verifier": Retired("the cross-encoder verifier was retired"),
    "verifier_min_probability": Retired("retired with DEJA_VERIFIER"),
    "veto_below": Retired(LEARNED_VETO_REMOVED),
    "judge_model": Retired(LEARNED_VETO_REMOVED),
    "pair_model": Retired(LEARNED_VETO_REMOVED),
    "explore_rate": Retired("exploration sent upstream the hits the learned veto doubted; " + LEARNED_VETO_REMOVED),
    "judge_candidates": Retired("renamed with the learned veto's removal", renamed_to="guarded_candidates"),
}


def with_retired(data: dict[str, Any], environ: dict[str, str]) -> tuple[dict[str, Any], list[str]]:
    """`data` (keywords and environment values by field name) with each retired setting dropped or carried to its
    new name, and one line per retired setting that was set (in the keywords or in `environ`)."""
    env = {key.lower(): value for key, value in environ.items()}
    out, lines = dict(data), []
    for name, retired in RETIRED.items():
        value = out.pop(name, env.get(f"deja_{name}"))
        if value is None:
            continue
        old = f"DEJA_{name.upper()}"
        if retired.renamed_to is None:
            lines.append(f"{old} is retired and ignored: {retired.why}")
            continue
        new = f"DEJA_{retired.renamed_to.upper()}"
        lines.append(f"{old} is retired ({retired.why}): its value is read as {new}")
        if retired.renamed_to not in out and f"deja_{retired.renamed_to}" not in env:
            out[retired.renamed_to] = value
    return out, lines


class Settings(BaseSettings):
    """Every tunable of the gateway. Each field maps to `DEJA_<NAME>` and to a `deja serve` flag."""

    model_config = SettingsConfigDict(env_prefix="DEJA_", extra="ignore")

    upstream_url: str = Field("https://api.openai.com", description="Base URL of the OpenAI-compatible upstream")
    anthropic_upstream_url: str = Field(
        "https://api.anthropic.com", description="Base URL of the Anthropic upstream (/v1/messages)")
    database_url: str | None = Field(None, description="SQLAlchemy URL; default SQLite file in data_dir")
    redis_url: str | None = Field(None, description="Redis URL for the shared exact tier; default in-process LRU")
    data_dir: Path = Field(Path(".deja"), description="Folder for the SQLite file and the generated secret")
    decision: DecisionMode = Field(
        DecisionMode.GUARDED, description="'guarded' (the default: cosine >= DEJA_MIN_SIMILARITY, then the gates, "
        "the gates, the guard stages and the remembered differences as vetoes; a plain rewording is served on its "
        "content) or 'threshold' (the steps that read only the cosine and the guard stages); 'judge' was retired")
    max_false_hit_rate: float = Field(
        DEFAULT_MAX_FALSE_HIT_RATE, gt=0.0, lt=1.0,
        description="The false-hit budget, wrong ÷ served, each namespace's learned thresholds are held to: the "
        f"lowest threshold whose wrong ÷ served is within it with {LEARNER_CONFIDENCE:.0%} posterior probability "
        "serves, and one over it with that probability rises")
    guarded_candidates: int = Field(DEFAULT_GUARDED_CANDIDATES, ge=1, le=50,
                                    description="Guarded mode: nearest candidates the decision reads per request")
    min_similarity: float | None = Field(
        None, ge=-1.0, le=1.0,
        description="Cosine similarity threshold of the guarded and threshold rules (in guarded mode the prior "
        "each namespace's learned threshold starts from); empty = 0.92 for guarded, 0.90 for threshold")
    min_context_similarity: float = Field(
        DEFAULT_MIN_CONTEXT_SIMILARITY, ge=-1.0, le=1.0,
        description="Cosine similarity floor between the relevant earlier contexts of two conversations")
    context_match: ContextMatch = Field(
        ContextMatch.SEMANTIC, description="Earlier turns: 'semantic' (relevant context by meaning) or 'exact'")
    candidates: int = Field(
        DEFAULT_CANDIDATES, ge=1, le=50, description="Nearest neighbours verified per semantic lookup")
    guard_polarity: bool = Field(True, description="Veto candidates that differ by a negation or reversal")
    guard_values: bool = Field(True, description="Veto candidates that differ in a number, name or other value")
    max_decision_chars: int = Field(
        DEFAULT_MAX_DECISION_CHARS, ge=100, le=100_000,
        description="Characters of a prompt (and of a conversation's relevant context) the semantic decision reads "
        "at most; a longer request gets exact hits only, so CPU work per request stays bounded")
    heavy_requests_per_namespace: int = Field(
        0, ge=0, description="Heavy requests (a semantic lookup, or a body over 64 KiB) one namespace may have in "
        "flight while another namespace has a request in flight; beyond it a lookup is matched exactly only "
        "(X-Deja-Policy: exact_only: namespace busy) and a large body gets 429 + Retry-After, so one tenant cannot "
        "starve the others; a namespace alone is never limited; 0 = half the usable cores (at least 1)")
    store_refusals: bool = Field(
        False, description="Store answers that are not answers: refusals, empty content, all tool errors "
        "(off: they are relayed and never cached)")
    namespace_secret: SecretStr | None = Field(None, description="HMAC secret for namespaces; default generated")
    credential_headers: Annotated[tuple[str, ...], NoDecode] = Field(
        (), description="More headers that carry a credential (comma-separated), besides Authorization, "
        "api-key and x-api-key")
    shared_namespace: str | None = Field(
        None, description="Opt-in: requests without any credential share this one namespace; unset = not cached")
    admin_token: SecretStr | None = Field(None, description="Bearer token for /deja/* admin endpoints")
    admin_session_seconds: float = Field(
        8 * 3600, gt=0, description="Lifetime of a label-page session (the cookie `?token=` trades for)")
    metrics_token: SecretStr | None = Field(
        None, description="Bearer token /metrics needs (the admin token works too); unset = /metrics is open")
    decision_log_days: float | None = Field(
        30, gt=0, description="Days a decision keeps its prompts: then an unlabelled decision is deleted and a "
        "labelled one keeps only hashes and numbers; empty = forever")
    label_days: float | None = Field(90, gt=0, description="Days a label is kept; empty = forever")
    tombstone_days: float | None = Field(
        7, gt=0, description="Days a deletion is remembered for replicas to catch up (an older snapshot is "
        "rebuilt); empty = forever")
    ttl_seconds: float | None = Field(
        7 * 24 * 3600, ge=0, description="Default entry lifetime in seconds; empty or 'none' = forever; 0 = "
        "nothing is stored (as `Cache-Control: max-age=0` means for one request)")
    exact_max_items: int = Field(10_000, ge=1, description="Size of the in-process exact LRU")
    max_body_bytes: int = Field(4 * 1024 * 1024, ge=1024, description="Largest accepted request body")
    upstream_connect_timeout: float = Field(5.0, gt=0, description="Seconds to connect to the upstream")
    upstream_read_timeout: float = Field(120.0, gt=0, description="Seconds between upstream bytes")
    upstream_max_connections: int = Field(100, ge=1, description="Connection pool size to the upstream")
    max_entries: int | None = Field(1_000_000, ge=1, description="Entry cap; least recently used are evicted")
    sync_interval_seconds: float = Field(0.5, gt=0, description="How often a replica catches up from SQL")
    evict_interval_seconds: float = Field(30.0, gt=0, description="How often TTL/LRU eviction runs")
    context_memo_size: int = Field(
        DEFAULT_CONTEXT_MEMO_SIZE, ge=0, description="Conversation context vectors memoised by exact text (LRU); "
        "0 = embed every context")
    recount_interval_seconds: float = Field(
        3600.0, gt=0, description="How often eviction re-counts every entry; in between the count is kept "
        "incrementally from new ids and tombstones")
    decision_log_floor: float = Field(
        DEFAULT_LOG_FLOOR, ge=-1.0, le=1.0, description="Log semantic decisions from this similarity")
    audit_rate: float = Field(
        DEFAULT_AUDIT_RATE, ge=0.0, le=1.0, description="Share of semantic hits re-asked upstream")
    audit_calls_per_hour: int = Field(
        120, ge=0, description="Hourly allowance of labelling's extra upstream calls: audits beyond DEJA_AUDIT_RATE's "
        "share (sampled densely where hits are riskier) and LLM label calls for shadows; 0 = none")
    label_model: str | None = Field(
        None, description="Model of the chat upstream that labels audits and shadows (an LLM that "
        "reads the two prompts and answers); empty = compare the answers' embeddings")
    label_model_error_rate: float = Field(
        0.05, ge=0.0, lt=0.5, description="How often the label model's label is wrong, as measured on labelled "
        "pairs: each of its labels weighs 1 - 2 x this in the remembered differences, and the learned thresholds' "
        "posterior reads its labels as this noisy")
    difference_min_labels: float = Field(
        3.0, gt=0, description="Net weight of wrong labels (wrong minus right, each decayed) at which a remembered "
        "difference between two prompts keeps such candidates from being served")
    difference_half_life_days: float = Field(
        7.0, gt=0, description="Days in which a remembered difference's evidence loses half its weight")
    audit_concurrency: int = Field(4, ge=1, description="Background audits in flight at most")
    shadow_labels: bool = Field(True, description="Label near misses (a candidate below the threshold that passes "
                                "every other step) by comparing its answer with the fresh one")
    learn_threshold: bool = Field(
        True, description="Choose each namespace's cosine threshold from its own evidence, both ways: shadow labels "
        "of near misses below it, audits of hits above it (off: the prior threshold serves)")
    threshold_interval_seconds: float = Field(
        5.0, gt=0, description="How often the budget's upkeep pass runs: the tallies of served, audited and wrong "
        "hits and each namespace's learned thresholds, re-chosen from the shared evidence (GET /deja/budget and "
        "the overview page show what the last pass stored)")
    learn_floor: float = Field(
        DEFAULT_LEARN_FLOOR, ge=-1.0, le=1.0, description="The lowest cosine threshold a namespace's evidence may "
        "choose; candidates from here up to the threshold are the near misses that are labelled")
    slot_min_similarity: float = Field(
        DEFAULT_SLOT_MIN_SIMILARITY, ge=-1.0, le=1.0, description="Guarded mode: the cold-start cosine threshold of "
        "a single-turn candidate whose prompt changes a slot (one or two content words swapped for words WordNet "
        "does not call the same); each namespace then learns its own from the labels of such candidates")
    alternative_min_similarity: float = Field(
        DEFAULT_ALTERNATIVE_MIN_SIMILARITY, ge=-1.0, le=1.0, description="Guarded mode: the cold-start cosine "
        "threshold of a single-turn candidate whose prompt swaps a content word for a WordNet sibling or antonym "
        "(red/blue, buy/sell); 1.0 = never served until the namespace's own labels of such candidates move it")
    answer_same_similarity: float = Field(0.95, ge=0, le=1, description="Answer similarity that counts as same")
    answer_label_false_same: float = Field(
        0.03, ge=0.0, lt=0.5, description="How often answer comparison labels a wrong answer right (measured by "
        "`eval answers` on real answers with known truth: 2.8%): without a label model the learner reads wrong "
        "labels as undercounted by this share (a 'different' label is always counted as wrong)")
    prices: dict[str, dict[str, float | None]] = Field(
        default_factory=dict, description="The operator's price table, JSON: {model: {\"input\", \"output\", "
        "\"cached_input\", \"cache_write\"}} in USD per 1M tokens (the last two default to the input rate); over "
        "DEJA_PRICES_FILE and the shipped OpenAI and Anthropic prices. A hit saves what its upstream call cost, by "
        "token kind; a model no table prices shows its tokens and \"no price\"")
    prices_file: Path | None = Field(
        None, description="A JSON file of the DEJA_PRICES shape, over the shipped prices (DEJA_PRICES wins)")
    prices_per_1k_tokens: dict[str, float] = Field(
        default_factory=dict, description="Deprecated (use DEJA_PRICES): one blended USD price per 1K tokens of any "
        "kind, by model; read, with a warning, only for models no per-kind table prices")
    embedder: EmbedderBackend = Field(
        EmbedderBackend.ONNX, description="Embedding backend: 'onnx' (MiniLM as an int8 ONNX Runtime export, no torch "
        "at run time) or 'torch' (sentence-transformers, any model folder)")
    embedding_model: Path | None = Field(
        None, description="Folder of a sentence-transformers model (torch backend); empty = bundled MiniLM")
    embed_threads: int = Field(
        0, ge=0, description="Intra-op threads of the one embedding worker; 0 = usable cores minus one (at least 1)")
    embed_max_batch: int = Field(64, ge=1, description="Texts embedded together at most")
    embed_max_wait_ms: float = Field(
        2.0, ge=0, description="Longest a request waits for company (only under concurrency; never alone)")
    embed_queue_texts: int = Field(
        1024, ge=1, description="Texts waiting to be embedded at most; beyond it requests get 503 + Retry-After")
    shard: int = Field(0, ge=0, description="This replica's shard of the namespaces (0-based), see DEJA_SHARDS")
    shards: int = Field(
        1, ge=1, description="Shards the namespaces are spread over (jump consistent hash); 1 = no sharding")
    vector_index: VectorIndexKind = Field(
        VectorIndexKind.HNSW, description="Semantic index: 'hnsw' (in-process per replica) or 'pgvector' (shared, "
        "in the PostgreSQL of DEJA_DATABASE_URL: replicas hold no index and see each other's entries at once)")
    pgvector_ef_search: int = Field(
        PgVectorParams.ef_search, ge=1, le=1000, description="pgvector: hnsw.ef_search of each graph search")
    snapshot_interval_seconds: float = Field(
        600.0, ge=0, description="How often the HNSW index is saved to data_dir/snapshot (also at shutdown); 0 = never")
    log_level: str = Field("info", description="Log level")

    @model_validator(mode="before")
    @classmethod
    def _retired(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        data, lines = with_retired(data, dict(os.environ))
        for line in lines:
            log.warning(line)
        return data

    @model_validator(mode="after")
    def _prices_read(self) -> Settings:
        self.price_table()  # a bad table or file stops start-up with its reason
        if self.prices_per_1k_tokens:
            log.warning("DEJA_PRICES_PER_1K_TOKENS is deprecated: a blended price misprices cached input and "
                        "output; give per-kind rates in DEJA_PRICES or DEJA_PRICES_FILE")
        return self

    @field_validator("decision", mode="before")
    @classmethod
    def _judge_mode_retired(cls, value: object) -> object:
        if isinstance(value, str) and value.strip().lower() == "judge":
            raise ValueError(RETIRED_JUDGE_MODE)
        return value

    @field_validator("ttl_seconds", mode="before")
    @classmethod
    def _empty_is_none(cls, value: object) -> object:
        return None if value in ("", "none", "None") else value

    @field_validator("credential_headers", mode="before")
    @classmethod
    def _comma_separated(cls, value: object) -> object:
        return tuple(h.strip().lower() for h in value.split(",") if h.strip()) if isinstance(value, str) else value

    @field_validator("shared_namespace", "min_similarity", "decision_log_days", "label_days",
                     "tombstone_days", "label_model", "prices_file", mode="before")
    @classmethod
    def _blank_is_none(cls, value: object) -> object:
        return None if isinstance(value, str) and not value.strip() else value

    @model_validator(mode="after")
    def _shard_in_range(self) -> Settings:
        if self.shard >= self.shards:
            raise ValueError(f"DEJA_SHARD={self.shard} must be below DEJA_SHARDS={self.shards}")
        return self

    @model_validator(mode="after")
    def _pgvector_needs_postgres(self) -> Settings:
        if self.vector_index is VectorIndexKind.PGVECTOR and not (self.database_url or "").startswith("postgresql"):
            raise ValueError("DEJA_VECTOR_INDEX=pgvector needs DEJA_DATABASE_URL to name a PostgreSQL database "
                             "with the pgvector extension")
        return self

    def policy(self) -> MatchPolicy:
        """The deployment's match policy, as the gateway runs it and `eval` measures it (the one place it is
        built)."""
        flags = {"polarity": self.guard_polarity, "values": self.guard_values}
        floor = self.min_similarity
        return MatchPolicy(
            min_similarity=default_min_similarity(self.decision) if floor is None else floor,
            min_context_similarity=self.min_context_similarity,
            stages=tuple(name for name in STAGE_ORDER if flags[name]),
            context_match=self.context_match,
            decision=self.decision,
            max_false_hit_rate=self.max_false_hit_rate,
            guarded_candidates=self.guarded_candidates,
            max_decision_chars=self.max_decision_chars,
            learn_floor=self.learn_floor,
            slot_similarity=self.slot_min_similarity,
            alternative_similarity=self.alternative_min_similarity,
        )

    def labelling(self) -> LabelConfig:
        """How the deployment labels, as the gateway's labelling loop runs it and `eval replay --learn` replays it
        (the one place it is built)."""
        return LabelConfig(self.shadow_labels, self.label_model is not None, self.label_model_error_rate,
                           self.answer_same_similarity)

    def price_table(self) -> PriceTable:
        """What upstream tokens cost, by model: the shipped prices, under the price file, under `DEJA_PRICES`
        (the one place the table is built); the deprecated blended prices only for models none of them prices."""
        table = PriceTable(SHIPPED_PRICES)
        if self.prices_file is not None:
            table = table.merged(read_price_file(self.prices_file))
        table = table.merged(parse_prices(self.prices, "DEJA_PRICES"))
        old = {m: p for m, p in self.prices_per_1k_tokens.items() if table.price_for(m) is None}
        return PriceTable({**blended(old), **table.prices})

    @property
    def sql_url(self) -> str:
        """`database_url`, else the default SQLite file in `data_dir` (the one place that default is written)."""
        return self.database_url or f"sqlite:///{self.data_dir / 'deja.db'}"

    def secret_bytes(self) -> bytes:
        """The namespace secret; generated once into `data_dir/secret` (mode 0600) when not configured."""
        if self.namespace_secret is not None:
            return self.namespace_secret.get_secret_value().encode()
        path = self.data_dir / "secret"
        if not path.exists():
            self.data_dir.mkdir(parents=True, exist_ok=True)
            path.write_text(secrets.token_hex(32))
            path.chmod(0o600)
        return path.read_text().strip().encode()
