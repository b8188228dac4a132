"""The source panel (`eval panel`): every labelled source replayed through the one decision, side by side with
the baselines, each source and part on its own row.

The default is the product as `Settings()` builds it, so the panel measures what the gateway runs: on a trace, a
live gateway replayed from a cold cache with its learner and labelling loop (`eval.learn`, answers that vary as a
sampled model's do); on labelled pairs, each pair decided by the gateway's Matcher in a cold namespace (the first
prompt as the cached candidate; no traffic, so no evidence: the prior). The baselines are the same Cache and
Matcher at a fixed policy, no learner, no labels (`eval.replay`; pairs: `eval.sweep.decide_pair`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from eval.embedding import MemoEmbedder, embed_unique
from eval.learn import LearnConfig, run_learn
from eval.metrics import clopper_pearson_upper
from eval.product import matcher_for
from eval.replay import ReplayConfig, run_replay
from eval.sources import Origin, Source
from eval.sweep import ScoredPair, decide_pair, score_pairs
from eval.vcache import run_vcache
from index.embedding.embedder import Embedder
from index.guards.registry import build_stages
from index.match.policy import DecisionMode, MatchPolicy

DEFAULT = "default"
BASELINE_THRESHOLDS = (0.85, 0.90, 0.95)


@dataclass(frozen=True)
class Contender:
    """One decision the panel runs: the default, a cosine baseline, or vCache (traces only). `live`: the product as
    a gateway runs it, replayed with its learner and labelling loop on a trace (None: a fixed policy, no labels)."""

    name: str
    policy: MatchPolicy | None
    vcache_delta: float | None = None
    live: LearnConfig | None = None


@dataclass(frozen=True)
class Cell:
    """One contender on one source. `served` counts answers from cache (a trace: exact and semantic hits; pairs:
    pairs served); `correct` those right; `base` is what `served_rate` and `correct_rate` divide by (a trace's
    requests; pairs: the same-answer pairs)."""

    contender: str
    served: int
    correct: int
    base: int

    @property
    def wrong(self) -> int:
        return self.served - self.correct

    @property
    def correct_rate(self) -> float | None:
        return self.correct / self.base if self.base else None

    @property
    def wrong_per_served(self) -> float | None:
        return self.wrong / self.served if self.served else None

    @property
    def upper(self) -> float:
        """95% Clopper-Pearson upper bound on wrong / served."""
        return clopper_pearson_upper(self.wrong, self.served)


@dataclass(frozen=True)
class PanelRow:
    """One source and part, every contender's cell, and whether the default holds the source's target."""

    source: str
    origin: str
    part: str
    kind: str
    size: int
    target: float
    note: str
    cells: tuple[Cell, ...]

    def cell(self, contender: str) -> Cell | None:
        return next((c for c in self.cells if c.contender == contender), None)

    @property
    def holds(self) -> bool:
        cell = self.cell(DEFAULT)
        rate = None if cell is None else cell.wrong_per_served
        return rate is None or rate <= self.target


@dataclass(frozen=True)
class PanelReport:
    """The whole panel: rows in source order, the contenders, the default's description, notes."""

    default: str
    contenders: tuple[str, ...]
    rows: tuple[PanelRow, ...]
    notes: tuple[str, ...] = ()

    def worst(self, origin: str | None = None) -> PanelRow | None:
        """The row (of `origin`, or any) where the default's wrong / served stands highest above its target."""
        rows = [r for r in self.rows if (origin is None or r.origin == origin) and r.cell(DEFAULT) is not None]

        def excess(row: PanelRow) -> float:
            cell = row.cell(DEFAULT)
            rate = None if cell is None else cell.wrong_per_served
            return -1.0 if rate is None else rate - row.target

        return max(rows, key=excess, default=None)

    @property
    def real_sources_hold(self) -> bool:
        return all(row.holds for row in self.rows if row.origin == Origin.REAL.value)


def contenders(product: LearnConfig) -> tuple[Contender, ...]:
    """The default (the product of `product`, live on traces); the cosine rule with its rule stages at each baseline
    threshold; and vCache at the default's budget."""
    default = product.policy
    cosine = dataclasses.replace(default, decision=DecisionMode.THRESHOLD, stages=("polarity", "values"))
    out = [Contender(DEFAULT, default, live=product)]
    out += [Contender(f"cosine {t:.2f} + rules", cosine.at(t)) for t in BASELINE_THRESHOLDS]
    out.append(Contender(f"vCache δ={default.max_false_hit_rate:g}", None, vcache_delta=default.max_false_hit_rate))
    return tuple(out)


def run_panel(sources: Sequence[Source], embedder: Embedder, entrants: Sequence[Contender], default_text: str,
              notes: Sequence[str] = (), progress: Callable[[str], None] | None = None) -> PanelReport:
    """Run every contender on every source."""
    rows = []
    for source in sources:
        if progress is not None:
            progress(f"{source.name} ({source.part})")
        rows.append(_row(source, embedder, entrants))
    return PanelReport(default_text, tuple(c.name for c in entrants), tuple(rows), tuple(notes))


def _row(source: Source, embedder: Embedder, entrants: Sequence[Contender]) -> PanelRow:
    if source.trace:
        memo = MemoEmbedder(embedder, embed_unique(embedder, (r.prompt for r in source.requests)))
        cells = tuple(c for c in (_trace_cell(source, memo, e) for e in entrants) if c is not None)
        kind, size = "trace", len(source.requests)
    else:
        scored = score_pairs(source.pairs, embedder)
        cells = tuple(_pairs_cell(scored, e) for e in entrants if e.policy is not None)
        kind, size = "pairs", len(source.pairs)
    return PanelRow(source.name, source.origin.value, source.part, kind, size, source.target, source.note, cells)


def _trace_cell(source: Source, embedder: Embedder, entrant: Contender) -> Cell | None:
    if entrant.vcache_delta is not None:
        row = run_vcache(source.name, source.requests, embedder, (entrant.vcache_delta,)).rows[0]
        return Cell(entrant.name, row.exact_hits + row.semantic_hits, row.correct, len(source.requests))
    if entrant.live is not None:
        learned = run_learn(source.name, source.requests, embedder, entrant.live)
        served = learned.first.served + learned.second.served
        return Cell(entrant.name, served, learned.first.correct + learned.second.correct, learned.requests)
    assert entrant.policy is not None
    policy = entrant.policy
    config = ReplayConfig((policy.min_similarity,), build_stages(policy.stages), policy=policy)
    replayed = run_replay(source.name, source.requests, embedder, config).rows[0]
    return Cell(entrant.name, replayed.exact_hits + replayed.semantic_hits, replayed.correct, replayed.requests)


def _pairs_cell(scored: Sequence[ScoredPair], entrant: Contender) -> Cell:
    assert entrant.policy is not None
    matcher = matcher_for(entrant.policy, learn=entrant.live is not None and entrant.live.learn)
    served = correct = 0
    for index, item in enumerate(scored):
        decision = decide_pair(matcher, item, index)
        if decision is not None and decision.hit:
            served += 1
            correct += item.pair.same_answer
    same = sum(1 for item in scored if item.pair.same_answer)
    return Cell(entrant.name, served, correct, same)
