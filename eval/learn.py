"""`eval replay --learn FRACTION`: a deployment that learns from the labels a live gateway would gather.

During the first FRACTION of the trace the judge in force (the shipped prior) decides, and labels come only
from what a gateway sees: exploration (uncertain would-be hits sent upstream), shadows (near-misses that went
upstream anyway, their fresh answer compared with the candidate's) and audits (a share of hits re-asked). The
trace's intents stand in for the upstream's answers. Then the judge is refitted on those labels on top of the
prior (`fit_judge`) and the rest of the trace is served with it; the cache carries on, nothing is reset.

Throughout, the live budget runs as on a gateway (`eval.live_budget`): audits drawn by the gateway's sampler under
its hourly ceiling (the trace arrives at `requests_per_hour`), the namespace's bar moving with the audits, remembered
differences vetoing their recurrences once enough evidence agrees. Labels come, as on a gateway, from comparing
answers (`index.match.answers`: an audit re-asks twice to see how much the upstream's answers vary) or, with
`labeller_error` set, from an LLM label judge that errs at that rate (and is configured with it). The upstream
answers by intent (`eval.answers`), the same text each call or (`answer_variation`) the same content with a
different closing sentence each call. Each part reports the estimate and bound the gateway would have shown and the
label calls it spent.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from eval.answers import intent_answer, sampled_answer
from eval.datasets import StreamRequest
from eval.live_budget import NAMESPACE, BudgetShown, LiveBudget
from eval.metrics import Tally, rate
from eval.refit import refit_judge
from index.embedding.embedder import Embedder
from index.judge.features import EntryHistory, JudgeInput
from index.judge.model import Judge
from index.match.answers import AnswerBaselines, compare_answers
from index.match.audit_sampler import HitFacts
from index.match.bar import raised
from index.match.decide import Deciders, decide
from index.match.explore import Exploration
from index.match.learned import margins
from index.match.outcome import Candidate, Reason
from index.match.policy import (
    DEFAULT_AUDIT_RATE,
    DEFAULT_GUARDED_MIN_SIMILARITY,
    DEFAULT_JUDGE_CANDIDATES,
    DEFAULT_LOG_FLOOR,
    DEFAULT_MAX_FALSE_HIT_RATE,
    DecisionMode,
    MatchPolicy,
)

Floats = npt.NDArray[np.float32]
# Candidates below this cosine are not offered to the decision (the floor of the judge's calibration data).
DEFAULT_CANDIDATE_FLOOR = 0.5


@dataclass(frozen=True)
class LearnConfig:
    """The deployment simulated: budget, labelling rates as configured on a gateway, K and candidate floor."""

    fraction: float
    max_false_hit_rate: float = DEFAULT_MAX_FALSE_HIT_RATE
    exploration: Exploration = field(default_factory=Exploration)
    audit_rate: float = DEFAULT_AUDIT_RATE
    # Near-misses whose best candidate is at least this similar are logged, so shadow-labelled.
    shadow_floor: float = DEFAULT_LOG_FLOOR
    candidates: int = DEFAULT_JUDGE_CANDIDATES
    min_similarity: float = DEFAULT_CANDIDATE_FLOOR
    seed: int = 0
    # The hourly allowance of labelling's extra calls (DEJA_AUDIT_CALLS_PER_HOUR) and the trace's arrival rate.
    audit_calls_per_hour: int = 120
    requests_per_hour: float = 3600.0
    # The upstream words one answer differently each call (a different closing sentence).
    answer_variation: bool = False
    # None: labels compare answers (no label model); else an LLM label judge wrong this often, configured with it.
    labeller_error: float | None = None
    answer_same_similarity: float = 0.95

    def __post_init__(self) -> None:
        if not 0.0 < self.fraction < 1.0:
            raise ValueError(f"learn fraction must be in (0, 1), got {self.fraction}")
        if self.labeller_error is not None and not 0.0 <= self.labeller_error < 0.5:
            raise ValueError(f"labeller error rate must be in [0, 0.5), got {self.labeller_error}")


@dataclass(frozen=True)
class PartRates:
    """One part of the trace. `served` and `correct` are fractions of the part's requests."""

    requests: int
    served: float | None
    correct: float | None
    wrong_over_served: float | None
    explored: float | None
    exact: int
    semantic: int
    wrong: int
    judge_version: str
    # What /deja/budget would have shown at the end of the part, and the label calls spent in it.
    budget: BudgetShown | None = None


@dataclass(frozen=True)
class LearnReport:
    """`eval replay --learn`: the part before the refit, the part after it, and the labels it learned from."""

    stream: str
    embedder: str
    fraction: float
    max_false_hit_rate: float
    labels: dict[str, int]
    labels_same: int
    refit: str
    before: PartRates
    learned: PartRates
    # Semantic hits served in the last quarter of the trace (what learning left open by the end).
    last_quarter_semantic: int = 0
    labeller: str = "answer comparison"
    answer_variation: bool = False


@dataclass(frozen=True)
class LabeledInput:
    item: JudgeInput
    same: bool
    source: str


@dataclass
class _Entry:
    entry_id: int
    prompt: str
    intent: str
    answer: str
    created: float = 0.0


class Deployment:
    """The simulated gateway: exact tier, brute-force nearest neighbours (exact cosine, as HNSW approximates),
    the judge rule, exploration, shadows, audits, and per-entry label histories. Mutable, local to one run."""

    def __init__(self, vectors: dict[str, Floats], judge_in_force: Judge, config: LearnConfig,
                 embedder: Embedder) -> None:
        self.vectors = vectors
        self.config = config
        self.embedder = embedder  # embeds answers, for labels by answer comparison
        self.rng = random.Random(config.seed)
        self.label_rng = random.Random(config.seed + 1)  # the label judge's mistakes
        self.entries: list[_Entry] = []
        self.matrix = np.zeros((0, next(iter(vectors.values())).shape[0]), dtype=np.float32)
        self.exact: dict[str, str] = {}
        self.histories: dict[int, EntryHistory] = {}
        self.labels: list[LabeledInput] = []
        self.baselines = AnswerBaselines()
        self.now = 0.0
        self.upstream_calls = 0
        self.semantic_at: list[int] = []  # 0-based trace positions served by a semantic hit
        self.served_requests = 0
        self.live = LiveBudget(config.max_false_hit_rate, config.audit_rate, config.audit_calls_per_hour,
                               lambda: self.now, error_rate=config.labeller_error)
        self.use(judge_in_force)

    def use(self, model: Judge) -> None:
        # The gateway's own decision (`index.match.decide`), with exploration drawn from this replay's seed.
        self.policy = MatchPolicy(DEFAULT_GUARDED_MIN_SIMILARITY, decision=DecisionMode.GUARDED,
                                  max_false_hit_rate=self.config.max_false_hit_rate,
                                  judge_candidates=self.config.candidates)
        self.deciders = Deciders(judge=model, exploration=self.config.exploration, draw=self.rng.random)

    def serve(self, requests: Sequence[StreamRequest]) -> Tally:
        counts = Tally()
        for request in requests:
            self.now += 3600.0 / self.config.requests_per_hour
            self._one(request, counts)
            self.served_requests += 1
        return counts

    def _fresh(self, intent: str) -> str:
        """One upstream answer to a question of `intent`."""
        self.upstream_calls += 1
        content = intent_answer(intent)
        return sampled_answer(content, self.upstream_calls) if self.config.answer_variation else content

    def _one(self, request: StreamRequest, counts: Tally) -> None:
        cached = self.exact.get(request.prompt)
        if cached is not None:
            counts.exact += 1
            counts.score(cached == request.intent)
            return
        prompt, found = request.prompt, self._candidates(request.prompt)
        offered = [c for c, _ in found]
        level = self.live.level
        # The namespace's level moves the cosine threshold, as `NamespacePolicies.policy_for` does in the gateway.
        policy = self.policy.at(raised(self.policy.min_similarity, level)).at_level(level)
        decision = decide(prompt, offered, policy, self.deciders, histories=self.histories)
        index = decision.chosen
        hit = decision.reason is Reason.HIT and index is not None
        if hit and index is not None and not self.live.vetoes(prompt, found[index][1].prompt):
            entry = found[index][1]
            counts.semantic += 1
            self.semantic_at.append(self.served_requests)
            self._served(entry.entry_id)
            counts.score(entry.intent == request.intent)
            facts = HitFacts(level > 0, decision.probability, decision.bar, self.now - entry.created)
            if self.live.draw_audit(facts, self.rng.random()):
                # The audit re-asks the upstream (twice when answers are compared: their variation is measured).
                fresh = self._fresh(request.intent)
                second = self._fresh(request.intent) if self.config.labeller_error is None else None
                same = self._label(prompt, offered, index, entry, request, "audit", fresh, second)
                self.live.audit(prompt, entry.prompt, same)
            return
        fresh = self._fresh(request.intent)  # the request goes upstream
        if decision.reason is Reason.EXPLORED and index is not None:
            counts.explored += 1
            source: str | None = "explore"
        else:  # a miss with a candidate above the log floor, or a hit a remembered difference vetoed
            shadowed = index is not None and (hit or found[index][0].similarity >= self.config.shadow_floor)
            source = "shadow" if shadowed else None
        if source is not None and index is not None:
            entry = found[index][1]
            same = self._label(prompt, offered, index, entry, request, source, fresh, None)
            self.live.near_miss(prompt, entry.prompt, same)
        self._store(prompt, request.intent, fresh)

    def _candidates(self, prompt: str) -> list[tuple[Candidate, _Entry]]:
        if not self.entries:
            return []
        sims = self.matrix @ self.vectors[prompt]
        order = np.argsort(-sims, kind="stable")[: self.config.candidates]
        return [(Candidate(self.entries[i].entry_id, self.entries[i].prompt, float(sims[i])), self.entries[i])
                for i in order if sims[i] >= self.config.min_similarity]

    def _label(self, prompt: str, offered: Sequence[Candidate], index: int, entry: _Entry, request: StreamRequest,
               source: str, fresh: str, second: str | None) -> bool | None:
        """The label a gateway would get (None: none), kept for the refit with the features exactly as the judge
        saw them when it decided (rank, margin, the entry's history then)."""
        error = self.config.labeller_error
        if error is None:
            agreement = compare_answers(fresh, entry.answer, self.embedder, self.config.answer_same_similarity,
                                        second, self.baselines.baseline(NAMESPACE))
            if agreement.fresh_similarity is not None:
                self.baselines.add(NAMESPACE, agreement.fresh_similarity)
            same = agreement.same
        else:
            same = (entry.intent == request.intent) != (self.label_rng.random() < error)
        if same is None:
            return None
        sims = [c.similarity for c in offered]
        candidate = offered[index]
        item = JudgeInput(prompt, candidate.prompt, candidate.similarity, index, margins(sims)[index],
                          history=self.histories.get(entry.entry_id, EntryHistory()))
        self.labels.append(LabeledInput(item, same, source))
        old = self.histories.get(entry.entry_id, EntryHistory())
        self.histories[entry.entry_id] = EntryHistory(old.served, old.same + same, old.different + (not same))
        return same

    def _served(self, entry_id: int) -> None:
        old = self.histories.get(entry_id, EntryHistory())
        self.histories[entry_id] = EntryHistory(old.served + 1, old.same, old.different)

    def _store(self, prompt: str, intent: str, answer: str) -> None:
        entry = _Entry(len(self.entries) + 1, prompt, intent, answer, self.now)
        self.entries.append(entry)
        self.matrix = np.vstack([self.matrix, self.vectors[prompt][None, :]])
        self.exact[prompt] = intent


def run_learn(
    stream: str, requests: Sequence[StreamRequest], embedder: Embedder, prior: Judge, config: LearnConfig,
) -> LearnReport:
    """Serve the first `config.fraction` with `prior`, refit on the labels gathered, serve the rest."""
    prompts = list(dict.fromkeys(r.prompt for r in requests))
    vectors = dict(zip(prompts, np.asarray(embedder.embed(prompts), dtype=np.float32), strict=True))
    cut = max(1, min(len(requests) - 1, round(config.fraction * len(requests))))
    deployment = Deployment(vectors, prior, config, embedder)
    before = deployment.serve(requests[:cut])
    shown_before = deployment.live.shown()
    gathered = list(deployment.labels)
    learned_judge, note = _refit(gathered, prior, config.seed)
    deployment.use(learned_judge)
    after = deployment.serve(requests[cut:])
    shown_after = deployment.live.shown()
    sources = Counter(label.source for label in gathered)
    last_quarter = len(requests) - len(requests) // 4
    labeller = ("answer comparison" if config.labeller_error is None
                else f"label judge wrong {config.labeller_error:.0%} of the time")
    return LearnReport(
        stream=stream, embedder=embedder.model_id, fraction=config.fraction,
        max_false_hit_rate=config.max_false_hit_rate, labels=dict(sorted(sources.items())),
        labels_same=sum(label.same for label in gathered), refit=note,
        before=_rates(cut, before, prior.version, shown_before),
        learned=_rates(len(requests) - cut, after, learned_judge.version, shown_after),
        last_quarter_semantic=sum(1 for i in deployment.semantic_at if i >= last_quarter),
        labeller=labeller, answer_variation=config.answer_variation,
    )


def _refit(labels: Sequence[LabeledInput], prior: Judge, seed: int) -> tuple[Judge, str]:
    try:
        fitted = refit_judge([label.item for label in labels], [label.same for label in labels], prior, seed)
    except ValueError as exc:
        return prior, f"kept the prior: {exc}"
    return fitted, f"refitted on {len(labels)} labels"


def _rates(requests: int, counts: Tally, version: str, budget: BudgetShown) -> PartRates:
    served = counts.served
    return PartRates(
        requests=requests, served=rate(served, requests), correct=rate(counts.correct, requests),
        wrong_over_served=rate(counts.wrong, served), explored=rate(counts.explored, requests),
        exact=counts.exact, semantic=counts.semantic, wrong=counts.wrong, judge_version=version, budget=budget,
    )
