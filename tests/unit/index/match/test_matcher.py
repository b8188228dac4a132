"""The Matcher: the namespace's policy, then the decision's steps, a remembered difference among them."""

from __future__ import annotations

import pytest

from index.match.candidates import CandidateRule
from index.match.decide import Deciders
from index.match.matcher import Matcher, MatchRequest
from index.match.outcome import Candidate, Kind, Reason
from index.match.policy import DecisionMode, MatchPolicy
from index.match.steps import Difference
from index.records import Neighbor

POLICY = MatchPolicy(0.92)
ASKED, CACHED = "What are the signs of dehydration?", "What are the symptoms of dehydration?"


class Remembered:
    """Remembered differences that veto every pair of one namespace (and count what they were asked)."""

    def __init__(self, namespace: str) -> None:
        self.namespace = namespace
        self.asked: list[tuple[str, str, str]] = []

    def veto(self, namespace: str, prompt: str, candidate: str) -> object | None:
        self.asked.append((namespace, prompt, candidate))
        return "remembered" if namespace == self.namespace else None


def test_a_remembered_difference_vetoes_a_would_be_hit_of_its_namespace() -> None:
    matcher = Matcher(POLICY, Deciders(), Remembered("ns-a"))
    vetoed = matcher.decide(MatchRequest(ASKED, "ns-a"), [Candidate(1, CACHED, 0.95)])
    assert (vetoed.reason, vetoed.vetoed_by) == (Reason.VETOED, Difference.name)
    assert vetoed.stages[-1].stage == Difference.name
    assert matcher.decide(MatchRequest(ASKED, "ns-b"), [Candidate(1, CACHED, 0.95)]).hit


class RememberedPair:
    """Remembers one pair of prompts as different."""

    def __init__(self, prompt: str, candidate: str) -> None:
        self.pair = (prompt, candidate)

    def veto(self, namespace: str, prompt: str, candidate: str) -> object | None:
        return "remembered" if (prompt, candidate) == self.pair else None


def test_after_a_remembered_difference_the_next_candidate_is_decided() -> None:
    other = "Which signs of dehydration should I look for?"
    matcher = Matcher(POLICY, Deciders(), RememberedPair(ASKED, CACHED))
    decision = matcher.decide(MatchRequest(ASKED, "ns"), [Candidate(1, CACHED, 0.95), Candidate(2, other, 0.94)])
    assert decision.hit and decision.chosen == 1


def test_a_remembered_difference_never_vetoes_a_plain_rewording() -> None:
    differences = Remembered("ns")
    matcher = Matcher(POLICY, Deciders(), differences)
    assert matcher.decide(MatchRequest("How can I reset my password?", "ns"),
                          [Candidate(1, "How do I reset my password?", 0.97)]).hit
    assert differences.asked == []


def test_a_miss_below_the_learning_floor_never_reads_the_differences() -> None:
    differences = Remembered("ns")
    matcher = Matcher(POLICY, Deciders(), differences)
    assert not matcher.decide(MatchRequest(ASKED, "ns"), [Candidate(1, CACHED, 0.79)]).hit
    assert differences.asked == []


def test_a_near_miss_a_remembered_difference_vetoes_is_no_evidence_for_a_lower_threshold() -> None:
    # Below the threshold, above the learning floor: every other step runs, so that only a candidate a lower
    # threshold would really serve counts as a near miss.
    differences = Remembered("ns")
    matcher = Matcher(POLICY, Deciders(), differences)
    decision = matcher.decide(MatchRequest(ASKED, "ns"), [Candidate(1, CACHED, 0.85)])
    assert decision.reason is Reason.BELOW_THRESHOLD and not decision.would_serve
    assert differences.asked == [("ns", ASKED, CACHED)]
    assert Matcher(POLICY).decide(MatchRequest(ASKED, "ns"), [Candidate(1, CACHED, 0.85)]).would_serve


CONTEXT = "My order 1042 was due on Monday.\nOrder 1042 left with DHL."


def _conversation(matcher: Matcher, similarity: float, context_similarity: float) -> Reason:
    candidate = Candidate(1, "Can you chase it?", similarity, CONTEXT, context_similarity)
    return matcher.decide(MatchRequest("Can you chase it?", "talky", CONTEXT), [candidate]).reason


def test_a_learned_conversation_threshold_is_applied_once() -> None:
    """A conversation is decided at exactly its namespace's thresholds for the kind, the learned one for its last
    message and the context threshold moved by as much once: adjusting them again on the way to the decision (a
    second shift, a level on top) would move the boundaries below."""
    matcher = Matcher(POLICY, learned=lambda namespace, kind: 0.96 if kind is Kind.CONVERSATION else None)
    policy = matcher.policy_for("talky")
    last, context = policy.threshold_for(Kind.CONVERSATION), policy.min_context_similarity
    assert last == 0.96 and context == pytest.approx(POLICY.min_context_similarity + 0.96
                                                     - POLICY.conversation_threshold)
    once = matcher.plan(MatchRequest("Can you chase it?", "talky", CONTEXT)).policy
    assert once == policy.for_request(conversation=True) and once.for_request(conversation=True) == once
    assert once.threshold_for(Kind.CONVERSATION) == last
    assert _conversation(matcher, last, context) is Reason.HIT
    assert _conversation(matcher, last - 0.001, context) is Reason.BELOW_THRESHOLD
    assert _conversation(matcher, last, context - 0.001) is Reason.CONTEXT_BELOW_THRESHOLD
    # single turns keep the prior, 0.92
    assert matcher.decide(MatchRequest(ASKED, "talky"), [Candidate(1, CACHED, 0.93)]).hit


def test_each_kind_is_served_at_its_own_learned_threshold() -> None:
    """One learner, one threshold per kind: the cosine kind's learned threshold moves single turns only; a
    conversation's last message and context move with the conversation kind's own evidence."""
    learned = {("open", Kind.COSINE): 0.86, ("strict", Kind.COSINE): 0.95, ("talky", Kind.CONVERSATION): 0.96}
    matcher = Matcher(POLICY, learned=lambda namespace, kind: learned.get((namespace, kind)))
    assert matcher.policy_for("cold") == POLICY  # no evidence: the prior
    opened, strict, talky = matcher.policy_for("open"), matcher.policy_for("strict"), matcher.policy_for("talky")
    assert opened.min_similarity == 0.86 and strict.min_similarity == 0.95
    assert opened.conversation_threshold == POLICY.conversation_threshold  # not moved by single turns' evidence
    assert talky.min_similarity == POLICY.min_similarity and talky.conversation_threshold == 0.96
    assert talky.min_context_similarity == pytest.approx(POLICY.min_context_similarity + 0.96
                                                         - POLICY.conversation_threshold)
    assert matcher.decide(MatchRequest(ASKED, "open"), [Candidate(1, CACHED, 0.90)]).hit
    assert not matcher.decide(MatchRequest(ASKED, "cold"), [Candidate(1, CACHED, 0.90)]).hit

def test_the_decision_carries_the_policy_it_ran_under_and_the_threshold_its_kind_met() -> None:
    """The gateway computes no policy: the Matcher's decision says which it used, and the decision log records
    the threshold of the candidate's kind under it (a conversation's is the conversation threshold)."""
    learned = {("open", Kind.COSINE): 0.86}
    matcher = Matcher(POLICY, learned=lambda namespace, kind: learned.get((namespace, kind)))
    single = matcher.decide(MatchRequest(ASKED, "open"), [Candidate(1, CACHED, 0.90)])
    assert single.policy == matcher.policy_for("open") and single.threshold == 0.86
    candidate = Candidate(1, "Can you chase it?", 0.95, CONTEXT, 1.0)
    talk = matcher.decide(MatchRequest("Can you chase it?", "open", CONTEXT), [candidate])
    assert talk.kind is Kind.CONVERSATION and talk.threshold == POLICY.conversation_threshold
    assert talk.policy is not None and talk.policy.min_similarity == POLICY.conversation_threshold


def test_the_plan_selects_as_many_neighbours_as_the_mode_reads() -> None:
    """Candidate selection is the Matcher's: guarded mode reads its top K down to the log floor; the cosine rule
    reads DEJA_CANDIDATES and stops at the first one below the threshold once it holds one."""
    neighbors = [Neighbor(i, s) for i, s in enumerate((0.97, 0.93, 0.91, 0.85, 0.6, 0.4))]
    guarded = Matcher(MatchPolicy(0.92, guarded_candidates=3), rule=CandidateRule(2, 0.5))
    plan = guarded.plan(MatchRequest(ASKED, "ns"))
    assert plan.selection.search == 3 and plan.selection.reachable(neighbors) == [0, 1, 2, 3, 4]
    assert plan.selection.select(neighbors, lambda n: n.entry_id) == [0, 1, 2]
    assert plan.selection.select(neighbors, lambda n: None if n.entry_id == 1 else n.entry_id) == [0, 2, 3]
    cosine = Matcher(MatchPolicy(0.92, decision=DecisionMode.THRESHOLD), rule=CandidateRule(5, 0.5))
    plan = cosine.plan(MatchRequest(ASKED, "ns"))
    assert plan.selection.search == 5 and plan.selection.select(neighbors, lambda n: n.entry_id) == [0, 1]
    below = [Neighbor(7, 0.88), Neighbor(8, 0.87)]
    assert plan.selection.select(below, lambda n: n.entry_id) == [7]  # the best one, for the log
