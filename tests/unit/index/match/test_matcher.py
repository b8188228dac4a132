"""The Matcher: the namespace's policy, the decision, then a remembered difference as its last step; the judge
in force is swapped whole."""

from __future__ import annotations

import pytest

from index.match.decide import Deciders
from index.match.matcher import DIFFERENCE, Matcher
from index.match.outcome import Candidate, Reason
from index.match.policy import LEARNED_VETO_BELOW, DecisionMode, MatchPolicy
from support.judges import FixedJudge

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


def test_a_remembered_difference_vetoes_a_would_be_hit_as_the_last_step() -> None:
    matcher = Matcher(POLICY, Deciders(judge=FixedJudge(0.9)), Remembered("ns-a"))
    vetoed = matcher.decide(ASKED, [Candidate(1, CACHED, 0.95)], "ns-a")
    assert (vetoed.reason, vetoed.vetoed_by) == (Reason.VETOED, DIFFERENCE)
    assert matcher.decide(ASKED, [Candidate(1, CACHED, 0.95)], "ns-b").hit


def test_a_remembered_difference_never_vetoes_a_plain_rewording() -> None:
    differences = Remembered("ns")
    matcher = Matcher(POLICY, Deciders(judge=FixedJudge(0.9)), differences)
    assert matcher.decide("How can I reset my password?", [Candidate(1, "How do I reset my password?", 0.97)],
                          "ns").hit
    assert differences.asked == []


def test_a_misses_never_reads_the_differences() -> None:
    differences = Remembered("ns")
    matcher = Matcher(POLICY, Deciders(judge=FixedJudge(0.9)), differences)
    assert not matcher.decide(ASKED, [Candidate(1, CACHED, 0.80)], "ns").hit
    assert differences.asked == []


def test_the_namespace_level_moves_the_cosine_threshold() -> None:
    levels = {"strict": 1, "open": -1}
    matcher = Matcher(POLICY, Deciders(judge=FixedJudge(0.9)), level=lambda ns: levels.get(ns, 0))
    assert matcher.policy_for("strict").min_similarity == pytest.approx(0.96)
    assert matcher.policy_for("open").min_similarity == pytest.approx(0.84)
    assert not matcher.decide(ASKED, [Candidate(1, CACHED, 0.94)], "strict").hit
    assert matcher.decide(ASKED, [Candidate(1, CACHED, 0.88)], "open").hit


def test_the_judge_in_force_is_swapped_whole() -> None:
    vetoing = MatchPolicy(0.92, veto_below=LEARNED_VETO_BELOW)  # the learned veto is off by default
    matcher = Matcher(vetoing, Deciders(judge=FixedJudge(0.9, version="old")))
    matcher.swap_judge(FixedJudge(0.1, version="new"), None)
    decision = matcher.decide(ASKED, [Candidate(1, CACHED, 0.95)], "ns")
    assert decision.vetoed_by == "judge" and decision.version == "new"


def test_judge_mode_needs_a_judge() -> None:
    with pytest.raises(ValueError, match="judge"):
        Matcher(MatchPolicy(0.5, decision=DecisionMode.JUDGE))
