"""Per-namespace thresholds from `eval sweep --traffic --apply` mean a cosine threshold, in both modes."""

from __future__ import annotations

from index.match.matcher import NamespacePolicies
from index.match.policy import DecisionMode, MatchPolicy


def test_a_stored_threshold_is_the_namespaces_cosine_threshold_in_threshold_mode() -> None:
    thresholds = NamespacePolicies(MatchPolicy(0.90), {"ns": (0.95, 40)})
    assert thresholds.policy_for("ns").min_similarity == 0.95
    assert thresholds.policy_for("other").min_similarity == 0.90


def test_a_stored_threshold_is_the_cosine_threshold_of_the_default_decision_too() -> None:
    guarded = MatchPolicy(0.92, decision=DecisionMode.GUARDED)
    thresholds = NamespacePolicies(guarded, {"ns": (0.95, 40), "*": (0.97, 80)})
    assert thresholds.policy_for("ns").min_similarity == 0.95
    assert thresholds.policy_for("other").min_similarity == 0.97
