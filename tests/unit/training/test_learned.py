"""The learned veto as training keeps it (`training.judge.learned`): margins as features, the judge's P, and the veto
run after the product's decision, where it vetoes what the retired step did and lets the next candidate through."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
import pytest

from index.match.decide import Deciders, decide
from index.match.matcher import MatchRequest
from index.match.outcome import Candidate, Decision, Reason
from index.match.policy import MatchPolicy
from tests.unit.training.judges import FixedJudge
from training.judge.features import JudgeInput
from training.judge.learned import (
    LEARNED,
    VETO_BELOW,
    LearnedScores,
    VetoingMatcher,
    learned_probability,
    margins,
    with_veto,
)

POLICY = MatchPolicy(0.5)


class ByPrompt:
    """A judge fake whose P depends on the cached prompt (`default` for any other)."""

    version = "judge-by-prompt"

    def __init__(self, p: dict[str, float], default: float = 0.99) -> None:
        self.p, self.default = p, default

    def cut(self, max_false_hit_rate: float) -> float:
        return VETO_BELOW

    def probabilities(self, items: Sequence[JudgeInput]) -> npt.NDArray[np.float64]:
        return np.array([self.p.get(item.cached, self.default) for item in items])


def _vetoed(query: str, candidates: list[Candidate], scores: LearnedScores, context: str | None = None) -> Decision:
    def product(some: Sequence[Candidate]) -> Decision:
        return decide(query, some, POLICY, Deciders(), context)

    return with_veto(product, query, candidates, context, scores)


def test_margins_are_over_the_best_other_candidate() -> None:
    assert margins([0.9, 0.8, 0.85]) == pytest.approx([0.05, -0.1, -0.05])
    assert math.isnan(margins([0.9])[0])


def test_without_a_judge_there_is_no_learned_probability() -> None:
    scores = LearnedScores(None, None, VETO_BELOW)
    assert learned_probability("a", Candidate(1, "b", 0.95), scores) == (None, False)
    assert scores.version == "cosine"


def test_the_judge_alone_gives_its_probability_and_its_version() -> None:
    scores = LearnedScores(FixedJudge(0.7, version="j1"), None, VETO_BELOW)
    assert learned_probability("a", Candidate(1, "b", 0.95), scores) == (pytest.approx(0.7), False)
    assert scores.version == "j1"


def test_a_hit_below_the_bar_is_vetoed_and_the_next_candidate_served() -> None:
    scores = LearnedScores(ByPrompt({"close but wrong": 0.1}), None, VETO_BELOW)
    candidates = [Candidate(1, "close but wrong", 0.97), Candidate(2, "the right one", 0.95)]
    decision = _vetoed("the question", candidates, scores)
    assert decision.hit and decision.chosen == 1


def test_when_every_hit_is_vetoed_the_decision_is_the_learned_veto() -> None:
    decision = _vetoed("the question", [Candidate(1, "cached", 0.97)], LearnedScores(FixedJudge(0.1), None, 0.6))
    assert decision.reason is Reason.VETOED and decision.vetoed_by == LEARNED and decision.chosen == 0


def test_a_plain_rewording_and_a_conversation_are_never_vetoed() -> None:
    scores = LearnedScores(FixedJudge(0.01), None, VETO_BELOW)
    assert _vetoed("How do I reset my password?", [Candidate(1, "how do i reset my password", 0.6)], scores).hit
    conversation = Candidate(1, "b", 0.95, context="the context", context_similarity=0.99)
    assert _vetoed("a", [conversation], scores, context="the context").reason is not Reason.VETOED


def test_the_vetoing_matcher_decides_as_the_matcher_then_vetoes() -> None:
    matcher = VetoingMatcher(POLICY, LearnedScores(FixedJudge(0.1), None, VETO_BELOW))
    decision = matcher.decide(MatchRequest("the question", "ns"), [Candidate(1, "cached", 0.97)])
    assert decision.vetoed_by == LEARNED
    lenient = VetoingMatcher(POLICY, LearnedScores(FixedJudge(0.9), None, VETO_BELOW))
    assert lenient.decide(MatchRequest("the question", "ns"), [Candidate(1, "cached", 0.97)]).hit


class Recording(FixedJudge):
    """A fixed judge that keeps every item it scored."""

    def __init__(self, p: float) -> None:
        super().__init__(p)
        self.items: list[JudgeInput] = []

    def probabilities(self, items: Sequence[object]) -> npt.NDArray[np.float64]:
        self.items += [item for item in items if isinstance(item, JudgeInput)]
        return super().probabilities(items)


def test_the_veto_reads_each_candidate_as_a_lone_one_whatever_the_cache_holds() -> None:
    judge = Recording(0.2)  # vetoes both: each is scored
    candidates = [Candidate(1, "What are the symptoms of dehydration?", 0.95),
                  Candidate(2, "What are the signs of being dehydrated?", 0.949)]
    _vetoed("What are the signs of dehydration?", candidates, LearnedScores(judge, None, VETO_BELOW))
    assert [item.rank for item in judge.items] == [0, 0]
    assert all(math.isnan(item.margin) for item in judge.items)
