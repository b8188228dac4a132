"""The hit rule says why: a reason for every outcome, a stage name only for real vetoes."""

from __future__ import annotations

import pytest

from index.guards.stages import StepResult
from index.match.conversation import ContextRule
from index.match.decide import Deciders, decide
from index.match.outcome import Candidate, Decision, Reason
from index.match.policy import DecisionMode, MatchPolicy


class VetoWord:
    name = "veto-word"

    def check(self, query: str, cached: str) -> StepResult:
        return StepResult(self.name, ("not" in query.split()) == ("not" in cached.split()))


POLICY = MatchPolicy(0.8, min_context_similarity=0.7, decision=DecisionMode.THRESHOLD)


@pytest.mark.parametrize(
    ("candidate", "query", "query_context", "reason", "vetoed_by"),
    [
        pytest.param(Candidate(1, "is it cold", 0.95), "is it cold", None, Reason.HIT, None, id="hit"),
        pytest.param(Candidate(1, "is it cold", 0.5), "is it cold", None, Reason.BELOW_THRESHOLD, None,
                     id="below-threshold"),
        pytest.param(Candidate(1, "is it cold", 0.95, "we talk weather", 0.2), "is it cold", "we talk food",
                     Reason.CONTEXT_BELOW_THRESHOLD, None, id="context-below-threshold"),
        pytest.param(Candidate(1, "is it cold", 0.95), "is it not cold", None, Reason.VETOED, "veto-word",
                     id="vetoed"),
        pytest.param(Candidate(1, "why", 0.95, "it is cold", 0.9), "why", "it is not cold", Reason.VETOED,
                     "veto-word@context", id="vetoed-on-context"),
    ],
)
def test_each_decision_names_its_reason_and_only_vetoes_name_a_stage(
    candidate: Candidate, query: str, query_context: str | None, reason: Reason, vetoed_by: str | None
) -> None:
    stages = (VetoWord(),)
    # a context rule that never finds a difference, so the stage's own veto shows
    deciders = Deciders(stages, stages, conversation=ContextRule(min_aligned=1.0))
    decision = decide(query, [candidate], POLICY, deciders, query_context)
    assert (decision.reason, decision.vetoed_by, decision.hit) == (reason, vetoed_by, reason is Reason.HIT)


def test_a_decision_cannot_name_a_stage_without_a_veto() -> None:
    with pytest.raises(ValueError, match="only of a veto"):
        Decision(Reason.BELOW_THRESHOLD, 0.5, vetoed_by="polarity")
    with pytest.raises(ValueError, match="only of a veto"):
        Decision(Reason.VETOED, 0.9)


@pytest.mark.parametrize("field", ["min_similarity", "min_context_similarity"])
def test_policy_refuses_a_similarity_outside_the_cosine_range(field: str) -> None:
    with pytest.raises(ValueError, match=field):
        MatchPolicy(**{"min_similarity": 0.9, field: 1.5})


def test_policy_refuses_an_unknown_stage_and_moves_only_its_threshold() -> None:
    with pytest.raises(ValueError, match="unknown stage 'vibes'"):
        MatchPolicy(0.9, stages=("vibes",))
    policy = MatchPolicy(0.9, 0.6, ("polarity",), 0.4)
    assert policy.at(0.8) == MatchPolicy(0.8, 0.6, ("polarity",), 0.4)
