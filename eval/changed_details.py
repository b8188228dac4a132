"""Changed details at the defaults (`eval details`): every must-not pair of the sets the team did not write (the
SGD dev dialogues' twins and other-state pairs, CheckList, CANNOT, SemAntoNeg, Breaking NLI, CondaQA) and of our
own (minimal pairs, conversations), decided one by one as the gateway's Matcher decides a cold candidate
(`eval.product`); per source, split and kind, how many were served. The suite fails when a rate passes the budget
(tests/integration).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from eval.contrast_sources import contrast_sources
from eval.conversations import run_conversations
from eval.datasets import load_pairs
from eval.sgd import other_states, same_situations, slot_twins
from eval.sources import Origin, Source, conversations, split_of
from eval.tables import TableData, pct
from index.embedding.embedder import Embedder
from index.match.matcher import Matcher

# A kind's own rate is gated from this many must-not pairs up (below, one served pair is several points).
MIN_KIND_PAIRS = 50
# Kinds measured over the budget at the defaults, named so that no other row can hide behind them: the suite keeps
# them as expected failures that fail once they pass (docs/evaluation.md "Changed details" says why).
KNOWN_GAPS = frozenset({("CANNOT negations", "negation_rewrite")})


@dataclass(frozen=True)
class DetailRow:
    """One source, split and kind (`*` = all its kinds): must-not pairs and how many were served, and the same for
    its same-answer pairs (what the safety costs)."""

    source: str
    origin: str
    part: str
    kind: str
    must_not: int
    served: int
    same: int = 0
    same_served: int = 0

    @property
    def rate(self) -> float | None:
        return self.served / self.must_not if self.must_not else None

    def over(self, budget: float) -> bool:
        gated = self.kind == "*" or self.must_not >= MIN_KIND_PAIRS
        return gated and self.rate is not None and self.rate > budget


def sgd_sources(shared: Path, seed: int = 0) -> list[Source]:
    """The SGD dev dialogues as conversation pairs (`eval.sgd`): must-not twins and other-state pairs, and
    same-situation pairs (the cost side), split by family (a service's domain: no service on both sides)."""
    pairs = [*slot_twins(shared, seed), *other_states(shared, seed), *same_situations(shared, seed)]
    return [Source("SGD dialogues", Origin.PUBLIC, part, pairs=tuple(p for p in pairs if split_of(p.domain) == part))
            for part in ("dev", "test")]


def our_sources(datasets: Path) -> list[Source]:
    """Our sets with must-not pairs: the minimal pairs and the conversations (`eval.sources.conversations`)."""
    minimal = Source("minimal pairs", Origin.OURS, "test", pairs=load_pairs(datasets / "minimal-pairs.jsonl"))
    return [minimal, *conversations(datasets, seed=0)]


def detail_sources(shared: Path, datasets: Path, seed: int = 0) -> tuple[list[Source], list[str]]:
    """Every set with must-not pairs: the public ones where they lie (a note for each one absent), then ours."""
    found, notes = contrast_sources(shared, seed)
    try:
        found = [*sgd_sources(shared, seed), *found]
    except OSError as exc:
        notes.append(f"SGD dialogues: not read ({exc})")
    return [*found, *our_sources(datasets)], notes


def run_details(sources: Sequence[Source], embedder: Embedder, matcher: Matcher) -> list[DetailRow]:
    """Rows per source and split, each pair decided through `matcher` (`eval.product.matcher_for`): `*` (every
    must-not kind but the known gaps) first, then each kind."""
    rows: list[DetailRow] = []
    for source in sources:
        report = run_conversations(source.pairs, embedder, matcher)
        kinds = report.kinds()
        must = [(kind, n, served) for kind, same, n, served in kinds
                if not same and (source.name, kind) not in KNOWN_GAPS]
        same = [(n, served) for _, is_same, n, served in kinds if is_same]
        rows.append(DetailRow(source.name, source.origin.value, source.part, "*", sum(n for _, n, _ in must),
                              sum(s for _, _, s in must), sum(n for n, _ in same), sum(s for _, s in same)))
        rows += [DetailRow(source.name, source.origin.value, source.part, kind, n, served)
                 for kind, same, n, served in kinds if not same]
    return rows


def over_budget(rows: Sequence[DetailRow], budget: float, gaps: bool = False) -> list[str]:
    """The rows over `budget`: those outside the known gaps, or (`gaps`) the known gaps themselves."""
    return [f"{r.source} ({r.part}) {r.kind}: {r.served} of {r.must_not} must-not served" for r in rows
            if r.over(budget) and ((r.source, r.kind) in KNOWN_GAPS) == gaps]


def detail_table(rows: Sequence[DetailRow], budget: float) -> TableData:
    body = tuple((r.source, r.part, r.kind, str(r.must_not), str(r.served), pct(r.rate),
                  pct(r.same_served / r.same if r.same else None) if r.kind == "*" else "",
                  ("known gap: over budget" if (r.source, r.kind) in KNOWN_GAPS else "over budget")
                  if r.over(budget) else "")
                 for r in rows if r.kind == "*" or r.served)
    return TableData(f"must-not pairs served at the defaults (budget {budget:.0%})",
                     ("source", "split", "kind", "must-not", "served", "rate", "same served", ""), body)

