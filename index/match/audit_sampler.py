"""Which served semantic hits are audited: `DEJA_AUDIT_RATE` of them as the default share, and more where an audit
teaches most (a namespace whose budget the learner's statistic says does not hold, a hit in a band the learner
opened below the cold-start threshold, a candidate just above its threshold, a namespace whose bound still rests
mostly on the prior, a young entry), each boost a multiple
of the default share. A band the learner opened keeps being measured: its hits are audited at `OPENED_BOOST` times
the default share (20% at the default 1%, within the allowance), so a band whose wrong rate rose past the budget
gives the labels that close it within a bounded number of served requests (`docs/budget.md`). The extra upstream
calls of labelling (extra audits, and LLM label calls for shadows) share one hourly allowance,
`DEJA_AUDIT_CALLS_PER_HOUR`; base-share audits do not draw on it, and shadows leave half of it to audits (what is
served is measured before what might be opened). The gateway and `eval replay --learn` use the
same sampler."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum

from index.match.allowance import Allowance, HourlyAllowance

# Multiples of the default share for each reason (the largest applies).
OVER_BUDGET_BOOST = 20.0
OPENED_BOOST = 100.0
UNCERTAIN_BOOST = 10.0
THIN_BOOST = 20.0
YOUNG_BOOST = 5.0
# A candidate whose cosine is within this much of its threshold is uncertain; an entry younger than this is young.
UNCERTAIN_MARGIN = 0.05
YOUNG_SECONDS = 3600.0
# The share of the hour's allowance that labels of near misses (shadows: evidence to open a band) leave to audits of
# served hits (evidence that what is served holds): what is served is measured first.
AUDIT_RESERVE_SHARE = 0.5


class AuditReason(StrEnum):
    BASE = "base"
    OVER_BUDGET = "over_budget"
    OPENED = "opened"
    THIN = "thin"
    UNCERTAIN = "uncertain"
    YOUNG = "young"


@dataclass(frozen=True)
class HitFacts:
    """What the sampler knows of a served hit. `over_budget`: the budget did not hold at the kind's cold-start
    threshold and the learner raised it (`index.match.threshold_book.ThresholdBook.over_budget`).
    `similarity` and `threshold`: the cosine and the threshold it met (a hit served on its cosine), else None;
    `prior`: the cold-start threshold of the hit's kind (a hit below it sits in a band the learner opened)."""

    over_budget: bool
    similarity: float | None
    threshold: float | None
    entry_age: float
    prior: float | None = None
    # The bound at the threshold in force rests on fewer labels than it needs (`ThresholdState.thin`).
    thin: bool = False


class AuditSampler:
    """Thread-safe; `clock` is wall-clock seconds."""

    def __init__(self, rate: float, calls_per_hour: int, clock: Callable[[], float], calls_per_audit: int = 1,
                 allowance: Allowance | None = None) -> None:
        """`calls_per_audit`: upstream calls one audit makes (the re-ask, plus the label call with a label model);
        `allowance`: where the hour's `calls_per_hour` are kept (default: in this process; a gateway passes the
        shared store's, `index.storage.allowance.SqlAllowance`, one allowance per deployment)."""
        self.rate = rate
        self.calls_per_hour = calls_per_hour
        self.calls_per_audit = calls_per_audit
        self.clock = clock
        self.allowance: Allowance = allowance or HourlyAllowance(calls_per_hour)

    def boost(self, facts: HitFacts) -> tuple[float, AuditReason]:
        """The multiple of the default share this hit is audited at, and why."""
        if facts.over_budget:
            return OVER_BUDGET_BOOST, AuditReason.OVER_BUDGET
        similarity, threshold = facts.similarity, facts.threshold
        if similarity is not None and facts.prior is not None and similarity < facts.prior - 1e-9:
            return OPENED_BOOST, AuditReason.OPENED
        if similarity is not None and threshold is not None and similarity - threshold < UNCERTAIN_MARGIN:
            return UNCERTAIN_BOOST, AuditReason.UNCERTAIN
        if similarity is not None and facts.thin:
            return THIN_BOOST, AuditReason.THIN
        if facts.entry_age < YOUNG_SECONDS:
            return YOUNG_BOOST, AuditReason.YOUNG
        return 1.0, AuditReason.BASE

    def draw(self, facts: HitFacts, u: float) -> AuditReason | None:
        """Audit this hit? `u` is uniform in [0, 1). Base-share audits are always allowed; extra ones only while
        the hour's ceiling has room (None when refused or not drawn)."""
        if u < self.rate:
            return AuditReason.BASE
        factor, reason = self.boost(facts)
        if reason is AuditReason.BASE or u >= min(1.0, self.rate * factor):
            return None
        return reason if self.spend(self.calls_per_audit) else None

    def spend(self, calls: int) -> bool:
        """Take `calls` from the last hour's allowance; False (nothing taken) when it has no room for them."""
        return self.allowance.take(calls, self.clock())

    def spend_on_shadow(self, calls: int) -> bool:
        """Take `calls` for a near miss's label, leaving `AUDIT_RESERVE_SHARE` of the hour to audits of served hits;
        False (nothing taken) when that leaves no room."""
        return self.allowance.take(calls, self.clock(), reserve=math.ceil(AUDIT_RESERVE_SHARE * self.calls_per_hour))
