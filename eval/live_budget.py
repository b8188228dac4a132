"""The live budget inside `eval replay --learn`: the same audit sampler, bar levels and remembered differences
as the gateway (`index.match.audit_sampler`, `index.match.bar_book`, `index.match.differences`), fed by labels
the trace's intents answer (an LLM label judge that is always right), with the upstream calls they cost counted."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from index.match.audit_sampler import AuditReason, AuditSampler, HitFacts
from index.match.bar_book import BarBook
from index.match.budget import BudgetTally
from index.match.differences import Differences

# The replay is one namespace.
NAMESPACE = "trace"


@dataclass(frozen=True)
class BudgetShown:
    """What `GET /deja/budget` would have shown at the end of a part (cumulative since the start of the trace),
    and the label calls the part spent."""

    served: int
    audited: int
    wrong: int
    estimate: float | None
    upper: float
    bar_level: int
    # LLM label-judge calls (audits, shadows, explorations) and audit re-asks of the upstream, in this part.
    label_calls: int
    audit_calls: int
    extra_audits: int
    difference_vetoes: int


class LiveBudget:
    """Mutable, local to one replay. `clock` is the simulated wall clock (seconds)."""

    def __init__(self, budget: float, audit_rate: float, audit_calls_per_hour: int,
                 clock: Callable[[], float]) -> None:
        self.clock = clock
        # Each audit re-asks the upstream and calls the label judge: two calls.
        self.sampler = AuditSampler(audit_rate, audit_calls_per_hour, clock, calls_per_audit=2)
        self.bars = BarBook(budget, clock)
        self.differences = Differences()
        self.served = self.audited = self.wrong = 0
        self._calls = {"label": 0, "audit": 0, "extra": 0, "veto": 0}

    @property
    def level(self) -> int:
        return self.bars.level(NAMESPACE)

    def vetoes(self, prompt: str, candidate: str) -> bool:
        """A remembered wrong difference keeps this candidate from being served."""
        found = self.differences.veto(NAMESPACE, prompt, candidate) is not None
        self._calls["veto"] += found
        return found

    def draw_audit(self, facts: HitFacts, u: float) -> bool:
        """One served semantic hit: is it audited?"""
        self.served += 1
        reason = self.sampler.draw(facts, u)
        if reason is not None and reason is not AuditReason.BASE:
            self._calls["extra"] += 1
        return reason is not None

    def audit(self, prompt: str, candidate: str, same: bool) -> None:
        """An audited hit: a re-ask and a label call; the bar follows, a wrong hit teaches its difference."""
        self._calls["audit"] += 1
        self._calls["label"] += 1
        self.audited += 1
        self.wrong += not same
        self.bars.update([BudgetTally(NAMESPACE, "chat", self.served, self.audited, self.wrong)])
        if not same:
            self.differences.remember(NAMESPACE, prompt, candidate, same=False)

    def near_miss(self, prompt: str, candidate: str, same: bool) -> None:
        """A shadow or exploration label: one label call while the hour's allowance has room (the fresh answer
        was fetched anyway), else answer comparison, free (the replay's labels are the intents either way)."""
        self._calls["label"] += self.sampler.spend(1)
        if same:
            self.differences.remember(NAMESPACE, prompt, candidate, same=True)

    def shown(self) -> BudgetShown:
        """The budget as shown now, and the calls since the last `shown` (then reset)."""
        tally = BudgetTally(NAMESPACE, "chat", self.served, self.audited, self.wrong)
        calls, self._calls = self._calls, {"label": 0, "audit": 0, "extra": 0, "veto": 0}
        return BudgetShown(self.served, self.audited, self.wrong, tally.estimate, tally.upper, self.level,
                           calls["label"], calls["audit"], calls["extra"], calls["veto"])
