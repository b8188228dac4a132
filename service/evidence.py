"""The gateway's hooks into the live budget: the audit sampler (`index.match.audit_sampler`) decides which served
hits are audited, and a label teaches its difference (`index.match.differences`; the matcher reads them)."""

from __future__ import annotations

from index.match.audit_sampler import HitFacts
from index.match.outcome import Lookup
from index.match.steps import COSINE
from index.records import Verdict
from index.storage.decision_log import DecisionRecord
from service.label_model import LabelCase
from service.runtime import Runtime


def hit_facts(rt: Runtime, namespace: str, lookup: Lookup) -> HitFacts:
    """What the audit sampler reads of a served hit. Where the learner's statistic says the budget does not hold
    (for the hit's kind), and near the threshold, is where an audit teaches most: the cosine against the threshold
    the decision held it to (a hit served on its cosine just above it; a plain rewording is served on its content
    and is never near a threshold)."""
    decision = lookup.decision
    p: float | None = None
    threshold = None
    policy = None if decision is None else decision.policy
    if decision is not None and policy is not None and policy.guarded and decision.basis == COSINE:
        p, threshold = decision.similarity, decision.threshold
    over = decision is not None and rt.learned.over_budget(namespace, decision.kind)
    created = lookup.response.created_at if lookup.response is not None else rt.clock()
    return HitFacts(over, p, threshold, rt.clock() - created)


def label_case(namespace: str, prompt: str, lookup: Lookup) -> LabelCase:
    return LabelCase(namespace, prompt, lookup.candidate_prompt or "", lookup.verdict is Verdict.SEMANTIC_HIT)


def teach(rt: Runtime, decision: DecisionRecord, correct: bool) -> None:
    """A feedback or human label of a logged decision (admin routes, the label page; in a worker thread: it writes
    to SQL), at full weight."""
    if decision.candidate_prompt is not None:
        teach_case(rt, LabelCase(decision.namespace, decision.prompt, decision.candidate_prompt,
                                 decision.verdict == Verdict.SEMANTIC_HIT.value), correct)


def teach_case(rt: Runtime, case: LabelCase, same: bool, weight: float = 1.0) -> None:
    """The one place a label teaches (feedback, the label page, audits, shadows, the label model): a wrong served
    hit or a right near-miss is one label, of `weight`, of what differed between the two prompts; the live
    budget reads the labels themselves from the decision log."""
    if same != case.served:
        rt.differences.remember(case.namespace, case.question, case.cached_question, same, weight)
