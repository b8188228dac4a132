"""`eval replay --learn`: a live gateway's learning loop, run rather than copied. The product as a fresh gateway
builds it (`eval.product`: the `Matcher` with its candidate rule, the learner's `ThresholdBook`, the remembered
differences) decides a trace from a cold cache through the real `Cache`, and the gateway's own labelling rules
(`index.match.labelling`) label it:

- every miss with a decided candidate went upstream anyway: its fresh answer labels whether the candidate's answer
  would have been right (a shadow label); the labels of near misses a lower threshold would serve are evidence;
- a share of served hits is re-asked (`DEJA_AUDIT_RATE`, more where the sampler says an audit teaches most);
- labels compare answers against how much the upstream's answers vary (`index.match.answers`; while no baseline
  of that variation exists, a shadow asks once more within `DEJA_AUDIT_CALLS_PER_HOUR`), or come from a label
  model that errs at `labeller_error` (and is configured with that rate);
- a wrong hit or a right near miss teaches its difference, which the Matcher then reads.

The evidence is kept by the gateway's own code on the replay's SQLite database: each lookup's line logged as the
gateway's observer logs it (`index.storage.decision_log.record_of`), buffered until the next pass as its tick
buffers it, labels written through `DecisionLog.label`, and every pass counts the decisions (`DecisionLog.count`:
the tallies and the running totals of `index.storage.evidence`), settles the labels and chooses each stream
published since the last pass from its published evidence, as the gateway's budget's pass does: no second copy of
the evidence, its aging or its publication. The upstream answers by
intent (`eval.answers`), the same text each call or, with `answer_variation`, the same content with a different
closing sentence each call. Everything is seeded and the threshold is re-chosen every `update_every` requests in
the replay's own thread, so one seed gives one result. Rows are the two halves.
"""

from __future__ import annotations

import dataclasses
import random
import tempfile
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from eval.answers import intent_answer, sampled_answer
from eval.datasets import StreamRequest
from eval.metrics import rate
from eval.product import Product, ProductConfig, build
from index.cache import Cache, CacheConfig
from index.embedding.embedder import Embedder
from index.match.answers import AnswerBaselines
from index.match.audit_sampler import AuditSampler
from index.match.candidates import CandidateRule
from index.match.differences import HALF_LIFE_SECONDS, MIN_NET_WRONG
from index.match.evidence import Aging
from index.match.labelling import LabelCase, LabelConfig, LabelRules
from index.match.outcome import Lookup
from index.match.policy import DEFAULT_AUDIT_RATE, MatchPolicy
from index.records import Verdict, answer_text
from index.request.keys import build_key
from index.search.hnsw import SemanticIndex
from index.settings import Settings
from index.storage.budget import BudgetTallies
from index.storage.decision_log import DecisionLog, DecisionRecord, Label, LabelSource, record_of
from index.storage.entries import EntryStore, make_engine
from index.storage.evidence import EvidenceStore
from index.storage.exact import LruExactCache

NAMESPACE = "replay"
MODEL = "replay"


@dataclass(frozen=True)
class LearnConfig:
    """The deployment replayed: its policy and the settings its product (`product`) and labelling (`labelling`)
    are built from, as a gateway builds them, and the replay's upstream and pace."""

    policy: MatchPolicy
    audit_rate: float = DEFAULT_AUDIT_RATE
    audit_calls_per_hour: int = 120
    requests_per_hour: float = 3600.0
    answer_variation: bool = False
    # None: labels compare answers (no label model); else a label model wrong this often, configured with it.
    labeller_error: float | None = None
    answer_same_similarity: float = 0.95
    # False: the threshold stays at the policy's (a fixed-threshold row to compare with; DEJA_LEARN_THRESHOLD).
    learn: bool = True
    update_every: int = 10
    seed: int = 0
    rule: CandidateRule = field(default_factory=CandidateRule)
    shadow_labels: bool = True
    difference_half_life: float = HALF_LIFE_SECONDS
    difference_min_labels: float = MIN_NET_WRONG
    # Answer comparison's measured false-same rate (DEJA_ANSWER_LABEL_FALSE_SAME), read when no label model labels.
    false_same: float = 0.0

    @classmethod
    def from_settings(cls, settings: Settings, policy: MatchPolicy | None = None, **replay: Any) -> LearnConfig:
        """The gateway of `settings` (with `policy` in place of its own when given), replayed with `replay`'s
        options (`answer_variation`, `labeller_error`, `seed`, ...)."""
        return cls(policy or settings.policy(), settings.audit_rate, settings.audit_calls_per_hour,
                   answer_same_similarity=settings.answer_same_similarity, learn=settings.learn_threshold,
                   rule=CandidateRule(settings.candidates, settings.decision_log_floor),
                   shadow_labels=settings.shadow_labels,
                   difference_half_life=settings.difference_half_life_days * 86400.0,
                   difference_min_labels=settings.difference_min_labels,
                   false_same=settings.answer_label_false_same, **replay)

    def product(self) -> ProductConfig:
        """What the replayed gateway's Matcher is built from (its learner reads a label model's labels as noisy)."""
        return ProductConfig(self.policy, self.learn, self.rule, self.difference_half_life,
                             self.difference_min_labels, self.labeller_error or 0.0, self.seed,
                             self.false_same if self.labeller_error is None else 0.0)

    def labelling(self) -> LabelConfig:
        """How the replayed gateway labels (`Settings.labelling` of its settings)."""
        error = self.labeller_error
        return LabelConfig(self.shadow_labels, error is not None, error or 0.0, self.answer_same_similarity)


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
    # Labels made, by source, as a gateway's decision log would hold them.
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
    """One namespace of a live gateway, replayed: the product, its labelling rules, a cache in front of `store`,
    and the upstream's answers; mutable, local to `run_learn`."""

    def __init__(self, store: EntryStore, embedder: Embedder, config: LearnConfig) -> None:
        self.config, self.embedder = config, embedder
        self.now = 0.0
        self.rng = random.Random(config.seed)
        self.product: Product = build(config.product(), clock=self.clock)
        sampler = AuditSampler(config.audit_rate, config.audit_calls_per_hour, self.clock, calls_per_audit=2)
        self.rules = LabelRules(config.labelling(), sampler, AnswerBaselines(), self.product.differences, embedder,
                                self.product.book.over_budget, self.clock, config.policy.prior_for,
                                self.product.book.thin)
        self.cache = Cache(LruExactCache(), store, SemanticIndex(embedder.dim), embedder, CacheConfig(config.policy),
                           matcher=self.product.matcher)
        # The gateway's own decision log and evidence store (`index.storage.evidence`), on the replay's database:
        # decisions logged as the gateway's observer logs them, buffered until the next pass as its tick does,
        # labels written as its labelling writes them, counted and chosen from as its budget's pass does.
        self.evidence = EvidenceStore(store.engine, Aging(self.product.book.config.floor), self.clock)
        self.log = DecisionLog(store.engine, self.evidence, BudgetTallies(self.clock))
        self.pending: list[DecisionRecord] = []
        self.version = 0
        self.intent_of: dict[int, str] = {}
        self.calls: Counter[str] = Counter()
        self.labels: Counter[str] = Counter()
        self.accurate = self.judged = 0

    def clock(self) -> float:
        return self.now

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
        request_id = f"replay-{request.seq}"
        record = record_of(lookup, request_id, NAMESPACE, MODEL, request.prompt, "chat",
                           self.config.policy.min_similarity, self.now)
        if record is not None:
            self.pending.append(record)
        if lookup.response is not None:
            right = self.intent_of.get(lookup.response.entry_id) == request.intent
            counts.served += 1
            counts.correct += right
            counts.wrong += not right
            if lookup.verdict is Verdict.SEMANTIC_HIT and lookup.decision is not None:
                self._audit(request, request_id, lookup, right)
            return
        fresh = self.answer(request.intent)
        if self.rules.shadows(lookup):
            self._shadow(request, request_id, lookup, fresh)
        entry = self.cache.store_answer(key, _body(request, fresh), lookup.vector)
        if entry is not None:
            self.intent_of[entry] = request.intent

    def _shadow(self, request: StreamRequest, request_id: str, lookup: Lookup, fresh: str) -> None:
        """A miss the rules label: the candidate's answer against the fresh one."""
        decision = lookup.decision
        assert decision is not None
        cached = answer_text(lookup.candidate_response or {})
        second = None
        if self.rules.asks_again(NAMESPACE, lookup, fresh, cached):
            self.calls["variation"] += 1
            second = self.answer(request.intent)
        right = lookup.candidate_id is not None and self.intent_of.get(lookup.candidate_id) == request.intent
        label = self._label(LabelCase.of(NAMESPACE, request.prompt, lookup), fresh, cached, second, right)
        if label is not None:
            self.labels["shadow"] += 1
            self.log.label(Label(request_id, LabelSource.SHADOW, label, self.now))

    def _audit(self, request: StreamRequest, request_id: str, lookup: Lookup, right: bool) -> None:
        decision = lookup.decision
        assert decision is not None and lookup.response is not None
        if self.rules.audit(NAMESPACE, lookup, self.rng.random()) is None:
            return
        fresh = self.answer(request.intent)
        second = self.answer(request.intent) if self.rules.audit_asks_twice else None
        self.calls["audit"] += 1 if second is None else 2
        case = LabelCase.of(NAMESPACE, request.prompt, lookup)
        label = self._label(case, fresh, answer_text(lookup.response.body), second, right)
        if label is None:
            return
        self.labels["audit"] += 1
        self.log.label(Label(request_id, LabelSource.AUDIT, label, self.now))

    def _label(self, case: LabelCase, fresh: str, cached: str, second: str | None, truth: bool) -> bool | None:
        """The label a gateway would record for a candidate whose answer is `truth`fully right or not, and what it
        teaches; a label model is simulated (wrong at `labeller_error`)."""
        if self.rules.by_label_model(audit=case.served):
            self.calls["label"] += 1
            said = truth if self.rng.random() >= (self.config.labeller_error or 0.0) else not truth
            same, weight = said, self.rules.config.model_weight
        else:
            agreement = self.rules.compare(NAMESPACE, fresh, cached, second)
            if agreement.same is None:
                return None
            same, weight = agreement.same, 1.0
        self.judged += 1
        self.accurate += same == truth
        self.rules.teach(case, same, weight)
        return same

    def learn(self) -> None:
        """The budget's pass, as a gateway's (`service.upkeep.Upkeep.refresh_budget`, `service.thresholds.
        ThresholdKeeper`): the decisions buffered since the last pass logged and counted, labels settled, and each
        stream published since the last pass chosen from its published evidence and the namespace's prior."""
        self.log.record(self.pending)
        self.pending = []
        if not self.product.config.learns:
            return
        self.log.count()
        self.evidence.settle()
        book = self.product.book
        prior = self.product.matcher.namespaces.prior_for(NAMESPACE)
        for stream in self.evidence.changed(self.version):
            book.update(stream.namespace, stream.evidence, prior.prior_for(stream.kind), stream.kind, stream.version)
            self.version = max(self.version, stream.version)


def _body(request: StreamRequest, text: str) -> dict[str, Any]:
    return {"id": f"replay-{request.seq}", "object": "chat.completion", "created": 0, "model": MODEL,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}}


def run_learn(name: str, requests: Sequence[StreamRequest], embedder: Embedder, config: LearnConfig) -> LearnReport:
    """Replay `requests` through a fresh gateway's product whose namespace learns its threshold (or keeps it
    fixed)."""
    answers = _Answers(embedder)
    with tempfile.TemporaryDirectory(prefix="deja-learn-") as tmp:
        engine = make_engine(f"sqlite:///{Path(tmp) / 'entries.db'}")
        try:
            store = EntryStore(engine)
            store.create_schema()
            return _run(name, requests, _Deployment(store, answers, config), config)
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
            now = deployment.product.matcher.policy_for(NAMESPACE).min_similarity
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
