"""Per-namespace thresholds from `eval sweep --traffic --apply` mean a cosine threshold, in threshold mode only."""

from __future__ import annotations

from index.match.matcher import NamespacePolicies
from index.match.policy import DecisionMode, MatchPolicy


def test_a_stored_threshold_is_the_namespaces_cosine_threshold_in_threshold_mode() -> None:
    thresholds = NamespacePolicies(MatchPolicy(0.90), {"ns": (0.95, 40)})
    assert thresholds.policy_for("ns").min_similarity == 0.95
    assert thresholds.policy_for("other").min_similarity == 0.90


def test_a_stored_threshold_never_becomes_the_judges_candidate_floor() -> None:
    judged = MatchPolicy(0.5, decision=DecisionMode.JUDGE)
    thresholds = NamespacePolicies(judged, {"ns": (0.95, 40), "*": (0.97, 80)})
    assert thresholds.policy_for("ns") == judged and thresholds.policy_for("other") == judged
