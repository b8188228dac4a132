"""The false-hit budget measured on a deployment's own traffic, as numbers: per (namespace, API), the served
semantic hits, how many of them were audited (a label from an audit, feedback or a human) and how many of those
were wrong, the estimate wrong / audited and its one-sided 95% Clopper-Pearson upper bound. The tallies are read
from the decision log by `index.storage.budget`.

The bound is exact for a fixed sample. It is read continuously (every upkeep tick), which makes it optimistic
in the sense of a sequential test; audits sampled more densely where hits are riskier (uncertain candidates,
young entries, a namespace over budget) bias the estimate upward, which errs on the safe side.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from scipy.special import betaincinv  # beta.ppf without importing scipy.stats (1.3 s of start-up)

CONFIDENCE = 0.95


def upper_bound(wrong: int, audited: int, confidence: float = CONFIDENCE) -> float:
    """One-sided Clopper-Pearson upper bound on the wrong rate after `wrong` of `audited` (1.0 with no audit)."""
    if audited <= 0 or wrong >= audited:
        return 1.0
    return float(betaincinv(wrong + 1, audited - wrong, confidence))  # = scipy.stats.beta.ppf


def corrected(rate: float, error_rate: float) -> float:
    """A wrong rate measured by a labeller that flips each label with probability `error_rate`, solved for the
    true rate: observed = e + true x (1 - 2e), clipped to [0, 1]."""
    if error_rate <= 0:
        return rate
    return min(1.0, max(0.0, (rate - error_rate) / (1.0 - 2.0 * error_rate)))


# `audits_to_trust` stops counting here: a budget this far away is "not within reach".
MAX_AUDITS_TO_TRUST = 1_000_000


def audits_to_trust(wrong: int, audited: int, budget: float, error_rate: float = 0.0) -> int | None:
    """The fewest further audits, all labelled right, after which the upper bound (corrected for the labeller's
    error rate) is at most `budget`: 0 when it already is, None when not within `MAX_AUDITS_TO_TRUST`."""
    def trusted(more: int) -> bool:
        return corrected(upper_bound(wrong, audited + more), error_rate) <= budget

    if trusted(0):
        return 0
    if not trusted(MAX_AUDITS_TO_TRUST):
        return None
    lo, hi = 0, MAX_AUDITS_TO_TRUST  # trusted(hi), not trusted(lo): the bound falls as audits grow
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if trusted(mid) else (mid, hi)
    return hi


@dataclass(frozen=True)
class BudgetTally:
    """One (namespace, API)'s evidence. `estimate` is None until a served hit was audited."""

    namespace: str
    api: str
    served: int
    audited: int
    wrong: int

    @property
    def estimate(self) -> float | None:
        return self.wrong / self.audited if self.audited else None

    @property
    def upper(self) -> float:
        return upper_bound(self.wrong, self.audited)


def merge(tallies: Iterable[BudgetTally], namespace: str, api: str = "*") -> BudgetTally:
    """Several tallies summed into one (a namespace over all its APIs)."""
    items = list(tallies)
    return BudgetTally(namespace, api, sum(t.served for t in items), sum(t.audited for t in items),
                       sum(t.wrong for t in items))
