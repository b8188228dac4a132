"""The pair model as the judge's second reader (`index.match.judged`, `index.judge.pair_model.Combination`):
it runs only on candidates whose decision it can change, at most `pair_candidates` per request, and its stacked
P decides against the stack's own bar."""

from __future__ import annotations

import math

import pytest

from index.judge.pair_calibration import Combination
from index.match.decide import Deciders, decide
from index.match.judged import JudgeSetup, judge
from index.match.outcome import Candidate, Reason
from index.match.policy import DecisionMode, MatchPolicy
from support.judges import FixedJudge, FixedPair

# Equal weights on the judge's and the pair model's log-odds, no cosine: P = sigmoid(logit(j) + logit(q)).
STACK = Combination(w_judge=1.0, w_pair=1.0, w_cosine=0.0, bias=0.0, min_probability=0.9,
                    bars=((0.01, 0.95), (0.02, 0.9), (0.05, 0.8)))
JUDGED = MatchPolicy(0.5, decision=DecisionMode.JUDGE)


def _setup(p: float, pair: FixedPair, candidates: int = 5) -> JudgeSetup:
    return JudgeSetup(FixedJudge(p, bar=0.99), max_false_hit_rate=0.02, candidates=candidates, pair=pair)


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


def test_a_judge_p_the_pair_model_cannot_move_below_the_bar_is_not_read() -> None:
    pair = FixedPair(STACK, {"b": 0.99})
    got = judge("a", [Candidate(1, "b", 0.95)], _setup(0.001, pair))  # at most sigmoid(-6.9 + 3.9) < 0.9
    assert not got.hit and got.pair_read == 0 and pair.read == []


def test_a_judge_p_the_pair_model_cannot_move_above_the_bar_is_served_unread() -> None:
    pair = FixedPair(STACK, {"b": 0.01})
    got = judge("a", [Candidate(1, "b", 0.95)], _setup(0.9999, pair))  # at least sigmoid(9.2 - 3.9) > 0.9
    assert got.hit and got.pair_read == 0 and pair.read == []
    assert got.bar == 0.9 and got.version == "judge-fixed+pair-fixed"


@pytest.mark.parametrize(("pair_p", "served"), [(0.95, True), (0.05, False)])
def test_an_undecided_candidate_is_decided_by_the_stack(pair_p: float, served: bool) -> None:
    pair = FixedPair(STACK, {"b": pair_p})
    got = judge("a", [Candidate(1, "b", 0.95)], _setup(0.6, pair))
    assert got.pair_read == 1 and pair.read == [("a", "b")]
    assert got.hit is served
    assert got.probability == pytest.approx(STACK.probability(0.6, pair_p, 0.95))


def test_the_pair_model_reads_only_the_most_probable_undecided_candidates() -> None:
    pair = FixedPair(STACK, {"b": 0.95, "c": 0.95})
    candidates = [Candidate(1, "b", 0.97), Candidate(2, "c", 0.96)]
    got = judge("a", candidates, _setup(0.6, pair))
    assert got.pair_read == 1 and len(pair.read) == 1


def test_decide_passes_the_pair_reader_and_reports_the_stacked_probability() -> None:
    pair = FixedPair(STACK, {"How can I reset my password?": 0.97})
    decision = decide("How do I recover my password?", [Candidate(1, "How can I reset my password?", 0.9)],
                      JUDGED, Deciders(judge=FixedJudge(0.6, bar=0.99), pair=pair))
    assert decision.reason is Reason.HIT and decision.bar == 0.9 and decision.pair_read == 1
    assert decision.probability == pytest.approx(STACK.probability(0.6, 0.97, 0.9))


def test_without_a_pair_reader_the_judges_own_bar_decides() -> None:
    decision = decide("How do I recover my password?", [Candidate(1, "How can I reset my password?", 0.9)],
                      JUDGED, Deciders(judge=FixedJudge(0.6, bar=0.99)))
    assert decision.reason is Reason.BELOW_BAR and decision.bar == 0.99


def _conversation(context_p: float) -> tuple[FixedPair, Candidate]:
    pair = FixedPair(STACK, {"b": 0.97, "cached context": context_p})
    return pair, Candidate(1, "b", 0.95, context="cached context", context_similarity=0.95)


@pytest.mark.parametrize(("context_p", "served"), [(0.97, True), (0.05, False)])
def test_in_a_conversation_the_pair_model_reads_the_contexts_and_the_lower_p_counts(
        context_p: float, served: bool) -> None:
    pair, candidate = _conversation(context_p)
    got = judge("a", [candidate], _setup(0.6, pair), query_context="query context")
    assert pair.read == [("a", "b")] and pair.contexts_read == [("query context", "cached context")]
    assert got.hit is served


def test_conversations_take_the_conversation_rule_unless_judged() -> None:
    pair, candidate = _conversation(0.05)
    deciders = Deciders(judge=FixedJudge(0.6, bar=0.99), pair=pair)
    ruled = decide("a", [candidate], JUDGED, deciders, query_context="query context")
    assert ruled.probability is None and pair.read == []  # the cosine rule: no judge, no pair model
    judged = decide("a", [candidate], MatchPolicy(0.5, decision=DecisionMode.JUDGE, judge_conversations=True),
                    deciders, query_context="query context")
    assert judged.reason is Reason.BELOW_BAR and pair.contexts_read == [("query context", "cached context")]


def test_a_plain_rewording_in_another_conversation_is_not_served_as_same_content() -> None:
    setup = JudgeSetup(FixedJudge(0.01, bar=0.99), max_false_hit_rate=0.02)
    prompt = "How do I reset my password?"
    other = Candidate(1, "How can I reset my password?", 0.99, context="We talk about Gmail", context_similarity=0.5)
    same = Candidate(1, "How can I reset my password?", 0.99, context="we talk about gmail", context_similarity=0.99)
    assert not judge(prompt, [other], setup, query_context="We talk about Slack").hit
    assert judge(prompt, [same], setup, query_context="We talk about Gmail").same_content
    assert not judge(prompt, [same], setup).hit  # a single-turn request against a conversation's entry
