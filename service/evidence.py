"""The gateway's hooks into the live budget: the audit sampler (`index.match.audit_sampler`) decides which served
hits are audited, and a label teaches its difference (`index.match.differences`; the matcher reads them)."""

from __future__ import annotations

from index.match.audit_sampler import HitFacts
from index.match.outcome import Lookup
from index.match.policy import MatchPolicy
from index.records import Verdict
from index.storage.decision_log import DecisionRecord
from service.label_judge import LabelCase
from service.runtime import Runtime


def hit_facts(rt: Runtime, namespace: str, lookup: Lookup, policy: MatchPolicy) -> HitFacts:
    decision = lookup.decision
    p = decision.probability if decision is not None else None
    bar = decision.bar if decision is not None and policy.judged else None
    created = lookup.response.created_at if lookup.response is not None else rt.clock()
    return HitFacts(rt.bars.level(namespace) > 0, p, bar, rt.clock() - created)


def label_case(namespace: str, prompt: str, lookup: Lookup) -> LabelCase:
    return LabelCase(namespace, prompt, lookup.candidate_prompt or "", lookup.verdict is Verdict.SEMANTIC_HIT)


def teach(rt: Runtime, decision: DecisionRecord, correct: bool) -> None:
    """A feedback or human label (in a worker thread: it writes to SQL): a wrong served hit or a right near-miss is
    one full-weight label of its difference."""
    served = decision.verdict == Verdict.SEMANTIC_HIT.value
    if decision.candidate_prompt is not None and correct != served:
        rt.differences.remember(decision.namespace, decision.prompt, decision.candidate_prompt, correct)
