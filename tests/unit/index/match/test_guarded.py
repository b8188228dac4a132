"""The guarded rule (the default): the cosine serves, the gates and rule stages veto, a plain rewording is served
at any cosine; no learned score is read (the learned veto was removed: docs/learned-veto.md)."""

from __future__ import annotations

from index.guards.registry import build_stages
from index.match.decide import Deciders, decide
from index.match.outcome import Candidate, Reason
from index.match.policy import MatchPolicy

POLICY = MatchPolicy(0.92, stages=("polarity", "values"))
DECIDERS = Deciders(build_stages(POLICY.stages))


def test_a_candidate_above_the_threshold_is_served_on_its_cosine() -> None:
    decision = decide("What are the signs of dehydration?",
                      [Candidate(1, "What are the symptoms of dehydration?", 0.95)], POLICY, DECIDERS)
    assert decision.hit and decision.basis == "cosine"


def test_nothing_serves_below_the_threshold_but_a_plain_rewording() -> None:
    decision = decide("How can I install PyTorch?", [Candidate(1, "What is PyTorch?", 0.71)], POLICY, DECIDERS)
    assert decision.reason is Reason.BELOW_THRESHOLD and not decision.hit
    rewording = decide("how can i reset my password", [Candidate(1, "How do I reset my password?", 0.80)],
                       POLICY, DECIDERS)
    assert rewording.hit and rewording.basis == "same content"


def test_the_gates_and_stages_veto_under_their_names() -> None:
    swapped = decide("migrating from git to svn", [Candidate(1, "migrating from svn to git", 0.99)], POLICY,
                     DECIDERS)
    assert swapped.vetoed_by == "order"
    opposite = decide("How do I unpin a message?", [Candidate(1, "How do I pin a message?", 0.95)], POLICY,
                      DECIDERS)
    assert opposite.vetoed_by == "contrast"
    negated = decide("Is the API not rate limited?", [Candidate(1, "Is the API rate limited?", 0.93)], POLICY,
                     DECIDERS)
    assert negated.vetoed_by == "polarity"


def test_the_first_candidate_that_passes_is_served() -> None:
    candidates = [Candidate(1, "migrating from svn to git", 0.99), Candidate(2, "moving from git to svn", 0.95)]
    decision = decide("migrating from git to svn", candidates, POLICY, DECIDERS)
    assert decision.hit and decision.chosen == 1


def test_no_step_is_named_after_a_learned_score() -> None:
    decision = decide("What are the signs of dehydration?",
                      [Candidate(1, "What are the symptoms of dehydration?", 0.95)], POLICY, DECIDERS)
    assert all(result.stage != "learned" for result in decision.stages)


CONTEXT = "We are moving our monorepo this quarter and keep the full history."


def test_a_conversation_meets_the_same_gates_as_a_single_turn_request() -> None:
    cached = Candidate(1, "migrating from svn to git", 0.99, CONTEXT, 1.0)
    conversation = decide("migrating from git to svn", [cached], POLICY, DECIDERS, CONTEXT)
    assert (conversation.reason, conversation.vetoed_by) == (Reason.VETOED, "order")
    unpin = decide("How do I unpin it?", [Candidate(1, "How do I pin it?", 0.99, CONTEXT, 1.0)], POLICY,
                   DECIDERS, CONTEXT)
    assert unpin.vetoed_by == "contrast"


def test_a_conversation_with_the_same_context_is_served_on_its_cosine() -> None:
    cached = Candidate(1, "What are the symptoms of dehydration?", 0.95, CONTEXT, 1.0)
    decision = decide("What are the signs of dehydration?", [cached], POLICY, DECIDERS, CONTEXT)
    assert decision.hit and decision.basis == "cosine"
