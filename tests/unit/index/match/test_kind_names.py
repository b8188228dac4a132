"""Thresholds are addressed by the kind's name: a kinds enum reordered (or grown) moves no threshold to another
kind, and each kind is decided before the steps run."""

from __future__ import annotations

import dataclasses
from enum import StrEnum

import pytest

import index.match.matcher as matcher_module
import index.match.policy as policy_module
from index.match.kinds import Kind, kind_of
from index.match.matcher import Matcher, MatchRequest, NamespacePolicies
from index.match.outcome import Candidate, Reason
from index.match.policy import THRESHOLD_FIELDS, MatchPolicy

LEARNED = {"cosine": 0.86, "slot": 0.88, "alternative": 0.97, "conversation": 0.84}
POLICY = MatchPolicy(0.92, conversation_threshold=0.90)


def _applied(kinds: type[StrEnum]) -> dict[str, float]:
    policies = NamespacePolicies(POLICY, learned=lambda namespace, kind: LEARNED[kind.value])
    policy = policies.policy_for("ns")
    return {kind.value: policy.threshold_for(kind) for kind in kinds}  # type: ignore[arg-type]


def test_a_reordered_kinds_enum_changes_no_threshold(monkeypatch: pytest.MonkeyPatch) -> None:
    before = _applied(Kind)
    reordered = StrEnum("Kind", [(kind.name, kind.value) for kind in reversed(Kind)])  # type: ignore[misc]
    assert [k.value for k in reordered] != [k.value for k in Kind]
    monkeypatch.setattr(matcher_module, "Kind", reordered)
    monkeypatch.setattr(policy_module, "Kind", reordered)
    after = _applied(reordered)
    assert after == before == LEARNED


def test_every_kind_has_a_threshold_of_its_own() -> None:
    assert set(THRESHOLD_FIELDS) == {kind.value for kind in Kind}
    assert len(set(THRESHOLD_FIELDS.values())) == len(Kind)


@pytest.mark.parametrize(("query", "cached", "conversation", "kind"), [
    ("How do I reset my password?", "How can I reset my password?", False, Kind.COSINE),
    ("How do I reset my password?", "How can I reset my password?", True, Kind.CONVERSATION),
    ("Can I paint the kitchen walls with latex?", "Can I paint the bathroom walls with latex?", False,
     Kind.ALTERNATIVE),
], ids=["single-turn", "conversation", "alternative"])
def test_the_kind_is_decided_from_the_pair_alone(query: str, cached: str, conversation: bool, kind: Kind) -> None:
    assert kind_of(query, cached, conversation) is kind


CONTEXT = "My order 1042 was due on Monday.\nOrder 1042 left with DHL."


def test_a_conversation_below_its_threshold_that_passes_every_step_is_a_near_miss() -> None:
    """Every kind learns both ways: a conversation's near miss is its kind's evidence for a lower threshold."""
    matcher = Matcher(POLICY)
    candidate = Candidate(1, "Can you chase it?", 0.85, CONTEXT, 1.0)
    decision = matcher.decide(MatchRequest("Can you chase it?", "talky", CONTEXT), [candidate])
    assert decision.near_miss and decision.kind is Kind.CONVERSATION and decision.reason is Reason.BELOW_THRESHOLD
    below_floor = dataclasses.replace(candidate, similarity=0.79)
    assert not matcher.decide(MatchRequest("Can you chase it?", "talky", CONTEXT), [below_floor]).near_miss


def test_a_learned_slot_threshold_is_applied_as_learned_even_below_the_cosine_one() -> None:
    """What `/deja/budget` shows (the learner's threshold for the kind) is what the decision applies: no kind is
    floored at another's threshold."""
    matcher = Matcher(POLICY, learned=lambda namespace, kind: 0.88 if kind is Kind.SLOT else None)
    assert matcher.policy_for("ns").threshold_for(Kind.SLOT) == 0.88 < POLICY.min_similarity
