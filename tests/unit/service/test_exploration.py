"""Exploration in the gateway: which judge hits go upstream instead, and how the lookup then reads."""

from __future__ import annotations

import pytest

from index.explore import Exploration
from index.records import CachedResponse, Lookup, Verdict
from index.rule import Decision, Reason
from index.stages import StageResult
from service.gateway import explored


def _hit(p: float | None, verdict: Verdict = Verdict.SEMANTIC_HIT) -> Lookup:
    stages = () if p is None else (StageResult("judge", True, "judge-x p bar", p),)
    return Lookup(verdict, CachedResponse(7, {"choices": []}, 0.0), 0.8, Decision(Reason.HIT, 0.8, stages=stages),
                  "cached prompt", 7, candidate_response={"choices": []})


@pytest.mark.parametrize(("draw", "goes_upstream"), [(0.3, True), (0.5, False)], ids=["drawn", "not-drawn"])
def test_an_uncertain_judge_hit_is_explored_at_its_share(draw: float, goes_upstream: bool) -> None:
    # p = 0.92 over a bar of 0.90 at budget 0.02 and rate 0.1: explored with probability 0.1 * 0.08 / 0.02 = 0.4.
    after = explored(_hit(0.92), 0.90, 0.02, Exploration(rate=0.1), draw)
    if goes_upstream:
        assert after.verdict is Verdict.MISS and after.response is None
        assert after.decision is not None and after.decision.reason is Reason.EXPLORED
        assert after.candidate_response is not None  # kept, to compare with the fresh answer
    else:
        assert after == _hit(0.92)


@pytest.mark.parametrize("lookup", [_hit(0.99), _hit(None), _hit(0.92, Verdict.EXACT_HIT)],
                         ids=["sure-hit", "threshold-mode-hit", "exact-hit"])
def test_sure_hits_rule_hits_and_exact_hits_are_never_explored(lookup: Lookup) -> None:
    assert explored(lookup, 0.90, 0.02, Exploration(rate=1.0), 0.0) == lookup
