"""`eval replay --learn`: the live gateway's learning loop, replayed. The real `Cache` and `Matcher` decide at the
default decision (guarded) from a cold cache; the namespace's threshold is the one `index.match.threshold_book`
learns from the evidence a gateway gathers for free or within its hourly allowance:

- every near miss (a candidate below the threshold that passes every other step) went upstream anyway: its fresh
  answer labels whether the candidate's answer would have been right (a shadow label);
- a share of served hits is re-asked (`DEJA_AUDIT_RATE`, more where the sampler says an audit teaches most);
- labels compare answers against how much the upstream's answers vary (`index.match.answers`; while no baseline
  of that variation exists, a shadow asks once more within `DEJA_AUDIT_CALLS_PER_HOUR`), or come from a label
  model that errs at `labeller_error` (and is configured with that rate).

The upstream answers by intent (`eval.answers`), the same text each call or, with `answer_variation`, the same
content with a different closing sentence each call. Everything is seeded and the threshold is re-chosen every
`update_every` requests in the replay's own thread, so one seed gives one result. Rows are the two halves.
"""

from __future__ import annotations

import dataclasses
import random
import tempfile
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from eval.answers import intent_answer, sampled_answer
from eval.datasets import StreamRequest
from eval.metrics import rate
from index.cache import Cache, CacheConfig
from index.embedding.embedder import Embedder
from index.guards.stages import Stage
from index.match.answers import AnswerBaselines, compare_answers
from index.match.audit_sampler import AuditSampler, HitFacts
from index.match.decide import Deciders
from index.match.evidence import Observation, by_kind, collect
from index.match.live_threshold import LearnerConfig
from index.match.matcher import Matcher
from index.match.outcome import Lookup
from index.match.policy import DEFAULT_AUDIT_RATE, MatchPolicy
from index.match.threshold_book import ThresholdBook
from index.records import Verdict, answer_text
from index.request.keys import build_key
from index.search.hnsw import SemanticIndex
from index.storage.entries import EntryStore, make_engine
from index.storage.exact import LruExactCache

NAMESPACE = "replay"
MODEL = "replay"


@dataclass(frozen=True)
class LearnConfig:
    """The deployment replayed: its policy and parts, the labelling it is configured with, and the upstream."""

    policy: MatchPolicy
    stages: tuple[Stage, ...] = ()
    audit_rate: float = DEFAULT_AUDIT_RATE
    audit_calls_per_hour: int = 120
    requests_per_hour: float = 3600.0
    answer_variation: bool = False
    # None: labels compare answers (no label model); else a label model wrong this often, configured with it.
    labeller_error: float | None = None
    answer_same_similarity: float = 0.95
    # False: the threshold stays at the policy's (a fixed-threshold row to compare with).
    learn: bool = True
    update_every: int = 10
    seed: int = 0


@dataclass(frozen=True)
class HalfRates:
    """One half of the replay. Rates are of the half's requests, except `wrong_per_served`."""

    requests: int
    served: int
    correct: int
    wrong: int
    correct_rate: float | None
    wrong_per_served: float | None
    threshold_at_end: float


@dataclass(frozen=True)
class LearnReport:
    stream: str
    requests: int
    learned: bool
    prior: float
    threshold: float
    first: HalfRates
    second: HalfRates
    moves: tuple[tuple[int, float], ...]
    labels: dict[str, int]
    label_calls: int
    labeller: str
    answer_variation: bool
    labeller_accuracy: float | None


class _Answers(Embedder):
    """The replay's embedder, remembering what it embedded (answers repeat: one content, a few closings)."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.model_id = inner.model_id
        self.dim = inner.dim
        self._known: dict[str, Any] = {}

    def embed(self, texts: Sequence[str]) -> Any:
        missing = [t for t in dict.fromkeys(texts) if t not in self._known]
        if missing:
            for text, vector in zip(missing, self.inner.embed(missing), strict=True):
                self._known[text] = vector
        return np.stack([self._known[t] for t in texts]) if texts else self.inner.embed([])


@dataclass
class _Counts:
    requests: int = 0
    served: int = 0
    correct: int = 0
    wrong: int = 0


class _Deployment:
    """One namespace of a live gateway, replayed; mutable, local to `run_learn`."""

    def __init__(self, cache: Cache, book: ThresholdBook, config: LearnConfig, embedder: Embedder) -> None:
        self.cache, self.book, self.config, self.embedder = cache, book, config, embedder
        self.now = 0.0
        self.rng = random.Random(config.seed)
        self.sampler = AuditSampler(config.audit_rate, config.audit_calls_per_hour, lambda: self.now,
                                    calls_per_audit=2)
        self.baselines = AnswerBaselines()
        self.observations: list[Observation] = []
        self.intent_of: dict[int, str] = {}
        self.calls: Counter[str] = Counter()
        self.labels: Counter[str] = Counter()
        self.accurate = self.judged = 0

    def answer(self, intent: str) -> str:
        content = intent_answer(intent)
        if not self.config.answer_variation:
            return content
        self.calls["upstream"] += 1
        return sampled_answer(content, self.rng.randrange(1 << 30))

    def serve(self, request: StreamRequest, counts: _Counts) -> None:
        self.now = request.seq * 3600.0 / self.config.requests_per_hour
        body = {"model": MODEL, "messages": [{"role": "user", "content": request.prompt}]}
        key = build_key(NAMESPACE, body, self.cache.config.policy.context_match)
        lookup = self.cache.lookup(key)
        counts.requests += 1
        decision = lookup.decision
        if lookup.response is not None:
            served_intent = self.intent_of.get(lookup.response.entry_id)
            right = served_intent == request.intent
            counts.served += 1
            counts.correct += right
            counts.wrong += not right
            if lookup.verdict is Verdict.EXACT_HIT:
                self.observations.append(Observation(1.0, fixed=True))
            if lookup.verdict is Verdict.SEMANTIC_HIT and decision is not None:
                self.observations.append(Observation(decision.similarity, fixed=not decision.would_serve,
                                                     kind=decision.kind))
                self._audit(request, lookup, right)
            return
        fresh = self.answer(request.intent)
        if decision is not None and decision.would_serve and lookup.candidate_id is not None:
            right = self.intent_of.get(lookup.candidate_id) == request.intent
            cached = answer_text(lookup.candidate_response or {})
            label = self._label(fresh, cached, right, near_miss=True, intent=request.intent)
            self.observations.append(Observation(decision.similarity, label, kind=decision.kind))
            if label is not None:
                self.labels["shadow"] += 1
        entry = self.cache.store_answer(key, _body(request, fresh), lookup.vector)
        if entry is not None:
            self.intent_of[entry] = request.intent

    def _audit(self, request: StreamRequest, lookup: Lookup, right: bool) -> None:
        decision = lookup.decision
        assert decision is not None and lookup.response is not None
        facts = HitFacts(False, decision.similarity, self.cache.matcher.policy_for(NAMESPACE).min_similarity,
                         self.now - lookup.response.created_at)
        if self.sampler.draw(facts, self.rng.random()) is None:
            return
        self.calls["audit"] += 2
        fresh, second = self.answer(request.intent), self.answer(request.intent)
        label = self._label(fresh, answer_text(lookup.response.body), right, near_miss=False, second=second,
                            intent=request.intent)
        if label is not None and decision.would_serve:
            self.observations[-1] = Observation(decision.similarity, label, kind=decision.kind)
            self.labels["audit"] += 1

    def _label(self, fresh: str, cached: str, truth: bool, near_miss: bool, intent: str,
               second: str | None = None) -> bool | None:
        """The label a gateway would record for a candidate whose answer is `truth`fully right or not."""
        error = self.config.labeller_error
        if error is not None and (not near_miss or self.sampler.spend(1)):
            self.calls["label"] += 1
            said = truth if self.rng.random() >= error else not truth
            self._score(said, truth)
            return said
        baseline = self.baselines.baseline(NAMESPACE)
        if second is None and baseline is None and self.config.answer_variation and self.sampler.spend(1):
            self.calls["variation"] += 1
            second = self.answer(intent)
        agreement = compare_answers(fresh, cached, self.embedder, self.config.answer_same_similarity, second,
                                    baseline)
        if agreement.fresh_similarity is not None:
            self.baselines.add(NAMESPACE, agreement.fresh_similarity)
        if agreement.same is not None:
            self._score(agreement.same, truth)
        return agreement.same

    def _score(self, said: bool, truth: bool) -> None:
        self.judged += 1
        self.accurate += said == truth

    def learn(self) -> None:
        if self.config.learn:
            policy = self.cache.matcher.policy
            for kind, observations in by_kind(self.observations).items():
                self.book.update(NAMESPACE, collect(observations, policy.learn_floor), policy.prior_for(kind), kind)


def _body(request: StreamRequest, text: str) -> dict[str, Any]:
    return {"id": f"replay-{request.seq}", "object": "chat.completion", "created": 0, "model": MODEL,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}}


def run_learn(name: str, requests: Sequence[StreamRequest], embedder: Embedder, config: LearnConfig) -> LearnReport:
    """Replay `requests` through a fresh cache whose namespace learns its threshold (or keeps it fixed)."""
    answers = _Answers(embedder)
    with tempfile.TemporaryDirectory(prefix="deja-learn-") as tmp:
        engine = make_engine(f"sqlite:///{Path(tmp) / 'entries.db'}")
        try:
            store = EntryStore(engine)
            store.create_schema()
            book = ThresholdBook(LearnerConfig.for_policy(config.policy, config.labeller_error or 0.0, config.seed),
                                 clock=lambda: 0.0)
            deciders = Deciders(config.stages)
            matcher = Matcher(config.policy, deciders, learned=book.threshold)
            cache = Cache(LruExactCache(), store, SemanticIndex(embedder.dim), answers, CacheConfig(config.policy),
                          matcher=matcher)
            deployment = _Deployment(cache, book, config, answers)
            return _run(name, requests, deployment, config)
        finally:
            engine.dispose()


def _run(name: str, requests: Sequence[StreamRequest], deployment: _Deployment, config: LearnConfig) -> LearnReport:
    half = len(requests) // 2
    parts = (_Counts(), _Counts())
    ends: list[float] = []
    moves: list[tuple[int, float]] = []
    current = config.policy.min_similarity
    for position, request in enumerate(requests):
        if position == half:
            ends.append(current)
        deployment.serve(request, parts[position >= half])
        if (position + 1) % config.update_every == 0:
            deployment.learn()
            now = deployment.cache.matcher.policy_for(NAMESPACE).min_similarity
            if now != current:
                moves.append((position + 1, now))
                current = now
    ends.append(current)
    accuracy = deployment.accurate / deployment.judged if deployment.judged else None
    error = config.labeller_error
    labeller = "answer comparison" if error is None else f"a label model wrong {error:.0%}"
    return LearnReport(name, len(requests), config.learn, config.policy.min_similarity, current,
                       _half(parts[0], ends[0]), _half(parts[1], ends[1]), tuple(moves),
                       dict(deployment.labels), sum(v for k, v in deployment.calls.items() if k != "upstream"),
                       labeller, config.answer_variation, accuracy)


def _half(counts: _Counts, threshold: float) -> HalfRates:
    return HalfRates(counts.requests, counts.served, counts.correct, counts.wrong,
                     rate(counts.correct, counts.requests), rate(counts.wrong, counts.served), threshold)


def fixed(config: LearnConfig, threshold: float) -> LearnConfig:
    """The same deployment at a fixed threshold (learning off): a row of the hindsight comparison."""
    return dataclasses.replace(config, policy=config.policy.at(threshold), learn=False)
