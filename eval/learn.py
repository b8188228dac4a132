"""`eval replay --learn FRACTION`: a deployment that learns from the labels a live gateway would gather.

During the first FRACTION of the trace the judge in force (the shipped prior) decides, and labels come only
from what a gateway sees: exploration (uncertain would-be hits sent upstream), shadows (near-misses that went
upstream anyway, their fresh answer compared with the candidate's) and audits (a share of hits re-asked). The
trace's intents stand in for the upstream's answers. Then the judge is refitted on those labels on top of the
prior (`fit_judge`) and the rest of the trace is served with it; the cache carries on, nothing is reset.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from eval.datasets import StreamRequest
from eval.metrics import Tally, rate
from eval.refit import refit_judge
from eval.replay import Upstream, answer_text, stub_upstream
from index.embedding.embedder import Embedder
from index.judge.features import EntryHistory, JudgeInput
from index.judge.model import Judge
from index.match.decide import Deciders, decide
from index.match.explore import Exploration
from index.match.judged import margins
from index.match.outcome import Candidate, Reason
from index.match.policy import (
    DEFAULT_AUDIT_RATE,
    DEFAULT_JUDGE_CANDIDATES,
    DEFAULT_JUDGE_MIN_SIMILARITY,
    DEFAULT_LOG_FLOOR,
    DEFAULT_MAX_FALSE_HIT_RATE,
    DecisionMode,
    MatchPolicy,
)

Floats = npt.NDArray[np.float32]


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
    min_similarity: float = DEFAULT_JUDGE_MIN_SIMILARITY
    seed: int = 0

    def __post_init__(self) -> None:
        if not 0.0 < self.fraction < 1.0:
            raise ValueError(f"learn fraction must be in (0, 1), got {self.fraction}")


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


@dataclass(frozen=True)
class LabeledInput:
    item: JudgeInput
    same: bool
    source: str


@dataclass
class _Entry:
    entry_id: int
    prompt: str
    answer: str


class Deployment:
    """The simulated gateway: exact tier, brute-force nearest neighbours (exact cosine, as HNSW approximates),
    the judge rule, exploration, shadows, audits, and per-entry label histories. Mutable, local to one run."""

    def __init__(self, vectors: dict[str, Floats], judge_in_force: Judge, config: LearnConfig) -> None:
        self.vectors = vectors
        self.config = config
        self.rng = random.Random(config.seed)
        self.entries: list[_Entry] = []
        self.matrix = np.zeros((0, next(iter(vectors.values())).shape[0]), dtype=np.float32)
        self.exact: dict[str, str] = {}
        self.histories: dict[int, EntryHistory] = {}
        self.labels: list[LabeledInput] = []
        self.use(judge_in_force)

    def use(self, model: Judge) -> None:
        # The gateway's own decision (`index.match.decide`), with exploration drawn from this replay's seed.
        self.policy = MatchPolicy(self.config.min_similarity, decision=DecisionMode.JUDGE,
                                  max_false_hit_rate=self.config.max_false_hit_rate,
                                  judge_candidates=self.config.candidates)
        self.deciders = Deciders(judge=model, exploration=self.config.exploration, draw=self.rng.random)

    def serve(self, requests: Sequence[StreamRequest], upstream: Upstream) -> Tally:
        counts = Tally()
        for request in requests:
            self._one(request, answer_text(upstream(request)), counts)
        return counts

    def _one(self, request: StreamRequest, expected: str, counts: Tally) -> None:
        cached = self.exact.get(request.prompt)
        if cached is not None:
            counts.exact += 1
            counts.score(cached == expected)
            return
        found = self._candidates(request.prompt)
        offered = [c for c, _ in found]
        decision = decide(request.prompt, offered, self.policy, self.deciders, histories=self.histories)
        index = decision.chosen
        if decision.reason is Reason.HIT and index is not None:
            entry = found[index][1]
            counts.semantic += 1
            self._served(entry.entry_id)
            counts.score(entry.answer == expected)
            if self.rng.random() < self.config.audit_rate:
                self._label(request.prompt, offered, index, entry, expected, "audit")
            return
        if decision.reason is Reason.EXPLORED and index is not None:
            counts.explored += 1
            self._label(request.prompt, offered, index, found[index][1], expected, "explore")
        elif index is not None and found[index][0].similarity >= self.config.shadow_floor:
            self._label(request.prompt, offered, index, found[index][1], expected, "shadow")
        self._store(request.prompt, expected)

    def _candidates(self, prompt: str) -> list[tuple[Candidate, _Entry]]:
        if not self.entries:
            return []
        sims = self.matrix @ self.vectors[prompt]
        order = np.argsort(-sims, kind="stable")[: self.config.candidates]
        return [(Candidate(self.entries[i].entry_id, self.entries[i].prompt, float(sims[i])), self.entries[i])
                for i in order if sims[i] >= self.config.min_similarity]

    def _label(self, prompt: str, offered: Sequence[Candidate], index: int, entry: _Entry, expected: str,
               source: str) -> None:
        # The features exactly as the judge saw them when it decided (rank, margin, the entry's history then).
        sims = [c.similarity for c in offered]
        candidate = offered[index]
        item = JudgeInput(prompt, candidate.prompt, candidate.similarity, index, margins(sims)[index],
                          history=self.histories.get(entry.entry_id, EntryHistory()))
        same = entry.answer == expected
        self.labels.append(LabeledInput(item, same, source))
        old = self.histories.get(entry.entry_id, EntryHistory())
        self.histories[entry.entry_id] = EntryHistory(old.served, old.same + same, old.different + (not same))

    def _served(self, entry_id: int) -> None:
        old = self.histories.get(entry_id, EntryHistory())
        self.histories[entry_id] = EntryHistory(old.served + 1, old.same, old.different)

    def _store(self, prompt: str, answer: str) -> None:
        entry = _Entry(len(self.entries) + 1, prompt, answer)
        self.entries.append(entry)
        self.matrix = np.vstack([self.matrix, self.vectors[prompt][None, :]])
        self.exact[prompt] = answer


def run_learn(
    stream: str, requests: Sequence[StreamRequest], embedder: Embedder, prior: Judge, config: LearnConfig,
    upstream: Upstream = stub_upstream,
) -> LearnReport:
    """Serve the first `config.fraction` with `prior`, refit on the labels gathered, serve the rest."""
    prompts = list(dict.fromkeys(r.prompt for r in requests))
    vectors = dict(zip(prompts, np.asarray(embedder.embed(prompts), dtype=np.float32), strict=True))
    cut = max(1, min(len(requests) - 1, round(config.fraction * len(requests))))
    deployment = Deployment(vectors, prior, config)
    before = deployment.serve(requests[:cut], upstream)
    gathered = list(deployment.labels)
    learned_judge, note = _refit(gathered, prior, config.seed)
    deployment.use(learned_judge)
    after = deployment.serve(requests[cut:], upstream)
    sources = Counter(label.source for label in gathered)
    return LearnReport(
        stream=stream, embedder=embedder.model_id, fraction=config.fraction,
        max_false_hit_rate=config.max_false_hit_rate, labels=dict(sorted(sources.items())),
        labels_same=sum(label.same for label in gathered), refit=note,
        before=_rates(cut, before, prior.version), learned=_rates(len(requests) - cut, after, learned_judge.version),
    )


def _refit(labels: Sequence[LabeledInput], prior: Judge, seed: int) -> tuple[Judge, str]:
    try:
        fitted = refit_judge([label.item for label in labels], [label.same for label in labels], prior, seed)
    except ValueError as exc:
        return prior, f"kept the prior: {exc}"
    return fitted, f"refitted on {len(labels)} labels"


def _rates(requests: int, counts: Tally, version: str) -> PartRates:
    served = counts.served
    return PartRates(
        requests=requests, served=rate(served, requests), correct=rate(counts.correct, requests),
        wrong_over_served=rate(counts.wrong, served), explored=rate(counts.explored, requests),
        exact=counts.exact, semantic=counts.semantic, wrong=counts.wrong, judge_version=version,
    )
