"""The pair model as the judge's second reader in the learned veto (`training.judge.learned`,
`training.judge.pair_calibration.Combination`): it runs only on candidates whose veto it can change, and its stacked
P decides against the veto's bar."""

from __future__ import annotations

import math
from collections.abc import Sequence

import pytest

from index.match.decide import Deciders, decide
from index.match.outcome import Candidate, Decision, Reason
from index.match.policy import MatchPolicy
from tests.unit.training.judges import FixedJudge, FixedPair
from training.judge.learned import LEARNED, VETO_BELOW, LearnedScores, learned_probability, with_veto
from training.judge.pair_calibration import Combination

# Equal weights on the judge's and the pair model's log-odds, no cosine: P = sigmoid(logit(j) + logit(q)).
STACK = Combination(w_judge=1.0, w_pair=1.0, w_cosine=0.0, bias=0.0, min_probability=0.9,
                    bars=((0.01, 0.95), (0.02, 0.9), (0.05, 0.8)))
# The guarded rule at a low threshold: the learned veto (bar 0.6) is what these tests move.
GUARDED = MatchPolicy(0.5)


def _scores(judge_p: float, pair: FixedPair) -> LearnedScores:
    return LearnedScores(FixedJudge(judge_p), pair, VETO_BELOW)


def _decide(judge_p: float, pair: FixedPair, candidates: list[Candidate] | None = None,
            context: str | None = None) -> Decision:
    def product(some: Sequence[Candidate]) -> Decision:
        return decide("a", some, GUARDED, Deciders(), context)

    return with_veto(product, "a", candidates or [Candidate(1, "b", 0.95)], context, _scores(judge_p, pair))


def test_cut_takes_the_largest_fitted_budget_not_above_the_one_asked() -> None:
    assert STACK.cut(0.02) == 0.9
    assert STACK.cut(0.03) == 0.9  # never a looser bar than fitted
    assert STACK.cut(0.2) == 0.8
    assert math.isinf(STACK.cut(0.005))  # tighter than anything fitted: nothing is served


def test_bars_must_be_sorted_by_budget() -> None:
    with pytest.raises(ValueError, match="sorted"):
        Combination(1.0, 1.0, 0.0, 0.0, 0.9, bars=((0.05, 0.8), (0.01, 0.95)))


def test_bounds_span_the_pair_models_range() -> None:
    low, high = STACK.bounds(0.5, 0.9, (0.02, 0.98))
    assert low == pytest.approx(0.02) and high == pytest.approx(0.98)


def test_a_judge_p_the_pair_model_cannot_lift_over_the_bar_is_vetoed_unread() -> None:
    pair = FixedPair(STACK, {"b": 0.99})
    got = _decide(0.001, pair)  # at most sigmoid(-6.9 + 3.9) < 0.6
    assert got.vetoed_by == LEARNED and pair.read == []


def test_a_judge_p_the_pair_model_cannot_pull_under_the_bar_is_served_unread() -> None:
    pair = FixedPair(STACK, {"b": 0.01})
    got = _decide(0.9999, pair)  # at least sigmoid(9.2 - 3.9) > 0.6
    assert got.hit and pair.read == []
    assert _scores(0.9999, pair).version == "judge-fixed+pair-fixed"


@pytest.mark.parametrize(("pair_p", "served"), [(0.95, True), (0.05, False)], ids=["lifted", "vetoed"])
def test_an_undecided_candidate_is_decided_by_the_stack(pair_p: float, served: bool) -> None:
    pair = FixedPair(STACK, {"b": pair_p})
    p, read = learned_probability("a", Candidate(1, "b", 0.95), _scores(0.6, pair))
    assert read and pair.read == [("a", "b")]
    assert p == pytest.approx(STACK.probability(0.6, pair_p, 0.95))
    assert _decide(0.6, FixedPair(STACK, {"b": pair_p})).hit is served


def test_each_candidate_the_decision_serves_is_read_at_most_once() -> None:
    pair = FixedPair(STACK, {"b": 0.05, "c": 0.95})
    got = _decide(0.6, pair, [Candidate(1, "b", 0.97), Candidate(2, "c", 0.96)])
    assert got.hit and got.chosen == 1 and pair.read == [("a", "b"), ("a", "c")]


def test_a_conversation_is_not_read_by_the_learned_scores() -> None:
    pair = FixedPair(STACK, {"b": 0.05, "cached context": 0.05})
    candidate = Candidate(1, "b", 0.95, context="cached context", context_similarity=0.95)
    got = _decide(0.01, pair, [candidate], context="cached context")
    assert pair.read == [] and got.reason is not Reason.VETOED
