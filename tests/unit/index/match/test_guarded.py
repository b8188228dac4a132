"""The guarded rule (the default): the cosine serves, the gates and rule stages veto, the learned score vetoes
where a deployment turns it on (`veto_below` > 0), a plain rewording is served at any cosine. Fakes through the
real seams: a fixed judge, a fixed pair model."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from index.guards.registry import build_stages
from index.judge.features import JudgeInput
from index.judge.pair_model import shipped_combination
from index.match.decide import Deciders, decide
from index.match.outcome import Candidate, Reason
from index.match.policy import LEARNED_VETO_BELOW, MatchPolicy
from support.judges import FixedJudge, FixedPair

# The learned veto on, at the bar it was fitted for (off by default).
POLICY = MatchPolicy(0.92, stages=("polarity", "values"), veto_below=LEARNED_VETO_BELOW)


class RecordingJudge(FixedJudge):
    """A fixed judge that keeps every item it scored."""

    def __init__(self, p: float) -> None:
        super().__init__(p)
        self.items: list[JudgeInput] = []

    def probabilities(self, items: Sequence[object]) -> npt.NDArray[np.float64]:
        self.items += [item for item in items if isinstance(item, JudgeInput)]
        return super().probabilities(items)


def deciders(p: float, pair: FixedPair | None = None) -> Deciders:
    return Deciders(build_stages(POLICY.stages), judge=FixedJudge(p), pair=pair)


def test_a_candidate_above_the_threshold_is_served_on_its_cosine() -> None:
    decision = decide("What are the signs of dehydration?",
                      [Candidate(1, "What are the symptoms of dehydration?", 0.95)], POLICY, deciders(0.9))
    assert decision.hit and decision.basis == "cosine" and decision.probability == 0.9


def test_a_learned_score_never_serves_below_the_threshold() -> None:
    decision = decide("How can I install PyTorch?", [Candidate(1, "What is PyTorch?", 0.71)], POLICY,
                      deciders(0.999))
    assert decision.reason is Reason.BELOW_THRESHOLD and not decision.hit


def test_a_plain_rewording_is_served_below_the_threshold() -> None:
    decision = decide("how can i reset my password", [Candidate(1, "How do I reset my password?", 0.80)],
                      POLICY, deciders(0.01))
    assert decision.hit and decision.basis == "same content"


def test_a_low_learned_score_vetoes_a_candidate_the_cosine_supports() -> None:
    decision = decide("What are the signs of dehydration?",
                      [Candidate(1, "What are the symptoms of dehydration?", 0.95)], POLICY, deciders(0.2))
    assert decision.reason is Reason.VETOED and decision.vetoed_by == "learned"


def test_the_gates_and_stages_veto_before_any_learned_score() -> None:
    swapped = decide("migrating from git to svn", [Candidate(1, "migrating from svn to git", 0.99)], POLICY,
                     deciders(0.99))
    assert swapped.vetoed_by == "order"
    opposite = decide("How do I unpin a message?", [Candidate(1, "How do I pin a message?", 0.95)], POLICY,
                      deciders(0.99))
    assert opposite.vetoed_by == "contrast"
    negated = decide("Is the API not rate limited?", [Candidate(1, "Is the API rate limited?", 0.93)], POLICY,
                     deciders(0.99))
    assert negated.vetoed_by == "polarity" and negated.probability is None


def test_the_first_candidate_that_passes_is_served() -> None:
    candidates = [Candidate(1, "migrating from svn to git", 0.99), Candidate(2, "moving from git to svn", 0.95)]
    decision = decide("migrating from git to svn", candidates, POLICY, deciders(0.99))
    assert decision.hit and decision.chosen == 1


def test_the_pair_model_reads_only_where_it_can_cross_the_veto_bar() -> None:
    pair = FixedPair(shipped_combination(), {})
    query, cached = "What are the signs of dehydration?", "What are the symptoms of dehydration?"
    decide(query, [Candidate(1, cached, 0.95)], POLICY, deciders(0.999, pair))
    assert pair.read == []  # a sure pass: the stack's lower bound clears the bar
    decide(query, [Candidate(1, cached, 0.95)], POLICY, deciders(0.6, pair))
    assert pair.read == [(query, cached)]  # undecided: read once


def test_without_a_judge_the_rule_has_no_learned_veto() -> None:
    decision = decide("What are the signs of dehydration?",
                      [Candidate(1, "What are the symptoms of dehydration?", 0.95)], POLICY,
                      Deciders(build_stages(POLICY.stages)))
    assert decision.hit and decision.probability is None


def test_by_default_no_learned_score_is_read_or_vetoes() -> None:
    judge = RecordingJudge(0.01)
    decision = decide("What are the signs of dehydration?",
                      [Candidate(1, "What are the symptoms of dehydration?", 0.95)], MatchPolicy(0.92),
                      Deciders(judge=judge))
    assert decision.hit and decision.probability is None and judge.items == []


def test_the_veto_reads_each_candidate_as_a_lone_one_whatever_the_cache_holds() -> None:
    judge = RecordingJudge(0.2)  # vetoes both: each is scored
    candidates = [Candidate(1, "What are the symptoms of dehydration?", 0.95),
                  Candidate(2, "What are the signs of being dehydrated?", 0.949)]
    decide("What are the signs of dehydration?", candidates, POLICY, Deciders(build_stages(POLICY.stages),
                                                                              judge=judge))
    assert [item.rank for item in judge.items] == [0, 0]
    assert all(math.isnan(item.margin) for item in judge.items)
CONTEXT = "We are moving our monorepo this quarter and keep the full history."


def test_a_conversation_meets_the_same_gates_as_a_single_turn_request() -> None:
    cached = Candidate(1, "migrating from svn to git", 0.99, CONTEXT, 1.0)
    conversation = decide("migrating from git to svn", [cached], POLICY, deciders(0.99), CONTEXT)
    assert (conversation.reason, conversation.vetoed_by) == (Reason.VETOED, "order")
    unpin = decide("How do I unpin it?", [Candidate(1, "How do I pin it?", 0.99, CONTEXT, 1.0)], POLICY,
                   deciders(0.99), CONTEXT)
    assert unpin.vetoed_by == "contrast"


def test_a_conversation_with_the_same_context_is_served_on_its_cosine() -> None:
    cached = Candidate(1, "What are the symptoms of dehydration?", 0.95, CONTEXT, 1.0)
    decision = decide("What are the signs of dehydration?", [cached], POLICY, deciders(0.01), CONTEXT)
    assert decision.hit and decision.basis == "cosine" and decision.probability is None  # no learned score read
