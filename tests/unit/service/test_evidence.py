"""What the audit sampler reads of a served hit: near its threshold, and where the learner's statistic says the
budget does not hold, is where an audit teaches most."""

from __future__ import annotations

from pathlib import Path

import pytest

from index.match.audit_sampler import AuditReason
from index.match.evidence import Observation, collect
from index.match.outcome import Decision, Lookup, Reason
from index.match.policy import MatchPolicy
from index.records import CachedResponse, Verdict
from service.evidence import hit_facts
from support.inprocess import inprocess_gateway


def served(similarity: float, basis: str, created_at: float, policy: MatchPolicy) -> Lookup:
    decision = Decision(Reason.HIT, similarity, chosen=0, basis=basis, policy=policy)
    return Lookup(Verdict.SEMANTIC_HIT, CachedResponse(1, {}, created_at), similarity, decision)


@pytest.mark.asyncio
async def test_a_guarded_hit_just_above_the_threshold_is_audited_more_than_one_far_above(tmp_path: Path) -> None:
    async with inprocess_gateway(tmp_path) as gw:
        rt = gw.runtime
        policy = rt.thresholds.policy_for("ns")
        old = rt.clock() - 7200.0  # not a young entry: only nearness to the threshold boosts
        near = hit_facts(rt, "ns", served(policy.min_similarity + 0.01, "cosine", old, policy))
        far = hit_facts(rt, "ns", served(0.99, "cosine", old, policy))
        rewording = hit_facts(rt, "ns", served(policy.min_similarity + 0.01, "same content", old, policy))
        assert (near.similarity, near.threshold) == (policy.min_similarity + 0.01, policy.min_similarity)
        assert rt.audit_sampler.boost(near)[1] is AuditReason.UNCERTAIN
        assert rt.audit_sampler.boost(far)[1] is AuditReason.BASE
        assert rt.audit_sampler.boost(rewording)[1] is AuditReason.BASE  # served on its content: no threshold


@pytest.mark.asyncio
async def test_a_hit_where_the_learners_statistic_says_over_budget_is_audited_most(tmp_path: Path) -> None:
    async with inprocess_gateway(tmp_path) as gw:
        rt = gw.runtime
        policy = rt.thresholds.policy_for("ns")
        hit = served(0.99, "cosine", rt.clock() - 7200.0, policy)
        assert not hit_facts(rt, "ns", hit).over_budget  # no evidence: nothing says over
        # A third of the namespace's hits at the very top labelled wrong: no threshold stops serving them.
        audits = [Observation(0.991 + 0.008 * (i % 10) / 10, i % 3 != 0) for i in range(90)]
        rt.learned.update("ns", collect(audits, policy.learn_floor))
        facts = hit_facts(rt, "ns", hit)
        assert facts.over_budget and rt.audit_sampler.boost(facts)[1] is AuditReason.OVER_BUDGET
        assert not hit_facts(rt, "other", hit).over_budget
