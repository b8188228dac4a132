"""The learned veto, kept for training and measuring only (the product no longer runs it: docs/learned-veto.md).
The judge's calibrated P(same answer) (`training.judge.model`), stacked with the pair model
(`training.judge.pair_model`) where the pair model can move it across the veto's bar, vetoes a single-turn
candidate the product's decision serves on its cosine; `with_veto` and `VetoingMatcher` run it after
`index.match.decide`, where the retired step `learned` ran inside it, so a candidate it vetoes gives way to the
next one as it did.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Protocol

import numpy as np
import numpy.typing as npt

from index.match.decide import Deciders
from index.match.matcher import Matcher, MatchRequest, Plan
from index.match.outcome import Candidate, Decision, Reason
from index.match.policy import MatchPolicy
from index.match.steps import COSINE, RememberedDifferences
from training.judge.features import MISSING, EntryHistory, JudgeInput

# The veto's name in a decision (`vetoed_by`), as the retired step was called.
LEARNED = "learned"
# The bar the learned veto was fitted for.
VETO_BELOW = 0.6


class JudgeModel(Protocol):
    """What the decision needs of a judge: P(same answer) per candidate, the bar of a budget, a version.
    `training.judge.model.Judge` is the real one; tests pass fakes through the same seam."""

    @property
    def version(self) -> str: ...

    def probabilities(self, items: Sequence[JudgeInput]) -> npt.NDArray[np.float64]: ...

    def cut(self, max_false_hit_rate: float) -> float: ...


class PairReader(Protocol):
    """The judge's second reader (`training.judge.pair_model.PairStage`): a model that reads both prompts, stacked
    with the judge's P and the cosine into one P(same answer). `bounds` says which P the stack can give before
    the model runs, so it runs only where it can change the decision."""

    @property
    def version(self) -> str: ...

    def cut(self, max_false_hit_rate: float) -> float: ...

    def bounds(self, judge_p: float, cosine: float) -> tuple[float, float]: ...

    def probabilities(self, pairs: Sequence[tuple[str, str]], judge_p: Sequence[float],
                      cosines: Sequence[float],
                      contexts: Sequence[tuple[str, str] | None] | None = None) -> npt.NDArray[np.float64]: ...


@dataclass(frozen=True)
class LearnedScores:
    """The learned veto's scorers and its bar: a P below `veto_below` vetoes. No judge = no learned veto."""

    judge: JudgeModel | None
    pair: PairReader | None
    veto_below: float
    histories: Mapping[int, EntryHistory] | None = None

    @property
    def version(self) -> str:
        """The scorers' versions as the decision log records them ("cosine" without a judge)."""
        judge = "cosine" if self.judge is None else self.judge.version
        return judge if self.pair is None else f"{judge}+{self.pair.version}"


def margins(similarities: Sequence[float]) -> list[float]:
    """Each candidate's similarity minus the best other candidate's (NaN for a lone candidate)."""
    out: list[float] = []
    for i, s in enumerate(similarities):
        others = [o for j, o in enumerate(similarities) if j != i]
        out.append(s - max(others) if others else MISSING)
    return out


def learned_probability(query: str, candidate: Candidate, scores: LearnedScores) -> tuple[float | None, bool]:
    """The judge's P, stacked with the pair model's where the pair model can move it across the veto's bar (None
    without a judge, or with no veto: nothing learned is read, nor paid for), and whether the pair model read the
    pair: it never runs when the judge's P settles the veto either way.

    The judge reads every candidate as a lone one (rank 0, no margin): a candidate's rank and its margin over the
    next move with how full the cache is, and a veto that fires on right answers as a cache fills does not carry
    from one deployment to another (measured in docs/learned-veto.md)."""
    if scores.judge is None or scores.veto_below <= 0.0:
        return None, False
    history = (scores.histories or {}).get(candidate.entry_id, EntryHistory())
    item = JudgeInput(query, candidate.prompt, candidate.similarity, history=history)
    judge_p = float(scores.judge.probabilities([item])[0])
    if scores.pair is None:
        return judge_p, False
    low, high = scores.pair.bounds(judge_p, candidate.similarity)
    if low >= scores.veto_below:
        return low, False
    if high < scores.veto_below:
        return high, False
    stacked = scores.pair.probabilities([(query, candidate.prompt)], [judge_p], [candidate.similarity])
    return float(stacked[0]), True


def vetoes(query: str, candidate: Candidate, decision: Decision, query_context: str | None,
           scores: LearnedScores) -> bool:
    """Whether the learned veto takes `decision`, a hit on `candidate`: only a single-turn hit served on its cosine
    (a plain rewording, served on its content, and a conversation never reached the step), when its P is below
    the bar."""
    if not decision.hit or decision.basis != COSINE or query_context is not None:
        return False
    p, _ = learned_probability(query, candidate, scores)
    return p is not None and p < scores.veto_below


def with_veto(decide: Callable[[Sequence[Candidate]], Decision], query: str, candidates: Sequence[Candidate],
              query_context: str | None, scores: LearnedScores) -> Decision:
    """`decide` over `candidates`, the learned veto after it: a vetoed hit's candidate is taken out and the rest
    decided again, as the step let the next candidate through. `chosen` indexes `candidates`."""
    left = list(range(len(candidates)))
    while True:
        decision = decide([candidates[i] for i in left])
        chosen = None if decision.chosen is None else left[decision.chosen]
        if chosen is None or not vetoes(query, candidates[chosen], decision, query_context, scores):
            return replace(decision, chosen=chosen)
        left.remove(chosen)
        if not left:
            return Decision(Reason.VETOED, candidates[chosen].similarity, vetoed_by=LEARNED, chosen=chosen)


class VetoingMatcher(Matcher):
    """The product's `Matcher` with the learned veto after each decision, for a replay through `index.cache.Cache`
    (its `matcher` seam)."""

    def __init__(self, policy: MatchPolicy, scores: LearnedScores, deciders: Deciders | None = None,
                 differences: RememberedDifferences | None = None) -> None:
        super().__init__(policy, deciders, differences)
        self.scores = scores

    def decide(self, request: MatchRequest, candidates: Sequence[Candidate], plan: Plan | None = None) -> Decision:
        def product(some: Sequence[Candidate]) -> Decision:
            return super(VetoingMatcher, self).decide(request, some, plan)

        return with_veto(product, request.prompt, candidates, request.context, self.scores)
