"""Replay a request trace through the real cache pipeline (`index.cache.Cache`) against a stub upstream.

Each threshold gets a fresh cache (LRU exact tier, SQLite entry store in a temp dir, HNSW index), so rows
are independent. A hit is correct when it serves what the upstream would have answered for that request.
"""

from __future__ import annotations

import tempfile
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from eval.datasets import StreamRequest
from eval.embedding import MemoEmbedder, Progress, embed_unique
from eval.metrics import Tally, rate
from index.cache import Cache, CacheConfig
from index.embedding.embedder import Embedder
from index.guards.stages import Stage
from index.match.decide import Deciders
from index.match.outcome import Lookup
from index.match.policy import COSINE_POLICY, MatchPolicy
from index.records import Verdict, answer_text
from index.request.keys import build_key
from index.search.hnsw import SemanticIndex
from index.storage.entries import EntryStore, make_engine
from index.storage.exact import LruExactCache

NAMESPACE = "replay"
MODEL = "replay"

# The upstream seam: a request of the trace -> an OpenAI `chat.completion` body.
Upstream = Callable[[StreamRequest], dict[str, Any]]


def stub_upstream(request: StreamRequest) -> dict[str, Any]:
    """Answers by intent, so two prompts of one intent get the same answer and any other answer is wrong."""
    return {
        "id": f"replay-{request.seq}",
        "object": "chat.completion",
        "created": 0,
        "model": MODEL,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": f"answer for {request.intent}"},
                     "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
    }


@dataclass(frozen=True)
class StageVeto:
    """Misses a stage caused at one threshold; `rightly` = the vetoed candidate had another answer."""

    stage: str
    vetoed: int
    rightly: int


@dataclass(frozen=True)
class ReplayRow:
    """One replay at one threshold. Rates are fractions of all requests, except `wrong_per_served`."""

    threshold: float
    requests: int
    exact_hits: int
    semantic_hits: int
    correct: int
    wrong: int
    oracle: int
    served_rate: float | None
    correct_rate: float | None
    wrong_per_served: float | None
    exact_rate: float | None
    semantic_rate: float | None
    oracle_rate: float | None
    vetoes: tuple[StageVeto, ...]


@dataclass(frozen=True)
class ReplayReport:
    """Every row of `eval replay`, with what was replayed."""

    stream: str
    embedder: str
    requests: int
    intents: int
    stages: tuple[str, ...]
    rows: tuple[ReplayRow, ...]


@dataclass(frozen=True)
class ReplayConfig:
    """Thresholds (min cosine similarity) of `policy` to replay at, the verification stages (built from the
    policy) and the upstream stub."""

    thresholds: tuple[float, ...]
    stages: tuple[Stage, ...] = ()
    upstream: Upstream = field(default=stub_upstream)
    policy: MatchPolicy = COSINE_POLICY

    def deciders(self) -> Deciders:
        """What decides each replayed request: the same parts the gateway's `Cache` holds."""
        return Deciders(self.stages)

    def points(self) -> tuple[MatchPolicy, ...]:
        """The policy of each row: one per threshold."""
        return tuple(self.policy.at(t) for t in self.thresholds)


@dataclass
class _Counts(Tally):
    """A tally with each stage's vetoes, and those that were right (mutable, local to `replay_once`)."""

    vetoed: Counter[str] = field(default_factory=Counter)
    rightly: Counter[str] = field(default_factory=Counter)


def run_replay(
    stream: str,
    requests: Sequence[StreamRequest],
    embedder: Embedder,
    config: ReplayConfig,
    progress: Progress | None = None,
) -> ReplayReport:
    """Embed the distinct prompts once, then replay the whole trace once per threshold."""
    memo = MemoEmbedder(embedder, embed_unique(embedder, (r.prompt for r in requests), progress=progress))
    rows = tuple(replay_once(requests, memo, policy, config) for policy in config.points())
    return ReplayReport(
        stream=stream,
        embedder=embedder.model_id,
        requests=len(requests),
        intents=len({r.intent for r in requests}),
        stages=tuple(stage.name for stage in config.stages),
        rows=rows,
    )


def replay_once(
    requests: Sequence[StreamRequest], embedder: Embedder, policy: MatchPolicy, config: ReplayConfig
) -> ReplayRow:
    """Replay the trace through a fresh in-process cache deciding by `policy`."""
    with tempfile.TemporaryDirectory(prefix="deja-replay-") as tmp:
        engine = make_engine(f"sqlite:///{Path(tmp) / 'entries.db'}")
        try:
            store = EntryStore(engine)
            store.create_schema()
            cache = Cache(LruExactCache(), store, SemanticIndex(embedder.dim), embedder, CacheConfig(policy),
                          config.deciders())
            return replay_through(cache, requests, config)
        finally:
            engine.dispose()


def replay_through(cache: Cache, requests: Sequence[StreamRequest], config: ReplayConfig) -> ReplayRow:
    """Replay the trace through `cache` (fresh, deciding by its own policy), one row. `replay_once` builds the
    cache; a caller that decides otherwise (a training recipe) brings its own."""
    counts = _replay(cache, requests, config.upstream)
    policy = cache.config.policy
    return _row(policy.min_similarity, len(requests), counts, [stage.name for stage in config.stages])


def _replay(cache: Cache, requests: Sequence[StreamRequest], upstream: Upstream) -> _Counts:
    counts = _Counts()
    policy = cache.config.policy
    seen_intents: set[str] = set()
    for request in requests:
        counts.oracle += request.intent in seen_intents
        seen_intents.add(request.intent)
        body = {"model": MODEL, "messages": [{"role": "user", "content": request.prompt}]}
        key = build_key(NAMESPACE, body, policy.context_match)
        lookup = cache.lookup(key)
        expected = answer_text(upstream(request))
        if lookup.response is not None:
            _count_hit(counts, lookup.verdict, answer_text(lookup.response.body), expected)
            continue
        _count_veto(counts, lookup, expected)
        cache.store_answer(key, upstream(request), lookup.vector)
    return counts


def _count_hit(counts: _Counts, verdict: Verdict, served: str, expected: str) -> None:
    if verdict is Verdict.EXACT_HIT:
        counts.exact += 1
    else:
        counts.semantic += 1
    counts.score(served == expected)


def _count_veto(counts: _Counts, lookup: Lookup, expected: str) -> None:
    stage = lookup.decision.vetoed_by if lookup.decision is not None else None
    if stage is None:  # served, or not a veto (below a threshold)
        return
    counts.vetoed[stage] += 1
    # The veto was right when serving the candidate would have given another answer than the upstream's.
    if lookup.candidate_response is None or answer_text(lookup.candidate_response) != expected:
        counts.rightly[stage] += 1


def _row(threshold: float, requests: int, counts: _Counts, stage_names: Sequence[str]) -> ReplayRow:
    served = counts.served
    return ReplayRow(
        threshold=threshold,
        requests=requests,
        exact_hits=counts.exact,
        semantic_hits=counts.semantic,
        correct=counts.correct,
        wrong=counts.wrong,
        oracle=counts.oracle,
        served_rate=rate(served, requests),
        correct_rate=rate(counts.correct, requests),
        wrong_per_served=rate(counts.wrong, served),
        exact_rate=rate(counts.exact, requests),
        semantic_rate=rate(counts.semantic, requests),
        oracle_rate=rate(counts.oracle, requests),
        vetoes=tuple(StageVeto(name, counts.vetoed[name], counts.rightly[name]) for name in stage_names),
    )
