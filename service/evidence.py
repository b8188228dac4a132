"""The gateway's hooks into the live budget: the audit sampler (`index.match.audit_sampler`) decides which served
hits are audited, and a label teaches its difference (`index.match.differences`; the matcher reads them). The rules
are `index.match.labelling`'s, which `eval replay --learn` runs too."""

from __future__ import annotations

from index.match import labelling
from index.match.audit_sampler import HitFacts
from index.match.labelling import LabelCase
from index.match.outcome import Lookup
from index.records import Verdict
from index.storage.decision_log import DecisionRecord
from service.runtime import Runtime


def hit_facts(rt: Runtime, namespace: str, lookup: Lookup) -> HitFacts:
    """What the audit sampler reads of a served hit (`index.match.labelling.hit_facts`), with the learner's
    statistic for the hit's kind."""
    decision = lookup.decision
    over = decision is not None and rt.learned.over_budget(namespace, decision.kind)
    return labelling.hit_facts(lookup, over, rt.clock())


def teach(rt: Runtime, decision: DecisionRecord, correct: bool) -> None:
    """A feedback or human label of a logged decision (admin routes, the label page; in a worker thread: it writes
    to SQL), at full weight."""
    if decision.candidate_prompt is not None:
        teach_case(rt, LabelCase(decision.namespace, decision.prompt, decision.candidate_prompt,
                                 decision.verdict == Verdict.SEMANTIC_HIT.value), correct)


def teach_case(rt: Runtime, case: LabelCase, same: bool, weight: float = 1.0) -> None:
    """What a label teaches (`index.match.labelling.teach`: a wrong served hit or a right near miss is one label
    of its difference); the live budget reads the labels themselves from the decision log."""
    labelling.teach(rt.differences, case, same, weight)
