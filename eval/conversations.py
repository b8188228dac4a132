"""Conversation pairs decided one by one at the gateway's defaults (`eval conversations`): how many same-answer
pairs are served, how many must-not pairs are, per kind, and why the rest were not (the decision's reason or
veto), so a change of the context rule is read off one table.

Each pair is keyed and scored as the gateway's semantic tier does (`eval.sweep.score_pairs`: last message and
relevant context), the first conversation as the cached candidate, and decided by the gateway's Matcher
(`eval.product`: a cold namespace, at the prior).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from eval.datasets import LabeledPair
from eval.sweep import ScoredPair, decide_pair, score_pairs
from eval.tables import TableData, pct
from index.embedding.embedder import Embedder
from index.match.matcher import Matcher

NO_CANDIDATE = "no candidate"


@dataclass(frozen=True)
class PairOutcome:
    """One pair's decision: served or not, and the reason of a miss (the veto's name for a veto)."""

    pair: LabeledPair
    served: bool
    why: str


@dataclass(frozen=True)
class ConversationReport:
    outcomes: tuple[PairOutcome, ...]

    def served_rate(self, same_answer: bool) -> float | None:
        chosen = [o for o in self.outcomes if o.pair.same_answer is same_answer]
        return sum(o.served for o in chosen) / len(chosen) if chosen else None

    def kinds(self) -> list[tuple[str, bool, int, int]]:
        """(kind, same_answer, pairs, served), same-answer kinds first."""
        keys = sorted({(o.pair.kind, o.pair.same_answer) for o in self.outcomes}, key=lambda k: (not k[1], k[0]))
        return [(kind, same, sum(1 for o in self.outcomes if (o.pair.kind, o.pair.same_answer) == (kind, same)),
                 sum(o.served for o in self.outcomes if (o.pair.kind, o.pair.same_answer) == (kind, same)))
                for kind, same in keys]

    def misses(self, same_answer: bool) -> Counter[str]:
        """Why pairs of one label were not served, by reason or veto."""
        return Counter(o.why for o in self.outcomes if o.pair.same_answer is same_answer and not o.served)


def run_conversations(pairs: Sequence[LabeledPair], embedder: Embedder, matcher: Matcher) -> ConversationReport:
    """Decide every pair (`b` asked after `a` was cached) through `matcher` (`eval.product.matcher_for`)."""
    return ConversationReport(tuple(_outcome(item, index, matcher)
                                    for index, item in enumerate(score_pairs(pairs, embedder))))


def _outcome(item: ScoredPair, index: int, matcher: Matcher) -> PairOutcome:
    decision = decide_pair(matcher, item, index)
    if decision is None:
        return PairOutcome(item.pair, False, item.veto or NO_CANDIDATE)
    return PairOutcome(item.pair, decision.hit,
                       "hit" if decision.hit else decision.vetoed_by or decision.reason.value)


def kind_table(report: ConversationReport, title: str) -> TableData:
    rows = [(kind, "same answer" if same else "must not", str(n), pct(served / n if n else None))
            for kind, same, n, served in report.kinds()]
    rows += [("all same-answer", "", "", pct(report.served_rate(True))),
             ("all must-not", "", "", pct(report.served_rate(False)))]
    return TableData(title, ("kind", "label", "pairs", "served"), tuple(rows))


def miss_table(report: ConversationReport) -> TableData:
    rows = [(why, str(n)) for why, n in report.misses(True).most_common()]
    return TableData("same-answer pairs not served, by reason or veto", ("reason", "pairs"), tuple(rows))
