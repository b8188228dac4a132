"""The pair model as the judge's second reader in the learned veto (`index.match.learned`,
`index.judge.pair_model.Combination`): it runs only on candidates whose veto it can change, and its stacked P
decides against the veto's bar (`DEJA_VETO_BELOW`)."""

from __future__ import annotations

import math

import pytest

from index.judge.pair_calibration import Combination
from index.match.decide import Deciders, decide
from index.match.outcome import Candidate, Decision, Reason
from index.match.policy import LEARNED_VETO_BELOW, MatchPolicy
from support.judges import FixedJudge, FixedPair

# Equal weights on the judge's and the pair model's log-odds, no cosine: P = sigmoid(logit(j) + logit(q)).
STACK = Combination(w_judge=1.0, w_pair=1.0, w_cosine=0.0, bias=0.0, min_probability=0.9,
                    bars=((0.01, 0.95), (0.02, 0.9), (0.05, 0.8)))
# The default decision (guarded) at a low threshold: the learned veto (bar 0.6) is what these tests move.
# The learned veto is off by default; these tests are of the veto, so they turn it on at its fitted bar.
GUARDED = MatchPolicy(0.5, veto_below=LEARNED_VETO_BELOW)


def _decide(judge_p: float, pair: FixedPair, candidates: list[Candidate] | None = None) -> Decision:
    return decide("a", candidates or [Candidate(1, "b", 0.95)], GUARDED, Deciders(judge=FixedJudge(judge_p), pair=pair))


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
    assert got.vetoed_by == "learned" and got.pair_read == 0 and pair.read == []


def test_a_judge_p_the_pair_model_cannot_pull_under_the_bar_is_served_unread() -> None:
    pair = FixedPair(STACK, {"b": 0.01})
    got = _decide(0.9999, pair)  # at least sigmoid(9.2 - 3.9) > 0.6
    assert got.hit and got.pair_read == 0 and pair.read == []
    assert got.bar == 0.6 and got.version == "judge-fixed+pair-fixed"


@pytest.mark.parametrize(("pair_p", "served"), [(0.95, True), (0.05, False)], ids=["lifted", "vetoed"])
def test_an_undecided_candidate_is_decided_by_the_stack(pair_p: float, served: bool) -> None:
    pair = FixedPair(STACK, {"b": pair_p})
    got = _decide(0.6, pair)
    assert got.pair_read == 1 and pair.read == [("a", "b")]
    assert got.hit is served
    assert got.probability == pytest.approx(STACK.probability(0.6, pair_p, 0.95))


def test_each_candidate_the_steps_reach_is_read_at_most_once() -> None:
    pair = FixedPair(STACK, {"b": 0.05, "c": 0.95})
    got = _decide(0.6, pair, [Candidate(1, "b", 0.97), Candidate(2, "c", 0.96)])
    assert got.hit and got.chosen == 1 and pair.read == [("a", "b"), ("a", "c")]


def test_a_conversation_is_not_read_by_the_learned_scores() -> None:
    pair = FixedPair(STACK, {"b": 0.05, "cached context": 0.05})
    candidate = Candidate(1, "b", 0.95, context="cached context", context_similarity=0.95)
    got = decide("a", [candidate], GUARDED, Deciders(judge=FixedJudge(0.01), pair=pair), "cached context")
    assert got.probability is None and pair.read == [] and got.reason is not Reason.VETOED
