"""The live budget inside `eval replay --learn`: the same audit sampler, bar levels and remembered differences
as the gateway (`index.match.audit_sampler`, `index.match.bar_book`, `index.match.differences`), fed by the labels
the replay's labeller gives (answer comparison, or a label judge with its error rate), with the upstream calls they
cost counted."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from index.match.audit_sampler import AuditReason, AuditSampler, HitFacts
from index.match.bar_book import BarBook
from index.match.budget import BudgetTally, audits_to_trust
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
    # Further clean audits before the bound certifies the budget (None: out of reach).
    audits_to_trust: int | None = None


class LiveBudget:
    """Mutable, local to one replay. `clock` is the simulated wall clock (seconds)."""

    def __init__(self, budget: float, audit_rate: float, audit_calls_per_hour: int,
                 clock: Callable[[], float], error_rate: float | None = None) -> None:
        """`error_rate`: the label judge's, the rate it is configured with (None: no label judge, labels compare
        answers exactly)."""
        self.clock = clock
        self.judged = error_rate is not None
        self.error_rate = error_rate or 0.0
        # Each audit makes two calls: two re-asks of the upstream, or a re-ask and a label-judge call.
        self.sampler = AuditSampler(audit_rate, audit_calls_per_hour, clock, calls_per_audit=2)
        self.bars = BarBook(budget, clock, error_rate=self.error_rate)
        self.differences = Differences(clock=clock)
        self.served = self.audited = self.wrong = 0
        self._calls = {"label": 0, "audit": 0, "extra": 0, "veto": 0}

    @property
    def level(self) -> int:
        return self.bars.level(NAMESPACE)

    @property
    def weight(self) -> float:
        """What one label weighs as evidence of a difference: its labeller's accuracy."""
        return 1.0 - 2.0 * self.error_rate

    def vetoes(self, prompt: str, candidate: str) -> bool:
        """A remembered difference with enough wrong evidence keeps this candidate from being served."""
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

    def audit(self, prompt: str, candidate: str, same: bool | None) -> None:
        """An audited hit (`same` None: it gave no label): the bar follows, a wrong hit is one label of its
        difference."""
        self._calls["audit"] += 1
        self._calls["label"] += self.judged
        if same is None:
            return
        self.audited += 1
        self.wrong += not same
        self.bars.update([BudgetTally(NAMESPACE, "chat", self.served, self.audited, self.wrong)])
        if not same:
            self.differences.remember(NAMESPACE, prompt, candidate, same=False, weight=self.weight)

    def near_miss(self, prompt: str, candidate: str, same: bool | None) -> None:
        """A shadow or exploration label: with a label judge, one label call while the hour's allowance has room
        (the fresh answer was fetched anyway), else answer comparison, free; a right near-miss is one label of its
        difference."""
        self._calls["label"] += self.judged and self.sampler.spend(1)
        if same:
            self.differences.remember(NAMESPACE, prompt, candidate, same=True, weight=self.weight)

    def shown(self) -> BudgetShown:
        """The budget as shown now, and the calls since the last `shown` (then reset)."""
        tally = BudgetTally(NAMESPACE, "chat", self.served, self.audited, self.wrong)
        calls, self._calls = self._calls, {"label": 0, "audit": 0, "extra": 0, "veto": 0}
        return BudgetShown(self.served, self.audited, self.wrong, tally.estimate, tally.upper, self.level,
                           calls["label"], calls["audit"], calls["extra"], calls["veto"],
                           audits_to_trust(self.wrong, self.audited, self.bars.budget, self.error_rate))
